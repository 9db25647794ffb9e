"""Scenarios: a join, its options and its input events, validated at the edge.

A scenario file (YAML or JSON) looks like this::

    join: stream-stream        # stream-stream | stream-table | table-table
    variant: left              # inner | left | outer
    semantics: "3.1"           # optional; default: the latest Kafka
    window: {before_ms: 15, after_ms: 15, grace_ms: 5}   # stream-stream only
    partitions: 1              # optional
    events:                    # in processing order; key and value may be null
      - {side: left, key: k, value: A, ts: 3}
      - {side: right, key: k, value: a, ts: 4}

Every error names the file, the field and the event, and says what is expected.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from .joins.stream_stream import JoinWindows
from .notation import parse_notation
from .ordering import merge_by_timestamp
from .partitioner import default_partition
from .records import Record, Side
from .semantics import Semantics, parse_semantics

__all__ = ["Scenario", "Event", "TableOptions", "ScenarioError", "load_scenario", "JOINS", "VARIANTS"]

JOINS = ("stream-stream", "stream-table", "table-table")
VARIANTS = {
    "stream-stream": ("inner", "left", "outer"),
    "stream-table": ("inner", "left"),
    "table-table": ("inner", "left", "outer"),
}
_TOP_LEVEL = {"join", "variant", "semantics", "window", "partitions", "left", "right", "events", "name", "description"}
_EVENT_FIELDS = {"side", "key", "value", "ts", "partition", "offset"}
_KEY_TYPES = (str, int, float, bool)


class ScenarioError(ValueError):
    """A scenario that cannot run: the message names where and what is expected."""

    def __init__(self, message: str, source: str | None = None) -> None:
        self.source = source
        super().__init__(f"{source}: {message}" if source else message)


@dataclass(frozen=True)
class TableOptions:
    """Options of one input table (``left:``/``right:`` in a scenario)."""

    versioned: bool = False
    history_retention_ms: int | None = None


@dataclass(frozen=True)
class Event:
    """One input event as the scenario lists it; partition and offset may be left to kjoin."""

    side: Side
    key: Any
    value: Any
    ts: int
    partition: int | None = None
    offset: int | None = None


@dataclass(frozen=True)
class Scenario:
    """A join to run and the events to run through it, in processing order."""

    join: str
    variant: str
    events: tuple[Event, ...]
    semantics: Semantics = field(default_factory=lambda: parse_semantics(None))
    window: JoinWindows | None = None
    partitions: int = 1
    left: TableOptions = TableOptions()
    right: TableOptions = TableOptions()
    name: str | None = None

    def __post_init__(self) -> None:
        _check_shape(self)

    # -- building -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> "Scenario":
        """Validate a parsed scenario document (see the module docstring)."""
        try:
            return _from_dict(data)
        except ScenarioError as error:
            raise ScenarioError(str(error), source) from None

    @classmethod
    def from_records(
        cls,
        join: str,
        variant: str,
        records: Iterable[Record | Mapping[str, Any]],
        *,
        semantics: str | Semantics | None = None,
        window: JoinWindows | Mapping[str, Any] | None = None,
        partitions: int = 1,
    ) -> "Scenario":
        """A scenario from records (or dicts with side, key, value, ts[, partition, offset]).

        A :class:`Record` carries its partition and offset; a dict may leave them out, and
        kjoin assigns them as Kafka would (the default partitioner, offsets counting up).
        """
        events = []
        for record in records:
            if isinstance(record, Record):
                record = record.to_dict()
            events.append(dict(record))
        return cls.from_dict(
            {
                "join": join,
                "variant": variant,
                "semantics": None if semantics is None else str(semantics),
                "window": _window_dict(window),
                "partitions": partitions,
                "events": events,
            }
        )

    @classmethod
    def from_notation(
        cls,
        join: str,
        variant: str,
        *,
        left: str = "",
        right: str = "",
        key: Any = "k",
        semantics: str | Semantics | None = None,
        window: JoinWindows | Mapping[str, Any] | None = None,
    ) -> "Scenario":
        """A one-key scenario from the wiki's notation, processed in timestamp order::

            Scenario.from_notation("stream-stream", "left", left="1:null, 3:A", right="2:null, 4:a",
                                   window={"before_ms": 15, "after_ms": 15, "grace_ms": 5})
        """
        topics = [
            [Record(side, key, value, ts) for ts, value in parse_notation(text, what=f"--{side}")]
            for side, text in ((Side.LEFT, left), (Side.RIGHT, right))
        ]
        # Only the order comes from the merge; partitions and offsets are assigned as Kafka would.
        events = [{"side": r.side.value, "key": r.key, "value": r.value, "ts": r.ts} for r in merge_by_timestamp(*topics)]
        return cls.from_records(join, variant, events, semantics=semantics, window=window)

    @classmethod
    def from_frame(cls, frame: Any, join: str, variant: str, **options: Any) -> "Scenario":
        """A scenario from a pandas DataFrame with columns side, key, value, ts[, partition, offset]."""
        missing = [column for column in ("side", "key", "value", "ts") if column not in frame.columns]
        if missing:
            raise ScenarioError(
                f"the DataFrame has no column {', '.join(repr(c) for c in missing)}; expected columns side, key, value, ts (and optionally partition, offset)"
            )
        columns = [c for c in ("side", "key", "value", "ts", "partition", "offset") if c in frame.columns]
        records = []
        for row in frame[columns].itertuples(index=False, name=None):
            record = {}
            for column, cell in zip(columns, row):
                record[column] = _from_pandas(cell)
            records.append(record)
        return cls.from_records(join, variant, records, **options)

    def with_variant(self, variant: str) -> "Scenario":
        return replace(self, variant=variant)

    def with_semantics(self, semantics: str | Semantics) -> "Scenario":
        return replace(self, semantics=parse_semantics(semantics))

    # -- running ----------------------------------------------------------------------
    def records(self) -> list[Record]:
        """The events as records, with Kafka's default partition and per-partition offsets filled in."""
        next_offset: dict[tuple[Side, int], int] = {}
        records = []
        for event in self.events:
            if event.partition is not None:
                partition = event.partition
            elif event.key is None or self.partitions == 1:
                partition = 0
            else:
                partition = default_partition(event.key, self.partitions)
            offset = event.offset if event.offset is not None else next_offset.get((event.side, partition), 0)
            next_offset[(event.side, partition)] = offset + 1
            records.append(Record(event.side, event.key, event.value, event.ts, partition, offset))
        return records

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"join": self.join, "variant": self.variant, "semantics": str(self.semantics)}
        if self.window is not None:
            data["window"] = _window_dict(self.window)
        data["partitions"] = self.partitions
        data["events"] = [
            {k: v for k, v in (("side", e.side.value), ("key", e.key), ("value", e.value), ("ts", e.ts), ("partition", e.partition), ("offset", e.offset)) if k in ("key", "value") or v is not None}
            for e in self.events
        ]
        return data


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a YAML or JSON scenario file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ScenarioError(f"cannot read the scenario: {error.strerror}", str(path)) from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise ScenarioError(f"not valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'}: {error}", str(path)) from None
    return Scenario.from_dict(data, source=str(path))


# -- validation ---------------------------------------------------------------------------
def _from_dict(data: Any) -> Scenario:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"a scenario is a mapping with join, variant and events; got {type(data).__name__}")
    unknown = sorted(set(data) - _TOP_LEVEL)
    if unknown:
        raise ScenarioError(f"unknown field {unknown[0]!r}; the fields are {', '.join(sorted(_TOP_LEVEL))}")
    join = _choice(data, "join", JOINS)
    variant = _choice(data, "variant", VARIANTS[join])
    try:
        semantics = parse_semantics(data.get("semantics"))
    except ValueError as error:
        raise ScenarioError(f"semantics: {error}") from None
    partitions = data.get("partitions", 1)
    if not _is_int(partitions) or partitions < 1:
        raise ScenarioError(f"partitions: expected a positive integer, got {partitions!r}")
    window = _window(data.get("window"), join)
    tables = {side: _table_options(data.get(side), side) for side in ("left", "right")}
    events = data.get("events")
    if not isinstance(events, list):
        raise ScenarioError(f"events: expected a list of events like {{side: left, key: k, value: A, ts: 3}}, got {type(events).__name__}")
    return Scenario(
        join=join,
        variant=variant,
        semantics=semantics,
        window=window,
        partitions=partitions,
        left=tables["left"],
        right=tables["right"],
        events=tuple(_event(event, index, partitions) for index, event in enumerate(events)),
        name=data.get("name"),
    )


def _check_shape(scenario: Scenario) -> None:
    """The cross-field rules, checked however the scenario was built."""
    if scenario.join == "stream-stream" and scenario.window is None:
        raise ScenarioError("window: a stream-stream join needs {before_ms, after_ms, grace_ms}")
    if scenario.join != "stream-stream" and scenario.window is not None:
        raise ScenarioError(f"window: a {scenario.join} join has no window; remove the field")
    if scenario.join == "stream-table" and scenario.variant == "inner" and not scenario.semantics.kip77:
        raise ScenarioError(f"variant: the KStream-KTable inner join exists only since 0.10.2 (KIP-77); semantics {scenario.semantics} has only the left join")
    for side in ("left", "right"):
        options: TableOptions = getattr(scenario, side)
        if options.versioned:
            raise ScenarioError(f"{side}.versioned: joins over versioned tables are not implemented yet; use versioned: false")


def _choice(data: Mapping[str, Any], name: str, allowed: Sequence[str]) -> str:
    value = data.get(name)
    if value not in allowed:
        raise ScenarioError(f"{name}: expected one of {' | '.join(allowed)}, got {value!r}")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _window(data: Any, join: str) -> JoinWindows | None:
    if data is None:
        return None
    if isinstance(data, JoinWindows):
        return data
    if not isinstance(data, Mapping):
        raise ScenarioError(f"window: expected {{before_ms, after_ms, grace_ms}}, got {data!r}")
    allowed = {"before_ms", "after_ms", "grace_ms", "spurious_result_fix"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ScenarioError(f"window.{unknown[0]}: unknown field; the fields are before_ms, after_ms, grace_ms, spurious_result_fix")
    values = {}
    for name in ("before_ms", "after_ms"):
        value = data.get(name)
        if not _is_int(value) or value < 0:
            raise ScenarioError(f"window.{name}: expected a non-negative integer (milliseconds), got {value!r}")
        values[name] = value
    grace = data.get("grace_ms")
    if grace is not None and (not _is_int(grace) or grace < 0):
        raise ScenarioError(f"window.grace_ms: expected a non-negative integer, or null for the deprecated JoinWindows.of API; got {grace!r}")
    fix = data.get("spurious_result_fix")
    if fix is not None and not isinstance(fix, bool):
        raise ScenarioError(f"window.spurious_result_fix: expected true or false, got {fix!r}")
    return JoinWindows(values["before_ms"], values["after_ms"], grace, fix)


def _window_dict(window: JoinWindows | Mapping[str, Any] | None) -> dict[str, Any] | None:
    if window is None or isinstance(window, Mapping):
        return None if window is None else dict(window)
    data = {"before_ms": window.before_ms, "after_ms": window.after_ms, "grace_ms": window.grace_ms}
    if window.spurious_result_fix is not None:
        data["spurious_result_fix"] = window.spurious_result_fix
    return data


def _table_options(data: Any, side: str) -> TableOptions:
    if data is None:
        return TableOptions()
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{side}: expected table options like {{versioned: false}}, got {data!r}")
    unknown = sorted(set(data) - {"versioned", "history_retention_ms"})
    if unknown:
        raise ScenarioError(f"{side}.{unknown[0]}: unknown field; the fields are versioned, history_retention_ms")
    versioned = data.get("versioned", False)
    if not isinstance(versioned, bool):
        raise ScenarioError(f"{side}.versioned: expected true or false, got {versioned!r}")
    retention = data.get("history_retention_ms")
    if retention is not None and (not _is_int(retention) or retention < 0):
        raise ScenarioError(f"{side}.history_retention_ms: expected a non-negative integer, got {retention!r}")
    return TableOptions(versioned, retention)


def _event(data: Any, index: int, partitions: int) -> Event:
    where = f"events[{index}]"
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: expected a mapping like {{side: left, key: k, value: A, ts: 3}}, got {data!r}")
    unknown = sorted(set(data) - _EVENT_FIELDS)
    if unknown:
        raise ScenarioError(f"{where}.{unknown[0]}: unknown field; an event has side, key, value, ts and optionally partition, offset")
    for required in ("side", "key", "value", "ts"):
        if required not in data:
            hint = " (write null for a null key or value)" if required in ("key", "value") else ""
            raise ScenarioError(f"{where}: missing field {required!r}{hint}")
    side = data["side"]
    if side not in ("left", "right"):
        raise ScenarioError(f"{where}.side: expected left or right, got {side!r}")
    key = data["key"]
    if key is not None and not isinstance(key, _KEY_TYPES):
        raise ScenarioError(f"{where}.key: expected a string, number or null, got {type(key).__name__} {key!r}")
    ts = data["ts"]
    if not _is_int(ts) or ts < 0:
        raise ScenarioError(f"{where}.ts: expected a non-negative integer (milliseconds), got {ts!r}")
    partition = data.get("partition")
    if partition is not None and (not _is_int(partition) or not 0 <= partition < partitions):
        raise ScenarioError(f"{where}.partition: expected an integer from 0 to {partitions - 1} (partitions: {partitions}), got {partition!r}")
    offset = data.get("offset")
    if offset is not None and (not _is_int(offset) or offset < 0):
        raise ScenarioError(f"{where}.offset: expected a non-negative integer, got {offset!r}")
    return Event(Side(side), key, data["value"], ts, partition, offset)


def _from_pandas(cell: Any) -> Any:
    """A DataFrame cell as a plain Python value: NaN/NA/None become None, numpy scalars unwrap."""
    try:
        import pandas as pd

        if cell is None or (not isinstance(cell, (list, dict)) and pd.isna(cell)):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(cell, "item") and not isinstance(cell, (list, dict, str)):
        return cell.item()
    return cell
