"""What the stepper shows for one step of a finished trace, as text and as HTML.

:class:`StepView` indexes a trace once (where the outputs, tombstones and drops are; the
latest timestamp seen before each record, to spot out-of-order arrivals) so that showing
any step afterwards costs only that step: the state after it, what it changed, its outputs
and the tail of the output log. Nothing here decides anything about the join: every fate,
reason, output and store row is read from the trace.

A foreign-key join's step is an input record or the delivery of one message: its view
draws the messages between the two sides (:mod:`kjoin_viz.flight`) where other joins draw
the timeline, and lists them (delivered, sent, waiting) above the stores.
"""

from __future__ import annotations

import base64
import bisect
import html
import weakref
from dataclasses import dataclass
from typing import Any

from kjoin.records import Output
from kjoin.render import format_table
from kjoin.stores import IN_FLIGHT
from kjoin.trace import Step, Trace

from .flight import flight_svg, flight_text
from .labels import fate_label, label_html, own_outputs
from .store_view import StoreTable, store_tables
from .timeline import timeline_svg, view_span
from .values import show_output, show_text, show_value
from kjoin.times import at

__all__ = ["StepView", "StepPanes", "LOG_TAIL", "headline", "hidden_internals_text", "view_of"]

LOG_TAIL = 12
"""Outputs shown in the "log so far" (the latest ones)."""

CSS = """<style>
.kjoin-viz {max-width: 100%}
.kjoin-viz table {border-collapse: collapse; font: 12px monospace; margin: 2px 12px 8px 0}
.kjoin-viz th, .kjoin-viz td {border: 1px solid #ccc; padding: 1px 6px; text-align: left}
.kjoin-viz caption {text-align: left; font-weight: bold; white-space: nowrap}
.kjoin-state {display: flex; flex-wrap: wrap; align-items: flex-start}
.kjoin-viz .changed td {background: #fff3b0}
.kjoin-viz .deleted {color: #a33; text-decoration: line-through}
.kjoin-viz .result {color: #1a6b1a}
.kjoin-viz .tombstone {color: #6b3fa0; font-style: italic}
.kjoin-viz .current td {background: #d8e8ff; font-weight: bold}
.kjoin-viz .kjoin-note {font-weight: normal; white-space: normal; color: #555}
</style>"""
"""Shared styles. Every colour that carries meaning is also set inline (``style=``), so a view
stored in a notebook reads the same where a viewer strips ``<style>`` elements."""

CELL = "border:1px solid #ccc;padding:1px 6px;text-align:left"
CHANGED = "background:#fff3b0"


@dataclass(frozen=True)
class StepPanes:
    """The HTML of each part of the view of one step."""

    header: str
    timeline: str
    state: str
    outputs: str
    log: str
    explain: str


class StepView:
    """A finished trace, indexed for showing any step quickly."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.foreign_key = trace.scenario.join == "fk"
        steps = trace.steps
        self.output_steps = [s.index for s in steps if s.outputs]
        self.tombstone_steps = [s.index for s in steps if any(o.tombstone for o in s.outputs)]
        tones = [fate_label(s).tone for s in steps]
        self.drop_steps = [i for i, tone in enumerate(tones) if tone == "dropped"]  # lost for good, not "not lost"
        self.held_steps = [i for i, tone in enumerate(tones) if tone in ("dropped", "held")]
        self._span = view_span(trace)
        self.consistency = _consistency(trace)
        self._log: list[Output] = [o for s in steps for o in s.outputs]
        self._log_end: list[int] = []  # outputs emitted up to and including each step
        total = 0
        latest = None
        self.late: list[bool] = []  # arrived with a timestamp below one seen before it
        for s in steps:
            total += len(s.outputs)
            self._log_end.append(total)
            self.late.append(latest is not None and s.record.ts < latest)
            latest = s.record.ts if latest is None else max(latest, s.record.ts)

    def __len__(self) -> int:
        return len(self.trace.steps)

    # -- jumps --------------------------------------------------------------------------
    def next_output(self, step: int) -> int | None:
        """The first step after ``step`` that emits anything, or ``None``."""
        return _after(self.output_steps, step)

    def next_tombstone(self, step: int) -> int | None:
        return _after(self.tombstone_steps, step)

    def next_drop(self, step: int) -> int | None:
        return _after(self.drop_steps, step)

    # -- content ------------------------------------------------------------------------
    def tables(self, step: int, internals: bool = False) -> list[StoreTable]:
        """The stores after ``step``; the entries the step put or deleted are marked. (A
        foreign-key join's ``in flight`` stores are left out: :func:`flight_text` shows them.)
        ``internals``: with Kafka's bookkeeping (old values, hashes, the clock's rows, store keys)."""
        s = self.trace[step]
        focus = s.record.key if s.message is None else None  # the looked-up key's rows first
        state = self.trace.state_at(step).stores
        before = self.trace.state_at(step - 1).stores if step > 0 and not internals else None
        tables = store_tables(
            state, self.trace.changes_at(step), self.trace.scenario, focus, internals=internals, before=before
        )
        if self.foreign_key:  # the messages in flight are shown apart, as they travel (flight.py)
            tables = [t for t in tables if t.name != IN_FLIGHT]
        return tables

    def log_tail(self, step: int, size: int = LOG_TAIL) -> tuple[int, list[Output]]:
        """``(outputs so far, the last size of them)``."""
        end = self._log_end[step]
        return end, self._log[max(0, end - size) : end]

    def held_tail(self, step: int, size: int = LOG_TAIL) -> list[Step]:
        """The latest steps up to ``step`` whose record was dropped, or is still held after ``step`` (a held
        record that has joined or left its buffer is no longer listed)."""
        end = bisect.bisect_right(self.held_steps, step)
        stores = self.trace.state_at(step).stores
        shown = [
            self.trace.steps[i]
            for i in self.held_steps[:end]
            if fate_label(self.trace.steps[i]).tone == "dropped" or rows_from(stores, i)
        ]
        return shown[-size:]

    def text(self, step: int, internals: bool = False) -> str:
        """The step as plain text: the record, its fate, its outputs and every store."""
        s = self.trace.steps[step]
        lines = [headline(s, len(self)), f"outputs: {_outputs_text(s.outputs) or '(none)'}", show_text(s.explain)]
        if self.consistency is not None:
            lines.append(self.consistency_text(step))
        lines.append("")
        if self.foreign_key:
            lines += [flight_text(self.trace, step), ""]
        tables = self.tables(step, internals)
        for table in tables:
            lines.append(table.title + ("" if not table.deleted else f"  (deleted: {', '.join(table.deleted)})"))
            if table.note:
                lines.append(f"  ({table.note})")
            marked = [("*" if i in table.changed else " ", *row) for i, row in enumerate(table.rows)]
            if marked:
                lines.append(format_table(("", *table.header), marked))
            else:
                lines.append("(empty)")
            if table.hidden:
                lines.append(f"… {table.hidden} more")
            lines.append("")
        hidden = hidden_internals_text(tables)
        if hidden:
            lines.append(hidden)
        return "\n".join(lines).rstrip() + "\n"

    def consistency_text(self, step: int) -> str:
        """Whether a table join's result (materialized) equals the join of its materialized inputs after ``step``."""
        assert self.consistency is not None
        if self.consistency[step]:
            return "consistent: the result table equals the join of the input tables as they are now"
        return "not (yet) consistent: the result table differs from the join of the input tables as they are now"

    def stream_time(self, step: int) -> int | None:
        """The stream time of the step's task after the step (``None`` if the join keeps none)."""
        return self.trace.state_at(step).stream_time(self.trace.steps[step].task)

    def panes(self, step: int, internals: bool = False) -> StepPanes:
        """The HTML of every part of the view of ``step``."""
        s = self.trace.steps[step]
        total, tail = self.log_tail(step)
        header = (
            f'<div class="kjoin-viz kjoin-header">{CSS}<b>{html.escape(_where(s, len(self)))}</b> '
            f"&rarr; {label_html(fate_label(s))}{html.escape(_released_text(s))}</div>"
        )
        # A foreign-key join's steps are records and message deliveries: draw the messages.
        if self.foreign_key:
            timeline = flight_svg(self.trace, step)
        else:
            timeline = timeline_svg(
                self.trace, step, late=self.late, stream_time=self.stream_time(step), span=self._span
            )
        tables = self.tables(step, internals)
        hidden = hidden_internals_text(tables)
        state = (
            '<div class="kjoin-viz kjoin-state" style="display:flex;flex-wrap:wrap;align-items:flex-start">'
            + "".join(_table_html(t) for t in tables)
            + "</div>"
        )
        if hidden:
            state += f'<div class="kjoin-viz kjoin-internals-note" style="color:#555">{html.escape(hidden)}</div>'
        outputs = (
            f'<div class="kjoin-viz kjoin-outputs">outputs of this step: {_outputs_html(s.outputs) or "(none)"}</div>'
        )
        held = ", ".join(_held_html(h) for h in self.held_tail(step))
        log = (
            f'<div class="kjoin-viz kjoin-log">log so far ({total} outputs; latest last): '
            f"{_outputs_html(tail) or '(none)'}"
            f"<br>still held, or dropped so far (latest last): {held or '(none)'}</div>"
        )
        mark = ""
        if self.consistency is not None:
            colour = "#1a6b1a" if self.consistency[step] else "#a66d00"
            words = html.escape(self.consistency_text(step))
            mark = f'<br><span class="kjoin-consistency" style="color:{colour}">{words}</span>'
        why = html.escape(show_text(s.explain))
        explain = f'<div class="kjoin-viz kjoin-explain">{label_html(fate_label(s))}: {why}{mark}</div>'
        return StepPanes(header, timeline, state, outputs, log, explain)

    def html(self, step: int, internals: bool = False) -> str:
        """One self-contained view of ``step`` (what :func:`~kjoin_viz.show_step` displays): the
        headline with the fate label, the timeline (or the messages), the explanation, the
        outputs and the stores with the rows the step wrote highlighted."""
        p = self.panes(step, internals)
        return (
            f'<div class="kjoin-viz kjoin-step" data-step="{step}" style="max-width:100%">'
            f"{p.header}{svg_image(p.timeline)}{p.explain}{p.outputs}{p.state}</div>"
        )


_VIEWS: "weakref.WeakKeyDictionary[Trace, StepView]" = weakref.WeakKeyDictionary()


def view_of(trace: Trace) -> StepView:
    """The :class:`StepView` of ``trace``, indexed once and shared by every view of it (``show_step``,
    the stepper, the predict widget)."""
    view = _VIEWS.get(trace)
    if view is None:
        view = _VIEWS[trace] = StepView(trace)
    return view


def hidden_internals_text(tables: list[StoreTable]) -> str:
    """One line naming the internals the tables leave out, or ``""``."""
    parts = []
    for table in tables:
        if table.hidden_internals:
            what = ", ".join(table.hidden_internals)
            parts.append(f"{table.title}: {what}")
    if not parts:
        return ""
    how = "the stepper's “show Kafka's internals”, or show_step(…, internals=True)"
    return f"Kafka's internals not shown ({how}): " + "; ".join(parts) + "."


def _consistency(trace: Trace) -> list[bool] | None:
    """The consistency marks of a WTable table join (:func:`kjoin.consistency.consistency_marks`),
    else ``None``: other traces are not marked."""
    if trace.scenario.join not in ("wtable-wtable", "wtable-table", "table-wtable"):
        return None
    from kjoin.consistency import consistency_marks

    return consistency_marks(trace)


def svg_image(svg: str) -> str:
    """An SVG as an ``<img>`` with a data URI. A notebook opened without running is not trusted
    yet, and JupyterLab strips inline ``<svg>`` (and ``<style>``) from its stored HTML, but keeps
    an image: so the stored view of a step still shows its timeline."""
    kind = "kjoin-flight" if 'class="kjoin-flight"' in svg[:80] else "kjoin-timeline"
    width = svg.split(' width="', 1)[1].split('"', 1)[0]
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return (
        f'<img class="{kind}-image" alt="{kind[6:]} of this step" '
        f'style="width:100%;max-width:{width}px;height:auto" '
        f'src="data:image/svg+xml;base64,{data}">'
    )


def _after(indexes: list[int], step: int) -> int | None:
    position = bisect.bisect_right(indexes, step)
    return indexes[position] if position < len(indexes) else None


def counter(index: int, total: int) -> str:
    """``step 3 (4 of 19)``: the step's number as every table and exercise names it (from 0), and
    where it stands among the trace's ``total`` steps, counted from 1."""
    return f"step {index} ({index + 1} of {total})"


def _where(s: Step, total: int) -> str:
    """``step 3 (4 of 19): right a@4 (key k)``, or the message a foreign-key step delivered."""
    where = f", task {s.task}" if s.task else ""
    if s.message is not None:  # a foreign-key join's step that delivered a message
        return f"{counter(s.index, total)}{where}: delivered {show_text(s.message.describe())}"
    r = s.record
    return f"{counter(s.index, total)}{where}: {r.side} {show_value(r.value)}@{r.ts} (key {show_value(r.key)})"


def _released_text(s: Step) -> str:
    """What the step emitted for earlier records (the outer-join buffer, the grace buffer, a
    cache's commit), so the headline never credits them to this record."""
    mine = own_outputs(s)
    others = [o for o in s.outputs if not any(o is m for m in mine)]
    if not others:
        return ""
    return f"; also emitted for earlier records: {_outputs_text(others)}"


def headline(s: Step, total: int) -> str:
    """The step in one line: where it is, the record, its fate label and what it released."""
    return f"{_where(s, total)} -> {fate_label(s)}{_released_text(s)}"


def _held(s: Step) -> str:
    r = s.record
    return f"{show_value(r.value)}@{r.ts} {fate_label(s)}"


def rows_from(stores: Any, step: int) -> bool:
    """Does any store hold a row that came from ``step`` (a buffered record, a cached update)?"""
    for store, entries in stores.items():
        for row in entries.values():
            if getattr(row, "origin_step", None) == step:
                return True
            if store.name.endswith(" cache") and isinstance(row, tuple) and len(row) == 4 and row[2] == step:
                return True
    return False


def _held_html(s: Step) -> str:
    r = s.record
    return f"{html.escape(show_value(r.value))}@{r.ts} {label_html(fate_label(s))}"


def _outputs_text(outputs: Any) -> str:
    return ", ".join(f"{show_output(o)}@{o.ts}" + (" (tombstone)" if o.tombstone else "") for o in outputs)


def _outputs_html(outputs: Any) -> str:
    return ", ".join(
        f'<span class="{"tombstone" if o.tombstone else "result"}" title="{getattr(o.kind, "value", o.kind)}" '
        f'style="color:{"#6b3fa0;font-style:italic" if o.tombstone else "#1a6b1a"}">'
        f"{html.escape(at(show_output(o), o.ts))}{' (tombstone)' if o.tombstone else ''}</span>"
        for o in outputs
    )


def _table_html(table: StoreTable) -> str:
    head = "".join(f'<th style="{CELL}">{html.escape(h)}</th>' for h in table.header)
    body = "".join(
        (f"<tr class='changed' style='{CHANGED}'>" if i in table.changed else "<tr>")
        + "".join(f'<td style="{CELL}">{html.escape(c)}</td>' for c in row)
        + "</tr>"
        for i, row in enumerate(table.rows)
    )
    span = f'colspan="{len(table.header)}" style="{CELL}"'
    struck = "color:#a33;text-decoration:line-through"
    body += "".join(
        f'<tr class="deleted" style="{struck}"><td {span}>deleted {html.escape(k)}</td></tr>' for k in table.deleted
    )
    if table.hidden:
        body += f"<tr><td {span}>… {table.hidden} more</td></tr>"
    if not body:
        body = f"<tr><td {span}>(empty)</td></tr>"
    note = ""
    if table.note:
        note = (
            f'<br><span class="kjoin-note" style="font-weight:normal;white-space:normal;color:#555">'
            f"{html.escape(table.note)}</span>"
        )
    return (
        f'<table data-store="{html.escape(table.title)}" '
        f'style="border-collapse:collapse;font:12px monospace;margin:2px 12px 8px 0">'
        f'<caption style="text-align:left;font-weight:bold">{html.escape(table.title)}{note}</caption>'
        f"<tr>{head}</tr>{body}</table>"
    )
