"""The checks every reader shares: deserializer names, paths, Spark read errors, and the column
expressions that refuse bad data (a null or negative timestamp, a partition outside the topic, a long
that is not 8 bytes, text that is not JSON).

What can be seen in the schema is refused at once; what can only be seen in the data is refused in
two ways. :func:`check_eagerly` runs one small aggregate job over the timestamp and partition columns
and raises :class:`SparkInputError` before any join runs. The other checks are lazy column expressions
(:func:`fail_when`): the Spark job that reads a bad value fails with a ``[USER_RAISED_EXCEPTION]``
whose message names the source, the column and the value.
"""

from __future__ import annotations

import glob
import os
from typing import Any, Literal

from pyspark.sql import functions as F

from .topic import INTEGER_TYPES, SparkInputError

Deserializer = Literal["string", "long", "json"]

DESERIALIZERS = ("string", "long", "json")

_NESTED = ("struct<", "array<", "map<")


def check_deserializer(reader: str, name: str, choice: Any, source: str, allow_none: bool = False) -> None:
    if choice is None and allow_none:
        return
    if choice not in DESERIALIZERS:
        keep = " or None (keep the stored type)" if allow_none else ""
        raise SparkInputError(
            f"{source}: {reader}({name}={choice!r}): no such deserializer; "
            "expected 'string' (UTF-8 text), 'long' (8-byte big-endian) "
            f"or 'json' (JSON text){keep}"
        )


def fail_when(column: Any, bad: Any, source: str, name: str, what: str, shown: Any) -> Any:
    """``column``, or a job failure naming the source, the column and the offending value."""
    message = F.concat(F.lit(f"{source}: column {name!r}: "), F.coalesce(shown, F.lit("null")), F.lit(f" {what}"))
    return F.when(bad, F.raise_error(message)).otherwise(column)


def json_text(column: Any, name: str, source: str) -> Any:
    text = column.cast("string")
    bad = text.isNotNull() & F.try_parse_json(text).isNull()
    return fail_when(text, bad, source, name, f"is not JSON text; use {name}='string' to read it as plain text", text)


def long_from_text(column: Any, kind: str, name: str, source: str) -> Any:
    if kind in INTEGER_TYPES:
        return column.cast("bigint")
    value = column.try_cast("bigint")
    return fail_when(
        value,
        column.isNotNull() & value.isNull(),
        source,
        name,
        f"is not a long; use {name}='string' to read it as text",
        column.cast("string"),
    )


def not_null(column: Any, name: str, source: str) -> Any:
    return fail_when(
        column,
        column.isNull(),
        source,
        name,
        "is not allowed: every Kafka record has a timestamp, a partition and an offset",
        F.lit(None).cast("string"),
    )


def check_eagerly(
    frame: Any, ts: Any, partition: Any, partitions: int | None, source: str, ts_name: str = "ts"
) -> None:
    """One aggregate job over the timestamp and partition columns: a null or negative timestamp
    (the reference engine refuses both; Kafka Streams' default extractor fails on them) and a
    partition that is null, negative or outside the topic are refused with :class:`SparkInputError`
    before any join runs, instead of inside a Java stack trace when results are computed."""
    aggregates = [F.count_if(ts.isNull()).alias("null_ts"), F.min(ts).alias("min_ts")]
    if partition is not None:
        aggregates += [
            F.count_if(partition.isNull()).alias("null_p"),
            F.min(partition).alias("min_p"),
            F.max(partition).alias("max_p"),
        ]
    row = frame.agg(*aggregates).first()
    if row is None:  # pragma: no cover - an aggregate always has one row
        return
    if row["null_ts"]:
        raise SparkInputError(
            f"{source}: column {ts_name!r}: {row['null_ts']} record(s) have a null timestamp; every Kafka record has "
            "one: fill them in or drop those rows"
        )
    if row["min_ts"] is not None and row["min_ts"] < 0:
        raise SparkInputError(
            f"{source}: column {ts_name!r}: timestamp {row['min_ts']} is negative; Kafka Streams' timestamp extractor "
            "refuses negative timestamps and so does kjoin's reference engine: drop those rows or fix their time"
        )
    if partition is None:
        return
    if row["null_p"]:
        raise SparkInputError(
            f"{source}: column 'partition': {row['null_p']} record(s) have a null partition; every Kafka record has "
            "one: fill them in, or drop the column to let kjoin assign Kafka's default partitions"
        )
    if row["min_p"] is not None and row["min_p"] < 0:
        raise SparkInputError(f"{source}: column 'partition': {row['min_p']} is negative; a partition is 0 or more")
    if partitions is not None and row["max_p"] is not None and row["max_p"] >= partitions:
        raise SparkInputError(
            f"{source}: column 'partition': {row['max_p']} is not a partition of a topic with partitions={partitions} "
            f"(0 to {partitions - 1}); pass the topic's real partition count"
        )


def check_partitions(partitions: Any, source: str) -> None:
    if partitions is not None and (not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1):
        raise SparkInputError(
            f"{source}: partitions={partitions!r}: expected a positive integer (the topic's partition count)"
        )


def partition_column(column: Any, partitions: int | None, source: str) -> Any:
    """The partition column, refused (lazily) when null, negative or not below the count."""
    column = not_null(column.cast("int"), "partition", source)
    if partitions is None:
        bad = column < 0
        what = "is negative; a partition is 0 or more"
    else:
        bad = (column < 0) | (column >= partitions)
        what = (
            f"is not a partition of a topic with partitions={partitions} (0 to {partitions - 1}); "
            "pass the topic's real partition count"
        )
    return fail_when(column, bad, source, "partition", what, column.cast("string"))


def decode_text(column: str, kind: str, how: str, source: str) -> Any:
    """A kcat or file column (Spark type ``kind``) read with deserializer ``how``."""
    if how == "long":
        return long_from_text(F.col(column), kind, column, source)
    if how == "json":
        if kind.startswith(_NESTED):
            return F.to_json(F.col(column))
        return json_text(F.col(column), column, source)
    return F.col(column).cast("string")


def check_path(path: Any, source: str) -> None:
    """A local path that does not exist is refused before Spark is asked (Spark's own
    ``PATH_NOT_FOUND`` comes as a Java error); a path with a scheme is left to Spark."""
    if not isinstance(path, (str, os.PathLike)):
        raise SparkInputError(f"{source!r}: expected the path of a file or directory, got {type(path).__name__}")
    text = str(path)
    if "://" in text or text.startswith("file:"):
        return
    if not (glob.glob(text) if glob.has_magic(text) else os.path.exists(text)):
        raise SparkInputError(f"{text}: no such file or directory (looked for {os.path.abspath(text)})")


def read_or_refuse(action: Any, source: str) -> Any:
    """A Spark read whose analysis error (a path that vanished, a file Spark cannot read) becomes
    a :class:`SparkInputError` naming the source."""
    try:
        return action()
    except Exception as error:  # pyspark's AnalysisException, local or over Connect
        if type(error).__name__ not in ("AnalysisException", "IllegalArgumentException", "SparkConnectGrpcException"):
            raise
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SparkInputError(f"{source}: Spark cannot read it: {first}") from None


def local_path(path: str) -> str:
    """A path without a scheme (``s3a://``, ``hdfs://`` …) made absolute against Python's working
    directory: Spark's JVM resolves relative paths against its own, fixed when it started."""
    text = str(path)
    return (
        text
        if "://" in text or text.startswith("file:")
        else os.path.abspath(text) + ("/" if text.endswith("/") else "")
    )


def refuse_corrupt_lines(raw: Any, path: str, what: str, fix: str) -> None:
    """Spark's JSON reader puts lines it cannot parse in ``_corrupt_record``: name the first."""
    if "_corrupt_record" not in raw.columns:
        return
    first = None
    try:
        # Spark refuses queries that reference only the corrupt-record column of a raw file.
        first = (
            raw.select(
                F.col("_corrupt_record"), F.lit(1).alias("_n"), *[c for c in raw.columns if c != "_corrupt_record"][:1]
            )
            .filter(F.col("_corrupt_record").isNotNull())
            .first()
        )
    except Exception:  # pragma: no cover - the message below is enough without the line
        first = None
    line = (
        f" (first bad line: {first['_corrupt_record'][:80]!r})"
        if first is not None and first["_corrupt_record"]
        else ""
    )
    raise SparkInputError(f"{path}: {what}: some lines are not JSON objects{line}; {fix}")
