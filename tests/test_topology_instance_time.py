"""A topology's stream-stream left join over two partitions in one running application (``timestamp`` schedule):
before KAFKA-14862 (3.1 to 3.4.0) the tasks of one instance share the join's time tracker
(``Semantics.outer_join_time_per_task``; ``tests/test_broker_instance_time.py`` pins the rule against a running
Kafka application, ``docs/semantics.md`` section 1.7)."""

from __future__ import annotations

import pytest

from kjoin.topology import Topology

WINDOW = {"before_ms": 10, "after_ms": 10, "grace_ms": 0}
EVENTS = [  # a and b go to partition 0, d to partition 1
    {"topic": "left", "key": "a", "value": "A", "ts": 1},
    {"topic": "left", "key": "d", "value": "D", "ts": 1000},
    {"topic": "left", "key": "b", "value": "B", "ts": 1001},
]


def outputs(semantics: str, instances: int = 1) -> list[tuple]:
    b = Topology(partitions=2, semantics=semantics)
    b.stream("left").left_join(b.stream("right"), window=WINDOW).to("out")
    trace = b.run(EVENTS, "timestamp", instances=instances)
    assert [s.task for s in trace] == ["0_0", "0_1", "0_0"]
    return [(o.key, o.value, o.ts) for o in trace.outputs()]


@pytest.mark.parametrize("semantics", ["3.3", "3.4.0"])
def test_one_instances_tasks_share_the_joins_time_tracker_before_kafka_14862(semantics):
    """d@1000 (task 0_1) sweeps its own empty buffer and resets the shared min time, then sets it to 1000: b@1001
    (task 0_0) finds the gate shut (1000 + 10 >= 1001), so a@1, long closed, stays held."""
    assert outputs(semantics) == []
    # on two instances each task has the tracker of its own instance: b@1001 releases a@1
    assert outputs(semantics, instances=2) == [("a", "A-null", 1)]


@pytest.mark.parametrize("semantics", ["3.4.1", "3.5", "4.4"])
def test_each_task_has_its_own_time_tracker_from_kafka_14862(semantics):
    assert outputs(semantics) == [("a", "A-null", 1)] == outputs(semantics, instances=2)
