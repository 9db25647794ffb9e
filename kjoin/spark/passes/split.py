"""Past the partition count: one Kafka task's records split by key across several Spark tasks.

A Kafka task (one partition of each input topic) is the unit the per-task passes run: a topic of one partition runs
on one core however many the cluster has. Within a task, keys meet only through the task's clocks. In the joins
this module splits (stream-table joins over an unversioned table, table-table joins over two: the joins of
:mod:`.vectorised`, on that pass or on kjoin's processors), a key's state and rules are the key's own, and the one
fact that depends on the other keys is a record's **step**, its place in the task's processing order. So:

1. **The clock** (a first pass, once per task, narrow). :func:`kjoin.spark.run_scenarios` knows every record's
   step (its position in the scenario). :func:`kjoin.spark.run_join` computes it (:mod:`.clock`): each task's
   ``(side, offset, ts)``, and nothing else, packed where the topics are read (a row of offsets and timestamps per
   Arrow batch, task and side, in parallel), are merged into processing order once, by :mod:`.merge` itself (the
   same running maxima, the same ties), into the task's side sequence (a bit per step) and offset runs; those few
   rows go to every key bucket of the task (``pmod(xxhash64(key), buckets)``, a null key to bucket 0), ahead of the
   bucket's own records, which each go whole to their key's bucket only. A bucket reads its records' steps off the
   clock and merges its two sides by step.
2. **The join** (per bucket). The plan's per-task pass runs over the bucket's own records, carrying their steps, as
   if the bucket were a task of its own (its ``scenario`` is ``scenario * buckets + bucket`` while it runs; the
   rows say the real one). Every record's rows come from its own bucket, so a stable sort by step of a task's
   rows is the whole task's emission order; within each bucket the rows come in emission order.

Refused (``key_split="on"`` raises the sentence; ``"auto"`` does not split): joins whose rules read a clock that
other keys move. A stream-stream join's stream time closes windows, drops late records and window segments, and
from 3.1 its outer-join buffer's sweeps release other keys' records (the debugging index replays those sweeps,
:mod:`kjoin.spark.debug.index`; splitting them needs the join's own first pass: not built). A versioned table's
history retention follows its store's observed time, and the stream-table grace buffer releases by stream time.
Record caches flush on commits, which count the task's records. Chained joins, self-joins and materialised
results are not split either (one plain join per task).

Cost. Each record crosses the shuffle once whole and once packed for the clock (its offset and timestamp, about 7
bytes compressed); each bucket receives its task's clock (a bit per record of the task, and the offset runs: one
per partition side with dense offsets). The serial part is the clock pass: the streaming merge of the task's packed
rows (Spark sorts only those rows, one per 10^5 records); the first design (until 2026-11-27) sent every record to
every bucket as a clock row and sorted and merged the whole task in each bucket, and the second sorted every
record's narrow row in the clock pass. Both topics are read twice (the records, then the narrow columns for the
clock). ``"auto"`` splits a task into ``ceil(cores / tasks)`` buckets when the topics have fewer partitions than
Spark has cores (``spark.default.parallelism``). Measured: docs/benchmarks.md, "The key split" (on 2 cores the
split does not pay: the unsplit task already keeps about 1.5 cores busy, the JVM beside its Python worker).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import pyarrow as pa
from pyspark.sql import functions as F

from ..io.topic import SparkInputError
from ..placement import by_task, task_numbers
from ..spec import JoinSpec
from .clock import CLOCK_FIELDS, PACKED_FIELDS, clock_function, clock_rank, pack_function, stepped_batches
from .merge import SPILL_ROWS
from .task import result_schema

__all__ = [
    "KEY_SPLITS",
    "KeySplit",
    "refusal",
    "bucket_count",
    "clocked",
    "positioned",
    "split_results",
    "spark_hash_long",
]

KEY_SPLITS = ("auto", "on", "off")
"""``key_split=`` of :func:`kjoin.spark.run_join` and :func:`kjoin.spark.run_scenarios` (or a number of buckets)."""


@dataclass(frozen=True)
class KeySplit:
    """The records of a split run, ready for the bucket passes: ``frame`` routed (one Spark partition per bucket of
    a task for ``run_join``) and sorted within partitions; ``held_rank`` the side a task holds while the other
    streams, when the steps come from the clock rows (:func:`clocked`), ``None`` when the records carry them
    (:func:`positioned`)."""

    frame: Any
    buckets: int
    held_rank: int | None


def refusal(specs: Mapping[int, JoinSpec]) -> str | None:
    """Why these joins cannot be split by key exactly (one sentence naming the scenario), or ``None``."""
    for scenario_id, spec in specs.items():
        where = f"scenario {scenario_id}" if len(specs) > 1 else "the join"
        if spec.join == "stream-stream":
            return (
                f"{where} is a stream-stream join: its stream time, which every key's records move, closes windows "
                "and drops late records and window segments, and from 3.1 its outer-join buffer's sweeps release "
                "other keys' records"
            )
        if spec.versioned:
            return (
                f"{where} joins a versioned table: its history retention follows the store's observed time and the "
                "grace buffer releases by stream time, which every key's records move"
            )
        if spec.grace_ms:
            return f"{where} has a grace period: its buffer releases by the task's stream time"
        if spec.caching:
            return f"{where} has record caches: they flush on commits, which count every key's records"
        if not spec.plain:
            return f"{where} is not one plain join (chained joins, a self-join, a materialised result, old values)"
    return None


def bucket_count(key_split: str | int, specs: Mapping[int, JoinSpec], tasks: int, cores: int, method: str) -> int:
    """How many key buckets each Kafka task runs as (1: no split). ``key_split``: ``"off"``; ``"on"`` (at least
    two buckets, and a :class:`SparkInputError` with :func:`refusal`'s reason when the joins cannot be split);
    ``"auto"`` (split when exact, on the per-task passes, with fewer ``tasks`` than ``cores``); or a number."""
    if isinstance(key_split, bool) or not (key_split in KEY_SPLITS or (isinstance(key_split, int) and key_split > 0)):
        expected = " | ".join(KEY_SPLITS)
        raise SparkInputError(f"key_split: expected one of {expected} or a number of buckets, got {key_split!r}")
    if key_split == "off" or key_split == 1:
        return 1
    why = refusal(specs)
    if key_split == "auto":
        if why is not None or method == "native" or tasks >= cores:
            return 1
        return math.ceil(cores / max(1, tasks))
    if why is not None:
        raise SparkInputError(
            f"key_split={key_split!r} cannot split this join by key exactly: {why}. Use key_split='auto' or 'off'"
        )
    if method == "native":
        raise SparkInputError(
            f"key_split={key_split!r} splits the per-task passes; method='native' runs Spark SQL windows over each "
            "whole task. Use method='auto', 'vectorised' or 'processors', or key_split='off'"
        )
    if isinstance(key_split, int):
        return key_split
    return max(2, math.ceil(cores / max(1, tasks)))


def _bucket(key: Any, buckets: int) -> Any:
    """A record's key bucket: ``pmod(xxhash64(key), buckets)``, a null key's 0."""
    return F.when(key.isNull(), F.lit(0)).otherwise(F.pmod(F.xxhash64(key), F.lit(buckets))).cast("bigint")


def clocked(union: Any, buckets: int, held_rank: int, partitions: int, spill_rows: int = SPILL_ROWS) -> KeySplit:
    """``run_join``'s records (``scenario, partition, _side_rank, key, value, ts, offset``; scenario 0, partitions
    ``0 .. partitions - 1``) as key buckets with their task's clock (see the module): one Spark partition per bucket
    of each task, sorted by (clock rows, held side, live side; offset) for
    :func:`kjoin.spark.passes.clock.stepped_batches`."""
    slots = partitions * buckets
    routes = F.array(*[F.lit(value).cast("bigint") for value in _routes(slots)])

    def route(bucket: Any) -> Any:
        slot = F.col("partition").cast("bigint") * buckets + bucket
        return F.element_at(routes, (slot % slots + 1).cast("int")).alias("_route")

    own = _bucket(F.col("key"), buckets)
    side = F.col("_side_rank").cast("byte").alias("_side_rank")
    # Each record once, whole, to its key's bucket.
    records = union.select(
        (F.col("scenario") * buckets + own).alias("scenario"),
        "partition",
        side,
        "key",
        "value",
        "ts",
        "offset",
        F.lit(None).cast("binary").alias("_clock"),
        route(own),
    ).repartition(slots, "_route")
    # The clock: each task's (side, offset, ts), packed where the topics are read (a row per Arrow batch), merged
    # once per task, its rows to every bucket of the task.
    in_order = F.col("_side_rank").desc() if held_rank else F.col("_side_rank")
    tasks = F.array(*[F.lit(value).cast("bigint") for value in _routes(partitions)])
    packed = (
        union.select("scenario", "partition", side, "ts", "offset")
        .mapInArrow(pack_function(), _schema(PACKED_FIELDS))
        .select("*", F.element_at(tasks, (F.col("partition") % partitions + 1).cast("int")).alias("_route"))
        .repartition(partitions, "_route")
        .sortWithinPartitions("scenario", "partition", in_order, "offset")
    )
    clock = packed.drop("_route").mapInArrow(clock_function(held_rank, spill_rows), _schema(CLOCK_FIELDS))
    every = clock.select("*", F.explode(F.sequence(F.lit(0), F.lit(buckets - 1))).alias("_b"))
    fields = {field.name: field.dataType for field in union.schema.fields}
    ticks = every.select(
        (F.col("scenario") * buckets + F.col("_b")).alias("scenario"),
        "partition",
        F.lit(clock_rank(held_rank)).cast("byte").alias("_side_rank"),
        F.lit(None).cast(fields["key"]).alias("key"),
        F.lit(None).cast(fields["value"]).alias("value"),
        F.lit(None).cast("bigint").alias("ts"),
        "offset",
        "_clock",
        route(F.col("_b").cast("bigint")),
    ).repartition(slots, "_route")
    # Both hash-partitioned alike, so the union keeps each bucket's records and clock rows in one Spark partition (as
    # long as the union's rows keep the route: the sort reads it, or Spark would prune it and concatenate the two).
    frame = records.unionByName(ticks).sortWithinPartitions("_route", "scenario", "partition", in_order, "offset")
    return KeySplit(frame.drop("_route"), buckets, held_rank)


def _schema(fields: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{name} {kind}" for name, kind in fields)


def positioned(
    records: Any, buckets: int, spark_partitions: int | None, counts: Mapping[int, int] | None = None
) -> KeySplit:
    """``run_scenarios``' records (each with its ``position``, its step) as key buckets, sorted by step within
    each; with ``counts`` (scenario id -> partition count), each bucket of each task in a Spark partition of its own
    when there are enough (:mod:`kjoin.spark.placement`)."""
    bucket = _bucket(F.col("key"), buckets)
    number = [] if counts is None else [(task_numbers(counts) * buckets + bucket).cast("int").alias("_task")]
    split = records.select(
        (F.col("scenario") * buckets + bucket).alias("scenario"),
        "partition",
        "side",
        "key",
        "value",
        "ts",
        "offset",
        "position",
        *number,
    )
    routed = by_task(split, spark_partitions, None, F.col("_task") if number else None)
    ordered = routed.sortWithinPartitions("scenario", "partition", "position")
    return KeySplit(ordered.drop("_task") if number else ordered, buckets, None)


def split_results(
    split: KeySplit,
    build: Callable[[Mapping[int, JoinSpec]], Callable[[Iterator[Any]], Iterator[Any]]],
    specs: Mapping[int, JoinSpec],
    key_type: str,
    value_type: str,
    spill_rows: int,
) -> Any:
    """The results frame of a per-task pass (``build(specs)`` gives its ``mapInArrow`` function) run per key
    bucket: each bucket a task of its own while the pass runs, its rows under their real scenario."""
    buckets, held_rank = split.buckets, split.held_rank
    function = build({scenario * buckets + b: spec for scenario, spec in specs.items() for b in range(buckets)})

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        if held_rank is not None:
            batches = stepped_batches(batches, held_rank, spill_rows)
        for rows in function(batches):
            yield _unsplit(rows, buckets)

    return split.frame.mapInArrow(run, result_schema(key_type, value_type))


def _unsplit(rows: Any, buckets: int) -> Any:
    """A bucket's result rows under their real scenario."""
    at = rows.schema.get_field_index("scenario")
    scenario = rows.column(at).to_numpy(zero_copy_only=False) // buckets
    return rows.set_column(at, rows.schema.field(at), pa.array(scenario, rows.schema.field(at).type))


# -- routing: one Spark partition per bucket ------------------------------------------------------------------
def _routes(slots: int) -> list[int]:
    """For each slot ``0 .. slots - 1``, a long whose Spark hash partitioning (``repartition(slots, column)``) sends
    it to that slot: so no two buckets of a task share a Spark partition while another stays idle."""
    found: dict[int, int] = {}
    value = 0
    while len(found) < slots:
        found.setdefault(spark_hash_long(value) % slots, value)
        value += 1
    return [found[slot] for slot in range(slots)]


_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix(h1: int, k1: int) -> int:
    k1 = (k1 * 0xCC9E2D51) & _MASK
    k1 = _rotl(k1, 15)
    k1 = (k1 * 0x1B873593) & _MASK
    h1 ^= k1
    h1 = _rotl(h1, 13)
    return (h1 * 5 + 0xE6546B64) & _MASK


def spark_hash_long(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of a long (Murmur3 x86 32-bit, seed 42, as its hash partitioning uses), as a signed int."""
    value &= 0xFFFFFFFFFFFFFFFF
    h1 = _mix(seed, value & _MASK)
    h1 = _mix(h1, value >> 32)
    h1 ^= 8
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1
