"""Benchmark: kjoin on Spark against a plain Spark equi-join and the reference engine.

    python -m benchmarks.bench                                  # 10^5, 10^6 and 10^7 records
    python -m benchmarks.bench --sizes 100000 --joins stream-table --methods auto,processors
    python -m benchmarks.bench --sizes 10000000 --joins stream-stream --variants inner,left,outer --kafka-sample 1000000
    python -m benchmarks.bench --diff --sizes 10000000              # a diff's cost / one run's (make bench-diff)
    python -m benchmarks.bench --values json --sizes 1000000       # JSON values against string values
    python -m benchmarks.bench --topology --sizes 1000000          # a re-key and two joins (benchmarks/bench_topology)

A script, never a timed test. For each join type and size it:

1. generates a seeded synthetic workload with Spark (``spark.range`` and column
   expressions, never Python lists) and writes it to Parquet under a temporary directory,
   so generation is not timed: 10^5 keys (``--keys``), 4 Kafka partitions
   (``--partitions``), out-of-order timestamps, a few null keys and null values;
   stream-table: 10% of the records are table updates, 5% of those tombstones;
   table-table: both sides tables, 10% tombstones; stream-stream: both sides streams
   joined within ±1 s (grace 100 ms), about two partners per record; versioned-stream-table and
   versioned-table-table: the stream-table and table-table workloads over versioned tables
   (:data:`HISTORY_RETENTION_MS` of history, no grace period), which run on the versioned pass
   (:mod:`kjoin.spark.vectorised_versioned`);
2. times kjoin on Spark (:func:`kjoin.spark.run_join`, ``method`` as given) consuming
   every output and step row with the ``noop`` sink;
3. times a plain Spark equi-join of the same rows (noop sink): what a user would write in
   SQL instead, without Kafka's record-by-record semantics:

   * stream-table: the stream left-joined with the table's last value per key
     (``groupBy(partition, key).agg(max_by(value, offset))``);
   * table-table: the left table's last values per key, full-outer-joined with the right's;
   * stream-stream: left-joined on key within the window (``|left.ts - right.ts| <= 1 s``);
   * versioned-stream-table and versioned-table-table: the same equi-join as the unversioned join
     (last value per key). Spark has no as-of join: the one a user would write by hand (join on key
     with ``right.ts <= left.ts``, then ``max_by`` per stream record) pairs every stream record with
     every earlier version of its key, quadratic in the versions per key, so the unversioned
     equi-join is the stronger (faster) baseline;

4. replays the same rows through real Kafka Streams (:data:`KAFKA_VERSION`, the oracle harness's
   ``kjoin.oracle.Replay`` in ``kafka_oracle/``: TopologyTestDriver, one per Kafka task, in-memory
   stores, no record caches), timed by the JVM itself; ``make kafka-oracle`` builds it;
5. times the reference engine (:func:`kjoin.run`, one Python process, full trace with the
   state history) on the first ``--reference-sample`` records only (the table says so);
6. samples the resident memory of the driver process, the JVM and the Python workers
   (the whole process tree, with psutil) every 50 ms during kjoin's run and reports the peak;
7. builds the run's ``why`` index (:meth:`kjoin.spark.SparkRun.why_index`, written under the temporary directory;
   its seconds, ``index s``) and times the first ``why`` of one input record after it (``why s``; the goal: under
   1 s), with the first method only, in the main run (not ``--no-baselines``: ``make bench-compare``'s turns).

Reading the table: ``rec/s`` is input records per second of wall time; ``kjoin/equi`` is
kjoin's throughput over the equi-join's (the issue's target: at least 0.5); ``kjoin/kafka`` over
Kafka Streams' (the target: above 1); ``load before/after`` is the 1-minute load average around kjoin's run;
``kjoin/ref`` is kjoin's throughput over the reference engine's. The first run of every plan
is a small untimed warm-up (class loading and JIT cost seconds in a fresh JVM).

``--values json`` times the join (default: stream-table left) with ``value="json"`` against ``value="string"``
instead, on the same JSON text (:func:`bench_values`): ``json/string`` is the ratio of their times, the cost of
decoding each value for the joiner (``auto`` then takes the processors and warns, ``SlowPathWarning``).

``--diff`` times :meth:`kjoin.spark.SparkRun.diff` instead: per size and change (:data:`DIFF_CHANGES`),
one run of the stream-stream join to the noop sink, then a diff of the same topics with every difference charged
to the noop sink, and ``diff/run``, the ratio (the issue's target: at most 2.5), and the same for the CPU seconds
each cost the process tree (``--repeat N``: N turns of both, the fewest seconds of each kept; ``make bench-diff``
takes 2); ``python records``, the differing
input records whose outputs the comparison in arrays left to the reference engine's comparison in Python
(:attr:`kjoin.spark.debug.diff.SparkDiff.fallbacks`); then the differences of sampled keys against the reference
engine's (:func:`bench_diff`).

Timing order matters on a loaded machine: a path timed right after the Kafka replay's JVM ran up to 2x slower,
hence the baselines outside Spark come last and ``--repeat`` alternates the equi-join and kjoin, keeping each
one's best. Only ratios taken in one run compare. The latest numbers, for every join and variant at 10^6 and
10^7, are in the README ("On Spark"), with what moved them and what did not help; earlier runs are in the
project's history (``git log -p benchmarks/bench.py README.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from .history import HISTORY, REPOSITORY

__all__ = ["main", "generate", "BenchRow", "COLUMNS"]

JOINS = ("stream-stream", "stream-table", "table-table", "versioned-stream-table", "versioned-table-table")
VARIANT = {
    "stream-stream": "left",
    "stream-table": "left",
    "table-table": "outer",
    "versioned-stream-table": "left",
    "versioned-table-table": "outer",
}
VARIANTS = {
    "stream-stream": ("inner", "left", "outer"),
    "stream-table": ("inner", "left"),
    "table-table": ("inner", "left", "outer"),
    "versioned-stream-table": ("inner", "left"),
    "versioned-table-table": ("inner", "left", "outer"),
}
"""The variants ``--variants`` may ask of each join (:data:`VARIANT`: the one timed by default)."""
WINDOW = {"before_ms": 1000, "after_ms": 1000, "grace_ms": 100}
HISTORY_RETENTION_MS = 10_000
"""The versioned tables' history retention (no grace period: a stream record is joined when it arrives)."""
_VERSIONED = {"versioned": True, "history_retention_ms": HISTORY_RETENTION_MS}
OPTIONS: dict[str, dict[str, Any]] = {
    "versioned-stream-table": {"right": _VERSIONED},
    "versioned-table-table": {"left": _VERSIONED, "right": _VERSIONED},
}
"""The scenario options (``run_join``'s ``options=``) of each benchmarked join beyond its join and variant."""


def kind(join: str) -> str:
    """The Kafka join of a benchmarked join: ``versioned-stream-table`` is a ``stream-table`` join."""
    return join.removeprefix("versioned-")


def run_options(join: str, variant: str | None = None) -> dict[str, Any]:
    """``run_join``'s keyword arguments for a benchmarked join (beyond the topics and the method); ``variant``:
    :data:`VARIANT`'s when not given."""
    return {
        "join": kind(join),
        "variant": variant or VARIANT[join],
        "window": WINDOW if join == "stream-stream" else None,
        "options": OPTIONS.get(join),
    }


COLUMNS = [
    "join",
    "variant",
    "records",
    "method",
    "kjoin s",
    "kjoin rec/s",
    "equi s",
    "equi rec/s",
    "kjoin/equi",
    "kjoin CPU s",
    "equi CPU s",
    "kafka rec/s",
    "kjoin/kafka",
    "reference rec/s (sample)",
    "kjoin/ref",
    "peak MB",
    "index s",
    "why s",
    "load before/after",
]
"""The columns of the printed table."""


@dataclass
class BenchRow:
    join: str
    variant: str
    records: int
    method: str
    kjoin_s: float
    equi_s: float
    reference_rate: float
    reference_sample: int
    peak_mb: float
    kafka_rate: float
    load_before: float
    load_after: float
    kafka_sample: int | None = None  # records Kafka Streams replayed, when fewer than ``records``
    kjoin_cpu: float | None = None  # CPU seconds of the process tree (driver, JVM, Python workers): tree_cpu
    equi_cpu: float | None = None
    kafka_s: float | None = None  # the replay's seconds as the JVM times them
    kafka_cpu: float | None = None  # the replay's java process's CPU seconds, its start included
    index_s: float | None = None  # building the run's why index (why_seconds)
    why_s: float | None = None  # the first why of one input record after the index

    def history(self) -> dict[str, Any]:
        """The row's fields as :mod:`benchmarks.history` records them (beyond the run's)."""
        skipped = self.kafka_rate != self.kafka_rate  # NaN: --no-baselines
        return {
            "load_before": round(self.load_before, 2),
            "load_after": round(self.load_after, 2),
            "join": self.join,
            "variant": self.variant,
            "size": self.records,
            "method": self.method,
            "kjoin_s": round(self.kjoin_s, 3),
            "kjoin_cpu_s": _rounded(self.kjoin_cpu),
            "equi_s": round(self.equi_s, 3),
            "equi_cpu_s": _rounded(self.equi_cpu),
            "kafka_s": None if skipped else _rounded(self.kafka_s),
            "kafka_cpu_s": None if skipped else _rounded(self.kafka_cpu),
            "kafka_records": None if skipped else (self.kafka_sample or self.records),
            "reference_rate": None if self.reference_rate != self.reference_rate else round(self.reference_rate),
            "reference_records": self.reference_sample or None,
            "peak_mb": round(self.peak_mb),
            "why_index_s": _rounded(self.index_s),
            "why_s": _rounded(self.why_s),
        }

    def cells(self) -> list[str]:
        kjoin_rate, equi_rate = self.records / self.kjoin_s, self.records / self.equi_s
        return [
            self.join,
            self.variant,
            f"{self.records:,}",
            self.method,
            f"{self.kjoin_s:.2f}",
            f"{kjoin_rate:,.0f}",
            f"{self.equi_s:.2f}",
            f"{equi_rate:,.0f}",
            f"{kjoin_rate / equi_rate:.2f}",
            "" if self.kjoin_cpu is None else f"{self.kjoin_cpu:.1f}",
            "" if self.equi_cpu is None else f"{self.equi_cpu:.1f}",
            f"{self.kafka_rate:,.0f}"
            + ("" if self.kafka_sample in (None, self.records) else f" (n={self.kafka_sample:,})"),
            f"{kjoin_rate / self.kafka_rate:.2f}",
            f"{self.reference_rate:,.0f} (n={self.reference_sample:,})",
            f"{kjoin_rate / self.reference_rate:.2f}",
            f"{self.peak_mb:,.0f}",
            "" if self.index_s is None else f"{self.index_s:.1f}",
            "" if self.why_s is None else f"{self.why_s:.2f}",
            f"{self.load_before:.1f}/{self.load_after:.1f}",
        ]


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


# -- data ---------------------------------------------------------------------------------
def draw(seed: int, salt: int, modulo: int) -> Any:
    """A seeded uniform integer in ``[0, modulo)`` per record of ``spark.range`` (its ``id``), one stream per
    ``salt``: the generators' dice (here and ``benchmarks/bench_topology.py``)."""
    from pyspark.sql import functions as F

    return F.pmod(F.xxhash64(F.col("id"), F.lit(seed), F.lit(salt)), F.lit(modulo))


def arrival_ts(seed: int, salt: int = 5) -> Any:
    """The generators' timestamps: about 100 records per millisecond, up to 50 ms out of order."""
    from pyspark.sql import functions as F

    return (F.floor(F.col("id") / 100) + draw(seed, salt, 50)).cast("bigint")


def with_append_offsets(frame: Any, *by: str) -> Any:
    """``frame`` with ``offset``: each record's rank in ``id`` order within ``by`` (its topic partition), as Kafka
    numbers records in append order."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    append_order = Window.partitionBy(*by).orderBy("id")
    return frame.withColumn("offset", (F.row_number().over(append_order) - 1).cast("bigint"))


def generate(
    spark: Any,
    join: str,
    records: int,
    path: str,
    keys: int = 100_000,
    partitions: int = 4,
    seed: int = 7,
    hot_key_share: int = 0,
    row_group_bytes: int | None = None,
) -> None:
    """Write ``records`` synthetic records of ``join`` to Parquet at ``path``: columns
    ``side, key, value, ts, partition, offset`` (offsets count up per side and partition in
    ``id`` order, as Kafka's do in append order). ``hot_key_share`` (percent, skew): that share of the records has
    key ``k0``, and partition 0 holds the even keys (half the others, and ``k0``), the other partitions the odd.
    ``row_group_bytes``: Parquet's row group size (``parquet.block.size``; default 128 MB), which bounds how many
    Spark tasks can read one file: a row group is read by one task."""
    from pyspark.sql import functions as F

    def dice(salt: int, modulo: int) -> Any:
        return draw(seed, salt, modulo)

    join = kind(join)
    right_share = {"stream-table": 10, "table-table": 50, "stream-stream": 50}[join]
    tombstones = {"stream-table": 5, "table-table": 10, "stream-stream": 1}[join]
    side = F.when(dice(1, 100) < right_share, F.lit("right")).otherwise(F.lit("left"))
    key_number = dice(2, keys)
    if hot_key_share:
        key_number = F.when(dice(6, 100) < hot_key_share, F.lit(0)).otherwise(key_number)
    key = F.when(dice(3, 1000) == 0, F.lit(None).cast("string")).otherwise(
        F.concat(F.lit("k"), key_number.cast("string"))
    )
    if join == "stream-table":
        null_value = F.when(F.col("side") == "right", dice(4, 100) < tombstones).otherwise(dice(4, 100) == 0)
    else:
        null_value = dice(4, 100) < tombstones
    value = F.when(null_value, F.lit(None).cast("string")).otherwise(
        F.concat(F.upper(F.substring(F.col("side"), 1, 1)), F.col("id").cast("string"))
    )
    ts = arrival_ts(seed)
    frame = (
        spark.range(records)
        .withColumn("side", side)
        .withColumn("_key_number", key_number)
        .withColumn("key", key)
        .withColumn("value", value)
        .withColumn("ts", ts)
        .withColumn("partition", _partition(F.col("_key_number"), partitions, bool(hot_key_share)))
    )
    frame = with_append_offsets(frame, "side", "partition")
    writer = frame.select("id", "side", "key", "value", "ts", "partition", "offset").write.mode("overwrite")
    if row_group_bytes:
        writer = writer.option("parquet.block.size", str(row_group_bytes))
    writer.parquet(path)


def _partition(key_number: Any, partitions: int, skewed: bool) -> Any:
    """A key's partition: its number modulo the partitions; skewed, the even keys in partition 0 (half the records)
    and the odd ones spread over the others."""
    from pyspark.sql import functions as F

    if not skewed or partitions < 2:
        return F.pmod(key_number, F.lit(partitions)).cast("int")
    spread = F.lit(1) + F.pmod(F.floor(key_number / 2), F.lit(partitions - 1))
    return F.when(F.pmod(key_number, F.lit(2)) == 0, F.lit(0)).otherwise(spread).cast("int")


def topics(spark: Any, path: str, partitions: int) -> tuple[Any, Any]:
    from pyspark.sql import functions as F

    from kjoin.spark import Topic

    data = spark.read.parquet(path)
    return tuple(
        Topic(
            data.filter(F.col("side") == side).select("key", "value", "ts", "partition", "offset"),
            partitions=partitions,
            source=f"{path} ({side})",
        )
        for side in ("left", "right")
    )  # type: ignore[return-value]


# -- the three contenders -----------------------------------------------------------------
def noop(frame: Any) -> None:
    frame.write.format("noop").mode("overwrite").save()


def equi_join(join: str, left: Any, right: Any, variant: str | None = None) -> Any:
    """The plain Spark equi-join of the same rows (see the module docstring), inner, left or full outer as the
    variant (:data:`VARIANT`'s when not given)."""
    from pyspark.sql import functions as F

    def latest(frame: Any, name: str) -> Any:
        return frame.groupBy("partition", "key").agg(F.max_by("value", "offset").alias(name))

    how = {"inner": "inner", "left": "left", "outer": "full_outer"}[variant or VARIANT[join]]
    join = kind(join)  # a versioned join's baseline is its unversioned join's (see the module docstring)

    if join == "stream-table":
        return left.join(latest(right, "table_value"), ["partition", "key"], how)
    if join == "table-table":
        return latest(left, "left_value").join(latest(right, "right_value"), ["partition", "key"], how)
    left_alias, right_alias = left.alias("l"), right.alias("r")
    condition = (
        (F.col("l.key") == F.col("r.key"))
        & (F.col("l.partition") == F.col("r.partition"))
        & F.col("r.ts").between(F.col("l.ts") - WINDOW["before_ms"], F.col("l.ts") + WINDOW["after_ms"])
    )
    return left_alias.join(right_alias, condition, how)


def reference_rate(
    spark: Any, join: str, path: str, sample: int, partitions: int, variant: str | None = None
) -> tuple[float, int]:
    """Records per second of the reference engine on the first ``sample`` records (this
    collects the sample to the driver: the reference engine is a single Python process)."""
    from kjoin import Scenario, run

    rows = spark.read.parquet(path).orderBy("id").limit(sample).collect()
    records = [
        {
            "side": r["side"],
            "key": r["key"],
            "value": r["value"],
            "ts": r["ts"],
            "partition": r["partition"],
            "offset": r["offset"],
        }
        for r in rows
    ]
    scenario = Scenario.from_records(
        kind(join),
        variant or VARIANT[join],
        records,
        window=WINDOW if join == "stream-stream" else None,
        partitions=partitions,
    )
    if join in OPTIONS:
        scenario = Scenario.from_dict({**scenario.to_dict(), **OPTIONS[join]})
    started = time.perf_counter()
    run(scenario)
    return len(records) / (time.perf_counter() - started), len(records)


KAFKA_VERSION = "4.4.0"
"""The Kafka Streams version the baseline replays through (one of the oracle harness's)."""
HARNESS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kafka_oracle")


KAFKA_STORES = ("in-memory", "rocksdb")


def kafka_rate(
    spark: Any,
    join: str,
    path: str,
    partitions: int,
    workdir: str,
    stores: str = "in-memory",
    variant: str | None = None,
    sample: int | None = None,
) -> tuple[float, int]:
    """Records per second of real Kafka Streams replaying the same records: the oracle harness's ``Replay``
    (``kafka_oracle/``: TopologyTestDriver, one per Kafka task, in-memory stores, no caching) on the rows
    written as tab-separated text by Spark (each partition's records in append order, not timed), timed by
    the JVM itself (not its start). ``stores="rocksdb"``: Kafka's default RocksDB stores instead (Kafka's
    in-memory window store is laid out by timestamp first, so a stream-stream join's lookups scan every
    millisecond of the window). ``sample``: replay only the first ``sample`` records (by ``id``: in every
    partition, a prefix of its log). Returns the rate and the Kafka Streams outputs counted."""
    import json
    import subprocess

    from pyspark.sql import functions as F

    classes = os.path.join(HARNESS, "target", "classes")
    dependencies = os.path.join(HARNESS, "target", f"cp-{KAFKA_VERSION}.txt")
    if not os.path.exists(os.path.join(classes, "kjoin", "oracle", "Replay.class")) or not os.path.exists(dependencies):
        raise SystemExit(
            f"the Kafka Streams baseline needs the oracle harness built in {HARNESS}: run `make kafka-oracle`"
        )
    java = shutil.which("java")
    if java is None:
        raise SystemExit("the Kafka Streams baseline needs java on PATH: install Java 17 (make kafka-oracle does)")
    text = os.path.join(workdir, "kafka-replay")

    def cell(name: str) -> Any:
        return F.coalesce(F.col(name).cast("string"), F.lit("\\N"))

    data = spark.read.parquet(path)
    if sample is not None:
        data = data.filter(F.col("id") < sample)
    line = F.concat_ws("\t", *(cell(name) for name in ("partition", "side", "key", "value", "ts")))
    (
        data.repartition(partitions, "partition")
        .sortWithinPartitions("partition", "id")
        .select(line.alias("value"))
        .write.mode("overwrite")
        .text(text)
    )
    scenario: dict[str, Any] = {"join": kind(join), "variant": variant or VARIANT[join], **OPTIONS.get(join, {})}
    if join == "stream-stream":
        scenario["window"] = WINDOW
    with open(dependencies) as listing:
        classpath = f"{classes}{os.pathsep}{listing.read().strip()}"
    children = _children_cpu()
    done = subprocess.run(
        [
            java,
            "-Xmx2g",
            f"-Dkjoin.oracle.stores={'rocksdb' if stores == 'rocksdb' else 'in_memory'}",
            "-cp",
            classpath,
            "kjoin.oracle.Replay",
            json.dumps(scenario),
            text,
        ],
        capture_output=True,
        text=True,
    )
    shutil.rmtree(text, ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"Kafka Streams replay failed:\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    KAFKA_LAST.update(seconds=report["seconds"], cpu=_children_cpu() - children)
    return report["records"] / report["seconds"], report["outputs"]


KAFKA_LAST: dict[str, float] = {}
"""The last replay's seconds (as the JVM timed them) and its ``java`` process's CPU seconds (:func:`kafka_rate`)."""


def _children_cpu() -> float:
    """CPU seconds of this process's waited-for children (a finished replay's JVM among them)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# -- memory ---------------------------------------------------------------------------------
class PeakMemory:
    """The peak resident memory of this process and all its descendants (the JVM that
    PySpark starts and its Python workers), sampled every ``interval`` seconds."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> int:
        try:
            import psutil
        except ImportError:  # pragma: no cover - psutil is a dependency of the dev environment
            return _proc_tree_rss(os.getpid())
        total = 0
        me = psutil.Process()
        for process in [me, *me.children(recursive=True)]:
            try:
                total += process.memory_info().rss
            except psutil.Error:
                pass
        return total

    def __enter__(self) -> "PeakMemory":
        self.peak = self.sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self.sample())

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        self.peak = max(self.peak, self.sample())


def _proc_tree_rss(pid: int) -> int:
    """Fallback without psutil: the RSS of ``pid`` and its descendants from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        total += rss.get(current, 0)
        todo.extend(children.get(current, []))
    return total


def why_seconds(result: Any, left: Any, size: int, partitions: int, workdir: str) -> tuple[float, float]:
    """The seconds of building ``result``'s why index (written to ``workdir``) and of the first ``why`` after it, of
    one keyed record of the left topic in partition 0 (past its first sixteenth of the records, so that its key
    has history; the first keyed record when there are none such)."""
    from pyspark.sql import functions as F

    keyed = left.frame.where((F.col("partition") == 0) & F.col("key").isNotNull())
    asked = keyed.where(F.col("offset") >= size // (4 * partitions)).orderBy("offset").first()
    asked = asked or keyed.orderBy("offset").first()
    if asked is None:
        raise RuntimeError(f"why_seconds: partition 0 of {left.source} holds no keyed record to ask why about")
    index_s = timed(lambda: result.why_index(os.path.join(workdir, "why-index")))
    why_s = timed(lambda: result.why(asked["partition"], asked["offset"]))
    return index_s, why_s


def timed(action: Callable[[], None]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def tree_cpu() -> float:
    """CPU seconds (user and system) of this process and its descendants so far: the JVM, the Python workers, and
    the workers that have exited (reaped, their parent counts them)."""
    import psutil

    total = 0.0
    me = psutil.Process()
    for process in [me, *me.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.Error:  # ended while we looked: its parent counts it once it is reaped
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def timed_cpu(action: Callable[[], None]) -> tuple[float, float]:
    """The seconds ``action`` took and the CPU seconds it cost this process tree (the driver, Spark's JVM, its
    Python workers: :func:`tree_cpu`), which a loaded machine does not stretch."""
    cpu = tree_cpu()
    seconds = timed(action)
    return seconds, tree_cpu() - cpu


# -- the run --------------------------------------------------------------------------------
def bench(
    spark: Any,
    sizes: list[int],
    joins: list[str],
    methods: list[str],
    reference_sample: int,
    keys: int,
    partitions: int,
    workdir: str,
    out: Any = sys.stdout,
    kafka_stores: str = "in-memory",
    repeat: int = 1,
    variants: list[str] | None = None,
    kafka_sample: int | None = None,
    baselines: bool = True,
    record: Callable[[list[BenchRow]], None] | None = None,
) -> list[BenchRow]:
    """The table's rows: per join, size and variant (``variants``: those of :data:`VARIANTS` each join has;
    :data:`VARIANT`'s when not given) and method. ``repeat`` rounds each time the equi-join and every method in
    turn and keep the fastest of each (seconds and CPU seconds each their fewest). ``kafka_sample``: Kafka Streams
    replays the first that many records only; ``baselines`` off: neither Kafka Streams nor the reference engine
    runs (their cells NaN). ``record``: called with each variant's rows as soon as they are measured (the history:
    a later row may not finish on a shared machine)."""
    from kjoin.spark import run_join

    rows = []
    for join in joins:
        chosen = [v for v in VARIANTS[join] if v in variants] if variants else [VARIANT[join]]
        if not chosen:
            continue
        # Warm-up, untimed: the first run of a plan in a fresh JVM pays class loading and JIT.
        path = os.path.join(workdir, f"{join}-warm-up.parquet")
        generate(spark, join, min(20_000, min(sizes)), path, keys=keys, partitions=partitions)
        left, right = topics(spark, path, partitions)
        for variant in chosen:
            noop(equi_join(join, left.frame, right.frame, variant))
            for method in methods:
                noop(run_join(left, right, method=method, **run_options(join, variant)).results)
        for size in sizes:
            path = os.path.join(workdir, f"{join}-{size}.parquet")
            print(f"[bench] generating {size:,} {join} records ...", file=out, flush=True)
            generate(spark, join, size, path, keys=keys, partitions=partitions)
            left, right = topics(spark, path, partitions)
            noop(left.frame.unionByName(right.frame))  # warm the file cache and the session
            for variant in chosen:
                measured = _bench_variant(
                    spark, join, variant, size, path, left, right, methods, repeat, out,
                    reference_sample, partitions, workdir, kafka_stores, kafka_sample, baselines,
                )  # fmt: skip
                if record is not None:
                    record(measured)
                rows += measured
            shutil.rmtree(path, ignore_errors=True)
    return rows


def _bench_variant(
    spark, join, variant, size, path, left, right, methods, repeat, out,
    reference_sample, partitions, workdir, kafka_stores, kafka_sample, baselines=True,
) -> list[BenchRow]:  # fmt: skip
    from kjoin.spark import run_join

    used: set[str] = set()
    runs = []
    for method in methods:
        result = run_join(left, right, method=method, **run_options(join, variant))
        path_used = _method_used(result, method).split(": ")[-1]
        if path_used in used:  # e.g. auto already ran the processors: do not time them twice
            continue
        used.add(path_used)
        runs.append((_method_used(result, method), result))
    best: dict[str, tuple] = {}
    best_cpu: dict[str, float] = {}
    equi_s = equi_cpu = float("inf")
    for round_ in range(repeat):  # each round: the equi-join, then the methods in turn (reversed every other round)
        print(f"[bench] {join} {variant} {size:,} equi-join ...", file=out, flush=True)
        seconds, cpu = timed_cpu(lambda: noop(equi_join(join, left.frame, right.frame, variant)))
        equi_s, equi_cpu = min(equi_s, seconds), min(equi_cpu, cpu)
        for method_used, result in runs if round_ % 2 == 0 else runs[::-1]:
            print(f"[bench] {join} {variant} {size:,} kjoin {method_used} ...", file=out, flush=True)
            load_before = os.getloadavg()[0]
            with PeakMemory() as memory:
                kjoin_s, cpu = timed_cpu(lambda: noop(result.results))
            timing = (method_used, kjoin_s, memory.peak, load_before, os.getloadavg()[0])
            if method_used not in best or kjoin_s < best[method_used][1]:
                best[method_used] = timing
            best_cpu[method_used] = min(best_cpu.get(method_used, cpu), cpu)
    timings = [best[method_used] for method_used, _ in runs]
    # The baselines outside Spark last, so that their processes never share the machine with kjoin's run.
    ref_rate, ref_n, kafka, kafka_n = float("nan"), 0, float("nan"), size
    kafka_s = kafka_cpu = None
    why: dict[str, tuple[float, float]] = {}
    if baselines:
        method_used, result = runs[0]
        print(f"[bench] {join} {variant} {size:,} why index and why ...", file=out, flush=True)
        why[method_used] = why_seconds(result, left, size, partitions, workdir)
        ref_rate, ref_n = reference_rate(spark, join, path, min(reference_sample, size), partitions, variant)
        kafka_n = size if kafka_sample is None else min(kafka_sample, size)
        print(f"[bench] {join} {variant} {kafka_n:,} Kafka Streams {KAFKA_VERSION} replay ...", file=out, flush=True)
        kafka, _ = kafka_rate(
            spark, join, path, partitions, workdir, kafka_stores, variant, None if kafka_n == size else kafka_n
        )
        kafka_s, kafka_cpu = KAFKA_LAST["seconds"], KAFKA_LAST["cpu"]
    return [
        BenchRow(
            join,
            variant,
            size,
            method_used,
            kjoin_s,
            equi_s,
            ref_rate,
            ref_n,
            peak / 2**20,
            kafka,
            load_before,
            load_after,
            kafka_n,
            best_cpu[method_used],
            equi_cpu,
            kafka_s,
            kafka_cpu,
            *why.get(method_used, (None, None)),
        )  # fmt: skip
        for method_used, kjoin_s, peak, load_before, load_after in timings
    ]


# -- JSON values ----------------------------------------------------------------------------
VALUES = ("string", "json")
"""How ``--values`` reads the values: as text (``from_files(..., value="string")``) or as JSON decoded for the joiner
(``value="json"``)."""
VALUES_COLUMNS = ["join", "variant", "records", "values", "method", "kjoin s", "kjoin rec/s", "json/string", "load"]


@dataclass
class ValuesRow:
    join: str
    variant: str
    records: int
    values: str
    method: str
    kjoin_s: float
    string_s: float
    load_before: float
    load_after: float

    def cells(self) -> list[str]:
        return [
            self.join,
            self.variant,
            f"{self.records:,}",
            self.values,
            self.method,
            f"{self.kjoin_s:.2f}",
            f"{self.records / self.kjoin_s:,.0f}",
            f"{self.kjoin_s / self.string_s:.2f}",
            f"{self.load_before:.1f}/{self.load_after:.1f}",
        ]


def json_values(spark: Any, path: str, json_path: str) -> None:
    """The records at ``path`` with each value as a JSON object's text (``{"id":"L12","ts":40}``; a tombstone stays
    null), written to ``json_path``: what a producer writing JSON gives, read as text or as JSON alike."""
    from pyspark.sql import functions as F

    data = spark.read.parquet(path)
    text = F.to_json(F.struct(F.col("value").alias("id"), F.col("ts").alias("ts")))
    data.withColumn("value", F.when(F.col("value").isNull(), F.lit(None)).otherwise(text)).write.mode(
        "overwrite"
    ).parquet(json_path)


def bench_values(
    spark: Any,
    sizes: list[int],
    joins: list[str],
    keys: int,
    partitions: int,
    workdir: str,
    out: Any,
    repeat: int = 1,
) -> list[ValuesRow]:
    """Per join and size, the same JSON text joined (``method="auto"``, every output and step row to the ``noop``
    sink) as ``value="string"`` and as ``value="json"``, in turns (``repeat`` rounds, reversed every other one,
    keeping the fastest of each): one row per way of reading the values, with its time over the string one's."""
    import warnings

    from kjoin.spark import Topic, run_join

    def read(path: str, values: str) -> tuple[Any, Any]:
        left, right = topics(spark, path, partitions)
        return tuple(Topic(t.frame, t.partitions, values == "json", t.source) for t in (left, right))  # type: ignore

    def join_of(path: str, values: str, join: str) -> Any:
        with warnings.catch_warnings():  # value="json" under auto: the SlowPathWarning this bench measures
            warnings.simplefilter("ignore")
            return run_join(*read(path, values), **run_options(join))

    rows = []
    for join in joins:
        plain, path = (os.path.join(workdir, f"values-{join}-{name}.parquet") for name in ("plain", "json"))
        generate(spark, join, min(20_000, min(sizes)), plain, keys=keys, partitions=partitions)
        json_values(spark, plain, path)
        for values in VALUES:  # warm-up, untimed
            noop(join_of(path, values, join).results)
        for size in sizes:
            print(f"[bench] generating {size:,} {join} records with JSON values ...", file=out, flush=True)
            generate(spark, join, size, plain, keys=keys, partitions=partitions)
            json_values(spark, plain, path)
            left, right = read(path, "string")
            noop(left.frame.unionByName(right.frame))
            best: dict[str, tuple] = {}
            for round_ in range(repeat):
                for values in VALUES if round_ % 2 == 0 else VALUES[::-1]:
                    print(f"[bench] {join} {size:,} value={values!r} ...", file=out, flush=True)
                    result = join_of(path, values, join)
                    load_before = os.getloadavg()[0]
                    seconds = timed(lambda: noop(result.results))
                    if values not in best or seconds < best[values][1]:
                        best[values] = (result.method, seconds, load_before, os.getloadavg()[0])
            string_s = best["string"][1]
            variant = run_options(join)["variant"]
            for values in VALUES:
                method, seconds, load_before, load_after = best[values]
                rows.append(ValuesRow(join, variant, size, values, method, seconds, string_s, load_before, load_after))
        for used in (plain, path):
            shutil.rmtree(used, ignore_errors=True)
    return rows


# -- the diff's cost ----------------------------------------------------------------------
DIFF_JOIN = "stream-stream"
DIFF_CHANGES: dict[str, dict[str, Any]] = {
    "window.grace_ms=0": {"window": {"grace_ms": 0}},
    "3.0 -> 3.1": {"semantics": "3.1"},
}
"""What the diff rows compare, each from the stream-stream join of :data:`WINDOW` (grace 100 ms) under 3.0 for the
semantics change (its spurious-result fix: every left record without a partner moves), under the latest for the
setting (records up to 50 ms late are dropped and the held results come out earlier)."""
DIFF_COLUMNS = [
    "join",
    "records",
    "change",
    "run s",
    "diff s",
    "diff/run",
    "CPU s run/diff",
    "CPU diff/run",
    "differences",
    "python records",
    "keys checked",
    "reference differences",
    "mismatches",
    "load before/after",
]


@dataclass
class DiffRow:
    join: str
    records: int
    change: str
    run_s: float
    diff_s: float
    run_cpu: float
    diff_cpu: float
    differences: int
    fallbacks: int | None
    keys: int
    checked: int
    mismatches: int
    load_before: float
    load_after: float

    def cells(self) -> list[str]:
        return [
            f"{self.join} {VARIANT[self.join]}",
            f"{self.records:,}",
            self.change,
            f"{self.run_s:.1f}",
            f"{self.diff_s:.1f}",
            f"{self.diff_s / self.run_s:.2f}",
            f"{self.run_cpu:.1f}/{self.diff_cpu:.1f}",
            f"{self.diff_cpu / self.run_cpu:.2f}",
            f"{self.differences:,}",
            "-" if self.fallbacks is None else f"{self.fallbacks:,}",
            f"{self.keys}",
            f"{self.checked:,}",
            f"{self.mismatches}",
            f"{self.load_before:.1f}/{self.load_after:.1f}",
        ]


def bench_diff(
    spark: Any,
    sizes: list[int],
    keys: int,
    partitions: int,
    workdir: str,
    out: Any,
    sample_keys: int = 20,
    changes: list[str] | None = None,
    repeat: int = 1,
) -> list[DiffRow]:
    """Per size and change (:data:`DIFF_CHANGES`): one run of the join (every output and step row to the ``noop``
    sink) against ``run_join(...).diff(...)`` with every difference, charged, to the ``noop`` sink (both timed in
    the same process, one after the other, ``repeat`` times in turns: the fewest seconds and the fewest CPU seconds
    of each kept); then the differences of ``sample_keys`` keys (half of them among those
    with the most differences, half drawn from all keys) against the reference engine's on the same keys
    (:meth:`kjoin.spark.debug.diff.SparkDiff.check_keys`)."""
    from kjoin.spark import run_join

    chosen = {label: DIFF_CHANGES[label] for label in (changes or list(DIFF_CHANGES))}

    def join_and_diff(left: Any, right: Any, change: dict[str, Any]) -> tuple[Any, Any]:
        arguments = dict(change)
        semantics = arguments.pop("semantics", None)
        first = "3.0" if semantics else None
        result = run_join(left, right, semantics=first, **run_options(DIFF_JOIN))
        return result, (lambda: result.diff(semantics, **arguments))

    path = os.path.join(workdir, "diff-warm-up.parquet")
    generate(spark, DIFF_JOIN, 20_000, path, keys=keys, partitions=partitions)
    left, right = topics(spark, path, partitions)
    for change in chosen.values():  # untimed: class loading and JIT
        result, diff_of = join_and_diff(left, right, change)
        noop(result.results)
        found = diff_of()
        noop(found.differences)
        found.unpersist()
    rows = []
    for size in sizes:
        path = os.path.join(workdir, f"diff-{size}.parquet")
        print(f"[bench] generating {size:,} {DIFF_JOIN} records ...", file=out, flush=True)
        generate(spark, DIFF_JOIN, size, path, keys=keys, partitions=partitions)
        left, right = topics(spark, path, partitions)
        noop(left.frame.unionByName(right.frame))
        for label, change in chosen.items():
            load_before = os.getloadavg()[0]
            runs, diffs = [], []
            found: Any = None
            for turn in range(repeat):  # in turns, the fastest of each kept: a shared machine's load comes and goes
                print(f"[bench] {DIFF_JOIN} {size:,} one run ({turn + 1}/{repeat}) ...", file=out, flush=True)
                result, _ = join_and_diff(left, right, change)
                runs.append(timed_cpu(lambda: noop(result.results)))
                print(f"[bench] {DIFF_JOIN} {size:,} diff {label} ({turn + 1}/{repeat}) ...", file=out, flush=True)
                if found is not None:
                    found.unpersist()
                result, diff_of = join_and_diff(left, right, change)

                def diff_all() -> None:
                    nonlocal found
                    found = diff_of()
                    noop(found.differences)

                diffs.append(timed_cpu(diff_all))
            run_s, run_cpu = (min(values) for values in zip(*runs))
            diff_s, diff_cpu = (min(values) for values in zip(*diffs))
            load_after = os.getloadavg()[0]
            count = found.differences.count()
            fallbacks = found.fallbacks  # counted as the timed run computed the differences
            print(f"[bench] {DIFF_JOIN} {size:,} diff {label}: checking sampled keys ...", file=out, flush=True)
            check = _check_sampled_keys(found, left, sample_keys, out)
            print(  # the row as soon as it is measured: a later row may not finish on a shared machine
                f"[bench] {DIFF_JOIN} {size:,} {label}: run {run_s:.1f} s, diff {diff_s:.1f} s "
                f"(diff/run {diff_s / run_s:.2f}; CPU {run_cpu:.1f} s and {diff_cpu:.1f} s, "
                f"{diff_cpu / run_cpu:.2f}), {count:,} differences ({fallbacks} records compared in Python), "
                f"{check.keys} sampled keys with "
                f"{check.differences} differences, {len(check.mismatches)} mismatches",
                file=out,
                flush=True,
            )
            rows.append(
                DiffRow(
                    DIFF_JOIN,
                    size,
                    label,
                    run_s,
                    diff_s,
                    run_cpu,
                    diff_cpu,
                    count,
                    fallbacks,
                    check.keys,
                    check.differences,
                    len(check.mismatches),
                    load_before,
                    load_after,
                )  # fmt: skip
            )
            found.unpersist()
        shutil.rmtree(path, ignore_errors=True)
    return rows


def _check_sampled_keys(found: Any, left: Any, sample_keys: int, out: Any) -> Any:
    """The diff's differences on ``sample_keys`` keys (half among those with the most differences, half drawn from
    all keys) against the reference engine's (:meth:`kjoin.spark.debug.diff.SparkDiff.check_keys`); each mismatch
    printed."""
    from pyspark.sql import functions as F

    most = [(r["partition"], r["key"]) for r in found.by_key().limit(sample_keys // 2).collect() if r["key"]]
    drawn = (
        left.frame.select("partition", "key")
        .where(F.col("key").isNotNull())
        .distinct()
        .orderBy(F.xxhash64("key"))
        .limit(sample_keys - len(most))
        .collect()
    )
    sampled = list(dict.fromkeys([(p, json.loads(k)) for p, k in most] + [(r[0], r[1]) for r in drawn]))
    check = found.check_keys(sampled)
    for partition, key, only_spark, only_reference in check.mismatches:
        print(f"[bench] mismatch {key!r}@{partition}: {only_spark} / {only_reference}", file=out, flush=True)
    return check


def _method_used(result: Any, asked: str) -> str:
    """``vectorised``, ``native`` or ``processors``: the path that ran (what ``auto`` chose)."""
    used = result.method
    return used if asked == used else f"{asked}: {used}"


def format_table(rows: list[Any], columns: list[str] = COLUMNS) -> str:
    cells = [columns] + [row.cells() for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = [
        " | ".join(cell.rjust(widths[i]) if i >= 2 else cell.ljust(widths[i]) for i, cell in enumerate(line))
        for line in cells
    ]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def _ints(text: str) -> list[int]:
    try:
        values = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers such as 100000,1000000, got {text!r}"
        ) from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _choices(allowed: tuple[str, ...], what: str) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        values = [part.strip() for part in text.split(",") if part.strip()]
        wrong = [v for v in values if v not in allowed]
        if wrong or not values:
            raise argparse.ArgumentTypeError(
                f"{what}: expected a comma-separated subset of {','.join(allowed)}, got {text!r}"
            )
        return values

    return parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench",
        description="kjoin on Spark vs a plain Spark equi-join vs the reference engine (records/s, noop sink).",
    )
    parser.add_argument(
        "--sizes",
        type=_ints,
        default=[100_000, 1_000_000, 10_000_000],
        help="input records per run (default 100000,1000000,10000000)",
    )
    parser.add_argument(
        "--joins",
        type=_choices(JOINS, "--joins"),
        default=None,
        help=f"default: all ({', '.join(JOINS)}); with --values, stream-table",
    )
    parser.add_argument(
        "--methods",
        type=_choices(("auto", "vectorised", "native", "processors"), "--methods"),
        default=["auto"],
        help="run_join methods to time (default auto)",
    )
    parser.add_argument(
        "--reference-sample", type=int, default=100_000, help="records the reference engine runs (default 100000)"
    )
    parser.add_argument("--keys", type=int, default=100_000, help="distinct keys (default 100000)")
    parser.add_argument("--partitions", type=int, default=4, help="Kafka partitions (default 4)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="time each kjoin method this many times, in turns (reversed every other round), keep the fastest",
    )
    parser.add_argument(
        "--kafka-stores",
        choices=KAFKA_STORES,
        default="in-memory",
        help="the Kafka Streams baseline's state stores (default in-memory; rocksdb: Kafka's default)",
    )
    parser.add_argument(
        "--variants",
        type=_choices(("inner", "left", "outer"), "--variants"),
        default=None,
        help="join variants to time, each where the join has it (default: left, table-table outer)",
    )
    parser.add_argument(
        "--kafka-sample",
        type=int,
        default=None,
        help="Kafka Streams replays only the first this many records (default: all; its rate per record does not "
        "rise with the size, and a stream-stream replay of 10^7 takes hours)",
    )
    parser.add_argument(
        "--history",
        nargs="?",
        const=str(HISTORY),
        default=None,
        help=f"append each measurement to this history file (default with the flag: {HISTORY.relative_to(REPOSITORY)}"
        "; benchmarks/history.py says what a row holds; make bench sets it)",
    )
    parser.add_argument(
        "--label", default="bench", help="the history rows' label (default bench; make bench-compare: compare)"
    )
    parser.add_argument(
        "--no-baselines",
        action="store_true",
        help="time kjoin and the equi-join only: neither Kafka Streams nor the reference engine runs",
    )
    _scale_arguments(parser)
    parser.add_argument(
        "--topology",
        action="store_true",
        help="time a topology (a re-key and two joins, kjoin.spark.run_topology) against the same plan as plain "
        "Spark equi-joins instead (benchmarks/bench_topology.py)",
    )
    parser.add_argument(
        "--values",
        choices=("json",),
        default=None,
        help="time the joins (default: stream-table) with value='json' against value='string' on the same JSON text "
        "instead (json/string, the cost of decoding values for the joiner)",
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="time SparkRun.diff against one run instead (at most 2.5x), and check the differences of "
        "sampled keys against the reference engine",
    )
    parser.add_argument(
        "--diff-changes",
        type=_choices(tuple(DIFF_CHANGES), "--diff-changes"),
        default=None,
        help=f"with --diff: the changes to compare (default: all of {', '.join(DIFF_CHANGES)})",
    )
    parser.add_argument(
        "--diff-keys", type=int, default=20, help="with --diff: keys whose differences the reference engine checks"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.kafka_sample is not None and args.kafka_sample <= 0:
        parser.error("--kafka-sample: expected a positive integer")
    if args.reference_sample <= 0:
        parser.error("--reference-sample: expected a positive integer")
    if args.repeat <= 0:
        parser.error("--repeat: expected a positive integer")

    from kjoin.spark import local_session

    spark = local_session()
    load_before = os.getloadavg()
    workdir = tempfile.mkdtemp(prefix="kjoin-bench-")
    if args.diff:
        return _main_diff(spark, args, workdir, load_before)
    if args.values:
        return _main_values(spark, args, workdir, load_before)
    if args.scale:
        _scale(spark, args, workdir, load_before)
        return 0
    if args.topology:
        from benchmarks.bench_topology import bench_topology

        try:
            methods = tuple(m for m in args.methods if m in ("auto", "vectorised", "processors"))
            lines = bench_topology(spark, args.sizes, args.keys, args.partitions, workdir, sys.stderr, methods)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        print(f"kjoin topology bench: {os.cpu_count()} cores, {args.partitions} Kafka partitions, {args.keys:,} keys")
        print("\n".join(lines))
        return 0
    record = None if args.history is None else _recorder(args.history, args.label, argv)
    try:
        rows = bench(
            spark,
            args.sizes,
            args.joins or list(JOINS),
            args.methods,
            args.reference_sample,
            args.keys,
            args.partitions,
            workdir,
            out=sys.stderr,
            kafka_stores=args.kafka_stores,
            repeat=args.repeat,
            variants=args.variants,
            kafka_sample=args.kafka_sample,
            baselines=not args.no_baselines,
            record=record,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    load = _load_since(load_before)
    print(
        f"kjoin bench: {os.cpu_count()} cores, {args.partitions} Kafka partitions, {args.keys:,} keys, noop sink; "
        f"Kafka Streams {KAFKA_VERSION} with {args.kafka_stores} stores; "
        f"reference engine on the first n records; load average (1/5/15 min) before/after: {load}"
    )
    print(format_table(rows))
    return 0


def _recorder(path: str, label: str, argv: list[str] | None) -> Callable[[list[BenchRow]], None]:
    """Append each measured row to the history at ``path`` (:mod:`benchmarks.history`), with this run's id, label,
    command, the commit of the kjoin that runs (its git tree) and the machine."""
    import kjoin

    from .history import append, command, commit_of, machine, new_run_id, now

    commit, dirty = commit_of(os.path.dirname(os.path.dirname(os.path.abspath(kjoin.__file__))))
    words = sys.argv[1:] if argv is None else argv
    run = {
        "kind": "measurement",
        "run": new_run_id(),
        "label": label,
        "command": command("python -m benchmarks.bench", words),
        "commit": commit,
        "dirty": dirty,
    }

    def record(rows: list[BenchRow]) -> None:
        append([{**run, "date": now(), **machine(), **row.history()} for row in rows], path)

    return record


def _load_since(load_before: tuple[float, float, float]) -> str:
    """The load averages (1/5/15 min) before the run and now, as the tables' headers print them."""
    return ", ".join(f"{a:.1f}/{b:.1f}" for a, b in zip(load_before, os.getloadavg()))


def _scale_arguments(parser: Any) -> None:
    parser.add_argument(
        "--scale",
        nargs="?",
        const="split,curve,skew",
        default=None,
        type=_choices(("split", "curve", "skew", "placement"), "--scale"),
        help="instead of the table: how kjoin scales (benchmarks/scale.py): the key split on a 1-partition topic, "
        "the size curve of --sizes, a skewed topic (default: those three), the Kafka tasks' placement in Spark "
        "tasks (placement: by Spark's hash as before 2026-11-27, and kjoin's own)",
    )
    parser.add_argument("--scale-join", choices=JOINS, default="stream-table", help="the join --scale times")


def _scale(spark: Any, args: Any, workdir: str, load_before: tuple[float, float, float]) -> None:
    """``--scale``: the scale tables (:mod:`benchmarks.scale`) instead of the main table."""
    from .scale import format_tables, scale

    try:
        tables = scale(spark, args.scale, args.sizes, args.scale_join, args.keys, args.partitions, workdir, sys.stderr)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    load = _load_since(load_before)
    print(
        f"kjoin scale: {os.cpu_count()} cores, {args.scale_join} {run_options(args.scale_join)['variant']}, "
        f"{args.keys:,} keys; load average (1/5/15 min) before/after: {load}"
    )
    print(format_tables(tables))


def _main_diff(spark: Any, args: Any, workdir: str, load_before: tuple[float, float, float]) -> int:
    """``--diff``: the diff rows (:func:`bench_diff`) and their table."""
    try:
        rows = bench_diff(
            spark, args.sizes, args.keys, args.partitions, workdir, sys.stderr, args.diff_keys, args.diff_changes,
            args.repeat,
        )  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    load = _load_since(load_before)
    print(
        f"kjoin bench --diff: {os.cpu_count()} cores, {args.partitions} Kafka partitions, {args.keys:,} keys, "
        f"noop sink; load average (1/5/15 min) before/after: {load}"
    )
    print(format_table(rows, DIFF_COLUMNS))
    return 0


def _main_values(spark: Any, args: Any, workdir: str, load_before: tuple[float, float, float]) -> int:
    """``--values json``: the JSON values rows (:func:`bench_values`) and their table."""
    try:
        rows = bench_values(
            spark, args.sizes, args.joins or ["stream-table"], args.keys, args.partitions, workdir, sys.stderr,
            args.repeat,
        )  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    load = _load_since(load_before)
    print(
        f"kjoin bench --values json: {os.cpu_count()} cores, {args.partitions} Kafka partitions, {args.keys:,} keys, "
        f"noop sink, method auto, the same JSON text read as string and as JSON; load average (1/5/15 min) "
        f"before/after: {load}"
    )
    print(format_table(rows, VALUES_COLUMNS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
