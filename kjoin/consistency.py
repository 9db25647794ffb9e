"""Eventual consistency of table joins: does the materialized result equal the join of the
materialized inputs, after each step?

The windowed-table design says table joins are eventually consistent. :func:`consistency_marks` checks it step by
step on a trace (``table-table`` and the WTable table joins); :func:`materialize` turns a changelog
into the table it describes.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .joins.window_aggregate import Window, Windowed
from .trace import Trace

__all__ = ["consistency_marks", "materialize"]


def materialize(outputs: Iterable[Any]) -> dict[Any, Any]:
    """A changelog as a table: the latest value of every key; a tombstone deletes the key."""
    table: dict[Any, Any] = {}
    for output in outputs:
        key = output.key if getattr(output, "window", None) is None else Windowed(output.key, Window(*output.window))
        if output.tombstone:
            table.pop(key, None)
        else:
            table[key] = output.value
    return table


def consistency_marks(trace: Trace) -> list[bool]:
    """After each step of a table join: does materializing its results so far give the SQL join of
    its materialized inputs (the stores as they are after the step)?

    Works for ``table-table`` traces of :func:`kjoin.run` (unversioned, one join) and for the
    ``wtable-wtable``, ``wtable-table`` and ``table-wtable`` traces of :func:`run_wtable_join`.
    Results are compared as ``(left, right)`` pairs, so the joiner does not matter. The windowed-table design
    says table joins are eventually consistent: the marks are true whenever the inputs are
    quiet. A window dropped from its store (behind the retention) is no longer an input, while
    its results stay in the result table: the marks then turn false.
    """
    join = trace.scenario.join
    if join not in ("table-table", "wtable-wtable", "wtable-table", "table-wtable"):
        raise ValueError(f"consistency is defined for table joins, not {join} (a stream has no materialization)")
    marks = []
    result: dict[Any, Any] = {}
    for step in trace:
        for output in step.outputs:
            if output.tombstone:
                result.pop(output.key, None)
            else:
                result[output.key] = (output.left, output.right)
        marks.append(result == _join_of_inputs(trace, step.index))
    return marks


def _rows(trace: Trace, step: int, name: str) -> dict[Any, Any]:
    """Every task's rows of store ``name``: tables as ``key -> value``, window stores as ``Windowed -> aggregate``."""
    rows: dict[Any, Any] = {}
    for store, entries in trace.state_at(step).stores.items():
        if store.name != name:
            continue
        for entry, row in entries.items():
            if isinstance(entry, tuple) and name.endswith("window aggregate store"):
                rows[Windowed(entry[0], Window(entry[1], row[2]))] = row[0]
            else:
                rows[entry] = row[0]
    return rows


def _join_of_inputs(trace: Trace, step: int) -> dict[Any, Any]:
    config = trace.scenario
    variant = config.variant
    if config.join == "table-table":
        return _sql_join(variant, _rows(trace, step, "left table"), _rows(trace, step, "right table"))
    if config.join == "wtable-table":
        table = _rows(trace, step, "right table")
        return {
            key: (agg, table.get(key.key)) for key, agg in _rows(trace, step, "left window aggregate store").items()
        }
    if config.join == "table-wtable":
        select = config.options["selector"]
        table, wtable = _rows(trace, step, "left table"), _rows(trace, step, "right window aggregate store")
        found = {}
        for key, value in table.items():
            window = select(key, value, 0)
            found[key] = (value, None if window is None else wtable.get(Windowed(key, window)))
        return found
    shifter = config.options.get("shifter")
    if config.options.get("self_join"):
        left = right = _rows(trace, step, "window aggregate store")
    else:
        left = _rows(trace, step, "left window aggregate store")
        right = _rows(trace, step, "right window aggregate store")
    if shifter is None:
        return _sql_join(variant, left, right)
    return {key: (agg, right.get(Windowed(key.key, shifter(key.window)))) for key, agg in left.items()}


def _sql_join(variant: str, left: Mapping[Any, Any], right: Mapping[Any, Any]) -> dict[Any, Any]:
    keys = {"inner": left.keys() & right.keys(), "left": set(left), "outer": left.keys() | right.keys()}[variant]
    return {key: (left.get(key), right.get(key)) for key in keys}
