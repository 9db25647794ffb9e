"""Small tables for the course notebooks: a finished trace as DataFrames a learner reads at a glance.

Every function only reads a trace (the reference engine did the joining) and returns a
``pandas.DataFrame`` with short text cells, so a notebook shows it as a table that does not
wrap, and nbval compares it as text.

- :func:`seed_table_frame`: one input under several variants or eras, the seeds' table.
- :func:`steps_table`: every step of one trace: the input record, its outputs, its fate.
- :func:`result_table`: the join's result as a table (newest output per key) after a step.
- :func:`held_at_end`: records still waiting in a buffer or cache when the input ends.
- :func:`clock_table`: the clock rows of the record's task after every step (stream time first).
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from kjoin.records import render_value
from kjoin.render import cell
from kjoin.stores import GRACE_BUFFER, OUTER_BUFFER
from kjoin.trace import Step, Trace

__all__ = ["seed_table_frame", "steps_table", "result_table", "held_at_end", "fate_label", "clock_table"]


def fate_label(step: Step) -> str:
    """``joined``, ``dropped (null-value)``, ``buffered (window-open) until 23``."""
    label = step.fate.value
    if step.reason is not None:
        label += f" ({step.reason.value})"
    if step.until_ms is not None:
        label += f" until {step.until_ms}"
    return label


def seed_table_frame(traces: Mapping[str, Trace], with_ts: bool = False) -> pd.DataFrame:
    """``step | ts | left | right | <one column per trace>``: the outputs each input record
    caused under each trace (``A-b, B-b``; a tombstone reads ``null``; an empty cell: none).
    ``with_ts`` adds each output's timestamp (``A-a@4``). A trace named like an input column
    (``left``, ``right``) is shown as ``left join``, ``right join``: column names stay unique."""
    names = list(traces)
    if not names:
        raise ValueError("seed_table_frame needs at least one trace")
    first = traces[names[0]]
    if any(len(traces[name].steps) != len(first.steps) for name in names):
        raise ValueError("every trace must run the same input records")
    rows = []
    for index, step in enumerate(first.steps):
        record = step.record
        value = render_value(record.value)
        left, right = (value, "") if record.side.value == "left" else ("", value)
        rows.append([record.ts, left, right, *(cell(traces[name].steps[index], with_ts) for name in names)])
    columns = [f"{name} join" if name in ("ts", "left", "right") else name for name in names]
    frame = pd.DataFrame(rows, columns=["ts", "left", "right", *columns])
    frame.index.name = "step"
    return frame


def steps_table(trace: Trace) -> pd.DataFrame:
    """One row per step: ``side | key | ts | value | outputs | fate`` (outputs with their
    timestamps, ``A-a@4``; the fate with its reason and, for a held record, until when)."""
    rows = [
        [s.record.side.value, render_value(s.record.key), s.record.ts, render_value(s.record.value),
         cell(s, with_ts=True), fate_label(s)]
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
