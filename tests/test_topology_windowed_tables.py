"""Windowed tables joined inside a topology: two windowed aggregates join by their windowed key (Kafka's
``Windowed<K>`` value getters), judged by the real library; a windowed table and a plain one are refused with
kjoin's error naming both nodes."""

from __future__ import annotations

import random

import pytest

import kjoin
from kjoin.topology.document import TopologyScenario
from kafka_oracle import topology_oracle

WINDOWS = {
    "tumbling": {"size_ms": 5, "grace_ms": 2},
    "hopping": {"size_ms": 6, "advance_ms": 2, "grace_ms": 1},
    "session": {"inactivity_gap_ms": 3, "grace_ms": 2},
    "sliding": {"time_difference_ms": 4, "grace_ms": 1},
}


def windowed_join(window: dict, variant: str, seed: int) -> TopologyScenario:
    """Orders and payments counted (reduced) in the same windows, the two windowed tables joined; events with late
    and out-of-order timestamps so that windows close and fall behind their store's retention."""
    rng = random.Random(seed)
    events = [
        {"topic": rng.choice(["orders", "payments"]), "key": rng.choice(["c1", "c2"]), "value": f"v{i}",
         "ts": max(0, i * 2 + rng.randint(-6, 3))}
        for i in range(14)
    ]  # fmt: skip
    return TopologyScenario.from_dict({
        "topology": [
            {"name": "orders", "stream": "orders"},
            {"name": "payments", "stream": "payments"},
            {"name": "o-grouped", "group_by_key": True, "input": "orders"},
            {"name": "p-grouped", "group_by_key": True, "input": "payments"},
            {"name": "o-windows", "windowed_by": window, "input": "o-grouped"},
            {"name": "p-windows", "windowed_by": window, "input": "p-grouped"},
            {"name": "o-count", "count": True, "input": "o-windows"},
            {"name": "p-reduce", "reduce": "concat", "input": "p-windows"},
            {"name": "joined", variant: ["o-count", "p-reduce"]},
            {"name": "out", "to": "out", "input": "joined"},
        ],
        "events": events,
    })  # fmt: skip


@pytest.mark.parametrize("version", ["4.4.0", "3.6.2"])
def test_two_windowed_tables_join_by_their_windowed_key_as_in_kafka(built, version):
    """Each window kind and join variant, two event orders each: the same outputs as Kafka's, event by event."""
    batch = [
        windowed_join(window, variant, seed)
        for window in WINDOWS.values()
        for variant in ("join", "left_join", "outer_join")
        for seed in (1, 2)
    ]
    answers = topology_oracle.run_batch(version, batch)
    problems = [topology_oracle.difference(s, a, version) for s, a in zip(batch, answers)]
    assert [p for p in problems if p] == []
    joined = sum(len(rows) for answer in answers for rows in answer["outputs"])
    assert joined > 100  # the joins emit: a sample of silent topologies would judge nothing


def test_a_windowed_table_join_reads_the_other_window_by_its_start():
    """A late payment (within the grace) updates its window, which finds the order of the same window."""
    b = kjoin.Topology()
    orders = b.stream("orders").group_by_key().windowed_by({"size_ms": 10, "grace_ms": 5}).count()
    payments = b.stream("payments").group_by_key().windowed_by({"size_ms": 10, "grace_ms": 5}).count()
    orders.outer_join(payments, lambda left, right: [left, right]).to("out")
    trace = b.run([
        {"topic": "orders", "key": "k", "value": "a", "ts": 1},
        {"topic": "payments", "key": "k", "value": "b", "ts": 12},
        {"topic": "payments", "key": "k", "value": "c", "ts": 3},
    ])  # fmt: skip
    assert [(o.key, o.value, o.ts) for o in trace.outputs()] == [
        ("[k@0/10]", [1, None], 1),
        ("[k@10/20]", [None, 1], 12),
        ("[k@0/10]", [1, 1], 3),
    ]


@pytest.mark.parametrize("variant", ["join", "left_join", "outer_join"])
def test_a_windowed_table_and_a_plain_table_are_refused_naming_both(variant):
    b = kjoin.Topology()
    counts = b.stream("orders").group_by_key().windowed_by({"size_ms": 10}).count(name="per-window")
    customers = b.table("customers")
    with pytest.raises(kjoin.TopologyError, match="per-window and customers: per-window is keyed by window"):
        getattr(counts, variant)(customers)
    with pytest.raises(kjoin.TopologyError, match="customers and kept: kept is keyed by window"):
        getattr(customers, variant)(counts.filter(lambda key, value: True, name="kept"))


def test_a_stream_join_with_a_windowed_table_is_refused_naming_both():
    b = kjoin.Topology()
    counts = b.stream("orders").group_by_key().windowed_by({"inactivity_gap_ms": 5}).count(name="sessions")
    with pytest.raises(kjoin.TopologyError, match="payments and sessions: sessions is keyed by window"):
        b.stream("payments").join(counts)
