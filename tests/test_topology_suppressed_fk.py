"""A foreign-key join of a time-limit suppression, on either side, and a group-by of a window-close suppression
(``KTableImpl.doJoinOnForeignKey``, ``KTableSuppressProcessorSupplier``, ``KTableImpl.groupBy``).

* Left (subscribing) side: the subscriptions follow the ``Change(new, old)`` the suppression forwards (its old value
  the latest buffered update's), and a response is resolved against the suppression's value getter (a key the buffer
  holds answers with its prior value: a response for it is stale while a newer value waits).
* Right (primary-key) side: an eviction is scanned against the subscriptions like any right update, and a
  subscription is joined with the suppression's value getter (a held key: its prior value).
* A window-close suppression's group-by: its selector sees the windowed key (``Windowed.key()``) and the final
  results go through a repartition topic to the aggregate, each final result ``Change(new, old)``.

Judged by the real library on pinned and random cases on 4.4.0, 3.3.2 and 2.8.2 (one JVM each)."""

from __future__ import annotations

import json
import random

import pytest

import kjoin
from kjoin.topology.document import TopologyScenario
from kafka_oracle import oracle_check, topology_oracle

JUDGES = ("4.4.0", "3.3.2", "2.8.2")


def held_orders(semantics: str = "4.4", variant: str = "join") -> TopologyScenario:
    """Orders held for 10 ms, joined by their customer field with the customers table."""
    return TopologyScenario.from_dict(
        {
            "semantics": semantics,
            "topology": [
                {"name": "orders", "table": "orders"},
                {"name": "customers", "table": "customers"},
                {"name": "held", "suppress": {"until": "time_limit", "time_limit_ms": 10}, "input": "orders"},
                {"name": "j", variant: ["held", "customers"], "foreign_key": "c"},
                {"name": "out", "to": "out", "input": "j"},
            ],
            "events": [
                {"topic": "customers", "key": "c1", "value": "C1", "ts": 0},
                {"topic": "customers", "key": "c2", "value": "C2", "ts": 0},
                {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 1},  # held
                {"topic": "orders", "key": "o1", "value": {"c": "c2"}, "ts": 3},  # replaces it: Change(c2, old c1)
                {"topic": "orders", "key": "o2", "value": {"c": "c1"}, "ts": 11},  # o1 goes out: subscribes to c2
                {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 12},  # o1 held again, its prior c2's
                {"topic": "customers", "key": "c2", "value": "C2'", "ts": 13},  # resolved against the prior value
                {"topic": "orders", "key": "o3", "value": {"c": "c2"}, "ts": 40},  # o2 and o1 (to c1) go out
            ],
        }
    )


def held_customers(semantics: str = "4.4", variant: str = "join") -> TopologyScenario:
    """Customers held for 10 ms, the right side of the orders' foreign-key join."""
    return TopologyScenario.from_dict(
        {
            "semantics": semantics,
            "topology": [
                {"name": "orders", "table": "orders"},
                {"name": "customers", "table": "customers"},
                {"name": "held", "suppress": {"until": "time_limit", "time_limit_ms": 10}, "input": "customers"},
                {"name": "j", variant: ["orders", "held"], "foreign_key": "c"},
                {"name": "out", "to": "out", "input": "j"},
            ],
            "events": [
                {"topic": "customers", "key": "c1", "value": "C1", "ts": 1},  # held
                {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 2},  # held c1 reads its prior: null
                {"topic": "customers", "key": "c1", "value": "C1'", "ts": 12},  # replaces C1 (held at 1): goes out
                {"topic": "orders", "key": "o2", "value": {"c": "c1"}, "ts": 13},
                {"topic": "customers", "key": "c1", "value": None, "ts": 30},  # the tombstone held
                {"topic": "customers", "key": "c9", "value": "C9", "ts": 50},  # the tombstone goes out
            ],
        }
    )


def regrouped_finals(semantics: str = "4.4") -> TopologyScenario:
    """Final per-window counts regrouped by their key (``Windowed.key()``) and summed as text."""
    return TopologyScenario.from_dict(
        {
            "semantics": semantics,
            "topology": [
                {"name": "clicks", "stream": "clicks"},
                {"name": "by-user", "group_by_key": True, "input": "clicks"},
                {"name": "windows", "windowed_by": {"size_ms": 10, "grace_ms": 0}, "input": "by-user"},
                {"name": "counts", "count": True, "input": "windows"},
                {"name": "finals", "suppress": {"until": "window_closes"}, "input": "counts"},
                {"name": "per-user", "group_by": {"window_key": True}, "input": "finals"},
                {"name": "totals", "reduce": "concat", "input": "per-user"},
                {"name": "out", "to": "out", "input": "totals"},
            ],
            "events": [
                {"topic": "clicks", "key": "u1", "value": "a", "ts": 1},
                {"topic": "clicks", "key": "u1", "value": "b", "ts": 5},
                {"topic": "clicks", "key": "u2", "value": "c", "ts": 8},
                {"topic": "clicks", "key": "u1", "value": "d", "ts": 12},  # closes [0, 10): u1's 2, u2's 1
                {"topic": "clicks", "key": "u2", "value": "e", "ts": 25},  # closes [10, 20): u1's 1
            ],
        }
    )


def outputs(scenario: TopologyScenario) -> list[list[tuple]]:
    """Per event, what it wrote to ``out``: ``(key, value, ts)``."""
    run = scenario.run().outputs_by_event()
    return [[(r.key, r.value, r.ts) for r in records if r.topic == "out"] for records in run]


def test_a_suppressed_left_side_subscribes_with_what_it_forwards():
    """o1's eviction subscribes to c2 (its latest value); a response for o1 while c1 waits is resolved against the
    prior value c2 (the join's own copy would hold c1 and drop it as stale); the next eviction moves it to c1."""
    o1 = '{"c":"c2"}'
    assert outputs(held_orders()) == [
        [], [], [], [], [("o1", f"{o1}-C2", 3)], [], [("o1", f"{o1}-C2'", 13)],
        [("o2", '{"c":"c1"}-C1', 11), ("o1", '{"c":"c1"}-C1', 12)],
    ]  # fmt: skip


def test_a_suppressed_right_side_answers_with_its_prior_value_while_it_holds_the_key():
    """A subscription to a held key is joined with its prior value (null: an inner join has nothing, a left join
    its left row alone); an eviction is scanned against the subscriptions like any right update."""
    o1, o2 = '{"c":"c1"}', '{"c":"c1"}'
    evictions = [[("o1", f"{o1}-C1'", 12)], [("o2", f"{o2}-C1'", 13)], []]
    assert outputs(held_customers()) == [[], [], *evictions, [("o1", None, 30), ("o2", None, 30)]]
    assert outputs(held_customers(variant="left_join")) == [
        [], [("o1", f"{o1}-null", 2)], *evictions, [("o1", f"{o1}-null", 30), ("o2", f"{o2}-null", 30)],
    ]  # fmt: skip


def test_a_window_close_suppression_is_regrouped_by_its_windowed_key():
    """Each final count goes to the reduce under its window's key; u1's window [10, 20) adds to its total, after
    the reduce subtracts the old value the final result carries: a new window's, the count's initializer 0."""
    assert outputs(regrouped_finals()) == [[], [], [], [("u1", 2, 5), ("u2", 1, 8)], [("u1", "2-0+1", 12)]]


def test_a_foreign_key_join_to_a_window_close_suppression_stays_refused():
    b = kjoin.Topology()
    finals = b.stream("a").group_by_key().windowed_by({"size_ms": 5}).count().suppress(name="final")
    finals.join(b.table("t"), foreign_key="c")  # each window's row subscribes: tests/test_topology_windowed_fk.py
    with pytest.raises(kjoin.TopologyError, match="its first subscription fails .ClassCastException"):
        b.table("u").left_join(finals, foreign_key="c")


_FINALS = [
    {"name": "s", "stream": "s"},
    {"name": "g", "group_by_key": True, "input": "s"},
    {"name": "w", "windowed_by": {"size_ms": 10, "grace_ms": 0}, "input": "g"},
    {"name": "agg", "count": True, "input": "w"},
    {"name": "final", "suppress": {"until": "window_closes"}, "input": "agg"},
]
_CLICKS = [{"topic": "s", "key": "k1", "value": "a", "ts": t} for t in (1, 15, 35)]


@pytest.mark.oracle
@pytest.mark.parametrize("version", JUDGES)
def test_the_real_library_builds_a_foreign_key_join_of_final_results_and_fails_one_to_them(version):
    """What kjoin's refusals say Kafka does (documents kjoin refuses, sent to the harness as they are): final
    results on the left build and run; on the right, a left row's first subscription stops the task."""
    oracle_check.build()
    left = [*_FINALS, {"name": "r", "table": "r"}, {"name": "j", "left_join": ["final", "r"], "foreign_key": "f"}]
    right = [*_FINALS, {"name": "l", "table": "l"}, {"name": "j", "left_join": ["l", "final"], "foreign_key": "f"}]
    docs = [
        {"topology": [*left, {"name": "out", "to": "out", "input": "j"}], "events": _CLICKS},
        {"topology": [*right, {"name": "out", "to": "out", "input": "j"}],
         "events": [{"topic": "l", "key": "x", "value": {"f": "k1"}, "ts": 0}, *_CLICKS]},
    ]  # fmt: skip
    kept = topology_oracle.harness(version)
    kept.send([json.dumps({"partitions": 1, "outputs": ["out"], **doc, "id": i}) for i, doc in enumerate(docs)])
    built, failed = kept.receive(len(docs))
    assert "error" not in built and built["describe"]["fk_topics"] == 2
    assert failed.get("failed_at") == 0 and "ClassCastException" in failed["error"], failed


def _random_fk(rng: random.Random, semantics: str) -> TopologyScenario:
    """A time-limit suppression (bounded or not) on the left, the right or both sides of a foreign-key join."""

    def suppress() -> dict:
        bound = rng.choice([{}, {}, {"max_records": 1}, {"max_records": 2}])
        return {"until": "time_limit", "time_limit_ms": rng.choice([0, 3, 10]), **bound}

    sides = rng.choice([("left",), ("right",), ("left", "right")])
    nodes: list[dict] = [{"name": "l", "table": "l"}, {"name": "r", "table": "r"}]
    read = {"left": "l", "right": "r"}
    for side in sides:
        nodes.append({"name": f"held-{side}", "suppress": suppress(), "input": read[side]})
        read[side] = f"held-{side}"
    variant = rng.choice(["join", "left_join"])
    nodes += [
        {"name": "j", variant: [read["left"], read["right"]], "foreign_key": "f"},
        {"name": "out", "to": "out", "input": "j"},
    ]
    if rng.random() < 0.3:
        nodes.append({"name": "out2", "to": "out2", "input": read[rng.choice(sides)]})
    events = []
    for _ in range(rng.randint(6, 20)):
        if rng.random() < 0.5:
            value = None if rng.random() < 0.15 else {"f": rng.choice(["f1", "f2", None]), "v": rng.choice("AB")}
            events.append({"topic": "l", "key": rng.choice(["k1", "k2", "k3"]), "value": value})
        else:
            value = None if rng.random() < 0.2 else rng.choice(["X", "Y", "Z"])
            events.append({"topic": "r", "key": rng.choice(["f1", "f2"]), "value": value})
        events[-1]["ts"] = rng.randint(0, 30)
    return TopologyScenario.from_dict({"semantics": semantics, "topology": nodes, "events": events})


def _random_regrouped(rng: random.Random, semantics: str) -> TopologyScenario:
    """A windowed aggregate (tumbling, hopping, session or sliding windows) held until its windows close or for a
    time limit, regrouped by ``Windowed.key()`` and aggregated."""
    grace = rng.choice([0, 5])
    window = rng.choice(
        [
            {"size_ms": 10, "grace_ms": grace},
            {"size_ms": 10, "advance_ms": 5, "grace_ms": grace},
            {"inactivity_gap_ms": 4, "grace_ms": grace},
            {"time_difference_ms": 6, "grace_ms": grace},
        ]
    )
    suppress = {"until": "window_closes"}
    if rng.random() < 0.3:
        suppress = {"until": "time_limit", "time_limit_ms": rng.choice([0, 5])}
    nodes: list[dict] = [
        {"name": "s", "stream": "s"},
        {"name": "g", "group_by_key": True, "input": "s"},
        {"name": "w", "windowed_by": window, "input": "g"},
        {"name": "agg", **rng.choice([{"count": True}, {"reduce": "concat"}]), "input": "w"},
        {"name": "finals", "suppress": suppress, "input": "agg"},
        {"name": "regrouped", "group_by": {"window_key": True}, "input": "finals"},
        {"name": "total", **rng.choice([{"count": True}, {"reduce": "concat"}, {"aggregate": "concat"}]),
         "input": "regrouped"},
        {"name": "out", "to": "out", "input": "total"},
    ]  # fmt: skip
    events = [
        {"topic": "s", "key": rng.choice(["k1", "k2"]), "value": rng.choice("ABC"), "ts": rng.randint(0, 60)}
        for _ in range(rng.randint(6, 20))
    ]
    return TopologyScenario.from_dict({"semantics": semantics, "topology": nodes, "events": events})


@pytest.mark.oracle
@pytest.mark.parametrize("version", JUDGES)
def test_the_real_library_joins_and_regroups_suppressed_tables_as_kjoin_does(version):
    """The pinned cases and 15 random ones of each shape per version, one JVM each."""
    oracle_check.build()
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    semantics = version
    batch = [
        held_orders(semantics),
        held_orders(semantics, "left_join"),
        held_customers(semantics),
        held_customers(semantics, "left_join"),
        regrouped_finals(semantics),
        *(_random_fk(rng, semantics) for _ in range(15)),
        *(_random_regrouped(rng, semantics) for _ in range(15)),
    ]
    assert topology_oracle.disagreements(version, batch) == [], f"seed {seed}"


@pytest.mark.parametrize("case", [held_orders, held_customers, regrouped_finals])
def test_spark_joins_and_regroups_suppressed_tables_as_the_reference_engine_does(spark, case):
    from tests.topology_spark_check import difference  # Spark's modules only where a session runs

    assert difference(spark, case()) is None


def test_spark_joins_and_regroups_random_suppressed_tables_on_three_partitions(spark):
    """A random case of each shape on three partitions (seeded: the same cases every run)."""
    from tests.topology_spark_check import difference  # Spark's modules only where a session runs

    rng = random.Random(44)
    for draw in (_random_fk, _random_regrouped):
        case = draw(rng, "4.4")
        scenario = topology_oracle.on_partitions(case, 3)
        assert difference(spark, scenario) is None, topology_oracle.document(scenario)
