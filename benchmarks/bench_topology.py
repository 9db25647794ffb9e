"""Benchmark: a whole topology on Spark against the same plan written as plain Spark equi-joins.

    python -m benchmarks.bench --topology --sizes 1000000       # (make bench-topology)

The topology: orders re-keyed by their customer (a repartition topic), joined with customers, then left-joined
with addresses, to ``out``; ``--partitions`` Kafka partitions (murmur2 of the key), 10^5 customers (``--keys``).
The workload (seeded, generated with Spark and written to Parquet, untimed): 80% orders (``{"c": customer, "v":
...}`` JSON), 10% customer updates, 10% address updates, timestamps about 100 per millisecond up to 50 ms out of
order, 1% null values.

Timed, each consuming every row with the ``noop`` sink:

* kjoin: :func:`kjoin.spark.run_topology`, every step and written record of both stages (the re-keying tasks, the
  repartition shuffle, the joining tasks), once per ``--methods`` (``auto``: both stages as chains,
  :mod:`kjoin.spark.passes.stage_chain`; ``processors``: kjoin's processors per task);
* the joins one by one: the target, the same plan as kjoin's single joins: the re-key as a Spark
  projection and one shuffle, then :func:`kjoin.spark.run_join` twice (:func:`_one_by_one`);
* the equi-join: what a user would write in SQL instead, without Kafka's record-by-record semantics: the orders'
  customer extracted, inner-joined with each customer's last value, left-joined with each address's last value.

``kjoin/one-by-one`` and ``kjoin/equi`` are kjoin's throughput over theirs (above 1: kjoin is faster); only ratios
taken in one run compare. Each timing also gives the CPU seconds the run cost this process tree (the driver, Spark's
JVM, its Python workers: :func:`benchmarks.bench.tree_cpu`), which a loaded machine does not stretch as it stretches
the seconds:
on 2 shared cores the same 10^6-record run took 55 s and 211 s for 44 s and 48 s of CPU.
"""

from __future__ import annotations

import os
import time
from typing import Any

from .bench import tree_cpu

__all__ = ["bench_topology", "generate_topology", "app"]


def generate_topology(spark: Any, records: int, path: str, keys: int, partitions: int, seed: int = 7) -> None:
    """Write the three topics' records to Parquet at ``path`` (``topic, key, value, ts, partition, offset``), with
    ``benchmarks/bench.py``'s dice, timestamps and offsets."""
    from pyspark.sql import functions as F

    from benchmarks.bench import arrival_ts, draw, with_append_offsets
    from kjoin.spark.io.topic import default_partition_column

    def dice(salt: int, modulo: int) -> Any:
        return draw(seed, salt, modulo)

    roll = dice(1, 100)
    topic = F.when(roll < 80, F.lit("orders")).when(roll < 90, F.lit("customers")).otherwise(F.lit("addresses"))
    customer = F.concat(F.lit("c"), dice(2, keys).cast("string"))
    key = F.when(F.col("topic") == "orders", F.concat(F.lit("o"), F.col("id").cast("string"))).otherwise(customer)
    order = F.to_json(F.struct(customer.alias("c"), F.concat(F.lit("O"), F.col("id").cast("string")).alias("v")))
    # a JSON string (to_json takes only structs): the letters and digits need no escaping
    plain = F.concat(F.lit('"'), F.upper(F.substring(F.col("topic"), 1, 1)), F.col("id").cast("string"), F.lit('"'))
    value = F.when(dice(4, 100) == 0, F.lit(None).cast("string")).otherwise(
        F.when(F.col("topic") == "orders", order).otherwise(plain)
    )
    frame = (
        spark.range(records)
        .withColumn("topic", topic)
        .withColumn("key", key)
        .withColumn("value", value)
        .withColumn("ts", arrival_ts(seed))
        .withColumn("partition", default_partition_column(F.col("key"), partitions, "string"))
    )
    frame = with_append_offsets(frame, "topic", "partition")
    frame.select("topic", "key", "value", "ts", "partition", "offset").write.mode("overwrite").parquet(path)


def app(partitions: int) -> Any:
    import kjoin

    b = kjoin.Topology(partitions=partitions)
    customers, addresses = b.table("customers"), b.table("addresses")
    b.stream("orders").select_key({"field": "c"}).join(customers).left_join(addresses).to("out")
    return b


def _topics(spark: Any, path: str, partitions: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from kjoin.spark import Topic

    data = spark.read.parquet(path)
    return {
        name: Topic(
            data.where(F.col("topic") == name).select("key", "value", "ts", "partition", "offset"),
            partitions,
            json_values=True,
            source=f"{path} ({name})",
        )
        for name in ("orders", "customers", "addresses")
    }


def _equi_join(topics: dict[str, Any]) -> Any:
    from pyspark.sql import functions as F

    def last(name: str) -> Any:
        frame = topics[name].frame
        return frame.groupBy("key").agg(F.max_by("value", F.struct("partition", "offset")).alias(name))

    orders = topics["orders"].frame.select(F.get_json_object("value", "$.c").alias("key"), "value", "ts")
    return orders.join(last("customers"), "key").join(last("addresses"), "key", "left")


def _one_by_one(topics: dict[str, Any], partitions: int) -> Any:
    """The same plan as kjoin's single joins run one after the other: the re-key as a Spark projection and one
    shuffle (each order's customer, its partition by murmur2, offsets in timestamp order), then
    :func:`kjoin.spark.run_join` stream-table inner with customers, then stream-table left with addresses on its
    outputs (their offsets in the order the first join emitted them). The values stay JSON text, so both joins take
    run_join's vectorised pass (decoded JSON values take its processors), its fastest."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from kjoin.spark import Topic, run_join
    from kjoin.spark.io.topic import default_partition_column

    orders = topics["orders"].frame
    key = F.get_json_object("value", "$.c")
    rekeyed = (
        orders.where(key.isNotNull())
        .select(key.alias("key"), "value", "ts")
        .withColumn("partition", default_partition_column(F.col("key"), partitions, "string"))
        .repartition(partitions, "partition")
    )
    in_order = Window.partitionBy("partition").orderBy("ts", "value")
    rekeyed = rekeyed.withColumn("offset", (F.row_number().over(in_order) - 1).cast("bigint"))

    def text(name: str) -> Any:  # the values as their JSON text: run_join's vectorised pass (value='json' is not)
        return Topic(topics[name].frame, partitions)

    first = run_join(Topic(rekeyed, partitions), text("customers"), "stream-table", "inner")
    emitted = Window.partitionBy("partition").orderBy("step")
    joined = first.outputs.select(
        "key", "value", "ts", "partition", (F.row_number().over(emitted) - 1).cast("bigint").alias("offset")
    )
    return run_join(Topic(joined, partitions), text("addresses"), "stream-table", "left").results


def bench_topology(
    spark: Any,
    sizes: list[int],
    keys: int,
    partitions: int,
    workdir: str,
    out: Any,
    methods: tuple[str, ...] = ("auto",),
) -> list[str]:
    """One line per size and ``run_topology`` method (``auto``, ``vectorised``, ``processors``): kjoin's, the joins
    one by one's and the equi-join's seconds, records per second, and the ratios."""
    from benchmarks.bench import noop
    from kjoin.spark import run_topology

    def kjoin_run(topics: dict[str, Any], method: str) -> Any:
        result = run_topology(spark, app(partitions), topics, method=method)
        noop(result.rows)
        return result

    header = (
        "| topology | records | kjoin s | joins one by one s | equi s | kjoin rec/s | equi rec/s | "
        "kjoin/one-by-one | kjoin/equi | CPU s: kjoin, one by one, equi | load before/after |"
    )
    lines = [header, "|---|---|---|---|---|---|---|---|---|---|---|"]
    warm = os.path.join(workdir, "topology-warm-up.parquet")
    generate_topology(spark, 20_000, warm, keys, partitions)
    warm_topics = _topics(spark, warm, partitions)
    noop(_equi_join(warm_topics))
    noop(_one_by_one(warm_topics, partitions))
    for method in methods:
        kjoin_run(warm_topics, method).release()
    for size in sizes:
        path = os.path.join(workdir, f"topology-{size}.parquet")
        print(f"[bench] generating {size:,} topology records ...", file=out, flush=True)
        generate_topology(spark, size, path, keys, partitions)
        topics = _topics(spark, path, partitions)
        noop(spark.read.parquet(path))
        started, cpu = time.perf_counter(), tree_cpu()
        noop(_equi_join(topics))
        equi, equi_cpu = time.perf_counter() - started, tree_cpu() - cpu
        started, cpu = time.perf_counter(), tree_cpu()
        noop(_one_by_one(topics, partitions))
        one_by_one, one_by_one_cpu = time.perf_counter() - started, tree_cpu() - cpu
        spark.catalog.clearCache()
        for method in methods:
            before = os.getloadavg()[0]
            started, cpu = time.perf_counter(), tree_cpu()
            result = kjoin_run(topics, method)
            elapsed, kjoin_cpu = time.perf_counter() - started, tree_cpu() - cpu
            after = os.getloadavg()[0]
            spark.catalog.clearCache()
            lines.append(
                f"| re-key + 2 joins ({result.method}) | {size:,} | {elapsed:.1f} | {one_by_one:.1f} | {equi:.1f} "
                f"| {size / elapsed:,.0f} | {size / equi:,.0f} | {one_by_one / elapsed:.3f} | {equi / elapsed:.3f} "
                f"| {kjoin_cpu:.1f}, {one_by_one_cpu:.1f}, {equi_cpu:.1f} | {before:.1f}/{after:.1f} |"
            )
            print(lines[-1], file=out, flush=True)
            del result
    return lines
