"""A topic as a Spark DataFrame: the columns kjoin reads, checked at the edge.

A :class:`Topic` wraps a DataFrame with columns ``key``, ``value``, ``ts`` (milliseconds)
and optionally ``partition`` and ``offset``, plus what is known about the topic: its
partition count and whether values are JSON text. The readers in
:mod:`kjoin.spark.io.readers` build topics from Kafka-source DataFrames, kcat dumps and files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pyspark.sql import functions as F

from ...partitioner import default_partition

__all__ = [
    "Topic",
    "SparkInputError",
    "check_columns",
    "default_partition_column",
    "common_types",
    "partition_count",
    "KEY_TYPES",
    "VALUE_TYPES",
]

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
    if key_type not in KEY_TYPES:
        raise SparkInputError(
            f"key: a key column of type {key_type} has no Kafka serialization in kjoin; "
            f"expected {' or '.join(KEY_TYPES)}"
        )
    count = int(partitions)

    def partition_of(value: Any) -> int:
        return 0 if value is None else default_partition(value, count)

    return F.udf(partition_of, "int", useArrow=True)(key)


def common_types(left: Topic, right: Topic) -> tuple[str, str]:
    """The key and value types two topics are joined with: one key type (else an error naming the cast), the
    values' common type (text when they differ)."""
    types = []
    for column, allowed in (("key", KEY_TYPES), ("value", VALUE_TYPES)):
        found = {side: dict(topic.frame.dtypes).get(column) for side, topic in (("left", left), ("right", right))}
        for side, kind in found.items():
            source = (left if side == "left" else right).source
            if kind is None:
                raise SparkInputError(
                    f"{side} topic ({source}): no column {column!r} (expected type {' or '.join(allowed)})"
                )
            if kind not in allowed:
                raise SparkInputError(
                    f"{side} topic ({source}): column {column!r} has type {kind}, expected {' or '.join(allowed)}; "
                    f"cast it, e.g. frame.withColumn({column!r}, frame[{column!r}].cast({allowed[0]!r}))"
                )
        if found["left"] != found["right"]:
            if column == "key":
                raise SparkInputError(
                    f"the left topic's ({left.source}) keys are {found['left']} "
                    f"and the right topic's ({right.source}) {found['right']}: "
                    "a join needs one key type; cast one of them, "
                    "or read both with the same key deserializer (key='string' or key='long')"
                )
            types.append("string")
        else:
            types.append(found["left"])
    return types[0], types[1]


def partition_count(left: Topic, right: Topic) -> int:
    """The partition count two co-partitioned topics share (an error naming both counts when they differ)."""
    counts = {}
    for side, topic in (("left", left), ("right", right)):
        count = topic.partitions
        if count is None:
            if not topic.has_partition:
                raise SparkInputError(
                    f"{side} topic ({topic.source}): no partition column and no partition count; "
                    "pass partitions=N to the reader"
                )
            found = topic.frame.agg(F.max("partition")).first()[0]
            count = 1 if found is None else int(found) + 1
        counts[side] = count
    if counts["left"] != counts["right"]:
        for side, topic in (("left", left), ("right", right)):
            if topic.partitions is not None and topic.has_partition:
                try:
                    seen = topic.frame.agg(F.max("partition")).first()[0]
                except Exception as error:  # the reader refuses a partition beyond the count as it reads it
                    found = re.search(r"column 'partition': (\d+) is not a partition", str(error))
                    if found is None:
                        raise
                    seen = int(found.group(1))
                if seen is not None and int(seen) >= topic.partitions:
                    raise SparkInputError(
                        f"{side} topic ({topic.source}): partitions={topic.partitions} was passed, but the topic has "
                        f"records in partition {int(seen)}, so it has at least {int(seen) + 1} partitions; pass its "
                        f"real partition count (partitions={int(seen) + 1} or more), or leave partitions= out"
                    )
        raise SparkInputError(
            f"the topics are not co-partitioned: the left topic ({left.source}) has {counts['left']} partitions "
            f"and the right ({right.source}) {counts['right']}. Kafka Streams refuses such a join; "
            f"repartition one topic to {max(counts.values())} partitions first."
        )
    return counts["left"]
