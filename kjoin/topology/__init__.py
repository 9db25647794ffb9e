"""Topologies: several joins, re-keys and repartition topics, run as Kafka runs them (issue 30).

* :mod:`~kjoin.topology.builder`: :class:`Topology`, shaped like Kafka's ``StreamsBuilder``.
* :mod:`~kjoin.topology.graph`: nodes, topics, sub-topologies.
* :mod:`~kjoin.topology.copartition`: internal topics' partitions and the co-partitioning check.
* :mod:`~kjoin.topology.functions`: the functions a topology calls, and the vocabulary a document names them by.
* :mod:`~kjoin.topology.processors`: each node's processor per task, on kjoin's join processors.
* :mod:`~kjoin.topology.runtime`: tasks and the order they take records (``test-driver``, ``timestamp``).
* :mod:`~kjoin.topology.trace`: steps, node visits, topics, ``why``.
* :mod:`~kjoin.topology.events`: input events onto their topic partitions.
* :mod:`~kjoin.topology.document`: the YAML/JSON form.
"""

from .builder import KStream, KTable, Topology
from .graph import TopologyError
from .runtime import SCHEDULES, run
from .trace import NodeVisit, TopicRecord, TopologyStep, TopologyTrace

__all__ = [
    "Topology",
    "KStream",
    "KTable",
    "TopologyError",
    "TopologyTrace",
    "TopologyStep",
    "NodeVisit",
    "TopicRecord",
    "SCHEDULES",
    "run",
]
