"""Readers, co-partitioning, drill-down, and the default partitioner's test vectors."""

from __future__ import annotations

import pytest

from kjoin.partitioner import murmur2
from kjoin.spark import SparkInputError, from_files, run_join

pytestmark = pytest.mark.spark

# Published in Kafka's UtilsTest (testMurmur2): bytes of the string -> signed 32-bit hash.
KAFKA_MURMUR2_VECTORS = {
    "21": -973932308,
    "foobar": -790332482,
    "a-little-bit-long-string": -985981536,
    "a-little-bit-longer-string": -1486304829,
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    "abc": 479470107,
}


@pytest.mark.parametrize("text, expected", sorted(KAFKA_MURMUR2_VECTORS.items()))
def test_murmur2_matches_kafkas_published_vectors(text, expected):
    assert murmur2(text.encode()) == expected


def _write(spark, tmp_path, name, rows, fmt):
    frame = spark.createDataFrame(rows, "key string, value string, ts long, partition int, offset long")
    path = str(tmp_path / f"{name}.{fmt}")
    getattr(frame.write.mode("overwrite").option("header", "true"), fmt)(path)
    return path


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
def test_files_join_on_spark_and_agree_with_the_drill_down_trace(spark, tmp_path, fmt):
    left = _write(spark, tmp_path, "orders", [("a", "A", 5, 0, 0), ("b", "B", 6, 1, 0), ("a", "C", 9, 0, 1)], fmt)
    right = _write(spark, tmp_path, "customers", [("a", "x", 1, 0, 0), ("b", None, 2, 1, 0)], fmt)
    result = run_join(from_files(spark, left, fmt), from_files(spark, right, fmt), "stream-table", "left")
    rows = {(r["partition"], r["step"]): r["value"] for r in result.outputs.collect()}
    assert rows == {(0, 1): "A-x", (0, 2): "C-x", (1, 1): "B-null"}
    trace = result.trace(partition=0)
    assert [(s.index, o.value) for s in trace.steps for o in s.outputs] == [(1, "A-x"), (2, "C-x")]


def test_a_missing_column_is_named_with_its_expected_type(spark, tmp_path):
    path = str(tmp_path / "bad.parquet")
    spark.createDataFrame([("a", "A")], "key string, value string").write.parquet(path)
    with pytest.raises(SparkInputError, match=r"no column 'ts' \(expected type"):
        from_files(spark, path)


def test_a_mistyped_column_is_named_with_its_expected_type(spark, tmp_path):
    path = str(tmp_path / "bad2.parquet")
    spark.createDataFrame([("a", "A", True)], "key string, value string, ts boolean").write.parquet(path)
    with pytest.raises(SparkInputError, match=r"column 'ts' has type boolean, expected"):
        from_files(spark, path)


def test_topics_with_different_partition_counts_are_refused(spark, tmp_path):
    left = _write(spark, tmp_path, "l", [("a", "A", 5, 0, 0)], "parquet")
    right = _write(spark, tmp_path, "r", [("a", "x", 1, 0, 0)], "parquet")
    with pytest.raises(SparkInputError, match="not co-partitioned.*3 partitions.*4"):
        run_join(from_files(spark, left, partitions=3), from_files(spark, right, partitions=4), "stream-table", "left")
