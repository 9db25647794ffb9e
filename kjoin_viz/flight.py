"""A foreign-key join's messages between tasks: what one step delivered, sent, and left waiting.

In a foreign-key join a step is an input record or the delivery of one message (see
:mod:`kjoin.engine`). After any step the messages are in one of three situations:

- ``delivered``: the message this step handed to its task (at most one);
- ``sent``: sent by this step, now on its way;
- ``waiting``: sent earlier and still on its way.

Subscriptions travel from the left side (the tasks of the primary keys) to the right side
(the tasks of the foreign keys); responses travel back. :func:`flight_rows` lists them,
:func:`flight_text` prints them, and :func:`flight_svg` draws them as arrows between the two
sides: a delivered message reaches its side, the others are still half way. Everything is
read from the trace (the step's message and the ``in flight`` stores after the step).

:func:`workflow_text` is seed 001's workflow table: per input record, the subscriptions it
sent and the results its chain of messages produced, for several traces of the same input.
"""

from __future__ import annotations

import html
from typing import Mapping

from kjoin.joins.fk_protocol import SUBSCRIPTION, Message, short_hash
from kjoin.joins.fk_transport import carries
from kjoin.records import Side
from kjoin.render import format_table
from kjoin.trace import DeliveryStep, Trace
from .values import show_output, show_text, show_value

__all__ = ["flight_rows", "flight_text", "flight_svg", "workflow_text", "MAX_ARROWS"]

MAX_ARROWS = 10
"""Messages drawn at most; the rest are counted."""

WIDTH, LEFT_BOX, RIGHT_BOX = 800, (10, 130), (670, 790)
ROW, TOP = 24, 46
COLOURS = {"delivered": "#1f5fbf", "sent": "#2a8a2a", "waiting": "#999"}


def flight_rows(trace: Trace, step: int) -> list[tuple[str, Message]]:
    """``(situation, message)`` after ``step``: the delivered message first, then the
    messages still in flight, oldest first (``sent`` by this step, or ``waiting``)."""
    current = trace.steps[step]
    rows: list[tuple[str, Message]] = []
    if isinstance(current, DeliveryStep):
        rows.append(("delivered", current.delivered))
    for message in trace.state_at(step).in_flight():
        rows.append(("sent" if message.sent_step == step else "waiting", message))
    return rows


def _travel(message: Message) -> str:
    return "left → right" if message.topic == SUBSCRIPTION else "right → left"


def flight_text(trace: Trace, step: int) -> str:
    """The messages after ``step`` as a table (``messages: none in flight`` when there are none)."""
    rows = flight_rows(trace, step)
    if not rows:
        return "messages: none in flight"
    table = format_table(
        ["message", "", "travels", "to task", "carries", "hash", "ts"],
        [
            [
                f"{m.id} {m.topic}",
                situation,
                _travel(m),
                m.partition,
                show_text(carries(m)),
                short_hash(m.value.hash),
                m.ts,
            ]
            for situation, m in rows
        ],
    )
    return "messages:\n" + table


def flight_svg(trace: Trace, step: int) -> str:
    """The two sides of the join as boxes and each message as an arrow between them."""
    rows = flight_rows(trace, step)
    shown, more = rows[:MAX_ARROWS], len(rows) - MAX_ARROWS
    height = TOP + ROW * max(len(shown), 1) + (ROW if more > 0 else 0) + 14
    parts = [
        f'<svg class="kjoin-flight" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
        f'height="{height}" style="width:100%;max-width:{WIDTH}px;height:auto" font-family="monospace" font-size="10">'
    ]
    record = trace.steps[step].record
    is_input = not isinstance(trace.steps[step], DeliveryStep)
    for side, (x0, x1), title, what in (
        (Side.LEFT, LEFT_BOX, "left side", "primary-key tasks"),
        (Side.RIGHT, RIGHT_BOX, "right side", "foreign-key tasks"),
    ):
        mine = is_input and record.side is side
        parts.append(
            f'<rect x="{x0}" y="4" width="{x1 - x0}" height="{height - 8}" rx="6" '
            f'fill="{"#d8e8ff" if mine else "#f6f6f6"}" stroke="#888"/>'
        )
        parts.append(f'<text x="{(x0 + x1) / 2}" y="18" text-anchor="middle" font-weight="bold">{title}</text>')
        parts.append(f'<text x="{(x0 + x1) / 2}" y="30" text-anchor="middle">{what}</text>')
        if mine:
            label = html.escape(f"input {show_value(record.key)}={show_value(record.value)}@{record.ts}")
            parts.append(
                f'<text x="{(x0 + x1) / 2}" y="{height - 14}" text-anchor="middle" fill="#1f5fbf">'
                f"<title>{label}</title>input @{record.ts}</text>"
            )
    if not shown:
        parts.append(
            f'<text x="{WIDTH / 2}" y="{TOP + 8}" text-anchor="middle" fill="#777">no message in flight</text>'
        )
    for i, (situation, message) in enumerate(shown):
        y = TOP + ROW * i + 10
        colour = COLOURS[situation]
        to_right = message.topic == SUBSCRIPTION
        start, end = (LEFT_BOX[1], RIGHT_BOX[0]) if to_right else (RIGHT_BOX[0], LEFT_BOX[1])
        if situation != "delivered":  # still on its way: the arrow stops half way
            end = (start + end) / 2
        head = -7 if to_right else 7
        dash = ' stroke-dasharray="4 3"' if situation == "waiting" else ""
        width = 3 if situation == "delivered" else 2
        label = (
            f"{message.id} {message.topic} {situation}: {show_text(carries(message))} {short_hash(message.value.hash)} "
            f"@{message.ts} → task {message.partition}"
        )
        parts.append(
            f'<g class="kjoin-message kjoin-{situation}" data-message="{message.id}">'
            f"<title>{html.escape(show_text(message.describe()))}</title>"
        )
        parts.append(
            f'<line x1="{start}" y1="{y}" x2="{end}" y2="{y}" stroke="{colour}" stroke-width="{width}"{dash}/>'
        )
        parts.append(f'<path d="M{end} {y}L{end + head} {y - 4}L{end + head} {y + 4}Z" fill="{colour}"/>')
        parts.append(
            f'<text x="{WIDTH / 2}" y="{y - 4}" text-anchor="middle" font-size="9" fill="{colour}">'
            f"{html.escape(label)}</text></g>"
        )
    if more > 0:
        parts.append(
            f'<text x="{WIDTH / 2}" y="{TOP + ROW * len(shown) + 10}" text-anchor="middle">'
            f"… {more} more in flight</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _sent_by(trace: Trace) -> dict[int, list[Message]]:
    """Every message of a run (delivered, or still in flight at the end) by the step that sent it."""
    messages = {s.delivered.id: s.delivered for s in trace.steps if isinstance(s, DeliveryStep)}
    messages.update((m.id, m) for m in trace.state_at(-1).in_flight())
    by_step: dict[int, list[Message]] = {}
    for message in sorted(messages.values(), key=lambda m: m.seq):
        by_step.setdefault(message.sent_step, []).append(message)
    return by_step


def workflow_text(traces: Mapping[str, Trace]) -> str:
    """Per input record of foreign-key traces over the same events: ``ts | side | key | value``,
    the subscriptions it sent in the first trace (``instruction → fk (task)``), and for each
    trace the results its chain of messages produced (``null``: a tombstone)."""
    columns = list(traces)
    first = traces[columns[0]]
    inputs = {name: [s for s in trace.steps if not isinstance(s, DeliveryStep)] for name, trace in traces.items()}
    if len({len(steps) for steps in inputs.values()}) != 1:
        raise ValueError("every trace must run the same input records")
    sent = _sent_by(first)
    results = {name: {} for name in columns}
    for name, trace in traces.items():
        for output in trace.outputs:
            results[name].setdefault(output.origin_step, []).append(show_output(output))
    rows = []
    for i, step in enumerate(inputs[columns[0]]):
        r = step.record
        subscriptions = "; ".join(
            f"{m.value.instruction.value} → {show_value(m.key)} (task {m.partition})"
            for m in sent.get(step.index, [])
            if m.topic == SUBSCRIPTION
        )
        cells = [", ".join(results[name].get(inputs[name][i].index, [])) for name in columns]
        rows.append([r.ts, r.side.value, show_value(r.key), show_value(r.value), subscriptions, *cells])
    return format_table(["ts", "side", "key", "value", f"subscriptions sent ({columns[0]})", *columns], rows)
