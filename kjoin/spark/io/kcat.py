"""Topics from ``kcat -C -J`` dumps: one JSON object per line with the record's partition, offset,
timestamp, key and payload."""

from __future__ import annotations

from typing import Any

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
from .topic import INTEGER_TYPES, Topic, check_columns

KCAT_FIELDS = {
    "partition": INTEGER_TYPES,
    "offset": INTEGER_TYPES,
    "ts": INTEGER_TYPES,
    "key": ("string", *INTEGER_TYPES),
    "payload": ("string", *INTEGER_TYPES, "double"),
}


def from_kcat(
    spark: Any,
    path: str,
    key: Deserializer = "string",
    value: Deserializer = "string",
    partitions: int | None = None,
    check: bool = True,
) -> Topic:
    """A topic from a ``kcat -C -J`` dump: one JSON object per line with ``partition``,
    ``offset``, ``ts``, ``key`` and ``payload`` (``null`` for a null key or a tombstone;
    other fields such as ``topic``, ``tstype``, ``broker``, ``headers`` are ignored)."""
    check_deserializer("from_kcat", "key", key, path)
    check_deserializer("from_kcat", "value", value, path)
    check_partitions(partitions, path)
    check_path(path, "from_kcat")
    raw = read_or_refuse(lambda: spark.read.json(local_path(path)), path)
    refuse_corrupt_lines(
        raw, path, "not kcat JSON lines", "dump with `kcat -C -J -t <topic>` (one JSON object per line)"
    )
    types = dict(raw.dtypes)
    fields = dict(KCAT_FIELDS)
    if value == "json" and str(types.get("payload", "")).startswith(_NESTED):
        fields.pop("payload")  # a payload kcat printed as a JSON object: read as its JSON text
    check_columns(raw, fields, path)

    def deserialize(column: str, how: str) -> Any:
        return decode_text(column, types[column], how, path)

    if check:
        check_eagerly(raw, F.col("ts").cast("bigint"), F.col("partition").cast("int"), partitions, path)

    frame = raw.select(
        deserialize("key", key).alias("key"),
        deserialize("payload", value).alias("value"),
        not_null(F.col("ts").cast("bigint"), "ts", path).alias("ts"),
        partition_column(F.col("partition"), partitions, path).alias("partition"),
        not_null(F.col("offset").cast("bigint"), "offset", path).alias("offset"),
    )
    return Topic(frame, partitions, value == "json", path)
