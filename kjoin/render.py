"""Traces as text: the seeds' kind of table, a step-by-step table, and JSON lines; a seed-000
trace (an aggregate or a WTable join) as ``kjoin run`` prints it (:func:`spec_table`, :func:`spec_jsonl`)."""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .joins.window_aggregate import Windowed
from .records import render_value
from .scenario.aggregate import AggregateConfig
from .semantics import parse_semantics
from .trace import AggregateTrace, Step, Trace, output_to_dict

__all__ = [
    "seed_table",
    "trace_table",
    "scenario_title",
    "trace_jsonl",
    "format_table",
    "cell",
    "spec_jsonl",
    "spec_table",
    "spec_title",
]


def cell(step: Step, with_ts: bool = False) -> str:
    """A step's outputs as one seed-table cell: ``A-b, B-b``; tombstones as ``null``; with
    ``with_ts``, each output's timestamp too: ``A-b@6``."""
    return ", ".join(output.render() + (f"@{output.ts}" if with_ts else "") for output in step.outputs)


def format_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain text table with ``|`` between aligned columns."""
    text_rows = [[str(value) for value in row] for row in rows]
    widths = [max([len(name)] + [len(row[i]) for row in text_rows]) for i, name in enumerate(header)]
    lines = [" | ".join(name.ljust(width) for name, width in zip(header, widths)).rstrip()]
    lines.append("-+-".join("-" * width for width in widths))
    lines += [" | ".join(value.ljust(width) for value, width in zip(row, widths)).rstrip() for row in text_rows]
    return "\n".join(lines)


def seed_table(traces: Mapping[str, Trace], with_ts: bool = False) -> str:
    """One input run under several variants, as the seeds show it: ``ts | left input | right input | inner | …``
    (the inputs' columns say *input*: a ``left`` column is the left join's).

    ``traces`` maps a column name (usually the variant) to a trace of the same events;
    ``with_ts`` writes each output's timestamp (``a4-b2@4``), as seed 003 does.
    """
    columns = list(traces)
    first = traces[columns[0]]
    rows = []
    for index, step in enumerate(first.steps):
        record = step.record
        value = render_value(record.value)
        left, right = (value, "") if record.side.value == "left" else ("", value)
        rows.append([record.ts, left, right, *(cell(traces[name][index], with_ts) for name in columns)])
    return format_table(["ts", "left input", "right input", *columns], rows)


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
        rows.append(
            [step.index, step.task, r.side.value, render_value(r.key), render_value(r.value), r.ts, outputs, fate]
        )
    return (
        scenario_title(trace.scenario)
        + "\n"
        + format_table(["step", "task", "side", "key", "value", "ts", "outputs", "fate"], rows)
    )


def scenario_title(s: Any) -> str:
    """One line naming the join and every option that changes its outputs.

    ``stream-stream left join, semantics 3.1, window -15/+15, grace 5``;
    ``fk inner join, semantics 4.4, foreign key fk, hash check on, delivery explicit``;
    ``table-table inner join, semantics 4.4, left and right tables versioned (history
    retention 1000 ms), versioned_mode attempt1``.
    """
    parts = [f"{s.join} {s.variant} join, semantics {s.semantics}"]
    if s.window is not None:
        grace = "deprecated JoinWindows.of" if s.window.grace_ms is None else f"grace {s.window.grace_ms}"
        parts.append(f"window -{s.window.before_ms}/+{s.window.after_ms}, {grace}")
    if s.partitions > 1:
        parts.append(f"{s.partitions} partitions")
    if s.join == "fk":
        parts.append(f"foreign key {s.foreign_key}")
        parts.append(f"hash check {'on' if s.hash_check else 'off'}")
        delivery = s.delivery
        if delivery.mode == "random":
            detail = f"seed {delivery.seed}" + (", wait for row" if delivery.wait_for_row else "")
            parts.append(f"delivery random ({detail})")
        else:
            parts.append(f"delivery {delivery.mode}")
    versioned = [side for side in ("left", "right") if getattr(s, side).versioned]
    if versioned:
        retentions = {getattr(s, side).history_retention_ms for side in versioned}
        if len(retentions) == 1:
            which = " and ".join(versioned) + (" tables" if len(versioned) > 1 else " table")
            parts.append(f"{which} versioned (history retention {retentions.pop()} ms)")
        else:
            parts.append(
                ", ".join(
                    f"{side} table versioned (history retention {getattr(s, side).history_retention_ms} ms)"
                    for side in versioned
                )
            )
    if s.grace_ms is not None:
        parts.append(f"grace period {s.grace_ms} ms")
    if s.join == "table-table" and versioned:
        parts.append(f"versioned_mode {s.versioned_mode}")
    if s.self_join:
        parts.append("self-join" + (", single store (optimized)" if s.optimize else ", two stores"))
    for number, chained in enumerate(s.then, start=2):
        window = "" if chained.window is None else f" (window -{chained.window.before_ms}/+{chained.window.after_ms})"
        parts.append(f"then join {number}: {chained.variant}{window}")
    if s.materialized:
        parts.append("result materialized")
    if s.send_old_values:
        parts.append("old values sent")
    if s.caching:
        parts.append(
            f"caching {' and '.join(s.caching)}"
            + ("" if s.commit_every == 1 else f", commit every {s.commit_every} records")
        )
    return ", ".join(parts)


def trace_jsonl(trace: Trace) -> Iterator[str]:
    """One JSON object per step: ``{"step", "input", "outputs", "reason", "explain", …}``."""
    for step in trace.steps:
        yield json.dumps(step.to_dict(), sort_keys=False, separators=(", ", ": "), default=render_value)


# -- the windowed-table design: aggregates and WTable joins ------------------------------------------------
def spec_jsonl(trace: AggregateTrace) -> Iterator[str]:
    """One JSON object per step, as ``kjoin run --format jsonl`` writes; windowed outputs carry ``window``."""
    for step in trace.steps:
        yield json.dumps(_step_dict(step), separators=(", ", ": "), default=render_value)


def spec_title(trace: AggregateTrace) -> str:
    """One line naming the join and the options that change its outputs."""
    config = trace.scenario
    assert isinstance(config, AggregateConfig), "spec_title reads a windowed-table trace (an AggregateTrace)"
    options = config.options
    if config.join == "table-aggregate":
        parts = [f"table-aggregate ({config.variant}) grouped by {options['group_by']}"]
    elif config.join == "hopping-join":
        parts = [f"hopping-join, one output per {options['per']}"]
    else:
        kind = "" if config.join == "window-aggregate" else f" {config.variant} join"
        parts = [f"{config.join}{kind}, {options['windows'].describe()}"]
        layout = options.get("layout")
        if layout is not None:
            parts.append(f"retention {layout.retention_ms} ms in segments of {layout.segment_interval_ms} ms")
        if options.get("shifter") is not None:
            parts.append(f"window shifter: {options['shifter'].__doc__}")
        if options.get("self_join"):
            parts.append("self join")
    semantics = options.get("semantics")
    if semantics is not None and semantics != parse_semantics(None):
        parts.append(f"Kafka {semantics} rules")
    parts.append(f"{config.partitions} partition{'s' if config.partitions != 1 else ''}")
    return ", ".join(parts)


def spec_table(trace: AggregateTrace) -> str:
    """Every step as ``kjoin run`` prints it: the input, its outputs (a windowed key with its
    window ``[start, end)``), and what happened to it."""
    rows = []
    for step in trace.steps:
        r = step.record
        fate = step.fate.value + ("" if step.reason is None else f" ({step.reason.value})")
        outputs = ", ".join(_output_text(o) for o in step.outputs)
        rows.append(
            [step.index, step.task, r.side.value, render_value(r.key), render_value(r.value), r.ts, outputs, fate]
        )
    header = ["step", "task", "side", "key", "value", "ts", "outputs", "fate"]
    return spec_title(trace) + "\n" + format_table(header, rows)


def _output_text(output: Any) -> str:
    text = f"{output.render()}@{output.ts}"
    return f"{output.key}: {text}" if isinstance(output.key, Windowed) else text


def _step_dict(step: Any) -> dict[str, Any]:
    return {
        "step": step.index,
        "input": step.record.to_dict(),
        "task": step.task,
        "outputs": [output_to_dict(o) for o in step.outputs],
        "fate": step.fate.value,
        "reason": None if step.reason is None else step.reason.value,
        "until_ms": step.until_ms,
        "explain": step.explain,
    }
