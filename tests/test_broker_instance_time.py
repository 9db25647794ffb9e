"""A left/outer stream-stream join's time tracker across the tasks of one KafkaStreams instance (KAFKA-14862),
judged by a running application on a KRaft broker (``kafka_oracle/broker_check.py``): two partitions, one instance, one
stream thread.

Kafka 3.1 to 3.4.0 build one time tracker per join with the topology, and every task of the instance shares it;
3.4.1 and 3.5.0 on, each task has its own (``Semantics.outer_join_time_per_task``). The scenario: partition 0 holds
``a@1`` (no partner yet), partition 1 takes ``d@1000``; only then (a second phase of production, once the
application has processed the first) partition 0 takes ``a@5``. A task alone holds ``a@5`` (its window, to 15, is
open at its stream time 5); sharing the instance's stream time 1000 it is emitted with null at once. Without Java,
Maven, the harness or the broker's jars these tests fail, they never skip (``make kafka-oracle kafka-live``).
"""

from __future__ import annotations

import pytest

import kjoin
from kafka_oracle.broker_check import BrokerOracle, judge
from kafka_oracle.oracle_check import build

EVENTS = [
    {"side": "left", "key": "a", "value": "A", "ts": 1, "partition": 0},
    {"side": "left", "key": "d", "value": "D", "ts": 1000, "partition": 1},
    {"side": "left", "key": "a", "value": "A2", "ts": 5, "partition": 0},
]
PHASES = [0, 0, 1]
"""``a@5`` is produced once the application has processed the others: its task runs after ``d@1000``'s."""


def scenario(version: str, one_instance: bool = True) -> kjoin.Scenario:
    return kjoin.Scenario.from_dict(
        {
            "join": "stream-stream",
            "variant": "left",
            "semantics": version,
            "partitions": 2,
            "window": {"before_ms": 10, "after_ms": 10, "grace_ms": 0},
            "one_instance": one_instance,
            "events": EVENTS,
        }
    )


@pytest.fixture(scope="module", params=["3.3.2", "4.4.0"])
def oracle(request, broker):
    """Both versions' harnesses on the run's broker (tests/conftest.py; an application per scenario, topics of their
    own)."""
    build()
    with BrokerOracle(request.param, broker) as running:
        yield running


def test_a_tasks_held_record_follows_the_time_tracker_of_its_instance_or_its_own(oracle):
    verdict = judge(oracle, scenario(oracle.version), phases=PHASES)
    assert not verdict.order_differs and not verdict.outputs_differ, verdict.describe()
    if oracle.version == "3.3.2":
        # The instance's stream time (1000, from partition 1) is past a@5's window: emitted with null at once.
        # Whether a@1 was too depends on which task the thread ran first in phase 0 (the log tells kjoin).
        assert ["left:0:1", "a", "A2-null", 5] in verdict.kafka_outputs[0]
        alone = kjoin.run(scenario(oracle.version, one_instance=False)).outputs
        assert alone == [], "each task alone holds a@1 and a@5: the rule must change the outputs"
        fixed = kjoin.run(scenario(oracle.version).with_semantics("3.3.2+outer_join_time_per_task")).outputs
        assert fixed == [], "switching the rule on gives each task its own tracker"
    else:
        # Each task has its own stream time: partition 0's is 5, and both of its records wait for their windows.
        assert verdict.kafka_outputs == {}
        assert kjoin.run(scenario(oracle.version)).outputs == []
