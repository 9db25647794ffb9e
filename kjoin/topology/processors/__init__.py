"""The processors of a topology's nodes, one instance per task, built on kjoin's join processors.

Each :class:`NodeProcessor` handles one record handed to its node (:meth:`~NodeProcessor.handle`)
and reports an :class:`Outcome`: the fate, the reason and the story, the records it forwards to
its children (a table's ``Change`` carries its old value), and the records it writes to topics.
The joins are kjoin's own processors (:mod:`kjoin.joins`), fed through a :class:`ScopedLog` that
names every store after its node and files it under its Kafka task (``"1_0"``).

One module per family of node kinds, and :data:`PROCESSOR_OF` from a node's kind to its processor class:

* :mod:`~kjoin.topology.processors.base`: what they share (:class:`Rec`, :class:`Outcome`, :class:`NodeProcessor`,
  :class:`ScopedLog`, :class:`Wiring`);
* :mod:`~kjoin.topology.processors.stateless`: sources, ``filter``, ``map_values``, ``select_key``, ``map``,
  ``flat_map`` and the other nodes without state;
* :mod:`~kjoin.topology.processors.sinks`: ``to`` and a repartition topic's sink;
* :mod:`~kjoin.topology.processors.tables`: source, global and derived (``filter``, ``mapValues``) tables;
* :mod:`~kjoin.topology.processors.joins`: stream-stream, stream-table, table-table and global-table joins;
* :mod:`~kjoin.topology.processors.foreign_key`: the foreign-key join, which spans two sub-topologies.

Aggregates, suppression and a user's own processors are built by their own modules
(:func:`kjoin.topology.aggregates.build_aggregate`, :class:`kjoin.topology.suppress.SuppressProcessor`,
:func:`kjoin.topology.custom.build_custom`).
"""

from __future__ import annotations

from typing import Any, Callable

from ...joins.stream_stream import InstanceTimes
from ...semantics import Semantics
from ..graph import Node
from .base import NodeProcessor, OldValue, Outcome, Rec, ScopedLog, TaskClock, Wiring, said
from .foreign_key import ForeignKeyNode
from .joins import StreamGlobalNode, StreamStreamNode, StreamTableNode, TableTableNode
from .sinks import RepartitionSink, TopicSink
from .stateless import MAX_RECORDS_PER_RECORD, PASS_OPS, StatelessNode
from .tables import GlobalTableSource, TableFilter, TableMapValues, TableSource, TableView

__all__ = [
    "said", "Rec", "Outcome", "OldValue", "ScopedLog", "build_processor", "NodeProcessor", "TaskClock", "TableView",
    "getter_of", "table_of", "ForeignKeyNode", "GlobalTableSource", "MAX_RECORDS_PER_RECORD", "PROCESSOR_OF",
    "Wiring",
]  # fmt: skip

PROCESSOR_OF: dict[str, type[NodeProcessor]] = {
    **dict.fromkeys(PASS_OPS, StatelessNode),
    "to": TopicSink,
    "repartition-sink": RepartitionSink,
    "table": TableSource,
    "to_table": TableSource,
    "table-filter": TableFilter,
    "table-map-values": TableMapValues,
    "stream-global": StreamGlobalNode,
    "stream-stream": StreamStreamNode,
    "stream-table": StreamTableNode,
    "table-table": TableTableNode,
}
"""A node's kind -> the class of its processor in each task (:meth:`NodeProcessor.build` makes one). A global table
(one processor for all tasks, :class:`GlobalTableSource`), a foreign-key join (:class:`ForeignKeyNode`) and the
aggregates are built by the runtime."""


def build_processor(
    node: Node,
    partition: int,
    log: Any,
    semantics: Semantics,
    parent: Callable[[Node], Any],
    materialized: bool = True,
    instance: InstanceTimes | None = None,
) -> NodeProcessor:
    """The processor of ``node`` in the task of ``partition``; ``parent(node)`` gives another node's
    processor of the same task (a join reads its tables' stores through them); ``instance``: what the tasks of the
    task's application instance share (a stream-stream join's time tracker). Aggregates:
    :func:`kjoin.topology.aggregates.build_aggregate`."""
    wiring = Wiring(log, semantics, parent, materialized, instance)
    return PROCESSOR_OF[node.op].build(node, partition, wiring)


def table_of(node: Node, partition: int, parent: Callable[[Node], Any]) -> Any:
    """What a join reads a table node through: a source's store, a table-table join's value getter (which
    calls that join's own joiner, whatever joiner the reader has), a foreign-key join's materialized result, an
    aggregate's table, a view (:meth:`NodeProcessor.as_table`)."""
    return parent(node).as_table(partition)


def getter_of(node: Node, partition: int, parent: Callable[[Node], Any]) -> Any:
    """What a lookup reads table ``node`` through (Kafka's value getter): ``get(key) -> (value, ts) | None``."""
    return table_of(node, partition, parent)
