"""``kjoin.Topology``: a topology built the way Kafka's ``StreamsBuilder`` builds one.

Why one module of this size: it is the DSL's surface, one class per Kafka handle (``KStream``, ``KTable``,
``GlobalKTable``, the grouped and windowed handles) whose methods hand each other nodes, as Kafka's API does; the
checks of their arguments live in :mod:`kjoin.topology.functions` and the graph in :mod:`kjoin.topology.graph`.

::

    b = kjoin.Topology(partitions=2)
    orders = b.stream("orders")
    customers = b.table("customers")
    addresses = b.table("addresses")
    enriched = (orders.select_key(lambda key, value: value["customer"])
                      .join(customers)
                      .left_join(addresses))
    enriched.to("out")
    trace = b.run(events)

A re-key (``select_key``, ``map``) marks the stream; the next join first writes it to a
repartition topic (``<node>-repartition``), as Kafka's ``repartitionForJoin`` does, and the
join reads it back in a sub-topology of its own.

Two names: ``name=`` is the application's name for Kafka (``Named.as``, ``Joined.as``, ``StreamJoined.withName``,
``TableJoined.as``, ``Repartitioned.as``, ``Grouped.as``), after which Kafka names the internal topics
(``<name>-repartition``, ``<name>-left-repartition``, ``<name>-subscription-registration-topic``), and it names
kjoin's node too; ``node=`` (on ``repartition``, ``to_table`` and the joins) names kjoin's node only, for an
operation the application leaves unnamed: Kafka names its topics with its counter (``KSTREAM-...-<n>-repartition``),
kjoin after its node, and a byte-bounded suppression (which counts topic names) below them is refused. A
document's node names are ``node=`` (:mod:`kjoin.topology.document`). Nothing is checked until :meth:`Topology.build`
(called by :meth:`Topology.run`): then every internal topic gets its partition count and every
join's topics are checked for co-partitioning (:mod:`kjoin.topology.copartition`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any, Iterable, Mapping

from ..joins.stream_stream import JoinWindows
from ..joins.session_aggregate import SessionWindows
from ..joins.sliding_aggregate import SlidingWindows
from ..joins.window_aggregate import TimeWindows
from ..records import Side
from ..scenario.inputs import MAX_LONG, MAX_PARTITIONS, MIN_LONG, did_you_mean, join_window_span_problem
from ..semantics import Semantics, parse_semantics
from . import custom, functions
from .cogroup import refuse_table_operations as refuse_cogroup_table_operations
from .copartition import resolve_partitions
from .naming import DEFAULT_APPLICATION_ID, application_id_checked, kafka_stores, store_name
from .suppress import suppressed
from .graph import (
    STREAM,
    TABLE,
    VIEW_OPS,
    Graph,
    Node,
    Topic,
    TopologyError,
    legal_name,
    legal_topic,
    windowed_aggregate,
    windowed_kind,
    windowed_table,
)
from .handlers import exception_handling
from .writer import topology_to_dict

__all__ = [
    "Topology", "KStream", "KTable", "GlobalKTable", "KGroupedStream", "KGroupedTable", "TimeWindowedKStream",
    "BranchedKStream",
]  # fmt: skip

KEY_SERDES = ("string", "typed")
"""How a topology's keys are serialized (``Topology(key_serde=...)``, a document's ``key_serde``)."""


class NoSuchOperation(TopologyError, AttributeError):
    """An operation a handle does not have (a global table's join, a grouped stream's ``to``): kjoin's error, and an
    ``AttributeError`` for ``hasattr``."""


class Topology:
    """A topology under construction (Kafka's ``StreamsBuilder``), and what runs it."""

    def __init__(
        self,
        partitions: int = 1,
        *,
        semantics: str | Semantics | None = None,
        key_serde: str = "string",
        processing_exception_handler: str = "fail",
        dead_letter_queue: str | None = None,
        global_processing_exception_handler: bool = False,
        application_id: str = DEFAULT_APPLICATION_ID,
    ) -> None:
        """``partitions``: every topic's number of partitions unless it says otherwise;
        ``semantics``: the Kafka version whose join rules apply (default: the latest);
        ``key_serde``: ``string`` (every key through the String serde, as the topology harness runs a document: ``1``
        and ``"1"`` are one key, ``true`` is ``"true"``) or ``typed`` (each key through its own type's serde, as an
        application with Integer or Long keys: Python's values as they are);
        ``processing_exception_handler``: ``fail`` (a user function that raises stops the run) or ``continue``
        (the record is dropped at that node; 3.9+), ``dead_letter_queue``: a topic the failed records are written
        to (4.2+), ``global_processing_exception_handler``: the handler covers the global thread too (4.3+); see
        :mod:`kjoin.topology.handlers`; ``application_id``: Kafka's ``application.id``, which prefixes the full
        name of each internal topic (``<application.id>-<name>-repartition``; a suppression's ``max_bytes`` counts
        it), by default the topology harness's."""
        self.partitions = _partitions(partitions, "Topology(partitions=...)")
        self.application_id = application_id_checked(application_id, "Topology(application_id=...)")
        self.kafka_named_topics: set[str] = set()
        """The internal topics Kafka names as kjoin does (``Grouped.as``, a named store, ``Repartitioned.as``, a
        name ``describe()`` gave); the others Kafka names with its counter (``KSTREAM-...-<n>-repartition``)."""
        if key_serde not in KEY_SERDES:
            raise TopologyError(f"Topology(key_serde=...): expected one of {', '.join(KEY_SERDES)}, got {key_serde!r}")
        if semantics is not None and not isinstance(semantics, (str, Semantics)):
            raise TopologyError(
                f'Topology(semantics=...): a Kafka version as text, e.g. "3.1" (a number would read 3.10 as 3.1), '
                f"got {semantics!r:.60}"
            )
        try:
            self.semantics = semantics if isinstance(semantics, Semantics) else parse_semantics(semantics)
        except ValueError as error:
            raise TopologyError(f"Topology(semantics=...): {error}") from None
        self.key_serde = key_serde
        self.exception_handling = exception_handling(
            self.semantics, processing_exception_handler, dead_letter_queue, global_processing_exception_handler
        )
        self.graph = Graph()
        self.graph.text_keys = key_serde == "string"
        self._built = False
        self.described: Any = None
        """What :meth:`from_describe` made of a ``describe()`` text (``None`` for a topology built in Python)."""

    def kafka_topic(self, topic: str) -> str:
        """``topic``'s name in Kafka: an internal topic (repartition, foreign-key) prefixed by the application id."""
        found = self.graph.topics.get(topic)
        return f"{self.application_id}-{topic}" if found is not None and found.internal else topic

    # -- sources ------------------------------------------------------------------------------
    def stream(
        self, topic: str, *, partitions: int | None = None, partitioner: Any = None, name: str | None = None
    ) -> "KStream":
        """A stream read from ``topic`` (Kafka's ``builder.stream``); ``partitioner(key, partitions)``: how the
        producer placed its records (default: murmur2 of the key), unless an event names its partition."""
        self._source_topic(topic, partitions, partitioner)
        return KStream(self, self.graph.add("stream", (), STREAM, name or topic, topic=topic))

    def table(
        self,
        topic: str,
        *,
        partitions: int | None = None,
        history_retention_ms: int | None = None,
        partitioner: Any = None,
        name: str | None = None,
        store: str | None = None,
        materialized: bool = True,
    ) -> "KTable":
        """A table read from ``topic`` (Kafka's ``builder.table``); with ``history_retention_ms`` a versioned table
        (KIP-889); ``store``: its store's name (``Materialized.as``).

        ``materialized``: does the application give the table a store it can query (``Materialized.as``)? Yes by
        default (kjoin's judging harness names it ``<topic>-store``). ``False`` is ``builder.table(topic, consumed)``
        without ``Materialized`` (or with ``Materialized.with(serdes)``, which names no store either): the table
        keeps a store only when a node reads it (a join, a group-by, ``suppress``), and a table without one forwards
        every update, a tombstone for a key it never held included (KIP-557 drops idempotent updates only at a
        store; a filter below it forwards such tombstones, KAFKA-10077). A document says ``materialized: false``."""
        store = store_name(store, f"table {topic}")
        if not isinstance(materialized, bool):
            raise TopologyError(f"table {topic}: materialized is true or false, got {materialized!r:.60}")
        if not materialized and store is not None:
            raise TopologyError(
                f"table {topic}: store {store} names the store of a materialized table (Materialized.as); "
                "leave store out for a table without Materialized, or leave materialized false out"
            )
        if history_retention_ms is not None:
            _milliseconds(history_retention_ms, f"table {topic}: history_retention_ms")
            if not materialized:
                raise TopologyError(
                    f"table {topic}: a versioned table is materialized through its versioned store "
                    "(Materialized.as(Stores.persistentVersionedKeyValueStore(...))); leave materialized false out"
                )
        self._source_topic(topic, partitions, partitioner)
        node = self.graph.add("table", (), TABLE, name or topic, topic=topic, history_retention_ms=history_retention_ms)
        if store is not None:
            node.params["store"] = store
        if not materialized:
            node.params["materialized"] = False
        return KTable(self, node)

    def global_table(self, topic: str, *, partitions: int | None = None, name: str | None = None) -> "GlobalKTable":
        """A global table read from ``topic`` (Kafka's ``builder.globalTable``): every task reads the whole topic
        through one global store, so a stream joins it with no co-partitioning and no repartition."""
        if not self.semantics.global_tables:
            raise TopologyError(
                f"global_table: Kafka {self.semantics} has no GlobalKTable (0.10.2); choose a later one"
            )
        self._source_topic(topic, partitions)
        return GlobalKTable(self, self.graph.add("global-table", (), TABLE, name or topic, topic=topic))

    def _source_topic(self, topic: str, partitions: int | None, partitioner: Any = None) -> None:
        if self._built:
            raise TopologyError(f"{topic!r:.60}: the topology has run already; build a new kjoin.Topology to change it")
        legal_topic(topic, "topic")
        if topic in self.graph.sources():
            raise TopologyError(
                f"topic {topic} is read twice; Kafka reads a topic with one source node (TopologyException: "
                "Topic has already been registered by another source): use the first stream or table again"
            )
        written = self.graph.topics.get(topic)  # by a `to` above: read as it is written, unless told otherwise
        if partitions is not None:
            count = _partitions(partitions, f"topic {topic}: partitions")
        else:
            count = self.partitions if written is None else written.partitions
        chosen = functions.partitioner(partitioner)
        if chosen is None and written is not None:
            chosen = written.partitioner
        self.graph.add_topic(Topic(topic, count, chosen))

    @classmethod
    def from_describe(
        cls,
        text: str,
        functions: Mapping[str, Any] | None = None,
        *,
        partitions: int = 1,
        semantics: str | Semantics | None = None,
        application_id: str | None = None,
    ) -> "Topology":
        """The topology a real application's ``topology.describe()`` prints, built as far as kjoin can:
        ``functions`` fills in, by processor name, what the text does not say (key selectors, value mappers,
        predicates, joiners; a join's ``{joiner, variant, window, foreign_key, grace_ms}``; a suppression's options
        with its buffer config). ``application_id``: the application's ``application.id``, which describe() does
        not print and which prefixes its internal topics' names (a ``max_bytes`` suppression counts them; default:
        the topology harness's). ``topology.described`` lists what was built, what is still needed and what kjoin
        cannot model, with reasons (:mod:`kjoin.topology.describe`). An ``application_id`` that is not text, empty,
        illegal as Kafka's prefix of internal topics' names, or read by nothing in the topology is kjoin's error."""
        from .describe import from_describe
        from .naming import described_application_id, refuse_unused_application_id

        if application_id is not None:
            described_application_id(application_id)
        topology = cls(
            partitions=partitions,
            semantics=semantics,
            application_id=DEFAULT_APPLICATION_ID if application_id is None else application_id,
        )
        topology.described = from_describe(topology, text, functions, application_id_given=application_id is not None)
        if application_id is not None:
            refuse_unused_application_id(topology, application_id)
        return topology

    # -- build and run --------------------------------------------------------------------------
    def build(self) -> "Topology":
        """Resolve the internal topics' partitions and check co-partitioning (once)."""
        if not self._built:
            if not any(node.op in ("to",) for node in self.graph.nodes.values()):
                raise TopologyError("the topology writes nothing: end it with .to(topic)")
            dead_letters = self.exception_handling.dead_letter_queue
            if dead_letters is not None:
                if dead_letters in self.graph.sources():
                    raise TopologyError(
                        f"dead_letter_queue: {dead_letters} is a topic the topology reads; its failed records would "
                        "come back to it: name a topic of its own"
                    )
                if dead_letters not in self.graph.topics:
                    self.graph.add_topic(Topic(dead_letters, 1))
            refuse_cogroup_table_operations(self.graph, self.semantics)
            resolve_partitions(self.graph)
            _refuse_windowed_foreign_key_routing(self.graph, self.semantics)
            for node in self.graph.nodes.values():
                if node.op == "repartition-sink":
                    relaxed = self.semantics.relaxed_null_keys and self.graph.relaxed_join_downstream(node)
                    node.params["keeps_null_keys"] = relaxed
            self._built = True
        return self

    def run(
        self,
        events: Iterable[Mapping[str, Any]],
        schedule: str = "test-driver",
        *,
        instances: int = 1,
        assignment: Mapping[str, int] | None = None,
    ) -> Any:
        """Run ``events`` (``{topic, key, value, ts[, partition]}``, in the order they are written)
        through the topology; ``schedule``: ``test-driver`` (Kafka's TopologyTestDriver: every record
        written to an internal topic is processed at once, depth-first), ``timestamp`` (a running
        application whose tasks take their next record in timestamp order) or ``stages`` (the same, sub-topology by
        sub-topology in dependency order: the Spark engine's, :mod:`kjoin.topology.stages`). ``instances``: how many
        application instances share the tasks (task ``s_p`` runs on instance ``p % instances``), or
        ``assignment`` (task -> instance); each step says its instance, and the outputs stay the same.
        See :mod:`kjoin.topology.runtime`."""
        from .runtime import run

        return run(self, events, schedule, instances, assignment)

    def tasks(self) -> list[str]:
        """The tasks the topology runs as (``"1_0"``: sub-topology 1, partition 0)."""
        from .runtime import tasks_of

        self.build()
        return tasks_of(self)

    def describe(self) -> str:
        """The sub-topologies, their nodes and topics, as Kafka's ``Topology.describe()`` lists them."""
        self.build()
        lines = ["Topologies:"]
        for node in self.graph.nodes.values():
            if node.op == "global-table":
                lines.append(f"   Global store of {node.name} (topics: [{node.topic}])")
        for number, nodes in enumerate(self.graph.subtopologies()):
            lines.append(f"   Sub-topology: {number}")
            for node in sorted(nodes, key=lambda n: n.order):
                detail = ""
                if node.op in ("stream", "table", "repartition-source", "global-table"):
                    topic = self.graph.topics[node.topic]  # type: ignore[index]
                    detail = f" (topics: [{topic.name}], {topic.partitions} partition(s))"
                elif node.op == "stream-global":
                    detail = f" (reads the global store of {node.parents[1].name})"
                elif node.op in ("to", "repartition-sink"):
                    detail = f" (topic: {node.topic})"
                elif node.op == "fk":
                    detail = (
                        f" (writes {node.params['subscription_topic']} and {node.params['response_topic']}; its "
                        "right side runs in the right table's sub-topology)"
                    )
                stores = kafka_stores(node, self.semantics)
                if stores:  # the names Kafka derives from the application's (Materialized.as, withStoreName)
                    detail += f" (stores: [{', '.join(stores)}])"
                parents = ", ".join(parent.name for parent in node.parents)
                lines.append(f"    {node.op}: {node.name}{detail}" + (f" <-- {parents}" if parents else ""))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The topology as the ``topology:`` part of a document (:mod:`kjoin.topology.document`)."""
        return topology_to_dict(self)


class _Handle:
    def __init__(self, topology: Topology, node: Node) -> None:
        self.topology = topology
        self.node = node

    @property
    def name(self) -> str:
        return self.node.name

    def _add(
        self, op: str, parents: Any, produces: str, name: str | None, derived: bool = False, **params: Any
    ) -> Node:
        if self.topology._built:
            raise TopologyError(f"{op}: the topology has run already; build a new kjoin.Topology to change it")
        return self.topology.graph.add(op, parents, produces, name, derived, **params)

    def _keys(self, fn: Any, as_text: Any) -> Any:
        """A function that makes keys, its keys as the topology's key serde carries them (``as_text``: one of
        :mod:`kjoin.topology.functions`' ``text_*`` wrappers, for the String serde)."""
        return as_text(fn) if self.topology.graph.text_keys else fn

    def _check_same(self, other: "_Handle", op: str) -> None:
        if isinstance(other, KGroupedStream):
            raise TopologyError(
                f"{op}: the other side is a grouped stream or table (group_by, group_by_key, windowed_by), which is "
                "aggregated, not joined: join the table its count, reduce or aggregate makes"
            )
        if not isinstance(other, _Handle):
            raise TopologyError(
                f"{op}: the other side must be a stream or table of the same kjoin.Topology, got {_described(other)}"
            )
        if other.topology is not self.topology:
            raise TopologyError(
                f"{op}: node {other.node.name} ({other.node.op}) belongs to another kjoin.Topology than node "
                f"{self.node.name} ({self.node.op}): a Kafka application is one topology; build both sides from one "
                "kjoin.Topology()"
            )


def _described(value: Any) -> str:
    """``value`` as an error names it: its type, and its ``repr`` when that says more than an address."""
    text = repr(value)
    if " object at 0x" in text or len(text) > 60:
        return f"an object of type {type(value).__name__}"
    return f"{text} (of type {type(value).__name__})"


class KStream(_Handle):
    """A stream of the topology (Kafka's ``KStream``)."""

    def filter(self, keep: Any, *, name: str | None = None) -> "KStream":
        """Keep the records for which ``keep(key, value)`` is true."""
        fn = functions.predicate(keep)
        return self._derive(self._add("filter", [(self.node, None)], STREAM, name, fn=fn))

    def filter_not(self, drop: Any, *, name: str | None = None) -> "KStream":
        """Keep the records for which ``drop(key, value)`` is false (Kafka's ``filterNot``: a ``KSTREAM-FILTER``
        node whose predicate is negated)."""
        fn = functions.predicate(drop)
        negated = functions.Function(lambda key, value: not fn(key, value), fn.spec, f"not ({fn.text})")
        return self._derive(self._add("filter", [(self.node, None)], STREAM, name, fn=negated, negated=True))

    def peek(self, action: Any = True, *, name: str | None = None) -> "KStream":
        """Call ``action(key, value)`` on each record and pass it on unchanged (Kafka's ``peek``)."""
        from_spec = custom.peek_action(action)
        return self._derive(self._add("peek", [(self.node, None)], STREAM, name, fn=from_spec))

    def split(self, *, name: str | None = None) -> "BranchedKStream":
        """Cut the stream in branches (Kafka's ``split()``, KIP-418, 2.8): ``.branch(predicate, name=...)`` for each,
        then ``.default_branch(name=...)`` or ``.no_default_branch()``, which return the branches by name, each
        ``<split name><branch name>`` (unnamed: its position from 1, the default ``0``). A record goes to the first
        branch whose predicate holds (:mod:`kjoin.topology.branching`)."""
        if not self.topology.semantics.split:
            raise TopologyError(
                f"split: Kafka {self.topology.semantics} has no split() (KIP-418, 2.8); choose semantics 2.8 or later, "
                "or the legacy branch(*predicates)"
            )
        return BranchedKStream(self, self._derive(self._add("split", [(self.node, None)], STREAM, name, branches=[])))

    def branch(self, *predicates: Any, name: str | None = None) -> list["KStream"]:
        """The legacy ``KStream.branch(Predicate...)``: one stream per predicate, a record in the first whose
        predicate holds (none: dropped). Deprecated in 2.8 and removed in Kafka 4.0 (KIP-418): use ``split()``."""
        if self.topology.semantics.legacy_branch_removed:
            raise TopologyError(
                f"branch: Kafka {self.topology.semantics} has no KStream.branch(Predicate...): KIP-418 deprecated it "
                "in 2.8 and Kafka 4.0 removed it; write split().branch(predicate, name=...) instead, or choose "
                "semantics before 4.0"
            )
        if not predicates:
            raise TopologyError("branch: give at least one predicate (key, value) -> bool")
        splitter = self._derive(self._add("split", [(self.node, None)], STREAM, name, branches=[], legacy=True))
        branches = []
        for index, keep in enumerate(predicates):
            # KStreamImpl.branch(Named, ...): a named split's children are <name>-predicate-<i>
            child_name = None if name is None else f"{name}-predicate-{index}"
            child = splitter._add("branch", [(splitter.node, None)], STREAM, child_name)
            splitter.node.params["branches"].append((functions.predicate(keep), child.name))
            branches.append(splitter._derive(child))
        return branches

    def process_values(self, processor: Any, *, store: str | None = None, name: str | None = None) -> "KStream":
        """Run ``processor(record, ctx)`` on each record (Kafka's ``processValues`` with a ``FixedKeyProcessor``,
        KIP-820): it forwards records with ``ctx.forward(value=...)``, never another key, and keeps what it needs in
        ``ctx.store`` (named ``store``). See :mod:`kjoin.topology.custom`."""
        return self._process("process_values", processor, store, name)

    def process(self, processor: Any, *, store: str | None = None, name: str | None = None) -> "KStream":
        """Run ``processor(record, ctx)`` on each record (Kafka's ``process`` with an ``api.Processor``, KIP-820):
        it may forward another key, so a join or an aggregate below reads it through a repartition topic."""
        return self._process("process", processor, store, name)

    def _process(self, op: str, processor: Any, store: str | None, name: str | None) -> "KStream":
        if not self.topology.semantics.process_values:
            raise TopologyError(
                f"{op}: Kafka {self.topology.semantics} has no process/processValues with the typed processor API "
                "(KIP-820, 3.3); choose semantics 3.3 or later"
            )
        fn = custom.processor(processor, op)
        if store is not None and (not isinstance(store, str) or not store):
            raise TopologyError(f"{op}: store: a store's name is non-empty text, got {store!r:.60}")
        taken = [n.name for n in self.topology.graph.nodes.values() if store and n.params.get("store") == store]
        if taken:
            raise TopologyError(
                f"{op}: store {store} is already the store of {taken[0]}; Kafka connects a store to the processors "
                "that name it, and kjoin gives each processor its own: name another"
            )
        node = self._add(op, [(self.node, None)], STREAM, name, fn=fn, store=store)
        if fn.spec is not None and store is None:  # the vocabulary's processors keep state: their store by name
            node.params["store"] = f"{node.name}-store"
        if op == "process_values":
            return self._derive(node)
        node.params["partitioner"] = None
        node.key_changed = True  # KStreamImpl.process: repartitionRequired, whatever the processor forwards
        return KStream(self.topology, node)

    def map_values(self, mapper: Any, *, name: str | None = None) -> "KStream":
        """Replace each value by ``mapper(value)``; the key stays (no repartition)."""
        fn = functions.value_mapper(mapper)
        return self._derive(self._add("map_values", [(self.node, None)], STREAM, name, fn=fn))

    def flat_map_values(self, mapper: Any, *, name: str | None = None) -> "KStream":
        """Replace each record by one record per value of ``mapper(value)`` (a list; none: the record is gone), the
        key kept (Kafka's ``flatMapValues``: no repartition). Kafka hands the mapper null values too."""
        fn = functions.flat_value_mapper(mapper)
        return self._derive(self._add("flat_map_values", [(self.node, None)], STREAM, name, fn=fn))

    def flat_map(self, mapper: Any, *, name: str | None = None, partitioner: Any = None) -> "KStream":
        """Replace each record by the records ``mapper(key, value) -> [(key, value), ...]`` (Kafka's ``flatMap``):
        a re-key, like ``map``, so a join or an aggregate below reads it through a repartition topic."""
        fn = self._keys(functions.flat_mapper(mapper), functions.text_pair_lists)
        node = self._add("flat_map", [(self.node, None)], STREAM, name, fn=fn)
        node.params["partitioner"] = functions.partitioner(partitioner)
        node.key_changed = True
        return KStream(self.topology, node)

    def select_key(self, selector: Any, *, name: str | None = None, partitioner: Any = None) -> "KStream":
        """Re-key each record to ``selector(key, value)``. A join that follows writes the stream to a
        repartition topic first; ``partitioner(key, partitions)`` replaces murmur2 there."""
        fn = self._keys(functions.key_selector(selector), functions.text_key)
        node = self._add("select_key", [(self.node, None)], STREAM, name, fn=fn)
        node.params["partitioner"] = functions.partitioner(partitioner)
        node.key_changed = True
        return KStream(self.topology, node)

    def map(self, mapper: Any, *, name: str | None = None, partitioner: Any = None) -> "KStream":
        """Replace each record by ``mapper(key, value) -> (new key, new value)``: a re-key, like ``select_key``."""
        if not callable(mapper):
            raise TopologyError(f"map: expected a Python function (key, value) -> (key, value), got {mapper!r:.60}")
        node = self._add(
            "map",
            [(self.node, None)],
            STREAM,
            name,
            fn=self._keys(functions.key_value_mapper(mapper), functions.text_pairs),
        )
        node.params["partitioner"] = functions.partitioner(partitioner)
        node.key_changed = True
        return KStream(self.topology, node)

    def merge(self, other: "KStream", *, name: str | None = None) -> "KStream":
        """One stream of this one's records and ``other``'s (Kafka's ``merge``), each as it comes. A stream merged
        with itself passes each record once: Kafka's graph keeps a node's parents as a set (``GraphNode``'s
        ``LinkedHashSet``), so the merge processor has one parent."""
        self._check_same(other, "merge")
        if not isinstance(other, KStream):
            raise TopologyError("merge: a stream merges with another stream (a table's changes: to_stream() first)")
        inputs = [(self.node, None)] if other.node is self.node else [(self.node, None), (other.node, None)]
        node = self._add("merge", inputs, STREAM, name)
        node.key_changed = self.node.key_changed or other.node.key_changed
        if node.key_changed:
            mine, theirs = self._rekey_partitioner(), other._rekey_partitioner()
            node.params["partitioner"] = mine or theirs
        return KStream(self.topology, node)

    def repartition(
        self,
        *,
        name: str | None = None,
        partitions: int | None = None,
        partitioner: Any = None,
        node: str | None = None,
    ) -> "KStream":
        """Write the stream to a repartition topic and read it back (Kafka's ``repartition``, 2.6+): a new
        sub-topology, ``partitions`` of its own (default: as its writers' sources), ``partitioner`` over the key.
        ``name`` is Kafka's ``Repartitioned.as`` (the topic ``<application.id>-<name>-repartition``); ``node`` names
        kjoin's node only, and Kafka names the topic with its counter (``KSTREAM-REPARTITION-<n>-repartition``)."""
        if not self.topology.semantics.stream_repartition:
            raise TopologyError(
                f"repartition: Kafka {self.topology.semantics} has no KStream.repartition (KIP-221, 2.6); choose "
                "semantics 2.6 or later, or write the stream through a topic of your own (through)"
            )
        if partitions is not None:
            _partitions(partitions, "repartition: partitions")
        kafka_name = _kafka_or_node_name("repartition", name, node, "Repartitioned.as")
        chosen = functions.partitioner(partitioner) or self._rekey_partitioner()
        if kafka_name is not None:  # Repartitioned.as: Kafka's topic is <application.id>-<name>-repartition
            self.topology.kafka_named_topics.add(f"{kafka_name}-repartition")
        label = node or kafka_name or self.topology.graph.new_name("repartition")
        source = _through_topic(self, f"{kafka_name or label}-repartition", partitions, chosen)
        source.params["repartition"] = {"name": label, "partitions": partitions, "partitioner": partitioner}
        if kafka_name is not None:
            source.params["repartition"]["as"] = kafka_name
        return KStream(self.topology, source)

    def through(
        self, topic: str, *, partitions: int | None = None, partitioner: Any = None, name: str | None = None
    ) -> "KStream":
        """Write the stream to the user topic ``topic`` and read it back (Kafka's ``through``, 2.6's deprecated
        ``to(topic)`` + ``builder.stream(topic)``): a new sub-topology reading ``topic``, whose records are placed by
        ``partitioner`` (default murmur2); a re-keyed stream needs no repartition topic after it."""
        _sink(self, topic, partitions, partitioner, name, through=True)
        written = self.topology.graph.topics[topic]  # read back as written: its partitions and partitioner
        return self.topology.stream(
            topic, partitions=written.partitions, partitioner=written.partitioner, name=f"{name or topic}-source"
        )

    def to_table(self, *, name: str | None = None, node: str | None = None) -> "KTable":
        """The stream read as a table (Kafka's ``toTable``, 2.5+): each record an update of its key; a re-keyed
        stream is repartitioned first, through a topic of the table's own (``<name>-repartition``: Kafka shares a
        stream's repartition topic between its joins only). ``name`` is Kafka's ``Named.as``, which names that
        topic; ``node`` names kjoin's node only (Kafka's topic: ``KSTREAM-TOTABLE-<n>-repartition``)."""
        if not self.topology.semantics.stream_to_table:
            raise TopologyError(
                f"to_table: Kafka {self.topology.semantics} has no KStream.toTable (KIP-523, 2.5); choose semantics "
                "2.5 or later, or read the topic as a table"
            )
        kafka_name = _kafka_or_node_name("to_table", name, node, "Named.as")
        label = node or kafka_name
        if not self.node.key_changed:
            return KTable(self.topology, self._add("to_table", [(self.node, None)], TABLE, label))
        label = label or self.topology.graph.new_name("to_table")
        topic = f"{kafka_name or label}-repartition"
        parent = self._repartition_topic(topic, kafka_named=kafka_name is not None)
        return KTable(self.topology, self._add("to_table", [(parent, None)], TABLE, label))

    def group_by_key(self, *, name: str | None = None) -> "KGroupedStream":
        """Group by the current key (Kafka's ``groupByKey``): a re-keyed stream is repartitioned when it is
        aggregated."""
        if name is not None:
            legal_name(name, "group_by_key: name (Grouped.as)")
        return KGroupedStream(self, name)

    def group_by(self, selector: Any, *, name: str | None = None, partitioner: Any = None) -> "KGroupedStream":
        """Group by ``selector(key, value)`` (Kafka's ``groupBy``): a re-key, so the aggregate reads the stream
        through a repartition topic (``<name>-repartition``, or named after the aggregate)."""
        if name is not None:
            legal_name(name, "group_by: name (Grouped.as)")
        fn = self._keys(functions.key_selector(selector), functions.text_key)
        if name is not None:
            legal_name(name, "group_by")
        node = self._add("group_by", [(self.node, None)], STREAM, None, fn=fn, grouped_name=name)
        node.params["partitioner"] = functions.partitioner(partitioner)
        node.key_changed = True
        return KGroupedStream(KStream(self.topology, node), name)

    def _derive(self, node: Node) -> "KStream":
        node.key_changed = self.node.key_changed
        if self.node.key_changed:
            node.params.setdefault("partitioner", self._rekey_partitioner())
        return KStream(self.topology, node)

    def _rekey_partitioner(self) -> Any:
        node = self.node
        while node.op in (
            "filter",
            "map_values",
            "flat_map_values",
            "stream-global",
            "peek",
            "process_values",
            "split",
            "branch",
        ):
            node = node.parents[0]
        return node.params.get("partitioner")

    def _aggregated(self, op_name: str | None, grouped_name: str | None, store: str | None = None) -> tuple[Node, str]:
        """The node an aggregate reads, and the aggregate's name. A changed key is repartitioned first, as
        Kafka's ``GroupedStreamAggregateBuilder`` does: through ``<grouped name>-repartition``, shared by every
        aggregate of the grouped stream, when the grouping is named (``Grouped.as``); else through a topic of
        each aggregate's own, named after its store (``<store>-repartition``). The aggregate's own name
        (``Named.as``) names its processor only: an unnamed store gets a generated name, and so does its topic
        (Kafka's ``KSTREAM-AGGREGATE-STATE-STORE-<n>-repartition``; kjoin's ``aggregate-<n>-repartition``)."""
        name = op_name or self.topology.graph.new_name("aggregate")
        if not self.node.key_changed:
            return self.node, name
        if grouped_name is None:
            unnamed = name if op_name is None else self.topology.graph.new_name("aggregate")
            return self._repartition_topic(f"{store or unnamed}-repartition", kafka_named=store is not None), name
        cached = self.node.params.setdefault("_grouped", {})
        if grouped_name in self.node.params.get("_cogrouped", ()):
            raise _named_grouping_twice(grouped_name)
        if grouped_name not in cached:
            cached[grouped_name] = self._repartition_topic(f"{grouped_name}-repartition", kafka_named=True)
        return cached[grouped_name], name

    def to(
        self, topic: str, *, partitions: int | None = None, partitioner: Any = None, name: str | None = None
    ) -> None:
        """Write the stream to ``topic`` (an output topic: the trace lists what reached it)."""
        _sink(self, topic, partitions, partitioner, name)

    # -- joins --------------------------------------------------------------------------------
    def join(self, other: "KStream | KTable", joiner: Any = None, **options: Any) -> "KStream":
        """An inner join with a table (stream-table) or, with ``window=``, a stream (stream-stream)."""
        return self._join(other, "inner", joiner, **_options("join", options, _STREAM_JOIN_OPTIONS))

    def left_join(self, other: "KStream | KTable", joiner: Any = None, **options: Any) -> "KStream":
        return self._join(other, "left", joiner, **_options("left_join", options, _STREAM_JOIN_OPTIONS))

    def outer_join(self, other: "KStream", joiner: Any = None, **options: Any) -> "KStream":
        if isinstance(other, KTable):
            raise TopologyError("outer_join: a stream joins a table with join or left_join only (Kafka has no outer)")
        return self._join(other, "outer", joiner, **_options("outer_join", options, _STREAM_JOIN_OPTIONS))

    def _join(
        self,
        other: Any,
        variant: str,
        joiner: Any,
        *,
        window: JoinWindows | Mapping[str, Any] | None = None,
        grace_ms: int | None = None,
        name: str | None = None,
        key_selector: Any = None,
        store: str | None = None,
        node: str | None = None,
    ) -> "KStream":
        self._check_same(other, f"{variant} join")
        kafka_name = _kafka_or_node_name(f"{variant} join", name, node, "Joined.as, StreamJoined.withName")
        name = node or kafka_name
        store = store_name(store, f"{variant} join")
        if store is not None and not isinstance(other, KStream):
            raise TopologyError(
                f"{variant} join: store: only a stream-stream join keeps stores of its own "
                "(StreamJoined.withStoreName); a stream's join with a table reads the table's store: name that one"
            )
        fn = functions.joiner(joiner)
        _check_keyed_joiner(self.topology, fn, isinstance(other, GlobalKTable))
        if isinstance(other, GlobalKTable):
            if variant == "outer" or window is not None or grace_ms is not None:
                raise TopologyError("a stream joins a global table with join or left_join, no window and no grace")
            selector = (
                None if key_selector is None else self._keys(functions.key_selector(key_selector), functions.text_key)
            )
            parents = [(self.node, Side.LEFT), (other.node, Side.RIGHT)]  # no repartition: every task has the table
            node = self._add("stream-global", parents, STREAM, name, variant=variant, joiner=fn, key_selector=selector)
            # the join keeps the stream's key: a changed key still needs its repartition topic below (Kafka passes
            # repartitionRequired on through KStreamImpl.globalTableJoin)
            return self._derive(node)
        if key_selector is not None:
            raise TopologyError("key_selector: only a join with a global table selects its lookup key")
        stream_stream = not isinstance(other, KTable)
        # Kafka names the repartition topic after the join (a stream-stream join's sides: "<name>-left", "-right"),
        # or without a name after the stream (its processor's name, KSTREAM-KEY-SELECT-<n>: kjoin's node name)
        left = self._repartitioned(f"{kafka_name}-left" if kafka_name and stream_stream else kafka_name)
        if isinstance(other, KTable):
            if window is not None:
                raise TopologyError("a stream-table join has no window; leave window out")
            right = other.node
            _check_versioned(self.topology, right)
            _check_windowed_keys(f"{variant} join", self.node, right, False)
            if grace_ms is not None:
                if not self.topology.semantics.stream_table_grace:
                    raise TopologyError(
                        f"grace_ms: Kafka {self.topology.semantics} has no stream-table grace period (KIP-923, 3.6); "
                        "choose semantics 3.6 or later"
                    )
                _milliseconds(grace_ms, "grace_ms")
                retention = right.params.get("history_retention_ms")
                if retention is None:
                    raise TopologyError(
                        f"grace_ms: a stream-table join with a grace period needs a versioned table, and {right.name} "
                        "is not one (Kafka: IllegalArgumentException); give the table history_retention_ms"
                    )
                if grace_ms > retention:
                    raise TopologyError(
                        f"grace_ms: {grace_ms} is more than table {right.name}'s history_retention_ms {retention}; "
                        "Kafka refuses it (IllegalArgumentException: History retention must be at least grace "
                        "period): lower the grace or keep more history"
                    )
            node = self._add(
                "stream-table", [(left, Side.LEFT)], STREAM, name, variant=variant, joiner=fn, table=right,
                grace_ms=grace_ms,
            )  # fmt: skip
            node.parents = (left, right)
            return KStream(self.topology, node)
        if grace_ms is not None:
            raise TopologyError(
                "grace_ms belongs to a stream-table join; a stream-stream join's grace is in its window"
            )
        if window is None:
            raise TopologyError(
                "a stream-stream join needs a window: window={'before_ms': 10, 'after_ms': 10, 'grace_ms': 0} "
                "or a kjoin.JoinWindows"
            )
        windows = _windows(window)
        if store is not None and not self.topology.semantics.stream_joined:
            raise TopologyError(
                f"{variant} join: store: Kafka {self.topology.semantics} has no StreamJoined.withStoreName (KIP-479, "
                "2.4): it names a stream-stream join's stores itself; leave store out or choose semantics 2.4 or later"
            )
        right = other._repartitioned(f"{kafka_name}-right" if kafka_name else None)  # a self-join: the same again
        node = self._add(
            "stream-stream", [(left, Side.LEFT), (right, Side.RIGHT)], STREAM, name, variant=variant, joiner=fn,
            window=windows,
        )  # fmt: skip
        if store is not None:
            node.params["store"] = store
        return KStream(self.topology, node)

    def _repartitioned(self, join_name: str | None) -> Node:
        """This stream as a join reads it: through a repartition topic if its key changed. ``join_name``: the
        name the application gave the join, which names the topic (``<join_name>-repartition``); without one the
        topic is named after the stream, and cached, as Kafka reuses it for the stream's other unnamed joins
        (``KStreamImpl.repartitionForJoin``: a new topic for each name the application gives)."""
        if not self.node.key_changed:
            return self.node
        if join_name is not None and "repartition_topic" not in self.node.params:
            return self._repartition_topic(f"{join_name}-repartition", kafka_named=True)
        cached = self.node.params.get("_repartitioned")
        if cached is not None:
            if not self.topology.semantics.rekeyed_stream_joined_twice:
                raise TopologyError(
                    f"{self.node.name}: this re-keyed stream is joined a second time; Kafka {self.topology.semantics} "
                    "refuses that (TopologyException: Topic ...-repartition has already been registered by another "
                    "source) until 2.5.1 reuses the repartition topic (KAFKA-9298): re-key it once per join, or "
                    "choose semantics 2.6 or later"
                )
            return cached
        # a topology read from describe() keeps the name Kafka gave the topic (kjoin.topology.describe)
        topic_name = self.node.params.get("repartition_topic") or f"{self.node.name}-repartition"
        source = self._repartition_topic(topic_name, kafka_named="repartition_topic" in self.node.params)
        self.node.params["_repartitioned"] = source
        return source

    def _repartition_topic(self, topic_name: str, kafka_named: bool = False) -> Node:
        """Write this stream to a new repartition topic and read it back: the source node. ``kafka_named``: Kafka
        names the topic as kjoin does (the application named its grouping or store, or describe() gave it)."""
        if kafka_named:
            self.topology.kafka_named_topics.add(topic_name)
        partitioner = self.node.params.get("partitioner")
        self.topology.graph.add_topic(Topic(topic_name, None, partitioner, internal=True))
        sink = self._add(
            "repartition-sink", [(self.node, None)], STREAM, f"{topic_name}-sink", derived=True, topic=topic_name
        )
        if self.node.params.get("carries_old"):
            sink.params["carries_old"] = True
        source = self._add("repartition-source", (), STREAM, f"{topic_name}-source", derived=True, topic=topic_name)
        sink.params["source"] = source
        return source


class BranchedKStream:
    """A stream being cut in branches (Kafka's ``BranchedKStream``, from ``KStream.split``)."""

    def __init__(self, source: KStream, splitter: KStream) -> None:
        self._source = source
        self._splitter = splitter
        self._branches: dict[str, KStream] = {}
        self._done = False

    def branch(self, predicate: Any, *, name: str | None = None) -> "BranchedKStream":
        """A branch for the records ``predicate(key, value)`` holds for (and no earlier branch took)."""
        fn = functions.predicate(predicate)
        branches = self._splitter.node.params["branches"]
        self._add_branch(name, len(branches) + 1)
        branches.append((fn, self._names[-1]))
        return self

    def default_branch(self, *, name: str | None = None) -> dict[str, KStream]:
        """The branch for the records no predicate holds for; the branches by name."""
        self._add_branch(name, 0)
        self._splitter.node.params["default"] = self._names[-1]
        return self.no_default_branch()

    def no_default_branch(self) -> dict[str, KStream]:
        """The branches by name; a record no predicate holds for is dropped."""
        self._done = True
        return dict(self._branches)

    @property
    def _names(self) -> list[str]:
        return list(self._branches)

    def _add_branch(self, name: str | None, index: int) -> KStream:
        if self._done:
            raise TopologyError("split: the branches are made already (default_branch or no_default_branch ends them)")
        if name is not None and (not isinstance(name, str) or not name):
            raise TopologyError(f"split: a branch's name is non-empty text, got {name!r:.60}")
        child_name = f"{self._splitter.name}{index if name is None else name}"
        child = self._splitter._add("branch", [(self._splitter.node, None)], STREAM, child_name)
        stream = self._splitter._derive(child)
        self._branches[child_name] = stream
        return stream


class KTable(_Handle):
    """A table of the topology (Kafka's ``KTable``)."""

    def filter(
        self, keep: Any, *, name: str | None = None, materialized: bool = False, store: str | None = None
    ) -> "KTable":
        """The rows for which ``keep(key, value)`` is true (Kafka's ``KTable.filter``, ``KTableFilter``). A row that
        fails it becomes a tombstone downstream: the key leaves the filtered table, so Kafka forwards
        ``Change(null, ..)`` even for a key it never held, unless the table sends old values (a table join's outer
        side or a group-by reads it) and the old row failed too. ``materialized`` (or ``store``, its name): kept in a
        store of its own
        (``Materialized.as``) that a join reads; else a join reads the parent and filters on the fly."""
        return self._view("table-filter", functions.predicate(keep), name, materialized, store)

    def filter_not(
        self, drop: Any, *, name: str | None = None, materialized: bool = False, store: str | None = None
    ) -> "KTable":
        """The rows for which ``drop(key, value)`` is false (Kafka's ``KTable.filterNot``: ``KTableFilter`` with the
        predicate negated), each failing row a tombstone downstream as with :meth:`filter`."""
        fn = functions.predicate(drop)
        negated = functions.Function(lambda key, value: not fn(key, value), fn.spec, f"not ({fn.text})")
        table = self._view("table-filter", negated, name, materialized, store)
        table.node.params["negated"] = True
        return table

    def map_values(
        self, mapper: Any, *, name: str | None = None, materialized: bool = False, store: str | None = None
    ) -> "KTable":
        """Each row's value replaced by ``mapper(value)`` (Kafka's ``KTable.mapValues``, ``KTableMapValues``); a
        deleted row stays deleted (the mapper never sees null), and the old value is mapped too when the table sends
        old values. ``materialized``: kept in a store of its own; else a join maps the parent's row when it looks."""
        return self._view("table-map-values", functions.value_mapper(mapper), name, materialized, store)

    def _view(self, op: str, fn: Any, name: str | None, materialized: bool, store: str | None = None) -> "KTable":
        if not isinstance(materialized, bool):
            raise TopologyError(f"{op}: materialized is true or false, got {materialized!r}")
        store = store_name(store, op.removeprefix("table-").replace("-", "_"))
        materialized = materialized or store is not None  # a named store is a store of its own
        node = self.node
        while node.op in VIEW_OPS:
            node = node.parents[0]
        if node.params.get("history_retention_ms") is not None:
            raise TopologyError(
                f"{op.removeprefix('table-')}: {node.name} is a versioned table; kjoin does not model a versioned "
                "table's filter or mapValues yet (KIP-914 changes when they forward), so leave history_retention_ms "
                "out"
            )
        # KTableFilter asks its parent for old values when it is built, without forcing a store on it (KAFKA-10077):
        # the answer depends on the topology as it stands, so it is taken now
        parent_keeps_store = self.topology.graph.keeps_store(self.node) if op == "table-filter" else None
        if op == "table-filter" and self.topology.semantics.table_filter_skips_absent_tombstones:
            _ask_join_for_old_values(self.node)
        view = self._add(op, [(self.node, None)], TABLE, name, fn=fn, materialized=materialized)
        if store is not None:
            view.params["store"] = store
        if parent_keeps_store is not None:
            view.params["parent_keeps_store"] = parent_keeps_store
        return KTable(self.topology, view)

    def join(self, other: "KTable", joiner: Any = None, *, foreign_key: Any = None, **options: Any) -> "KTable":
        """A table-table join on the primary key, or with ``foreign_key`` (a field path into this
        table's values) a foreign-key join (KIP-213)."""
        return self._join(other, "inner", joiner, foreign_key, **_options("join", options, _TABLE_JOIN_OPTIONS))

    def left_join(self, other: "KTable", joiner: Any = None, *, foreign_key: Any = None, **options: Any) -> "KTable":
        return self._join(other, "left", joiner, foreign_key, **_options("left_join", options, _TABLE_JOIN_OPTIONS))

    def outer_join(self, other: "KTable", joiner: Any = None, **options: Any) -> "KTable":
        return self._join(other, "outer", joiner, None, **_options("outer_join", options, _TABLE_JOIN_OPTIONS))

    def _join(
        self,
        other: Any,
        variant: str,
        joiner: Any,
        foreign_key: Any,
        *,
        name: str | None = None,
        partitioner: Any = None,
        other_partitioner: Any = None,
        store: str | None = None,
        node: str | None = None,
    ) -> "KTable":
        self._check_same(other, f"{variant} join")
        kafka_name = _kafka_or_node_name(f"{variant} join", name, node, "Named.as, TableJoined.as")
        name = node or kafka_name
        store = store_name(store, f"{variant} join")
        if not isinstance(other, KTable):
            raise TopologyError(f"{variant} join: a table joins another table; a stream joins a table, not the reverse")
        fn = functions.joiner(joiner)
        if fn.keys:
            raise TopologyError(
                f"{variant} join: Kafka's KTable joins take a ValueJoiner (left, right), never the key "
                "(ValueJoinerWithKey is a KStream join's, KIP-149): give the joiner two parameters"
            )
        _check_versioned(self.topology, self.node, other.node)
        _check_windowed_keys(f"{variant} join", self.node, other.node, foreign_key is not None)
        parents = [(self.node, Side.LEFT), (other.node, Side.RIGHT)]
        if foreign_key is None:
            if partitioner is not None or other_partitioner is not None:
                raise TopologyError("partitioner/other_partitioner: only a foreign-key join has internal topics")
            node = self._add("table-table", parents, TABLE, name, variant=variant, joiner=fn)
            if store is not None:
                node.params["store"] = store
            return KTable(self.topology, node)
        if callable(foreign_key) or isinstance(foreign_key, Mapping):
            foreign_key = functions.foreign_key_extractor(foreign_key)
            if foreign_key.keys and not self.topology.semantics.fk_extractor_with_key:
                raise TopologyError(
                    f"foreign_key: an extractor (key, value) is Kafka's BiFunction extractor, which Kafka "
                    f"{self.topology.semantics} does not have (KIP-1104, 4.0); give it one parameter (value) or "
                    "choose semantics 4.0 or later"
                )
        elif not isinstance(foreign_key, str) or not foreign_key:
            raise TopologyError(
                "foreign_key: a field path into the left values (fk, a.b), {key_or_field: path} or a Python function "
                f"(left value) or (left key, left value) -> foreign key, got {foreign_key!r:.60}"
            )
        if variant == "outer":
            raise TopologyError("a foreign-key join is inner or left")
        if not self.topology.semantics.foreign_key_joins:
            raise TopologyError(
                f"foreign_key: Kafka {self.topology.semantics} has no foreign-key joins (KIP-213, 2.4); choose "
                "semantics 2.4 or later"
            )
        if (partitioner is not None or other_partitioner is not None) and not (
            self.topology.semantics.foreign_key_partitioners
        ):
            raise TopologyError(
                f"partitioner/other_partitioner: Kafka {self.topology.semantics} has no TableJoined (KIP-775, 3.1): "
                "its foreign-key join takes no partitioner; choose semantics 3.1 or later, or leave them out"
            )
        name = name or self.topology.graph.new_name("fk-join")
        graph = self.topology.graph
        subscription = f"{name}-subscription-registration-topic"
        response = f"{name}-subscription-response-topic"
        # TableJoined.with(partitioner, otherPartitioner): the left table's partitioner routes responses, the
        # right table's (other) routes subscriptions by foreign key.
        graph.add_topic(Topic(subscription, None, functions.partitioner(other_partitioner), internal=True))
        graph.add_topic(Topic(response, None, functions.partitioner(partitioner), internal=True))
        # KTableImpl.doJoinOnForeignKey: enableSendingOldValues(true) on both tables. This one's subscriptions
        # follow a table-table join's Change(new, old), whose old value is the joiner on the old input and the other
        # side's current row (a self-join's second side: joiner(null, old)), not the row the foreign-key join saw.
        # A table-table join asked forces its own inputs too (KTableKTableAbstractJoin.enableSendingOldValues): a
        # filter among them then forwards no tombstone for a row it never held, on the foreign-key side as well.
        for table in (self.node, other.node):
            if table.op == "table-table":
                table.params["sends_old_values"] = True
        node = self._add(
            "fk", parents, TABLE, name, variant=variant, joiner=fn, foreign_key=foreign_key,
            subscription_topic=subscription, response_topic=response,
        )  # fmt: skip
        if store is not None:
            node.params["store"] = store
        return KTable(self.topology, node)

    def group_by(self, selector: Any, *, name: str | None = None, partitioner: Any = None) -> "KGroupedTable":
        """Group the table's rows by ``selector(key, value) -> (new key, new value)`` (Kafka's ``KTable.groupBy``;
        ``{field: path}``: that field's text, the value kept). Its aggregate reads ``Change(new, old)`` through a
        repartition topic and subtracts the old value before adding the new one."""
        if self.node.params.get("history_retention_ms") is not None and not self.topology.semantics.versioned_joins:
            raise TopologyError("group_by: a versioned table is grouped from Kafka 3.5 (KIP-914)")
        if name is not None:
            legal_name(name, "group_by: name (Grouped.as)")
        fn = self._keys(functions.table_group_by(selector), functions.text_pairs)
        if name is not None:
            legal_name(name, "group_by")
        self.node.params["sends_old_values"] = True  # KTableRepartitionMap needs Change(new, old)
        node = self._add("table-group-by", [(self.node, None)], STREAM, None, fn=fn, grouped_name=name)
        node.params["partitioner"] = functions.partitioner(partitioner)
        node.params["carries_old"] = True
        node.key_changed = True
        return KGroupedTable(KStream(self.topology, node), name)

    def to_stream(self, key_mapper: Any = None, *, name: str | None = None) -> KStream:
        """The table's changes as a stream (Kafka's ``toStream``); with ``key_mapper(key, value)`` each change
        re-keyed, as Kafka's ``toStream(KeyValueMapper)`` does: ``toStream().selectKey(mapper)``, two nodes."""
        stream = KStream(self.topology, self._add("to_stream", [(self.node, None)], STREAM, name))
        if key_mapper is None:
            return stream
        return stream.select_key(key_mapper)

    def suppress(
        self,
        until: str = "window_closes",
        *,
        time_limit_ms: int | None = None,
        max_records: int | None = None,
        max_bytes: int | None = None,
        when_full: str | None = None,
        name: str | None = None,
    ) -> "KTable":
        """The table's updates held back (Kafka's ``suppress``, KIP-328, 2.1+): ``until="window_closes"``
        (``Suppressed.untilWindowCloses``: one final result per window of a windowed table) or ``"time_limit"`` with
        ``time_limit_ms`` (``untilTimeLimit``: each key's newest update, ``time_limit_ms`` after its first);
        ``max_records`` bounds the buffer, ``when_full`` says what a full one does (``emit_early``, time limit
        only, or ``shut_down``). Its changes are read with ``to_stream()``, ``to`` or ``group_by``; it is read as a
        table too, by a stream's, a table-table or (a time limit) a foreign-key join and a filter or map_values (a
        window-close one by windowed keys: a windowed table's join, a stream of windowed keys)
        (:mod:`kjoin.topology.suppress`)."""
        if not self.topology.semantics.suppress_until_window_closes:
            raise TopologyError(f"suppress: Kafka {self.topology.semantics} has no suppress (KIP-328, 2.1)")
        options = {"until": until, "time_limit_ms": time_limit_ms, "max_records": max_records}
        options.update(max_bytes=max_bytes, when_full=when_full)
        settings = suppressed(options, "suppress")
        if self.node.params.get("history_retention_ms") is not None:
            raise TopologyError(
                f"suppress: {self.node.name} is a versioned table, and Kafka suppresses non-versioned tables only "
                "(TopologyException: suppress() is only supported for non-versioned KTables); leave "
                "history_retention_ms out, or suppress a table derived from it"
            )
        windows = None
        if settings.until == "window_closes":
            aggregate = windowed_aggregate(self.node)
            if aggregate is None and windowed_table(self.node):  # Kafka's grace search walks every parent
                raise TopologyError(
                    f"suppress: {self.node.name} is keyed by window, but through a foreign-key join, whose result "
                    "also descends from its right table, which has no window (Kafka: TopologyException: Window "
                    "close time is only defined for windowed computations); suppress the windowed table before the "
                    "join, or choose until='time_limit'"
                )
            if aggregate is None:
                raise TopologyError(
                    f"suppress: {self.node.name} is not a windowed table, and untilWindowCloses waits for a window to "
                    "close; suppress a windowed aggregate (windowed_by(...).count()), or choose until='time_limit'"
                )
            windows = aggregate.params["windows"]
        # KTableSuppressProcessorSupplier: parent.enableSendingOldValues(true), for the buffer's prior values; a
        # filter above then forwards no tombstone for a key it never held (KAFKA-10077)
        self.node.params["sends_old_values"] = True
        if settings.bounded and settings.when_full == "shut_down" and self.topology.exception_handling.continues:
            raise TopologyError(
                "suppress: a full buffer that shuts down throws in the suppression after it has buffered the record "
                "and forwarded its evictions, and the continue handler (3.9+) then goes on with the buffer over its "
                "bound, which kjoin does not model; choose when_full='emit_early' (untilTimeLimit), leave the buffer "
                "unbounded, or the fail handler"
            )
        if settings.max_bytes is not None:
            _check_topic_names_known(self.topology, self.node)
        session_keys = windowed_kind(self.node) == "session"  # the buffer serializes a session key with its end
        node = self._add(
            "suppress", [(self.node, None)], TABLE, name, suppressed=settings, windows=windows,
            session_keys=session_keys,
        )  # fmt: skip
        return KTable(self.topology, node)

    def to(
        self, topic: str, *, partitions: int | None = None, partitioner: Any = None, name: str | None = None
    ) -> None:
        """``to_stream().to(topic)``."""
        _sink(self.to_stream(), topic, partitions, partitioner, name)


def _check_keyed_joiner(topology: Topology, fn: Any, global_join: bool) -> None:
    """A stream's joiner that sees the key: ``(key, left, right)`` from Kafka 3.0 (KIP-149); ``(stream_key,
    mapped_key, left, right)`` for a global-table join from 4.4 (KIP-1340)."""
    semantics = topology.semantics
    if fn.keys == 1 and not semantics.value_joiner_with_key:
        raise TopologyError(
            f"joiner: a joiner (key, left, right) is Kafka's ValueJoinerWithKey, which Kafka {semantics} does not "
            "have (KIP-149, 3.0); give it two parameters (left, right) or choose semantics 3.0 or later"
        )
    if fn.keys == 2 and not global_join:
        raise TopologyError(
            "joiner: a joiner (stream_key, mapped_key, left, right) belongs to a join with a global table "
            "(ValueJoinerWithStreamAndMappedKey, KIP-1340); this join's joiner takes (left, right) or (key, left, "
            "right)"
        )
    if fn.keys == 2 and not semantics.global_joiner_with_both_keys:
        raise TopologyError(
            f"joiner: a joiner (stream_key, mapped_key, left, right) is Kafka's ValueJoinerWithStreamAndMappedKey, "
            f"which Kafka {semantics} does not have (KIP-1340, 4.4); choose semantics 4.4"
        )


def _kafka_or_node_name(op: str, name: str | None, node: str | None, kafka: str) -> str | None:
    """The name the application gives Kafka (``name``: ``kafka``, which Kafka names the internal topics after), or
    ``None``; ``node`` is kjoin's name for the node only (its label in traces and ``describe()``: without ``name``,
    Kafka names those topics with its counter and kjoin after the node). Both are Kafka's legal names, as kjoin names
    topics after either."""
    if node is not None:
        legal_name(node, f"{op}: node")
    return None if name is None else legal_name(name, f"{op}: name ({kafka})")


def _check_topic_names_known(topology: Topology, table: Node) -> None:
    """A ``max_bytes`` suppression counts, per buffered entry, the name of the topic its record was read from
    (:mod:`kjoin.topology.suppress`): refused when a record can reach it from an internal topic whose name Kafka
    makes with its counter, which kjoin does not reproduce."""
    seen, todo = set(), [table]
    while todo:
        node = todo.pop()
        if node.name in seen:
            continue
        seen.add(node.name)
        unknown = None
        if node.op == "fk":
            unknown = "a foreign-key join's response topic (KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-<n>-topic)"
        elif node.op == "repartition-source" and node.topic not in topology.kafka_named_topics:
            unknown = f"the repartition topic {node.topic}, which Kafka names with its counter (KSTREAM-...-<n>)"
        if unknown is not None:
            raise TopologyError(
                f"suppress: max_bytes counts the name of the topic each buffered record was read from, and records "
                f"reach {table.name} from {unknown}, a name kjoin does not reproduce; name the topic: the grouping "
                "(group_by(..., name=...), Grouped.as), the repartition (repartition(name=...), Repartitioned.as; "
                "a document's as:), the join (Joined.as) or the store, or bound the buffer with max_records"
            )
        todo.extend(node.parents)
    return None


def _check_windowed_keys(op: str, left: Node, right: Node, foreign_key: bool) -> None:
    """A windowed table joins a windowed table by ``Windowed<K>`` (Kafka's windowed value getters); a windowed and a
    plain side have keys of two types, which Kafka's serdes would fail on at run time: kjoin's error, naming both."""
    left_windowed, right_windowed = windowed_table(left), windowed_table(right)
    if foreign_key and right_windowed:  # judged: tests/test_topology_suppressed_fk.py
        raise TopologyError(
            f"{op} of {left.name} and {right.name}: a foreign-key join of a windowed table: {right.name} is keyed by "
            "window (Windowed<K>) and a foreign key is no window, so Kafka builds it but its first subscription "
            "fails (ClassCastException: the subscription topic's WindowedStreamPartitioner reads the foreign key as "
            f"a Windowed key); join a table of plain keys: {right.name}'s to_stream(), "
            "select_key({window_key: true}) and to_table()"
        )
    if left_windowed != right_windowed and not foreign_key:
        windowed, plain = (left, right) if left_windowed else (right, left)
        raise TopologyError(
            f"{op} of {left.name} and {right.name}: {windowed.name} is keyed by window ([key@start/end], Kafka's "
            f"Windowed<K>) and {plain.name} by plain keys, so no key of one is a key of the other; join two windowed "
            "tables, or take the windowed one's changes as a stream and map each key back to its plain key first"
        )


def _refuse_windowed_foreign_key_routing(graph: Graph, semantics: Semantics) -> None:
    """Before 3.3 a foreign-key join's response goes to the partition of its windowed primary key's bytes, not to the
    task of the row (``Semantics.fk_responses_to_primary_partition``, KAFKA-13769): refused on several partitions."""
    if semantics.fk_responses_to_primary_partition:
        return
    for node in graph.nodes.values():
        left = node.parents[0] if node.op == "fk" else None
        if left is None or not windowed_table(left):
            continue
        partitions = graph.topics[node.params["response_topic"]].partitions
        if partitions is not None and partitions > 1:
            raise TopologyError(
                f"{node.name}: a foreign-key join of the windowed table {left.name} on {partitions} partitions: "
                f"before Kafka 3.3 (KAFKA-13769; this is {semantics}) a response goes to the partition of its primary "
                "key serialized as Windowed<K> (the key, then the window), not to the task that holds the window's "
                "row, which kjoin does not model; run it on one partition, or on Kafka 3.3 or later"
            )


def _ask_join_for_old_values(table: Node) -> None:
    """A filter asks its parent for old values when it is built (``KTableFilter``: ``parent.enableSendingOldValues(
    false)``, from 2.7: KAFKA-10077); a view without a store passes the question up, and a table-table join always
    says yes and forces both of its inputs to send old values (``KTableKTableJoinMerger``: "Table-table joins require
    upstream materialization"): a filter among those inputs then forwards no tombstone for a row it never held."""
    node = table
    while node.op in VIEW_OPS and not node.params["materialized"]:
        node = node.parents[0]
    if node.op == "table-table":
        node.params["sends_old_values"] = True


def _check_versioned(topology: Topology, *tables: Node) -> None:
    """A join of a versioned table needs KIP-914's versioned joins (3.5)."""
    for table in tables:
        if table.params.get("history_retention_ms") is not None and not topology.semantics.versioned_joins:
            raise TopologyError(
                f"table {table.name}: Kafka {topology.semantics} joins no versioned table (KIP-914, 3.5); choose "
                "semantics 3.5 or later, or leave history_retention_ms out"
            )


def _sink(
    stream: KStream, topic: str, partitions: int | None, partitioner: Any, name: str | None, through: bool = False
) -> None:
    topology = stream.topology
    legal_topic(topic, "through" if through else "to")
    if topic in topology.graph.sources():
        raise TopologyError(
            f"to({topic}): the topology also reads {topic}; write to a topic and read it back with "
            f"through({topic!r}) (a topic is read by one source node)"
        )
    if through and any(node.op == "to" and node.topic == topic for node in topology.graph.nodes.values()):
        raise TopologyError(f"through({topic!r}): the topology writes {topic} elsewhere too; through a topic once")
    count = topology.partitions if partitions is None else _partitions(partitions, f"to({topic}): partitions")
    known = topology.graph.topics.get(topic)
    if known is None or known.partitions != count or known.partitioner is not None or partitioner is not None:
        topology.graph.add_topic(Topic(topic, count, functions.partitioner(partitioner)))
    stream._add("to", [(stream.node, None)], STREAM, name, topic=topic)


def _windows(window: Any) -> JoinWindows:
    """A stream-stream join's window, from a kjoin.JoinWindows or a mapping, as Kafka's ``JoinWindows`` takes it."""
    windows = _window_fields(window)
    problem = join_window_span_problem(windows.before_ms, windows.after_ms)
    if problem:
        raise TopologyError(f"window: {problem}")
    return windows


def _window_fields(window: Any) -> JoinWindows:
    if isinstance(window, JoinWindows):
        return _long_fields(window, "window")
    if not isinstance(window, Mapping):
        raise TopologyError(
            f"window: expected {{before_ms, after_ms, grace_ms}} or a kjoin.JoinWindows, got {window!r:.60}"
        )
    unknown = sorted(str(name) for name in set(window) - {"before_ms", "after_ms", "grace_ms"})
    if unknown:
        raise TopologyError(
            f"window: unknown field {unknown[0]}{did_you_mean(unknown[0], ('before_ms', 'after_ms', 'grace_ms'))}; "
            "the fields are before_ms, after_ms, grace_ms"
        )
    values = {}
    for field in ("before_ms", "after_ms", "grace_ms"):
        value = window.get(field)
        if field != "grace_ms" and value is None:
            raise TopologyError(f"window.{field}: required (milliseconds)")
        if value is not None:
            _milliseconds(value, f"window.{field}")
        values[field] = value
    return JoinWindows(values["before_ms"], values["after_ms"], values["grace_ms"])


class GlobalKTable(_Handle):
    """A global table (Kafka's ``GlobalKTable``): a stream joins it with ``join``/``left_join`` and a
    ``key_selector(key, value)`` (default: the stream's key)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise NoSuchOperation(
            f"{name}: a global table ({self.node.name}) is only looked up: a stream joins it "
            "(stream.join(global_table, key_selector=...)); it has no operations of its own"
        )


def _through_topic(stream: KStream, topic_name: str, partitions: int | None, partitioner: Any) -> Node:
    graph = stream.topology.graph
    graph.add_topic(Topic(topic_name, partitions, partitioner, internal=True))
    sink = stream._add(
        "repartition-sink", [(stream.node, None)], STREAM, f"{topic_name}-sink", derived=True, topic=topic_name
    )
    source = stream._add("repartition-source", (), STREAM, f"{topic_name}-source", derived=True, topic=topic_name)
    sink.params["source"] = source
    return source


class KGroupedStream:
    """A grouped stream (Kafka's ``KGroupedStream``): ``count``, ``reduce``, ``aggregate``, ``windowed_by``."""

    grouped = True
    """What :mod:`kjoin.topology.describe` asks of a handle (it cannot import this module: this one imports it)."""

    def __init__(
        self, stream: KStream, name: str | None, windows: TimeWindows | None = None, emit: str = "on_window_update"
    ) -> None:
        self.stream = stream
        self.name = None if name is None else legal_name(name, "grouped")
        self.windows = windows
        self.emit = emit

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise NoSuchOperation(
            f"{name}: a grouped stream or table has no {name}; aggregate it first (count, reduce, aggregate"
            f"{', windowed_by' if type(self) is KGroupedStream else ''}), then use the table that makes"
        )

    def windowed_by(self, windows: Any) -> "TimeWindowedKStream":
        """Aggregate in windows: tumbling or hopping ``{size_ms, advance_ms, grace_ms}``, session
        ``{inactivity_gap_ms, grace_ms}``, sliding ``{time_difference_ms, grace_ms}`` (or kjoin's window objects);
        the result is keyed by ``[key@start/end]`` (Kafka's ``Windowed``)."""
        return TimeWindowedKStream(self.stream, self.name, _time_windows(windows, self.stream.topology.semantics))

    def cogroup(self, aggregator: Any) -> "CogroupedKStream":
        """Start a cogroup (Kafka's ``cogroup``, KIP-150, 2.5): this grouped stream's records are aggregated by
        ``aggregator(key, value, aggregate)`` (or ``"concat"``: ``agg+value``) into a table that other grouped
        streams join with ``.cogroup(other, aggregator)``; ``.aggregate(initializer)`` makes it."""
        if type(self) is not KGroupedStream:
            what = "a grouped table" if isinstance(self, KGroupedTable) else "a windowed grouped stream"
            raise TopologyError(f"cogroup: {what} has no cogroup; cogroup grouped streams, then window the cogroup")
        if not self.stream.topology.semantics.cogroup:
            raise TopologyError(f"cogroup: Kafka {self.stream.topology.semantics} has no cogroup (KIP-150, 2.5)")
        return CogroupedKStream(self.stream.topology, [(self, _cogroup_aggregator(aggregator))])

    def count(self, *, name: str | None = None, store: str | None = None) -> KTable:
        """How many records with a value each group has had (``count()``). ``store``, here and in ``reduce`` and
        ``aggregate``: the store's name (``Materialized.as``), which names the repartition topic of a re-keyed
        stream whose grouping has no name (``<store>-repartition``)."""
        return self._aggregate(functions.aggregation("count"), name, ("count", True), store)

    def reduce(self, adder: Any, *, name: str | None = None, store: str | None = None) -> KTable:
        """``adder(aggregate, value)``; the first value is the aggregate (``reduce``). ``"concat"``: ``agg+value``."""
        return self._aggregate(functions.aggregation("reduce", adder), name, ("reduce", _spec(adder)), store)

    def aggregate(
        self, initializer: Any, adder: Any = None, *, name: str | None = None, store: str | None = None
    ) -> KTable:
        """``initializer()``, then ``adder(key, value, aggregate)`` (``aggregate``); ``initializer="concat"``:
        ``""`` then ``agg+value``."""
        spec = "concat" if initializer == "concat" else (initializer, adder)
        doc = ("aggregate", _spec(initializer))
        return self._aggregate(functions.aggregation("aggregate", spec), name, doc, store)

    def _aggregate(self, aggregation: Any, name: str | None, doc: tuple[str, Any], store: str | None = None) -> KTable:
        stream = self.stream
        store = store_name(store, doc[0])
        parent, name = stream._aggregated(name, self.name, store)
        node = stream._add(
            "aggregate", [(parent, None)], TABLE, name, aggregation=aggregation, windows=self.windows, doc=doc,
            grouped_name=self.name,
        )  # fmt: skip
        if store is not None:
            node.params["store"] = store
        if self.emit == "on_window_close":
            node.params["emit"] = "final"
        return KTable(stream.topology, node)


EMIT_STRATEGIES = ("on_window_update", "on_window_close")
"""``EmitStrategy.onWindowUpdate()`` (every update, the default) and ``onWindowClose()`` (KIP-825, 3.3+)."""


class TimeWindowedKStream(KGroupedStream):
    """A grouped stream in time windows (Kafka's ``TimeWindowedKStream``): ``count``, ``reduce``, ``aggregate``."""

    def emit_strategy(self, strategy: str) -> "TimeWindowedKStream":
        """When the aggregate forwards (Kafka's ``emitStrategy``, KIP-825, 3.3+): ``"on_window_update"`` every
        update, ``"on_window_close"`` one final result per window once it closes (the aggregate's stream time past
        its end + grace), read from its store (:class:`~kjoin.joins.final_results.EmitFinalTimeWindows`)."""
        if strategy not in EMIT_STRATEGIES:
            raise TopologyError(
                f"emit_strategy: expected on_window_update or on_window_close, got {strategy!r:.60}"
                f"{did_you_mean(str(strategy), EMIT_STRATEGIES)}"
            )
        if strategy == "on_window_close" and not self.stream.topology.semantics.emit_on_window_close:
            raise TopologyError(
                f"emit_strategy: Kafka {self.stream.topology.semantics} has no onWindowClose (KIP-825, 3.3); "
                "suppress(until='window_closes') is the older way"
            )
        return TimeWindowedKStream(self.stream, self.name, self.windows, strategy)


class KGroupedTable(KGroupedStream):
    """A grouped table (Kafka's ``KGroupedTable``): ``count``, ``reduce(adder, subtractor)``,
    ``aggregate(initializer, adder, subtractor)``."""

    def windowed_by(self, windows: Any) -> "TimeWindowedKStream":
        raise TopologyError("windowed_by: a grouped table has no windows (window a grouped stream)")

    def reduce(  # type: ignore[override]
        self, adder: Any, subtractor: Any = None, *, name: str | None = None, store: str | None = None
    ) -> KTable:
        spec = "concat" if adder == "concat" else (adder, subtractor)
        return self._aggregate(functions.aggregation("reduce", spec), name, ("reduce", _spec(adder)), store)

    def aggregate(  # type: ignore[override]
        self,
        initializer: Any,
        adder: Any = None,
        subtractor: Any = None,
        *,
        name: str | None = None,
        store: str | None = None,
    ) -> KTable:
        spec = "concat" if initializer == "concat" else (initializer, adder, subtractor)
        doc = ("aggregate", _spec(initializer))
        return self._aggregate(functions.aggregation("aggregate", spec), name, doc, store)

    def _aggregate(self, aggregation: Any, name: str | None, doc: tuple[str, Any], store: str | None = None) -> KTable:
        stream = self.stream
        store = store_name(store, doc[0])
        parent, name = stream._aggregated(name, self.name, store)
        node = stream._add(
            "table-aggregate", [(parent, None)], TABLE, name, aggregation=_with_subtractor(aggregation), doc=doc,
            grouped_name=self.name,
        )  # fmt: skip
        if store is not None:
            node.params["store"] = store
        return KTable(stream.topology, node)


class CogroupedKStream:
    """Grouped streams aggregated into one table (Kafka's ``CogroupedKStream``, KIP-150, 2.5): each with its own
    aggregator, all into one store (:mod:`kjoin.topology.cogroup`)."""

    def __init__(self, topology: Topology, groups: list[tuple[KGroupedStream, Any]]) -> None:
        self.topology = topology
        self.groups = groups

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise NoSuchOperation(
            f"{name}: a cogrouped stream has only cogroup, aggregate and windowed_by; aggregate it first, then use "
            "the table that makes"
        )

    def cogroup(self, grouped: KGroupedStream, aggregator: Any) -> "CogroupedKStream":
        """Add ``grouped`` (a grouped stream of the same topology), aggregated by ``aggregator(key, value, agg)``."""
        if not isinstance(grouped, KGroupedStream) or type(grouped) is not KGroupedStream:
            raise TopologyError(
                f"cogroup: expected a grouped stream (stream.group_by_key() or group_by(...)), got "
                f"{type(grouped).__name__}"
            )
        if grouped.stream.topology is not self.topology:
            raise TopologyError("cogroup: the grouped stream belongs to another Topology; build both in one")
        if any(grouped is known for known, _ in self.groups):
            raise TopologyError("cogroup: this grouped stream is already in the cogroup (Kafka keeps one aggregator "
                                "per grouped stream); combine both aggregators into one")  # fmt: skip
        return CogroupedKStream(self.topology, [*self.groups, (grouped, _cogroup_aggregator(aggregator))])

    def windowed_by(self, windows: Any) -> Any:
        raise TopologyError(
            "windowed_by: kjoin does not model a windowed cogroup yet (each grouped stream's window aggregate keeps "
            "its own stream time in Kafka); aggregate each stream in windows and join the tables instead"
        )

    def aggregate(self, initializer: Any, *, name: str | None = None, store: str | None = None) -> KTable:
        """The table: each group starts from ``initializer()`` (``"concat"``: ``""``); a record of the ``i``-th
        grouped stream is added by the ``i``-th aggregator, and the new aggregate forwarded as ``Change(new,
        old)``. ``store``: the store's name (``Materialized.as``), which names an unnamed grouping's repartition
        topic (``<store>-repartition``)."""
        store = store_name(store, "cogroup aggregate")
        if initializer != "concat" and not callable(initializer):
            raise TopologyError(f"cogroup aggregate: expected concat or a Python initializer, got {initializer!r:.60}")
        if name is not None:
            legal_name(name, "cogroup aggregate: name (Named.as)")
        graph = self.topology.graph
        name = name or graph.new_name("cogroup")
        prefix = store or name  # Kafka names an unnamed grouping's repartition topic after the store
        parents: list[Node] = []
        unnamed_rekeyed = 0
        for grouped, _ in self.groups:
            stream = grouped.stream
            if not stream.node.key_changed:
                parents.append(stream.node)
            elif grouped.name is not None:
                cached = stream.node.params.setdefault("_grouped", {})
                if grouped.name in cached:
                    raise _named_grouping_twice(grouped.name)
                cached[grouped.name] = stream._repartition_topic(f"{grouped.name}-repartition", kafka_named=True)
                stream.node.params.setdefault("_cogrouped", set()).add(grouped.name)
                parents.append(cached[grouped.name])
            else:
                unnamed_rekeyed += 1
                if unnamed_rekeyed > 1:
                    raise TopologyError(
                        f"cogroup {name}: two re-keyed grouped streams without a name would both be repartitioned "
                        f"through {prefix}-repartition (Kafka names it after the store); name each grouping "
                        "(group_by(..., name=...))"
                    )
                parents.append(stream._repartition_topic(f"{prefix}-repartition"))
        aggregations = []
        for _, adder in self.groups:
            if initializer == "concat" and adder == "concat":
                aggregations.append(functions.aggregation("aggregate", "concat"))
            else:
                init = (lambda: "") if initializer == "concat" else initializer
                add = (lambda k, v, agg: functions.concat(agg, v)) if adder == "concat" else adder
                aggregations.append(functions.aggregation("aggregate", (init, add)))
        first = self.groups[0][0].stream
        node = first._add(
            "cogroup", [(parent, index) for index, parent in enumerate(parents)], TABLE, name,
            aggregation=aggregations[0], aggregations=aggregations, windows=None,
            doc=("cogroup", [_spec(adder) for _, adder in self.groups], _spec(initializer)),
        )  # fmt: skip
        if store is not None:
            node.params["store"] = store
        return KTable(self.topology, node)


def _named_grouping_twice(name: str) -> TopologyError:
    """A named grouping (``Grouped.as``) of a re-keyed stream that a cogroup and another aggregate (or a second
    cogroup) read: Kafka shares its repartition topic between plain aggregates only; a cogroup builds it again, and
    the topology is refused."""
    return TopologyError(
        f"the grouping {name} is read by a cogroup and by another aggregate: Kafka builds its repartition topic "
        f"{name}-repartition for each and refuses the topology (TopologyException: Processor "
        f"{name}-repartition-filter is already added); group the stream twice under different names"
    )


def _cogroup_aggregator(aggregator: Any) -> Any:
    if aggregator != "concat" and not callable(aggregator):
        raise TopologyError(f"cogroup: expected concat or a Python aggregator(key, value, agg), got {aggregator!r:.60}")
    return aggregator


def _spec(given: Any) -> Any:
    """An aggregation's document form: ``concat``, or ``None`` for Python functions (no document carries them)."""
    return "concat" if given == "concat" else None


def _with_subtractor(aggregation: Any) -> Any:
    if aggregation.subtractor is None:
        raise TopologyError(f"{aggregation.name}: a grouped table's aggregate needs a subtractor (a row that changes "
                            "group leaves the old one)")  # fmt: skip
    return aggregation


_WINDOW_FORMS = {
    "size_ms": ("size_ms", "advance_ms", "grace_ms"),
    "inactivity_gap_ms": ("inactivity_gap_ms", "grace_ms"),
    "time_difference_ms": ("time_difference_ms", "grace_ms"),
}


def _time_windows(windows: Any, semantics: Any) -> Any:
    """Tumbling or hopping (``{size_ms, advance_ms, grace_ms}``), session (``{inactivity_gap_ms, grace_ms}``) or
    sliding (``{time_difference_ms, grace_ms}``, Kafka 2.7+) windows, or kjoin's window objects."""
    if isinstance(windows, (TimeWindows, SessionWindows, SlidingWindows)):
        form = _long_fields(windows, "windowed_by")
    else:
        kinds = [kind for kind in _WINDOW_FORMS if isinstance(windows, Mapping) and kind in windows]
        if len(kinds) != 1:
            raise TopologyError(
                "windowed_by: expected {size_ms, advance_ms, grace_ms}, {inactivity_gap_ms, grace_ms} or "
                "{time_difference_ms, grace_ms} (or kjoin's TimeWindows, SessionWindows, SlidingWindows), got "
                f"{windows!r:.80}"
            )
        fields = _WINDOW_FORMS[kinds[0]]
        unknown = sorted(str(name) for name in set(windows) - set(fields))
        if unknown:
            raise TopologyError(
                f"windowed_by: unknown field {unknown[0]}{did_you_mean(unknown[0], fields)}; these windows have "
                f"{', '.join(fields)}"
            )
        for field in fields:
            value = windows.get(field)
            if value is not None or field == kinds[0]:  # the kind's own field is required
                _milliseconds(value, f"windowed_by.{field}")
        grace = windows.get("grace_ms") or 0
        try:
            if kinds[0] == "size_ms":
                form = TimeWindows(windows["size_ms"], windows.get("advance_ms"), grace)
            elif kinds[0] == "inactivity_gap_ms":
                form = SessionWindows(windows["inactivity_gap_ms"], grace)
            else:
                form = SlidingWindows(windows["time_difference_ms"], grace)
        except ValueError as error:
            raise TopologyError(f"windowed_by: {error}") from None
    if isinstance(form, SlidingWindows) and not semantics.sliding_windows:
        raise TopologyError(f"windowed_by: Kafka {semantics} has no sliding windows (KIP-450, 2.7)")
    return form


def _partitions(value: Any, what: str) -> int:
    """A partition count: a whole number from 1 to 2^31 - 1 (Kafka's int), else kjoin's error naming ``what``."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_PARTITIONS:
        raise TopologyError(f"{what}: expected a whole number from 1 to {MAX_PARTITIONS}, got {value!r:.60}")
    return value


def _milliseconds(value: Any, what: str) -> int:
    """A duration: a whole number of milliseconds from 0 to 2^63 - 1 (Kafka's long), as a document's."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_LONG:
        raise TopologyError(
            f"{what}: expected a whole number of milliseconds from 0 to {MAX_LONG} (Kafka's long), got {value!r:.60}"
        )
    return value


def _long_fields(windows: Any, what: str) -> Any:
    """Window objects built in Python hold their milliseconds to the same long (a join window's before and after may be
    negative, as Kafka's ``JoinWindows.before`` allows, as long as the window is not)."""
    for field in dataclasses.fields(windows):
        value = getattr(windows, field.name)
        if field.name.endswith("_ms") and value is not None:
            if field.name in ("before_ms", "after_ms") and isinstance(value, int) and not isinstance(value, bool):
                if not MIN_LONG <= value <= MAX_LONG:
                    raise TopologyError(f"{what}.{field.name}: {value} does not fit Kafka's 64-bit long")
            else:
                _milliseconds(value, f"{what}.{field.name}")
    return windows


def _checked_calls(cls: type) -> type:
    """Every public method of ``cls``, and its constructor, refuses a call its parameters do not take with kjoin's
    error (naming the method, the argument and what it takes, with a "did you mean"), not Python's ``TypeError``."""
    for name, method in list(vars(cls).items()):
        if (name.startswith("_") and name != "__init__") or not inspect.isfunction(method):
            continue
        setattr(cls, name, _checked_call(cls.__name__, method))
    return cls


def _checked_call(owner: str, method: Any) -> Any:
    called = owner if method.__name__ == "__init__" else f"{owner}.{method.__name__}"
    signature = inspect.signature(method)
    takes = [name for name in signature.parameters if name != "self"]

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as error:
            unknown = [name for name in kwargs if name not in signature.parameters]
            hint = did_you_mean(unknown[0], takes) if unknown else ""
            what = f"{unknown[0]!r} is not an argument of it{hint}" if unknown else str(error)
            raise TopologyError(f"{called}: {what}; it takes {', '.join(takes) or 'nothing'}") from None
        return method(*args, **kwargs)

    return call


_STREAM_JOIN_OPTIONS = {"window": "", "grace_ms": "", "name": "", "key_selector": "", "store": "", "node": ""}
_TABLE_JOIN_OPTIONS = {
    "name": "",
    "node": "",
    "store": "",
    "partitioner": "",
    "other_partitioner": "",
    "window": "a table-table join has no window (only a stream-stream join has one)",
    "grace_ms": "a table-table join has no grace period (a stream-table join with a versioned table has one)",
    "key_selector": "a table-table join has no key selector (a stream's join with a global table has one)",
}


def _options(op: str, options: Mapping[str, Any], allowed: Mapping[str, str]) -> Mapping[str, Any]:
    """``options`` if ``op`` takes each of them; else kjoin's error with the reason or a "did you mean"."""
    for name in options:
        refusal = allowed.get(name)
        if refusal == "":
            continue
        takes = [key for key, reason in allowed.items() if reason == ""]
        why = refusal or f"not an option of {op}{did_you_mean(name, takes)}"
        raise TopologyError(f"{op}: {name}: {why}; it takes {', '.join(takes)}")
    return options


for _class in (
    Topology, KStream, KTable, GlobalKTable, KGroupedStream, TimeWindowedKStream, KGroupedTable, BranchedKStream,
):  # fmt: skip
    _checked_calls(_class)
