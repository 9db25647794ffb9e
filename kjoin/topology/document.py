"""A topology as a document (YAML or JSON), with its events: what ``kjoin run app.yaml`` reads.

::

    name: orders enriched
    partitions: 2                      # every topic's partitions unless topics: says otherwise
    semantics: "4.4"                   # optional; default: the latest Kafka
    key_serde: string                  # string (default: keys as text, 1 and "1" one key) | typed (Python's values)
    schedule: test-driver              # test-driver (default) | timestamp | stages  (kjoin.topology.runtime)
    processing_exception_handler: fail # fail (default) | continue (3.9+)  (kjoin.topology.handlers)
    dead_letter_queue: errors          # optional (4.2+): the topic failed records are written to
    application_id: my-app             # optional: prefixes internal topics' names (default: the harness's)
    topics: {orders: {partitions: 2}}  # optional
    topology:                          # the nodes, in the order they are built
      - {name: orders, stream: orders}
      - {name: customers, table: customers}          # history_retention_ms: 100 makes it versioned
                                                     # materialized: false: builder.table without Materialized
      - {name: by_customer, select_key: {field: customer}, input: orders}
      - {name: enriched, left_join: [by_customer, customers]}
      - {name: out, to: out, input: enriched}
    events:
      - {topic: customers, key: c1, value: Alice, ts: 1}
      - {topic: orders, key: o1, value: {customer: c1}, ts: 2}

A node is a mapping with its ``name`` and one operation: ``stream: topic``, ``table: topic``,
``filter``, ``map_values``, ``select_key``, ``flat_map_values``, ``flat_map`` (their functions:
:mod:`kjoin.topology.functions`, and ``input: node``; a table's ``filter`` and ``map_values`` take
``materialized: true`` for a store of their own; a ``table`` is materialized unless ``materialized: false``,
see below), ``join``/``left_join``/``outer_join: [left, right]``
(stream-stream with ``window: {before_ms, after_ms, grace_ms}``, stream-table (``grace_ms`` with a versioned table),
table-table, or with ``foreign_key: path`` a foreign-key join; ``joiner: concat | object``),
``to_stream`` (``input``; ``to_stream: {field: path}`` re-keys each change, Kafka's ``toStream(keyMapper)``) and
``to: topic`` (``input``). Also: ``filter_not`` (a filter's spec, negated), ``peek: true``,
``process_values``/``process: {count_per_key | dedupe | swap: true}`` (``store``: its store's name;
:mod:`kjoin.topology.custom`), ``split: [{name, filter: spec} ..., {name, default: true}]`` (each branch a node
``<split name><branch name>``) and, before Kafka 4.0, ``branch: [filter spec, ...]`` (``<name>-predicate-<i>``),
``global_table: topic`` (a stream joins it with ``key_selector: {field: path}``), ``merge: [stream, stream]``,
``to_table: true``,
``repartition: true`` (``partitions``), ``through: topic`` (``partitions``), ``group_by_key:
true`` / ``group_by: {field: path}`` (a stream or a table; the node is the grouped stream, unnamed
for Kafka: each aggregate of it writes a repartition topic of its own; a windowed table's ``group_by: {window_key:
true}`` groups by ``Windowed.key()``),
``windowed_by: {size_ms, advance_ms, grace_ms}`` (or ``{inactivity_gap_ms, grace_ms}``,
``{time_difference_ms, grace_ms}``; a grouped stream), and ``count: true``,
``reduce: concat``, ``aggregate: concat`` (``input``: a grouped node; see
:mod:`kjoin.topology.functions`), ``cogroup: [grouped, grouped, ...]`` (grouped streams aggregated into one table,
each by ``agg+value`` from ``""``: Kafka's ``cogroup(...).aggregate(...)``). ``store: name`` names a node's store
as the application does (``Materialized.as`` on a table, an aggregate, a cogroup, a table's filter or map_values
(then materialized), a table-table or foreign-key join; ``StreamJoined.withStoreName`` on a stream-stream join), and
``as: name`` a grouping's or ``repartition``'s topic (``Grouped.as``, ``Repartitioned.as``: ``<name>-repartition``);
:mod:`kjoin.topology.naming` says which names Kafka derives. A node's ``name`` is kjoin's, never Kafka's ``Named.as``
(the builder's ``node=``): an internal topic of a re-keyed join, a ``to_table`` or a ``repartition`` without ``as``
is named by Kafka's counter, and kjoin names it after the node (a join's after the re-keyed stream, as Kafka's
counter name is). Every error names the node and the field and says what is expected.

A ``table`` is read as the application builds it: with ``store: name`` through ``Materialized.as(name)``; with
neither ``store`` nor ``materialized`` through a store the application names too (the judging harness calls it
``<topic>-store``: the meaning every document had before the field existed, so none changes); with ``materialized:
false`` by ``builder.table(topic, consumed)`` alone (``Materialized.with(serdes)`` is the same: a store without a
name is never queryable, ``MaterializedInternal.queryable``), which keeps a store only when a node reads the table
(``KTableSource.materialize``) and else forwards every update, a tombstone for a key it never held included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..scenario.fields import ScenarioError
from ..scenario.inputs import MAX_PARTITIONS, check_document, did_you_mean, read_document
from ..semantics import parse_semantics
from .builder import (
    KEY_SERDES,
    GlobalKTable,
    KGroupedStream,
    KGroupedTable,
    KStream,
    KTable,
    TimeWindowedKStream,
    Topology,
)
from .functions import FunctionError
from .graph import Topic, TopologyError, legal_name
from .runtime import SCHEDULES
from .handlers import exception_handling
from .naming import DEFAULT_APPLICATION_ID, application_id_checked
from .writer import topology_to_dict  # noqa: F401  (the writing half of the format)

__all__ = ["TopologyScenario", "topology_to_dict", "is_topology_document", "load_topology", "DOCUMENT_FIELDS"]

DOCUMENT_FIELDS = (
    "name", "description", "semantics", "partitions", "key_serde", "schedule", "topics", "topology", "events",
    "processing_exception_handler", "dead_letter_queue", "global_processing_exception_handler", "application_id",
)  # fmt: skip
OPERATIONS = (
    "stream",
    "table",
    "filter",
    "map_values",
    "flat_map_values",
    "flat_map",
    "select_key",
    "join",
    "left_join",
    "outer_join",
    "to_stream",
    "to",
    "global_table",
    "merge",
    "to_table",
    "repartition",
    "through",
    "group_by_key",
    "group_by",
    "windowed_by",
    "count",
    "reduce",
    "aggregate",
    "filter_not",
    "peek",
    "process_values",
    "process",
    "split",
    "branch",
    "suppress",
    "cogroup",
)
_NODE_FIELDS = {
    "stream": ("partitions",),
    "table": ("partitions", "history_retention_ms", "store", "materialized"),
    "filter": ("input", "materialized", "store"),
    "map_values": ("input", "materialized", "store"),
    "flat_map_values": ("input",),
    "flat_map": ("input", "partitioner"),
    "select_key": ("input", "partitioner"),
    "to_stream": ("input",),
    "to": ("input", "partitioner", "partitions"),
    "global_table": ("partitions",),
    "merge": (),
    "to_table": ("input",),
    "repartition": ("input", "partitions", "partitioner", "as"),
    "through": ("input", "partitions", "partitioner"),
    "group_by_key": ("input", "as"),
    "group_by": ("input", "partitioner", "as"),
    "windowed_by": ("input", "emit_strategy"),
    "suppress": ("input",),
    "count": ("input", "store"),
    "reduce": ("input", "store"),
    "aggregate": ("input", "store"),
    "filter_not": ("input", "materialized", "store"),
    "peek": ("input",),
    "process_values": ("input", "store"),
    "process": ("input", "store"),
    "split": ("input",),
    "branch": ("input",),
    "cogroup": ("store",),
}
_JOIN_FIELDS = (
    "window", "grace_ms", "foreign_key", "joiner", "partitioner", "other_partitioner", "key_selector", "store",
)  # fmt: skip


def is_topology_document(data: Any) -> bool:
    """Is ``data`` a topology document (it has ``topology:``) rather than a single join's scenario?"""
    return isinstance(data, Mapping) and "topology" in data


def load_topology(path: str | Path) -> "TopologyScenario":
    path = Path(path)
    return TopologyScenario.from_dict(read_document(path), source=str(path))


@dataclass(frozen=True)
class TopologyScenario:
    """A topology and its input events, as a document has them; :meth:`run` runs them."""

    topology: Topology
    events: tuple[Mapping[str, Any], ...]
    schedule: str = "test-driver"
    name: str | None = None
    description: str | None = None
    data: dict[str, Any] = field(default_factory=dict, compare=False)
    """The document it was read from (``to_dict`` writes it back)."""

    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> "TopologyScenario":
        try:
            return _parse(data)
        except (TopologyError, FunctionError, ScenarioError) as error:
            raise ScenarioError(str(error), source) from None

    def run(self, joiner: Any = None) -> Any:
        """The :class:`~kjoin.topology.TopologyTrace` of the events (``joiner``: unused, a topology's
        joins name their own)."""
        return self.topology.run(self.events, self.schedule)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.data)


def _parse(data: Any) -> TopologyScenario:
    if not isinstance(data, Mapping):
        raise TopologyError(f"a topology document is a mapping with topology and events; got {type(data).__name__}")
    check_document(data)
    unknown = [name for name in data if name not in DOCUMENT_FIELDS]
    if unknown:
        raise TopologyError(
            f"unknown field {unknown[0]!r}{did_you_mean(unknown[0], DOCUMENT_FIELDS)}; a topology document has "
            f"{', '.join(DOCUMENT_FIELDS)}"
        )
    partitions = data.get("partitions", 1)
    if not isinstance(partitions, int) or isinstance(partitions, bool) or not 1 <= partitions <= MAX_PARTITIONS:
        raise TopologyError(f"partitions: expected a whole number from 1 to {MAX_PARTITIONS}, got {partitions!r}")
    semantics = data.get("semantics")
    if semantics is not None and not isinstance(semantics, str):
        raise TopologyError(f'semantics: expected a Kafka version as text, e.g. "3.1" (quoted), got {semantics!r}')
    try:
        era = parse_semantics(semantics)
    except ValueError as error:
        raise TopologyError(f"semantics: {error}") from None
    schedule = data.get("schedule", "test-driver")
    if schedule not in SCHEDULES:
        raise TopologyError(
            f"schedule: expected {' | '.join(SCHEDULES)}, got {schedule!r}{did_you_mean(schedule, SCHEDULES)}"
        )
    for text in ("name", "description"):
        if data.get(text) is not None and not isinstance(data[text], str):
            raise TopologyError(f"{text}: expected text, got {data[text]!r:.60}")
    topics = data.get("topics", {})
    if topics is None:
        topics = {}
    if not isinstance(topics, Mapping):
        raise TopologyError(f"topics: expected a mapping from topic name to {{partitions: N}}, got {topics!r:.60}")
    for topic, options in topics.items():
        if not isinstance(options, Mapping) or set(options) - {"partitions"}:
            raise TopologyError(f"topics.{topic}: expected {{partitions: N}}, got {options!r:.60}")
    nodes = data.get("topology")
    if not isinstance(nodes, list) or not nodes:
        raise TopologyError(
            "topology: expected a list of nodes, in the order they are built, e.g. [{name: orders, stream: orders}, "
            "{name: out, to: out, input: orders}]"
        )
    key_serde = data.get("key_serde", "string")
    if key_serde not in KEY_SERDES:
        raise TopologyError(
            f"key_serde: expected {' | '.join(KEY_SERDES)} (string: every key's text, as the harness sends it), got "
            f"{key_serde!r}"
        )
    handling = exception_handling(
        era,
        data.get("processing_exception_handler"),
        data.get("dead_letter_queue"),
        data.get("global_processing_exception_handler"),
        at="{}",
    )
    topology = Topology(
        partitions,
        semantics=era,
        key_serde=key_serde,
        processing_exception_handler=handling.handler,
        dead_letter_queue=handling.dead_letter_queue,
        global_processing_exception_handler=handling.global_enabled,
        application_id=application_id_checked(data.get("application_id", DEFAULT_APPLICATION_ID), "application_id"),
    )
    handles: dict[str, KStream | KTable] = {}
    for index, node in enumerate(nodes):
        _build_node(topology, handles, node, f"topology[{index}]", topics)
    dead_letters = handling.dead_letter_queue
    if dead_letters is not None and dead_letters in topics and dead_letters not in topology.graph.topics:
        count = topics[dead_letters].get("partitions", partitions)
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_PARTITIONS:
            raise TopologyError(
                f"topics.{dead_letters}.partitions: a whole number from 1 to {MAX_PARTITIONS}, got {count!r:.60}"
            )
        topology.graph.add_topic(Topic(dead_letters, count))  # the dead-letter queue's partitions, as declared
    events = data.get("events")
    if not isinstance(events, list):
        raise TopologyError("events: expected a list of events like {topic: orders, key: o1, value: A, ts: 1}")
    topology.build()
    named = [name for name, topic in topology.graph.topics.items() if not topic.internal]
    for topic in topics:
        if topic not in named:
            raise TopologyError(
                f"topics.{topic}: the topology reads or writes no topic {topic}{did_you_mean(topic, named)}; its "
                f"topics are {', '.join(named)}"
            )
    from .events import input_records

    input_records(topology.graph, events)  # checked now: the error names the event before anything runs
    return TopologyScenario(topology, tuple(events), schedule, data.get("name"), data.get("description"), dict(data))


def _build_node(topology: Topology, handles: dict[str, Any], node: Any, at: str, topics: Mapping[str, Any]) -> None:
    name, op, at = _node_operation(node, at, handles)
    reader = _NodeReader(topology, handles, node, at, op, topics)
    try:
        if op in _SOURCE_OPS:
            handles[name] = reader.source(name)
        elif op in _GROUPED_OPS:
            handles[name] = reader.grouped(name)
        elif op == "cogroup":
            handles[name] = reader.cogroup(name)
        elif op.endswith("join"):
            handles[name] = reader.join(name)
        elif op in ("split", "branch"):
            handles.update(reader.branches(name))
        else:
            result = reader.stateless(name)
            if result is not None:
                handles[name] = result
    except (TopologyError, FunctionError) as error:
        text = str(error)
        raise TopologyError(text if text.startswith(at) else f"{at}: {text}") from None


def _node_operation(node: Any, at: str, handles: Mapping[str, Any]) -> tuple[str, str, str]:
    """A node's name, its one operation and where it is (``topology[3] (by-customer)``), or kjoin's error."""
    if not isinstance(node, Mapping):
        raise TopologyError(f"{at}: a node is a mapping with a name and one operation ({', '.join(OPERATIONS)})")
    name = node.get("name")
    if not isinstance(name, str) or not name:
        raise TopologyError(f"{at}.name: every node has a name (text), got {name!r}")
    legal_name(name, f"{at}.name")  # before the name is shown in a message: it may hold a line break
    at = f"{at} ({name})"
    if name in handles:
        raise TopologyError(f"{at}.name: another node is named {name}; names are unique")
    ops = [op for op in OPERATIONS if op in node]
    if len(ops) != 1:
        unknown = [key for key in node if key != "name" and key not in OPERATIONS]
        hint = did_you_mean(unknown[0], OPERATIONS) if unknown else ""
        raise TopologyError(
            f"{at}: a node has exactly one operation of {', '.join(OPERATIONS)}; found {', '.join(ops) or 'none'}{hint}"
        )
    op = ops[0]
    allowed = {"name", op, *(_JOIN_FIELDS if op.endswith("join") else _NODE_FIELDS[op])}
    extra = [key for key in node if key not in allowed]
    if extra:
        raise TopologyError(
            f"{at}.{extra[0]}: not a field of a {op} node{did_you_mean(extra[0], allowed)}; it has "
            f"{', '.join(sorted(allowed))}"
        )
    return name, op, at


_SOURCE_OPS = ("stream", "table", "global_table")
_GROUPED_OPS = ("group_by_key", "group_by", "windowed_by", "count", "reduce", "aggregate")


class _NodeReader:
    """One node of a document being built: its fields read, the nodes it names looked up, each error naming it."""

    def __init__(
        self, topology: Topology, handles: dict[str, Any], node: Mapping[str, Any], at: str, op: str, topics: Any
    ) -> None:
        self.topology, self.handles, self.node, self.at, self.op, self.topics = topology, handles, node, at, op, topics

    def source_partitions(self, topic: str) -> int | None:
        given = self.node.get("partitions", (self.topics.get(topic) or {}).get("partitions"))
        if given is not None and (not isinstance(given, int) or isinstance(given, bool) or given < 1):
            raise TopologyError(f"{self.at}.partitions: a whole number from 1, got {given!r}")
        return given

    def handle(self, field_name: str, value: Any, kind: type | tuple[type, ...] | None = None) -> Any:
        """The node ``value`` names (built before this one), of ``kind`` if given."""
        if not isinstance(value, str) or value not in self.handles:
            known = ", ".join(self.handles) or "none yet"
            raise TopologyError(
                f"{self.at}.{field_name}: {value!r} names no node built before this one"
                f"{did_you_mean(value, self.handles)} (nodes are listed in the order they are built; so far: {known})"
            )
        found = self.handles[value]
        if kind is not None and not isinstance(found, kind):
            kinds = kind if isinstance(kind, tuple) else (kind,)
            what = " or a ".join(_KIND_NAMES.get(k, "table") for k in kinds)
            raise TopologyError(
                f"{self.at}.{field_name}: {value} is a {_kind(found)}; a {self.op} node reads a {what}{_fix(found)}"
            )
        return found

    def input(self, kind: type | tuple[type, ...] | None = None) -> Any:
        return self.handle("input", self.node.get("input"), kind)

    def sink_partitions(self) -> Any:
        return self.node.get("partitions", (self.topics.get(self.node[self.op]) or {}).get("partitions"))

    # -- the operations, by kind -------------------------------------------------------------------
    def source(self, name: str) -> Any:
        node, op, topology = self.node, self.op, self.topology
        topic, partitions = _topic(node[op], self.at), self.source_partitions(node[op])
        if op == "stream":
            return topology.stream(topic, partitions=partitions, name=name)
        if op == "table":
            history, materialized = node.get("history_retention_ms"), node.get("materialized", True)
            if not isinstance(materialized, bool):
                raise TopologyError(f"{self.at}.materialized: true or false, got {materialized!r:.60}")
            return topology.table(
                topic,
                partitions=partitions,
                history_retention_ms=history,
                name=name,
                store=node.get("store"),
                materialized=materialized,
            )
        return topology.global_table(topic, partitions=partitions, name=name)

    def stateless(self, name: str) -> Any:
        """filter, map_values, select_key, to_stream, merge, to_table, repartition, through, to (None: a sink)."""
        node, op, at = self.node, self.op, self.at
        if op in ("filter", "filter_not", "map_values") and isinstance(self.input(), KTable):
            materialized = node.get("materialized", False)
            if not isinstance(materialized, bool):
                raise TopologyError(f"{at}.materialized: true or false, got {materialized!r}")
            return getattr(self.input(KTable), op)(
                node[op], name=name, materialized=materialized, store=node.get("store")
            )
        if "materialized" in node or "store" in node and op in ("filter", "filter_not", "map_values"):
            raise TopologyError(f"{at}.materialized: only a table's filter or map_values is materialized")
        if op in ("filter", "map_values", "select_key", "flat_map_values", "flat_map"):
            stream = self.input(KStream)
            if op in ("select_key", "flat_map"):
                return getattr(stream, op)(node[op], name=name, partitioner=node.get("partitioner"))
            return getattr(stream, op)(node[op], name=name)
        if op == "to_stream":
            key_mapper = None if node[op] is True else node[op]  # to_stream: {field: path} re-keys each change
            return self.input(KTable).to_stream(key_mapper, name=name)
        if op in ("filter_not", "peek"):
            return getattr(self.input(KStream), op)(node[op], name=name)
        if op in ("process_values", "process"):
            return getattr(self.input(KStream), op)(node[op], store=node.get("store"), name=name)
        if op == "suppress":  # {until: window_closes | time_limit, time_limit_ms, max_records, when_full}
            options = node[op]
            if not isinstance(options, Mapping):
                raise TopologyError(
                    f"{at}.suppress: expected {{until: window_closes}} or {{until: time_limit, time_limit_ms: 10"
                    f"[, max_records: 100, when_full: emit_early]}}, got {options!r:.60}"
                )
            return self.input(KTable).suppress(name=name, **{str(key): value for key, value in options.items()})
        if op == "merge":
            sides = node[op]
            if not isinstance(sides, list) or len(sides) != 2:
                raise TopologyError(f"{at}.merge: expected [stream, stream], the names of the two streams it merges")
            left = self.handle("merge[0]", sides[0], KStream)
            return left.merge(self.handle("merge[1]", sides[1], KStream), name=name)
        if op == "to_table":
            return self.input(KStream).to_table(node=name)
        if op == "repartition":
            return self.input(KStream).repartition(  # as: Repartitioned.as, the topic's name
                name=node.get("as"), node=name, partitions=node.get("partitions"), partitioner=node.get("partitioner")
            )
        if op == "through":
            return self.input(KStream).through(
                _topic(node[op], at), partitions=self.sink_partitions(), partitioner=node.get("partitioner"), name=name
            )
        if op != "to":  # pragma: no cover - OPERATIONS and the dispatch in _build_node agree
            raise AssertionError(op)
        parent = self.input((KStream, KTable))
        stream = parent if isinstance(parent, KStream) else parent.to_stream()
        stream.to(
            _topic(node[op], at), partitions=self.sink_partitions(), partitioner=node.get("partitioner"), name=name
        )
        return None

    def branches(self, name: str) -> dict[str, Any]:
        """``split: [{name, filter} ..., {name, default: true}]`` (each branch ``<split name><branch name>``) or the
        legacy ``branch: [filter spec, ...]`` (each ``<name>-predicate-<i>``): the branches by name."""
        node, op, at = self.node, self.op, self.at
        stream = self.input(KStream)
        entries = node[op]
        if not isinstance(entries, list) or not entries:
            raise TopologyError(f"{at}.{op}: expected a list of branches")
        if op == "branch":
            made = stream.branch(*entries, name=name)
            return {f"{name}-predicate-{index}": branch for index, branch in enumerate(made)}
        split = stream.split(name=name)
        for index, entry in enumerate(entries):
            where = f"{at}.split[{index}]"
            if not isinstance(entry, Mapping) or not set(entry) <= {"name", "filter", "default"}:
                raise TopologyError(f"{where}: expected {{name, filter: spec}} or {{name, default: true}}")
            if entry.get("default") is True:
                if index != len(entries) - 1:
                    raise TopologyError(f"{where}: the default branch comes last")
                return split.default_branch(name=entry.get("name"))
            if "filter" not in entry:
                raise TopologyError(f"{where}: a branch has a filter spec, or is the default: true")
            split.branch(entry["filter"], name=entry.get("name"))
        return split.no_default_branch()

    def grouped(self, name: str) -> Any:
        """group_by_key, group_by, windowed_by, count, reduce, aggregate."""
        node, op, at = self.node, self.op, self.at
        if op == "group_by_key":
            # a document's node names its handle; Kafka's harness names no Grouped (each aggregate its own topic)
            return self.input(KStream).group_by_key(name=node.get("as"))  # as: Grouped.as
        if op == "group_by":
            parent = self.input((KStream, KTable))
            return parent.group_by(node[op], partitioner=node.get("partitioner"), name=node.get("as"))
        grouped = self.input(KGroupedStream)
        if op == "windowed_by":
            if isinstance(grouped, (KGroupedTable, TimeWindowedKStream)):
                raise TopologyError(f"{at}.input: windowed_by reads a grouped stream (group_by or group_by_key)")
            windowed = grouped.windowed_by(node[op])
            strategy = node.get("emit_strategy")
            return windowed if strategy is None else windowed.emit_strategy(strategy)
        if op == "count":
            if node[op] is not True:
                raise TopologyError(f"{at}.count: write count: true")
            return grouped.count(name=name, store=node.get("store"))
        if node[op] != "concat":
            raise TopologyError(f"{at}.{op}: a document names concat (Python functions: kjoin.Topology)")
        return getattr(grouped, op)("concat", name=name, store=node.get("store"))

    def cogroup(self, name: str) -> Any:
        """``cogroup: [grouped, ...]``: the grouped streams, each aggregated by ``agg+value`` from ``""``."""
        names = self.node["cogroup"]
        if not isinstance(names, list) or not names:
            raise TopologyError(f"{self.at}.cogroup: expected [grouped, ...], the grouped streams it aggregates")
        grouped = [self.handle(f"cogroup[{index}]", given, KGroupedStream) for index, given in enumerate(names)]
        for index, found in enumerate(grouped):
            if isinstance(found, (KGroupedTable, TimeWindowedKStream)):
                raise TopologyError(f"{self.at}.cogroup[{index}]: a cogroup reads grouped streams (group_by_key, "
                                    "group_by of a stream), not a grouped table or windows")  # fmt: skip
        cogrouped = grouped[0].cogroup("concat")
        for found in grouped[1:]:
            cogrouped = cogrouped.cogroup(found, "concat")
        return cogrouped.aggregate("concat", name=name, store=self.node.get("store"))

    def join(self, name: str) -> Any:
        node, op, at = self.node, self.op, self.at
        sides = node[op]
        if not isinstance(sides, list) or len(sides) != 2:
            raise TopologyError(f"{at}.{op}: expected [left, right], the names of the two nodes it joins")
        left = self.handle(f"{op}[0]", sides[0], (KStream, KTable))
        right = self.handle(f"{op}[1]", sides[1], (KStream, KTable, GlobalKTable))
        options = {key: node[key] for key in ("window", "joiner", "grace_ms", "key_selector", "store") if key in node}
        if isinstance(left, KTable):
            for key in ("foreign_key", "partitioner", "other_partitioner"):
                if key in node:
                    options[key] = node[key]
            if "window" in options:
                raise TopologyError(f"{at}.window: a table-table join has no window")
        elif any(key in node for key in ("foreign_key", "partitioner", "other_partitioner")):
            raise TopologyError(f"{at}: foreign_key and partitioners belong to a join of two tables")
        return getattr(left, op)(right, node=name, **options)  # the harness names no join: Kafka counts


def _topic(value: Any, at: str) -> str:
    if not isinstance(value, str) or not value:
        raise TopologyError(f"{at}: a topic's name is non-empty text, got {value!r}")
    return value


_KIND_NAMES = {
    KStream: "stream",
    GlobalKTable: "global table",
    KGroupedStream: "grouped stream or table (group_by, group_by_key, windowed_by)",
}


def _fix(handle: Any) -> str:
    """What to write instead of a node of the wrong kind."""
    if isinstance(handle, GlobalKTable):
        return " (a global table is only the right side of a stream's join)"
    if isinstance(handle, KGroupedStream):
        return " (a grouped node is read by count, reduce or aggregate: name the aggregate's node)"
    return ""


def _kind(handle: Any) -> str:
    if isinstance(handle, GlobalKTable):
        return "global table"
    if isinstance(handle, KGroupedStream):
        return "grouped stream or table"
    return "stream" if isinstance(handle, KStream) else "table"
