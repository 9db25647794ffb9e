"""A versioned stream-table join with a grace period tells which of its outputs came from records leaving the buffer,
for the record in hand only: one source record reaching the join twice (a merge of the stream and a ``processValues``
of it), first with a value that the buffer takes and lets go at once (grace 0), then with a null value the join skips
(KIP-77), must not carry the first one's releases into the second (kjoin crashed with an IndexError there). The
walk generator found it (Kafka 4.0.1); the real library judges the minimal case on the versions with a grace period
(KIP-923, 3.6)."""

from __future__ import annotations

import pytest

from kjoin.topology.document import TopologyScenario
from tests.topology_pinned import judge_random_batch

TOPOLOGY = [
    {"name": "s2", "stream": "s2"},
    {"name": "n4", "process_values": {"count_per_key": True}, "input": "s2", "store": "n4-kept"},
    {"name": "n5", "merge": ["n4", "s2"]},
    {"name": "t10", "table": "t10", "history_retention_ms": 20},
    {"name": "n9", "join": ["n5", "t10"], "grace_ms": 0, "joiner": "keyed_concat"},
    {"name": "n11", "flat_map": {"split": " "}, "input": "n9"},
    {"name": "to-out2", "to": "out2", "input": "n11"},
]
EVENTS = [
    {"topic": "t10", "key": "k3", "value": {"f": "k1"}, "ts": 0},
    {"topic": "s2", "key": "k3", "value": None, "ts": 0},
]


def scenario(semantics: str) -> TopologyScenario:
    return TopologyScenario.from_dict({"semantics": semantics, "partitions": 1, "topology": TOPOLOGY, "events": EVENTS})


def test_a_skipped_record_after_a_released_one_is_accounted_for_alone() -> None:
    trace = scenario("4.0.1").run()
    assert [(r.key, r.value) for r in trace.outputs("out2")] == [('k3/1-{"f":"k1"}', 'k3/1-{"f":"k1"}')]


@pytest.mark.parametrize("version", ["4.4.0", "4.0.1", "3.6.2"])
def test_the_real_library_agrees(built, version: str) -> None:
    judge_random_batch(version, lambda rng: scenario(version), 0, scenario(version))
