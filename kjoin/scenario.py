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

Foreign-key joins and versioned tables add these fields::

    join: fk                   # a KTable-KTable foreign-key join (inner | left)
    foreign_key: fk            # a field path into the left value ({v: A1, fk: Y}); "a.b" nests
    delivery: immediate        # immediate (default) | explicit | {mode: random, seed: 7, wait_for_row: false}
    hash_check: true           # false: a teaching switch, stale responses are joined
    left: {versioned: true, history_retention_ms: 100}    # also right:
    grace_ms: 5                # stream-table only, right table versioned (KIP-923)
    versioned_mode: final      # final | attempt1 | attempt2 (KIP-914's rejected designs)
    events:
      - {deliver: next}        # explicit delivery: next | all | subscription | response | m3

Topologies around a join (KAFKA_SEMANTICS.md §1.9, §1.10, §3.4, §3.6)::

    self_join: true            # stream-stream: s.join(s); every event is a left record
    optimize: true             # with self_join, inner only: the single-store rewrite (3.4+)
    then:                      # chained joins: a.join(b).join(b); each joins the result so far
      - {variant: left}        #   with the right input again (stream-stream: window: optional)
    materialized: true         # table-table: the result is materialized (Materialized.as)
    send_old_values: true      # table-table: outputs carry Change's old value
    caching: true              # table-table: record caches (true: every store; or a list of left, right, result)
    commit_every: 1            # with caching: each task commits after every N of its records

Every error names the file, the field and the event, and says what is expected.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from .joins.fk_protocol import extract_foreign_key  # noqa: F401  (re-exported: the extractor a scenario names)
from .joins.stream_stream import JoinWindows
from .notation import parse_notation
from .ordering import merge_by_timestamp
from .partitioner import default_partition
from .records import Record, Side
from .semantics import Semantics, parse_semantics

__all__ = ["Scenario", "ChainedJoin", "Event", "Deliver", "Delivery", "TableOptions", "ScenarioError", "load_scenario", "JOINS", "VARIANTS", "VERSIONED_MODES"]

JOINS = ("stream-stream", "stream-table", "table-table", "fk")
VARIANTS = {
    "stream-stream": ("inner", "left", "outer"),
    "stream-table": ("inner", "left"),
    "table-table": ("inner", "left", "outer"),
    "fk": ("inner", "left"),
}
DELIVERY_MODES = ("immediate", "explicit", "random")
DELIVER_SELECTORS = ("next", "all", "subscription", "response")
VERSIONED_MODES = ("final", "attempt1", "attempt2")
"""How a table-table join over versioned tables handles an out-of-order record (seed 003):
``final`` emits nothing (KIP-914 as shipped); ``attempt1`` joins it with one timestamped
lookup of the other side; ``attempt2`` scans the other side's history and emits every older
result the record changes."""
_TOP_LEVEL = {
    "join", "variant", "semantics", "window", "partitions", "left", "right", "events", "name", "description",
    "foreign_key", "grace_ms", "delivery", "hash_check", "versioned_mode",
    "self_join", "optimize", "then", "materialized", "send_old_values", "caching", "commit_every",
}
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
class ChainedJoin:
    """One more join in a chain (``then:``): the result so far joined with the right input
    again, with this variant (and, for stream-stream joins, this window)."""

    variant: str
    window: JoinWindows | None = None


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
class Deliver:
    """A foreign-key scenario's instruction to deliver messages in flight (explicit delivery).

    ``which`` is ``next`` (the oldest deliverable message), ``all`` (everything, including what
    the deliveries send), ``subscription`` / ``response`` (the oldest deliverable message of
    that topic) or a message id such as ``m3``.
    """

    which: str


@dataclass(frozen=True)
class Delivery:
    """When a foreign-key join's messages between tasks are delivered.

    * ``immediate`` (default): after each input record, every message is delivered in the
      order sent, as Kafka's TopologyTestDriver processes each input to completion. (The
      driver picks among its internal partitions by head timestamp; the two orders agree
      whenever the messages' timestamps do not decrease, as in every seed table.)
    * ``explicit``: messages wait in flight until a ``{deliver: ...}`` event releases them.
    * ``random``: after each input record a seeded random number of messages is delivered,
      picking at random among the heads of the (topic, partition) queues, so each partition
      stays in order; everything left is delivered the same way after the last event.
      With ``wait_for_row``, a left update is processed only once every message about its
      row (its primary key) has been delivered: the condition under which the join is sure
      to converge to the SQL join (without it, a row updated again while its answer is
      still travelling can keep a stale result, as Kafka can).
    """

    mode: str = "immediate"
    seed: int = 0
    wait_for_row: bool = False


@dataclass(frozen=True)
class Scenario:
    """A join to run and the events to run through it, in processing order."""

    join: str
    variant: str
    events: tuple[Event | Deliver, ...]
    semantics: Semantics = field(default_factory=lambda: parse_semantics(None))
    window: JoinWindows | None = None
    partitions: int = 1
    left: TableOptions = TableOptions()
    right: TableOptions = TableOptions()
    name: str | None = None
    foreign_key: str | None = None
    grace_ms: int | None = None
    delivery: Delivery = Delivery()
    hash_check: bool = True
    versioned_mode: str = "final"
    self_join: bool = False
    optimize: bool = False
    then: tuple[ChainedJoin, ...] = ()
    materialized: bool = False
    send_old_values: bool = False
    caching: tuple[str, ...] = ()
    """The caching stores: ``left``/``right`` (source tables), ``result`` (a materialized result)."""
    commit_every: int = 1

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
        return [item for item in self.script() if isinstance(item, Record)]

    def script(self) -> list[Record | Deliver]:
        """The events in order: records (as :meth:`records`) and ``deliver`` instructions."""
        next_offset: dict[tuple[Side, int], int] = {}
        records: list[Record | Deliver] = []
        for event in self.events:
            if isinstance(event, Deliver):
                records.append(event)
                continue
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
        for side in ("left", "right"):
            options: TableOptions = getattr(self, side)
            if options != TableOptions():
                data[side] = {"versioned": options.versioned, "history_retention_ms": options.history_retention_ms}
        if self.foreign_key is not None:
            data["foreign_key"] = self.foreign_key
        if self.grace_ms is not None:
            data["grace_ms"] = self.grace_ms
        if self.delivery != Delivery():
            data["delivery"] = self.delivery.mode if self.delivery.mode != "random" else {"mode": "random", "seed": self.delivery.seed, "wait_for_row": self.delivery.wait_for_row}
        if not self.hash_check:
            data["hash_check"] = False
        if self.versioned_mode != "final":
            data["versioned_mode"] = self.versioned_mode
        for flag in ("self_join", "optimize", "materialized", "send_old_values"):
            if getattr(self, flag):
                data[flag] = True
        if self.caching:
            data["caching"] = list(self.caching)
        if self.then:
            data["then"] = [{"variant": c.variant, **({"window": _window_dict(c.window)} if c.window is not None else {})} for c in self.then]
        if self.commit_every != 1:
            data["commit_every"] = self.commit_every
        data["events"] = [
            {"deliver": e.which} if isinstance(e, Deliver) else
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
    foreign_key = data.get("foreign_key")
    if foreign_key is not None and (not isinstance(foreign_key, str) or not all(foreign_key.split("."))):
        raise ScenarioError(f"foreign_key: expected a field path into the left value such as fk or customer.id, got {foreign_key!r}")
    grace_ms = data.get("grace_ms")
    if grace_ms is not None and (not _is_int(grace_ms) or grace_ms < 0):
        raise ScenarioError(f"grace_ms: expected a non-negative integer (milliseconds), got {grace_ms!r}")
    hash_check = data.get("hash_check", True)
    if not isinstance(hash_check, bool):
        raise ScenarioError(f"hash_check: expected true or false, got {hash_check!r}")
    versioned_mode = data.get("versioned_mode", "final")
    if versioned_mode not in VERSIONED_MODES:
        raise ScenarioError(f"versioned_mode: expected one of {' | '.join(VERSIONED_MODES)}, got {versioned_mode!r}")
    flags: dict[str, Any] = {"caching": _caching(data.get("caching", False), bool(data.get("materialized", False)), join)}
    for flag in ("self_join", "optimize", "materialized", "send_old_values"):
        flags[flag] = data.get(flag, False)
        if not isinstance(flags[flag], bool):
            raise ScenarioError(f"{flag}: expected true or false, got {flags[flag]!r}")
    commit_every = data.get("commit_every", 1)
    if not _is_int(commit_every) or commit_every < 1:
        raise ScenarioError(f"commit_every: expected a positive integer (input records per commit), got {commit_every!r}")
    return Scenario(
        join=join,
        variant=variant,
        semantics=semantics,
        window=window,
        partitions=partitions,
        left=tables["left"],
        right=tables["right"],
        events=tuple(_deliver(event, index) if isinstance(event, Mapping) and "deliver" in event else _event(event, index, partitions) for index, event in enumerate(events)),
        name=data.get("name"),
        foreign_key=foreign_key,
        grace_ms=grace_ms,
        delivery=_delivery(data.get("delivery")),
        hash_check=hash_check,
        versioned_mode=versioned_mode,
        then=_chain(data.get("then"), join),
        commit_every=commit_every,
        **flags,
    )


CACHING_STORES = ("left", "right", "result")


def _caching(data: Any, materialized: bool, join: str) -> tuple[str, ...]:
    if data is False:
        return ()
    if data is True and join == "fk":
        return ("result",) if materialized else ()
    if data is True:
        return CACHING_STORES if materialized else CACHING_STORES[:2]
    if not isinstance(data, list) or any(store not in CACHING_STORES for store in data):
        raise ScenarioError(f"caching: expected true, false or a list of {', '.join(CACHING_STORES)}; got {data!r}")
    if "result" in data and not materialized:
        raise ScenarioError("caching: only a materialized result has a store to cache; add materialized: true or remove result")
    return tuple(store for store in CACHING_STORES if store in data)


def _chain(data: Any, join: str) -> tuple[ChainedJoin, ...]:
    if data is None:
        return ()
    if not isinstance(data, list) or not data:
        raise ScenarioError(f"then: expected a list of further joins like [{{variant: inner}}], got {data!r}")
    chain = []
    for index, item in enumerate(data):
        where = f"then[{index}]"
        if not isinstance(item, Mapping):
            raise ScenarioError(f"{where}: expected a mapping like {{variant: inner}}, got {item!r}")
        unknown = sorted(set(item) - {"variant", "window"})
        if unknown:
            raise ScenarioError(f"{where}.{unknown[0]}: unknown field; a chained join has variant and (stream-stream) window")
        variant = item.get("variant")
        allowed = VARIANTS.get(join, ())
        if variant not in allowed:
            raise ScenarioError(f"{where}.variant: expected one of {' | '.join(allowed) or 'nothing'}, got {variant!r}")
        try:
            window = _window(item.get("window"), join)
        except ScenarioError as error:
            raise ScenarioError(f"{where}.{error}") from None
        chain.append(ChainedJoin(variant, window))
    return tuple(chain)


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
        if options.versioned and scenario.join == "stream-stream":
            raise ScenarioError(f"{side}.versioned: a stream-stream join has no tables; remove the field")
        if options.versioned and scenario.join == "stream-table" and side == "left":
            raise ScenarioError("left.versioned: the left input of a stream-table join is the stream; only right: can be versioned")
        if options.versioned and options.history_retention_ms is None:
            raise ScenarioError(f"{side}.history_retention_ms: a versioned table needs a history retention (milliseconds)")
        if not options.versioned and options.history_retention_ms is not None:
            raise ScenarioError(f"{side}.history_retention_ms: only a versioned table has a history retention; add versioned: true or remove the field")
    _check_extensions(scenario)
    _check_topology(scenario)


def _check_topology(scenario: Scenario) -> None:
    """The rules of self-joins, chains, materialization and caching."""
    if scenario.self_join:
        if scenario.join != "stream-stream":
            raise ScenarioError(f"self_join: only a stream-stream join can join a stream with itself; a {scenario.join} join cannot")
        for index, event in enumerate(scenario.events):
            if isinstance(event, Event) and event.side is not Side.LEFT:
                raise ScenarioError(f"events[{index}].side: a self-join has one input stream; write every event as side: left")
        if scenario.then:
            raise ScenarioError("then: kjoin chains joins of two inputs; a self-join cannot be chained here")
    if scenario.optimize:
        if not scenario.self_join:
            raise ScenarioError("optimize: the single-store optimization applies to self-joins only; add self_join: true")
        if scenario.variant != "inner":
            raise ScenarioError(f"optimize: Kafka rewrites only inner self-joins to one store; variant {scenario.variant} keeps two")
        if not scenario.semantics.at_least(3, 4):
            raise ScenarioError(f"optimize: the single-store self-join exists since Kafka 3.4 (KIP-862); semantics {scenario.semantics} has none")
    if scenario.then:
        if scenario.join not in ("stream-stream", "table-table"):
            raise ScenarioError(f"then: kjoin chains stream-stream and table-table joins; a {scenario.join} join cannot be chained")
        if scenario.left.versioned or scenario.right.versioned:
            raise ScenarioError("then: kjoin chains joins over unversioned tables only; remove versioned: true or the chain")
        if scenario.join == "table-table" and any(c.window is not None for c in scenario.then):
            raise ScenarioError("then[].window: a table-table join has no window; remove the field")
    table_options = [f for f in ("materialized", "send_old_values", "caching") if getattr(scenario, f)]
    if table_options and scenario.join not in ("table-table", "fk"):
        raise ScenarioError(f"{table_options[0]}: only a table-table join's result is a table with these options; a {scenario.join} join has none")
    if scenario.join == "fk" and (scenario.send_old_values or (scenario.caching and scenario.caching != ("result",))):
        raise ScenarioError("caching, send_old_values: kjoin models a fk join's result store (materialized: true, caching: [result]); its source caches and old values are not modelled")
    if scenario.commit_every != 1 and not scenario.caching:
        raise ScenarioError("commit_every: commits matter only to record caches; add caching: true or remove the field")


def _check_extensions(scenario: Scenario) -> None:
    """The rules of the foreign-key, versioned and grace fields."""
    fk = scenario.join == "fk"
    if fk and scenario.foreign_key is None:
        raise ScenarioError("foreign_key: a fk join needs the field path of the foreign key in the left value, e.g. foreign_key: fk")
    if not fk and scenario.foreign_key is not None:
        raise ScenarioError(f"foreign_key: only a fk join has a foreign key; a {scenario.join} join joins on the record key")
    if fk and not scenario.semantics.at_least(2, 4):
        raise ScenarioError(f"join: foreign-key joins exist since Kafka 2.4 (KIP-213); semantics {scenario.semantics} has none")
    if not fk and (scenario.delivery != Delivery() or not scenario.hash_check):
        raise ScenarioError("delivery, hash_check: only a fk join sends messages between tasks; remove these fields")
    explicit = fk and scenario.delivery.mode == "explicit"
    for index, event in enumerate(scenario.events):
        if isinstance(event, Deliver):
            if not explicit:
                raise ScenarioError(f"events[{index}].deliver: deliver events need join: fk and delivery: explicit")
        elif fk and event.side is Side.LEFT and event.value is not None:
            _extract_checked(scenario.foreign_key, event.value, f"events[{index}].value")
        elif fk and event.side is Side.RIGHT and event.partition is not None and event.key is not None and scenario.partitions > 1:
            expected = default_partition(event.key, scenario.partitions)
            if event.partition != expected:
                raise ScenarioError(
                    f"events[{index}].partition: a fk join's right record must sit on its key's partition ({expected}), where the subscriptions for that foreign key go"
                )
    if (scenario.left.versioned or scenario.right.versioned) and not scenario.semantics.at_least(3, 5):
        raise ScenarioError(f"versioned: joins over versioned tables exist since Kafka 3.5 (KIP-914); semantics {scenario.semantics} has none")
    if scenario.grace_ms is not None and not scenario.semantics.at_least(3, 6):
        raise ScenarioError(f"grace_ms: the stream-table grace period exists since Kafka 3.6 (KIP-923); semantics {scenario.semantics} has none")
    if scenario.grace_ms is not None:
        if scenario.join != "stream-table":
            raise ScenarioError(f"grace_ms: only a stream-table join has a grace period; a {scenario.join} join does not")
        if not scenario.right.versioned:
            raise ScenarioError("grace_ms: KTable must be versioned to use a grace period in a stream table join (right: {versioned: true, history_retention_ms: ...})")
        if (scenario.right.history_retention_ms or 0) < scenario.grace_ms:
            raise ScenarioError("grace_ms: History retention must be at least grace period (right.history_retention_ms < grace_ms)")
    if scenario.versioned_mode != "final":
        if scenario.join != "table-table" or not (scenario.left.versioned and scenario.right.versioned):
            raise ScenarioError(f"versioned_mode: {scenario.versioned_mode} is a table-table join over two versioned tables (seed 003); use final or make both tables versioned")
        if scenario.variant != "inner":
            raise ScenarioError(f"versioned_mode: seed 003's {scenario.versioned_mode} is described for inner joins only; use variant: inner")


def _extract_checked(path: str | None, value: Any, where: str) -> None:
    assert path is not None
    node = value
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise ScenarioError(f"{where}: the foreign key {path!r} is not a field of {node!r}; left values of a fk join look like {{v: A1, fk: Y}} (write fk: null for no foreign key)")
        node = node[part]
        if node is None:
            return
    if not isinstance(node, _KEY_TYPES):
        raise ScenarioError(f"{where}: the foreign key {path!r} is {node!r}; expected a string, number, or null")


def _delivery(data: Any) -> Delivery:
    if data is None:
        return Delivery()
    if isinstance(data, str):
        data = {"mode": data}
    if not isinstance(data, Mapping):
        raise ScenarioError(f"delivery: expected immediate | explicit | {{mode: random, seed: 7}}, got {data!r}")
    unknown = sorted(set(data) - {"mode", "seed", "wait_for_row"})
    if unknown:
        raise ScenarioError(f"delivery.{unknown[0]}: unknown field; the fields are mode, seed, wait_for_row")
    mode = data.get("mode")
    if mode not in DELIVERY_MODES:
        raise ScenarioError(f"delivery.mode: expected one of {' | '.join(DELIVERY_MODES)}, got {mode!r}")
    seed = data.get("seed", 0)
    if not _is_int(seed):
        raise ScenarioError(f"delivery.seed: expected an integer, got {seed!r}")
    if mode != "random" and "seed" in data:
        raise ScenarioError("delivery.seed: only random delivery has a seed")
    wait_for_row = data.get("wait_for_row", False)
    if not isinstance(wait_for_row, bool):
        raise ScenarioError(f"delivery.wait_for_row: expected true or false, got {wait_for_row!r}")
    if mode != "random" and wait_for_row:
        raise ScenarioError("delivery.wait_for_row: only random delivery holds messages across updates")
    return Delivery(mode, seed, wait_for_row)


def _deliver(data: Mapping[str, Any], index: int) -> Deliver:
    where = f"events[{index}]"
    if set(data) != {"deliver"}:
        raise ScenarioError(f"{where}: a deliver event has only the field deliver, e.g. {{deliver: next}}")
    which = data["deliver"]
    if not isinstance(which, str) or not (which in DELIVER_SELECTORS or (which[:1] == "m" and which[1:].isdigit())):
        raise ScenarioError(f"{where}.deliver: expected one of {' | '.join(DELIVER_SELECTORS)} or a message id such as m3, got {which!r}")
    return Deliver(which)


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
