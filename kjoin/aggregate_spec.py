"""Seed 000's joins as declarative data: the scenario fields of ``table-aggregate``,
``window-aggregate`` and the four WTable joins, validated with errors that name the field.

This is the part of the scenario format that :func:`kjoin.load_scenario` (and so ``kjoin
run``) routes these six ``join:`` names to::

    join: wtable-wtable            # table-aggregate | window-aggregate | wtable-wtable | wtable-table
                                   # | stream-wtable | table-wtable
    variant: left                  # wtable-wtable: inner | left | outer; the others: left
    window: {size_ms: 86400000, advance_ms: 86400000, grace_ms: 0}   # advance_ms and grace_ms optional
    right_window: {size_ms: ...}   # wtable-wtable with a shift: the right WTable's windows
    aggregate: count               # count | {sum: field}; right_aggregate: the right side's
    group_by: page                 # table-aggregate: the value's field to group by ("a.b" nests)
    window_shift_ms: -604800000    # wtable-wtable left: look up the window shifted by this
    self_join: true                # wtable-wtable: one WTable joined with itself (needs a shift)
    selector: timestamp            # stream-wtable / table-wtable: timestamp | {field: seen_at}
    retention_ms: 691200000        # window stores: at least size + grace (the default)
    segments: 3                    # window stores: the seed's n rolling segments (default: Kafka's)
    semantics: "3.3"               # the Kafka version whose rules apply (default: the latest)
    partitions: 1
    events:                        # in processing order; a WTable side's events are stream records
      - {side: left, key: home, value: view, ts: 1000}

:func:`run_spec` runs one; :func:`spec_jsonl` writes its trace as JSON lines, a windowed
output as ``key`` plus ``window: {start_ms, end_ms}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from .aggregates import (
    JOINS,
    AggregateTrace,
    _group_by,
    window_aggregate_factory,
    wtable_join_factory,
    output_to_dict,
    run_table_aggregate,
    run_window_aggregate,
    run_wtable_join,
)
from .joins.aggregate import Aggregation, TableAggregate, count, sum_of
from .joins.context import default_joiner
from .joins.window_aggregate import TimeWindows, Windowed
from .joins.wtable import select_by_field, select_by_timestamp, shift_by
from .records import render_value
from .scenario import ScenarioError, windowed
from .scenario.fields import KEY_TYPES
from .scenario.inputs import MAX_EVENTS, MAX_PARTITIONS, check_document, did_you_mean, unknown_field
from .semantics import Semantics, parse_semantics

__all__ = ["AGGREGATE_JOINS", "AggregateSpec", "run_spec", "spec_jsonl", "spec_table", "spec_title"]

AGGREGATE_JOINS = JOINS
_FIELDS = {
    "join",
    "variant",
    "window",
    "right_window",
    "aggregate",
    "right_aggregate",
    "group_by",
    "window_shift_ms",
    "self_join",
    "selector",
    "retention_ms",
    "segments",
    "semantics",
    "partitions",
    "events",
    "emit",
    "suppress",
}
_NEEDS = {
    "table-aggregate": {"group_by"},
    "window-aggregate": {"window"},
    "wtable-wtable": {"window"},
    "wtable-table": {"window"},
    "stream-wtable": {"window", "selector"},
    "table-wtable": {"window", "selector"},
}
_ALLOWED = {
    "table-aggregate": {"aggregate", "group_by"},
    "window-aggregate": {"window", "aggregate", "retention_ms", "segments", "emit", "suppress"},
    "wtable-wtable": {
        "window",
        "right_window",
        "aggregate",
        "right_aggregate",
        "window_shift_ms",
        "self_join",
        "retention_ms",
        "segments",
    },
    "wtable-table": {"window", "aggregate", "retention_ms", "segments"},
    "stream-wtable": {"window", "aggregate", "selector", "retention_ms", "segments"},
    "table-wtable": {"window", "aggregate", "selector", "retention_ms", "segments"},
}


@dataclass(frozen=True)
class AggregateSpec:
    """A validated seed-000 scenario: the join, its options and its events."""

    join: str
    variant: str
    data: Mapping[str, Any]
    source: str | None = None

    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> "AggregateSpec":
        def fail(message: str) -> ScenarioError:
            return ScenarioError(message, source)

        if not isinstance(data, Mapping):
            raise fail(f"a scenario is a mapping with join and events; got {type(data).__name__}")
        try:
            check_document(data)
            unknown_field("", data, _FIELDS)
            join = data.get("join")
            if not isinstance(join, str) or join not in JOINS:
                raise fail(f"join: {join!r} is not one of {', '.join(JOINS)}{did_you_mean(join, JOINS)}")
            extra = sorted(set(data) - _ALLOWED[join] - {"join", "variant", "semantics", "partitions", "events"})
            if extra:
                raise fail(
                    f"{extra[0]}: not a field of a {join} scenario{did_you_mean(extra[0], _ALLOWED[join])} (its "
                    f"fields: {', '.join(sorted(_ALLOWED[join]))})"
                )
            return cls._checked(data, join, source)
        except ScenarioError as error:
            if error.source is not None:
                raise
            raise fail(str(error)) from None

    @classmethod
    def _checked(cls, data: Mapping[str, Any], join: str, source: str | None) -> "AggregateSpec":
        def fail(message: str) -> ScenarioError:
            return ScenarioError(message, source)

        missing = sorted(_NEEDS[join] - set(data))
        if missing:
            raise fail(f"{missing[0]}: a {join} scenario needs it")
        variants = ("inner", "left", "outer") if join == "wtable-wtable" else ("left",)
        variant = data.get("variant", "left")
        if join in ("table-aggregate", "window-aggregate"):
            variants = ("left",)
        if not isinstance(variant, str) or variant not in variants:
            raise fail(
                f"variant: {variant!r} is not one of {', '.join(variants)} for {join}{did_you_mean(variant, variants)}"
            )
        if data.get("semantics") is not None and not isinstance(data["semantics"], str):
            raise fail(f'semantics: a Kafka version as text, e.g. "3.5" (quoted), not {data["semantics"]!r}')
        partitions = data.get("partitions", 1)
        if not isinstance(partitions, int) or isinstance(partitions, bool) or not 1 <= partitions <= MAX_PARTITIONS:
            raise fail(f"partitions: an integer from 1 to {MAX_PARTITIONS}, not {partitions!r}")
        events = data.get("events", [])
        if not isinstance(events, list):
            raise fail("events: a list of {side, key, value, ts} mappings")
        if len(events) > MAX_EVENTS:
            raise fail(f"events: {len(events)} events, more than the reference engine runs at once ({MAX_EVENTS})")
        for index, event in enumerate(events):
            _check_event(event, index, partitions)
        group_by = data.get("group_by")
        if "group_by" in data and (not isinstance(group_by, str) or not all(group_by.split("."))):
            raise fail(f"group_by: a field path of the value such as page or user.country, not {group_by!r}")
        for flag in ("self_join",):
            if flag in data and not isinstance(data[flag], bool):
                raise fail(f"{flag}: true or false, not {data[flag]!r}")
        spec = cls(join, variant, dict(data), source)
        semantics = spec.semantics()
        if join == "table-aggregate" and not semantics.table_aggregate_single_update:
            raise fail(
                f"semantics: kjoin models a table aggregate as Kafka 3.5+ does (KIP-904: an update that keeps its "
                f"group is one repartition record), not {semantics}; use 3.5 or later"
            )
        for name in ("window", "right_window"):
            if name in data:
                spec.windows(name)
        windowed.check_final_results(data, join, semantics)  # session/sliding windows, emit and suppress
        spec.aggregation("aggregate")
        spec.aggregation("right_aggregate")
        spec.selector()
        for name in ("window_shift_ms", "retention_ms", "segments", "partitions"):
            value = data.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise fail(f"{name}: an integer, not {value!r}")
        if data.get("self_join") and data.get("window_shift_ms") is None:
            raise fail(
                "self_join: a WTable joined with itself needs window_shift_ms (on the same window it meets itself)"
            )
        if data.get("window_shift_ms") is not None and variant != "left":
            raise fail(f"window_shift_ms: a window shifter exists only for the left join, not {variant}")
        return spec

    # -- the parts ----------------------------------------------------------------------
    def _fail(self, message: str) -> ScenarioError:
        return ScenarioError(message, self.source)

    def semantics(self) -> Semantics:
        """The Kafka version whose rules apply (``semantics:``, default the latest)."""
        text = self.data.get("semantics")
        try:
            return parse_semantics(None if text is None else str(text))
        except ValueError as error:
            raise self._fail(str(error)) from None

    def windows(self, name: str) -> TimeWindows:
        spec = self.data[name]
        if windowed.window_kind(spec) != "time":  # session and sliding windows (kjoin.scenario.windowed)
            try:
                return windowed.parse_windows(name, spec)  # type: ignore[return-value]
            except ScenarioError as error:
                raise self._fail(str(error)) from None
        if not isinstance(spec, Mapping):
            raise self._fail(f"{name}: a mapping {{size_ms, advance_ms, grace_ms}} (size_ms required), not {spec!r}")
        try:
            unknown_field(name, spec, {"size_ms", "advance_ms", "grace_ms"})
        except ScenarioError as error:
            raise self._fail(str(error)) from None
        if spec.get("size_ms") is None:
            raise self._fail(f"{name}.size_ms: the windows' size in milliseconds is required")
        for part, value in spec.items():
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise self._fail(f"{name}.{part}: integer milliseconds, not {value!r}")
        size, advance = spec["size_ms"], spec.get("advance_ms")
        if isinstance(size, int) and isinstance(advance, int) and 0 < advance <= size:
            if size // advance > MAX_WINDOWS_PER_RECORD:
                raise self._fail(
                    f"{name}: windows of {size} ms advancing by {advance} ms put every record in {size // advance} "
                    f"windows; kjoin computes at most {MAX_WINDOWS_PER_RECORD} per record (each is a store update and "
                    "an output): make advance_ms larger"
                )
        try:
            return TimeWindows(spec["size_ms"], spec.get("advance_ms"), spec.get("grace_ms") or 0)
        except ValueError as error:
            raise self._fail(f"{name}: {error}") from None

    def aggregation(self, name: str) -> Aggregation:
        spec = self.data.get(name, "count")
        if spec == "count":
            return count()
        if isinstance(spec, Mapping) and set(spec) == {"sum"} and (spec["sum"] is None or isinstance(spec["sum"], str)):
            return sum_of(spec["sum"])
        hint = (
            did_you_mean(next(iter(spec), None), ("sum",))
            if isinstance(spec, Mapping)
            else did_you_mean(spec, ("count",))
        )
        raise self._fail(
            f"{name}: count or {{sum: field}} (other aggregators through the Python API), not {spec!r}{hint}"
        )

    def selector(self) -> Any:
        spec = self.data.get("selector")
        if spec is None:
            return None
        windows = self.windows("window")
        if spec == "timestamp":
            return select_by_timestamp(windows)
        if isinstance(spec, Mapping) and set(spec) == {"field"} and isinstance(spec["field"], str):
            return select_by_field(windows, spec["field"])
        hint = (
            did_you_mean(next(iter(spec), None), ("field",))
            if isinstance(spec, Mapping)
            else did_you_mean(spec, ("timestamp",))
        )
        raise self._fail(f"selector: timestamp or {{field: name}}, not {spec!r}{hint}")

    def _stores(self) -> dict[str, Any]:
        """The window stores' options: ``retention_ms``, ``segments`` and the era's ``semantics``."""
        data = self.data
        return {
            "retention_ms": data.get("retention_ms"),
            "segments": data.get("segments"),
            "semantics": self.semantics(),
        }

    def _wtable_options(self) -> dict[str, Any]:
        """The keyword arguments of a WTable join (:func:`run_wtable_join`, :func:`wtable_join_factory`)."""
        data = self.data
        shift = data.get("window_shift_ms")
        return {
            "windows": self.windows("window"),
            "variant": self.variant,
            "aggregation": self.aggregation("aggregate"),
            "right_aggregation": self.aggregation("right_aggregate") if "right_aggregate" in data else None,
            "right_windows": self.windows("right_window") if "right_window" in data else None,
            "shifter": None if shift is None else shift_by(shift),
            "selector": self.selector(),
            "self_join": bool(data.get("self_join")),
            **self._stores(),
        }

    # -- run ----------------------------------------------------------------------------
    def run(self, joiner: Callable[[Any, Any], Any] = default_joiner) -> AggregateTrace:
        """Run the scenario; ``joiner(left, right)`` makes a WTable join's result values."""
        data = self.data
        events = data.get("events", [])
        partitions = data.get("partitions", 1)
        try:
            if self.join == "table-aggregate":
                return run_table_aggregate(events, data["group_by"], self.aggregation("aggregate"), partitions)
            if self.join == "window-aggregate" and windowed.needs_windowed_runner(data):
                return windowed.run_windowed_aggregate(
                    events,
                    self.windows("window"),
                    self.aggregation("aggregate"),
                    self.semantics(),
                    partitions,
                    data.get("emit", "updates"),
                    data.get("suppress"),
                    data.get("retention_ms"),
                    data.get("segments"),
                )
            if self.join == "window-aggregate":
                return run_window_aggregate(
                    events, self.windows("window"), self.aggregation("aggregate"), partitions, **self._stores()
                )
            return run_wtable_join(events, self.join, partitions=partitions, joiner=joiner, **self._wtable_options())
        except ValueError as error:
            raise self._fail(str(error)) from None

    def processors(self) -> tuple[str, Callable[..., Any]]:
        """How an engine that runs tasks apart (Spark) builds this scenario's processors.

        ``("task", (log, task) -> processor)`` for a windowed aggregate and the WTable joins: each
        task keeps its own stores and stream time, so tasks run independently. ``("scenario",
        (log) -> processor)`` for a table aggregate: one update can move a record between groups
        in two tasks (the repartition topic crosses tasks), so the whole topology runs as one.
        The processor's ``process(record, ctx)`` is the one the reference engine calls.
        """
        data = self.data
        partitions = data.get("partitions", 1)
        try:
            if self.join == "table-aggregate":
                mapper, name = _group_by(data["group_by"])
                aggregation = self.aggregation("aggregate")
                return "scenario", lambda log: TableAggregate(log, partitions, mapper, aggregation, name)
            if self.join == "window-aggregate" and windowed.needs_windowed_runner(data):
                return "task", windowed.windowed_factory(
                    self.windows("window"),
                    self.aggregation("aggregate"),
                    self.semantics(),
                    data.get("emit", "updates"),
                    data.get("suppress"),
                    data.get("retention_ms"),
                    data.get("segments"),
                )
            if self.join == "window-aggregate":
                return "task", window_aggregate_factory(
                    self.windows("window"), self.aggregation("aggregate"), **self._stores()
                )
            return "task", wtable_join_factory(self.join, **self._wtable_options())
        except ValueError as error:
            raise self._fail(str(error)) from None


MAX_WINDOWS_PER_RECORD = 10_000
"""The most hopping windows one record may fall in (``size_ms / advance_ms``): each is a store
update and an output per record, so more would run for hours without saying why."""
_EVENT_FIELDS = {"side", "key", "value", "ts", "partition"}


def _check_event(event: Any, index: int, partitions: int) -> None:
    """One event of a seed-000 scenario: side, key, value, ts and optionally partition."""
    where = f"events[{index}]"
    if not isinstance(event, Mapping):
        raise ScenarioError(
            f"{where}: expected a mapping like {{side: left, key: k, value: A, ts: 3}}, got {event!r:.60}"
        )
    unknown_field(where, event, _EVENT_FIELDS, "an event has side, key, value, ts and optionally")
    for required in ("key", "value", "ts"):
        if required not in event:
            raise ScenarioError(f"{where}: missing field {required!r} (write null for a null key or value)")
    side = event.get("side", "left")
    if side not in ("left", "right"):
        raise ScenarioError(f"{where}.side: expected left or right, got {side!r}")
    key = event["key"]
    if key is not None and not isinstance(key, KEY_TYPES):
        raise ScenarioError(f"{where}.key: expected a string, number or null, got {type(key).__name__} {key!r:.60}")
    ts = event["ts"]
    if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
        raise ScenarioError(f"{where}.ts: expected a non-negative integer (milliseconds), got {ts!r}")
    partition = event.get("partition")
    if partition is not None and (
        not isinstance(partition, int) or isinstance(partition, bool) or not 0 <= partition < partitions
    ):
        raise ScenarioError(
            f"{where}.partition: expected an integer from 0 to {partitions - 1} (partitions: {partitions}), got "
            f"{partition!r}"
        )


def run_spec(data: Any, source: str | None = None) -> AggregateTrace:
    """Validate and run a seed-000 scenario given as data."""
    return AggregateSpec.from_dict(data, source).run()


def spec_jsonl(trace: AggregateTrace) -> Iterator[str]:
    """One JSON object per step, as ``kjoin run --format jsonl`` writes; windowed outputs carry ``window``."""
    for step in trace.steps:
        yield json.dumps(_step_dict(step), separators=(", ", ": "), default=render_value)


def spec_title(trace: AggregateTrace) -> str:
    """One line naming the join and the options that change its outputs."""
    config = trace.scenario
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
    from .render import format_table

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
