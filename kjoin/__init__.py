"""kjoin: Kafka Streams joins, record by record.

The reference engine reproduces Kafka Streams' join processors for every era of their
semantics and records, after every input record, what was emitted, what happened to the
record and why, and the state of every store::

    >>> import kjoin
    >>> scenario = kjoin.Scenario.from_notation(
    ...     "stream-stream", "left", left="3:A", right="4:a",
    ...     window={"before_ms": 15, "after_ms": 15, "grace_ms": 5})
    >>> [o.render() for o in kjoin.run(scenario).outputs]
    ['A-a']
"""

from .documents import load_scenario, run
from .diff import Diff, Difference
from .topology.diff import diff  # kjoin.diff: the function, single joins and whole apps (the module stays importable)
from .fates import Fate, Reason
from .joins import JoinWindows, default_joiner
from .ordering import merge_by_timestamp
from .records import Output, OutputKind, Record, Side
from .scenario import Deliver, Delivery, Event, Scenario, ScenarioError, TableOptions
from .semantics import LATEST, Semantics, parse_semantics
from .trace import StateSnapshot, Step, Trace
from .topology import Topology, TopologyError, TopologyTrace

__all__ = [
    "Deliver",
    "Diff",
    "Difference",
    "Delivery",
    "Event",
    "Fate",
    "JoinWindows",
    "LATEST",
    "Output",
    "OutputKind",
    "Reason",
    "Record",
    "Scenario",
    "ScenarioError",
    "Semantics",
    "Side",
    "StateSnapshot",
    "Step",
    "TableOptions",
    "Topology",
    "TopologyError",
    "TopologyTrace",
    "Trace",
    "default_joiner",
    "diff",
    "load_scenario",
    "merge_by_timestamp",
    "parse_semantics",
    "run",
]
