"""Readers, co-partitioning, drill-down, and the default partitioner's test vectors.

Every reader test runs its topic through :func:`run_join` and compares each Kafka task's
outputs with the reference engine run on the same records (in Kafka's processing order,
:func:`kjoin.ordering.merge_by_timestamp`): no expected output is written by hand. Every
kind of bad input is refused with a message naming the source, the column, the type or
value, and the fix.
"""

from __future__ import annotations

import json
import struct
from datetime import datetime, timezone

import pytest

from kjoin.partitioner import default_partition, murmur2
from kjoin.records import Record, Side
from kjoin.spark import SparkInputError, from_files, from_kafka, from_kcat, run_join
from tests.spark_compare import kafka_assigned, reference_outputs, spark_outputs

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

WINDOW = {"before_ms": 4, "after_ms": 3, "grace_ms": 2}


@pytest.mark.parametrize("text, expected", sorted(KAFKA_MURMUR2_VECTORS.items()))
def test_murmur2_matches_kafkas_published_vectors(text, expected):
    assert murmur2(text.encode()) == expected


# -- the comparison (shared with tests/connect_sample.py) -----------------------------------------
def assert_agrees(result, left, right, join, variant, partitions, window=None):
    expected = reference_outputs(left, right, join, variant, partitions, window)
    assert expected, "the example must produce outputs, or the comparison proves nothing"
    assert spark_outputs(result) == expected


def records(side: Side, rows) -> list[Record]:
    """``rows`` of (key, value, ts, partition, offset)."""
    return [Record(side, key, value, ts, partition, offset) for key, value, ts, partition, offset in rows]


# Two partitions, out-of-order timestamps, a null key, tombstones, repeated keys.
LEFT_ROWS = [
    ("a", "A1", 5, 0, 0),
    ("b", "B1", 3, 1, 0),
    ("a", None, 2, 0, 1),
    ("a", "A2", 9, 0, 2),
    (None, "N1", 4, 1, 1),
    ("b", "B2", 8, 1, 2),
    ("c", "C1", 7, 0, 3),
]
RIGHT_ROWS = [
    ("a", "x1", 1, 0, 0),
    ("b", "y1", 6, 1, 0),
    ("a", "x2", 4, 0, 1),
    ("c", None, 6, 0, 2),
    ("b", None, 7, 1, 1),
    ("c", "z1", 3, 0, 3),
]


# -- Kafka-source DataFrames -----------------------------------------------------------------------
def kafka_frame(spark, rows, encode_key, encode_value, topic="t"):
    """A DataFrame in Spark's Kafka source schema from (key, value, ts, partition, offset)."""
    data = [
        (
            None if k is None else bytearray(encode_key(k)),
            None if v is None else bytearray(encode_value(v)),
            topic,
            p,
            o,
            datetime.fromtimestamp(ts / 1000, timezone.utc),
            0,
        )
        for k, v, ts, p, o in rows
    ]
    schema = (
        "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
    )
    return spark.createDataFrame(data, schema)


def utf8(text):
    return str(text).encode("utf-8")


def long_bytes(number):
    return struct.pack(">q", number)


def json_bytes(value):
    return json.dumps(value).encode("utf-8")


@pytest.mark.parametrize(
    "join, variant", [("stream-table", "left"), ("table-table", "outer"), ("stream-stream", "outer")]
)
def test_kafka_source_with_string_keys_and_values(spark, join, variant):
    window = WINDOW if join == "stream-stream" else None
    left = from_kafka(kafka_frame(spark, LEFT_ROWS, utf8, utf8))
    right = from_kafka(kafka_frame(spark, RIGHT_ROWS, utf8, utf8))
    result = run_join(left, right, join, variant, window=window)
    assert_agrees(result, records(Side.LEFT, LEFT_ROWS), records(Side.RIGHT, RIGHT_ROWS), join, variant, 2, window)


def test_kafka_source_with_long_keys_and_values(spark):
    """8-byte big-endian longs (LongSerializer), negative and beyond 2**53 included."""
    big = 2**62 + 1
    keymap = {"a": -7, "b": big, "c": 3, None: None}
    left_rows = [
        (keymap[k], None if v is None else i * 1000 + 1, ts, p, o) for i, (k, v, ts, p, o) in enumerate(LEFT_ROWS)
    ]
    right_rows = [(keymap[k], None if v is None else -i, ts, p, o) for i, (k, v, ts, p, o) in enumerate(RIGHT_ROWS)]
    left = from_kafka(kafka_frame(spark, left_rows, long_bytes, long_bytes), key="long", value="long")
    right = from_kafka(kafka_frame(spark, right_rows, long_bytes, long_bytes), key="long", value="long")
    assert dict(left.frame.dtypes)["key"] == "bigint" and dict(left.frame.dtypes)["value"] == "bigint"
    result = run_join(left, right, "table-table", "left")
    assert_agrees(result, records(Side.LEFT, left_rows), records(Side.RIGHT, right_rows), "table-table", "left", 2)
    assert big in {row["key"] for row in result.outputs.select("key").collect()}


def test_kafka_source_with_json_values(spark):
    """JSON values reach the joiner parsed; the outputs carry the joined rendering."""
    left_rows = [
        (k, None if v is None else {"name": v, "n": i, "tags": [i, None]}, ts, p, o)
        for i, (k, v, ts, p, o) in enumerate(LEFT_ROWS)
    ]
    right_rows = [(k, None if v is None else {"city": v}, ts, p, o) for k, v, ts, p, o in RIGHT_ROWS]
    left = from_kafka(kafka_frame(spark, left_rows, utf8, json_bytes), value="json")
    right = from_kafka(kafka_frame(spark, right_rows, utf8, json_bytes), value="json")
    result = run_join(left, right, "stream-table", "left")
    assert_agrees(result, records(Side.LEFT, left_rows), records(Side.RIGHT, right_rows), "stream-table", "left", 2)
    seen = [json.loads(row["left"]) for row in result.outputs.select("left").collect()]
    assert {"name": "A1", "n": 0, "tags": [0, None]} in seen


@pytest.mark.parametrize("json_side", ["left", "right"])
def test_json_values_on_one_side_only(spark, json_side):
    """Orders as JSON, customers as plain text (or the other way round): each side's values reach the joiner as its
    reader decoded them, a text with quotes and backslashes included."""
    text_rows = [(k, None if v is None else f'{v} "q" \\', ts, p, o) for k, v, ts, p, o in RIGHT_ROWS]
    json_rows = [(k, None if v is None else {"name": v}, ts, p, o) for k, v, ts, p, o in LEFT_ROWS]
    json_topic = from_kafka(kafka_frame(spark, json_rows, utf8, json_bytes), value="json")
    text_topic = from_kafka(kafka_frame(spark, text_rows, utf8, utf8))
    if json_side == "left":
        left, right, left_rows, right_rows = json_topic, text_topic, json_rows, text_rows
    else:
        left, right, left_rows, right_rows = text_topic, json_topic, text_rows, json_rows
    result = run_join(left, right, "stream-table", "left")
    assert_agrees(result, records(Side.LEFT, left_rows), records(Side.RIGHT, right_rows), "stream-table", "left", 2)


def test_kafka_source_with_json_keys(spark):
    """JSON keys are joined by their text, as Kafka compares serialized keys."""
    keymap = {"a": {"id": 1}, "b": [1, 2], "c": "c", None: None}
    left_rows = [(keymap[k], v, ts, p, o) for k, v, ts, p, o in LEFT_ROWS]
    right_rows = [(keymap[k], v, ts, p, o) for k, v, ts, p, o in RIGHT_ROWS]
    left = from_kafka(kafka_frame(spark, left_rows, json_bytes, utf8), key="json")
    right = from_kafka(kafka_frame(spark, right_rows, json_bytes, utf8), key="json")
    result = run_join(left, right, "table-table", "inner")
    as_text = {k: None if k is None else json.dumps(v) for k, v in keymap.items()}
    left_text = [(as_text[k], v, ts, p, o) for k, v, ts, p, o in LEFT_ROWS]
    right_text = [(as_text[k], v, ts, p, o) for k, v, ts, p, o in RIGHT_ROWS]
    assert_agrees(result, records(Side.LEFT, left_text), records(Side.RIGHT, right_text), "table-table", "inner", 2)


# -- kcat dumps -----------------------------------------------------------------------------------
def kcat_lines(rows, topic="t"):
    """What ``kcat -C -J`` prints: one object per record, null key and payload as null."""
    return (
        "\n".join(
            json.dumps(
                {
                    "topic": topic,
                    "partition": p,
                    "offset": o,
                    "tstype": "create",
                    "ts": ts,
                    "broker": 1,
                    "headers": [],
                    "key": k,
                    "payload": v,
                }
            )
            for k, v, ts, p, o in rows
        )
        + "\n"
    )


@pytest.mark.parametrize(
    "join, variant", [("stream-stream", "left"), ("stream-table", "inner"), ("table-table", "outer")]
)
def test_kcat_dumps_with_null_keys_and_payloads(spark, tmp_path, join, variant):
    window = WINDOW if join == "stream-stream" else None
    (tmp_path / "left.json").write_text(kcat_lines(LEFT_ROWS))
    (tmp_path / "right.json").write_text(kcat_lines(RIGHT_ROWS))
    result = run_join(
        from_kcat(spark, str(tmp_path / "left.json")),
        from_kcat(spark, str(tmp_path / "right.json")),
        join,
        variant,
        window=window,
    )
    assert_agrees(result, records(Side.LEFT, LEFT_ROWS), records(Side.RIGHT, RIGHT_ROWS), join, variant, 2, window)


def test_kcat_dumps_with_json_payloads_and_long_keys(spark, tmp_path):
    """kcat prints a JSON-decoded payload as an object and a long key as a number."""
    keymap = {"a": 1, "b": 2, "c": 3, None: None}
    left_rows = [(keymap[k], None if v is None else {"v": v}, ts, p, o) for k, v, ts, p, o in LEFT_ROWS]
    right_rows = [(keymap[k], None if v is None else {"w": v}, ts, p, o) for k, v, ts, p, o in RIGHT_ROWS]
    (tmp_path / "l.json").write_text(kcat_lines(left_rows))
    (tmp_path / "r.json").write_text(kcat_lines(right_rows))
    left = from_kcat(spark, str(tmp_path / "l.json"), key="long", value="json")
    right = from_kcat(spark, str(tmp_path / "r.json"), key="long", value="json")
    result = run_join(left, right, "table-table", "left")
    assert_agrees(result, records(Side.LEFT, left_rows), records(Side.RIGHT, right_rows), "table-table", "left", 2)


# -- Parquet, CSV and JSON files ------------------------------------------------------------------
FILE_SCHEMA = {
    (True, True): "key string, value string, ts long, partition int, offset long",
    (True, False): "key string, value string, ts long, partition int",
    (False, True): "key string, value string, ts long, offset long",
    (False, False): "key string, value string, ts long",
}


def write_file(spark, tmp_path, name, rows, fmt, with_partition, with_offset):
    """Write (key, value, ts, partition, offset) rows with Spark, keeping only the chosen
    columns. A local list becomes two slices in row order, so Spark writes two part files
    whose name order (part-00000, part-00001) is the row order."""
    keep = [(k, v, ts) + ((p,) if with_partition else ()) + ((o,) if with_offset else ()) for k, v, ts, p, o in rows]
    frame = spark.createDataFrame(keep, FILE_SCHEMA[(with_partition, with_offset)])
    path = str(tmp_path / f"{name}-{int(with_partition)}{int(with_offset)}.{fmt}")
    getattr(frame.write.mode("overwrite").option("header", "true"), fmt)(path)
    return path


def offsets_in_order(rows):
    """Rows with their own partition, offsets counted up per partition in row order."""
    offsets: dict[int, int] = {}
    out = []
    for k, v, ts, p, _ in rows:
        out.append((k, v, ts, p, offsets.get(p, 0)))
        offsets[p] = offsets.get(p, 0) + 1
    return out


# Offsets out of row order in the files, so that "with offset" differs from "in input order".
LEFT_SHUFFLED = [LEFT_ROWS[i] for i in (3, 0, 4, 1, 6, 2, 5)]


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
@pytest.mark.parametrize("with_partition, with_offset", [(True, True), (True, False), (False, True), (False, False)])
def test_files_with_and_without_partition_and_offset(spark, tmp_path, fmt, with_partition, with_offset):
    partitions = 3
    left_rows = LEFT_SHUFFLED if with_offset else LEFT_ROWS
    if not with_partition and with_offset:
        # The file's offsets must be per the partition the default partitioner picks.
        left_rows = [
            (k, v, ts, 0, o)
            for (k, v, ts, _, _), (_, _, _, _, o) in zip(LEFT_ROWS, kafka_assigned(LEFT_ROWS, partitions))
        ]
        right_rows = [
            (k, v, ts, 0, o)
            for (k, v, ts, _, _), (_, _, _, _, o) in zip(RIGHT_ROWS, kafka_assigned(RIGHT_ROWS, partitions))
        ]
    else:
        right_rows = RIGHT_ROWS
    left = from_files(
        spark,
        write_file(spark, tmp_path, "left", left_rows, fmt, with_partition, with_offset),
        partitions=None if with_partition else partitions,
        partitioner=None if with_partition else "default",
    )
    right = from_files(
        spark,
        write_file(spark, tmp_path, "right", right_rows, fmt, with_partition, with_offset),
        partitions=None if with_partition else partitions,
        partitioner=None if with_partition else "default",
    )
    result = run_join(left, right, "stream-table", "left")
    if with_partition:
        expected_left = left_rows if with_offset else offsets_in_order(left_rows)
        expected_right = right_rows if with_offset else offsets_in_order(right_rows)
        count = 2
    else:
        expected_left, expected_right, count = (
            kafka_assigned(LEFT_ROWS, partitions),
            kafka_assigned(RIGHT_ROWS, partitions),
            partitions,
        )
    assert_agrees(
        result, records(Side.LEFT, expected_left), records(Side.RIGHT, expected_right), "stream-table", "left", count
    )
    got = {(r["key"], r["ts"]): (r["partition"], r["offset"]) for r in left.frame.collect()}
    assert got == {(k, ts): (p, o) for k, v, ts, p, o in expected_left}


def test_files_with_long_keys_use_the_long_serializer_for_the_default_partition(spark, tmp_path):
    rows = [(k, f"v{k}", k % 7, 0, 0) for k in (-3, 0, 1, 2, 5, 17, 2**40, 99)]
    path = str(tmp_path / "longs.parquet")
    spark.createDataFrame([(k, v, ts) for k, v, ts, _, _ in rows], "key long, value string, ts long").write.parquet(
        path
    )
    topic = from_files(spark, path, partitions=4, partitioner="default")
    got = {r["key"]: r["partition"] for r in topic.frame.collect()}
    assert got == {k: default_partition(k, 4) for k, *_ in rows}
    assert len(set(got.values())) > 1


def test_files_with_json_values_and_timestamps(spark, tmp_path):
    """Left: JSON lines whose values are objects; right: Parquet with JSON text values and a
    timestamp column. Both read with value='json'."""
    left_values = [(k, None if v is None else {"v": v, "n": [o, None]}, ts, p, o) for k, v, ts, p, o in LEFT_ROWS]
    right_values = [(k, None if v is None else {"w": v}, ts, p, o) for k, v, ts, p, o in RIGHT_ROWS]
    left_path = tmp_path / "nested.json"
    left_path.write_text(
        "".join(
            json.dumps({"key": k, "value": v, "ts": ts, "partition": p, "offset": o}) + "\n"
            for k, v, ts, p, o in left_values
        )
    )
    right_path = str(tmp_path / "stamped.parquet")
    spark.createDataFrame(
        [
            (k, None if v is None else json.dumps(v), datetime.fromtimestamp(ts / 1000, timezone.utc), p, o)
            for k, v, ts, p, o in right_values
        ],
        "key string, value string, ts timestamp, partition int, offset long",
    ).write.parquet(right_path)
    left, right = from_files(spark, str(left_path), value="json"), from_files(spark, right_path, value="json")
    assert dict(right.frame.dtypes)["ts"] == "bigint"
    result = run_join(left, right, "table-table", "outer")
    assert_agrees(result, records(Side.LEFT, left_values), records(Side.RIGHT, right_values), "table-table", "outer", 2)


def test_files_join_on_spark_and_agree_with_the_drill_down_trace(spark, tmp_path):
    left = from_files(spark, write_file(spark, tmp_path, "orders", LEFT_ROWS, "parquet", True, True))
    right = from_files(spark, write_file(spark, tmp_path, "customers", RIGHT_ROWS, "parquet", True, True))
    result = run_join(left, right, "stream-table", "left")
    got = spark_outputs(result)
    for partition in (0, 1):
        trace = result.trace(partition=partition)
        assert [(s.index, o.key, o.value, o.ts, o.tombstone) for s in trace.steps for o in s.outputs] == got[partition]


# -- bad input: every kind, with its message -----------------------------------------------------
def test_a_missing_column_is_named_with_its_expected_type(spark, tmp_path):
    path = str(tmp_path / "bad.parquet")
    spark.createDataFrame([("a", "A")], "key string, value string").write.parquet(path)
    with pytest.raises(
        SparkInputError,
        match=r"bad\.parquet: no column 'ts' \(expected type tinyint or smallint or int or bigint or timestamp"
        r".*the columns are key, value\. Rename or add",
    ):
        from_files(spark, path)


def test_a_mistyped_column_is_named_with_its_expected_type(spark, tmp_path):
    path = str(tmp_path / "bad2.parquet")
    spark.createDataFrame([("a", "A", True)], "key string, value string, ts boolean").write.parquet(path)
    with pytest.raises(
        SparkInputError,
        match=r"bad2\.parquet: column 'ts' has type boolean, expected .*Cast it, e\.g\. frame\.withColumn\('ts'",
    ):
        from_files(spark, path)


def test_a_kafka_frame_without_its_timestamp_is_refused(spark):
    frame = kafka_frame(spark, LEFT_ROWS, utf8, utf8).drop("timestamp")
    with pytest.raises(SparkInputError, match=r"orders topic: no column 'timestamp' \(expected type timestamp\)"):
        from_kafka(frame, source="orders topic")


def test_a_kafka_frame_with_text_instead_of_bytes_is_refused(spark):
    frame = kafka_frame(spark, LEFT_ROWS, utf8, utf8).withColumn(
        "key", __import__("pyspark.sql.functions", fromlist=["col"]).col("key").cast("string")
    )
    with pytest.raises(
        SparkInputError, match=r"Kafka DataFrame: column 'key' has type string, expected binary\. Cast it"
    ):
        from_kafka(frame)


def test_a_kcat_line_without_a_field_is_refused(spark, tmp_path):
    path = tmp_path / "nots.json"
    path.write_text(json.dumps({"topic": "t", "partition": 0, "offset": 0, "key": "a", "payload": "A"}) + "\n")
    with pytest.raises(SparkInputError, match=r"nots\.json: no column 'ts' \(expected type .*int"):
        from_kcat(spark, str(path))


def test_a_kcat_dump_with_a_broken_line_names_the_line(spark, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text(kcat_lines(LEFT_ROWS[:2]) + "% Reached end of topic t [0] at offset 2\n")
    with pytest.raises(
        SparkInputError,
        match=r"broken\.json: not kcat JSON lines: some lines are not JSON objects "
        r"\(first bad line: '% Reached end.*kcat -C -J",
    ):
        from_kcat(spark, str(path))


@pytest.mark.parametrize("reader", ["kafka", "kcat", "files"])
def test_an_unknown_deserializer_is_refused_with_the_choices(spark, tmp_path, reader):
    message = r"no such deserializer; expected 'string' \(UTF-8 text\), 'long' \(8-byte big-endian\) or 'json'"
    with pytest.raises(SparkInputError, match=rf"from_{reader}\((key|value)='avro'\): {message}"):
        if reader == "kafka":
            from_kafka(kafka_frame(spark, LEFT_ROWS, utf8, utf8), key="avro")
        elif reader == "kcat":
            from_kcat(spark, str(tmp_path / "x.json"), value="avro")
        else:
            from_files(spark, str(tmp_path / "x.parquet"), value="avro")


def test_topics_with_different_partition_counts_are_refused(spark, tmp_path):
    left = write_file(spark, tmp_path, "l", LEFT_ROWS, "parquet", True, True)
    right = write_file(spark, tmp_path, "r", RIGHT_ROWS, "parquet", True, True)
    with pytest.raises(
        SparkInputError,
        match=r"not co-partitioned: the left topic \(.*l-11\.parquet\) has 3 partitions "
        r"and the right \(.*r-11\.parquet\) 4\. .*repartition one topic to 4 partitions",
    ):
        run_join(from_files(spark, left, partitions=3), from_files(spark, right, partitions=4), "stream-table", "left")


def test_partition_counts_taken_from_the_data_must_agree(spark):
    left = from_kafka(kafka_frame(spark, LEFT_ROWS, utf8, utf8), source="orders")
    right = from_kafka(
        kafka_frame(spark, [(k, v, ts, 2, o) for k, v, ts, p, o in RIGHT_ROWS], utf8, utf8), source="customers"
    )
    with pytest.raises(
        SparkInputError,
        match=r"not co-partitioned: the left topic \(orders\) has 2 partitions and the right \(customers\) 3",
    ):
        run_join(left, right, "stream-table", "left")


def test_mixed_key_types_are_refused(spark):
    left = from_kafka(kafka_frame(spark, [(1, "A", 1, 0, 0)], long_bytes, utf8), key="long", source="orders")
    right = from_kafka(kafka_frame(spark, [("1", "a", 1, 0, 0)], utf8, utf8), source="customers")
    with pytest.raises(
        SparkInputError,
        match=r"the left topic's \(orders\) keys are bigint and the right topic's \(customers\) string: "
        r"a join needs one key type; cast one of them, or read both with the same key deserializer",
    ):
        run_join(left, right, "stream-table", "left")


def test_a_long_that_is_not_eight_bytes_fails_the_job_naming_the_column(spark):
    frame = kafka_frame(spark, [("a", "A", 1, 0, 0)], lambda k: b"\x00\x01\x02\x03", utf8)
    topic = from_kafka(frame, key="long", source="orders")
    with pytest.raises(
        Exception,
        match=r"orders: column 'key': 00010203 \(hex\) is not 8 bytes, as LongDeserializer needs; use key='string'",
    ):
        topic.frame.collect()


def test_text_that_is_not_json_fails_the_job_naming_the_column(spark):
    frame = kafka_frame(spark, [("a", "{not json", 1, 0, 0)], utf8, utf8)
    topic = from_kafka(frame, value="json", source="orders")
    with pytest.raises(Exception, match=r"orders: column 'value': \{not json is not JSON text; use value='string'"):
        run_join(topic, topic, "table-table", "inner").outputs.collect()


def test_a_non_numeric_long_in_a_file_fails_the_job_naming_the_column(spark, tmp_path):
    path = str(tmp_path / "keys.csv")
    spark.createDataFrame([("12", "A", 1), ("twelve", "B", 2)], "key string, value string, ts long").coalesce(
        1
    ).write.option("header", "true").csv(path)
    topic = from_files(spark, path, key="long", partitions=1, partitioner="default")
    with pytest.raises(Exception, match=r"keys\.csv: column 'key': twelve is not a long; use key='string'"):
        topic.frame.collect()


def test_a_null_timestamp_is_refused_before_any_join_runs(spark, tmp_path):
    path = str(tmp_path / "nullts.parquet")
    spark.createDataFrame(
        [("a", "A", None, 0, 0)], "key string, value string, ts long, partition int, offset long"
    ).write.parquet(path)
    with pytest.raises(
        SparkInputError, match=r"nullts\.parquet: column 'ts': 1 record\(s\) have a null timestamp; every Kafka record"
    ):
        from_files(spark, path)
    # check=False leaves it to the job that reads the data, which names it too
    with pytest.raises(
        Exception, match=r"nullts\.parquet: column 'ts': null is not allowed: every Kafka record has a timestamp"
    ):
        from_files(spark, path, check=False).frame.collect()


def test_a_negative_timestamp_is_refused_as_the_reference_engine_refuses_it(spark, tmp_path):
    path = str(tmp_path / "negts.parquet")
    spark.createDataFrame(
        [("a", "A", 3, 0, 0), ("a", "B", -5, 0, 1)], "key string, value string, ts long, partition int, offset long"
    ).write.parquet(path)
    with pytest.raises(SparkInputError, match=r"negts\.parquet: column 'ts': timestamp -5 is negative"):
        from_files(spark, path)
    with pytest.raises(Exception, match=r"events\[1\]\.ts: expected a non-negative integer"):
        import kjoin

        kjoin.Scenario.from_records(
            "stream-table",
            "left",
            [{"side": "left", "key": "a", "value": v, "ts": t} for v, t in (("A", 3), ("B", -5))],
        )


def test_a_kcat_dump_with_a_null_timestamp_or_a_partition_outside_the_topic_is_refused_at_once(spark, tmp_path):
    path = tmp_path / "dump.jsonl"
    line = {"partition": 0, "offset": 0, "ts": 1, "key": "a", "payload": "A"}
    path.write_text(json.dumps(line) + "\n" + json.dumps({**line, "offset": 1, "ts": None}) + "\n", encoding="utf-8")
    with pytest.raises(SparkInputError, match=r"dump\.jsonl: column 'ts': 1 record\(s\) have a null timestamp"):
        from_kcat(spark, str(path))
    path.write_text(json.dumps({**line, "ts": 1, "partition": 3}) + "\n", encoding="utf-8")
    with pytest.raises(
        SparkInputError, match=r"dump\.jsonl: column 'partition': 3 is not a partition of a topic with partitions=2"
    ):
        from_kcat(spark, str(path), partitions=2)


def test_a_missing_path_is_refused_in_kjoins_words_not_sparks(spark, tmp_path):
    missing = str(tmp_path / "nowhere" / "orders.parquet")
    with pytest.raises(SparkInputError, match=r"orders\.parquet: no such file or directory"):
        from_files(spark, missing, partitions=1)
    with pytest.raises(SparkInputError, match=r"dump\.jsonl: no such file or directory"):
        from_kcat(spark, str(tmp_path / "dump.jsonl"))


def test_files_without_partition_are_refused_until_told_how_they_were_partitioned(spark, tmp_path):
    path = write_file(spark, tmp_path, "np", LEFT_ROWS, "parquet", False, False)
    says = r"no column 'partition' .* a record a producer sent to another partition.* partitioner='default'"
    for partitions in (None, 3):
        with pytest.raises(SparkInputError, match=says):
            from_files(spark, path, partitions=partitions)
    with pytest.raises(SparkInputError, match=says):
        from_files(spark, path, partitioner="default")
    assert from_files(spark, path, partitions=3, partitioner="default").partitions == 3
    with pytest.raises(SparkInputError, match=r"partitioner='murmur': expected 'default'"):
        from_files(spark, path, partitions=3, partitioner="murmur")
    with_partition = write_file(spark, tmp_path, "wp", LEFT_ROWS, "parquet", True, False)
    with pytest.raises(SparkInputError, match=r"only for a file without a 'partition' column"):
        from_files(spark, with_partition, partitioner="default")


def test_an_unknown_file_format_is_refused(spark, tmp_path):
    with pytest.raises(
        SparkInputError, match=r"cannot tell the format from the name; pass format='parquet', 'csv' or 'json'"
    ):
        from_files(spark, str(tmp_path / "data.avro"))
    with pytest.raises(SparkInputError, match=r"format 'avro' is not supported; use 'parquet', 'csv' or 'json'"):
        from_files(spark, str(tmp_path / "data.avro"), format="avro")


def test_a_partition_outside_the_partition_count_is_refused_naming_the_column(spark):
    with pytest.raises(
        SparkInputError,
        match=r"orders: column 'partition': 1 is not a partition of a topic with partitions=1 \(0 to 0\); "
        r"pass the topic's real partition count",
    ):
        from_kafka(kafka_frame(spark, LEFT_ROWS, utf8, utf8), partitions=1, source="orders")
    topic = from_kafka(kafka_frame(spark, LEFT_ROWS, utf8, utf8), partitions=1, source="orders", check=False)
    with pytest.raises(
        Exception,
        match=r"orders: column 'partition': 1 is not a partition of a topic with partitions=1 \(0 to 0\); "
        r"pass the topic's real partition count",
    ):
        topic.frame.collect()
    with pytest.raises(SparkInputError, match=r"orders: partitions=0: expected a positive integer"):
        from_kafka(kafka_frame(spark, LEFT_ROWS, utf8, utf8), partitions=0, source="orders")


def test_run_join_refuses_bad_options_and_foreign_key_joins(spark):
    topic = from_kafka(kafka_frame(spark, LEFT_ROWS, utf8, utf8))
    with pytest.raises(SparkInputError, match=r"options: grace_ms: KTable must be versioned to use a grace period"):
        run_join(topic, topic, "stream-table", "left", options={"grace_ms": 3})
    with pytest.raises(SparkInputError, match=r"a foreign-key join sends messages between Kafka tasks.*run_scenarios"):
        run_join(topic, topic, "fk", "inner")
