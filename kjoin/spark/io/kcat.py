"""Topics from ``kcat -C -J`` dumps: one JSON object per line with the record's partition, offset,
timestamp, key and payload."""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

from .checks import (
    _NESTED,
    Deserializer,
    _check_deserializer,
    _check_eagerly,
    _check_partitions,
    _check_path,
    _decode_text,
    _not_null,
    _partition,
    _read,
    _refuse_corrupt_lines,
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
    _check_deserializer("from_kcat", "key", key, path)
    _check_deserializer("from_kcat", "value", value, path)
    _check_partitions(partitions, path)
    _check_path(path, "from_kcat")
    raw = _read(lambda: spark.read.json(local_path(path)), path)
    _refuse_corrupt_lines(
        raw, path, "not kcat JSON lines", "dump with `kcat -C -J -t <topic>` (one JSON object per line)"
    )
    types = dict(raw.dtypes)
    fields = dict(KCAT_FIELDS)
    if value == "json" and str(types.get("payload", "")).startswith(_NESTED):
        fields.pop("payload")  # a payload kcat printed as a JSON object: read as its JSON text
    check_columns(raw, fields, path)

    def deserialize(column: str, how: str) -> Any:
        return _decode_text(column, types[column], how, path)

    if check:
        _check_eagerly(raw, F.col("ts").cast("bigint"), F.col("partition").cast("int"), partitions, path)

    frame = raw.select(
        deserialize("key", key).alias("key"),
        deserialize("payload", value).alias("value"),
        _not_null(F.col("ts").cast("bigint"), "ts", path).alias("ts"),
        _partition(F.col("partition"), partitions, path).alias("partition"),
        _not_null(F.col("offset").cast("bigint"), "offset", path).alias("offset"),
    )
    return Topic(frame, partitions, value == "json", path)
