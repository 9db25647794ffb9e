"""Kafka's tie rule between a task's two input partitions, as arrays and as Spark columns.

A Kafka task takes, of its input partitions, the one whose head record has the lowest timestamp; on equal heads
the one it did *not* take its last record from (``PartitionGroup``'s ``java.util.PriorityQueue``: the queue just
polled is offered back behind an equal one; at the start, the left: :class:`kjoin.ordering.PartitionGroup`, the
reference engine's rule, judged by a running application in ``kafka_oracle/broker_check.py``).

Why this can be computed without the loop. Within one input partition, call a record a *leader* when its
timestamp is at least that of every record before it (it equals the partition's running max ts), and a
*follower* otherwise. A follower is taken right after the record before it: that one was taken when its
timestamp was no higher than the other partition's head, and the follower's is strictly lower. So a task takes
*blocks* (a leader and its followers) and compares only leaders, whose timestamps never decrease in a partition.
A *run* is the blocks of both partitions with one leader timestamp ``v``: ``cL`` left blocks and ``cR`` right.
Inside a run the two sides alternate, starting with the side not taken last, until one has no block left::

    starting side's j-th block:  rank j + min(j, c_other)
    other side's j-th block:     rank j + min(j + 1, c_starting)

and the side taken last after the run is the side with more blocks in it (with as many, the one that did not
start, so the next run starts where this one did). So a run starts on the right when the last earlier run with
``cL != cR`` had more left blocks, on the left when it had more right blocks or there is none: a forward fill.
A task's records in processing order are then sorted by ``(running max ts, rank, offset)``.

:func:`tie_order` is the array form (the per-task passes' merge, :mod:`kjoin.spark.passes.merge`);
:func:`with_tie_rank` the Spark one (the ``records`` frame: the native plan and the debugging tools). Both count
a null timestamp as lower than every other, as Spark sorts nulls first. Tests: ``tests/test_spark_ties.py``
(against :func:`kjoin.ordering.merge_by_timestamp`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["tie_order", "tie_ranks", "with_tie_rank", "PROCESSING_ORDER", "LEFT", "RIGHT"]

LEFT, RIGHT = 0, 1

PROCESSING_ORDER = ("_order_ts", "_tie", "offset")
"""The columns that sort one task's records (of the ``records`` frame) into processing order."""

_SQL_LOWEST = -(2**62)
"""A null timestamp in the Spark columns: below every timestamp, with room for the range frame's ``- 1``."""


def _runs(order: Any, leader: Any) -> tuple[Any, Any, Any, Any]:
    """One side's runs (``order`` sorted, each run whole): the distinct running max values, the number of leaders
    (blocks) of each, each record's run (an index into the values) and its block number within it (``j``; a
    follower has its leader's). Linear: the arrays are sorted already."""
    n = len(order)
    change = np.empty(n, dtype=bool)
    if n:
        change[0] = True
        np.not_equal(order[1:], order[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    run = np.cumsum(change) - 1
    count = np.cumsum(leader, dtype=np.int64)
    before = np.where(starts > 0, count[np.maximum(starts - 1, 0)], 0)
    ends = np.append(starts[1:], n) - 1
    blocks = count[ends] - before if n else before
    block = np.maximum(count - before[run] - 1, 0) if n else count
    return order[starts], blocks, run, block


def _union(a: Any, b: Any) -> Any:
    """The sorted distinct values of two sorted distinct arrays."""
    both = np.concatenate((a, b))
    both.sort(kind="stable")
    keep = np.empty(len(both), dtype=bool)
    if len(both):
        keep[0] = True
        np.not_equal(both[1:], both[:-1], out=keep[1:])
    return both[keep]


def tie_ranks(
    left_order: Any, left_ts: Any, right_order: Any, right_ts: Any, start: int = LEFT
) -> tuple[Any, Any, int, Any, Any]:
    """Each record's rank within its run (see the module), for one task's two sides given whole runs: per
    side, the running max ts (``order``, non-decreasing) and the timestamps (nulls as the same lowest value
    in both). ``start``: the side a run starts on when no earlier run here had ``cL != cR`` (the state
    carried from the records before). Returns the left ranks, the right ranks, the state after, and each
    record's run as an index into the runs of both sides (left, right)."""
    left_values, left_blocks, left_run, left_j = _runs(left_order, left_ts == left_order)
    right_values, right_blocks, right_run, right_j = _runs(right_order, right_ts == right_order)
    values = _union(left_values, right_values)
    left_at, right_at = np.searchsorted(values, left_values), np.searchsorted(values, right_values)
    c_left = np.zeros(len(values), dtype=np.int64)
    c_right = np.zeros(len(values), dtype=np.int64)
    c_left[left_at] = left_blocks
    c_right[right_at] = right_blocks
    flag = np.where(c_left > c_right, RIGHT, np.where(c_left < c_right, LEFT, -1))
    decided = np.maximum.accumulate(np.where(flag >= 0, np.arange(len(values)), -1)) if len(values) else flag
    before = np.concatenate(([-1], decided[:-1])) if len(values) else decided
    starts = np.where(before >= 0, flag[np.maximum(before, 0)], start)
    after = int(flag[decided[-1]]) if len(values) and decided[-1] >= 0 else start

    def ranks(run: Any, j: Any, side: int) -> Any:
        mine, theirs = (c_left, c_right) if side == LEFT else (c_right, c_left)
        first = starts[run] == side
        return np.where(first, j + np.minimum(j, theirs[run]), j + np.minimum(j + 1, mine[run]))

    left_run, right_run = left_at[left_run], right_at[right_run]
    left_rank, right_rank = ranks(left_run, left_j, LEFT), ranks(right_run, right_j, RIGHT)
    return left_rank, right_rank, after, left_run, right_run


def tie_order(left_order: Any, left_ts: Any, right_order: Any, right_ts: Any, start: int = LEFT) -> tuple[Any, int]:
    """The processing order of one task's records given whole runs, as indices into ``left + right`` (the left
    records first), and the state after (see :func:`tie_ranks`). Each side is sorted by ``(run, rank)`` already
    and no two records of different sides share both, so the two merge with ``np.searchsorted``."""
    left_rank, right_rank, after, left_run, right_run = tie_ranks(left_order, left_ts, right_order, right_ts, start)
    width = int(max(left_rank.max(initial=0), right_rank.max(initial=0))) + 1
    left_key, right_key = left_run * width + left_rank, right_run * width + right_rank
    h, n = len(left_key), len(left_key) + len(right_key)
    take = np.empty(n, dtype=np.int64)
    take[np.arange(h) + np.searchsorted(right_key, left_key)] = np.arange(h)
    take[np.arange(n - h) + np.searchsorted(left_key, right_key)] = np.arange(h, n)
    return take, after


def with_tie_rank(frame: Any) -> Any:
    """``frame`` (``scenario, partition, _side_rank, ts, offset, _order_ts``: the running max ts of the record's
    own input partition) with ``_tie``, the record's rank within its run, so that :data:`PROCESSING_ORDER` sorts
    each task's records as Kafka takes them."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    lowest = F.lit(_SQL_LOWEST).cast("bigint")
    order = F.coalesce(F.col("_order_ts"), lowest)
    leader = (F.coalesce(F.col("ts"), lowest) == order).cast("int")
    side_run = (
        Window.partitionBy("scenario", "partition", "_side_rank", "_order_ts")
        .orderBy("offset")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    run = Window.partitionBy("scenario", "partition", "_order_ts")
    earlier_runs = Window.partitionBy("scenario", "partition").orderBy("_o").rangeBetween(Window.unboundedPreceding, -1)
    left = F.col("_side_rank") == LEFT
    counted = frame.select(
        "*",
        order.alias("_o"),
        F.greatest(F.sum(leader).over(side_run) - 1, F.lit(0)).alias("_j"),
        F.sum(F.when(left, leader).otherwise(0)).over(run).alias("_cl"),
        F.sum(F.when(left, 0).otherwise(leader)).over(run).alias("_cr"),
    )
    flag = F.when(F.col("_cl") > F.col("_cr"), RIGHT).when(F.col("_cl") < F.col("_cr"), LEFT)
    started = counted.withColumn("_start", F.coalesce(F.last(flag, ignorenulls=True).over(earlier_runs), F.lit(LEFT)))
    j = F.col("_j")
    mine = F.when(left, F.col("_cl")).otherwise(F.col("_cr"))
    theirs = F.when(left, F.col("_cr")).otherwise(F.col("_cl"))
    tie = F.when(F.col("_start") == F.col("_side_rank"), j + F.least(j, theirs)).otherwise(j + F.least(j + 1, mine))
    return started.withColumn("_tie", tie.cast("bigint")).drop("_o", "_j", "_cl", "_cr", "_start")
