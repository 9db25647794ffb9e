"""``kjoin.spark.run_topology`` on the stream operations of Kafka 4.x's DSL (filter_not, peek, process_values with
its store, process, split and the legacy branch): the same written records and steps as the reference engine's
``stages`` schedule, on two partitions (tests/test_topology_custom.py holds the reference engine to Kafka)."""

from __future__ import annotations

import pytest

from kjoin.topology.document import TopologyScenario
from tests.test_topology_custom import CUSTOM_DOCUMENT, CUSTOM_EVENTS, LEGACY_DOCUMENT, SPLIT_DOCUMENT
from tests.topology_spark_check import difference

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(
    "nodes, semantics",
    [(CUSTOM_DOCUMENT, "4.4"), (SPLIT_DOCUMENT, "4.4"), (LEGACY_DOCUMENT, "3.9")],
    ids=["processors", "split", "legacy-branch"],
)
def test_spark_runs_the_new_stream_operations_as_the_reference_engine(spark, nodes, semantics):
    given = CUSTOM_EVENTS if nodes is CUSTOM_DOCUMENT else [e for e in CUSTOM_EVENTS if e["topic"] == "in"]
    events = [*given, *({**event, "ts": event["ts"] + 20} for event in given)]
    scenario = TopologyScenario.from_dict(
        {"semantics": semantics, "partitions": 2, "schedule": "stages", "topology": nodes, "events": events}
    )
    assert difference(spark, scenario) is None
