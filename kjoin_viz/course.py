"""The course's tables: finished traces as tables a learner reads at a glance and that fit the page.

This module owns every table the course notebooks show (``kjoin_viz.table``,
``kjoin_viz.variants_table`` and ``kjoin_viz.what_if_table`` are the package's general
displayables). A :class:`Table` shows in JupyterLab as an HTML table whose short cells never
wrap and whose long cells (a foreign-key message) wrap at spaces, so that it fits the notebook;
as ``text/plain`` (what nbval compares) the whole frame, one line per row. The builders only
read finished traces (the reference engine did the joining):

- :func:`steps_table`: one row per step (input, outputs with their timestamps, fate), the only
  steps table of the course;
- :func:`side_by_side`: one input under several traces, ``step | ts | left input | right input`` and a
  column of outputs per trace;
- :func:`result_table`: the join's result as a table (newest output per key) after a step;
- :func:`results_by_step`: the result table of several runs of one input after every step,
  side by side (where a record cache and eventual consistency show);
- :func:`held_at_end`: records still waiting in a buffer or cache when the input ends;
- :func:`clock_table`: the clock rows of the record's task after every step (stream time first);
- :func:`table_history`: one side's table after every step, in one cell per step;
- :func:`workflow_table`: a foreign-key join per input record: subscriptions sent, results;
- :func:`messages_table`: a foreign-key join's messages after one step;
- :func:`stores_table`: chosen stores after one step, as the stepper lays them out;
- :func:`versions_table`: a versioned table's history, each version with the interval in
  which it is valid;
- :func:`as_of_table`: what a reader of a versioned result sees as of each time, next to
  the join of the input tables as of that time;
- :func:`partitions_table`: the partition the default partitioner gives each key.

:func:`result_table`, :func:`results_by_step`, :func:`held_at_end`, :func:`clock_table` and
:func:`table_history` return ``pandas.DataFrame`` objects (short text cells; select columns
as with any frame).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from kjoin.joins.fk_protocol import SUBSCRIPTION, short_hash
from kjoin.joins.fk_transport import carries
from kjoin.partitioner import default_partition
from kjoin.records import Output
from kjoin.stores import GRACE_BUFFER, OUTER_BUFFER
from kjoin.trace import Trace

from .flight import flight_rows
from .labels import fate_label
from .store_view import store_tables
from .values import show_output, show_text, show_value

__all__ = [
    "Table",
    "Tables",
    "steps_table",
    "side_by_side",
    "workflow_table",
    "messages_table",
    "stores_table",
    "versions_table",
    "as_of",
    "as_of_table",
    "partitions_table",
    "result_table",
    "results_by_step",
    "held_at_end",
    "clock_table",
    "table_history",
]

_CELL = "white-space: nowrap; text-align: left; padding: 1px 10px 1px 4px; font-size: 12px"
_LONG_CELL = "white-space: normal; min-width: 12em; text-align: left; padding: 1px 10px 1px 4px; font-size: 12px"
LONG_CELL_CHARS = 30
"""Cells longer than this wrap at spaces (and no narrower than 12em), so that a table of long
foreign-key messages still fits a notebook with the file browser open; shorter cells never wrap."""
_MARK = "background: #fff3c4"


class Table:
    """A DataFrame for a notebook: HTML that never wraps, and unwrapped plain text.

    ``mark`` is a row position to highlight (the step the text talks about); the plain
    text marks it with ``>>``.
    """

    def __init__(self, frame: pd.DataFrame, mark: int | None = None) -> None:
        self.frame = frame.reset_index(drop=True)
        self.mark = mark

    def __len__(self) -> int:
        return len(self.frame)

    def _repr_html_(self) -> str:
        # Inline styles: they survive JupyterLab's sanitizer and beat the notebook's table CSS.
        head = "".join(f'<th style="{_CELL}">{html.escape(str(c))}</th>' for c in self.frame.columns)
        rows = []
        for i, row in enumerate(self.frame.itertuples(index=False, name=None)):
            mark = f' class="mark" style="{_MARK}"' if i == self.mark else ""
            cells = "".join(
                f'<td style="{_LONG_CELL if len(_text(v)) > LONG_CELL_CHARS else _CELL}">{html.escape(_text(v))}</td>'
                for v in row
            )
            rows.append(f"<tr{mark}>{cells}</tr>")
        return (
            f'<div class="kjoin-table kjoin-lesson-table" style="overflow-x: auto">'
            '<table style="table-layout: auto; width: auto; margin: 0">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        )

    def __repr__(self) -> str:
        if self.frame.empty:
            return "   (empty)"
        body = self.frame.itertuples(index=False, name=None)
        text = [[_text(c) for c in self.frame.columns]] + [[_text(v) for v in row] for row in body]
        widths = [max(len(row[i]) for row in text) for i in range(len(self.frame.columns))]
        lines = []
        for n, row in enumerate(text):
            prefix = ">> " if n - 1 == self.mark else "   "
            lines.append((prefix + "  ".join(cell.ljust(width) for cell, width in zip(row, widths))).rstrip())
        return "\n".join(lines)


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return str(value)


def _outputs(outputs: Iterable[Output], with_ts: bool = True) -> str:
    return ", ".join(show_output(o) + (f"@{o.ts}" if with_ts else "") for o in outputs)


def _input(step: Any) -> str:
    """A step's input in a few words: the record's value, or the message it delivered
    (``m1 subscription: (C1, o1) PROPAGATE_…``; its ts and task have their own columns)."""
    message = step.message
    if message is None:
        return show_value(step.record.value)
    return f"{message.id} {message.topic}: {show_text(carries(message))}"


def steps_table(trace: Trace, steps: Sequence[int] | None = None, mark: int | None = None) -> Table:
    """One row per step (all, or ``steps``): task, side, key, value, ts, outputs (``A-a@4``;
    ``null`` is a tombstone) and fate (the words of :func:`~kjoin_viz.fate_label`, as every
    view says it); in a foreign-key trace a delivered message's step
    shows the message as its value. The ``task`` column is left out when the scenario has one
    partition. ``mark`` highlights one step."""
    chosen = range(len(trace.steps)) if steps is None else steps
    rows = []
    for i in chosen:
        step = trace.steps[i]
        r = step.record
        rows.append(
            {
                "step": step.index,
                "task": step.task,
                "side": r.side.value,
                "key": show_value(r.key),
                "value": _input(step),
                "ts": r.ts,
                "outputs": _outputs(step.outputs),
                "fate": str(fate_label(step)),
            }
        )
    columns = ["step", "task", "side", "key", "value", "ts", "outputs", "fate"]
    if trace.scenario.partitions == 1:
        columns.remove("task")
    marked = None if mark is None else list(chosen).index(mark)
    return Table(pd.DataFrame(rows, columns=columns), marked)


def side_by_side(traces: Mapping[str, Trace], with_ts: bool = False, mark: int | None = None) -> Table:
    """The same input under several traces: ``step, ts, left, right`` and one column of
    outputs per trace (with ``with_ts``, each output's timestamp: ``a4-b2@4``)."""
    names = list(traces)
    lengths = {len(t.steps) for t in traces.values()}
    if len(lengths) != 1:
        raise ValueError("every trace must run the same steps")
    rows = []
    for i, step in enumerate(traces[names[0]].steps):
        value = _input(step)
        left, right = (value, "") if step.record.side.value == "left" else ("", value)
        rows.append([i, step.record.ts, left, right, *(_outputs(traces[n].steps[i].outputs, with_ts) for n in names)])
    return Table(pd.DataFrame(rows, columns=["step", "ts", "left input", "right input", *names]), mark)


def workflow_table(traces: Mapping[str, Trace]) -> Table:
    """Per input record of foreign-key traces over the same events: the subscriptions the
    first trace sent (``instruction → foreign key (task)``) and each trace's results (the
    outputs its chain of messages produced; ``null`` is a tombstone)."""
    names = list(traces)
    inputs = {name: [s for s in trace.steps if s.message is None] for name, trace in traces.items()}
    if len({len(steps) for steps in inputs.values()}) != 1:
        raise ValueError("every trace must run the same input records")
    first = traces[names[0]]
    messages = {s.message.id: s.message for s in first.steps if s.message is not None}
    messages.update((m.id, m) for m in first.state_at(-1).in_flight())
    sent: dict[int, list[Any]] = {}
    for message in sorted(messages.values(), key=lambda m: m.seq):
        if message.topic == SUBSCRIPTION:
            sent.setdefault(message.sent_step, []).append(message)
    results: dict[str, dict[int, list[Output]]] = {name: {} for name in names}
    for name, trace in traces.items():
        for output in trace.outputs:
            results[name].setdefault(output.origin_step, []).append(output)
    rows = []
    for i, step in enumerate(inputs[names[0]]):
        r = step.record
        subscriptions = "; ".join(
            f"{m.value.instruction.value} → {show_value(m.key)} (task {m.partition})" for m in sent.get(step.index, [])
        )
        cells = [_outputs(results[name].get(inputs[name][i].index, []), with_ts=False) for name in names]
        rows.append([r.ts, r.side.value, show_value(r.key), show_value(r.value), subscriptions, *cells])
    return Table(pd.DataFrame(rows, columns=["ts", "side", "key", "value", f"subscriptions sent ({names[0]})", *names]))


def messages_table(trace: Trace, step: int) -> Table:
    """A foreign-key join's messages after ``step``: the one it delivered, those it sent,
    and those still waiting, with what each carries and the hash of the left value."""
    rows = [
        {
            "message": f"{m.id} {m.topic}",
            "now": situation,
            "travels": "left → right" if m.topic == SUBSCRIPTION else "right → left",
            "to task": m.partition,
            "carries": show_text(carries(m)),
            "hash": short_hash(m.value.hash),
            "ts": m.ts,
        }
        for situation, m in flight_rows(trace, step)
    ]
    return Table(pd.DataFrame(rows, columns=["message", "now", "travels", "to task", "carries", "hash", "ts"]))


class Tables:
    """Several captioned :class:`Table` objects shown side by side (stacked as text)."""

    def __init__(self, tables: Sequence[tuple[str, Table]]) -> None:
        self.tables = list(tables)

    def __len__(self) -> int:
        return len(self.tables)

    def _repr_html_(self) -> str:
        parts = [
            f'<div style="margin: 0 18px 8px 0"><b>{html.escape(caption)}</b>{table._repr_html_()}</div>'
            for caption, table in self.tables
        ]
        return f'<div style="display: flex; flex-wrap: wrap; align-items: flex-start">{"".join(parts)}</div>'

    def __repr__(self) -> str:
        return "\n\n".join(f"{caption}\n{table!r}" for caption, table in self.tables)


def stores_table(trace: Trace, step: int, stores: Sequence[str], tasks: Sequence[int] | None = None) -> Tables:
    """The stores named in ``stores`` after ``step``, of every task (or of ``tasks``), each
    captioned ``task N: store`` and laid out as the stepper lays it out (a foreign-key join's
    left table shows each row's hash). ``*`` marks the entries the step put; a caption says
    what the step deleted."""
    tables = store_tables(trace.state_at(step).stores, trace.changes_at(step), trace.scenario)
    chosen = [t for t in tables if t.name in stores and (tasks is None or t.task in tasks)]
    chosen.sort(key=lambda t: (t.task, list(stores).index(t.name)))
    shown = []
    for table in chosen:
        rows = [("*" if i in table.changed else "", *row) for i, row in enumerate(table.rows)]
        caption = table.title + (f" (deleted: {', '.join(table.deleted)})" if table.deleted else "")
        shown.append((caption, Table(pd.DataFrame(rows, columns=["", *table.header]))))
    return Tables(shown)


def versions_table(trace: Trace, step: int, side: str, task: int = 0) -> Table:
    """A versioned table after ``step``: each version valid from its ts until the next
    version's ts (``latest``: still valid); a ``null`` value is a tombstone version."""
    versions = trace.state_at(step).versions(side, task)
    rows = []
    for i, row in enumerate(versions):
        following = versions[i + 1] if i + 1 < len(versions) else None
        valid_to = following["ts"] if following is not None and following["key"] == row["key"] else "latest"
        rows.append(
            {
                "key": show_value(row["key"]),
                "valid from": row["ts"],
                "valid to": valid_to,
                "value": show_value(row["value"]),
            }
        )
    return Table(pd.DataFrame(rows, columns=["key", "valid from", "valid to", "value"]))


def as_of(outputs: Sequence[Output], t: int) -> str:
    """The result a reader of a versioned result topic sees as of ``t``: the output with the
    largest ts <= ``t`` (the later one on equal ts); ``""`` if none, or a tombstone."""
    best: Output | None = None
    for output in outputs:
        if output.ts <= t and (best is None or output.ts >= best.ts):
            best = output
    return "" if best is None or best.tombstone else show_output(best)


def as_of_table(traces: Mapping[str, Trace], times: Iterable[int]) -> Table:
    """For a one-key table-table join, for each time ``t``: ``truth`` (the inner join of the
    two input tables as of ``t``: each side's row with the largest ts <= ``t``) and what each
    trace's outputs say as of ``t``; a last row counts each trace's outputs. Every trace must
    run the same records."""
    names = list(traces)
    records = traces[names[0]].scenario.records()
    rows = []
    for t in times:
        latest: dict[str, tuple[int, Any]] = {}
        for r in records:
            if r.ts <= t and (r.side.value not in latest or r.ts >= latest[r.side.value][0]):
                latest[r.side.value] = (r.ts, r.value)
        left, right = (latest.get(side, (0, None))[1] for side in ("left", "right"))
        truth = f"{show_value(left)}-{show_value(right)}" if left is not None and right is not None else ""
        rows.append([str(t), truth, *(as_of(traces[n].outputs, t) for n in names)])
    rows.append(["outputs", "", *(str(len(traces[n].outputs)) for n in names)])
    return Table(pd.DataFrame(rows, columns=["as of t", "truth", *names]))


def partitions_table(keys: Sequence[Any], partitions: Sequence[int]) -> Table:
    """The partition Kafka's default partitioner (murmur2 of the key's bytes) gives each key,
    for each partition count: the same key lands on the same partition only for equal counts."""
    rows = [[show_value(key), *(default_partition(key, n) for n in partitions)] for key in keys]
    return Table(pd.DataFrame(rows, columns=["key", *(f"{n} partitions" for n in partitions)]))


def result_table(trace: Trace, step: int = -1) -> pd.DataFrame:
    """The join result read as a table after ``step`` (default: the last): for each key the
    newest output emitted so far; a tombstone removes its key. Rows in key order."""
    if step < 0:
        step += len(trace.steps)
    if not 0 <= step < len(trace.steps):
        raise IndexError(f"step {step} is outside this trace (0 to {len(trace.steps) - 1})")
    latest: dict[str, tuple[str, int]] = {}
    for s in trace.steps[: step + 1]:
        for output in s.outputs:
            key = show_value(output.key)
            if output.tombstone:
                latest.pop(key, None)
            else:
                latest[key] = (show_output(output), output.ts)
    rows = [[key, value, ts] for key, (value, ts) in sorted(latest.items())]
    return pd.DataFrame(rows, columns=["key", "result", "ts"])


def held_at_end(trace: Trace) -> pd.DataFrame:
    """What still waits when the input ends: the rows of the outer-join buffer, the grace
    buffer and every record cache after the last step (``store | key | ts | value | detail``). Nothing
    flushes them until a later record moves stream time (or a commit comes)."""
    frame = trace.state_at(-1).frame()
    held = frame[frame["store"].isin([OUTER_BUFFER, GRACE_BUFFER]) | frame["store"].str.endswith("cache")]
    held = held[["store", "key", "ts", "value", "detail"]].copy()
    held["key"] = held["key"].map(show_value)
    held["value"] = held["value"].map(show_value)
    held["detail"] = held["detail"].fillna("")
    return held.reset_index(drop=True)


def clock_table(trace: Trace) -> pd.DataFrame:
    """One row per step: ``task | record`` and the clock rows of that record's task after the
    step (``stream time`` first, then the others as they first appear); empty until set."""
    names: list[str] = ["stream time"]
    rows = []
    for s in trace.steps:
        clock = trace.state_at(s.index).clock(s.task)
        names += [name for name in clock if name not in names]
        record = f"{s.record.side.value} {show_value(s.record.value)}@{s.record.ts}"
        rows.append((s.task, record, clock))
    table = pd.DataFrame(
        [[task, record, *(clock.get(name) for name in names)] for task, record, clock in rows],
        columns=["task", "record", *names],
    )
    table = table.astype({name: "Int64" for name in names})
    table.index.name = "step"
    return table


def results_by_step(traces: Mapping[str, Trace]) -> pd.DataFrame:
    """One row per step: ``record`` and, per trace, its result table after the step in one
    cell (``alice: A2-x, bob: B1-null``; ``(empty)``), plus ``same`` (True where every trace's
    result table is the same). The traces must run the same input records."""
    names = list(traces)
    if not names:
        raise ValueError("results_by_step needs at least one trace")
    first = traces[names[0]]
    if any(len(traces[name].steps) != len(first.steps) for name in names):
        raise ValueError("every trace must run the same input records")
    rows = []
    for s in first.steps:
        cells = []
        for name in names:
            table = result_table(traces[name], s.index)
            cells.append(", ".join(f"{key}: {value}" for key, value in zip(table["key"], table["result"])) or "(empty)")
        record = f"{s.record.side.value} {show_value(s.record.key)} {show_value(s.record.value)}@{s.record.ts}"
        rows.append([record, *cells, len(set(cells)) == 1])
    frame = pd.DataFrame(rows, columns=["record", *names, "same"])
    frame.index.name = "step"
    return frame


def table_history(trace: Trace, side: str = "left") -> pd.DataFrame:
    """One row per step: ``record`` and the ``side`` table store after the step in one cell
    (``alice = Paris, bob = Rome``; ``(empty)``): how a table keeps only the newest value per key."""
    rows = []
    for s in trace.steps:
        table = trace.state_at(s.index).table(side)
        cell_text = ", ".join(f"{show_value(row['key'])} = {show_value(row['value'])}" for row in table)
        record = f"{s.record.side.value} {show_value(s.record.key)} {show_value(s.record.value)}@{s.record.ts}"
        rows.append([record, cell_text or "(empty)"])
    frame = pd.DataFrame(rows, columns=["record", f"{side} table"])
    frame.index.name = "step"
    return frame
