"""A topic as a Spark DataFrame: the columns kjoin reads, checked at the edge.

A :class:`Topic` wraps a DataFrame with columns ``key``, ``value``, ``ts`` (milliseconds)
and optionally ``partition`` and ``offset``, plus what is known about the topic: its
partition count and whether values are JSON text. The readers in
:mod:`kjoin.spark.readers` build topics from Kafka-source DataFrames, kcat dumps and files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

__all__ = ["Topic", "SparkInputError", "check_columns", "default_partition_column", "KEY_TYPES", "VALUE_TYPES"]

KEY_TYPES = ("string", "bigint")
"""Spark types a key may have: a string key is serialized as UTF-8, a long as 8 bytes."""
VALUE_TYPES = ("string", "bigint", "double")
"""Spark types a value may have (JSON values are carried as JSON text strings)."""
INTEGER_TYPES = ("tinyint", "smallint", "int", "bigint")


class SparkInputError(ValueError):
    """Input that kjoin cannot read: the message names the source, the column and what is expected."""


@dataclass(frozen=True)
class Topic:
    """One input topic: ``frame`` has ``key, value, ts`` and optionally ``partition, offset``.

    ``partitions`` is the topic's partition count when known (Kafka metadata); when
    ``None`` it is taken from the data as ``max(partition) + 1``. ``json_values`` says that
    ``value`` holds JSON text to decode before the joiner sees it.
    """

    frame: Any
    partitions: int | None = None
    json_values: bool = False
    source: str = "topic"

    @property
    def has_partition(self) -> bool:
        return "partition" in self.frame.columns

    @property
    def has_offset(self) -> bool:
        return "offset" in self.frame.columns


def check_columns(frame: Any, expected: Mapping[str, Sequence[str]], source: str, optional: Sequence[str] = ()) -> None:
    """Raise :class:`SparkInputError` if a required column is missing or any listed column
    has a type outside its expected ones."""
    types = dict(frame.dtypes)
    for name, allowed in expected.items():
        if name not in types:
            if name in optional:
                continue
            raise SparkInputError(
                f"{source}: no column {name!r} (expected type {' or '.join(allowed)}); "
                f"the columns are {', '.join(types) or 'none'}. "
                f"Rename or add the column, e.g. frame.withColumnRenamed('<yours>', {name!r})."
            )
        if types[name] not in allowed:
            raise SparkInputError(
                f"{source}: column {name!r} has type {types[name]}, expected {' or '.join(allowed)}. "
                f"Cast it, e.g. frame.withColumn({name!r}, frame[{name!r}].cast({_cast_advice(allowed)!r}))."
            )


def _cast_advice(allowed: Sequence[str]) -> str:
    """The type to cast to: ``long`` where a long fits (millisecond timestamps, partitions and
    offsets need 64 or 32 bits, never a tinyint), else the first allowed type."""
    return "long" if "bigint" in allowed else allowed[0]


def default_partition_column(key: Any, partitions: int, key_type: str) -> Any:
    """A column: the partition Kafka's default partitioner gives each key (murmur2 of the
    serialized key modulo ``partitions``, :func:`kjoin.partitioner.default_partition`); a
    null key goes to partition 0. ``key_type`` is the key column's Spark type (``string``:
    UTF-8 bytes, ``bigint``: 8 big-endian bytes).

    An Arrow-batched Python UDF: each key arrives as a Python ``str``/``int`` (never a float
    with NaN for nulls, as in a pandas UDF), so long keys keep all 64 bits."""
    from pyspark.sql import functions as F

    if key_type not in KEY_TYPES:
        raise SparkInputError(
            f"key: a key column of type {key_type} has no Kafka serialization in kjoin; "
            f"expected {' or '.join(KEY_TYPES)}"
        )
    count = int(partitions)

    def partition_of(value: Any) -> int:
        from kjoin.partitioner import default_partition

        return 0 if value is None else default_partition(value, count)

    return F.udf(partition_of, "int", useArrow=True)(key)
