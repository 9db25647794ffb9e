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

import bisect
import html
from dataclasses import dataclass
from typing import Any

from kjoin.fates import Fate
from kjoin.records import Output, render_value
from kjoin.render import format_table
from kjoin.stores import IN_FLIGHT
from kjoin.trace import Step, Trace

from .flight import flight_svg, flight_text
from .store_view import StoreTable, store_tables
from .timeline import timeline_svg

__all__ = ["StepView", "StepPanes", "LOG_TAIL"]

LOG_TAIL = 12
"""Outputs shown in the "log so far" (the latest ones)."""

CSS = """<style>
.kjoin-viz table {border-collapse: collapse; font: 12px monospace; margin: 2px 12px 8px 0}
.kjoin-viz th, .kjoin-viz td {border: 1px solid #ccc; padding: 1px 6px; text-align: left}
.kjoin-viz caption {text-align: left; font-weight: bold; white-space: nowrap}
.kjoin-state {display: flex; flex-wrap: wrap; align-items: flex-start}
.kjoin-viz .changed td {background: #fff3b0}
.kjoin-viz .deleted {color: #a33; text-decoration: line-through}
.kjoin-viz .result {color: #1a6b1a}
.kjoin-viz .tombstone {color: #b22; font-style: italic}
.kjoin-viz .fate-dropped {color: #b22} .kjoin-viz .fate-buffered {color: #a66d00}
.kjoin-viz .current td {background: #d8e8ff; font-weight: bold}
.kjoin-viz .kjoin-note {font-weight: normal; white-space: normal; color: #555}
</style>"""


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
        self.drop_steps = [s.index for s in steps if s.fate is Fate.DROPPED]
        self.held_steps = [s.index for s in steps if s.fate in (Fate.DROPPED, Fate.BUFFERED)]
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
    def tables(self, step: int) -> list[StoreTable]:
        """The stores after ``step``; the entries the step put or deleted are marked. (A
        foreign-key join's ``in flight`` stores are left out: :func:`flight_text` shows them.)"""
        s = self.trace[step]
        focus = s.record.key if s.message is None else None  # the looked-up key's rows first
        state = self.trace.state_at(step).stores
        tables = store_tables(state, self.trace.changes_at(step), self.trace.scenario, focus_key=focus)
        if self.foreign_key:  # the messages in flight are shown apart, as they travel (flight.py)
            tables = [t for t in tables if t.name != IN_FLIGHT]
        return tables

    def log_tail(self, step: int, size: int = LOG_TAIL) -> tuple[int, list[Output]]:
        """``(outputs so far, the last size of them)``."""
        end = self._log_end[step]
        return end, self._log[max(0, end - size):end]

    def held_tail(self, step: int, size: int = LOG_TAIL) -> list[Step]:
        """The latest steps up to ``step`` whose record was dropped or buffered."""
        end = bisect.bisect_right(self.held_steps, step)
        return [self.trace.steps[i] for i in self.held_steps[max(0, end - size):end]]

    def text(self, step: int) -> str:
        """The step as plain text: the record, its fate, its outputs and every store."""
        s = self.trace.steps[step]
        lines = [_headline(s, len(self)), f"outputs: {_outputs_text(s.outputs) or '(none)'}", s.explain, ""]
        if self.foreign_key:
            lines += [flight_text(self.trace, step), ""]
        for table in self.tables(step):
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
        return "\n".join(lines).rstrip() + "\n"

    def panes(self, step: int) -> StepPanes:
        """The HTML of every part of the view of ``step``."""
        s = self.trace.steps[step]
        total, tail = self.log_tail(step)
        header = f'<div class="kjoin-viz">{CSS}<b>{html.escape(_headline(s, len(self)))}</b></div>'
        # A foreign-key join's steps are records and message deliveries: draw the messages.
        timeline = flight_svg(self.trace, step) if self.foreign_key else timeline_svg(self.trace, step, late=self.late)
        state = '<div class="kjoin-viz kjoin-state">' + "".join(_table_html(t) for t in self.tables(step)) + "</div>"
        outputs = f'<div class="kjoin-viz kjoin-outputs">outputs of this step: {_outputs_html(s.outputs) or "(none)"}</div>'
        held = ", ".join(f'<span class="fate-{h.fate.value}">{html.escape(_held(h))}</span>' for h in self.held_tail(step))
        log = (f'<div class="kjoin-viz kjoin-log">log so far ({total} outputs; latest last): {_outputs_html(tail) or "(none)"}'
               f"<br>dropped or buffered so far (latest last): {held or '(none)'}</div>")
        explain = f'<div class="kjoin-viz kjoin-explain">{_fate_html(s)} {html.escape(s.explain)}</div>'
        return StepPanes(header, timeline, state, outputs, log, explain)


def _after(indexes: list[int], step: int) -> int | None:
    position = bisect.bisect_right(indexes, step)
    return indexes[position] if position < len(indexes) else None


def _headline(s: Step, total: int) -> str:
    r = s.record
    fate = s.fate.value + ("" if s.reason is None else f" ({s.reason.value})")
    if s.until_ms is not None:
        fate += f" until {s.until_ms}"
    where = f", task {s.task}" if s.task else ""
    if s.message is not None:  # a foreign-key join's step that delivered a message
        return f"step {s.index} of {total - 1}{where}: delivered {s.message.describe()} -> {fate}"
    return f"step {s.index} of {total - 1}{where}: {r.side} key {render_value(r.key)} value {render_value(r.value)} @ {r.ts} -> {fate}"


def _held(s: Step) -> str:
    r = s.record
    reason = "" if s.reason is None else f" ({s.reason.value})"
    until = "" if s.until_ms is None else f" until {s.until_ms}"
    return f"{render_value(r.value)}@{r.ts} {s.fate.value}{reason}{until}"


def _outputs_text(outputs: Any) -> str:
    return ", ".join(f"{o.render()}@{o.ts}" + (" (tombstone)" if o.tombstone else "") for o in outputs)


def _outputs_html(outputs: Any) -> str:
    return ", ".join(
        f'<span class="{"tombstone" if o.tombstone else "result"}" title="{o.kind.value}">'
        f"{html.escape(o.render())}@{o.ts}{' (tombstone)' if o.tombstone else ''}</span>"
        for o in outputs
    )


def _fate_html(s: Step) -> str:
    label = s.fate.value + ("" if s.reason is None else f" ({s.reason.value})")
    return f'<b class="fate-{s.fate.value}">{html.escape(label)}:</b>'


def _table_html(table: StoreTable) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.header)
    body = "".join(
        ("<tr class='changed'>" if i in table.changed else "<tr>") + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
        for i, row in enumerate(table.rows)
    )
    body += "".join(f'<tr class="deleted"><td colspan="{len(table.header)}">deleted {html.escape(k)}</td></tr>' for k in table.deleted)
    if table.hidden:
        body += f'<tr><td colspan="{len(table.header)}">… {table.hidden} more</td></tr>'
    if not body:
        body = f'<tr><td colspan="{len(table.header)}">(empty)</td></tr>'
    note = f'<br><span class="kjoin-note">{html.escape(table.note)}</span>' if table.note else ""
    return (f'<table data-store="{html.escape(table.title)}"><caption>{html.escape(table.title)}{note}</caption>'
            f"<tr>{head}</tr>{body}</table>")
