"""The event timeline around the current record, drawn as a small SVG.

Two lanes, left on top and right below, for each key in view (and, with several partitions, for each
task: a task is a partition of both sides); each record sits at its timestamp on its key's lane. With
one key and one task the lanes are just ``left`` and ``right``; with more, each pair is labelled with
its key (and ``t<n>`` for its task), at most :data:`MAX_KEYS` keys (the current record's first, then
the keys of the steps nearest to it); the records of other keys are counted under the lanes. A record with a
null value is drawn hollow with a cross, a record that arrived after a later timestamp (out
of order) has a red ring, records not processed yet are faded, and the current record is
larger, with its join window (``[ts - before, ts + after]`` for a left record, mirrored for
a right one, from 0 at the earliest) drawn as a band on the other lane: the records it can
join with. A record that never looks up (dropped before the lookup, a right record of a
0.10.0 left join, a null key joined without a lookup) gets no band. A dashed line marks the
stream time after the step. A legend under the lanes names every mark.

Zoom and a stable axis: the axis shows a fixed span of time (:func:`view_span`: twice the
join window, or about twenty records' worth of time for joins without a window) and moves in
half-span pages (:func:`view_range`), so the records of one neighbourhood keep their places
while the stepper moves, and the current record with its whole join window is always in view.
Ticks are at round numbers of milliseconds. Records outside the view are counted at the edges.

Only the records near the current step are considered (:data:`NEIGHBOURS` each way), so a
step of a long trace costs the same as one of a short trace. The SVG is built as a string
rather than with altair: rendering a Vega-Lite chart per step takes far longer than the
stepper's 50 ms budget, and a string needs no JavaScript and no internet.
"""

from __future__ import annotations

import html
import math
from typing import Any, Callable, Sequence

from kjoin.fates import Fate, Reason
from kjoin.records import OutputKind, Side, key_identity
from kjoin.trace import Step, Trace
from .values import show_value

__all__ = ["timeline_svg", "join_range", "looks_up", "view_span", "view_range", "ticks", "lanes", "NEIGHBOURS"]

NEIGHBOURS = 60
WIDTH, MARGIN = 640, 44
LANE_Y = {Side.LEFT: 26, Side.RIGHT: 62}
AXIS_Y, LEGEND_Y, HEIGHT = 86, 116, 126
MAX_KEYS = 6
"""At most this many keys get lanes of their own in one view."""
KEYED_MARGIN, KEYED_TOP, KEYED_LANE, KEYED_GAP = 96, 24, 18, 8
"""The layout with a lane per key: a wider label column, lanes 18 px apart, 8 px more between keys."""

Lane = tuple[int, object, Side]
"""A lane: the task (partition), the key (as Kafka compares it) and the side."""


def _key_of(record) -> object:
    return key_identity(record.key)


def lanes(trace: Trace, step: int, near: Sequence[Step], low: int, high: int) -> tuple[list[Lane], int]:
    """The lanes of a view: every (task, key) with a record in view, the current record's first, then by
    how near their steps are to ``step``, at most :data:`MAX_KEYS`; each a left and a right lane, in task
    order. Also how many records in view belong to keys left out."""
    current = trace.steps[step].record
    seen: dict[tuple[int, object], int] = {(current.partition, _key_of(current)): 0}
    for s in sorted(near, key=lambda s: abs(s.index - step)):
        r = s.record
        if low <= r.ts <= high:
            seen.setdefault((r.partition, _key_of(r)), len(seen))
    chosen = list(seen)[:MAX_KEYS]
    left_out = sum(
        1 for s in near if low <= s.record.ts <= high and (s.record.partition, _key_of(s.record)) not in chosen
    )
    first_seen = {group: i for i, group in enumerate(chosen)}
    ordered = sorted(chosen, key=lambda group: (group[0], first_seen[group]))
    return [(task, key, side) for task, key in ordered for side in (Side.LEFT, Side.RIGHT)], left_out


def join_range(trace: Trace, step: int) -> tuple[int, int] | None:
    """The timestamps the other side may have to join with the record of ``step`` (inclusive),
    or ``None`` for a join without a window."""
    window = trace.join_window
    if window is None:
        return None
    record = trace.steps[step].record
    before, after = (
        (window.before_ms, window.after_ms) if record.side is Side.LEFT else (window.after_ms, window.before_ms)
    )
    return max(record.ts - before, 0), record.ts + after  # no timestamp is negative: Kafka clamps at 0


def looks_up(step: Step) -> bool:
    """Did the step's record look up the other side? Not when it was dropped before the lookup,
    when it is a right record of a 0.10.0 left join, or a null key joined without a lookup."""
    if step.fate is Fate.DROPPED or step.reason is Reason.NOT_A_TRIGGER or step.message is not None:
        return False
    return not any(o.kind is OutputKind.NULL_KEY and o.origin_step == step.index for o in step.outputs)


def _nice(value: float) -> int:
    """The smallest 1, 2 or 5 times a power of ten that is at least ``value`` (at least 1)."""
    if value <= 1:
        return 1
    power = 10 ** math.floor(math.log10(value))
    for factor in (1, 2, 5, 10):
        if factor * power >= value:
            return int(factor * power)
    return int(10 * power)  # pragma: no cover


def view_span(trace: Trace) -> int:
    """How many milliseconds the timeline shows: twice the join window (so that a whole window
    fits in half a view), or about twenty records' worth of time; at least 10 ms."""
    window = trace.join_window
    if window is not None:
        return max(10, 2 * (window.before_ms + window.after_ms))
    times = [s.record.ts for s in trace.steps]
    spread = max(times) - min(times) if times else 0
    return _nice(max(10.0, spread * 20 / max(len(times), 1)))


def view_range(span: int, low: int, high: int) -> tuple[int, int]:
    """The page of the axis that shows ``[low, high]`` (``high - low <= span / 2``): pages start
    at multiples of half a span, so the axis stays put while the records stay in a page."""
    half = max(span // 2, 1)
    start = (low // half) * half
    if high > start + span:  # only when [low, high] is wider than half a span
        start = high - span
    return start, start + span


def ticks(low: int, high: int, count: int = 8) -> list[int]:
    """Round timestamps in ``[low, high]`` about ``(high - low) / count`` apart."""
    every = _nice((high - low) / count)
    first = -(-low // every) * every
    return list(range(first, high + 1, every))


def timeline_svg(
    trace: Trace, step: int, late: Sequence[bool] | None = None, stream_time: int | None = None, span: int | None = None
) -> str:
    """The SVG of the records near ``step``; ``late[i]`` marks out-of-order arrivals;
    ``stream_time`` (after the step) is drawn as a dashed line; ``span``: :func:`view_span`."""
    current_step = trace.steps[step]
    current = current_step.record
    band = join_range(trace, step) if looks_up(current_step) else None
    span = span or view_span(trace)
    low, high = view_range(span, *(band or (current.ts, current.ts)))
    first, last = max(0, step - NEIGHBOURS), min(len(trace.steps), step + NEIGHBOURS + 1)
    near = trace.steps[first:last]

    lane_list, left_out = lanes(trace, step, near, low, high)
    tasks = {task for task, _, _ in lane_list}
    keyed = len(lane_list) > 2 or any(s.record.partition != current.partition for s in near)
    if keyed:
        margin, y, lane_y = KEYED_MARGIN, KEYED_TOP, {}
        for i, lane in enumerate(lane_list):
            if i and lane[2] is Side.LEFT:
                y += KEYED_GAP
            lane_y[lane] = y
            y += KEYED_LANE
        axis_y = y + 2
    else:
        margin, axis_y = MARGIN, AXIS_Y
        lane_y = {lane: LANE_Y[lane[2]] for lane in lane_list}
    legend_y = axis_y + 30 + (12 if left_out else 0)
    height = legend_y + 10

    def x(ts: float) -> float:
        return round(margin + (ts - low) * (WIDTH - margin - MARGIN) / (high - low), 1)

    def lane_of(r) -> Lane:
        return (r.partition, _key_of(r), r.side)

    parts = [
        f'<svg class="kjoin-timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" style="width:100%;max-width:{WIDTH}px;height:auto" '
        f'font-family="monospace" font-size="10" data-view="{low}..{high}" data-lanes="{len(lane_list)}">'
    ]
    parts += _lane_parts(lane_y, near, keyed, len(tasks) > 1, margin, lane_of)
    # the axis: ticks at round milliseconds
    parts.append(f'<line x1="{margin}" y1="{axis_y}" x2="{WIDTH - MARGIN}" y2="{axis_y}" stroke="#888"/>')
    for tick in ticks(low, high):
        parts.append(
            f'<line class="kjoin-tick" x1="{x(tick)}" y1="{axis_y}" x2="{x(tick)}" y2="{axis_y + 4}" stroke="#888"/>'
            f'<text x="{x(tick)}" y="{axis_y + 14}" text-anchor="middle">{tick}</text>'
        )
    parts.append(f'<text x="{WIDTH - 2}" y="{axis_y + 14}" text-anchor="end">ms</text>')
    if band:  # on the lane of the other side of the same key, in the same task: the records it can join
        y = lane_y[(current.partition, _key_of(current), current.side.other)]
        half = 10 if not keyed else KEYED_LANE // 2 - 1
        parts.append(
            f'<rect class="kjoin-band" x="{x(band[0])}" y="{y - half}" '
            f'width="{max(x(band[1]) - x(band[0]), 1)}" height="{2 * half}" '
            f'fill="#9cf" opacity="0.45"><title>join window {band[0]}..{band[1]}</title></rect>'
        )
    if stream_time is not None and low <= stream_time <= high:
        sx = x(stream_time)
        top, bottom, label = 10, axis_y, f"stream time {stream_time}"
        if keyed:  # a task's stream time: drawn over its own lanes only
            mine = [y for (task, _, _), y in lane_y.items() if task == current.partition]
            top, bottom = min(mine) - 12, max(mine) + 8
            label += f" (task {current.partition})" if len(tasks) > 1 else ""
        parts.append(
            f'<line class="kjoin-stream-time" x1="{sx}" y1="{top}" x2="{sx}" y2="{bottom}" '
            f'stroke="#c60" stroke-dasharray="3 3"/>'
            f'<text x="{sx}" y="{top - 2}" text-anchor="middle" fill="#c60" stroke="white" stroke-width="3" '
            f'paint-order="stroke">{label}</text>'
        )
    marks, before, after = _record_marks(near, step, (low, high), lane_y, lane_of, x, keyed, late)
    parts += marks
    # the current record's label last, on a white halo over everything else, on the side with room
    r = current
    if low <= r.ts <= high:
        cx, cy = x(r.ts), lane_y[lane_of(r)]
        text = html.escape(f"{show_value(r.value)}@{r.ts}")
        right_room = WIDTH - MARGIN - cx
        anchor, tx = ("start", cx + 10) if right_room > 7 * len(text) + 12 else ("end", cx - 10)
        parts.append(
            f'<text class="kjoin-current" x="{tx}" y="{cy + 4}" text-anchor="{anchor}" font-weight="bold" '
            f'stroke="white" stroke-width="3" paint-order="stroke">{text}</text>'
        )
    if before:
        parts.append(f'<text x="{margin - 4}" y="{axis_y - 4}" text-anchor="end" fill="#777">◀ {before}</text>')
    if after:
        parts.append(f'<text x="{WIDTH - MARGIN + 4}" y="{axis_y - 4}" fill="#777">{after} ▶</text>')
    if left_out:
        parts.append(
            f'<text class="kjoin-left-out" x="{margin}" y="{axis_y + 28}" fill="#777">'
            f"+ {left_out} record{'s' if left_out > 1 else ''} of other keys in view (not drawn)</text>"
        )
    parts.append(_legend(trace.join_window is not None, legend_y))
    parts.append("</svg>")
    return "".join(parts)


def _lane_parts(
    lane_y: dict, near: Sequence[Any], keyed: bool, several_tasks: bool, margin: int, lane_of: Callable[[Any], Lane]
) -> list[str]:
    """Each lane's line and its label: the side, or (one lane per key) the task, the key and the side."""
    parts = []
    for lane, y in lane_y.items():
        task, _, side = lane
        parts.append(f'<line x1="{margin}" y1="{y}" x2="{WIDTH - MARGIN}" y2="{y}" stroke="#bbb"/>')
        if not keyed:
            parts.append(f'<text x="2" y="{y + 3}">{side}</text>')
            continue
        key = next(s.record.key for s in near if lane_of(s.record)[:2] == lane[:2])
        name = _short(show_value(key), 9 if several_tasks else 12)
        where = f"t{task} " if several_tasks else ""
        label = f"{where}{name} {'L' if side is Side.LEFT else 'R'}"
        parts.append(
            f'<text class="kjoin-lane" x="2" y="{y + 3}" data-lane="{html.escape(label)}">'
            f"<title>{html.escape(f'task {task}, key {show_value(key)}, {side} side')}</title>"
            f"{html.escape(label)}</text>"
        )
    return parts


def _record_marks(
    near: Sequence[Any],
    step: int,
    view: tuple[float, float],
    lane_y: dict,
    lane_of: Callable[[Any], Lane],
    x: Callable[[float], float],
    keyed: bool,
    late: Sequence[bool] | None,
) -> tuple[list[str], int, int]:
    """A dot per record in view (hollow and crossed for a null value, red-ringed when late, faded when still to
    come), and how many records lie before and after the view."""
    low, high = view
    parts: list[str] = []
    before = after = 0
    for s in near:
        r = s.record
        if not low <= r.ts <= high:
            before, after = before + (r.ts < low), after + (r.ts > high)
            continue
        if lane_of(r) not in lane_y:
            continue  # a key left out: counted under the lanes
        cx, cy = x(r.ts), lane_y[lane_of(r)]
        is_current = s.index == step
        radius = (7 if is_current else 4) if not keyed else (6 if is_current else 4)
        hollow = r.value is None
        fill = "white" if hollow else ("#1f5fbf" if is_current else "#555")
        stroke = "#d00" if late and late[s.index] else ("#1f5fbf" if is_current else "#555")
        opacity = "0.3" if s.index > step else "1"
        label = html.escape(f"step {s.index}: {r.side} {show_value(r.key)}={show_value(r.value)} @ {r.ts}")
        parts.append(
            f'<g opacity="{opacity}"><circle cx="{cx}" cy="{cy}" r="{radius}" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="2"><title>{label}</title></circle>'
        )
        if hollow:
            parts.append(
                f'<path d="M{cx - 3} {cy - 3}L{cx + 3} {cy + 3}M{cx - 3} {cy + 3}L{cx + 3} {cy - 3}" stroke="#555"/>'
            )
        parts.append("</g>")
    return parts, before, after


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _legend(windowed: bool, y: int = LEGEND_Y) -> str:
    """One row naming every mark the timeline draws."""
    items = [
        ('<circle cx="{x}" cy="{y}" r="6" fill="#1f5fbf" stroke="#1f5fbf" stroke-width="2"/>', "this step"),
        ('<circle cx="{x}" cy="{y}" r="4" fill="#555" stroke="#555" stroke-width="2"/>', "record"),
        (
            '<circle cx="{x}" cy="{y}" r="4" fill="white" stroke="#555" stroke-width="2"/>'
            '<path d="M{a} {b}L{c} {d}M{a} {d}L{c} {b}" stroke="#555"/>',
            "null value",
        ),
        ('<circle cx="{x}" cy="{y}" r="4" fill="#555" stroke="#d00" stroke-width="2"/>', "out of order"),
        ('<circle cx="{x}" cy="{y}" r="4" fill="#555" opacity="0.3"/>', "not yet read"),
        ('<line x1="{x}" y1="{b}" x2="{x}" y2="{d}" stroke="#c60" stroke-dasharray="2 2"/>', "stream time"),
    ]
    if windowed:
        items.append(('<rect x="{a}" y="{b}" width="12" height="10" fill="#9cf" opacity="0.6"/>', "join window"))
    parts = ['<g class="kjoin-legend" font-size="9">']
    x = 8
    for mark, text in items:
        parts.append(
            mark.format(x=x, y=y, a=x - 4, b=y - 5, c=x + 4, d=y + 5) + f'<text x="{x + 10}" y="{y + 3}">{text}</text>'
        )
        x += 16 + 6 * len(text)
    parts.append("</g>")
    return "".join(parts)
