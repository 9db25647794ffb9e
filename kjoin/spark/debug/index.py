"""The index behind :meth:`kjoin.spark.SparkRun.why` and ``SparkRun.trace(partition, key=...)``:
built once per run, after which a call reads only the key's rows and a handful of others.

Without it every call scanned both topics about six times (find the record, find the key's
records everywhere, then three aggregations to place them in the task's processing order and
find the records that carry the task's clocks). The index is computed in one Spark pass over
the run's ordered records and written as Parquet in two sort orders, with small row groups so
that a point lookup reads one row group of each file (Parquet's min/max statistics skip the rest):

* ``by_offset/``: every input record sorted by ``(scenario, partition, side, offset)``, with its
  ``step`` (its place in its Kafka task's processing order);
* ``by_key/``: the records with a key, hash-partitioned and sorted by key, each carrying the
  task's clock marks just before it (below);
* ``releases/`` (left/outer stream-stream joins from Kafka 3.1 only): per held result the run
  emitted when its window closed, sorted by key, the steps of the record it carries
  (``origin_step``) and of the record whose processing swept it out of the outer-join buffer
  (``step``, ``side``, ``offset``). That sweep depends on every key of the task, so the
  drill-down replays it from here (:class:`kjoin.spark.debug.key_trace.ReplayedSweepJoin`); building
  this part runs the join once.

Clock marks. A join's stream time is the largest timestamp it has seen, per side and per kind of
record (null key or not, null value or not) at the finest: eight *classes*. Just before each
record the index keeps, per class, the running maximum ``(ts, -offset)`` of the task's records
of that class processed so far (a record with the same timestamp later moves no clock, so ties
keep the earliest). Between two of a key's records, a class's clock moved exactly when that mark
grew, and the record that moved it furthest is the one the mark names: the key's drill-down runs
that record (under a stand-in key) and no other of the gap. After the key's last record, the
task's final marks (collected once: eight per task) close the last gap.

Memory: nothing is cached in Spark's memory and nothing of a partition is collected; a call
collects the key's records, at most eight clock records per gap between them, and one record.
"""

from __future__ import annotations

import atexit
import bisect
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from pyspark.sql import Window
from pyspark.sql import functions as F

from ...records import Record, Side
from ..io.readers import local_path
from ..ties import PROCESSING_ORDER
from .key_trace import Placed

__all__ = ["WhyIndex", "build_index", "CLASSES"]

CLASSES = tuple(
    (side, key_null, value_null) for side in ("left", "right") for key_null in (0, 1) for value_null in (0, 1)
)
"""Class ``c`` of a record: ``(side, key is null, value is null)``, ``c = 4 side + 2 key + value``."""

ROW_GROUP_BYTES = 1 << 20
"""Parquet row-group size of the index: the most a point lookup reads per file."""


def class_of(side: str, key_null: bool, value_null: bool) -> int:
    return (0 if side == "left" else 4) + 2 * int(key_null) + int(value_null)


@dataclass
class WhyIndex:
    """Where a run's index lives, and each task's final clock marks."""

    path: str
    by_offset: Any
    """The ``by_offset`` Parquet read back (a lazy frame: each lookup is a filter on it)."""
    by_key: Any
    releases: Any = None
    """The ``releases`` Parquet read back, or ``None`` when the run's joins sweep no buffer."""
    final_marks: dict[tuple[int, int], dict[int, tuple[int, int]]] = field(default_factory=dict)
    """``(scenario, partition) -> {class: (ts, -offset)}`` of the task's last records."""

    # -- lookups (each one small Spark job that reads a row group per file) -------------------
    def record_at(self, scenario: int, partition: int, side: str, offset: int) -> Any:
        return self.by_offset.filter(
            (F.col("scenario") == scenario)
            & (F.col("partition") == partition)
            & (F.col("side") == side)
            & (F.col("offset") == offset)
        ).first()

    def record_at_step(self, scenario: int, partition: int, step: int) -> Any:
        """The task's record processed at ``step``."""
        return self.by_offset.filter(
            (F.col("scenario") == scenario) & (F.col("partition") == partition) & (F.col("step") == step)
        ).first()

    def next_after_step(self, scenario: int, partition: int, side: str, step: int) -> Any:
        """The first ``side`` record of the task processed after ``step`` (the lowest offset: a partition is taken
        in its order), or ``None``."""
        return (
            self.by_offset.filter(
                (F.col("scenario") == scenario)
                & (F.col("partition") == partition)
                & (F.col("side") == side)
                & (F.col("step") > step)
            )
            .orderBy("offset")
            .first()
        )

    def key_rows(self, scenario: int, key: Any) -> list[Any]:
        """Every record of ``key`` (stored form), both sides, all partitions."""
        return self.by_key.filter((F.col("scenario") == scenario) & (F.col("key") == key)).collect()

    def records_at(self, scenario: int, partition: int, wanted: Iterable[tuple[str, int]]) -> list[Any]:
        by_side: dict[str, set[int]] = {}
        for side, offset in wanted:
            by_side.setdefault(side, set()).add(offset)
        if not by_side:
            return []
        condition = None
        for side, offsets in sorted(by_side.items()):
            one = (F.col("side") == side) & F.col("offset").isin(sorted(offsets))
            condition = one if condition is None else condition | one
        return self.by_offset.filter(
            (F.col("scenario") == scenario) & (F.col("partition") == partition) & condition
        ).collect()

    def null_key_naming(self, scenario: int, side: str, word: str, pattern: str) -> Any:
        """The first ``side`` record with a null key whose value has ``word`` among its words (split by the
        regular expression ``pattern``), or ``None``: a scan of ``by_offset``'s null-key rows."""
        return (
            self.by_offset.filter(
                (F.col("scenario") == scenario)
                & (F.col("side") == side)
                & F.col("key").isNull()
                & F.array_contains(F.split(F.col("value").cast("string"), pattern), word)
            )
            .orderBy("partition", "offset")
            .first()
        )

    def highest_ahead(self, scenario: int, partition: int, side: str, offset: int, ts: int) -> Any:
        """The record ahead of ``offset`` in ``side``'s ``partition`` with the highest timestamp above ``ts``
        (the earliest of ties), or ``None``: a range of ``by_offset``."""
        return (
            self.by_offset.filter(
                (F.col("scenario") == scenario)
                & (F.col("partition") == partition)
                & (F.col("side") == side)
                & (F.col("offset") < offset)
                & (F.col("ts") > ts)
            )
            .orderBy(F.col("ts").desc(), "offset")
            .first()
        )

    def key_releases(self, scenario: int, partition: int, key: Any) -> list[Any]:
        """The key's held results swept out of this task's outer-join buffer (see ``releases/``)."""
        if self.releases is None:
            return []
        return self.releases.filter(
            (F.col("scenario") == scenario) & (F.col("key") == key) & (F.col("partition") == partition)
        ).collect()

    # -- the key's records and the clock records, in processing order ---------------------------
    def placed(
        self,
        scenario: int,
        partition: int,
        key: Any,
        rows: Sequence[Any],
        decode_key,
        decode_value,
        releases: Sequence[Any] = (),
    ) -> list:
        """``rows``: the key's rows of this task (from :meth:`key_rows`); ``releases``: the key's
        (from :meth:`key_releases`). Returns :class:`kjoin.spark.debug.key_trace.Placed` records: the
        key's with their steps, and before each (and after the last) the clock records of the
        gap and the records that swept the key's held results, in processing order."""
        rows = sorted(rows, key=lambda r: r["step"])
        previous: list[tuple[int, int] | None] = [None] * len(CLASSES)
        wanted: list[tuple[int, str, int]] = []  # (gap, side, offset)

        def moved(gap: int, marks: Sequence[tuple[int, int] | None]) -> None:
            for c, mark in enumerate(marks):
                if mark is not None and (previous[c] is None or mark > previous[c]):
                    wanted.append((gap, CLASSES[c][0], -mark[1]))
                    previous[c] = mark

        for gap, row in enumerate(rows):
            marks = [None if row[f"_c{c}"] is None else (row[f"_c{c}"]["ts"], row[f"_c{c}"]["neg"]) for c in range(8)]
            moved(gap, marks)
            own = class_of(row["side"], False, row["value"] is None)
            mark = (row["ts"], -row["offset"])
            if previous[own] is None or mark > previous[own]:
                previous[own] = mark
        finals = self.final_marks.get((scenario, partition), {})
        moved(len(rows), [finals.get(c) for c in range(len(CLASSES))])
        own = {r["step"] for r in rows}
        steps = [r["step"] for r in rows]
        for release in releases:
            if release["step"] not in own:
                own.add(release["step"])
                wanted.append((bisect.bisect_left(steps, release["step"]), release["side"], release["offset"]))
        found = {(r["side"], r["offset"]): r for r in self.records_at(scenario, partition, [w[1:] for w in wanted])}
        clocks: dict[int, dict[int, Any]] = {}
        for gap, side, offset in wanted:
            r = found[(side, offset)]
            clocks.setdefault(gap, {})[r["step"]] = r
        out = []
        for gap in range(len(rows) + 1):
            for step, r in sorted(clocks.get(gap, {}).items()):
                record = Record(
                    Side(r["side"]), decode_key(r["key"]), decode_value(r["value"]), r["ts"], None, r["offset"]
                )
                out.append(Placed(record, step, clock=True))
            if gap < len(rows):
                r = rows[gap]
                out.append(
                    Placed(
                        Record(Side(r["side"]), key, decode_value(r["value"]), r["ts"], None, r["offset"]), r["step"]
                    )
                )
        return out


def build_index(
    records: Any, path: str | None = None, spark_partitions: int | None = None, releases: Any = None
) -> WhyIndex:
    """Compute and write the index of ``records`` (a run's ordered records: ``scenario, partition,
    side, key, value, ts, offset, _order_ts, _tie, _side_rank``) under ``path`` (default: a temporary
    directory removed when Python exits; give a path every executor can read on a cluster).
    ``releases``: the run's outputs of kind ``window-closed`` (``scenario, partition, key,
    origin_step, step, side, offset``) when its joins sweep an outer-join buffer."""
    if path is None:
        path = tempfile.mkdtemp(prefix="kjoin-why-")
        atexit.register(shutil.rmtree, path, True)
    path = local_path(path).rstrip("/")
    spark = records.sparkSession
    task = Window.partitionBy("scenario", "partition").orderBy(*PROCESSING_ORDER)
    before = task.rowsBetween(Window.unboundedPreceding, -1)
    klass = (
        F.when(F.col("side") == "left", 0).otherwise(4)  # not _side_rank: a scenario run ranks both sides 0
        + F.col("key").isNull().cast("int") * 2
        + F.col("value").isNull().cast("int")
    ).alias("_class")
    frame = records.select(
        "scenario", "partition", "side", "key", "value", "ts", "offset", "_order_ts", "_tie", "_side_rank", klass
    )
    mark = F.struct(F.col("ts").alias("ts"), (-F.col("offset")).alias("neg"))
    frame = frame.select(
        "scenario",
        "partition",
        "side",
        "key",
        "value",
        "ts",
        "offset",
        "_class",
        (F.row_number().over(task) - 1).cast("bigint").alias("step"),
        *[F.max(F.when(F.col("_class") == c, mark)).over(before).alias(f"_c{c}") for c in range(len(CLASSES))],
    )
    write = {"parquet.block.size": str(ROW_GROUP_BYTES), "parquet.page.size": str(64 << 10)}
    (
        frame.sortWithinPartitions("scenario", "partition", "side", "offset")
        .write.options(**write)
        .mode("overwrite")
        .parquet(f"{path}/by_offset")
    )
    written = spark.read.parquet(f"{path}/by_offset")
    (
        written.filter(F.col("key").isNotNull())
        .repartition(spark_partitions or spark.sparkContext.defaultParallelism, "key")
        .sortWithinPartitions("scenario", "key")
        .write.options(**write)
        .mode("overwrite")
        .parquet(f"{path}/by_key")
    )
    finals: dict[tuple[int, int], dict[int, tuple[int, int]]] = {}
    for row in written.groupBy("scenario", "partition", "_class").agg(F.max(mark).alias("m")).collect():
        finals.setdefault((row["scenario"], row["partition"]), {})[row["_class"]] = (row["m"]["ts"], row["m"]["neg"])
    released = None
    if releases is not None:
        (
            releases.select("scenario", "partition", "key", "origin_step", "step", "side", "offset")
            .repartition(spark_partitions or spark.sparkContext.defaultParallelism, "key")
            .sortWithinPartitions("scenario", "key")
            .write.options(**write)
            .mode("overwrite")
            .parquet(f"{path}/releases")
        )
        released = spark.read.parquet(f"{path}/releases")
    lookup = ["scenario", "partition", "side", "key", "value", "ts", "offset", "step"]
    return WhyIndex(path, written.select(*lookup), spark.read.parquet(f"{path}/by_key"), released, finals)
