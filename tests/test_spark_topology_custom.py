"""``kjoin.spark.run_topology`` on the stream operations of Kafka 4.x's DSL (filter_not, peek, process_values with
its store, process, split and the legacy branch, joiners that see the keys): the same written records and steps as
the reference engine's ``stages`` schedule, on two partitions (tests/test_topology_custom.py holds the reference
engine to Kafka)."""

from __future__ import annotations

import pytest

from kjoin.topology.document import TopologyScenario
from tests.test_topology_custom import (
    CUSTOM_DOCUMENT,
    CUSTOM_EVENTS,
    KEYED_DOCUMENT,
    KEYED_EVENTS,
    LEGACY_DOCUMENT,
    SPLIT_DOCUMENT,
)
from tests.topology_spark_check import difference

pytestmark = pytest.mark.spark


STREAM_EVENTS = [event for event in CUSTOM_EVENTS if event["topic"] == "in"]


@pytest.mark.parametrize(
    "nodes, given, semantics",
    [
        (CUSTOM_DOCUMENT, CUSTOM_EVENTS, "4.4"),
        (SPLIT_DOCUMENT, STREAM_EVENTS, "4.4"),
        (LEGACY_DOCUMENT, STREAM_EVENTS, "3.9"),
        (KEYED_DOCUMENT, KEYED_EVENTS, "4.4"),
    ],
    ids=["processors", "split", "legacy-branch", "keyed-joiners"],
)
def test_spark_runs_the_new_stream_operations_as_the_reference_engine(spark, nodes, given, semantics):
    events = [*given, *({**event, "ts": event["ts"] + 20} for event in given)]
    scenario = TopologyScenario.from_dict(
        {"semantics": semantics, "partitions": 2, "schedule": "stages", "topology": nodes, "events": events}
    )
    assert difference(spark, scenario) is None
