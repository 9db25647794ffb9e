"""A foreign-key join of a table's ``filter``, ``filterNot`` or ``mapValues`` (a view), on either side
(``KTableImpl.doJoinOnForeignKey``: ``enableSendingOldValues(true)`` on both tables; the subscription and response
joins read each table's value getter).

* The join asks both views for old values: a filter then forwards no tombstone for a row it never held (the join
  sees nothing), and the subscriptions follow the view's ``Change(new, old)``: a row the left filter drops
  unsubscribes, one it lets in again subscribes.
* A response is resolved against the left view's value getter, a subscription joined with the right view's: a
  filtered-out row is absent, a mapped one mapped.

Judged by the real library on pinned and random cases on 4.4.0, 3.6.2, 2.8.2 and 2.4.1 (one JVM each)."""

from __future__ import annotations

import json
import random

import pytest

from kjoin.topology.document import TopologyScenario
from kafka_oracle import oracle_check, topology_oracle

JUDGES = ("4.4.0", "3.6.2", "2.8.2", "2.4.1")


def filtered_orders(semantics: str = "4.4", variant: str = "join") -> TopologyScenario:
    """Orders filtered by key (o2 is never in the view), joined by their customer with the customers table."""
    return TopologyScenario.from_dict(
        {
            "semantics": semantics,
            "topology": [
                {"name": "orders", "table": "orders"},
                {"name": "customers", "table": "customers"},
                {"name": "kept", "filter": {"key_not_in": ["o2"]}, "input": "orders"},
                {"name": "j", variant: ["kept", "customers"], "foreign_key": "c"},
                {"name": "out", "to": "out", "input": "j"},
            ],
            "events": [
                {"topic": "customers", "key": "c1", "value": "C1", "ts": 0},
                {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 1},  # subscribes: o1-C1
                {"topic": "orders", "key": "o2", "value": {"c": "c1"}, "ts": 2},  # filtered out, never held: nothing
                {"topic": "orders", "key": "o2", "value": None, "ts": 3},  # a tombstone the view drops: nothing
                {"topic": "customers", "key": "c1", "value": "C1'", "ts": 4},  # o1 only
                {"topic": "orders", "key": "o1", "value": None, "ts": 5},  # unsubscribes: a tombstone for o1
            ],
        }
    )


def mapped_customers(semantics: str = "4.4", variant: str = "left_join") -> TopologyScenario:
    """Customers filtered (null values out) and mapped, the right side of the orders' foreign-key join."""
    return TopologyScenario.from_dict(
        {
            "semantics": semantics,
            "topology": [
                {"name": "orders", "table": "orders"},
                {"name": "customers", "table": "customers"},
                {"name": "named", "filter_not": {"key_in": ["c9"]}, "input": "customers"},
                {"name": "shown", "map_values": {"append": "!"}, "input": "named"},
                {"name": "j", variant: ["orders", "shown"], "foreign_key": "c"},
                {"name": "out", "to": "out", "input": "j"},
            ],
            "events": [
                {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 1},  # left: o1-null
                {"topic": "customers", "key": "c1", "value": "C1", "ts": 2},  # o1-C1!
                {"topic": "customers", "key": "c9", "value": "C9", "ts": 3},  # filtered out: nothing
                {"topic": "orders", "key": "o2", "value": {"c": "c9"}, "ts": 4},  # c9 is not in the view: o2-null
                {"topic": "customers", "key": "c1", "value": None, "ts": 5},  # o1-null
            ],
        }
    )


PINNED = (filtered_orders, mapped_customers)


def test_a_filter_that_never_held_a_row_sends_the_join_nothing():
    outputs = topology_oracle.kjoin_outputs(filtered_orders())
    assert [len(rows) for rows in outputs] == [0, 1, 0, 0, 1, 1]
    assert outputs[5] == [["out", "o1", None, 5]]


def test_the_right_view_answers_with_its_mapped_value():
    outputs = topology_oracle.kjoin_outputs(mapped_customers())
    assert [[row[1], row[2]] for rows in outputs for row in rows] == [
        ["o1", '{"c":"c1"}-null'],
        ["o1", '{"c":"c1"}-C1!'],
        ["o2", '{"c":"c9"}-null'],
        ["o1", '{"c":"c1"}-null'],
    ]


def _view(rng: random.Random, name: str, parent: str, keys: list[str]) -> dict:
    roll = rng.random()
    if roll < 0.35:
        spec: dict = {"filter": {rng.choice(["key_in", "key_not_in"]): rng.sample(keys, 2)}}
    elif roll < 0.5:
        spec = {"filter": {"value_not_null": True}}
    elif roll < 0.65:
        spec = {"filter_not": {"key_in": rng.sample(keys, 1)}}
    else:
        spec = {"map_values": {"append": "!"}}
    node = {"name": name, **spec, "input": parent}
    roll = rng.random()
    if roll < 0.25:
        node["materialized"] = True
    elif roll < 0.4:
        node["store"] = f"{name}-store"
    return node


def _random(rng: random.Random, semantics: str) -> TopologyScenario:
    """A view on the left, the right or both sides of a foreign-key join (two views in a row now and then); the left
    table sometimes a table-table join (its foreign key in the joined object's left value); an intermediate sink."""
    nodes: list[dict] = [{"name": "l", "table": "l"}, {"name": "r", "table": "r"}]
    left, right, joined = "l", "r", rng.random() < 0.3
    if joined:
        nodes += [
            {"name": "l2", "table": "l2"},
            {"name": "lj", rng.choice(["join", "left_join", "outer_join"]): ["l", "l2"], "joiner": "object"},
        ]
        left = "lj"
    sides = rng.choice([("left",), ("right",), ("left", "right")])
    if "left" in sides:
        for index in range(1 if rng.random() < 0.8 else 2):
            nodes.append(_view(rng, f"lv{index}", left, ["k1", "k2", "k3"]))
            left = f"lv{index}"
    if "right" in sides:
        nodes.append(_view(rng, "rv", right, ["x", "y", "z"]))
        right = "rv"
    path = "left.f" if joined else "f"
    join = {"name": "j", rng.choice(["join", "left_join"]): [left, right], "foreign_key": path}
    if semantics.startswith("4.") and rng.random() < 0.3:
        join["foreign_key"] = {"key_or_field": path}
    nodes += [join, {"name": "out", "to": "out", "input": "j"}]
    if rng.random() < 0.3:
        nodes.append({"name": "out2", "to": "out2", "input": left})
    events = []
    for _ in range(rng.randint(3, 40)):
        roll = rng.random()
        if roll < 0.5:
            value = rng.choice([{"f": rng.choice(["x", "y", "z"])}, {"f": "x"}, None, "x", {"g": 1}])
            events.append({"topic": "l", "key": rng.choice(["k1", "k2", "k3"]), "value": value})
        elif roll < 0.85 or not joined:
            value = rng.choice(["X", "Y", None, ""])
            events.append({"topic": "r", "key": rng.choice(["x", "y", "z", "k1"]), "value": value})
        else:
            events.append({"topic": "l2", "key": rng.choice(["k1", "k2", "k3"]), "value": rng.choice(["A", None])})
        events[-1]["ts"] = rng.randint(0, 50)
    return TopologyScenario.from_dict({"semantics": semantics, "topology": nodes, "events": events})


@pytest.mark.oracle
@pytest.mark.parametrize("version", JUDGES)
def test_the_real_library_joins_views_by_foreign_key_as_kjoin_does(version):
    """The pinned cases (both variants) and 60 random ones per version, one JVM each."""
    oracle_check.build()
    semantics = version
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    batch = [case(semantics, variant) for case in PINNED for variant in ("join", "left_join")]
    batch += [_random(rng, semantics) for _ in range(60)]
    answers = topology_oracle.run_batch(version, batch)
    assert [len(rows) for rows in answers[0]["outputs"]] == [0, 1, 0, 0, 1, 1]  # Kafka's, pinned above
    assert topology_oracle.disagreements(version, batch, answers) == [], f"seed {seed}"


def test_spark_joins_views_by_foreign_key_as_the_reference_engine_does(spark):
    """The pinned cases, and random ones on three partitions (seeded: the same cases every run)."""
    from tests.topology_spark_check import difference  # Spark's modules only where a session runs

    for case in PINNED:
        assert difference(spark, case()) is None, case.__name__
    rng = random.Random(46)
    for _ in range(4):
        scenario = topology_oracle.on_partitions(_random(rng, "4.4"), 3)
        assert difference(spark, scenario) is None, json.dumps(topology_oracle.document(scenario))
