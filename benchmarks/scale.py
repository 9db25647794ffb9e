"""How kjoin on Spark scales: the key split, a size curve and a skewed topic.

    nice -n 10 python -m benchmarks.bench --scale --sizes 1000000,10000000,100000000   # all three parts
    python -m benchmarks.bench --scale split --sizes 10000000          # one part

A script, never a timed test; the workload is :func:`benchmarks.bench.generate`'s (stream-table left by default,
10^5 keys, out-of-order timestamps, null keys and values). Every kjoin run consumes all its result rows through a
checksum (``count`` and the sum of an ``xxhash64`` of every column of every row: what two runs compare to say
"identical"), the equi-join through the ``noop`` sink. Three parts:

* ``split``: a topic of **one** partition (one Kafka task), ``key_split="off"`` (one Spark task does everything
  after the read) against ``"on"`` (the task's keys in one bucket per core, :mod:`kjoin.spark.passes.split`), at
  the largest size of ``--sizes`` at most 10^7: the speed-up and whether the rows are identical; then the bound no
  key split can beat: the same records as a topic of as many partitions as buckets (each record's partition its
  key's, so the work is split with no clock at all; other tasks, so other rows; each task in its own Spark task).
  Its file has row groups of :data:`ROW_GROUP_BYTES`, so a 1-partition topic is read by more than one Spark task
  (in both runs);
* ``curve``: each size of ``--sizes`` over ``--partitions`` partitions: kjoin's time and peak memory (the driver,
  the JVM and the Python workers, :class:`benchmarks.bench.PeakMemory`), the equi-join's, and their ratio;
* ``placement`` (only when asked: ``--scale placement``): a topic of ``--partitions`` partitions at the largest size
  at most 10^7, placed in Spark tasks by Spark's hash of ``(scenario, partition)`` as ``run_join`` did until
  2026-11-27 (:func:`hash_placement`: both tasks of a 2-partition topic in one Spark task) against kjoin's placement
  (:mod:`kjoin.spark.placement`: each task in its own), in turns, with the Spark tasks each used;
* ``skew``: 10^7 records (or the largest size at most that) where one key holds 10% of the records and partition 0
  holds about half (:func:`benchmarks.bench.generate`'s ``hot_key_share``), unsplit and split in two, against the
  same size spread evenly.

Only ratios taken in one run compare; the load average before and after each run is printed beside it, and the CPU
the run took (this process, the JVM, the Python workers: :func:`benchmarks.bench.tree_cpu`): a run whose CPU is ``c``
seconds takes at least ``c / cores`` seconds, so ``2 x wall / CPU`` of the unsplit run bounds what a split can gain
on 2 cores.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from typing import Any, Iterator

from .bench import PeakMemory, equi_join, generate, noop, run_options, timed, topics, tree_cpu

__all__ = ["scale", "PARTS", "checksum"]

PARTS = ("split", "curve", "skew", "placement")
ROW_GROUP_BYTES = 8 * 2**20
"""The split part's Parquet row groups (128 MB by default: one or two row groups, read by one or two tasks)."""
HOT_KEY_SHARE = 10
"""The skew part's hot key: this percent of the records."""


def checksum(frame: Any) -> tuple[int, int]:
    """``(rows, sum of xxhash64 of each row's columns)``: consumes every row, and is equal for two runs whose rows
    are equal as multisets (the split changes only which Spark task emits a row)."""
    from pyspark.sql import functions as F

    hashed = F.xxhash64(*[F.col(name) for name in frame.columns]).cast("decimal(38,0)")
    row = frame.agg(F.count(F.lit(1)).alias("rows"), F.sum(hashed).alias("hash")).collect()[0]
    return int(row["rows"]), int(row["hash"] or 0)


@dataclass
class Timing:
    label: str
    records: int
    seconds: float
    peak_mb: float
    load: tuple[float, float]
    check: tuple[int, int] | None = None
    equi_s: float | None = None
    buckets: int = 1
    cpu_s: float = 0.0

    def cells(self) -> list[str]:
        rate = self.records / self.seconds
        equi = "" if self.equi_s is None else f"{self.equi_s:.1f}"
        ratio = "" if self.equi_s is None else f"{(self.records / self.seconds) / (self.records / self.equi_s):.2f}"
        return [
            self.label,
            f"{self.records:,}",
            str(self.buckets),
            f"{self.seconds:.1f}",
            f"{rate:,.0f}",
            equi,
            ratio,
            f"{self.cpu_s:.1f}",
            f"{self.peak_mb:,.0f}",
            f"{self.load[0]:.1f}/{self.load[1]:.1f}",
        ]


HEADER = ["run", "records", "buckets", "kjoin s", "kjoin rec/s", "equi s", "kjoin/equi", "CPU s", "peak MB", "load"]


def _run(label: str, records: int, result: Any, equi: Any = None, out: Any = None) -> Timing:
    """Time the equi-join (noop) when given, then kjoin's rows through :func:`checksum`, with the peak memory; the
    row goes to ``out`` (progress) as soon as it is measured."""
    equi_s = None if equi is None else timed(lambda: noop(equi))
    load_before = os.getloadavg()[0]
    found: list[tuple[int, int]] = []
    cpu_before = tree_cpu()
    with PeakMemory() as memory:
        seconds = timed(lambda: found.append(checksum(result.results)))
    cpu = tree_cpu() - cpu_before
    timing = Timing(
        label,
        records,
        seconds,
        memory.peak / 2**20,
        (load_before, os.getloadavg()[0]),
        found[0],
        equi_s,
        result.key_buckets,
        cpu,
    )
    if out is not None:
        print(f"[scale] {' | '.join(timing.cells())} | {timing.check}", file=out, flush=True)
    return timing


def scale(
    spark: Any, parts: list[str], sizes: list[int], join: str, keys: int, partitions: int, workdir: str, out: Any
) -> list[list[Timing]]:
    """The tables of the asked parts (see the module), each a list of :class:`Timing` rows."""
    from kjoin.spark import run_join

    options = run_options(join)

    def data(size: int, parts_: int, hot: int = 0, row_group_bytes: int | None = None) -> tuple[Any, Any, str]:
        path = os.path.join(workdir, f"{join}-{size}-{parts_}-{hot}.parquet")
        print(f"[scale] generating {size:,} {join} records, {parts_} partitions, hot key {hot}% ...", file=out)
        generate(
            spark, join, size, path, keys=keys, partitions=parts_, hot_key_share=hot, row_group_bytes=row_group_bytes
        )
        left, right = topics(spark, path, parts_)
        noop(left.frame.unionByName(right.frame))  # warm the file cache
        return left, right, path

    # Warm-up, untimed: class loading and JIT in a fresh JVM, both plans.
    left, right, path = data(20_000, 1)
    for key_split in ("off", "on"):
        checksum(run_join(left, right, key_split=key_split, **options).results)
    shutil.rmtree(path, ignore_errors=True)

    tables = []
    small = [size for size in sizes if size <= 10_000_000] or [min(sizes)]
    if "split" in parts:
        size = max(small)
        left, right, path = data(size, 1, row_group_bytes=ROW_GROUP_BYTES)
        rows = []
        for key_split in ("off", "on", "off", "on"):  # in turns: the load moves
            print(f"[scale] split {key_split} {size:,} ...", file=out, flush=True)
            result = run_join(left, right, key_split=key_split, **options)
            rows.append(_run(f"1 partition, key_split={key_split}", size, result, out=out))
        shutil.rmtree(path, ignore_errors=True)
        buckets = rows[1].buckets
        left, right, path = data(size, buckets, row_group_bytes=ROW_GROUP_BYTES)
        print(f"[scale] the bound: {buckets} partitions {size:,} ...", file=out, flush=True)
        result = run_join(left, right, **options)
        rows.append(_run(f"{buckets} partitions (the bound), key_split=off", size, result, out=out))
        tables.append(rows)
        shutil.rmtree(path, ignore_errors=True)
    if "placement" in parts:
        left, right, path = data(max(small), partitions)
        tables.append(_placements(left, right, options, max(small), partitions, out))
        shutil.rmtree(path, ignore_errors=True)
    if "curve" in parts:
        rows = []
        for size in sizes:  # the largest last: it is the one that may not finish
            left, right, path = data(size, partitions)
            print(f"[scale] curve {size:,} ...", file=out, flush=True)
            result = run_join(left, right, **options)
            equi = equi_join(join, left.frame, right.frame)
            rows.append(_run(f"{partitions} partitions", size, result, equi, out))
            shutil.rmtree(path, ignore_errors=True)
        tables.append(rows)
    if "skew" in parts:
        size = max(small)
        rows = []
        for hot, label in ((0, "even"), (HOT_KEY_SHARE, "skewed")):
            left, right, path = data(size, partitions, hot)
            if hot:
                shares = left.frame.unionByName(right.frame).groupBy("partition").count().collect()
                print(f"[scale] skewed partitions: {sorted((r[0], r[1]) for r in shares)}", file=out, flush=True)
            for key_split in ("off", 2):
                result = run_join(left, right, key_split=key_split, **options)
                name = f"{partitions} partitions {label}, key_split={key_split}"
                equi = equi_join(join, left.frame, right.frame) if key_split == "off" else None
                rows.append(_run(name, size, result, equi, out))
            shutil.rmtree(path, ignore_errors=True)
        tables.append(rows)
    return tables


def _placements(left: Any, right: Any, options: Any, size: int, partitions: int, out: Any) -> list[Timing]:
    """The ``placement`` part's rows: the topics joined placed by Spark's hash (:func:`hash_placement`) and by kjoin,
    in turns (the load moves), each row labelled with the Spark tasks its records ran in."""
    from pyspark.sql import functions as F

    from kjoin.spark import run_join

    rows = []
    for placed in ("hash", "by task", "hash", "by task"):
        print(f"[scale] placement {placed} {size:,} ...", file=out, flush=True)
        with hash_placement() if placed == "hash" else contextlib.nullcontext():
            result = run_join(left, right, **options)
            rows.append(_run(f"{partitions} partitions, placed {placed}", size, result, out=out))
            tasks = result.records.select(F.spark_partition_id()).distinct().count()  # after: untimed
            rows[-1].label += f" ({tasks} Spark task{'s' if tasks > 1 else ''})"
    return rows


@contextlib.contextmanager
def hash_placement() -> Iterator[None]:
    """``run_join`` placing its Kafka tasks as it did until 2026-11-27, by Spark's hash of ``(scenario, partition)``
    into as many Spark partitions as Kafka partitions (both tasks of a 2-partition topic in one Spark task): the
    ``placement`` part's baseline, never kjoin's path."""
    from kjoin.spark import placement

    kept = placement.by_partition
    placement.by_partition = lambda frame, n: frame.repartition(n, "scenario", "partition")
    try:
        yield
    finally:
        placement.by_partition = kept


def format_tables(tables: list[list[Timing]]) -> str:
    blocks = []
    for rows in tables:
        cells = [HEADER] + [row.cells() for row in rows]
        widths = [max(len(line[i]) for line in cells) for i in range(len(HEADER))]
        lines = [" | ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)) for line in cells]
        lines.insert(1, "-+-".join("-" * width for width in widths))
        groups: dict[str, list] = {}
        for row in rows:
            groups.setdefault(row.label.split(", key_split")[0].split(", placed")[0], []).append(row.check)
        for group, checks in groups.items():
            if len(checks) > 1:  # a group ran more than once: were its rows identical?
                same = "yes" if len(set(checks)) == 1 else set(checks)
                lines.append(f"{group}: identical rows (count, xxhash64 sum): {same}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
