"""The windowed-table design's joins as declarative data: the scenario fields of ``table-aggregate``,
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

Every event of a two-input join names its ``side``; an aggregate has one input (its events need no side, and
either side is a record of it), a self-join one too, the left (``side: right`` is refused).
``window_shift_ms`` is a multiple of the right WTable's advance. ``group_by``, ``{sum: field}`` and a ``{field:
...}`` selector read a field of mapping values: a null value or a mapping without the field gives a null group
(skipped), adds 0 (as the Kafka harness's aggregator does), or selects no window; any other value is an error
naming the event. ``join: hopping-join`` is refused with a pointer to :func:`kjoin.engine.aggregates.run_hopping_join`.

:func:`kjoin.run` runs one (:mod:`kjoin.engine.aggregates`); :func:`kjoin.render.spec_jsonl` writes its trace
as JSON lines, a windowed output as ``key`` plus ``window: {start_ms, end_ms}``.

:class:`AggregateSpec` is the validated document; :class:`AggregateConfig` is what a run was asked
to do (the trace's ``scenario``), built from a spec or from the Python runners' arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..joins.aggregate import Aggregation, count, sum_of
from ..joins.window_aggregate import TimeWindows
from ..joins.wtable import WTABLE_JOINS, Selector, select_by_field, select_by_timestamp, shift_by
from ..partitioner import default_partition
from ..records import Record, Side, kafka_keys
from ..semantics import Semantics, parse_semantics
from .fields import JOINS as PRIMARY_JOINS
from .fields import KEY_TYPES, ScenarioError
from . import windowed
from .inputs import MAX_EVENTS, MAX_PARTITIONS, check_document, did_you_mean, unknown_field

__all__ = [
    "AGGREGATE_FIELDS",
    "AGGREGATE_JOINS",
    "AggregateConfig",
    "AggregateSpec",
    "MAX_WINDOWS_PER_RECORD",
    "event_records",
]

AGGREGATE_JOINS = ("table-aggregate", "window-aggregate", *WTABLE_JOINS)
"""The windowed-table design's joins: the two aggregates and the four WTable joins."""
JOINS = AGGREGATE_JOINS
HOPPING_JOIN = "hopping-join"
HOPPING_JOIN_ELSEWHERE = (
    "join: hopping-join (the windowed-table design's stream-stream join over hopping windows, one output per "
    "matching pair) is a "
    "teaching contrast that runs from Python only: kjoin.engine.aggregates.run_hopping_join(events, "
    'TimeWindows(size_ms, advance_ms), per="pair") (per="window": one output per shared window; '
    "hopping_join_counts(events, windows) gives both counts). No Kafka Streams DSL builds it, so a scenario file "
    "cannot name it; for Kafka's own windowed join use join: stream-stream with a window"
)
"""Why ``join: hopping-join`` is refused in a scenario, and where it runs instead."""
AGGREGATE_FIELDS = {
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
    """A validated windowed-table scenario: the join, its options and its events."""

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
            join = data.get("join")
            if join == HOPPING_JOIN:
                raise fail(HOPPING_JOIN_ELSEWHERE)
            if join in PRIMARY_JOINS:
                raise fail(
                    f"join: {join!r} is a join of kjoin.Scenario (Scenario.from_dict), not one of the windowed-table "
                    "design's "
                    f"({', '.join(JOINS)}); kjoin.load_scenario and kjoin run read either"
                )
            unknown_field("", data, AGGREGATE_FIELDS)
            if not isinstance(join, str) or join not in JOINS:
                raise fail(
                    f"join: {join!r} is not one of {', '.join(JOINS)}{did_you_mean(join, (*JOINS, *PRIMARY_JOINS))} "
                    f"(the windowed-table design's joins; kjoin.Scenario's are {', '.join(PRIMARY_JOINS)})"
                )
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
        self_join = data.get("self_join") is True
        for index, event in enumerate(events):
            _check_event(event, index, partitions, join, self_join)
        group_by = data.get("group_by")
        if "group_by" in data and (not isinstance(group_by, str) or not all(group_by.split("."))):
            raise fail(f"group_by: a field path of the value such as page or user.country, not {group_by!r}")
        for flag in ("self_join",):
            if flag in data and not isinstance(data[flag], bool):
                raise fail(f"{flag}: true or false, not {data[flag]!r}")
        spec = cls(join, variant, dict(data), source)
        semantics = spec.semantics()
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
        spec._check_shift()
        return spec

    def _check_shift(self) -> None:
        """A shifted window must start where a window of the right WTable starts, or every lookup finds nothing."""
        shift = self.data.get("window_shift_ms")
        if shift is None:
            return
        right = self.windows("right_window" if "right_window" in self.data else "window")
        if shift % right.advance != 0:
            name = "right_window" if "right_window" in self.data else "window"
            lower = shift - shift % right.advance
            raise self._fail(
                f"window_shift_ms: {shift} is not a multiple of the {name}'s advance ({right.advance} ms), so a "
                f"shifted window never starts where a window of the right WTable does and every lookup finds "
                f"nothing; use a multiple of {right.advance}, such as {lower} or {lower + right.advance}"
            )

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

    @property
    def events(self) -> list[Any]:
        """The scenario's events, in processing order."""
        return list(self.data.get("events", []))

    @property
    def partitions(self) -> int:
        partitions: int = self.data.get("partitions", 1)
        return partitions

    def records(self) -> list[Record]:
        """The events as records, each on the partition the reference engine gives it."""
        return event_records(self.events, self.partitions)

    def selector(self) -> Selector | None:
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

    def store_options(self) -> dict[str, Any]:
        """The window stores' options: ``retention_ms``, ``segments`` and the era's ``semantics``."""
        data = self.data
        return {
            "retention_ms": data.get("retention_ms"),
            "segments": data.get("segments"),
            "semantics": self.semantics(),
        }

    def wtable_options(self) -> dict[str, Any]:
        """The keyword arguments of a WTable join (:func:`kjoin.engine.aggregates.run_wtable_join`,
        :func:`kjoin.joins.wtable.wtable_join_factory`)."""
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
            **self.store_options(),
        }


MAX_WINDOWS_PER_RECORD = 10_000
"""The most hopping windows one record may fall in (``size_ms / advance_ms``): each is a store
update and an output per record, so more would run for hours without saying why."""
_EVENT_FIELDS = {"side", "key", "value", "ts", "partition"}


def _check_event(event: Any, index: int, partitions: int, join: str, self_join: bool) -> None:
    """One event of a windowed-table scenario: side, key, value, ts and optionally partition. ``side`` is required in a
    join of two inputs; an aggregate has one input, so its events need no side (any side is a record of that
    input); a self-join's one input is the left, so ``side: right`` is refused there."""
    one_input = join in ("table-aggregate", "window-aggregate") or self_join
    where = f"events[{index}]"
    if not isinstance(event, Mapping):
        raise ScenarioError(
            f"{where}: expected a mapping like {{side: left, key: k, value: A, ts: 3}}, got {event!r:.60}"
        )
    unknown_field(where, event, _EVENT_FIELDS, "an event has side, key, value, ts and optionally")
    for required in ("key", "value", "ts"):
        if required not in event:
            raise ScenarioError(f"{where}: missing field {required!r} (write null for a null key or value)")
    if "side" not in event and not one_input:
        raise ScenarioError(
            f"{where}: missing field 'side': a {join} join has two inputs; write side: left or side: right"
        )
    side = event.get("side", "left")
    if side not in ("left", "right"):
        raise ScenarioError(f"{where}.side: expected left or right, got {side!r}")
    if side == "right" and self_join:
        raise ScenarioError(
            f"{where}.side: a WTable joined with itself (self_join: true) has one input, the left: every event is "
            "one of its records; write side: left or leave side out"
        )
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


@dataclass(frozen=True)
class AggregateConfig:
    """What a windowed-table run was asked to do (the trace's ``scenario``): the join name, variant and
    the options that change its outputs (``windows``, ``layout``, ``shifter``, ``selector``, ...)."""

    join: str
    variant: str = "left"
    partitions: int = 1
    options: Mapping[str, Any] = field(default_factory=dict)


def event_records(events: Iterable[Mapping[str, Any]], partitions: int, default_side: Side = Side.LEFT) -> list[Record]:
    """Windowed-table events (``{side, key, value, ts[, partition]}``, ``side`` optional where there is one
    input) as records, each on its ``partition`` or the one Kafka's default partitioner gives its key."""
    events = list(events)
    key_of = kafka_keys(event.get("key") for event in events if isinstance(event, Mapping))
    records = []
    for index, event in enumerate(events):
        missing = [name for name in ("key", "ts") if name not in event]
        if missing:
            raise ValueError(f"events[{index}] has no {', '.join(missing)}: every event needs key, value and ts")
        ts = event["ts"]
        if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
            raise ValueError(f"events[{index}].ts is {ts!r}: timestamps are integer milliseconds >= 0")
        side = Side(event.get("side", default_side.value))
        key = key_of(event["key"])
        partition = event.get("partition")
        if partition is None:
            partition = default_partition(key, partitions) if (key is not None and partitions > 1) else 0
        if not 0 <= partition < partitions:
            raise ValueError(f"events[{index}].partition is {partition}, outside 0..{partitions - 1}")
        records.append(Record(side, key, event.get("value"), ts, partition, index))
    return records
