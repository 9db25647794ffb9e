"""``kjoin export scenario.yaml --junit``: a scenario as a JUnit 5 test against the real Kafka Streams library.

The test builds the scenario's topology with Kafka Streams' DSL, pipes its records through ``TopologyTestDriver``
(keys, values and timestamps, in kjoin's processing order, each to its side's topic) and asserts, after every input
record, the records kjoin computed for the output topic: key, value and timestamp, in order. Values are strings
(string serdes); the joiner is kjoin's, ``left + "-" + right`` with a missing side printed as ``null``; a
structured value (a foreign-key join's left value) is sent as the JSON kjoin prints, and the foreign key is read
from its field as kjoin's ``foreign_key:`` path says.

Which Kafka version the test is written for is the one that judges the scenario's era (:data:`JUDGES`, the same
versions ``kafka_oracle/`` runs): the window API, the cache config and the versioned stores are that version's.
A scenario the DSL of that version cannot express, or whose outputs kjoin models differently for that version, is
refused with an :class:`ExportError` that says why (:func:`export_junit`).

The package, one job a module: :mod:`~kjoin.export.judges` (which release judges a scenario, and what its DSL has,
read from its :class:`~kjoin.semantics.Semantics`), :mod:`~kjoin.export.checks` (kjoin's expected records, and what
the DSL and TopologyTestDriver cannot express), :mod:`~kjoin.export.dsl` (the scenario's topology in the DSL) and
:mod:`~kjoin.export.junit` (the test class around it); :mod:`~kjoin.export.java` writes Java text.
"""

from .checks import kjoin_outputs
from .java import class_name
from .judges import JUDGES, WINDOWED_TABLE_JUDGE, ExportError, KafkaJudge, judge_of
from .junit import export_junit

__all__ = [
    "JUDGES",
    "WINDOWED_TABLE_JUDGE",
    "ExportError",
    "KafkaJudge",
    "class_name",
    "export_junit",
    "judge_of",
    "kjoin_outputs",
]
