"""Topics from files: Parquet, CSV (with a header) or JSON lines, with columns ``key, value, ts`` and
optionally ``partition, offset``.

Files without a ``partition`` column are refused unless the caller says how they were partitioned:
``partitioner="default"`` (every producer used Kafka's default partitioner) gives each record murmur2 of its
serialized key (:mod:`kjoin.partitioner`; a null key goes to partition 0) with the topic's ``partitions=N``.
Assigned silently, a record a producer sent to another partition would be moved back where its key belongs, and
the misrouted-record cause with it.
Files without an ``offset`` column get offsets in input order: files in name order (``part-00000…`` as
Spark wrote them), rows in file order, counted per partition from 0.
"""

from __future__ import annotations

import os
from typing import Any, Literal, Mapping

from pyspark.sql import Window
from pyspark.sql import functions as F

from .checks import (
    _NESTED,
    Deserializer,
    check_deserializer,
    check_eagerly,
    check_partitions,
    check_path,
    decode_text,
    not_null,
    partition_column,
    read_or_refuse,
    refuse_corrupt_lines,
    local_path,
)
from .topic import INTEGER_TYPES, SparkInputError, Topic, check_columns, default_partition_column

TIMESTAMP_TYPES = ("timestamp", "timestamp_ntz")

FILE_COLUMNS = {
    "key": ("string", *INTEGER_TYPES),
    "value": ("string", *INTEGER_TYPES, "double"),
    "ts": (*INTEGER_TYPES, *TIMESTAMP_TYPES),
    "partition": INTEGER_TYPES,
    "offset": INTEGER_TYPES,
}


def from_files(
    spark: Any,
    path: str,
    format: Literal["parquet", "csv", "json"] | None = None,
    value: Deserializer | None = None,
    partitions: int | None = None,
    key: Deserializer | None = None,
    options: Mapping[str, Any] | None = None,
    check: bool = True,
    partitioner: Literal["default"] | None = None,
) -> Topic:
    """A topic from Parquet, CSV (with a header) or JSON-lines files with columns
    ``key, value, ts`` and optionally ``partition, offset``.

    ``ts`` is milliseconds (an integer) or a timestamp. ``key``/``value``: ``None`` keeps
    the stored type (a string, or an integer read as a long; values may also be doubles),
    or a deserializer: ``"string"``, ``"long"``, ``"json"``. Without ``partition`` say how the
    records were partitioned: ``partitioner="default"`` and ``partitions=N`` assign them with
    Kafka's default partitioner;
    without ``offset`` a record's offset is its rank within its partition in input order
    (see the module docstring).

    ``options`` pass through to Spark's reader, e.g. ``{"sep": ";"}`` or ``{"nullValue": "NA"}``
    for CSV (kjoin sets ``header`` and ``inferSchema``; yours win). ``path`` may be a file or a
    directory (then the format is told from the files in it, e.g. ``part-*.parquet``).
    """
    check_deserializer("from_files", "key", key, path, allow_none=True)
    check_deserializer("from_files", "value", value, path, allow_none=True)
    format = format or _guess_format(path)
    reader = _file_reader(spark, path, format, options)
    raw = read_or_refuse(lambda: getattr(reader, format)(local_path(path)), path)
    if format == "json":
        refuse_corrupt_lines(raw, path, "not JSON lines", "write one JSON object per line with key, value, ts")
    types = dict(raw.dtypes)
    expected = dict(FILE_COLUMNS)
    if value == "json" and str(types.get("value", "")).startswith(_NESTED):
        expected.pop("value")  # nested JSON values: read as their JSON text
    check_columns(raw, expected, path, optional=("partition", "offset"))
    if partitioner not in (None, "default") or ("partition" in types and partitioner is not None):
        raise SparkInputError(
            f"{path}: partitioner={partitioner!r}: expected 'default' (Kafka's default partitioner), and only for a "
            "file without a 'partition' column (a file that has one says where each record was)"
        )
    if "partition" not in types and (partitioner is None or partitions is None):
        raise SparkInputError(
            f"{path}: no column 'partition' (expected type int): kjoin cannot tell which partition each record was "
            "in, and assigning them by key would hide a record a producer sent to another partition. Add the column "
            "(kcat -f '%p' prints it), or, if every producer used Kafka's default partitioner, say so: "
            "from_files(..., partitions=N, partitioner='default')"
        )
    check_partitions(partitions, path)

    def convert(column: str, how: str | None) -> Any:
        kind = types[column]
        if how is None:
            return F.col(column) if kind in ("string", "double") else F.col(column).cast("bigint")
        return decode_text(column, kind, how, path)

    ts = (
        F.unix_millis(F.col("ts"))
        if types["ts"] == "timestamp"
        else F.unix_millis(F.col("ts").cast("timestamp"))
        if types["ts"] == "timestamp_ntz"
        else F.col("ts").cast("bigint")
    )
    if check:
        check_eagerly(raw, ts, F.col("partition").cast("int") if "partition" in types else None, partitions, path)
    columns = [
        convert("key", key).alias("key"),
        convert("value", value).alias("value"),
        not_null(ts, "ts", path).alias("ts"),
    ]
    if "partition" in types:
        columns.append(partition_column(F.col("partition"), partitions, path).alias("partition"))
    if "offset" in types:
        columns.append(not_null(F.col("offset").cast("bigint"), "offset", path).alias("offset"))
    if "offset" not in types:
        columns += [F.col("_metadata.file_path").alias("_file"), F.monotonically_increasing_id().alias("_row")]
    frame = raw.select(*columns)
    if "partition" not in types:
        key_type = dict(frame.dtypes)["key"]
        if key_type not in ("string", "bigint"):
            raise SparkInputError(
                f"{path}: column 'key' has type {key_type}, which has no Kafka serialization for the default "
                "partitioner; pass key='string' or key='long'"
            )
        frame = frame.withColumn("partition", default_partition_column(F.col("key"), partitions, key_type))  # type: ignore[arg-type]
    if "offset" not in types:
        in_order = Window.partitionBy("partition").orderBy("_file", "_row")
        frame = frame.withColumn("offset", (F.row_number().over(in_order) - 1).cast("bigint")).drop("_file", "_row")
    return Topic(frame.select("key", "value", "ts", "partition", "offset"), partitions, value == "json", path)


def _file_reader(spark: Any, path: str, format: str, options: Mapping[str, Any] | None) -> Any:
    """Spark's reader for ``format`` with kjoin's settings (CSV: a header, inferred types) and then ``options``."""
    reader = spark.read
    if format == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    elif format not in ("parquet", "json"):
        raise SparkInputError(f"{path}: format {format!r} is not supported; use 'parquet', 'csv' or 'json'")
    check_path(path, "from_files")
    if options is not None and not isinstance(options, Mapping):
        raise SparkInputError(
            f"{path}: options={options!r}: expected a dict of Spark reader options, e.g. {{'sep': ';'}}"
        )
    for name, setting in (options or {}).items():
        reader = reader.option(
            str(name),
            setting
            if isinstance(setting, str)
            else str(setting).lower()
            if isinstance(setting, bool)
            else str(setting),
        )
    return reader


_SUFFIXES = ((".parquet", "parquet"), (".csv", "csv"), (".json", "json"), (".jsonl", "json"))


def _guess_format(path: str) -> str:
    """The format from the name, or for a local directory from the data files in it."""
    lowered = str(path).rstrip("/").lower()
    for suffix, format in _SUFFIXES:
        if lowered.endswith(suffix):
            return format
    if os.path.isdir(path):
        found = set()
        for _, _, names in os.walk(path):
            for name in names:
                if not name.startswith((".", "_")):
                    found |= {format for suffix, format in _SUFFIXES if name.lower().endswith(suffix)}
        if len(found) == 1:
            return found.pop()
        what = f"files of several formats ({', '.join(sorted(found))})" if found else "no .parquet, .csv or .json files"
        raise SparkInputError(f"{path}: the directory holds {what}; pass format='parquet', 'csv' or 'json'")
    raise SparkInputError(f"{path}: cannot tell the format from the name; pass format='parquet', 'csv' or 'json'")
