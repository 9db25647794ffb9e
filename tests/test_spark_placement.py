"""Placement (:mod:`kjoin.spark.placement`): each Kafka task in a Spark task of its own, with no second shuffle.

Spark's hash partitioning by ``(scenario, partition)`` sent both tasks of a 2-partition topic to one Spark task, and
tasks 0 and 2 of a 4-partition one. These tests read where the rows ran (``spark_partition_id()``) and the physical
plan of the records frame and of the results (one Exchange: the placement, which the windows reuse)."""

from __future__ import annotations

import re

import pytest
from pyspark.sql import functions as F

from kjoin.spark import Topic, run_join, run_scenarios
from kjoin.spark.placement import task_numbers
from tests.spark_compare import random_batch

pytestmark = pytest.mark.spark


def _topic(spark, partitions: int) -> Topic:
    frame = spark.range(120).select(
        F.concat(F.lit("k"), (F.col("id") % 7).cast("string")).alias("key"),
        F.col("id").cast("string").alias("value"),
        (F.col("id") * 3 % 41).alias("ts"),
        (F.col("id") % partitions).cast("int").alias("partition"),
        F.col("id").alias("offset"),
    )
    return Topic(frame, partitions=partitions)


def _tasks_per_spark_task(frame) -> dict[int, set[tuple[int, int]]]:
    """Spark partition -> the Kafka tasks ``(scenario, partition)`` whose rows ran there."""
    placed: dict[int, set[tuple[int, int]]] = {}
    rows = frame.select(F.spark_partition_id().alias("_sp"), "scenario", "partition").distinct().collect()
    for row in rows:
        placed.setdefault(row["_sp"], set()).add((row["scenario"], row["partition"]))
    return placed


def _exchanges(frame) -> list[str]:
    """The shuffles of ``frame``'s final physical plan (after adaptive execution ran it)."""
    frame.collect()
    plan = frame._jdf.queryExecution().executedPlan().toString().split("== Initial Plan ==")[0]
    return re.findall(r"Exchange (\w+)\(", plan)


@pytest.mark.parametrize("partitions, method", [(2, "native"), (4, "vectorised")])
def test_run_join_runs_each_kafka_task_in_a_spark_task_of_its_own_with_one_shuffle(spark, partitions, method):
    result = run_join(_topic(spark, partitions), _topic(spark, partitions), "stream-table", "left", method=method)
    assert result.method == method
    for frame in (result.records, result.results):
        placed = _tasks_per_spark_task(frame)
        assert sorted(placed.values(), key=sorted) == [{(0, p)} for p in range(partitions)]
        # The records frame's windows (and the native plan's) reuse the placement: no second shuffle.
        assert _exchanges(frame) == ["shufflepartitionidpassthrough"]


def test_run_scenarios_numbers_the_tasks_of_every_scenario(spark):
    """Primary-key scenarios by Kafka task; a foreign-key scenario crosses tasks and runs whole, as one task."""
    batch = random_batch(7, "stream-table", per_combo=1, max_events=12)[:5] + random_batch(7, "fk", 1, 12)[:3]
    tasks = {(i, r.partition) for i, scenario in enumerate(batch[:5]) for r in scenario.records()}
    numbered = sum(max(p for s, p in tasks if s == i) + 1 for i in {s for s, _ in tasks})  # empty ones too
    result = run_scenarios(spark, batch, method="processors", spark_partitions=numbered)
    placed = _tasks_per_spark_task(result.results.where(F.col("scenario") < 5))
    assert all(len(found) == 1 for found in placed.values())
    assert set().union(*placed.values()) == tasks
    whole = result.results.where(F.col("scenario") >= 5).select(F.spark_partition_id().alias("_sp"), "scenario")
    per_spark_task = [row["count"] for row in whole.distinct().groupBy("_sp").count().collect()]
    assert per_spark_task == [1] * whole.select("scenario").distinct().count() and len(per_spark_task) >= 2


def test_task_numbers_count_the_tasks_in_scenario_order(spark):
    rows = [(0, 0), (0, 1), (2, 0), (2, 1), (2, 2), (5, 0)]
    frame = spark.createDataFrame(rows, "scenario long, partition int")
    numbered = frame.select(task_numbers({0: 2, 2: 3, 5: 1}).alias("n")).collect()
    assert [row["n"] for row in numbered] == [0, 1, 2, 3, 4, 5]
