"""Topologies: several joins, re-keys and repartition topics, run as Kafka runs them.

* :mod:`~kjoin.topology.builder`: :class:`Topology`, shaped like Kafka's ``StreamsBuilder``.
* :mod:`~kjoin.topology.graph`: nodes, topics, sub-topologies.
* :mod:`~kjoin.topology.copartition`: internal topics' partitions and the co-partitioning check.
* :mod:`~kjoin.topology.functions`: the functions a topology calls, and the vocabulary a document names them by.
* :mod:`~kjoin.topology.processors`: each node's processor per task, on kjoin's join processors (a table's filter
  and mapValues: ``TableView``).
* :mod:`~kjoin.topology.runtime`: tasks and the order they take records (``test-driver``, ``timestamp``).
* :mod:`~kjoin.topology.trace`: steps, node visits, topics, ``why``.
* :mod:`~kjoin.topology.events`: input events onto their topic partitions.
* :mod:`~kjoin.topology.document`: the YAML/JSON form.
* which record a task takes next: :class:`kjoin.ordering.PartitionGroup` (Kafka's ``PartitionGroup``), shared with
  the single joins.
* :mod:`~kjoin.topology.stages`: sub-topologies in dependency order (the ``stages`` schedule, the Spark engine's plan).

* :mod:`~kjoin.topology.aggregates`: group-by and aggregate processors (stream, windowed, table).

Adding an operation: a method on
:class:`KStream`/:class:`KTable` adds a :class:`~kjoin.topology.graph.Node` (a key-changing one marks
``key_changed``, and the stateful node that follows reads it through a repartition topic, as joins do in
``KStream._repartitioned``); :func:`~kjoin.topology.processors.build_processor` gives its processor per task, which
reports an :class:`~kjoin.topology.processors.Outcome` (fate, reason, story, records forwarded, records written to
topics) and keeps its stores through the :class:`~kjoin.topology.processors.ScopedLog` it is given; the document
form reads and writes it in :mod:`~kjoin.topology.document`, and ``TopologyOracle.java`` builds it with the DSL.
A global table is a source read by every task, outside the sub-topologies (its records are the task ``global``'s).
"""

from .aggregates import WindowedKey
from .builder import (
    BranchedKStream,
    GlobalKTable,
    KGroupedStream,
    KGroupedTable,
    KStream,
    KTable,
    TimeWindowedKStream,
    Topology,
)
from .graph import TopologyError
from .runtime import SCHEDULES, run
from .trace import NodeVisit, TopicRecord, TopologyStep, TopologyTrace

__all__ = [
    "Topology",
    "KStream",
    "KTable",
    "GlobalKTable",
    "KGroupedStream",
    "KGroupedTable",
    "TimeWindowedKStream",
    "BranchedKStream",
    "WindowedKey",
    "TopologyError",
    "TopologyTrace",
    "TopologyStep",
    "NodeVisit",
    "TopicRecord",
    "SCHEDULES",
    "run",
]
