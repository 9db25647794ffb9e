"""The key split (:mod:`kjoin.spark.passes.split`): a Kafka task's keys on several Spark tasks, exact.

Differential: every join the split serves (stream-table and table-table over unversioned tables), every variant and
era, on the vectorised pass and on the processors, forced on with three buckets, equals the reference engine; a
topic's tasks split by ``run_join`` (steps from the clock rows) give the same rows as unsplit and Kafka's processing
order, with the held side spilled and tiny Arrow batches. The joins it cannot split are refused with their reason.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from pyspark.sql import functions as F

from kjoin.spark import SparkInputError, run_join, run_scenarios
from kjoin.spark.passes.merge import HELD_ROWS_CONF
from kjoin.spark.passes.split import spark_hash_long
from tests.spark_compare import assert_same, random_batch, small_arrow_batches, spark_results
from tests.test_spark_order import kafka_order, tasks, topics

SETTINGS = settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
    database=None,
)


def _by_step(rows: list[tuple]) -> list[tuple]:
    """A split run's rows in each task's emission order: a stable sort by (scenario, partition, step) (every
    record's rows come from its own bucket, in emission order)."""
    return sorted(rows, key=lambda row: (row[0], row[1], row[2]))


@pytest.mark.parametrize("kind", ["stream-table", "table-table"])
@pytest.mark.parametrize("method", ["vectorised", "processors"])
def test_the_split_runs_every_join_it_serves_as_the_reference_engine(spark, kind, method):
    batch = random_batch(29, kind, per_combo=2)
    with small_arrow_batches(spark):
        result = run_scenarios(spark, batch, method=method, key_split=3)
        assert (result.method, result.key_buckets) == (method, 3)
        outputs, steps = spark_results(result)
    assert outputs and steps
    assert_same(batch, _by_step(outputs), _by_step(steps))


def _rows(result) -> list[tuple]:
    columns = ["row", "partition", "step", "side", "offset", "key", "left", "right", "value", "ts", "kind", "fate"]
    rows = [tuple(row) for row in result.results.select(*columns).collect()]
    return sorted(rows, key=lambda row: (row[1], row[2], row[0]))


@SETTINGS
@given(cases=tasks(max_tasks=3, min_records=1))
def test_run_join_split_by_key_equals_the_whole_task_and_kafkas_order(spark, cases):
    """Each bucket's steps come from its clock rows: a record's step is its place in Kafka's processing order of
    the whole task, and every row equals the unsplit run's."""
    left_topic, right_topic, left, right = topics(spark, cases)
    for join, variant in (("stream-table", "left"), ("table-table", "outer")):
        whole = _rows(run_join(left_topic, right_topic, join, variant, key_split="off"))
        spark.conf.set(HELD_ROWS_CONF, "1")  # the held side goes to its spill file after one record
        try:
            with small_arrow_batches(spark, 3):
                split = run_join(left_topic, right_topic, join, variant, key_split=3)
                assert split.key_buckets == 3
                got = _rows(split)
        finally:
            spark.conf.unset(HELD_ROWS_CONF)
        assert got == whole
        for partition in range(len(cases)):
            placed = sorted({(row[2], row[3], row[4]) for row in got if row[1] == partition})
            assert [(side, offset) for _, side, offset in placed] == kafka_order(left, right, partition)
            assert [step for step, _, _ in placed] == list(range(len(placed)))


def test_auto_splits_a_topic_with_fewer_partitions_than_cores(spark):
    left, right, _, _ = topics(spark, [([("a", "A", 1)], [("a", "a", 0)])])
    cores = spark.sparkContext.defaultParallelism
    assert cores >= 2, "the Spark tests run on local[2] or more"
    assert run_join(left, right, "stream-table", "left").key_buckets == 1  # off by default: measured slower
    run = run_join(left, right, "stream-table", "left", key_split="auto")
    assert run.key_buckets == cores
    assert [row["value"] for row in run.outputs.collect()] == ["A-a"]
    assert run_join(left, right, "stream-table", "left", key_split="off").key_buckets == 1
    assert run_join(left, right, "stream-table", "left", method="native", key_split="auto").key_buckets == 1


@pytest.mark.parametrize(
    "join, options, reason",
    [
        ("stream-stream", None, "stream time"),
        ("stream-table", {"right": {"versioned": True, "history_retention_ms": 100}}, "history retention"),
    ],
)
def test_a_join_whose_rules_read_other_keys_clocks_is_not_split(spark, join, options, reason):
    left, right, _, _ = topics(spark, [([("a", "A", 1)], [("a", "a", 0)])])
    window = 10 if join == "stream-stream" else None
    with pytest.raises(SparkInputError, match=f"key_split='on' cannot split.*{reason}"):
        run_join(left, right, join, "left", window=window, options=options, key_split="on")
    assert run_join(left, right, join, "left", window=window, options=options, key_split="auto").key_buckets == 1


def test_key_split_names_what_it_takes(spark):
    left, right, _, _ = topics(spark, [([("a", "A", 1)], [("a", "a", 0)])])
    with pytest.raises(SparkInputError, match="key_split: expected one of auto | on | off or a number"):
        run_join(left, right, "stream-table", "left", key_split="yes")
    with pytest.raises(SparkInputError, match="method='native' runs Spark SQL windows"):
        run_join(left, right, "stream-table", "left", method="native", key_split="on")


def test_the_routes_hash_as_sparks_hash_partitioning(spark):
    """The buckets' routes rely on Spark's hash of a long: the Python copy agrees with Spark's ``hash()``."""
    values = [0, 1, -1, 7, 2**31, -(2**31) - 5, 2**62 + 3, -(2**63), 2**63 - 1, *range(100, 140)]
    frame = spark.createDataFrame([(v,) for v in values], "v long").select("v", F.hash("v").alias("h"))
    assert {row["v"]: row["h"] for row in frame.collect()} == {v: spark_hash_long(v) for v in values}
