"""Topics from Kafka: a DataFrame in Spark's Kafka source schema, or a batch read of a live topic.

A live read asks the cluster for each partition's first and last offset once (one Spark job) and pins
the read to them, so every later action sees the same records while producers keep writing; its records
are the cluster's, so it is not scanned again. A failure of the cluster or of the connector is said in
terms of the topic and the bootstrap servers (:func:`_kafka_error`).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from pyspark.sql import functions as F

from .checks import (
    Deserializer,
    check_deserializer,
    check_eagerly,
    check_partitions,
    fail_when,
    json_text,
    not_null,
    partition_column,
)
from .session import KAFKA_SETUP
from .topic import SparkInputError, Topic, check_columns

KAFKA_FORMAT = "kafka"
"""Spark's name of its Kafka source (the ``spark-sql-kafka-0-10`` connector)."""

KAFKA_SOURCE_COLUMNS = {
    "key": ("binary",),
    "value": ("binary",),
    "partition": ("int",),
    "offset": ("bigint",),
    "timestamp": ("timestamp",),
}


def _long_from_bytes(name: str, source: str) -> Any:
    raw = F.col(name)
    value = F.conv(F.hex(raw), 16, -10).cast("bigint")
    bad = raw.isNotNull() & (F.length(raw) != 8)
    return fail_when(
        value,
        bad,
        source,
        name,
        f"(hex) is not 8 bytes, as LongDeserializer needs; "
        f"use {name}='string' or {name}='json' if the producer wrote text",
        F.hex(raw),
    )


def from_kafka(
    frame: Any,
    key: Deserializer = "string",
    value: Deserializer = "string",
    partitions: int | None = None,
    source: str | None = None,
    *,
    bootstrap_servers: str | None = None,
    topic: str | None = None,
    starting_offsets: str = "earliest",
    ending_offsets: str = "latest",
    options: Mapping[str, Any] | None = None,
    timeout_ms: int = 30_000,
    check: bool = True,
) -> Topic:
    """A topic from Kafka, in one of two forms.

    * ``from_kafka(frame)``: a DataFrame in Spark's Kafka source schema (``spark.read.format("kafka")``):
      ``key``/``value`` binary, ``partition`` int, ``offset`` long, ``timestamp`` timestamp (other
      columns such as ``topic`` or ``headers`` are ignored).
    * ``from_kafka(spark, bootstrap_servers="host:9092", topic="orders")``: a batch read of a live
      topic through Spark's Kafka source, from ``starting_offsets`` to ``ending_offsets`` (Spark's
      ``startingOffsets``/``endingOffsets``: ``"earliest"``, ``"latest"`` or their JSON form);
      partitions, offsets, timestamps, null keys and tombstones are the cluster's. The read is pinned:
      ``from_kafka`` runs one Spark job over the range to learn each partition's first and last offset
      and reads exactly those offsets from then on, so every later action (outputs, summary, ``why``)
      sees the same records while producers keep writing. ``options`` pass through to the Kafka source
      (``{"kafka.security.protocol": "SSL", ...}``); ``timeout_ms`` bounds each request to the cluster, so
      a missing topic or an unreachable cluster is an error naming both, never a hang. The session needs
      the connector (``spark-sql-kafka-0-10``): :func:`kjoin.spark.local_session` adds it once ``make
      kafka-live`` has fetched it; without it the error says so.

    ``partitions`` is the topic's partition count when some partitions may hold no records (the
    count is otherwise the highest partition seen plus one). ``check`` (a DataFrame only): one
    aggregate job refuses negative timestamps and partitions outside ``partitions`` at once (see
    the module docstring)."""
    if bootstrap_servers is not None or topic is not None:
        return _read_live_topic(
            frame,
            bootstrap_servers,
            topic,
            key=key,
            value=value,
            partitions=partitions,
            source=source,
            starting_offsets=starting_offsets,
            ending_offsets=ending_offsets,
            options=options,
            timeout_ms=timeout_ms,
        )
    source = source or "Kafka DataFrame"
    if not hasattr(frame, "columns") and hasattr(frame, "read"):
        raise SparkInputError(
            "from_kafka(spark): to read a live topic pass bootstrap_servers='host:port' and topic='name'; "
            "to read a DataFrame in Kafka source schema pass the DataFrame instead of the session"
        )
    check_deserializer("from_kafka", "key", key, source)
    check_deserializer("from_kafka", "value", value, source)
    check_partitions(partitions, source)
    check_columns(frame, KAFKA_SOURCE_COLUMNS, source)

    def deserialize(column: str, how: str) -> Any:
        if how == "long":
            return _long_from_bytes(column, source)
        if how == "json":
            return json_text(F.col(column), column, source)
        return F.col(column).cast("string")

    if check and not frame.isStreaming:
        check_eagerly(frame, F.unix_millis(F.col("timestamp")), F.col("partition"), partitions, source, "timestamp")
    topic_frame = frame.select(
        deserialize("key", key).alias("key"),
        deserialize("value", value).alias("value"),
        not_null(F.unix_millis(F.col("timestamp")), "timestamp", source).alias("ts"),
        partition_column(F.col("partition"), partitions, source).alias("partition"),
        F.col("offset").cast("bigint").alias("offset"),
    )
    return Topic(topic_frame, partitions, value == "json", source)


def _read_live_topic(
    spark: Any,
    bootstrap_servers: Any,
    topic: Any,
    *,
    key: Deserializer,
    value: Deserializer,
    partitions: int | None,
    source: str | None,
    starting_offsets: Any,
    ending_offsets: Any,
    options: Mapping[str, Any] | None,
    timeout_ms: Any,
) -> Topic:
    """``from_kafka(spark, bootstrap_servers=..., topic=...)``: check, probe the cluster, pin the offsets."""

    where = f"topic {topic!r} at {bootstrap_servers}"
    source = source or where
    if not isinstance(bootstrap_servers, str) or not bootstrap_servers.strip():
        raise SparkInputError(
            f"from_kafka: bootstrap_servers={bootstrap_servers!r}: expected the cluster's 'host:port[,host:port]'"
        )
    if not isinstance(topic, str) or not topic.strip() or "," in topic:
        raise SparkInputError(f"from_kafka: topic={topic!r}: expected the name of one topic (a join reads one each)")
    if hasattr(spark, "columns") or not hasattr(spark, "read"):
        raise SparkInputError(
            f"from_kafka(..., bootstrap_servers=, topic=): the first argument must be the SparkSession to read "
            f"{where} with, got {type(spark).__name__}"
        )
    if not isinstance(timeout_ms, int) or isinstance(timeout_ms, bool) or timeout_ms < 1:
        raise SparkInputError(f"{source}: timeout_ms={timeout_ms!r}: expected a positive number of milliseconds")
    if options is not None and not isinstance(options, Mapping):
        raise SparkInputError(
            f"{source}: options={options!r}: expected a dict of Kafka source options, "
            "e.g. {'kafka.security.protocol': 'SSL'}"
        )
    owned = {name: kjoin_name for name, kjoin_name in _OWNED_OPTIONS.items() if name in (options or {})}
    if owned:
        name, kjoin_name = next(iter(owned.items()))
        raise SparkInputError(f"{source}: options={{{name!r}: ...}}: from_kafka sets {name!r} itself; use {kjoin_name}")
    check_deserializer("from_kafka", "key", key, source)
    check_deserializer("from_kafka", "value", value, source)
    check_partitions(partitions, source)
    for name, offsets in (("starting_offsets", starting_offsets), ("ending_offsets", ending_offsets)):
        if not isinstance(offsets, str) or not offsets.strip():
            raise SparkInputError(
                f"{source}: {name}={offsets!r}: expected 'earliest', 'latest' or Spark's JSON form, "
                f'e.g. \'{{"{topic}": {{"0": 42}}}}\''
            )
    timeout = str(timeout_ms)
    settings = {
        "kafka.bootstrap.servers": bootstrap_servers,
        "kafka.request.timeout.ms": timeout,
        "kafka.default.api.timeout.ms": timeout,
        "kafka.socket.connection.setup.timeout.max.ms": timeout,
        "kafkaConsumer.pollTimeoutMs": timeout,
        "fetchOffset.numRetries": "1",
        "includeHeaders": "false",
    }
    settings.update({str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in (options or {}).items()})

    def load(**offsets: str) -> Any:
        reader = spark.read.format(KAFKA_FORMAT)
        for name, setting in {**settings, **offsets}.items():
            reader = reader.option(name, setting)
        try:
            return reader.load()
        except Exception as error:
            raise _kafka_error(error, source, topic, bootstrap_servers, timeout_ms) from None

    raw = load(subscribe=topic, startingOffsets=starting_offsets, endingOffsets=ending_offsets)
    try:
        bounds = (
            raw.groupBy("partition")
            .agg(F.min("offset").alias("first"), F.max("offset").alias("last"))
            .orderBy("partition")
            .collect()
        )
    except Exception as error:
        raise _kafka_error(error, source, topic, bootstrap_servers, timeout_ms) from None
    if bounds and partitions is not None and int(bounds[-1]["partition"]) >= partitions:
        seen = int(bounds[-1]["partition"])
        raise SparkInputError(
            f"{source}: partitions={partitions} was passed, but the topic has records in partition {seen}, so it has "
            f"at least {seen + 1} partitions; pass its real partition count (partitions={seen + 1} or more), or "
            "leave partitions= out"
        )
    if not bounds:
        pinned = raw.where(F.lit(False))  # an empty range: nothing to read, and no further call to the cluster
    else:
        first = {topic: {str(row["partition"]): int(row["first"]) for row in bounds}}
        after = {topic: {str(row["partition"]): int(row["last"]) + 1 for row in bounds}}
        pinned = load(
            assign=json.dumps({topic: [int(row["partition"]) for row in bounds]}),
            startingOffsets=json.dumps(first),
            endingOffsets=json.dumps(after),
        )
    return from_kafka(pinned, key=key, value=value, partitions=partitions, source=source, check=False)


_OWNED_OPTIONS = {
    "kafka.bootstrap.servers": "bootstrap_servers=",
    "subscribe": "topic=",
    "subscribePattern": "topic= (one topic per read)",
    "assign": "topic= (and starting_offsets=/ending_offsets= for a range of partitions)",
    "startingOffsets": "starting_offsets=",
    "endingOffsets": "ending_offsets=",
}
"""Kafka source options that ``from_kafka``'s own parameters set, and the parameter to use instead."""


def _kafka_error(error: Exception, source: str, topic: str, servers: str, timeout_ms: int) -> SparkInputError:
    """A Spark or Kafka failure of a live read, said in terms of the topic and the cluster."""
    text = str(error)
    where = f"topic {topic!r} at {servers}"
    if "DATA_SOURCE_NOT_FOUND" in text or "Failed to find data source: kafka" in text:
        return SparkInputError(
            f"{source}: this Spark session cannot load Spark's Kafka source (format 'kafka'): the "
            f"spark-sql-kafka-0-10 connector is not on its classpath. To read {where}, {KAFKA_SETUP}"
        )
    if "UnknownTopicOrPartitionException" in text or "UNKNOWN_TOPIC_OR_PARTITION" in text:
        return SparkInputError(
            f"{source}: the Kafka cluster at {servers} has no topic {topic!r}; "
            "check the name (topics are case-sensitive) and the bootstrap servers"
        )
    if "TimeoutException" in text:
        return SparkInputError(
            f"{source}: no answer about {where} within timeout_ms={timeout_ms}: the cluster is unreachable or "
            "too slow; check bootstrap_servers and that the brokers run (or raise timeout_ms)"
        )
    if "OffsetOutOfRange" in text or "Cannot fetch offset" in text or "DataLoss" in text.replace(" ", ""):
        return SparkInputError(
            f"{source}: some offsets of {where} are no longer in the log (deleted by retention?): "
            f"{_first_line(text)}; read from starting_offsets='earliest'"
        )
    return SparkInputError(f"{source}: reading {where} failed: {_first_line(text)}")


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("at ")]
    for line in lines:
        if "Exception" in line and ":" in line:
            return line[:400]
    return (lines[0] if lines else text)[:400]
