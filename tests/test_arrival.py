"""A lagging side (``arrival``): the order in which a task takes its records when one input
partition's records reach it late, as Kafka Streams does with ``max.task.idle.ms = 0``."""

from __future__ import annotations

import random
import re

import pytest

from kjoin import Scenario, ScenarioError, run
from kjoin.ordering import arrival_order, merge_by_timestamp
from kjoin.scenario import Arrival

ORDERS_AND_CUSTOMERS = {
    "join": "stream-table",
    "variant": "left",
    "events": [
        {"side": "right", "key": "c1", "value": "Ann", "ts": 1000},
        {"side": "left", "key": "c1", "value": "o1", "ts": 2000},
        {"side": "right", "key": "c2", "value": "Bob", "ts": 3000},
        {"side": "left", "key": "c2", "value": "o2", "ts": 4000},
        {"side": "left", "key": "c1", "value": "o3", "ts": 9000},
    ],
}


def customers_of_orders(arrival):
    data = dict(ORDERS_AND_CUSTOMERS, **({} if arrival is None else {"arrival": arrival}))
    trace = run(Scenario.from_dict(data))
    return trace, {o.left: o.right for s in trace.steps for o in s.outputs}


def test_a_lagging_customers_partition_leaves_early_orders_without_their_customer():
    _, listed = customers_of_orders(None)
    _, buffered = customers_of_orders({"right": {"lag_ms": 0}})
    assert listed == buffered == {"o1": "Ann", "o2": "Bob", "o3": "Ann"}, "both buffered: every order joins"
    trace, lagging = customers_of_orders({"right": {"lag_ms": 5000}})
    assert lagging == {"o1": None, "o2": None, "o3": "Ann"}
    # customers reach the task at 6000 and 8000: both orders before them go first, o3 (9000) after
    assert [(s.record.side.value, s.record.ts) for s in trace.steps] == [
        ("left", 2000),
        ("left", 4000),
        ("right", 1000),
        ("right", 3000),
        ("left", 9000),
    ]
    first, second = trace.steps[0], trace.steps[1]
    assert "this record's partner (offset 0, key 'c1', ts 1000)" in first.explain
    assert "had not arrived yet" in first.explain and "max.task.idle.ms" in first.explain
    assert "its next record (offset 0, key 'c1', ts 1000)" in second.explain
    assert "this record's partner (offset 1, ts 3000) had not arrived yet either" in second.explain
    assert all("lagged" not in s.explain for s in trace.steps[2:]), "in timestamp order from there on"
    assert [s.record.offset for s in trace.steps if s.record.side.value == "right"] == [0, 1], "offsets kept"


def test_a_partition_lag_is_told_in_the_users_terms():
    """One partition's own lag: the explanation names the partition, the lag as a duration and times as dates."""
    t = 1_795_000_000_000  # 2026-11-18 11:06:40 UTC
    data = {
        "join": "stream-table",
        "variant": "left",
        "partitions": 2,
        "arrival": {"right": {"partitions": {"1": 90_000}}},
        "events": [
            {"side": "right", "key": "c1", "value": "Ann", "ts": t, "partition": 1},
            {"side": "left", "key": "c1", "value": "o1", "ts": t + 60_000, "partition": 1},
        ],
    }
    first = run(Scenario.from_dict(data)).steps[0]
    assert first.record.value == "o1"
    assert first.explain.endswith(
        "The right topic's partition 1 lagged 1 min 30 s (arrival: {right: {partitions: {1: 90000}}}): this record's "
        "partner (offset 0, key 'c1', 2026-11-18 11:06:40.000 UTC) has an earlier timestamp but had not arrived yet "
        "(it reaches the task at 2026-11-18 11:08:10.000 UTC at the earliest), and with max.task.idle.ms = 0 the task "
        "processed what it had. Had the task waited (max.task.idle.ms), it would have taken them first."
    ), first.explain


@pytest.mark.parametrize("join", ["stream-table", "stream-stream", "table-table"])
def test_a_lagging_steps_whole_text_gives_an_applications_times_as_dates(join):
    """The step's own text before the lag sentence (the record, what its lookup found, the window, the buffer) writes
    an application's timestamps as dates too, as kjoin.times does: no raw epoch milliseconds anywhere."""
    t = 1_795_000_000_000  # 2026-11-18 11:06:40 UTC
    window = {"window": {"before_ms": 2000, "after_ms": 2000, "grace_ms": 0}} if join == "stream-stream" else {}
    events = [("right", "c1", "Ann", t), ("left", "c1", "o1", t + 1000), ("left", "c2", "o2", t + 1500)]
    events += [("right", "c1", "Ann2", t + 1200), ("left", "c1", "o3", t + 9000)]
    data = {
        "join": join,
        "variant": "left",
        "arrival": {"right": {"lag_ms": 5000}},
        **window,
        "events": [{"side": s, "key": k, "value": v, "ts": ts} for s, k, v, ts in events],
    }
    steps = run(Scenario.from_dict(data)).steps
    texts = [step.explain for step in steps]
    raw = [text for text in texts if re.search(r"\d{12,}", text)]
    assert not raw, raw
    first, last = texts[0], texts[-1]
    assert "The right partition lagged 5 s" in first, first
    if join == "table-table":
        assert first.startswith("left table update sets o1 for key c1 at 2026-11-18 11:06:41.000 UTC; "), first
        assert "the right table has Ann2 at 2026-11-18 11:06:41.200 UTC" in last, last
        return
    assert first.startswith("left o1 at 2026-11-18 11:06:41.000 UTC (key c1) "), first
    assert last.startswith("left o3 at 2026-11-18 11:06:49.000 UTC (key c1) "), last
    if join == "stream-table":
        assert "found Ann2 at 2026-11-18 11:06:41.200 UTC" in last, last
    if join == "stream-stream":
        assert "window [2026-11-18 11:06:39.000 UTC, 11:06:43.000 UTC]" in first, first
        assert "until stream time passes 2026-11-18 11:06:43.000 UTC" in first, first


def test_no_lag_is_the_timestamp_merge_and_a_partition_keeps_its_order():
    rng = random.Random(7)
    for _ in range(200):
        events = [
            {
                "side": rng.choice(["left", "right"]),
                "key": rng.choice("abc"),
                "value": "v",
                "ts": rng.randrange(50),
                "partition": rng.randrange(2),
            }
            for _ in range(rng.randrange(1, 15))
        ]
        data = {"join": "stream-table", "variant": "left", "partitions": 2, "events": events}
        records = Scenario.from_dict(data).records()
        lefts = [r for r in records if r.side.value == "left"]
        rights = [r for r in records if r.side.value == "right"]
        zero = [r for r, _ in arrival_order(records, Arrival())]
        for partition in (0, 1):
            mine = [r for r in zero if r.partition == partition]
            assert mine == [r for r in merge_by_timestamp(lefts, rights) if r.partition == partition]
        lag = Arrival(rng.randrange(30), rng.randrange(30))
        lagged = [r for r, _ in arrival_order(records, lag)]
        assert sorted(lagged, key=records.index) == records, "every record, once"
        for where in {(r.side, r.partition) for r in records}:
            assert [r for r in lagged if (r.side, r.partition) == where] == [
                r for r in records if (r.side, r.partition) == where
            ], "each partition's log order"


def test_arrival_round_trips_through_the_document():
    scenario = Scenario.from_dict(dict(ORDERS_AND_CUSTOMERS, arrival={"right": {"lag_ms": 5000}}))
    assert scenario.arrival == Arrival(0, 5000)
    assert Scenario.from_dict(scenario.to_dict()) == scenario


@pytest.mark.parametrize(
    "arrival, message",
    [
        (5, r"arrival: expected the lag of a side, like \{right: \{lag_ms: 5000\}\}, got 5"),
        ({"customers": {"lag_ms": 1}}, r"arrival.customers: unknown field; the sides are left, right"),
        ({"right": 5000}, r"arrival.right: expected \{lag_ms: milliseconds\}, got 5000"),
        ({"right": {"lag": 5}}, r"arrival.right.lag: unknown field \(did you mean 'lag_ms'\?\); the fields are lag_ms"),
        ({"left": {"lag_ms": -1}}, r"arrival.left.lag_ms: expected a non-negative integer"),
        ({"left": {"lag_ms": 1.5}}, r"arrival.left.lag_ms: expected a non-negative integer"),
    ],
)
def test_a_bad_arrival_is_refused_naming_the_field(arrival, message):
    with pytest.raises(ScenarioError, match=message):
        Scenario.from_dict(dict(ORDERS_AND_CUSTOMERS, arrival=arrival))


def test_arrival_is_refused_where_no_side_can_lag():
    self_join = {
        "join": "stream-stream",
        "variant": "inner",
        "self_join": True,
        "window": {"before_ms": 5, "after_ms": 5, "grace_ms": 0},
        "events": [{"side": "left", "key": "k", "value": "A", "ts": 1}],
        "arrival": {"right": {"lag_ms": 5}},
    }
    with pytest.raises(ScenarioError, match="arrival: a self-join reads one topic"):
        Scenario.from_dict(self_join)
    fk = {
        "join": "fk",
        "variant": "inner",
        "foreign_key": "fk",
        "events": [{"side": "left", "key": "k", "value": {"fk": "x"}, "ts": 1}],
        "arrival": {"right": {"lag_ms": 5}},
    }
    with pytest.raises(ScenarioError, match="arrival: a foreign-key join's order across tasks is set by its delivery"):
        Scenario.from_dict(fk)


def test_every_joins_and_topologys_step_text_gives_an_applications_times_as_dates():
    """Not only the single joins' lag texts: a versioned table's lookup, a foreign-key join's subscription and
    response, a topology's records, views, aggregate and table-table join write an application's timestamps as
    dates (kjoin.times.at), never as raw epoch milliseconds."""
    from kjoin.topology.document import TopologyScenario

    t = 1_795_000_000_000  # 2026-11-18 11:06:40 UTC
    versioned = {
        "join": "stream-table",
        "variant": "left",
        "right": {"versioned": True, "history_retention_ms": 60_000},
        "events": [{"side": "right", "key": "c1", "value": "Ann", "ts": t},
                   {"side": "right", "key": "c1", "value": "Ann2", "ts": t + 2000},
                   {"side": "left", "key": "c1", "value": "o1", "ts": t + 1000}],
    }  # fmt: skip
    fk = {
        "join": "fk",
        "variant": "left",
        "foreign_key": "c",
        "events": [{"side": "right", "key": "c1", "value": "Ann", "ts": t},
                   {"side": "left", "key": "o1", "value": {"c": "c1"}, "ts": t + 1000},
                   {"side": "right", "key": "c1", "value": "Ann2", "ts": t + 2000}],
    }  # fmt: skip
    texts = [step.explain for data in (versioned, fk) for step in run(Scenario.from_dict(data)).steps]
    assert "Ann at 2026-11-18 11:06:40.000 UTC" in " ".join(texts[:3]), texts[:3]
    topology = {
        "topology": [
            {"name": "customers", "table": "customers"},
            {"name": "addresses", "table": "addresses"},
            {"name": "kept", "filter": {"key_not_in": ["c2"]}, "input": "customers", "materialized": True},
            {"name": "j", "outer_join": ["kept", "addresses"]},
            {"name": "by-v", "group_by": {"field": "v"}, "input": "customers"},
            {"name": "counts", "count": True, "input": "by-v"},
            {"name": "out", "to": "out", "input": "j"},
            {"name": "out2", "to": "out2", "input": "counts"},
        ],
        "events": [{"topic": "customers", "key": "c1", "value": {"v": "A"}, "ts": t},
                   {"topic": "addresses", "key": "c1", "value": "X", "ts": t + 1000},
                   {"topic": "customers", "key": "c1", "value": {"v": "B"}, "ts": t + 2000},
                   {"topic": "customers", "key": "c2", "value": {"v": "A"}, "ts": t + 3000}],
    }  # fmt: skip
    trace = TopologyScenario.from_dict(topology).run()
    texts += [step.explain() for step in trace.steps]
    raw = [text for text in texts if re.search(r"\d{12,}", text)]
    assert not raw, raw
    assert any("at 2026-11-18 11:06:42.000 UTC" in text for text in texts[-4:]), texts[-4:]


# -- Spark ----------------------------------------------------------------------------------------
@pytest.mark.spark
def test_spark_runs_lagging_scenarios_as_the_engine(spark):
    from tests.spark_compare import assert_same, spark_results

    from kjoin.spark import run_scenarios

    rng = random.Random(3)
    scenarios = []
    for join, variant, window in (
        ("stream-table", "left", None),
        ("stream-stream", "outer", {"before_ms": 5, "after_ms": 5, "grace_ms": 2}),
        ("table-table", "outer", None),
    ):
        for _ in range(6):
            events = [
                {
                    "side": rng.choice(["left", "right"]),
                    "key": rng.choice(["a", "b", "c"]),
                    "value": None if rng.random() < 0.15 else f"v{rng.randrange(9)}",
                    "ts": rng.randrange(60),
                }
                for _ in range(rng.randrange(3, 20))
            ]
            lag = {rng.choice(["left", "right"]): {"lag_ms": rng.randrange(40)}}
            data = {"join": join, "variant": variant, "partitions": 2, "events": events, "arrival": lag}
            if window:
                data["window"] = window
            scenarios.append(Scenario.from_dict(data))
    assert_same(scenarios, *spark_results(run_scenarios(spark, scenarios)))


def test_timestamps_past_the_year_9999_stay_milliseconds():
    """Kafka's largest timestamp (Long.MAX_VALUE) has no date: the texts give its milliseconds, not a crash."""
    from kjoin.times import DATE_UNTIL_MS, at, moment, span, when

    largest = 2**63 - 1
    assert when(largest) == f"ts {largest}" and at("A", largest) == f"A@{largest}" and moment(largest) == str(largest)
    assert when(DATE_UNTIL_MS) == "9999-12-31 23:59:59.999 UTC"
    assert span(DATE_UNTIL_MS, largest) == f"[9999-12-31 23:59:59.999 UTC, ts {largest}]"
