"""kjoin's processing order against a running Kafka Streams application (issue 27), a CI sample.

One KRaft broker (``tests/kafka_broker.py``) on free ports of 127.0.0.1 and one ``BrokerHarness`` JVM serve the
module, and are stopped by its fixture. Every scenario's records are on the broker before the application starts;
each task's processing order (from the record context) and its outputs (each with the input record that wrote it)
must be kjoin's. ``make broker-check`` runs the full sweep. Without Java, Maven, the harness or the broker's jars
these tests fail, they never skip (``make kafka-oracle kafka-live`` sets them up).
"""

from __future__ import annotations

import pytest

import kjoin
from tests.broker_check import BROKER_JUDGES, BrokerOracle, judge
from tests.oracle_check import build


@pytest.fixture(scope="module")
def oracle():
    build()
    with BrokerOracle(BROKER_JUDGES[0]) as running:
        yield running


def scenario(join, events, partitions=1, **options):
    return kjoin.Scenario.from_dict(
        {"join": join, "variant": "left", "partitions": partitions, "events": events, **options}
    )


def test_a_task_takes_the_lowest_head_timestamp_and_keeps_each_partitions_order(oracle):
    """Listed (produced) right first, but the left partition's head is earlier: the task takes it first; the late
    left record (ts 1 after ts 9) stays behind its predecessor."""
    events = [
        {"side": "right", "key": "k", "value": "a", "ts": 5},
        {"side": "left", "key": "k", "value": "A", "ts": 3},
        {"side": "left", "key": "k", "value": "B", "ts": 9},
        {"side": "left", "key": "k", "value": "C", "ts": 1},
    ]
    verdict = judge(oracle, scenario("stream-table", events))
    assert verdict.kafka_order == {0: [("left", 0, 0), ("right", 0, 0), ("left", 0, 1), ("left", 0, 2)]}
    assert verdict.kafka_outputs == {
        0: [["left:0:0", "k", "A-null", 3], ["left:0:1", "k", "B-a", 9], ["left:0:2", "k", "C-a", 1]]
    }
    assert not verdict.order_differs and not verdict.outputs_differ, verdict.describe()
