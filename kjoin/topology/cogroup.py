"""A cogrouped stream's aggregate (Kafka's ``CogroupedKStream``, KIP-150, 2.5).

``a.group_by_key().cogroup(adder_a).cogroup(b.group_by_key(), adder_b).aggregate(initializer)`` is, in Kafka's
``CogroupedStreamAggregateBuilder``, one ``KStreamAggregate`` per grouped stream (``COGROUPKSTREAM-AGGREGATE-...``),
each with its own aggregator and all writing one key-value store, under one pass-through merge
(``COGROUPKSTREAM-MERGE-...``, ``KTablePassThrough``) that is the table. kjoin's graph holds them as one ``cogroup``
node whose parents are the grouped streams, in the order they were cogrouped: a record reaching it through parent
``i`` is aggregated by the ``i``-th aggregator into the shared store, exactly as :class:`StreamAggregate` does (a
null key or value is skipped; the aggregate is stored with ``max(record ts, aggregate ts)`` and forwarded as
``Change(new, old)``).

A grouped stream whose key was changed is read through a repartition topic of its own, named after its grouping
(``Grouped.as``) or else after the aggregate's store (``processRepartitions``); all the grouped streams are
co-partitioned (``ensureCopartitionWith``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..joins.aggregate import Aggregation
from ..records import Side
from ..semantics import Semantics
from .aggregates import StreamAggregate
from .graph import Graph, Node, TopologyError
from .processors import Outcome, Rec

__all__ = ["CogroupAggregate", "COGROUP_OPS", "refuse_table_operations"]

COGROUP_OPS = ("cogroup",)
"""The graph ops whose processors live here."""


class CogroupAggregate(StreamAggregate):
    """The per-stream ``KStreamAggregate`` processors of one cogroup and their shared store: the port a record
    arrives on is the index of its grouped stream, which picks the aggregator."""

    def __init__(self, node: Node, partition: int, log: Any, semantics: Semantics) -> None:
        super().__init__(node, partition, log, semantics)
        self.aggregations: list[Aggregation] = node.params["aggregations"]

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        assert isinstance(port, int), "a cogroup's parents are numbered (builder.CogroupedKStream)"
        self.aggregation = self.aggregations[port]
        outcome = super().handle(port, rec, step)
        story = outcome.explain
        stream = f"From {self.node.parents[port].name} (grouped stream {port}, its own aggregator): "
        return replace(outcome, explain=lambda: stream + (story() if callable(story) else story))


def refuse_table_operations(graph: Graph, semantics: Semantics) -> None:
    """Before 2.8 (KAFKA-10417, ``cogroup_table_operations``) a cogroup's table is a ``PassThrough``, and Kafka throws
    ``ClassCastException`` building a topology that asks it for a value getter (a join reading it, through any
    ``mapValues``/``filter`` views) or for old values (a suppression, a group-by, a table-table join, and from 2.7 a
    ``filter``: KAFKA-10077, ``table_filter_skips_absent_tombstones``). ``toStream``, and views that lead only to it,
    build. kjoin refuses what Kafka cannot build, naming the node."""
    if semantics.cogroup_table_operations:
        return
    for node in graph.nodes.values():
        if node.op != "cogroup":
            continue

        def readers(table: Node) -> list[Node]:  # its children, and the stream-table joins that look it up
            joins = [n for n in graph.nodes.values() if n.op == "stream-table" and n.params.get("table") is table]
            return [child for child, _ in table.children] + joins

        reading = readers(node)
        while reading:
            child = reading.pop()
            if child.op == "to_stream":
                continue
            asks_old = child.op == "table-filter" and semantics.table_filter_skips_absent_tombstones
            if child.op in ("table-map-values", "table-filter") and not asks_old:
                reading.extend(readers(child))
                continue
            raise TopologyError(
                f"{child.name} ({child.op}) reads the cogroup {node.name}'s table: Kafka {semantics} cannot build that "
                "(its cogroup table is a PassThrough, which a join, suppress, groupBy or, from 2.7, a filter casts to "
                "a KTableProcessorSupplier: ClassCastException; KAFKA-10417, 2.8). Read it with to_stream() (a "
                "map_values in between builds), or choose semantics 2.8 or later"
            )
