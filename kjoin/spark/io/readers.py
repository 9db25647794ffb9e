"""Readers: live Kafka topics, Kafka-source DataFrames, kcat JSON dumps and Parquet/CSV/JSON files, as topics.

Every reader checks its columns first and refuses a missing or mistyped column with an
error that names the source, the column, the expected type and the fix. What can only be
seen in the data is checked in two ways. A null or negative timestamp and a partition outside the
topic are checked eagerly: the reader runs one small aggregate job over those columns (a count and
a min/max) and raises :class:`SparkInputError` before any join runs (``check=False`` skips it;
a path that does not exist is refused before Spark is asked). A long that is not 8 bytes or text
that is not JSON is checked lazily, in the same Spark job that reads it: the job fails with a
``[USER_RAISED_EXCEPTION]`` whose message names the source, the column and the value.
Nothing else is collected: the result wraps a lazy DataFrame (a live topic also asks the cluster
for its offsets once, with one Spark job, and pins the read to them; its records are the
cluster's, so it is not scanned again).

Deserializers (``key=`` and ``value=``):

* ``"string"``: UTF-8 text (Kafka's ``StringDeserializer``).
* ``"long"``: 8 big-endian bytes (``LongDeserializer``); in kcat dumps and files, a number
  (or the text of one).
* ``"json"``: JSON text; the joiner receives the parsed value, outputs carry JSON text. In
  JSON files and kcat dumps a nested object (``"value": {"fk": "Y"}``) is read as its JSON
  text.

Files without a ``partition`` column are refused unless the caller says how they were
partitioned: ``partitioner="default"`` (every producer used Kafka's default partitioner) gives
each record murmur2 of its serialized key (:mod:`kjoin.partitioner`; a null key goes to
partition 0) with the topic's ``partitions=N``. Assigned silently, a record a producer sent to
another partition would be moved back where its key belongs, and the misrouted-record cause
with it. Files without an ``offset`` column get offsets in input order:
files in name order (``part-00000…`` as Spark wrote them), rows in file order, counted per
partition from 0.
"""

from __future__ import annotations

import json
import glob
import os
from typing import Any, Literal, Mapping

from pyspark.sql import Window
from pyspark.sql import functions as F

from .session import KAFKA_SETUP
from .topic import INTEGER_TYPES, SparkInputError, Topic, check_columns, default_partition_column

__all__ = ["from_kafka", "from_kcat", "from_files", "Deserializer"]

Deserializer = Literal["string", "long", "json"]
DESERIALIZERS = ("string", "long", "json")
KAFKA_FORMAT = "kafka"
"""Spark's name of its Kafka source (the ``spark-sql-kafka-0-10`` connector)."""

KAFKA_SOURCE_COLUMNS = {
    "key": ("binary",),
    "value": ("binary",),
    "partition": ("int",),
    "offset": ("bigint",),
    "timestamp": ("timestamp",),
}
KCAT_FIELDS = {
    "partition": INTEGER_TYPES,
    "offset": INTEGER_TYPES,
    "ts": INTEGER_TYPES,
    "key": ("string", *INTEGER_TYPES),
    "payload": ("string", *INTEGER_TYPES, "double"),
}
TIMESTAMP_TYPES = ("timestamp", "timestamp_ntz")
FILE_COLUMNS = {
    "key": ("string", *INTEGER_TYPES),
    "value": ("string", *INTEGER_TYPES, "double"),
    "ts": (*INTEGER_TYPES, *TIMESTAMP_TYPES),
    "partition": INTEGER_TYPES,
    "offset": INTEGER_TYPES,
}
_NESTED = ("struct<", "array<", "map<")


def _check_deserializer(reader: str, name: str, choice: Any, source: str, allow_none: bool = False) -> None:
    if choice is None and allow_none:
        return
    if choice not in DESERIALIZERS:
        keep = " or None (keep the stored type)" if allow_none else ""
        raise SparkInputError(
            f"{source}: {reader}({name}={choice!r}): no such deserializer; "
            "expected 'string' (UTF-8 text), 'long' (8-byte big-endian) "
            f"or 'json' (JSON text){keep}"
        )


def _fail_when(column: Any, bad: Any, source: str, name: str, what: str, shown: Any) -> Any:
    """``column``, or a job failure naming the source, the column and the offending value."""
    message = F.concat(F.lit(f"{source}: column {name!r}: "), F.coalesce(shown, F.lit("null")), F.lit(f" {what}"))
    return F.when(bad, F.raise_error(message)).otherwise(column)


def _long_from_bytes(name: str, source: str) -> Any:
    raw = F.col(name)
    value = F.conv(F.hex(raw), 16, -10).cast("bigint")
    bad = raw.isNotNull() & (F.length(raw) != 8)
    return _fail_when(
        value,
        bad,
        source,
        name,
        f"(hex) is not 8 bytes, as LongDeserializer needs; "
        f"use {name}='string' or {name}='json' if the producer wrote text",
        F.hex(raw),
    )


def _json_text(column: Any, name: str, source: str) -> Any:
    text = column.cast("string")
    bad = text.isNotNull() & F.try_parse_json(text).isNull()
    return _fail_when(text, bad, source, name, f"is not JSON text; use {name}='string' to read it as plain text", text)


def _long_from_text(column: Any, kind: str, name: str, source: str) -> Any:
    if kind in INTEGER_TYPES:
        return column.cast("bigint")
    value = column.try_cast("bigint")
    return _fail_when(
        value,
        column.isNotNull() & value.isNull(),
        source,
        name,
        f"is not a long; use {name}='string' to read it as text",
        column.cast("string"),
    )


def _not_null(column: Any, name: str, source: str) -> Any:
    return _fail_when(
        column,
        column.isNull(),
        source,
        name,
        "is not allowed: every Kafka record has a timestamp, a partition and an offset",
        F.lit(None).cast("string"),
    )


def _check_eagerly(
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


def _check_path(path: Any, source: str) -> None:
    """A local path that does not exist is refused before Spark is asked (Spark's own
    ``PATH_NOT_FOUND`` comes as a Java error); a path with a scheme is left to Spark."""
    if not isinstance(path, (str, os.PathLike)):
        raise SparkInputError(f"{source!r}: expected the path of a file or directory, got {type(path).__name__}")
    text = str(path)
    if "://" in text or text.startswith("file:"):
        return
    if not (glob.glob(text) if glob.has_magic(text) else os.path.exists(text)):
        raise SparkInputError(f"{text}: no such file or directory (looked for {os.path.abspath(text)})")


def _read(action: Any, source: str) -> Any:
    """A Spark read whose analysis error (a path that vanished, a file Spark cannot read) becomes
    a :class:`SparkInputError` naming the source."""
    try:
        return action()
    except Exception as error:  # pyspark's AnalysisException, local or over Connect
        if type(error).__name__ not in ("AnalysisException", "IllegalArgumentException", "SparkConnectGrpcException"):
            raise
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SparkInputError(f"{source}: Spark cannot read it: {first}") from None


def _check_partitions(partitions: Any, source: str) -> None:
    if partitions is not None and (not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1):
        raise SparkInputError(
            f"{source}: partitions={partitions!r}: expected a positive integer (the topic's partition count)"
        )


def _partition(column: Any, partitions: int | None, source: str) -> Any:
    """The partition column, refused (lazily) when null, negative or not below the count."""
    column = _not_null(column.cast("int"), "partition", source)
    if partitions is None:
        bad = column < 0
        what = "is negative; a partition is 0 or more"
    else:
        bad = (column < 0) | (column >= partitions)
        what = (
            f"is not a partition of a topic with partitions={partitions} (0 to {partitions - 1}); "
            "pass the topic's real partition count"
        )
    return _fail_when(column, bad, source, "partition", what, column.cast("string"))


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
    _check_deserializer("from_kafka", "key", key, source)
    _check_deserializer("from_kafka", "value", value, source)
    _check_partitions(partitions, source)
    check_columns(frame, KAFKA_SOURCE_COLUMNS, source)

    def deserialize(column: str, how: str) -> Any:
        if how == "long":
            return _long_from_bytes(column, source)
        if how == "json":
            return _json_text(F.col(column), column, source)
        return F.col(column).cast("string")

    if check and not frame.isStreaming:
        _check_eagerly(frame, F.unix_millis(F.col("timestamp")), F.col("partition"), partitions, source, "timestamp")
    topic_frame = frame.select(
        deserialize("key", key).alias("key"),
        deserialize("value", value).alias("value"),
        _not_null(F.unix_millis(F.col("timestamp")), "timestamp", source).alias("ts"),
        _partition(F.col("partition"), partitions, source).alias("partition"),
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
    _check_deserializer("from_kafka", "key", key, source)
    _check_deserializer("from_kafka", "value", value, source)
    _check_partitions(partitions, source)
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


def _decode_text(column: str, kind: str, how: str, source: str) -> Any:
    """A kcat or file column (Spark type ``kind``) read with deserializer ``how``."""
    if how == "long":
        return _long_from_text(F.col(column), kind, column, source)
    if how == "json":
        if kind.startswith(_NESTED):
            return F.to_json(F.col(column))
        return _json_text(F.col(column), column, source)
    return F.col(column).cast("string")


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
    _check_deserializer("from_files", "key", key, path, allow_none=True)
    _check_deserializer("from_files", "value", value, path, allow_none=True)
    format = format or _guess_format(path)
    reader = _file_reader(spark, path, format, options)
    raw = _read(lambda: getattr(reader, format)(local_path(path)), path)
    if format == "json":
        _refuse_corrupt_lines(raw, path, "not JSON lines", "write one JSON object per line with key, value, ts")
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
    _check_partitions(partitions, path)

    def convert(column: str, how: str | None) -> Any:
        kind = types[column]
        if how is None:
            return F.col(column) if kind in ("string", "double") else F.col(column).cast("bigint")
        return _decode_text(column, kind, how, path)

    ts = (
        F.unix_millis(F.col("ts"))
        if types["ts"] == "timestamp"
        else F.unix_millis(F.col("ts").cast("timestamp"))
        if types["ts"] == "timestamp_ntz"
        else F.col("ts").cast("bigint")
    )
    if check:
        _check_eagerly(raw, ts, F.col("partition").cast("int") if "partition" in types else None, partitions, path)
    columns = [
        convert("key", key).alias("key"),
        convert("value", value).alias("value"),
        _not_null(ts, "ts", path).alias("ts"),
    ]
    if "partition" in types:
        columns.append(_partition(F.col("partition"), partitions, path).alias("partition"))
    if "offset" in types:
        columns.append(_not_null(F.col("offset").cast("bigint"), "offset", path).alias("offset"))
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
    _check_path(path, "from_files")
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


def local_path(path: str) -> str:
    """A path without a scheme (``s3a://``, ``hdfs://`` …) made absolute against Python's working
    directory: Spark's JVM resolves relative paths against its own, fixed when it started."""
    text = str(path)
    return (
        text
        if "://" in text or text.startswith("file:")
        else os.path.abspath(text) + ("/" if text.endswith("/") else "")
    )


def _refuse_corrupt_lines(raw: Any, path: str, what: str, fix: str) -> None:
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
