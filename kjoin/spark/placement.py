"""Placement: which Spark task runs each Kafka task.

The per-task passes need every record of a Kafka task ``(scenario, partition)`` in one Spark partition. Spark's hash
partitioning (``repartition(n, "scenario", "partition")``) sends a row to ``pmod(murmur3(scenario, partition), n)``,
and its hash collides: into 2 Spark partitions it sent both tasks of a 2-partition topic to one (a 2-partition topic
ran on one core), into 4 tasks 0 and 2 to one, into 6 only 4 were used (docs/benchmarks.md, "The key
split"). kjoin numbers the tasks instead and places task ``i`` in Spark partition ``i mod n``
(``repartitionById``, Spark 4.1+, classic and Connect alike): with at least as many Spark partitions as tasks each
task has a Spark task of its own, with fewer they are dealt round-robin.

* :func:`by_partition`: :func:`kjoin.spark.run_join`'s records (one scenario, 0), numbered by their Kafka partition.
  The window functions over them (the records frame's running maxima and tie ranks, the native plan, the why index)
  partition by ``(scenario, partition, ...)``, and Spark's pass-through partitioning on the ``partition`` column
  satisfies them: no second shuffle (``tests/test_spark_placement.py`` reads the physical plan).
* :func:`by_task`: many scenarios, numbered in scenario order (:func:`task_numbers`). A window over such a frame
  would shuffle again (the number is computed, not a column the window partitions by), so only the per-task passes,
  which read each Spark partition as it is, take it; :func:`clustered` keeps Spark's hash for the native plan's
  windows over many scenarios.

Without a Spark partition count (``spark_partitions=None`` on many scenarios) Spark's adaptive execution picks one,
by hash, and may coalesce small tasks into one Spark task: many small scenarios run faster that way.
"""

from __future__ import annotations

from typing import Any, Mapping

from pyspark.sql import functions as F

__all__ = ["by_partition", "by_task", "clustered", "task_numbers"]


def by_partition(frame: Any, spark_partitions: int) -> Any:
    """``frame`` (one scenario: Kafka partitions ``0 .. P - 1``) with Kafka partition ``p`` in Spark partition
    ``p mod spark_partitions``."""
    return frame.repartitionById(spark_partitions, F.col("partition").cast("int"))


def task_numbers(counts: Mapping[int, int], partition: Any = None) -> Any:
    """The number of each row's task among the tasks of ``counts`` (scenario id -> its partition count), in order
    of scenario id then partition (``0 .. sum(counts) - 1``), as an int column of ``scenario`` and ``partition``
    (or the column ``partition`` names a row's task within its scenario: a windowed-table aggregate's unit; ``F.lit(0)``
    where a scenario runs whole)."""
    offsets: list[int] = [0] * (max(counts, default=0) + 1)
    total = 0
    for scenario_id in sorted(counts):
        offsets[scenario_id] = total
        total += counts[scenario_id]
    first = F.element_at(F.array(*[F.lit(offset) for offset in offsets]), (F.col("scenario") + 1).cast("int"))
    return (first + (F.col("partition") if partition is None else partition)).cast("int")


def by_task(frame: Any, spark_partitions: int | None, counts: Mapping[int, int] | None, number: Any = None) -> Any:
    """``frame`` with every Kafka task in one Spark partition: task ``i`` (:func:`task_numbers` of ``counts``, or
    the column ``number``) in Spark partition ``i mod spark_partitions``; Spark's hash by ``(scenario, partition)``
    where the count or the tasks are not known."""
    if spark_partitions and (number is not None or counts is not None):
        return frame.repartitionById(spark_partitions, number if number is not None else task_numbers(counts or {}))
    return clustered(frame, spark_partitions)


def clustered(frame: Any, spark_partitions: int | None) -> Any:
    """``frame`` hash-partitioned by ``(scenario, partition)``: what windows over ``(scenario, partition, ...)``
    reuse, where the tasks are many scenarios' (see the module)."""
    if spark_partitions:
        return frame.repartition(spark_partitions, "scenario", "partition")
    return frame.repartition("scenario", "partition")
