"""A sample of the differential suite, and run_join, through a local Spark Connect session.

Run by tests/test_spark_connect.py in a process of its own (a process holds either classic
or Connect sessions; pytest's holds a classic one)::

    .venv/bin/python tests/connect_sample.py --seed 7 --per-kind 40

It starts a local Connect server on an ephemeral port (:func:`kjoin.spark.connect_session`)
and checks, each against the reference engine:

1. ``per-kind`` random scenarios of every join type (stream-stream, stream-table,
   table-table, versioned stream-table and table-table, foreign-key) in one
   ``run_scenarios`` job on the processors path, and the unversioned stream-table and
   table-table ones again on the default (vectorised) path;
2. ``run_join`` over topics read on Connect: a Kafka-source DataFrame (binary key and
   value, JSON values) and Parquet files without partition and offset columns (Kafka's
   default partitioner as an Arrow UDF, offsets by a window function);
3. the drill-down ``SparkRun.trace(partition)`` of a Connect run;
4. a live read (``from_kafka(spark, bootstrap_servers=..., topic=...)``) on Connect: the server
   loads Spark's Kafka source (``connect_session`` puts the connector on it) and an unreachable
   cluster, or a session without the source, is an error naming the topic and what to do.

Prints one JSON line ``{"ok": true, ...}`` last; any disagreement raises (exit status 1).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kjoin.records import Record, Side  # noqa: E402
from tests.spark_compare import (
    KINDS,
    assert_same,
    combos,
    kafka_assigned,
    random_batch,
    reference_outputs,
    spark_outputs,
    spark_results,
)  # noqa: E402


def sample(seed: int, per_kind: int) -> dict[str, list]:
    """``per_kind`` scenarios of every join type, spread over its variants and eras."""
    batches = {}
    for index, kind in enumerate(KINDS):
        per_combo = -(-per_kind // len(combos(kind)))
        batch = random_batch(seed + index, kind, per_combo)
        batches[kind] = random.Random(seed).sample(batch, per_kind)
    return batches


def check_scenarios(spark, batches: dict[str, list]) -> dict[str, int]:
    everything = [s for kind in KINDS for s in batches[kind]]
    from kjoin.spark import run_scenarios

    outputs, steps = spark_results(run_scenarios(spark, everything, method="processors"))
    assert_same(everything, outputs, steps)
    native = batches["stream-table"] + batches["table-table"]
    native_outputs, native_steps = spark_results(run_scenarios(spark, native))
    assert_same(native, native_outputs, native_steps)
    return {"scenarios": len(everything), "native_scenarios": len(native), "outputs": len(outputs), "steps": len(steps)}


ROWS = [
    ("a", {"n": 1}, 5, 0, 0),
    ("b", {"n": 2}, 3, 1, 0),
    ("a", None, 2, 0, 1),
    (None, {"n": 3}, 4, 1, 1),
    ("c", {"n": 4}, 7, 0, 2),
    ("b", {"n": 5}, 8, 1, 2),
]
TABLE = [("a", {"c": "x"}, 1, 0, 0), ("b", {"c": "y"}, 6, 1, 0), ("c", {"c": "z"}, 3, 0, 1), ("a", {"c": "w"}, 4, 0, 2)]


KAFKA_FRAME_JOINS = (
    ("stream-table", "left", None),
    ("stream-stream", "outer", {"before_ms": 3, "after_ms": 2, "grace_ms": 1}),
    ("table-table", "outer", None),
)
"""The joins :func:`check_run_join` runs over Kafka-source DataFrames: (join, variant, window)."""


def check_run_join(spark, workdir: Path, kafka_joins=KAFKA_FRAME_JOINS) -> dict[str, int]:
    """``run_join`` over each kind of source: Kafka-source DataFrames (one run per join of ``kafka_joins``, each
    with its drill-down traces), Parquet files without partition and offset, and a bare ``Topic``."""
    from kjoin.spark import from_files, from_kafka, run_join

    schema = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"

    def kafka(rows):
        data = [
            (
                None if k is None else bytearray(k.encode()),
                None if v is None else bytearray(json.dumps(v).encode()),
                "t",
                p,
                o,
                datetime.fromtimestamp(ts / 1000, timezone.utc),
            )
            for k, v, ts, p, o in rows
        ]
        return from_kafka(spark.createDataFrame(data, schema), value="json")

    def records(side, rows):
        return [Record(side, k, v, ts, p, o) for k, v, ts, p, o in rows]

    checked = 0
    for join, variant, window in kafka_joins:
        result = run_join(kafka(ROWS), kafka(TABLE), join, variant, window=window)
        expected = reference_outputs(records(Side.LEFT, ROWS), records(Side.RIGHT, TABLE), join, variant, 2, window)
        got = spark_outputs(result)
        assert got == expected, f"run_join {join} {variant} on Connect: {got} != {expected}"
        for partition, rows in expected.items():
            trace = result.trace(partition=partition)
            assert [(s.index, o.key, o.value, o.ts, o.tombstone) for s in trace.steps for o in s.outputs] == rows, (
                f"trace of partition {partition}"
            )
        checked += 1

    # Files without partition and offset: the default partitioner and input-order offsets on Connect.
    partitions = 3
    for name, rows in (("left", ROWS), ("right", TABLE)):
        spark.createDataFrame(
            [(k, None if v is None else json.dumps(v), ts) for k, v, ts, _, _ in rows],
            "key string, value string, ts long",
        ).write.mode("overwrite").parquet(str(workdir / f"{name}.parquet"))
    left = from_files(spark, str(workdir / "left.parquet"), value="json", partitions=partitions, partitioner="default")
    right = from_files(
        spark, str(workdir / "right.parquet"), value="json", partitions=partitions, partitioner="default"
    )

    result = run_join(left, right, "stream-table", "left")
    expected = reference_outputs(
        records(Side.LEFT, kafka_assigned(ROWS, partitions)),
        records(Side.RIGHT, kafka_assigned(TABLE, partitions)),
        "stream-table",
        "left",
        partitions,
    )
    assert spark_outputs(result) == expected, "files without partition/offset on Connect"

    # A Topic built directly, without partition and offset: run_join's own default partitioner
    # and input-order offsets (a UDF and a window function) on Connect, processors path.
    from kjoin.spark import Topic

    def bare(rows):
        frame = spark.createDataFrame(
            [(k, None if v is None else json.dumps(v), ts) for k, v, ts, _, _ in rows],
            "key string, value string, ts long",
        ).coalesce(1)
        return Topic(frame, partitions=partitions, json_values=True)

    result = run_join(bare(ROWS), bare(TABLE), "table-table", "outer", method="processors")
    expected = reference_outputs(
        records(Side.LEFT, kafka_assigned(ROWS, partitions)),
        records(Side.RIGHT, kafka_assigned(TABLE, partitions)),
        "table-table",
        "outer",
        partitions,
    )
    assert spark_outputs(result) == expected, "a bare Topic on Connect"
    return {"run_join_checks": checked + 2}


def check_live_errors(spark) -> dict[str, int]:
    """Live reads on Connect: the errors arrive as Connect exceptions and are said the same way as on a classic
    session (tests/test_kafka_live.py reads a real broker on the classic session)."""
    import socket

    from kjoin.spark import SparkInputError, from_kafka
    from kjoin.spark.io import kafka as kafka_reader

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        nobody = f"127.0.0.1:{probe.getsockname()[1]}"
    try:
        from_kafka(spark, bootstrap_servers=nobody, topic="orders", timeout_ms=2000)
    except SparkInputError as error:
        assert "timeout_ms=2000" in str(error) and nobody in str(error), f"unreachable cluster on Connect: {error}"
    else:
        raise AssertionError("a read of an unreachable cluster on Connect must fail")
    kafka_format, kafka_reader.KAFKA_FORMAT = kafka_reader.KAFKA_FORMAT, "kjoin-no-such-kafka-source"
    try:
        from_kafka(spark, bootstrap_servers=nobody, topic="orders")
    except SparkInputError as error:
        assert "make kafka-live" in str(error), f"a session without the Kafka source on Connect: {error}"
    else:
        raise AssertionError("a session without the Kafka source must say so")
    finally:
        kafka_reader.KAFKA_FORMAT = kafka_format
    return {"live_error_checks": 2}


def jvm_properties() -> dict[str, str | None]:
    """The Arrow properties of the in-process server's JVM (:data:`kjoin.spark.ARROW_JAVA_OPTIONS`)."""
    from pyspark import SparkContext

    system = SparkContext._active_spark_context._jvm.java.lang.System
    return {
        name: system.getProperty(name) for name in ("arrow.enable_unsafe_memory_access", "log4j2.configurationFile")
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-kind", type=int, default=40)
    args = parser.parse_args()
    started = time.time()
    from kjoin.spark import connect_session

    spark = connect_session()
    kind = type(spark).__module__
    assert kind.startswith("pyspark.sql.connect"), f"not a Spark Connect session: {kind}"
    connected = time.time() - started
    summary = {"seed": args.seed, "session": kind, "connect_s": round(connected, 1)}
    summary["jvm_properties"] = jvm_properties()
    summary.update(check_scenarios(spark, sample(args.seed, args.per_kind)))
    with tempfile.TemporaryDirectory() as workdir:
        summary.update(check_run_join(spark, Path(workdir)))
    summary.update(check_live_errors(spark))
    summary["total_s"] = round(time.time() - started, 1)
    print(json.dumps({"ok": True, **summary}), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
