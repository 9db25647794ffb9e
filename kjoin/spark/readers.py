"""Readers: Kafka-source DataFrames, kcat JSON dumps and Parquet/CSV/JSON files, as topics.

Every reader checks its columns first and refuses a missing or mistyped column with an
error that names the source, the column and the expected type. Nothing is collected: the
result wraps a lazy DataFrame.

Deserializers (``key=`` and ``value=``):

* ``"string"``: UTF-8 text (Kafka's ``StringDeserializer``).
* ``"long"``: 8 big-endian bytes (``LongDeserializer``); in kcat dumps and files, a number.
* ``"json"``: JSON text; the joiner receives the parsed value, outputs carry JSON text.
"""

from __future__ import annotations

from typing import Any, Literal

from .topic import INTEGER_TYPES, SparkInputError, Topic, check_columns

__all__ = ["from_kafka", "from_kcat", "from_files", "Deserializer"]

Deserializer = Literal["string", "long", "json"]

KAFKA_SOURCE_COLUMNS = {"key": ("binary",), "value": ("binary",), "partition": ("int",), "offset": ("bigint",), "timestamp": ("timestamp",)}
KCAT_FIELDS = {"partition": INTEGER_TYPES, "offset": INTEGER_TYPES, "ts": INTEGER_TYPES, "key": ("string", *INTEGER_TYPES), "payload": ("string", *INTEGER_TYPES, "double")}
FILE_COLUMNS = {
    "key": ("string", *INTEGER_TYPES),
    "value": ("string", *INTEGER_TYPES, "double"),
    "ts": (*INTEGER_TYPES, "timestamp"),
    "partition": INTEGER_TYPES,
    "offset": INTEGER_TYPES,
}


def _check_deserializer(name: str, choice: str) -> None:
    if choice not in ("string", "long", "json"):
        raise SparkInputError(f"{name}=: expected 'string', 'long' or 'json', got {choice!r}")


def from_kafka(frame: Any, key: Deserializer = "string", value: Deserializer = "string", partitions: int | None = None, source: str = "Kafka DataFrame") -> Topic:
    """A topic from a DataFrame in Spark's Kafka source schema (``spark.read.format("kafka")``):
    ``key``/``value`` binary, ``partition`` int, ``offset`` long, ``timestamp`` timestamp."""
    from pyspark.sql import functions as F

    _check_deserializer("key", key)
    _check_deserializer("value", value)
    check_columns(frame, KAFKA_SOURCE_COLUMNS, source)

    def deserialize(column: str, how: str) -> Any:
        if how == "long":
            return F.conv(F.hex(F.col(column)), 16, -10).cast("bigint")
        return F.col(column).cast("string")

    topic = frame.select(
        deserialize("key", key).alias("key"),
        deserialize("value", value).alias("value"),
        F.unix_millis(F.col("timestamp")).alias("ts"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("bigint").alias("offset"),
    )
    return Topic(topic, partitions, value == "json", source)


def from_kcat(spark: Any, path: str, key: Deserializer = "string", value: Deserializer = "string", partitions: int | None = None) -> Topic:
    """A topic from a ``kcat -C -J`` dump: one JSON object per line with ``partition``,
    ``offset``, ``ts``, ``key`` and ``payload``."""
    from pyspark.sql import functions as F

    _check_deserializer("key", key)
    _check_deserializer("value", value)
    raw = spark.read.json(path)
    if "_corrupt_record" in raw.columns:
        raise SparkInputError(f"{path}: not kcat JSON lines (some lines are not JSON objects); dump with `kcat -C -J -t <topic>`")
    check_columns(raw, KCAT_FIELDS, path)
    frame = raw.select(
        F.col("key").cast("bigint" if key == "long" else "string").alias("key"),
        F.col("payload").cast("bigint" if value == "long" else "string").alias("value"),
        F.col("ts").cast("bigint").alias("ts"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("bigint").alias("offset"),
    )
    return Topic(frame, partitions, value == "json", path)


def from_files(
    spark: Any,
    path: str,
    format: Literal["parquet", "csv", "json"] | None = None,
    value: Deserializer = "string",
    partitions: int | None = None,
) -> Topic:
    """A topic from Parquet, CSV (with a header) or JSON-lines files with columns
    ``key, value, ts`` and optionally ``partition, offset``.

    ``ts`` is milliseconds (an integer) or a timestamp. Without ``partition`` the records
    are assigned with Kafka's default partitioner (then ``partitions`` is required);
    without ``offset`` a record's offset is its rank within its partition in file order.
    """
    from pyspark.sql import functions as F

    _check_deserializer("value", value)
    format = format or _guess_format(path)
    reader = spark.read
    if format == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    elif format not in ("parquet", "json"):
        raise SparkInputError(f"{path}: format {format!r} is not supported; use 'parquet', 'csv' or 'json'")
    raw = getattr(reader, format)(path)
    check_columns(raw, FILE_COLUMNS, path, optional=("partition", "offset"))
    types = dict(raw.dtypes)
    ts = F.unix_millis(F.col("ts")) if types["ts"] == "timestamp" else F.col("ts").cast("bigint")
    key = F.col("key") if types["key"] == "string" else F.col("key").cast("bigint")
    columns = [key.alias("key"), F.col("value").cast("string" if value == "json" else types["value"] if types["value"] in ("string", "double") else "bigint").alias("value"), ts.alias("ts")]
    for name, cast in (("partition", "int"), ("offset", "bigint")):
        if name in types:
            columns.append(F.col(name).cast(cast).alias(name))
    frame = raw.select(*columns)
    if "partition" not in types and partitions is None:
        raise SparkInputError(f"{path}: no 'partition' column; pass partitions=N so that kjoin assigns partitions with Kafka's default partitioner")
    return Topic(frame, partitions, value == "json", path)


def _guess_format(path: str) -> str:
    lowered = str(path).rstrip("/").lower()
    for suffix, format in ((".parquet", "parquet"), (".csv", "csv"), (".json", "json"), (".jsonl", "json")):
        if lowered.endswith(suffix):
            return format
    raise SparkInputError(f"{path}: cannot tell the format from the name; pass format='parquet', 'csv' or 'json'")
