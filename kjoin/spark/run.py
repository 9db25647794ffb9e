"""Run a join on Spark: topics (or scenarios) in, lazy DataFrames of outputs and steps out.

How it works:

* Both topics are tagged with their side and unioned. A record without a partition gets
  Kafka's default partition (murmur2 of the serialized key; a null key goes to 0), a record
  without an offset gets its rank within its partition in input order.
* Processing order within a Kafka task is Kafka's: the task picks, among its two input
  partitions, the one whose head record has the lowest timestamp (ties: left first). That
  merge equals a sort by ``(running max ts of the record's own partition up to it, side,
  offset)``, which Spark computes with a window function and a sort.
* The union is repartitioned by ``(scenario, partition)`` and sorted within Spark
  partitions, so one Spark task runs whole Kafka tasks, record by record, through kjoin's
  own processors (:mod:`kjoin.spark.task`).
* Topics whose partition counts differ are refused, as Kafka Streams refuses to join
  topics that are not co-partitioned.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Mapping

from ..fates import Reason
from ..joins import JoinWindows
from ..scenario import JOINS, VARIANTS, Scenario
from ..semantics import Semantics, parse_semantics
from ..trace import Trace
from .task import result_schema, task_function
from .topic import KEY_TYPES, VALUE_TYPES, SparkInputError, Topic

__all__ = ["run_join", "run_scenarios", "SparkRun", "OUTPUT_COLUMNS", "STEP_COLUMNS"]

OUTPUT_COLUMNS = ["scenario", "partition", "step", "side", "offset", "key", "left", "right", "value", "ts", "tombstone", "kind", "origin_step"]
"""Columns of :attr:`SparkRun.outputs`: ``step``/``side``/``offset`` name the input record
whose processing emitted the output; ``origin_step`` the record whose value it carries."""
STEP_COLUMNS = ["scenario", "partition", "step", "side", "offset", "key", "ts", "fate", "reason", "until_ms"]
"""Columns of :attr:`SparkRun.steps`: every input record that did not join (dropped,
buffered, stored, no match), with its reason."""


class SparkRun:
    """The lazy result of a Spark run. Nothing is computed until an action is called on
    one of the frames (``write_parquet``, ``count``, ``show``, ``toPandas`` …)."""

    def __init__(self, records: Any, results: Any, scenarios: Mapping[int, Scenario], json_keys: bool, json_values: bool) -> None:
        self.records = records
        """The ordered input records: ``scenario, partition, side, key, value, ts, offset, position, _order_ts, _side_rank``."""
        self.results = results
        """Outputs and steps in one frame, told apart by ``row``."""
        self.scenarios = scenarios
        self._json_keys = json_keys
        self._json_values = json_values

    @property
    def outputs(self) -> Any:
        return self.results.filter(self.results.row == "output").select(*OUTPUT_COLUMNS)

    @property
    def steps(self) -> Any:
        return self.results.filter(self.results.row == "step").select(*STEP_COLUMNS)

    def summary(self) -> Any:
        """Per scenario, partition and key: results, tombstones, and records per reason
        (drops, buffered, stored, no match)."""
        from pyspark.sql import functions as F

        row, reason = F.col("row"), F.col("reason")
        counts = [
            F.sum(F.when((row == "output") & ~F.col("tombstone"), 1).otherwise(0)).alias("results"),
            F.sum(F.when((row == "output") & F.col("tombstone"), 1).otherwise(0)).alias("tombstones"),
        ]
        counts += [F.sum(F.when(reason == member.value, 1).otherwise(0)).alias(member.value) for member in Reason]
        return self.results.groupBy("scenario", "partition", "key").agg(*counts)

    def write_parquet(self, path: str, mode: str = "overwrite") -> None:
        """Write ``outputs/``, ``steps/`` and ``summary/`` under ``path`` (one pass each)."""
        self.outputs.write.mode(mode).parquet(f"{path}/outputs")
        self.steps.write.mode(mode).parquet(f"{path}/steps")
        self.summary().write.mode(mode).parquet(f"{path}/summary")

    def trace(self, partition: int, scenario: int = 0, joiner: Callable[[Any, Any], Any] | None = None) -> Trace:
        """Drill down: collect one Kafka task's input records (only those) and run them
        through the reference engine. Step ``i`` of the trace is the task's ``i``-th record;
        for topics that is the ``step`` of the Spark frames."""
        from pyspark.sql import functions as F

        from ..engine import run
        from ..joins import default_joiner

        rows = (
            self.records.filter((F.col("scenario") == scenario) & (F.col("partition") == partition))
            .orderBy("_order_ts", "_side_rank", "offset")
            .select("side", "key", "value", "ts", "partition", "offset")
            .collect()
        )
        config = self.scenarios[scenario]
        records = []
        for row in rows:
            key, value = row["key"], row["value"]
            if self._json_keys and key is not None:
                key = json.loads(key)
            if self._json_values and value is not None:
                value = json.loads(value)
            records.append({"side": row["side"], "key": key, "value": value, "ts": row["ts"], "partition": row["partition"], "offset": row["offset"]})
        single = Scenario.from_records(config.join, config.variant, records, semantics=config.semantics, window=config.window, partitions=config.partitions)
        return run(single, joiner=joiner or default_joiner)


def run_join(
    left: Topic,
    right: Topic,
    join: str,
    variant: str,
    *,
    semantics: str | Semantics | None = None,
    window: JoinWindows | Mapping[str, Any] | None = None,
    joiner: Callable[[Any, Any], Any] | None = None,
    spark_partitions: int | None = None,
) -> SparkRun:
    """Join two topics on Spark, as Kafka Streams would: ``join`` is ``stream-stream``,
    ``stream-table`` or ``table-table``, ``variant`` inner/left/outer, ``semantics`` a Kafka
    version (default: the latest), ``window`` the stream-stream window. Returns a lazy
    :class:`SparkRun`."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if join not in JOINS:
        raise SparkInputError(f"join: expected one of {' | '.join(JOINS)}, got {join!r}")
    partitions = _partition_count(left, right)
    config = Scenario.from_records(join, variant, [], semantics=None if semantics is None else str(parse_semantics(semantics)), window=window, partitions=partitions)
    key_type, value_type = _common_types(left, right)
    frames = []
    for side, topic in (("left", left), ("right", right)):
        frame = topic.frame
        if not topic.has_partition:
            frame = frame.withColumn("partition", _default_partition(partitions, key_type)(F.col("key")))
        if not topic.has_offset:
            in_order = Window.partitionBy("partition").orderBy(F.monotonically_increasing_id())
            frame = frame.withColumn("offset", (F.row_number().over(in_order) - 1).cast("bigint"))
        frames.append(
            frame.select(
                F.lit(0).cast("bigint").alias("scenario"),
                F.col("partition").cast("int").alias("partition"),
                F.lit(side).alias("side"),
                F.col("key").cast(key_type).alias("key"),
                F.col("value").cast(value_type).alias("value"),
                F.col("ts").cast("bigint").alias("ts"),
                F.col("offset").cast("bigint").alias("offset"),
                F.lit(None).cast("bigint").alias("position"),
                F.lit(0 if side == "left" else 1).alias("_side_rank"),
            )
        )
    records = frames[0].unionByName(frames[1])
    running = Window.partitionBy("scenario", "partition", "side").orderBy("offset").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    records = records.withColumn("_order_ts", F.max("ts").over(running))
    json_values = left.json_values or right.json_values
    return _execute(records, {0: config}, key_type, value_type, joiner, json_keys=False, json_values=json_values, spark_partitions=spark_partitions or partitions)


def run_scenarios(spark: Any, scenarios: Iterable[Scenario], joiner: Callable[[Any, Any], Any] | None = None, spark_partitions: int | None = None) -> SparkRun:
    """Run many scenarios in one Spark job: scenario ``i`` is ``scenario == i`` in every frame,
    and a record's ``step`` is its index in the scenario, as in the reference trace.
    Keys and values travel as JSON text (scenarios may mix string and number keys)."""
    from pyspark.sql import functions as F

    configs: dict[int, Scenario] = {}
    rows = []
    for scenario_id, scenario in enumerate(scenarios):
        configs[scenario_id] = scenario
        for position, record in enumerate(scenario.records()):
            rows.append((scenario_id, record.partition, record.side.value, _json(record.key), _json(record.value), record.ts, record.offset, position))
    schema = "scenario long, partition int, side string, key string, value string, ts long, offset long, position long"
    records = spark.createDataFrame(rows, schema=schema) if rows else spark.createDataFrame([], schema=schema)
    records = records.withColumn("_order_ts", F.col("position")).withColumn("_side_rank", F.lit(0))
    return _execute(records, configs, "string", "string", joiner, json_keys=True, json_values=True, spark_partitions=spark_partitions)


def _execute(records: Any, configs: Mapping[int, Scenario], key_type: str, value_type: str, joiner: Any, json_keys: bool, json_values: bool, spark_partitions: int | None) -> SparkRun:
    sort = ["scenario", "partition", "_order_ts", "_side_rank", "offset"]
    if spark_partitions:
        grouped = records.repartition(spark_partitions, "scenario", "partition")
    else:
        grouped = records.repartition("scenario", "partition")
    ordered = grouped.sortWithinPartitions(*sort)
    results = ordered.select("scenario", "partition", "side", "key", "value", "ts", "offset", "position").mapInArrow(
        task_function(dict(configs), joiner, json_values=json_values, json_keys=json_keys), result_schema(key_type, value_type)
    )
    return SparkRun(records, results, configs, json_keys, json_values)


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"))


def _common_types(left: Topic, right: Topic) -> tuple[str, str]:
    types = []
    for column, allowed in (("key", KEY_TYPES), ("value", VALUE_TYPES)):
        found = {side: dict(topic.frame.dtypes).get(column) for side, topic in (("left", left), ("right", right))}
        for side, kind in found.items():
            if kind is None:
                raise SparkInputError(f"{side} topic ({(left if side == 'left' else right).source}): no column {column!r} (expected type {' or '.join(allowed)})")
            if kind not in allowed:
                raise SparkInputError(f"{side} topic: column {column!r} has type {kind}, expected {' or '.join(allowed)}")
        if found["left"] != found["right"]:
            if column == "key":
                raise SparkInputError(f"the left topic's keys are {found['left']} and the right topic's {found['right']}: a join needs one key type; cast one of them")
            types.append("string")
        else:
            types.append(found["left"])
    return types[0], types[1]


def _partition_count(left: Topic, right: Topic) -> int:
    counts = {}
    for side, topic in (("left", left), ("right", right)):
        count = topic.partitions
        if count is None:
            if not topic.has_partition:
                raise SparkInputError(f"{side} topic ({topic.source}): no partition column and no partition count; pass partitions=N to the reader")
            from pyspark.sql import functions as F

            found = topic.frame.agg(F.max("partition")).first()[0]
            count = 1 if found is None else int(found) + 1
        counts[side] = count
    if counts["left"] != counts["right"]:
        raise SparkInputError(
            f"the topics are not co-partitioned: the left topic ({left.source}) has {counts['left']} partitions and the right "
            f"({right.source}) {counts['right']}. Kafka Streams refuses such a join; repartition one topic to {max(counts.values())} partitions first."
        )
    return counts["left"]


def _default_partition(partitions: int, key_type: str) -> Any:
    """A vectorized UDF: Kafka's default partition of each key (null keys go to 0)."""
    import pandas as pd
    from pyspark.sql.functions import pandas_udf

    from ..partitioner import default_partition

    @pandas_udf("int")
    def partition_of(keys: pd.Series) -> pd.Series:
        return pd.Series([0 if key is None or key != key else default_partition(int(key) if key_type == "bigint" else key, partitions) for key in keys], dtype="int32")

    return partition_of
