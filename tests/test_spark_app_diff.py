"""``run_topology(...).diff(...)``: the whole app's diff on Spark, the same as ``kjoin diff`` on its document; and a
join run's diff saying what it cannot see and what to set instead."""

from __future__ import annotations

import copy
import json
import warnings

import pytest

from kjoin.topology.diff import diff
from kjoin.records import render_value
from kjoin.spark import SparkInputError, Topic, run_join, run_topology
from kjoin.topology.document import TopologyScenario
from tests.test_topology_diff import APP
from tests.topology_spark_check import spark_topics

pytestmark = pytest.mark.spark

STAGES = {**copy.deepcopy(APP), "schedule": "stages"}  # the schedule Spark runs
STAGES["events"] += [  # a record late for its window in c1's own task: dropped with no grace, counted with 50 ms
    {"topic": "orders", "key": "o6", "value": {"customer": "c1"}, "ts": 300},
    {"topic": "orders", "key": "o6", "value": {"customer": "c1"}, "ts": 220},  # same key: same partition
]


def _split(differences):
    """(change, topic, key, value, ts) per record: a changed one as removed and added, as the app diff shows it."""
    found = []
    for d in differences:
        for change, record in (("removed", d.before), ("added", d.after)):
            if record is not None:
                key = None if record["key"] is None else render_value(record["key"])
                found.append((change, record["topic"], key, record["value"], record["ts"], d.rules))
    return sorted(found, key=str)


def _text(value):
    return value if isinstance(value, str) or value is None else json.dumps(value, separators=(",", ":"))


@pytest.fixture(scope="module")
def app_run(spark):
    scenario = TopologyScenario.from_dict(STAGES)
    return run_topology(spark, scenario.topology, spark_topics(spark, scenario))


def test_the_app_diff_on_spark_is_kjoin_diff_of_the_document(app_run):
    on_spark = app_run.diff(semantics="4.4", set={"per_hour.grace_ms": 0})
    reference = diff(STAGES, from_="3.6", to="4.4", set={"per_hour.grace_ms": 0})
    got = sorted(
        ((d.change, (d.before or d.after)["topic"], (d.before or d.after)["key"], (d.before or d.after)["value"],
          (d.before or d.after)["ts"], d.rules) for d in on_spark),
        key=str,
    )  # fmt: skip
    want = [(c, t, k, _text(v), ts, rules) for c, t, k, v, ts, rules in _split(reference)]
    assert got == want
    assert on_spark.counts() == {name: len(found) for name, found in reference.by_rule().items()}
    assert on_spark.counts()["relaxed_null_keys"] == 2 and on_spark.counts()["per_hour.grace_ms"] >= 1
    assert "enriched-orders" in on_spark.table() and "relaxed_null_keys (2)" in on_spark.table()


def test_an_app_setting_the_topology_does_not_have_is_named_before_any_run(app_run):
    with pytest.raises(SparkInputError, match=r"not a setting of node per_hour .*per_hour\.grace_ms"):
        app_run.diff(set={"per_hour.grace": 0})
    with pytest.raises(
        SparkInputError, match=r"enriched\.grace_ms needs a versioned table.*customers\.history_retention"
    ):
        app_run.diff(set={"enriched.grace_ms": 0})


def _join_topics(spark):
    schema = "key string, value string, ts long, partition int, offset long"
    left = spark.createDataFrame([("c1", json.dumps({"o": 1}), 2, 0, 0)], schema)
    right = spark.createDataFrame([("c1", json.dumps("Alice"), 1, 0, 0)], schema)
    return Topic(left, 1, json_values=True, source="orders"), Topic(right, 1, json_values=True, source="customers")


def test_a_join_diff_warns_of_the_slow_path_once_and_says_what_it_cannot_see(spark):
    left, right = _join_topics(spark)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_join(left, right, "stream-table", "left", semantics="3.6")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = result.diff(semantics="4.4")
        text = found.table()
    slow = [w for w in caught if w.category.__name__ == "SlowPathWarning"]
    assert len(slow) == 1
    assert "not seen by this diff of one join: relaxed_null_keys also acts upstream" in text


def test_a_join_diff_says_what_to_set_instead_of_a_window_or_an_unversioned_grace(spark):
    left, right = _join_topics(spark)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_join(left, right, "stream-table", "left")
        with pytest.raises(SparkInputError, match=r"has no window .*grace_ms.*right\.versioned.*NODE\.grace_ms"):
            result.diff(set={"window.grace_ms": 0})
        with pytest.raises(SparkInputError, match=r"needs a versioned right table.*run_topology\(\.\.\.\)\.diff"):
            result.diff(grace_ms=0)


def test_a_reopened_join_run_diffs_from_the_records_it_wrote(spark, tmp_path):
    from kjoin.spark import open_run

    schema = "key string, value string, ts long, partition int, offset long"
    left = spark.createDataFrame([("c1", json.dumps({"o": 1}), 2, 0, 0), (None, json.dumps({"o": 2}), 3, 0, 1)], schema)
    right = spark.createDataFrame([("c1", json.dumps("Alice"), 1, 0, 0)], schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_join(
            Topic(left, 1, json_values=True, source="orders"),
            Topic(right, 1, json_values=True, source="customers"),
            "stream-table",
            "left",
            semantics="3.6",
        )
        result.write_parquet(str(tmp_path / "run"), why_index=True)
        reopened = open_run(str(tmp_path / "run"), spark=spark)
        fresh = [
            (d.change, d.input.offset, d.after and d.after["value"], d.rules) for d in result.diff(semantics="4.4")
        ]
        again = [
            (d.change, d.input.offset, d.after and d.after["value"], d.rules) for d in reopened.diff(semantics="4.4")
        ]
    assert again == fresh and len(fresh) == 1 and fresh[0][3] == ("relaxed_null_keys",)


def test_an_app_reconciled_with_its_upgraded_output_puts_every_difference_down_to_the_version(spark, app_run):
    upgraded = TopologyScenario.from_dict({**STAGES, "semantics": "4.4"}).run()
    rows = [(r.key, _text(r.value), r.ts) for r in upgraded.outputs("enriched-orders")]
    actual = spark.createDataFrame(rows, "key string, value string, ts long")
    told_nothing = app_run.reconcile(actual, topic="enriched-orders")
    assert told_nothing.counts == {"unexplained": 2}
    assert "try a lag of the partitions the app's tasks read" in str(told_nothing)
    found = app_run.reconcile(actual, topic="enriched-orders", semantics="4.4")
    assert found.explained and found.counts == {"version": 2} and found.switches == {"relaxed_null_keys": 2}
    with pytest.raises(SparkInputError, match=r"name the output topic .*counts, enriched-orders"):
        app_run.reconcile(actual)
