"""Run a join on Spark: topics (or scenarios) in, lazy DataFrames of outputs and steps out.

How it works:

* Both topics are tagged with their side and unioned. A record without a partition gets
  Kafka's default partition (murmur2 of the serialized key; a null key goes to 0), a record
  without an offset gets its rank within its partition in input order.
* Processing order within a Kafka task is Kafka's: the task picks, among its two input
  partitions, the one whose head record has the lowest timestamp (ties: not the one it took its last record
  from, as Kafka's ``PartitionGroup``). That merge equals a sort by ``(running max ts of the record's own
  partition up to it, rank among the ties, offset)`` (:mod:`kjoin.spark.ties`).
* The union is repartitioned by Kafka task, each in a Spark task of its own when there are at least as many
  Spark partitions as Kafka partitions (:mod:`kjoin.spark.placement`), and sorted within Spark partitions by
  input partition and offset; the per-task passes (kjoin's own processors, :mod:`kjoin.spark.passes.task`, or the
  vectorised passes) merge the two input partitions into processing order themselves
  (:mod:`kjoin.spark.passes.merge`).
  The ``records`` frame the debugging tools read, and the native plan, compute the same
  order with window functions and a second sort.
* Topics whose partition counts differ are refused, as Kafka Streams refuses to join
  topics that are not co-partitioned.

The API: :func:`run_join` (two topics), :func:`run_scenarios` (many scenarios in one job) and :func:`open_run` (a
run written with :meth:`SparkRun.write_parquet`). Each builds the records frames, one :class:`JoinSpec` per
scenario, and lets the plans (:mod:`kjoin.spark.passes.plans`) compute the results; a :class:`SparkRun` holds them.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Mapping

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from ..joins import JoinWindows
from ..scenario import JOINS, Scenario
from ..semantics import Semantics, parse_semantics
from .debug.index import WhyIndex
from .io.readers import local_path
from .io.session import local_session
from .io.topic import SparkInputError, Topic, common_types, default_partition_column, partition_count
from . import placement
from .manifest import read_manifest
from .passes import fk_task
from .passes import split
from .passes.merge import HELD_ROWS_CONF, held_rows
from .passes.plans import Feed, Inputs, execute, odd_keys, paired_results
from .passes.task import json_text
from .result import OpenedRun, Rejoin, SparkRun, Written
from .spec import JoinSpec, join_scenario, refuse_unknown_fields
from .ties import with_tie_rank

__all__ = ["run_join", "run_scenarios", "open_run"]


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
    method: str = "auto",
    options: Mapping[str, Any] | None = None,
    key_split: str | int = "off",
    arrival: Mapping[str, Any] | None = None,
) -> SparkRun:
    """Join two topics on Spark, as Kafka Streams would: ``join`` is ``stream-stream``,
    ``stream-table`` or ``table-table``, ``variant`` inner/left/outer, ``semantics`` a Kafka
    version (default: the latest), ``window`` the stream-stream window. ``method``:
    ``"vectorised"`` (numpy/pyarrow passes per Kafka task, :mod:`kjoin.spark.passes.vectorised`; stream-stream
    joins :mod:`kjoin.spark.passes.vectorised_stream`; joins over versioned tables
    :mod:`kjoin.spark.passes.vectorised_versioned`),
    ``"native"`` (Spark SQL window functions, :mod:`kjoin.spark.passes.native`), both refused where
    not exact, ``"processors"`` (kjoin's processors per Kafka task) or ``"auto"`` (the first
    of vectorised, native, processors that is exact; :attr:`SparkRun.method` says which;
    :func:`run_scenarios` with small tasks runs the processors, which are faster there).
    ``options``: more scenario fields, for versioned tables and grace, e.g.
    ``{"right": {"versioned": True, "history_retention_ms": 100}, "grace_ms": 5}`` or
    ``{"left": ..., "right": ..., "versioned_mode": "final"}``. ``key_split``: run each Kafka task's keys on
    several Spark tasks (:mod:`kjoin.spark.passes.split`): ``"off"`` (the default: the split measured slower on 2
    cores, docs/benchmarks.md), ``"auto"`` (when the topics have fewer partitions than Spark has cores and the join
    splits exactly), ``"on"`` (or a number of buckets: a :class:`SparkInputError` naming why when the join cannot be
    split); :attr:`SparkRun.key_buckets` says how many buckets ran.

    ``arrival``: a what-if, the order a task takes its records in when a side (or one of its partitions) lags, as
    Kafka Streams does with ``max.task.idle.ms = 0``: ``{"right": {"lag_ms": 5000}}``, ``{"right": {"partitions":
    {2: 5000}}}`` (the scenario field ``arrival:``, whose model, :func:`kjoin.ordering.arrival_order`, the reference
    engine runs; here it orders each task in one Spark pass, :func:`_arrival_records`). Without it, both input
    partitions of a task always have records buffered (what waiting with ``max.task.idle.ms`` gives).
    Returns a lazy :class:`SparkRun`."""
    if join not in JOINS:
        raise SparkInputError(f"join: expected one of {' | '.join(JOINS)}, got {join!r}")
    if join == "fk":
        raise SparkInputError(
            "join: a foreign-key join sends messages between Kafka tasks, "
            "so run_join (one Spark group per task) cannot run it; "
            "run FK scenarios with run_scenarios(spark, [Scenario(join='fk', ...)]), "
            "which runs each whole (kjoin.spark.passes.fk_task)"
        )
    semantics = _semantics_text(semantics)
    window = _window_option(join, window)
    partitions = partition_count(left, right)
    if arrival is not None:
        options = {**(options or {}), "arrival": _arrival_document(arrival)}
    config = _join_scenario(join, variant, semantics, window, partitions, options)
    spec = JoinSpec.of(config)
    key_type, value_type = common_types(left, right)
    json_values = left.json_values or right.json_values
    frames = [
        _tagged(side, topic, json_values, partitions, key_type, value_type)
        for side, topic in (("left", left), ("right", right))
    ]
    inputs = (
        frames[0].unionByName(frames[1]).select("scenario", "partition", _side_name(), "key", "value", "ts", "offset")
    )
    # Placed by Kafka task once, each in its own Spark task: the running max below and both paths' per-task work
    # reuse it (one shuffle). Only what varies goes through the shuffle and the two sorts (the side as its rank, no
    # null position): narrower rows keep the sorts of 10^7 records in memory, where wider ones spilled to disk.
    shuffled = placement.by_partition(frames[0].unionByName(frames[1]), spark_partitions or partitions)
    records, feed, buckets = _task_feed(
        frames, shuffled, config, spec, spark_partitions or partitions, key_split, method
    )
    inputs_of = Inputs(key_type, value_type, json_keys=False, json_values=json_values, joiner=joiner)
    results, chosen = execute(feed, {0: spec}, inputs_of, method)
    arguments = {"semantics": semantics, "window": window, "options": options, "joiner": joiner}
    arguments.update(spark_partitions=spark_partitions, method=method, key_split=key_split)
    rejoin = _rejoin(
        (left, right, join, variant),
        arguments,
        config,
        partitions,
        lambda second: paired_results(feed, spec, JoinSpec.of(second), inputs_of, method),
    )
    return SparkRun(
        records,
        results,
        {0: config},
        False,
        json_values,
        method=chosen,
        inputs=inputs,
        key_buckets=buckets,
        spark_partitions=spark_partitions or partitions,
        rejoin=rejoin,
    )


def _rejoin(
    join_of: tuple[Topic, Topic, str, str],
    arguments: Mapping[str, Any],
    config: Scenario,
    partitions: int,
    pair: Callable[[Scenario], Any],
) -> Rejoin:
    """How the result of ``run_join(*join_of, **arguments)`` (its scenario ``config``) joins its topics again;
    ``pair(second)``: both joins and their comparison in one pass."""
    left, right, join, variant = join_of
    again = {name: arguments[name] for name in ("joiner", "spark_partitions", "method", "key_split")}
    kept_options = {k: v for k, v in (arguments["options"] or {}).items() if k != "arrival"} or None

    def with_arguments(**changed: Any) -> SparkRun:
        same = {"semantics": arguments["semantics"], "window": arguments["window"], "options": kept_options}
        return run_join(left, right, join, variant, **{**same, **again, **changed})

    def under(other: Semantics, settings: Mapping[str, Any]) -> SparkRun:
        return run_join(left, right, join, variant, semantics=other, **again, **_with_settings(config, settings))

    def paired(other: Semantics, settings: Mapping[str, Any]) -> Any:
        turned = _with_settings(config, settings)
        window_of = _window_option(join, turned["window"])
        second = _join_scenario(join, variant, str(other), window_of, partitions, turned["options"])
        if config.arrival is not None or second.arrival is not None:
            return None  # an arrival orders each task its own way: the diff joins twice
        return pair(second)

    return Rejoin(with_arguments, under, paired)


def _semantics_text(semantics: Any) -> str | None:
    """``semantics=`` as its release text (``None``: the latest), or kjoin's error."""
    try:
        return None if semantics is None else str(parse_semantics(semantics))
    except ValueError as error:
        raise SparkInputError(str(error)) from None


def _task_feed(
    frames: list[Any],
    shuffled: Any,
    config: Scenario,
    spec: JoinSpec,
    spark_partitions: int,
    key_split: Any,
    method: str,
) -> tuple[Any, Feed, int]:
    """The records frame, how the records reach the passes, and the key buckets per task: each task ordered whole by
    the arrival model when a side lags, else sorted by input partition (and split by key when ``key_split`` says)."""
    if config.arrival is not None:
        if key_split not in ("off", "auto"):
            raise SparkInputError(
                "key_split: a lagging side (arrival) orders each whole task in one pass, which the key split cannot "
                "share; drop key_split or arrival"
            )
        records = _arrival_records(shuffled, config.arrival, spark_partitions)
        return records, Feed(records, spark_partitions, partitioned=True), 1
    records = _ordered_records(shuffled)
    by_partition = _by_partition(shuffled, spec)
    partitions = config.partitions
    buckets = split.bucket_count(key_split, {0: spec}, partitions, _cores(shuffled.sparkSession), method)
    key_buckets = None
    if buckets > 1:
        spill_rows = held_rows(shuffled.sparkSession.conf.get(HELD_ROWS_CONF, None))
        union = frames[0].unionByName(frames[1])
        key_buckets = split.clocked(union, buckets, by_partition[1], partitions, spill_rows)
    feed = Feed(records, spark_partitions, partitioned=True, by_partition=by_partition, split=key_buckets)
    return records, feed, buckets


def _with_settings(config: Scenario, settings: Mapping[str, Any]) -> dict[str, Any]:
    """``run_join``'s ``window`` and ``options`` for ``config`` with ``settings`` turned (``kjoin diff --set``
    paths: ``window.grace_ms``, ``right.versioned`` …)."""
    from ..diff import _apply

    document = _apply(config.to_dict(), settings, config.semantics)
    window = document.pop("window", None)
    for name in ("join", "variant", "semantics", "partitions", "events"):
        document.pop(name, None)
    return {"window": window, "options": document or None}


def with_arrival(result: SparkRun, arrival: Mapping[str, Any] | None) -> SparkRun:
    """``result``'s topics joined again with ``arrival`` (a :func:`run_join` result only): the what-if of
    :meth:`SparkRun.with_arrival`."""
    return result.with_arrival(arrival)


def _join_scenario(
    join: str, variant: str, semantics: str | None, window: Any, partitions: int, options: Mapping[str, Any] | None
) -> Scenario:
    """The scenario (without events) of :func:`run_join`'s arguments: :func:`kjoin.spark.spec.join_scenario`, its
    errors as :class:`SparkInputError`; one whose tasks share an instance's time tracker is refused."""
    try:
        config = join_scenario(join, variant, semantics, window, partitions, options)
    except ValueError as error:
        raise SparkInputError(str(error)) from None
    _refuse_shared_time(config)
    return config


def _cores(spark: Any) -> int:
    """Spark's default parallelism (its cores on a local master); 1 where the session does not say (Connect)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # a Spark Connect session has no SparkContext
        return int(spark.conf.get("spark.default.parallelism", "1") or 1)


def _side_name() -> Any:
    """The ``side`` column from the side's rank."""
    return F.when(F.col("_side_rank") == 0, F.lit("left")).otherwise(F.lit("right")).alias("side")


def _tagged(side: str, topic: Topic, json_values: bool, partitions: int, key_type: str, value_type: str) -> Any:
    """One topic's records with their side (as its rank: 0 left, 1 right), a partition (Kafka's default where the
    topic has none), an offset (the rank within the partition in input order where it has none), in the join's
    key and value types."""
    frame = topic.frame
    if json_values and not topic.json_values:
        # The other side holds JSON text, and the processors decode every value alike: this side's plain
        # values become JSON strings ("name0" -> "\"name0\""), which decode back to the same text.
        frame = frame.withColumn("value", _as_json_string(F.col("value")))
    if not topic.has_partition:
        frame = frame.withColumn("partition", _default_partition(partitions, key_type)(F.col("key")))
    if not topic.has_offset:
        in_order = Window.partitionBy("partition").orderBy(F.monotonically_increasing_id())
        frame = frame.withColumn("offset", (F.row_number().over(in_order) - 1).cast("bigint"))
    return frame.select(
        F.lit(0).cast("bigint").alias("scenario"),
        F.col("partition").cast("int").alias("partition"),
        F.lit(0 if side == "left" else 1).alias("_side_rank"),
        F.col("key").cast(key_type).alias("key"),
        F.col("value").cast(value_type).alias("value"),
        F.col("ts").cast("bigint").alias("ts"),
        F.col("offset").cast("bigint").alias("offset"),
    )


def _ordered_records(shuffled: Any) -> Any:
    """The ``records`` frame the native plan and the debugging tools read: each record with the running max ts of
    its own input partition up to it (``_order_ts``) and its rank among the ties (``_tie``), which with the offset
    sort a task's records into processing order (:data:`kjoin.spark.ties.PROCESSING_ORDER`)."""
    running = (
        Window.partitionBy("scenario", "partition", "_side_rank")
        .orderBy("offset")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    return with_tie_rank(shuffled.select(*_records_columns(F.max("ts").over(running).alias("_order_ts"))))


def _records_columns(order_ts: Any) -> list[Any]:
    """The columns of the ``records`` frame but its tie rank, with ``order_ts`` as ``_order_ts``: what sorts a task's
    records into processing order, with the tie rank and the offset (:data:`kjoin.spark.ties.PROCESSING_ORDER`)."""
    position = F.lit(None).cast("bigint").alias("position")
    return ["scenario", "partition", _side_name(), "key", "value", "ts", "offset", position, order_ts, "_side_rank"]


def _arrival_document(arrival: Any) -> Any:
    """``arrival=`` as the scenario field: partition numbers as the document's text keys."""
    if not isinstance(arrival, Mapping):
        return arrival  # the scenario parser names what is wrong
    return {
        side: {**lags, "partitions": {str(p): lag for p, lag in lags["partitions"].items()}}
        if isinstance(lags, Mapping) and isinstance(lags.get("partitions"), Mapping)
        else lags
        for side, lags in arrival.items()
    }


def _arrival_records(shuffled: Any, arrival: Any, spark_partitions: int) -> Any:
    """The ``records`` frame when a side lags: each task's records numbered in the order
    :func:`kjoin.ordering.arrival_order` takes them (``_order_ts`` is that number), the reference engine's model
    run per Kafka task in one grouped pass. The order depends on the timestamps, sides, partitions and offsets
    only, so only those go through Python (a null timestamp counts as the lowest, as in the timestamp merge)."""
    from ..ordering import arrival_order
    from ..records import Record, Side

    lowest = -(2**63)

    def order(frame: Any) -> Any:
        import pandas as pd

        ranks = frame["_side_rank"].tolist()
        stamps = [lowest if t != t or t is None else int(t) for t in frame["ts"].tolist()]
        offsets, partitions = frame["offset"].tolist(), frame["partition"].tolist()
        listed = sorted(range(len(ranks)), key=lambda i: (ranks[i], offsets[i]))  # each partition's log, in order
        records = [
            Record(Side.LEFT if ranks[i] == 0 else Side.RIGHT, None, i, stamps[i], int(partitions[i]), int(offsets[i]))
            for i in listed
        ]
        taken = [record.value for record, _ in arrival_order(records, arrival)]
        return pd.DataFrame(
            {
                "scenario": frame["scenario"].iloc[taken].to_numpy(),
                "partition": frame["partition"].iloc[taken].to_numpy(),
                "_side_rank": frame["_side_rank"].iloc[taken].to_numpy(),
                "offset": frame["offset"].iloc[taken].to_numpy(),
                "_order_ts": range(len(taken)),
            }
        )

    where = ["scenario", "partition", "_side_rank", "offset"]
    numbered = (
        shuffled.select(*where, "ts")
        .groupBy("scenario", "partition")
        .applyInPandas(order, "scenario long, partition int, _side_rank int, offset long, _order_ts long")
    )
    return placement.by_partition(shuffled.join(numbered, where), spark_partitions).select(
        *_records_columns("_order_ts"),
        F.lit(0).cast("bigint").alias("_tie"),  # _order_ts numbers the records: no ties left to rank
    )


def _by_partition(shuffled: Any, spec: JoinSpec) -> tuple[Any, int]:
    """The per-task passes take the shuffled records sorted once, by input partition, and merge the two into
    processing order themselves (:mod:`kjoin.spark.passes.merge`): the window and the second sort are left to the
    native plan and to the records frame of the debugging tools. The side held while the other streams comes first:
    a stream-table join's table."""
    held_rank = 1 if spec.join == "stream-table" else 0
    by_partition = shuffled.sortWithinPartitions(
        "scenario", "partition", F.col("_side_rank").desc() if held_rank else F.col("_side_rank"), "offset"
    ).select("partition", F.col("_side_rank").cast("byte").alias("_side_rank"), "key", "value", "ts", "offset")
    return by_partition, held_rank


def _refuse_shared_time(config: Scenario) -> None:
    """Two topics carry no order across tasks: a join whose tasks share an instance's time tracker needs it."""
    if config.tasks_share_time:
        raise SparkInputError(
            f"options: one_instance: on Kafka {config.semantics} the tasks of one instance share a left/outer "
            "stream-stream join's time tracker (before KAFKA-14862, 3.4.1 and 3.5), so a task's results depend on "
            "the order in which the instance ran all its tasks' records, which two topics do not carry; run it as a "
            "scenario with run_scenarios(spark, [scenario]) (its events list that order; it runs whole), or on "
            "3.4.1+ (semantics='3.5'), or without one_instance (each task alone)"
        )


def run_scenarios(
    spark: Any,
    scenarios: Iterable[Scenario],
    joiner: Callable[[Any, Any], Any] | None = None,
    spark_partitions: int | None = None,
    method: str = "auto",
    key_split: str | int = "off",
) -> SparkRun:
    """Run many scenarios in one Spark job: scenario ``i`` is ``scenario == i`` in every frame,
    and a record's ``step`` is its index in the scenario, as in the reference trace.
    Keys and values travel as JSON text (scenarios may mix string and number keys).
    ``method`` as in :func:`run_join`; on both paths the rows of each Spark partition come
    in emission order within every task (the native path sorts them by ``step``). ``key_split`` as in
    :func:`run_join`; split, a task's rows come in emission
    order within each key bucket, and a stable sort by ``step`` gives the task's."""
    configs: dict[int, Scenario] = {}
    rows = []
    # Scenarios whose tasks depend on one another run whole (kjoin.spark.passes.fk_task): a foreign-key join's tasks
    # send each other messages; a stream-stream join's tasks may share an instance's time tracker (tasks_share_time).
    fk_rows: list[tuple] = []
    for scenario_id, scenario in enumerate(scenarios):
        refuse_unknown_fields(scenario)  # a field Spark would ignore: kjoin's error, before any pass
        configs[scenario_id] = scenario
        if fk_task.runs_whole(scenario):
            fk_rows += fk_task.script_rows(scenario_id, scenario)
        else:
            rows += _scenario_rows(scenario_id, scenario)
    pk_configs = {i: s for i, s in configs.items() if not fk_task.runs_whole(s)}
    fk_configs = {i: s for i, s in configs.items() if fk_task.runs_whole(s)}
    if not fk_configs:
        return _primary_key_joins(spark, rows, configs, joiner, spark_partitions, method, key_split)
    fk_records = _scenario_frame(spark, fk_rows)
    results = fk_task.fk_results(fk_records, fk_configs, joiner, spark_partitions)
    records = fk_records
    if pk_configs:
        pk = _primary_key_joins(spark, rows, pk_configs, joiner, spark_partitions, method, key_split)
        results, records = pk.results.unionByName(results), pk.records.unionByName(fk_records)
    return SparkRun(records, results, configs, True, True)


_SCENARIO_SCHEMA = (
    "scenario long, partition int, side string, key string, value string, ts long, offset long, position long"
)


def _scenario_rows(scenario_id: int, scenario: Scenario) -> list[tuple]:
    """A primary-key scenario's records as rows, keys and values as JSON text, each with its position."""
    return [
        (
            scenario_id,
            record.partition,
            record.side.value,
            json_text(record.key),
            json_text(record.value),
            record.ts,
            record.offset,
            position,
        )
        for position, record in enumerate(scenario.records())
    ]


def _scenario_frame(spark: Any, data: list[tuple]) -> Any:
    """The records frame of scenario rows: in processing order already (``_order_ts`` is the position)."""
    schema = _SCENARIO_SCHEMA
    records = spark.createDataFrame(data, schema=schema) if data else spark.createDataFrame([], schema=schema)
    in_order = (F.col("position").alias("_order_ts"), F.lit(0).alias("_tie"), F.lit(0).alias("_side_rank"))
    return records.select("*", *in_order)


def _primary_key_joins(
    spark: Any,
    rows: list[tuple],
    chosen: Mapping[int, Scenario],
    joiner: Callable[[Any, Any], Any] | None,
    spark_partitions: int | None,
    method: str,
    key_split: str | int = "off",
) -> SparkRun:
    records = _scenario_frame(spark, rows)
    counts: dict[int, int] = {}  # each scenario's partition count, as its records say
    for row in rows:
        counts[row[0]] = max(counts.get(row[0], 0), row[1] + 1)
    tasks = len({(row[0], row[1]) for row in rows})
    specs = {scenario_id: JoinSpec.of(scenario) for scenario_id, scenario in chosen.items()}
    buckets = split.bucket_count(key_split, specs, tasks, _cores(spark), method)
    key_buckets = None if buckets == 1 else split.positioned(records, buckets, spark_partitions, counts)
    feed = Feed(records, spark_partitions, sort_rows=True, split=key_buckets, task_counts=counts)
    inputs = Inputs("string", "string", json_keys=True, json_values=True, joiner=joiner, odd_keys=odd_keys(chosen))
    per_task = len(rows) / max(1, tasks)
    results, used = execute(feed, specs, inputs, method, records_per_task=per_task)
    return SparkRun(records, results, chosen, True, True, method=used, key_buckets=buckets)


def _window_option(join: str, window: Any) -> JoinWindows | Mapping[str, Any] | None:
    """``window=`` of :func:`run_join`: a :class:`JoinWindows`, a dict ``{before_ms, after_ms,
    grace_ms}``, or an int ``w``: ``before_ms = after_ms = w`` and no grace, as Kafka's
    ``JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(w))``."""
    if window is None or isinstance(window, (JoinWindows, Mapping)):
        return window
    if isinstance(window, int) and not isinstance(window, bool):
        if window < 0:
            raise SparkInputError(f"window={window}: a time difference is 0 ms or more")
        return {"before_ms": window, "after_ms": window, "grace_ms": 0}
    raise SparkInputError(
        f"window={window!r}: expected milliseconds (an int: before_ms = after_ms, no grace), a dict "
        "{'before_ms': ..., 'after_ms': ..., 'grace_ms': ...} or a kjoin.joins.JoinWindows"
        + ("" if join == "stream-stream" else f"; a {join} join takes no window")
    )


def _as_json_string(column: Any) -> Any:
    """``column``'s text as a JSON string literal (null stays null): what a JSON reader decodes back to it."""
    quoted = F.to_json(F.array(column.cast("string")))  # ["text"], escaped by Spark's JSON writer
    return F.when(column.isNull(), F.lit(None)).otherwise(quoted.substr(F.lit(2), F.length(quoted) - 2))


def _default_partition(partitions: int, key_type: str) -> Any:
    """Kafka's default partition of each key (null keys go to 0), as a column function. An
    Arrow-batched UDF (:func:`kjoin.spark.io.topic.default_partition_column`): a pandas UDF
    would see long keys with nulls as floats and lose bits above 2**53."""
    return lambda column: default_partition_column(column, partitions, key_type)


def open_run(where: Any, path: str | None = None, *, spark: Any = None) -> "SparkRun":
    """Reopen a run that :meth:`SparkRun.write_parquet` wrote under a path (``why_index=True`` for :meth:`why`
    and the key drill-downs): ``open_run("out/")`` (in the active Spark session, or a new
    :func:`kjoin.spark.local_session`), ``open_run("out/", spark=session)`` or ``open_run(session, "out/")``.
    Its ``outputs`` (the explained ones), ``steps``, ``summary()``, the index and ``why`` read what was
    written; nothing is computed again. ``trace(partition=...)`` reads the task's
    records from the index. Written with a partitioner of your own? Set ``run.partitioner`` again (a function is
    not written down)."""
    if hasattr(where, "read") and not isinstance(where, str):
        spark, where = where, path
    elif path is not None:
        raise SparkInputError(f"open_run({where!r}, {path!r}): pass one path, e.g. open_run('out/'), and spark=...")
    if not isinstance(where, (str, os.PathLike)):
        raise SparkInputError(f"open_run: expected the path write_parquet wrote to, got {where!r}")
    from .debug.topology_index import is_topology_run, open_topology_run

    if is_topology_run(local_path(str(where))):  # a TopologyRun's (or kjoin debug's): read without Spark
        return open_topology_run(local_path(str(where)))  # type: ignore[return-value]
    if spark is None:
        spark = SparkSession.getActiveSession() or local_session()
    path = local_path(str(where)).rstrip("/")
    manifest = read_manifest(spark, path)
    scenarios = {int(i): Scenario.from_dict(d) for i, d in manifest["scenarios"].items()}
    outputs = spark.read.parquet(f"{path}/outputs")
    steps = spark.read.parquet(f"{path}/steps")
    summary = spark.read.parquet(f"{path}/summary")
    index_info = manifest.get("why_index")
    index = None
    records = None
    if index_info is not None:
        by_offset = spark.read.parquet(f"{path}/why-index/by_offset")
        marks: dict[tuple[int, int], dict[int, tuple[int, int]]] = {}
        for scenario, partition, klass, ts, neg in index_info["final_marks"]:
            marks.setdefault((scenario, partition), {})[klass] = (ts, neg)
        lookup = ["scenario", "partition", "side", "key", "value", "ts", "offset", "step"]
        index = WhyIndex(
            f"{path}/why-index",
            by_offset.select(*lookup),
            spark.read.parquet(f"{path}/why-index/by_key"),
            spark.read.parquet(f"{path}/why-index/releases") if index_info["releases"] else None,
            marks,
        )
        # The records in processing order, as the index numbered them: enough for trace(partition=...).
        records = by_offset.select(
            "scenario",
            "partition",
            "side",
            "key",
            "value",
            "ts",
            "offset",
            F.col("step").alias("position"),
            F.col("step").alias("_order_ts"),
            F.lit(0).alias("_tie"),
            F.lit(0).alias("_side_rank"),
        )
    return OpenedRun(
        records,
        scenarios,
        manifest["json_keys"],
        manifest["json_values"],
        manifest["method"],
        Written(path, outputs, steps, summary, index),
        spark_partitions=manifest.get("spark_partitions"),
        run_join=run_join,
    )
