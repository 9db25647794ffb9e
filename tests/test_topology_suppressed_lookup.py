"""A time-limit suppression read as a table by a stream's join, a table-table join or a table's filter or map_values
(``KTableSuppressProcessorSupplier``'s value getter): a key the buffer holds answers with its prior value, what the
suppression last let through, at an unknown timestamp (-1); any other key with the suppressed table's input row. An
eviction goes on as ``Change(new, old)`` with its latest update's old value. Judged by the real library on random
topologies (4.4.0 and 2.4.1 for a stream's join; 4.4.0 and 2.6.3 for table reads) and pinned cases."""

from __future__ import annotations

import random

import pytest

import kjoin
from kjoin.topology.document import TopologyScenario
from kafka_oracle import oracle_check, topology_oracle
from tests.topology_pinned import judge_random_batch

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


def regrouped(semantics: str = "4.4") -> TopologyScenario:
    """Customers held for 10 ms, regrouped by region and counted: the group-by reads what the suppression forwards,
    ``Change(new, old)`` with the latest buffered update's old value, which the count may never have added."""
    return TopologyScenario.from_dict(
        {
            "semantics": semantics,
            "topology": [
                {"name": "t", "table": "t"},
                {"name": "held", "suppress": {"until": "time_limit", "time_limit_ms": 10}, "input": "t"},
                {"name": "by-region", "group_by": {"field": "r"}, "input": "held"},
                {"name": "counts", "count": True, "input": "by-region"},
                {"name": "out", "to": "out", "input": "counts"},
            ],
            "events": [
                {"topic": "t", "key": "c1", "value": {"r": "r1"}, "ts": 1},  # held: Change(r1, null)
                {"topic": "t", "key": "c1", "value": {"r": "r2"}, "ts": 3},  # replaces it: Change(r2, old r1)
                {"topic": "t", "key": "c2", "value": {"r": "r2"}, "ts": 11},  # c1 goes out: -1 for r1, +1 for r2
                {"topic": "t", "key": "c3", "value": {"r": "r1"}, "ts": 30},  # c2 goes out
            ],
        }
    )


def test_a_group_by_of_a_suppressed_table_subtracts_the_latest_updates_old_value():
    rows = [[(r.key, r.value) for r in records] for records in regrouped().run().outputs_by_event()]
    # the eviction's old value r1 was never added: r1 has no count, so KTableAggregate skips the subtraction and writes
    # what it holds, a tombstone
    assert rows == [[], [], [("r1", None), ("r2", 1)], [("r2", 2)]]


def _random_regrouped(rng: random.Random, semantics: str) -> TopologyScenario:
    """A table held for a time limit (bounded or not), now and then filtered, regrouped by a field and aggregated."""
    bound = rng.choice([{}, {"max_records": 1}, {"max_records": 2}])
    suppress = {"until": "time_limit", "time_limit_ms": rng.choice([0, 3, 10]), **bound}
    nodes: list[dict] = [{"name": "t", "table": "t"}, {"name": "held", "suppress": suppress, "input": "t"}]
    read = "held"
    if rng.random() < 0.3:
        nodes.append({"name": "view", "filter": {"value_not_null": True}, "input": "held"})
        read = "view"
    aggregation = rng.choice([{"count": True}, {"reduce": "concat"}, {"aggregate": "concat"}])
    nodes += [
        {"name": "regrouped", "group_by": {"field": "c"}, "input": read},
        {"name": "agg", **aggregation, "input": "regrouped"},
        {"name": "out", "to": "out", "input": "agg"},
    ]
    if rng.random() < 0.5:
        nodes.append({"name": "out2", "to": "out2", "input": "held"})
    events = []
    for _ in range(rng.randint(6, 20)):
        value = None if rng.random() < 0.15 else {"c": rng.choice(["c1", "c2", "c3"]), "v": rng.choice("AB")}
        events.append({"topic": "t", "key": rng.choice(["k1", "k2", "k3"]), "value": value, "ts": rng.randint(0, 30)})
    return TopologyScenario.from_dict({"semantics": semantics, "topology": nodes, "events": events})


@pytest.mark.oracle
@pytest.mark.parametrize("version", ["4.4.0", "3.3.2", "2.8.2"])
def test_the_real_library_regroups_a_suppressed_table_as_kjoin_does(version):
    """The pinned case and 20 random ones per version, one JVM each."""
    judge_random_batch(version, lambda rng: _random_regrouped(rng, version), 20, regrouped(version))


def test_spark_regroups_a_suppressed_table_as_the_reference_engine_does(spark):
    from tests.topology_spark_check import difference  # Spark's modules only where a session runs

    assert difference(spark, regrouped()) is None


def held_in_a_table_join(variant: str, semantics: str = "4.4") -> TopologyScenario:
    """``t`` held for 10 ms, joined (left side) with ``u``; a filter of the held table beside it."""
    return TopologyScenario.from_dict(
        {
            "semantics": semantics,
            "topology": [
                {"name": "t", "table": "t"},
                {"name": "u", "table": "u"},
                {"name": "held", "suppress": {"until": "time_limit", "time_limit_ms": 10}, "input": "t"},
                {"name": "j", variant: ["held", "u"]},
                {"name": "out", "to": "out", "input": "j"},
                {"name": "kept", "filter": {"key_in": ["c1"]}, "input": "held"},
                {"name": "out2", "to": "out2", "input": "kept"},
            ],
            "events": [
                {"topic": "t", "key": "c1", "value": "A", "ts": 1},  # held, its prior none
                {"topic": "u", "key": "c1", "value": "U", "ts": 3},  # reads held's prior: nothing to join
                {"topic": "t", "key": "c1", "value": None, "ts": 5},  # Change(null, A) replaces it in place
                {"topic": "t", "key": "c2", "value": "B", "ts": 11},  # c1 evicted: Change(null, old A)
                {"topic": "u", "key": "c2", "value": "V", "ts": 12},  # c2 held: its prior none again
                {"topic": "t", "key": "c3", "value": "C", "ts": 30},  # c2 evicted at its own ts 11
            ],
        }
    )


def test_a_table_join_reads_a_held_keys_prior_value_and_an_evictions_old_value():
    rows = [
        [(r.topic, r.key, r.value, r.ts) for r in rec]
        for rec in held_in_a_table_join("left_join").run().outputs_by_event()
    ]
    assert rows == [
        [],
        [],  # U finds c1 held, its prior none: a left join's right side has no left row
        [],
        # the eviction's old value A says a result existed: the left join forwards its tombstone (and the filter too)
        [("out", "c1", None, 5), ("out2", "c1", None, 5)],
        [],  # V finds c2 held, its prior none
        [("out", "c2", "B-V", 12)],  # the prior's unknown timestamp (-1) leaves the join's own: max(11, 12)
    ]
    inner = held_in_a_table_join("join").run().outputs_by_event()
    assert [(r.topic, r.key, r.value) for r in inner[3]] == [("out", "c1", None), ("out2", "c1", None)]


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
    judge_random_batch(version, _random, 30)


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


@pytest.mark.oracle
@pytest.mark.parametrize("version", ["4.4.0", "2.6.3"])
def test_the_real_library_joins_a_held_table_as_kjoin_does(version):
    oracle_check.build()
    cases = [held_in_a_table_join(variant, version) for variant in ("join", "left_join", "outer_join")]
    for case, answer in zip(cases, topology_oracle.run_batch(version, cases)):
        assert topology_oracle.difference(case, answer, version) is None


def _random_table_read(rng: random.Random, semantics: str) -> TopologyScenario:
    """A time-limit suppression of a table or a count, read by a view (materialized or not) and a table-table join
    on either side, each now and then, with a filter below the join."""
    bound = rng.choice([{}, {}, {"max_records": 1}, {"max_records": 2}])
    suppress = {"until": "time_limit", "time_limit_ms": rng.choice([0, 3, 10]), **bound}
    nodes: list[dict] = [
        {"name": "orders", "stream": "orders"},
        {"name": "t", "table": "t"},
        {"name": "u", "table": "u"},
    ]
    under = "t"
    if rng.random() < 0.5:
        nodes += [{"name": "by-c", "group_by": {"field": "c"}, "input": "orders"},
                  {"name": "agg", "count": True, "input": "by-c"}]  # fmt: skip
        under = "agg"
    nodes.append({"name": "held", "suppress": suppress, "input": under})
    read = "held"
    if rng.random() < 0.5:
        op = rng.choice(["filter", "map_values", "filter_not"])
        view = {"name": "view", op: {"append": "!"} if op == "map_values" else {"key_in": ["c1"]}, "input": "held"}
        nodes.append(view | ({"materialized": True} if rng.random() < 0.3 else {}))
        read = "view"
    variant = rng.choice(["join", "left_join", "outer_join", None])
    if variant is not None:
        nodes.append({"name": "j", variant: [read, "u"] if rng.random() < 0.5 else ["u", read]})
        read = "j"
        if rng.random() < 0.3:
            nodes.append({"name": "after", "filter": {"value_not_null": True}, "input": "j"})
            read = "after"
    nodes.append({"name": "out", "to": "out", "input": read})
    if rng.random() < 0.5:
        nodes.append({"name": "out2", "to": "out2", "input": "held"})
    events = []
    for _ in range(rng.randint(6, 20)):
        topic = rng.choice(["orders", "t", "u"])
        key = rng.choice(["o1", "o2", "o3"]) if topic == "orders" else rng.choice(["c1", "c2"])
        value = {"c": rng.choice(["c1", "c2"])} if topic == "orders" else rng.choice("ABC")
        events.append({"topic": topic, "key": key, "value": None if rng.random() < 0.15 else value})
        events[-1]["ts"] = rng.randint(0, 30)
    return TopologyScenario.from_dict({"semantics": semantics, "topology": nodes, "events": events})


@pytest.mark.oracle
@pytest.mark.parametrize("version", ["4.4.0", "2.6.3"])
def test_the_real_library_reads_a_suppressed_table_as_a_table_as_kjoin_does(version):
    judge_random_batch(version, lambda rng: _random_table_read(rng, version), 40)


def test_spark_reads_a_held_table_as_the_reference_engine_does(spark):
    from tests.topology_spark_check import difference  # Spark's modules only where a session runs

    assert difference(spark, held_in_a_table_join("left_join")) is None  # a table join and a filter of the buffer
