"""The co-partitioning audit: which input records are not in their key's partition, and what that did.

A join runs per Kafka task, and task ``p`` reads partition ``p`` of both topics. Kafka Streams relies on
every producer putting a key in the same partition: its *default partition*, murmur2 of the serialized key
modulo the partition count (:func:`kjoin.partitioner.default_partition`), or whatever partitioner the
producers are meant to share. A record written elsewhere (a producer with another partitioner or key
serializer) is *misrouted*: its task never sees the key's other records, and it never sees theirs.

What a misrouted record does, seen from the records of the other side (:attr:`SparkRun.explained_outputs`
names it as the result's ``cause_*``):

* ``partner-other-partition``: a lookup found no partner because the partner (or the looking record itself)
  went to another partition;
* ``joined-stale``: a lookup found an older value, because a later update went to another partition;
* ``joined-deleted``: a lookup found a value that a tombstone in another partition had deleted.

A record with a null key has no partition of its own (Kafka Streams skips it); when a lookup of key ``k``
found nothing anywhere and a null-key record of the other side names ``k`` in its value, the result's verdict
is ``partner-null-key`` and its cause that record: the producer dropped the key.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from pyspark.sql import functions as F

from ...partitioner import default_partition

__all__ = ["Partitioner", "partition_of", "expected_partition_column", "audit_frame", "AUDIT_COLUMNS"]

Partitioner = Callable[[Any, int], int]
"""``partitioner(key, partitions) -> partition`` for a non-null key (the Python key: ``str`` or ``int``)."""

AUDIT_COLUMNS = [
    "scenario",
    "side",
    "partition",
    "offset",
    "key",
    "ts",
    "value",
    "expected_partition",
    "problem",
    "nulls",
    "stale_joins",
    "missed_deletes",
]
"""Columns of :meth:`SparkRun.partitioning_audit`: one row per misrouted record (``problem``
``misrouted``, ``expected_partition`` its key's partition) and per null-key record named as the cause of
a result (``null-key``); ``nulls``, ``stale_joins`` and ``missed_deletes`` count the results it caused."""


def partition_of(key: Any, partitions: int, partitioner: Partitioner | None = None) -> int | None:
    """The partition ``key`` belongs in (``None`` for a null key)."""
    if key is None:
        return None
    return (partitioner or default_partition)(key, partitions)


def expected_partition_column(
    key: Any, partitions: int, json_keys: bool, partitioner: Partitioner | None = None
) -> Any:
    """A column: the partition each key belongs in (null for a null key). Keys carried as JSON text
    (:func:`kjoin.spark.run_scenarios`) are decoded first. An Arrow-batched Python UDF, as
    :func:`kjoin.spark.io.topic.default_partition_column`: long keys keep all 64 bits."""
    count = int(partitions)
    chosen = partitioner

    def expected(value: Any) -> Any:
        if value is None:
            return None
        return partition_of(json.loads(value) if json_keys else value, count, chosen)

    return F.udf(expected, "int", useArrow=True)(key)


def audit_frame(records: Any, explained: Any, partitions: int, json_keys: bool, partitioner: Any = None) -> Any:
    """:meth:`SparkRun.partitioning_audit` from the run's ordered ``records`` and its ``explained``
    outputs (with their ``cause_*`` columns)."""
    placed = records.select(
        "scenario",
        "side",
        "partition",
        "offset",
        "key",
        "ts",
        "value",
        expected_partition_column(F.col("key"), partitions, json_keys, partitioner).alias("expected_partition"),
    )
    reason = F.col("reason")
    effects = (
        explained.filter(F.col("cause_offset").isNotNull())
        .groupBy(
            "scenario",
            F.col("cause_side").alias("side"),
            F.col("cause_partition").alias("partition"),
            F.col("cause_offset").alias("offset"),
        )
        .agg(
            F.sum(F.when(reason.isin("partner-other-partition", "partner-null-key"), 1).otherwise(0)).alias("nulls"),
            F.sum(F.when(reason == "joined-stale", 1).otherwise(0)).alias("stale_joins"),
            F.sum(F.when(reason == "joined-deleted", 1).otherwise(0)).alias("missed_deletes"),
        )
    )
    keys = ["scenario", "side", "partition", "offset"]
    misrouted = placed.filter(F.col("key").isNotNull() & (F.col("partition") != F.col("expected_partition")))
    found = misrouted.join(effects, keys, "left").withColumn("problem", F.lit("misrouted"))
    null_keys = (
        placed.filter(F.col("key").isNull()).join(effects, keys, "inner").withColumn("problem", F.lit("null-key"))
    )
    counts = [
        F.coalesce(F.col(c), F.lit(0)).cast("bigint").alias(c) for c in ("nulls", "stale_joins", "missed_deletes")
    ]
    columns = [*AUDIT_COLUMNS[:9], *counts]
    return found.select(*columns).unionByName(null_keys.select(*columns))
