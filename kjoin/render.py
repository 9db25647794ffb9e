"""Traces as text: the seeds' kind of table, a step-by-step table, and JSON lines."""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .records import render_value
from .trace import Step, Trace

__all__ = ["seed_table", "trace_table", "trace_jsonl", "format_table", "cell"]


def cell(step: Step) -> str:
    """A step's outputs as one seed-table cell: ``A-b, B-b``; tombstones as ``null``."""
    return ", ".join(output.render() for output in step.outputs)


def format_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain text table with ``|`` between aligned columns."""
    text_rows = [[str(value) for value in row] for row in rows]
    widths = [max([len(name)] + [len(row[i]) for row in text_rows]) for i, name in enumerate(header)]
    lines = [" | ".join(name.ljust(width) for name, width in zip(header, widths)).rstrip()]
    lines.append("-+-".join("-" * width for width in widths))
    lines += [" | ".join(value.ljust(width) for value, width in zip(row, widths)).rstrip() for row in text_rows]
    return "\n".join(lines)


def seed_table(traces: Mapping[str, Trace]) -> str:
    """One input run under several variants, as the seeds show it: ``ts | left | right | inner | …``.

    ``traces`` maps a column name (usually the variant) to a trace of the same events.
    """
    columns = list(traces)
    first = traces[columns[0]]
    rows = []
    for index, step in enumerate(first.steps):
        record = step.record
        value = render_value(record.value)
        left, right = (value, "") if record.side.value == "left" else ("", value)
        rows.append([record.ts, left, right, *(cell(traces[name][index]) for name in columns)])
    return format_table(["ts", "left", "right", *columns], rows)


def trace_table(trace: Trace) -> str:
    """Every step: the input, its outputs, and what happened to it."""
    rows = []
    for step in trace.steps:
        r = step.record
        fate = step.fate.value
        if step.reason is not None:
            fate += f" ({step.reason.value})"
        if step.until_ms is not None:
            fate += f" until {step.until_ms}"
        outputs = ", ".join(f"{o.render()}@{o.ts}" for o in step.outputs)
        rows.append([step.index, step.task, r.side.value, render_value(r.key), render_value(r.value), r.ts, outputs, fate])
    s = trace.scenario
    title = f"{s.join} {s.variant} join, semantics {s.semantics}"
    if s.window is not None:
        grace = "deprecated JoinWindows.of" if s.window.grace_ms is None else f"grace {s.window.grace_ms}"
        title += f", window -{s.window.before_ms}/+{s.window.after_ms}, {grace}"
    return title + "\n" + format_table(["step", "task", "side", "key", "value", "ts", "outputs", "fate"], rows)


def trace_jsonl(trace: Trace) -> Iterator[str]:
    """One JSON object per step: ``{"step", "input", "outputs", "reason", "explain", …}``."""
    for step in trace.steps:
        yield json.dumps(step.to_dict(), sort_keys=False, separators=(", ", ": "), default=render_value)
