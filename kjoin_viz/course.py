"""Small tables for the course notebooks: a finished trace as DataFrames a learner reads at a glance.

Every function only reads a trace (the reference engine did the joining) and returns a
``pandas.DataFrame`` with short text cells, so a notebook shows it as a table that does not
wrap, and nbval compares it as text.

- :func:`steps_table`: every step of one trace: the input record, its outputs, its fate.
- :func:`result_table`: the join's result as a table (newest output per key) after a step.
- :func:`held_at_end`: records still waiting in a buffer or cache when the input ends.
- :func:`clock_table`: the clock rows of the record's task after every step (stream time first).
- :func:`table_history`: one side's table after every step, in one cell per step.
- :func:`results_by_step`: the result table of several runs of one input after every step,
  side by side (where a record cache and eventual consistency show).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from kjoin.records import render_value
from kjoin.render import cell
from kjoin.stores import GRACE_BUFFER, OUTER_BUFFER
from kjoin.trace import Trace

from .labels import fate_label

__all__ = ["clock_table", "held_at_end", "result_table", "results_by_step", "steps_table", "table_history"]


def steps_table(trace: Trace) -> pd.DataFrame:
    """One row per step: ``side | key | ts | value | outputs | fate`` (outputs with their
    timestamps, ``A-a@4``, including those released for earlier records; the fate in the words
    of :func:`kjoin_viz.fate_label`, as the stepper says it)."""
    rows = [
        [s.record.side.value, render_value(s.record.key), s.record.ts, render_value(s.record.value),
         cell(s, with_ts=True), str(fate_label(s))]
        for s in trace.steps
    ]
    frame = pd.DataFrame(rows, columns=["side", "key", "ts", "value", "outputs", "fate"])
    frame.index.name = "step"
    return frame


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
            key = render_value(output.key)
            if output.tombstone:
                latest.pop(key, None)
            else:
                latest[key] = (output.render(), output.ts)
    rows = [[key, value, ts] for key, (value, ts) in sorted(latest.items())]
    return pd.DataFrame(rows, columns=["key", "result", "ts"])


def held_at_end(trace: Trace) -> pd.DataFrame:
    """What still waits when the input ends: the rows of the outer-join buffer, the grace
    buffer and every record cache after the last step (``store | key | ts | value | detail``). Nothing
    flushes them until a later record moves stream time (or a commit comes)."""
    frame = trace.state_at(-1).frame()
    held = frame[frame["store"].isin([OUTER_BUFFER, GRACE_BUFFER]) | frame["store"].str.endswith("cache")]
    held = held[["store", "key", "ts", "value", "detail"]].copy()
    held["key"] = held["key"].map(render_value)
    held["value"] = held["value"].map(render_value)
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
        record = f"{s.record.side.value} {render_value(s.record.value)}@{s.record.ts}"
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
        record = f"{s.record.side.value} {render_value(s.record.key)} {render_value(s.record.value)}@{s.record.ts}"
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
        cell_text = ", ".join(f"{render_value(row['key'])} = {render_value(row['value'])}" for row in table)
        record = f"{s.record.side.value} {render_value(s.record.key)} {render_value(s.record.value)}@{s.record.ts}"
        rows.append([record, cell_text or "(empty)"])
    frame = pd.DataFrame(rows, columns=["record", f"{side} table"])
    frame.index.name = "step"
    return frame
