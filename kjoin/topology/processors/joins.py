"""The join nodes on kjoin's join processors (:mod:`kjoin.joins`): stream-stream, stream-table, table-table and a
stream's join with a global table. Each feeds its join a :class:`~kjoin.records.Record` and reports the join's
outputs as the records it forwards (:func:`~kjoin.topology.processors.base.join_outcome`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ...fates import Fate, Reason
from ...joins.context import StepContext
from ...joins.global_table import GlobalTableJoin
from ...joins.stream_stream import InstanceTimes, StreamStreamJoin
from ...joins.stream_table import StreamTableJoin
from ...joins.table_table import TableTableJoin
from ...joins.versioned import VersionedStreamTableJoin
from ...records import Record, Side
from ...semantics import Semantics
from ...stores import TableStore, VersionedStore
from ..functions import Function
from ..graph import Node
from .base import NodeProcessor, Outcome, Rec, Wiring, join_outcome, said
from .tables import GlobalTableSource

__all__ = ["StreamStreamNode", "StreamTableNode", "TableTableNode", "StreamGlobalNode", "ValueGetter"]


class ValueGetter:
    """A table-table join's result read as a table (Kafka's value getter): ``get(key)``."""

    def __init__(self, join: TableTableJoin, joiner: Any) -> None:
        self.join = join
        self.joiner = joiner

    def get(self, key: Any) -> Any:
        return self.join.value_of(key, self.joiner)

    def enable_sending_old_values(self) -> None:
        self.join.enable_sending_old_values()


class NamedResultGetter:
    """A table-table join whose result store the application names (``Materialized.as``), read as a table: Kafka's
    ``KTableKTableJoinMerger`` then reads its store (``KTableMaterializedValueGetterSupplier``) instead of joining its
    parents' rows on the fly, so a join below that looks a key up before the merger has stored the key's new result
    (a sibling of the join under the same source, run first) reads the result before it."""

    def __init__(self, store: TableStore, join: TableTableJoin) -> None:
        self.store = store
        self.join = join

    def get(self, key: Any) -> Any:
        return self.store.get(key)

    def enable_sending_old_values(self) -> None:
        self.join.enable_sending_old_values()


def _joiner_of(node: Node, rec: Rec) -> Function:
    """The node's joiner for ``rec``: a ``ValueJoinerWithStreamAndMappedKey`` (KIP-1340) is handed the stream key and
    the looked-up key too."""
    joiner = node.params["joiner"]
    if joiner.keys != 2:
        return joiner
    selector = node.params.get("key_selector")
    mapped = rec.key if selector is None else selector(rec.key, rec.value)
    call = joiner
    return Function(lambda left, right: call(rec.key, mapped, left, right), None, joiner.text)


class StreamStreamNode(NodeProcessor):
    """A stream-stream join (``KStreamKStreamJoin``): kjoin's :class:`~kjoin.joins.stream_stream.StreamStreamJoin`."""

    @classmethod
    def build(cls, node: Node, partition: int, wiring: Wiring) -> "StreamStreamNode":
        return cls(node, partition, wiring.log, wiring.semantics, wiring.instance)

    def __init__(
        self, node: Node, partition: int, log: Any, semantics: Semantics, instance: InstanceTimes | None = None
    ) -> None:
        """``instance``: the time trackers of the application instance the task runs in (shared by its tasks
        before KAFKA-14862, ``Semantics.outer_join_time_per_task``)."""
        super().__init__(node, partition)
        p = node.params
        self.join = StreamStreamJoin(log, partition, p["variant"], p["window"], semantics, instance=instance)

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        assert port is not None
        record = Record(port, rec.key, rec.value, rec.ts, self.partition)
        ctx = StepContext(step, record, self.node.params["joiner"])
        self.join.process(record, ctx)
        return join_outcome(ctx, table=False)


class _StreamLookupNode(NodeProcessor):
    """A stream's join that looks a table up (a stream-table join, a global-table join): each stream record is the
    join's left record, the lookup and the joiner are the join's."""

    join: Any

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        record = Record(Side.LEFT, rec.key, rec.value, rec.ts, self.partition)
        ctx = StepContext(step, record, _joiner_of(self.node, rec))
        self.join.process(record, ctx)
        return join_outcome(ctx, table=False)


class StreamTableNode(_StreamLookupNode):
    """A stream-table join (``KStreamKTableJoin``), plain or versioned (KIP-914), reading its table's getter."""

    @classmethod
    def build(cls, node: Node, partition: int, wiring: Wiring) -> "StreamTableNode":
        return cls(node, partition, wiring.log, wiring.semantics, wiring.table(node.params["table"], partition))

    def __init__(self, node: Node, partition: int, log: Any, semantics: Semantics, table: Any) -> None:
        super().__init__(node, partition)
        p = node.params
        if isinstance(table, VersionedStore):
            retention = p["table"].params["history_retention_ms"]
            self.join: StreamTableJoin = VersionedStreamTableJoin(
                log, partition, p["variant"], semantics, retention, p.get("grace_ms"), table=table
            )
        else:
            self.join = StreamTableJoin(log, partition, p["variant"], semantics, table)
        self.taken: tuple[Any, bool] | None = None
        """The record context of the record in hand (the runtime sets it), as a suppression keeps it."""
        self.buffered: dict[int, Any] = {}
        """The record the task took for each record the grace buffer holds, by the step that buffered it."""

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        """A record that leaves the grace buffer is joined in the record context the buffer stored: Kafka's
        ``RocksDBTimeOrderedKeyValueBuffer`` keeps it serialized (``ProcessorRecordContext.serialize``: timestamp,
        offset, topic, partition, headers), without the raw source record, so a dead-letter record below names the
        buffered record's offset and has no key and no value."""
        outcome = super().handle(port, rec, step)
        if not isinstance(self.join, VersionedStreamTableJoin) or self.join.buffer is None:
            return outcome
        if self.join.held and self.taken is not None:
            self.buffered[step] = self.taken[0]
        for index, origin in self.join.released:
            taken = self.buffered.pop(origin, None)
            if taken is not None:
                outcome.forwarded[index] = dataclasses.replace(outcome.forwarded[index], context=(taken, True))
        return outcome


class TableTableNode(NodeProcessor):
    """A table-table join (``KTableKTableJoin``) over its parents' tables; read as a table through its value getter,
    which applies its own joiner (``KTableKTableJoinValueGetter``)."""

    @classmethod
    def build(cls, node: Node, partition: int, wiring: Wiring) -> "TableTableNode":
        parents = [wiring.table(p, partition) for p in node.parents]
        return cls(node, partition, wiring.log, wiring.semantics, parents)

    def __init__(self, node: Node, partition: int, log: Any, semantics: Semantics, parents: list[Any]) -> None:
        super().__init__(node, partition)
        p = node.params
        self.join = TableTableJoin(
            log,
            partition,
            p["variant"],
            semantics,
            sends_old_values=bool(p.get("sends_old_values")),
            left=parents[0],
            right=parents[1],
        )
        named = p.get("store")
        self.results = None if named is None else TableStore(log, partition, Side.LEFT, False, named)

    @property
    def table(self) -> ValueGetter | NamedResultGetter:
        if self.results is not None:
            return NamedResultGetter(self.results, self.join)
        return ValueGetter(self.join, self.node.params["joiner"])

    def as_table(self, partition: int) -> Any:
        return self.table

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        assert port is not None
        if not rec.is_latest:  # KTableKTableJoin: "Skipping out-of-order record from versioned table"
            return Outcome(
                Fate.DROPPED,
                Reason.OUT_OF_ORDER_VERSION,
                lambda: (
                    f"{said(rec)} is an older version of the versioned {port} table (its latest is newer): "
                    "out-of-order, no join result (KIP-914)."
                ),
            )
        record = Record(port, rec.key, rec.value, rec.ts, self.partition)
        ctx = StepContext(step, record, self.node.params["joiner"])
        self.join.on_change(port, record, rec.old, ctx)
        outcome = join_outcome(ctx, table=True)
        if self.results is not None:  # the merger stores each result before its children see it
            for result in outcome.forwarded:
                self.results.put(result.key, result.value, result.ts)
        return outcome


class StreamGlobalNode(_StreamLookupNode):
    """A stream joined with a global table (``KStreamGlobalKTableJoin``): kjoin's
    :class:`~kjoin.joins.global_table.GlobalTableJoin` reading the topology's one global store."""

    @classmethod
    def build(cls, node: Node, partition: int, wiring: Wiring) -> "StreamGlobalNode":
        return cls(node, partition, wiring.log, wiring.semantics, wiring.parent(node.parents[1]))

    def __init__(self, node: Node, partition: int, log: Any, semantics: Semantics, table: GlobalTableSource) -> None:
        super().__init__(node, partition)
        p = node.params
        selector = p.get("key_selector")
        self.join = GlobalTableJoin(
            log,
            p["variant"],
            semantics,
            None if selector is None else selector.text,
            table=table.store,
            select=selector,
        )
