"""What-if on topics: ``run_join(..., arrival=...)`` orders each task as the reference engine's ``arrival:``
model does (a lagging side, or one lagging partition), a differential test against ``kjoin.run`` on random topics;
and the smallest lag that explains a set of null results, with the summary of how many a lag would explain."""

from __future__ import annotations

import random

import pytest

from kjoin import Scenario, run
from kjoin.scenario import Arrival
from kjoin.spark import SparkInputError, Topic, run_join
from kjoin.spark.debug.whatif import LagSummary

pytestmark = pytest.mark.spark

PARTITIONS = 3


def topics(spark, rows):
    schema = "key string, value string, ts long, partition int, offset long"
    return [Topic(spark.createDataFrame(rows[side], schema), PARTITIONS) for side in ("left", "right")]


def random_rows(seed, per_partition=25):
    """Each side's partitions: keys of a few, timestamps mostly rising with some written out of order."""
    rng = random.Random(seed)
    rows = {"left": [], "right": []}
    for side in rows:
        for p in range(PARTITIONS):
            ts = rng.randrange(10)
            for offset in range(per_partition):
                ts = max(0, ts + rng.randrange(0, 25) - (30 if rng.random() < 0.1 else 0))
                value = None if rng.random() < 0.08 else f"{side[0]}{p}.{offset}"
                rows[side].append((f"k{rng.randrange(5)}", value, ts, p, offset))
    return rows


def engine_outputs(rows, join, variant, window, arrival):
    events = [
        {"side": side, "key": k, "value": v, "ts": ts, "partition": p, "offset": o}
        for side in ("left", "right")
        for (k, v, ts, p, o) in rows[side]
    ]
    document = {"join": join, "variant": variant, "partitions": PARTITIONS, "events": events, "arrival": arrival}
    if window:
        document["window"] = window
    scenario = Scenario.from_dict(document)
    found, in_task = {}, {}
    for step in run(scenario).steps:
        r = step.record
        number = in_task[r.partition] = in_task.get(r.partition, -1) + 1  # the step in its task, as Spark's
        for o in step.outputs:
            found.setdefault(r.partition, []).append(
                (number, r.side.value, r.offset, o.key, o.left, o.right, o.ts, o.kind.value)
            )
    return scenario, found


def spark_outputs(result):
    found = {}
    for row in result.outputs.collect():
        found.setdefault(row["partition"], []).append(
            (row["step"], row["side"], row["offset"], row["key"], row["left"], row["right"], row["ts"], row["kind"])
        )
    return found


CASES = [
    ("stream-table", "left", None, {"right": {"lag_ms": 40, "partitions": {"1": 300}}}),
    ("stream-stream", "outer", {"before_ms": 20, "after_ms": 20, "grace_ms": 5}, {"left": {"partitions": {"2": 90}}}),
    ("table-table", "outer", None, {"left": {"lag_ms": 15}, "right": {"partitions": {"0": 120}}}),
]


@pytest.mark.parametrize("join, variant, window, arrival", CASES, ids=[c[0] for c in CASES])
def test_run_join_with_arrival_agrees_with_the_reference_engine(spark, join, variant, window, arrival):
    rows = random_rows(hash(join) % 1000)
    scenario, expected = engine_outputs(rows, join, variant, window, arrival)
    lags = scenario.arrival
    assert lags.partition_lags("left") or lags.partition_lags("right"), "a partition lags on its own"
    python_arrival = {
        side: {**lag, "partitions": {int(p): v for p, v in lag.get("partitions", {}).items()}}
        for side, lag in arrival.items()
    }
    result = run_join(*topics(spark, rows), join, variant, window=window, arrival=python_arrival)
    assert spark_outputs(result) == expected
    without = spark_outputs(run_join(*topics(spark, rows), join, variant, window=window))
    assert without != expected, "the lag changes the order, so the test can tell"


def test_a_partition_lag_is_the_arrival_field_and_round_trips():
    scenario = Scenario.from_dict(
        {"join": "stream-table", "variant": "left", "events": [], "arrival": {"right": {"partitions": {"2": 500}}}}
    )
    assert scenario.arrival == Arrival(0, 0, (), ((2, 500),))
    assert scenario.arrival.lag_ms("right", 2) == 500 and scenario.arrival.lag_ms("right", 1) == 0
    assert Scenario.from_dict(scenario.to_dict()) == scenario
    with pytest.raises(Exception, match=r"arrival.right.partitions: 'x' is not a partition number"):
        Scenario.from_dict(
            {"join": "stream-table", "variant": "left", "events": [], "arrival": {"right": {"partitions": {"x": 5}}}}
        )


# Customers written before their orders; partition 1's customers reach the task late in the real application.
LAGGED = {
    "left": [("a", "o-a", 150, 1, 0), ("b", "o-b", 400, 1, 1), ("c", "o-c", 500, 0, 0)],
    "right": [("a", "A", 100, 1, 0), ("b", "B", 300, 1, 1), ("b", "B2", 350, 1, 2), ("c", "C", 480, 0, 0)],
}


def test_the_smallest_lag_that_explains_a_set_of_nulls(spark):
    result = run_join(*topics(spark, LAGGED), "stream-table", "left")
    assert all(r["right"] is not None for r in result.outputs.collect()), "all data present: every order joins"
    search = result.smallest_lag([(1, 0), (1, 1)], side="right", partition=1)
    # o-b needs both of its customers (ts 300, 350) to reach the task after it (ts 400): a lag of 101 ms at least.
    assert search.lag_ms == 101 and search.arrival == {"right": {"partitions": {1: 101}}}
    assert search.tried[101] == 2 and max(n for lag, n in search.tried.items() if lag < 101) < 2
    assert str(search).startswith("a lag of 101 ms of the right topic's partition 1 explains all 2 null results")
    app = result.with_arrival(search.arrival)
    lagged = {r["left"]: r["right"] for r in app.outputs.collect()}
    assert lagged == {"o-a": None, "o-b": None, "o-c": "C"}, "the other partition does not lag"
    # why, in the what-if run, names the partition that lagged and when its customer reached the task
    d = app.why(1, 1)
    assert d.verdict == "partner-processed-later", d.text
    assert (
        "The right topic's partition 1 lagged 101 ms (arrival: {right: {partitions: {1: 101}}}) in this run: the "
        "record reached its task at ts 401 at the earliest, 1 ms after the left record's timestamp" in d.text
    ), d.text
    assert "kjoin assumes" not in d.text, "the run models the lag: no caveat that it assumed none"
    one = result.lag_summary(60, partition=1)
    summary = {(r["partition"], r["key"]): r["lag-explains"] for r in one.frame.collect()}
    assert summary == {(1, "a"): 1, (1, "b"): 0, (0, "c"): 0}, "60 ms of partition 1 explains o-a's null only"
    assert (one.null_results, one.explained, one.by_partition) == (1, 1, {1: 1})
    assert str(one) == (
        "a lag of 60 ms of the right topic's partition 1 explains 1 of the 1 null results under it (null with the "
        "lag, joined without it): 1 in partition 1; most for keys 'a' (1)"
    )
    whole = result.lag_summary(60)
    assert {(r["partition"], r["key"]): r["lag-explains"] for r in whole.frame.collect()}[(0, "c")] == 1
    assert whole.by_partition == {0: 1, 1: 1} and "explains 2 of the 2 null results" in str(whole), str(whole)
    assert "1 in partition 0, 1 in partition 1" in str(whole) and "of the right topic explains" in str(whole)
    none = LagSummary(5001, "left", None, whole.frame, null_results=3, explained=0)
    assert str(none) == (
        "a lag of 5.001 s of the left topic explains none of the 3 null results under it: each is null without the "
        "lag too (ask why of them)"
    )
    nothing = result.smallest_lag([(0, 0)], side="right", partition=1)
    assert nothing.lag_ms is None and "no lag of the right topic's partition 1 tried explains all 1" in str(nothing)


def test_run_scenarios_results_cannot_be_joined_again(spark):
    from kjoin.spark import run_scenarios

    result = run_scenarios(spark, [Scenario.from_dict({"join": "stream-table", "variant": "left", "events": []})])
    with pytest.raises(SparkInputError, match="only a run_join result"):
        result.with_arrival({"right": {"lag_ms": 5}})
