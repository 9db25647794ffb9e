"""What if a side lagged? The same topics joined again with an arrival lag, and the smallest lag that explains a set
of null results.

Without ``arrival``, kjoin orders each Kafka task as Kafka Streams does when both input partitions have records
buffered (what ``max.task.idle.ms`` waiting gives). A real application with ``max.task.idle.ms = 0`` (the default)
processes what it has fetched: when the customers' partition lags, orders are joined before customers that were
written earlier, and come out with a null customer. ``run_join(..., arrival={"right": {"lag_ms": L}})`` (or
``{"right": {"partitions": {2: L}}}`` for one lagging partition) runs that model (:func:`kjoin.ordering.arrival_order`,
the reference engine's ``arrival:``); here:

* :func:`lag_nulls`: per key and partition, how many null results a lag of ``L`` ms would explain: results with a null
  partner under the lag whose record found its partner without it; :func:`lag_summary` says it in a sentence, with
  the totals per partition (a :class:`LagSummary`, ``SparkRun.lag_summary``);
* :func:`smallest_lag`: the smallest lag of one side (or one of its partitions) under which every given record comes
  out with a null partner (``SparkRun.smallest_lag``). Each try is one Spark run; the lags tried are the ones at which
  a record's outcome can change (a partner's timestamp distance to it, plus one), searched by halving.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from pyspark.sql import functions as F

from ...times import duration
from ..io.topic import SparkInputError

if TYPE_CHECKING:
    from ..result import SparkRun

__all__ = ["LagSearch", "LagSummary", "arrival_of", "null_records", "lag_nulls", "lag_summary", "smallest_lag"]


def arrival_of(lag_ms: int, side: str = "right", partition: int | None = None) -> dict[str, Any]:
    """The ``arrival=`` of a lag of ``side`` (or of one of its partitions)."""
    if side not in ("left", "right"):
        raise SparkInputError(f"side={side!r}: expected 'left' or 'right' (the side that lags)")
    if isinstance(lag_ms, bool) or not isinstance(lag_ms, int) or lag_ms < 0:
        raise SparkInputError(f"lag_ms={lag_ms!r}: expected milliseconds, 0 or more")
    if partition is None:
        return {side: {"lag_ms": lag_ms}}
    return {side: {"partitions": {int(partition): lag_ms}}}


def _null_partner(side: Any, left: Any, right: Any) -> Any:
    """A column: whether a result of the record on ``side`` has no partner."""
    return F.when(side == "left", right.isNull()).otherwise(left.isNull())


def null_records(run: "SparkRun") -> Any:
    """Per input record that produced a result (``scenario, partition, side, offset, key``): ``null`` when every
    result of its own has a null partner (a lookup of a left join that found nothing, an outer join's unmatched
    side), ``false`` when one joined. Tombstones (a table's delete) are left out."""
    outputs = run.outputs.filter(~F.col("tombstone"))
    null = _null_partner(F.col("side"), F.col("left"), F.col("right"))
    return outputs.groupBy("scenario", "partition", "side", "offset", "key").agg(F.min(null.cast("int")).alias("null"))


def lag_nulls(run: "SparkRun", lagged: "SparkRun") -> Any:
    """Per ``scenario, partition, key``: ``null-results`` of ``lagged`` (the same topics with a lag) and
    ``lag-explains``, those whose record found its partner in ``run`` (without the lag): the null results the lag
    would explain."""
    before = null_records(run).withColumnRenamed("null", "null_before").drop("key")
    after = null_records(lagged)
    both = after.join(before, ["scenario", "partition", "side", "offset"], "left")
    explained = (F.col("null") == 1) & (F.coalesce(F.col("null_before"), F.lit(1)) == 0)
    return (
        both.groupBy("scenario", "partition", "key")
        .agg(
            F.sum("null").cast("bigint").alias("null-results"),
            F.sum(explained.cast("int")).cast("bigint").alias("lag-explains"),
        )
        .orderBy(F.desc("lag-explains"), "scenario", "partition", "key")
    )


@dataclass(frozen=True)
class LagSearch:
    """What :func:`smallest_lag` found."""

    lag_ms: int | None
    """The smallest lag tried under which every record comes out with a null partner (``None``: none did)."""
    arrival: Mapping[str, Any] | None
    """The ``arrival=`` of that lag, for ``run_join``."""
    tried: dict[int, int] = field(default_factory=dict)
    """Each lag tried -> how many of the records it leaves with a null partner (one Spark run each)."""
    records: int = 0
    """How many records were to be explained."""
    side: str = "right"
    """The side that lagged."""
    partition: int | None = None
    """The partition of :attr:`side` that lagged (``None``: every partition of it)."""

    def __str__(self) -> str:
        which = _which(self.side, self.partition)
        runs = len(self.tried)
        spark_runs = f"{runs} Spark run{'s' * (runs != 1)}"
        if self.lag_ms is None:
            best = max(self.tried.items(), key=lambda item: (item[1], -item[0]), default=(0, 0))
            return (
                f"no lag of {which} tried explains all {self.records} null results: the best, {duration(best[0])}, "
                f"explains {best[1]}; the rest have another cause (ask why) ({spark_runs})"
            )
        return (
            f"a lag of {duration(self.lag_ms)} of {which} explains all {self.records} null results: with it every one "
            f"comes out with a null partner (arrival={self.arrival!r}; {spark_runs})"
        )


def _which(side: str, partition: int | None) -> str:
    """The side (or one of its partitions) that lagged, as a sentence's object."""
    return f"the {side} topic's partition {partition}" if partition is not None else f"the {side} topic"


@dataclass(frozen=True)
class LagSummary:
    """What :func:`lag_summary` found: how many null results a lag would explain, in all, per partition and per
    key (:attr:`frame`). ``str()`` says it in a sentence."""

    lag_ms: int
    """The lag tried."""
    side: str
    """The side that lagged."""
    partition: int | None
    """The partition of :attr:`side` that lagged (``None``: every partition of it)."""
    frame: Any
    """Per ``scenario, partition, key``: ``null-results`` under the lag and ``lag-explains``, those whose record
    found its partner without it (:func:`lag_nulls`); keys that explain most first."""
    null_results: int
    """Results with a null partner under the lag, in all."""
    explained: int
    """Of those, the ones whose record found its partner without the lag: what the lag explains."""
    by_partition: dict[int, int] = field(default_factory=dict)
    """Per partition (the task's, where the results were written), how many null results the lag explains (only
    partitions with some)."""
    top_keys: list[tuple[int, Any, int]] = field(default_factory=list)
    """A few ``(partition, key, explained)`` of the keys whose null results the lag explains most."""

    def __str__(self) -> str:
        lag = f"a lag of {duration(self.lag_ms)} of {_which(self.side, self.partition)}"
        if not self.explained:
            return (
                f"{lag} explains none of the {self.null_results} null results under it: each is null without the lag "
                "too (ask why of them)"
            )
        where = ", ".join(f"{count} in partition {p}" for p, count in sorted(self.by_partition.items()))
        keys = ", ".join(f"{key!r} ({count})" for _, key, count in self.top_keys)
        rest = self.null_results - self.explained
        other = f"; the other {rest} are null without it too" if rest else ""
        return (
            f"{lag} explains {self.explained} of the {self.null_results} null results under it (null with the lag, "
            f"joined without it): {where}; most for keys {keys}{other}"
        )

    __repr__ = __str__


def lag_summary(frame: Any, lag_ms: int, side: str, partition: int | None) -> LagSummary:
    """The :class:`LagSummary` of ``frame``, :func:`lag_nulls` of a run's topics with ``side`` (or its ``partition``)
    ``lag_ms`` late: one aggregate per partition and the top keys come to the driver."""
    per_partition = frame.groupBy("partition").agg(
        F.sum("null-results").alias("nulls"), F.sum("lag-explains").alias("explained")
    )
    rows = per_partition.collect()
    top = frame.filter(F.col("lag-explains") > 0).limit(3).collect()
    return LagSummary(
        lag_ms,
        side,
        partition,
        frame,
        sum(int(r["nulls"] or 0) for r in rows),
        sum(int(r["explained"] or 0) for r in rows),
        {int(r["partition"]): int(r["explained"]) for r in rows if r["explained"]},
        [(int(r["partition"]), r["key"], int(r["lag-explains"])) for r in top],
    )


def _targets(records: Any) -> list[tuple[int, int]]:
    if hasattr(records, "select") and hasattr(records, "collect"):
        return sorted(
            {(int(r["partition"]), int(r["offset"])) for r in records.select("partition", "offset").collect()}
        )
    found = []
    for record in records:
        if isinstance(record, Mapping):
            found.append((int(record["partition"]), int(record["offset"])))
        else:
            partition, offset = record
            found.append((int(partition), int(offset)))
    return sorted(set(found))


def candidate_lags(run: "SparkRun", targets: list[tuple[int, int]], record_side: str, lag_side: str) -> list[int]:
    """The lags at which a target's outcome can change: for each record of the lagging side with the target's key in
    its partition and a timestamp no later, the distance plus one (it then reaches the task after the target)."""
    wanted = run.records.sparkSession.createDataFrame(targets, "partition int, offset long")
    records = run.records.filter(F.col("scenario") == 0)
    mine = (
        records.filter(F.col("side") == record_side)
        .join(wanted, ["partition", "offset"])
        .select("partition", "key", F.col("ts").alias("target_ts"))
    )
    theirs = records.filter(F.col("side") == lag_side).select("partition", "key", F.col("ts").alias("their_ts"))
    distances = (
        mine.join(theirs, ["partition", "key"])
        .filter(F.col("their_ts") <= F.col("target_ts"))
        .select((F.col("target_ts") - F.col("their_ts") + 1).alias("lag"))
        .distinct()
    )
    return sorted(int(r["lag"]) for r in distances.collect())


def smallest_lag(
    run: "SparkRun",
    records: Iterable[Any],
    side: str = "right",
    partition: int | None = None,
    record_side: str | None = None,
) -> LagSearch:
    """The smallest lag of ``side`` (or of its ``partition``) under which every one of ``records`` (``(partition,
    offset)`` pairs, dicts or a frame with those columns, of the other side by default) comes out with a null
    partner. Assumes that a longer lag leaves no fewer of them null (true of a lookup, which a later partner
    cannot reach); the result says how many each lag tried explained."""
    if run.rejoin is None:
        raise SparkInputError("smallest_lag: only a run_join result can be joined again (it keeps its topics)")
    record_side = record_side or ("left" if side == "right" else "right")
    targets = _targets(records)
    if not targets:
        raise SparkInputError("smallest_lag: no records given; pass the (partition, offset) of each null result")
    candidates = candidate_lags(run, targets, record_side, side)
    tried: dict[int, int] = {}

    def nulls_under(lag: int) -> int:
        if lag not in tried:
            lagged = run.rejoin.with_arguments(arrival=arrival_of(lag, side, partition))
            wanted = lagged.records.sparkSession.createDataFrame(targets, "partition int, offset long")
            found = null_records(lagged).filter(F.col("side") == record_side).join(wanted, ["partition", "offset"])
            tried[lag] = found.filter(F.col("null") == 1).count()
        return tried[lag]

    if not candidates or nulls_under(candidates[-1]) < len(targets):
        return LagSearch(None, None, tried, len(targets), side, partition)
    lo, hi = -1, len(candidates) - 1  # candidates[hi] explains all; candidates[lo] (if any) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if nulls_under(candidates[mid]) == len(targets):
            hi = mid
        else:
            lo = mid
    lag = candidates[hi]
    return LagSearch(lag, arrival_of(lag, side, partition), tried, len(targets), side, partition)
