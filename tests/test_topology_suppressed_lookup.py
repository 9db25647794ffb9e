"""A time-limit suppression read as a table by a stream's join (``KTableSuppressProcessorSupplier``'s value getter):
a key the buffer holds answers with its prior value, what the suppression last let through; any other key with the
suppressed table's input row. Judged by the real library on random topologies (4.4.0 and the oldest judge)."""

from __future__ import annotations

import random

import pytest

import kjoin
from kjoin.topology.document import TopologyScenario
from kafka_oracle import oracle_check, topology_oracle

ASK = {"topic": "asks", "key": "c1", "value": "q"}


def counts_joined() -> kjoin.Topology:
    b = kjoin.Topology(semantics="4.4")
    counts = b.stream("orders").group_by(lambda k, v: v["c"]).count().suppress("time_limit", time_limit_ms=5)
    b.stream("asks").left_join(counts).to("out")
    return b


def test_a_held_key_answers_with_what_the_suppression_last_let_through():
    events = [
        # count 1 held at 1; its prior is the count's old value, the initializer's 0 (Change(1, 0))
        {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 1},
        {**ASK, "ts": 2},
        # count 2 replaces it in place (buffered at 1, non-resetting), then 7 - 5 >= 1: 2 goes out, nothing held
        {"topic": "orders", "key": "o2", "value": {"c": "c1"}, "ts": 7},
        {**ASK, "ts": 8},
        # count 3 held at 13, its prior 2
        {"topic": "orders", "key": "o3", "value": {"c": "c1"}, "ts": 13},
        {**ASK, "ts": 14},
    ]
    trace = counts_joined().run(events)
    answers = [r.value for records in trace.outputs_by_event() for r in records if r.topic == "out"]
    assert answers == ["q-0", "q-2", "q-2"]  # the count upstream is 1, 2 and 3 by then


def test_other_reads_of_a_suppressed_table_stay_refused():
    b = kjoin.Topology()
    table = b.stream("orders").group_by_key().count().suppress("time_limit", time_limit_ms=5, name="held")
    with pytest.raises(kjoin.TopologyError, match="held is a suppressed table"):
        table.map_values(str)
    with pytest.raises(kjoin.TopologyError, match="held is a suppressed table"):
        b.table("customers").join(table)


def _random(rng: random.Random) -> TopologyScenario:
    aggregation = rng.choice([{"count": True}, {"reduce": "concat"}, {"aggregate": "concat"}])
    bound = rng.choice([{}, {"max_records": 1}, {"max_records": 2}])
    suppress = {"until": "time_limit", "time_limit_ms": rng.choice([0, 3, 10]), **bound}
    nodes = [
        {"name": "orders", "stream": "orders"},
        {"name": "asks", "stream": "asks"},
        {"name": "by-c", "group_by": {"field": "c"}, "input": "orders"},
        {"name": "agg", **aggregation, "input": "by-c"},
        {"name": "held", "suppress": suppress, "input": "agg"},
        {"name": "j", rng.choice(["join", "left_join"]): ["asks", "held"]},
        {"name": "out", "to": "out", "input": "j"},
        {"name": "out2", "to": "out2", "input": "held"},
    ]
    events = []
    for _ in range(rng.randint(6, 20)):
        if rng.random() < 0.5:
            value = None if rng.random() < 0.1 else {"c": rng.choice(["c1", "c2"])}
            events.append({"topic": "orders", "key": rng.choice(["o1", "o2", "o3"]), "value": value})
        else:
            events.append({"topic": "asks", "key": rng.choice(["c1", "c2"]), "value": "q"})
        events[-1]["ts"] = rng.randint(0, 30)
    return TopologyScenario.from_dict({"semantics": "4.4", "topology": nodes, "events": events})


@pytest.mark.oracle
@pytest.mark.parametrize("version", ["4.4.0", "2.4.1"])
def test_the_real_library_answers_a_join_of_a_suppressed_table_as_kjoin_does(version):
    oracle_check.build()
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    batch = [_random(rng) for _ in range(30)]
    for case, answer in zip(batch, topology_oracle.run_batch(version, batch)):
        found = topology_oracle.difference(case, answer, version)
        assert found is None, f"seed {seed}: {topology_oracle.document(case)}\n{found}"


def evicted_then_joined() -> TopologyScenario:
    """A suppression's own evictions joined back to it (``held -> to_stream -> left_join(held)``): Kafka's
    ``evictWhile`` emits an entry before it removes it from the buffer, so the join reads the key still held."""
    events = [("a", 101), ("b", 15513), ("c", 15700), ("d", 15900)]
    return TopologyScenario.from_dict(
        {
            "semantics": "4.4",
            "topology": [
                {"name": "t", "table": "t"},
                {"name": "held", "suppress": {"until": "time_limit", "time_limit_ms": 100}, "input": "t"},
                {"name": "changes", "to_stream": True, "input": "held"},
                {"name": "j", "left_join": ["changes", "held"]},
                {"name": "out", "to": "out", "input": "j"},
            ],
            "events": [{"topic": "t", "key": "k1", "value": value, "ts": ts} for value, ts in events],
        }
    )


def test_an_evicted_record_joined_below_reads_its_key_still_held():
    trace = evicted_then_joined().run()
    answers = [r.value for records in trace.outputs_by_event() for r in records if r.topic == "out"]
    # b goes out with the prior value of the entry a started (none); d with the one c started (b)
    assert answers == ["b-null", "d-b"]


@pytest.mark.oracle
def test_the_real_library_joins_an_evicted_record_with_its_key_still_held():
    oracle_check.build()
    case = evicted_then_joined()
    (answer,) = topology_oracle.run_batch("4.4.0", [case])
    assert topology_oracle.difference(case, answer, "4.4.0") is None
