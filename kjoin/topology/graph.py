"""A topology's graph: its nodes (processors), the topics between them, and its sub-topologies.

A :class:`Node` is one processor of the DSL (a source, a filter, a join, a sink); its ``parents``
are the nodes it reads from (a join's left, then right), and every node knows its ``children``
with the *port* they read it on (``Side.LEFT``/``Side.RIGHT`` for a join, ``None`` otherwise), in
the order they were added: Kafka forwards a record to a node's children in that order, depth-first.

A re-key followed by a join writes to a *repartition topic*: a ``repartition-sink`` node upstream
and a ``repartition-source`` node downstream, linked only through their :class:`Topic`. That cut
is what splits a topology into sub-topologies (:func:`Graph.subtopologies`); a foreign-key join's
subscription and response topics cut it too (its right side sits in the right table's
sub-topology).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ..joins.session_aggregate import SessionWindows
from ..partitioner import default_partition
from ..records import Side
from ..scenario.fields import ScenarioError
from .functions import Function

__all__ = [
    "Node",
    "Topic",
    "Graph",
    "TopologyError",
    "STREAM",
    "TABLE",
    "JOIN_OPS",
    "SOURCE_OPS",
    "VIEW_OPS",
    "MAX_NAME_LENGTH",
    "legal_name",
    "legal_topic",
    "windowed_table",
    "windowed_kind",
    "windowed_aggregate",
]

MAX_NAME_LENGTH = 249
"""Kafka's ``Named.MAX_NAME_LENGTH``: a processor's, a store's or an internal topic's name, at most this long."""
_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")

STREAM = "stream"
TABLE = "table"
JOIN_OPS = ("stream-stream", "stream-table", "table-table", "fk", "stream-global")
SOURCE_OPS = ("stream", "table", "repartition-source", "global-table")
VIEW_OPS = ("table-filter", "table-map-values")
"""A table derived row by row from another (``KTable.filter``, ``KTable.mapValues``), materialized or not."""
FIRST_PARENT_ONLY = ("fk", "stream-global")
"""Joins that sit in their left parent's sub-topology alone: a foreign-key join's right side runs in the right
table's sub-topology, and a global table belongs to no sub-topology (every task reads its global store)."""


class TopologyError(ScenarioError):
    """A topology Kafka would refuse, or kjoin cannot run yet: the message names the node or the
    topics and the fix. kjoin's error (a :class:`~kjoin.ScenarioError`: ``kjoin run`` reports it in one line)."""


@dataclass(frozen=True)
class Topic:
    """A topic: its name, partitions, and the partitioner of whoever writes to it (``None``:
    murmur2). ``internal``: a repartition topic or a foreign-key join's topic, which the topology
    both writes and reads."""

    name: str
    partitions: int | None
    """``None`` for a repartition topic until the sub-topologies are known (:meth:`Graph.resolve`)."""
    partitioner: Function | None = None
    internal: bool = False

    def partition_of(self, key: Any) -> int:
        """The partition a record with this key is written to."""
        if self.partitioner is None:
            return 0 if key is None or self.partitions == 1 else default_partition(key, self.partitions)
        chosen = self.partitioner(key, self.partitions)
        if not isinstance(chosen, int) or isinstance(chosen, bool) or not 0 <= chosen < self.partitions:
            raise TopologyError(
                f"topic {self.name}: the partitioner ({self.partitioner.text}) returned {chosen!r} for key {key!r}; "
                f"a partition is a number from 0 to {self.partitions - 1}"
            )
        return chosen


@dataclass(eq=False)
class Node:
    """One processor: ``op`` is what it does, ``produces`` a stream or a table."""

    name: str
    op: str
    parents: tuple["Node", ...]
    produces: str
    params: dict[str, Any] = field(default_factory=dict)
    children: list[tuple["Node", Side | None]] = field(default_factory=list)
    order: int = 0
    """When the node was added: sub-topologies are numbered by their first node."""
    key_changed: bool = False
    """A stream whose key a ``select_key``/``map`` changed: a join first writes it to a repartition topic."""

    def __repr__(self) -> str:
        return f"Node({self.name!r}, {self.op})"

    @property
    def topic(self) -> str | None:
        return self.params.get("topic")


class Graph:
    """The nodes and topics of one topology, in the order they were added."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.topics: dict[str, Topic] = {}
        self._counter = 0
        self.text_keys = True
        """Keys through the String serde (``Topology(key_serde="string")``): events' keys and the keys functions make
        are their text (:func:`kjoin.serde.string_serde_text`)."""

    def new_name(self, op: str) -> str:
        """Kafka-like generated names: ``select-key-0000000003``."""
        while True:
            name = f"{op}-{self._counter:010d}"
            self._counter += 1
            if name not in self.nodes:
                return name

    def add(
        self,
        op: str,
        parents: Iterable[tuple[Node, Side | None]],
        produces: str,
        name: str | None = None,
        derived: bool = False,
        **params: Any,
    ) -> Node:
        """Add an ``op`` node below ``parents``. ``name``: the application's (held to Kafka's ``Named`` rule), one
        kjoin ``derived`` from a name already checked (``<topic>-sink``: Kafka checks only what it is given), or
        ``None`` for a generated one."""
        if name is None:
            name = self.new_name(op)
        elif not derived:
            legal_name(name, op)
        if name in self.nodes:
            raise TopologyError(f"two nodes are named {name!r}; give each node its own name")
        links = list(parents)
        node = Node(name, op, tuple(parent for parent, _ in links), produces, params, order=len(self.nodes))
        for parent, port in links:
            parent.children.append((node, port))
        self.nodes[name] = node
        if not name.startswith(f"{op}-"):
            self._counter += 1  # as Kafka numbers every processor, named or not
        return node

    def add_topic(self, topic: Topic) -> Topic:
        known = self.topics.get(topic.name)
        if known is not None and not _same_topic(known, topic):
            if known.partitions != topic.partitions:
                differ = f"{known.partitions} and {topic.partitions} partitions"
            else:
                differ = f"the partitioners {_partitioner_text(known)} and {_partitioner_text(topic)}"
            raise TopologyError(
                f"topic {topic.name} is declared twice, differently ({differ}); declare it once (a stream that reads "
                "a topic the application writes may leave its partitions and partitioner out)"
            )
        self.topics[topic.name] = topic
        return topic

    def sources(self) -> dict[str, Node]:
        """Topic name -> the source node that reads it."""
        return {node.topic: node for node in self.nodes.values() if node.op in SOURCE_OPS}

    # -- sub-topologies ---------------------------------------------------------------------------
    def subtopologies(self) -> list[list[Node]]:
        """The nodes of each sub-topology, numbered as Kafka numbers them (by their oldest node).

        Nodes are connected by parent edges; a repartition topic connects nothing (its source has no
        parent), a foreign-key join belongs to its left parent's sub-topology only, and a global table to none
        (Kafka's ``describe()`` lists it apart, as a global store)."""
        root: dict[str, str] = {name: name for name in self.nodes}

        def find(name: str) -> str:
            while root[name] != name:
                root[name] = root[root[name]]
                name = root[name]
            return name

        for node in self.nodes.values():
            parents = node.parents[:1] if node.op in FIRST_PARENT_ONLY else node.parents
            for parent in parents:
                a, b = find(node.name), find(parent.name)
                if a != b:
                    root[max(a, b, key=lambda n: self.nodes[n].order)] = min(a, b, key=lambda n: self.nodes[n].order)
        groups: dict[str, list[Node]] = {}
        for node in self.nodes.values():
            if node.op != "global-table":
                groups.setdefault(find(node.name), []).append(node)
        return sorted(groups.values(), key=lambda nodes: min(n.order for n in nodes))

    def subtopology_of(self) -> dict[str, int]:
        """Node name -> its sub-topology's number (a global table has none)."""
        return {node.name: number for number, nodes in enumerate(self.subtopologies()) for node in nodes}

    def materialized(self, table: Node, semantics: Any = None) -> bool:
        """Does Kafka write the ``KTableSource`` ``table`` (a source table, a ``to_table``, a foreign-key join's
        result) through a store? That is where KIP-557 (2.6.0 to 2.7.0) drops idempotent updates, a tombstone for a
        key the table never held among them. ``KTableSource`` keeps a store when it has a queryable name
        (:meth:`keeps_store`): a source table built with ``Materialized.as`` (the default, or ``store``) always; one
        built without (``materialized=False``), a ``to_table`` or a foreign-key join's result when the application
        names the store or a node looks it up or asks it for old values. A view without a store of its own
        (``mapValues``, ``filter``) reading it materializes nothing: such a table forwards ``Change(null, null)`` for
        a row it never held. Before 2.7 (``semantics`` without ``materialized_view_keeps_old_values``, KAFKA-10494)
        a node that asks for old values (:meth:`_asks_old_values`) materializes it through materialized views too:
        a view passed ``enableSendingOldValues()`` to its parent, and ``KTableSource.enableSendingOldValues`` gives
        the source its store."""
        if table.op not in ("table", "to_table", "fk"):
            return False
        if self.keeps_store(table):
            return True
        return (
            semantics is not None and not semantics.materialized_view_keeps_old_values and self._asks_old_values(table)
        )

    def _asks_old_values(self, table: Node) -> bool:
        """Does a node ask ``table`` for old values through views, materialized or not (Kafka before 2.7)? A
        table-table join its outer sides (``KTableImpl.doJoin``: the left of a left join, both of an outer join), a
        foreign-key join both tables, a table group-by and a suppression their parent; a view asked asks its parent,
        and a table-table join asked asks both of its (``KTableKTableAbstractJoin.enableSendingOldValues``)."""
        asked: set[str] = set()

        def ask(node: Node) -> None:
            if node.name in asked:
                return
            asked.add(node.name)
            if node.op in VIEW_OPS or node.op == "table-table":
                for parent in node.parents:
                    ask(parent)

        for node in self.nodes.values():
            if node.op == "table-table":
                variant = node.params["variant"]
                for parent in (
                    list(node.parents) if variant == "outer" else node.parents[:1] if variant == "left" else []
                ):
                    ask(parent)
            elif node.op in ("fk", "table-group-by", "suppress"):
                for parent in node.parents:
                    ask(parent)
        return table.name in asked

    def keeps_store(self, table: Node) -> bool:
        """Does ``table`` send old values when asked without being forced to keep a store, as the topology stands
        (Kafka's ``KTableImpl.enableSendingOldValues(forceMaterialization=false)``)? A view without a store asks its
        parent; a source (``KTableSource``) answers yes only when it is materialized: a table read from a topic with
        ``Materialized.as`` (not one built ``materialized=False``, nor one ``describe()`` lists without a store), a
        foreign-key join's result whose store the application names (a queryable name), or any source (stores
        without a queryable name) that a node already built reads through its value getter or asks for old values
        (``KTableSource.materialize``). A materialized view, an aggregate, a table-table join (it materializes its
        parents) answer yes."""
        if table.op in VIEW_OPS and not table.params["materialized"]:
            return self.keeps_store(table.parents[0])
        if table.op in ("table", "to_table", "fk"):
            named = table.params.get("store") is not None
            return bool(table.params.get("materialized", table.op == "table")) or named or self._materializes(table)
        return True

    def _materializes(self, table: Node) -> bool:
        """Does a node of the graph look ``table`` up (a stream-table, table-table or foreign-key join) or ask it for
        old values (a table group-by), directly or through views without a store of their own?"""
        for node in self.nodes.values():
            if node.op == "stream-table":
                read = [node.params["table"]]
            elif node.op in ("table-table", "fk", "table-group-by", "suppress"):  # suppress: forced old values
                read = list(node.parents)
            else:
                continue
            for found in read:
                while found is not table and found.op in VIEW_OPS and not found.params["materialized"]:
                    found = found.parents[0]
                if found is table:
                    return True
        return False

    def upstream_sources(self, node: Node) -> list[Node]:
        """The source nodes a node reads from inside its sub-topology (Kafka's copartition group of a join
        is the union of both sides' sources)."""
        found: list[Node] = []
        stack = [node]
        seen: set[str] = set()
        while stack:
            current = stack.pop()
            if current.name in seen:
                continue
            seen.add(current.name)
            if current.op in SOURCE_OPS:
                found.append(current)
                continue
            parents = current.parents[:1] if current.op in FIRST_PARENT_ONLY else current.parents
            stack.extend(parents)
        return sorted(found, key=lambda n: n.order)

    def relaxed_join_downstream(self, node: Node) -> bool:
        """Is a join that takes null keys (a left stream-table or stream-global-table join, a left or outer
        stream-stream join: KIP-962's ``NULL_KEY_RELAXED_JOIN`` label in ``KStreamImpl``) anywhere downstream of
        ``node``, across repartition topics too? Kafka 3.7+ then writes null keys to the repartition topics above
        it (``NodesWithRelaxedNullKeyJoinDownstream``)."""
        sources = self.sources()
        stack, seen = [node], set()
        while stack:
            current = stack.pop()
            if current.name in seen:
                continue
            seen.add(current.name)
            if current.op in ("stream-table", "stream-global") and current.params["variant"] == "left":
                return True
            if current.op == "stream-stream" and current.params["variant"] in ("left", "outer"):
                return True
            stack.extend(child for child, _ in current.children)
            if current.op == "repartition-sink":
                stack.append(sources[current.topic])  # type: ignore[index]
        return False


def _partitioner_text(topic: Topic) -> str:
    return "murmur2 (the default)" if topic.partitioner is None else repr(topic.partitioner.text)


def _same_topic(known: Topic, topic: Topic) -> bool:
    """Whether two declarations of a topic agree: the same partitions and the same partitioner (the one function, or
    two equal document specs such as ``{map: {k: 1}}``)."""
    if (known.name, known.partitions, known.internal) != (topic.name, topic.partitions, topic.internal):
        return False
    mine, theirs = known.partitioner, topic.partitioner
    if mine is None or theirs is None:
        return mine is theirs
    if mine.spec is not None or theirs.spec is not None:
        return bool(mine.spec == theirs.spec)
    return mine.call is theirs.call


def legal_name(name: Any, op: str) -> str:
    """``name`` if Kafka's ``Named`` takes it for an ``op`` node (its processor, and the stores and internal topics
    named after it): non-empty ASCII letters, digits, ``.``, ``_`` and ``-``, not ``.`` or ``..``, at most
    :data:`MAX_NAME_LENGTH` characters. Otherwise kjoin's error with Kafka's reason (a ``TopologyException``)."""
    if not isinstance(name, str) or not name:
        raise TopologyError(f"{op}: a node's name is non-empty text, got {name!r:.80}")
    problem = _illegal(name, "Kafka's Named")
    if problem is not None:
        raise TopologyError(
            f"{op}: the name {_cut(name)} is illegal: {problem} (the name becomes its stores' and internal topics' "
            "names); rename it (for example 'by-customer')"
        )
    return name


def legal_topic(topic: Any, where: str) -> str:
    """``topic`` if a Kafka broker takes it as a topic's name (``Topic.validate``: the characters and the length of
    :func:`legal_name`); otherwise kjoin's error (Kafka's ``InvalidTopicException``)."""
    if not isinstance(topic, str) or not topic:
        raise TopologyError(f"{where}: a topic's name is non-empty text, got {topic!r:.80}")
    problem = _illegal(topic, "a Kafka topic's name")
    if problem is not None:
        raise TopologyError(
            f"{where}: the topic {_cut(topic)} is illegal: {problem} (the broker refuses it: InvalidTopicException); "
            "rename it (for example 'orders.v2')"
        )
    return topic


def _illegal(name: str, rule: str) -> str | None:
    """What makes ``name`` illegal under Kafka's rule for names (``None``: nothing)."""
    if name in (".", ".."):
        return f'{rule} cannot be "." or ".."'
    if len(name) > MAX_NAME_LENGTH:
        return f"it has {len(name)} characters, and {rule} takes at most {MAX_NAME_LENGTH}"
    bad = next((char for char in name if char not in _NAME_CHARACTERS), None)
    if bad is not None:
        return f"it contains {bad!r}, and {rule} takes only ASCII letters, digits, '.', '_' and '-'"
    return None


def _cut(name: str) -> str:
    return repr(name if len(name) <= 60 else name[:57] + "...")


def windowed_table(node: Node) -> bool:
    """Is ``node`` keyed by ``Windowed<K>``: a windowed aggregate, a stream or table derived from one key for key
    (filter, mapValues, toStream, ...), a table join of two of them, or a foreign-key join of one to a table?"""
    return windowed_aggregate(node, through_foreign_keys=True) is not None


def windowed_kind(node: Node) -> str | None:
    """``session`` or ``time`` when ``node`` is keyed by ``Windowed<K>`` (:func:`windowed_table`): whether its serde
    writes a session's end and start or a time window's start after the key; ``None`` for plain keys."""
    aggregate = windowed_aggregate(node, through_foreign_keys=True)
    if aggregate is None:
        return None
    return "session" if isinstance(aggregate.params["windows"], SessionWindows) else "time"


def windowed_aggregate(node: Node, through_foreign_keys: bool = False) -> Node | None:
    """The windowed aggregate whose ``Windowed<K>`` keys ``node`` has (see :func:`windowed_table`), if any: as
    Kafka's ``GraphGraceSearchUtil`` walks up from a suppression to find its grace, which stops at a foreign-key
    join (its result also descends from the right table, which has no window); ``through_foreign_keys``: walk on
    to the join's left table, whose keys and key serde its result keeps."""
    seen: set[str] = set()
    while node.name not in seen:
        seen.add(node.name)
        if node.op == "aggregate":
            return node if node.params.get("windows") is not None else None
        if node.op == "fk" and through_foreign_keys:
            node = node.parents[0]
            continue
        if node.key_changed or not node.parents or node.op in ("table-aggregate", "fk", "stream-global"):
            return None
        node = node.parents[0]
    return None  # pragma: no cover - a graph has no cycle through its first parents
