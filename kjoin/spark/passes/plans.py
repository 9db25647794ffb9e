"""Which pass computes a run's results: one :class:`Plan` per path, tried in order.

The plans, fastest first (``method="auto"`` takes the first that serves the joins and runs them exactly):

=======================  ============  =====================================================================
plan                     ``method``    runs
=======================  ============  =====================================================================
``vectorised_stream``    vectorised    stream-stream joins: numpy/pyarrow per Kafka task
``vectorised_versioned`` vectorised    joins over versioned tables, the stream-table grace buffer
``vectorised``           vectorised    unversioned stream-table and table-table joins: arrays per task
``native``               native        the same joins as Spark SQL window functions
``processors``           processors    everything else: kjoin's own processors per Kafka task
=======================  ============  =====================================================================

Each plan says which joins it is for (``serves``: the three vectorised plans split the joins between them, so one
of them speaks for ``method="vectorised"``), why it cannot run them exactly (``unsupported(specs, inputs)``, a
sentence, or ``None``) and builds the results frame (``results(feed, specs, inputs)``). A foreign-key join crosses
tasks and runs whole elsewhere (:mod:`kjoin.spark.passes.fk_task`); the windowed-table design's aggregates have their
own entry point (:mod:`kjoin.spark.passes.aggregates`). With ``Feed.split`` (``key_split=``), the per-task plans run
per key bucket
(:mod:`kjoin.spark.passes.split`) and the native plan is skipped.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ...scenario import Scenario
from ..io.topic import SparkInputError
from ..spec import JoinSpec
from ..ties import PROCESSING_ORDER
from . import native, vectorised, vectorised_stream, vectorised_versioned
from .merge import HELD_ROWS_CONF, held_rows, merged_batches
from .split import KeySplit, split_results
from .comparison import DIFF_SCHEMA
from .paired import Paired, diff_chunk_rows, paired_function
from .task import group_by_task, result_schema, task_function

__all__ = [
    "Plan",
    "Inputs",
    "Feed",
    "PLANS",
    "METHODS",
    "execute",
    "choose",
    "paired_results",
    "odd_keys",
    "SlowPathWarning",
    "JSON_SLOW_PATH",
    "AUTO_MIN_RECORDS_PER_TASK",
]

METHODS = ("auto", "vectorised", "native", "processors")


@dataclass(frozen=True)
class Inputs:
    """What the passes know of the records besides the joins: their Spark types, their encodings, the joiner."""

    key_type: str
    value_type: str
    json_keys: bool
    json_values: bool
    joiner: Callable[[Any, Any], Any] | None = None
    odd_keys: Mapping[int, str] = field(default_factory=dict)
    """Per scenario id, its first key that Spark compares differently from Python (:func:`odd_keys`)."""

    def key_refusal(self, scenario_id: int, where: str) -> str | None:
        """Why keys travelling as JSON text cannot be compared in Spark as in Python: a boolean or float key
        (``True == 1``, ``1.0 == 1`` in Python, different texts in Spark)."""
        found = self.odd_keys.get(scenario_id) if self.json_keys else None
        if found is None:
            return None
        return f"{where}, {found}: a boolean or float key may equal a key of another type in Python but not in Spark"


def odd_keys(scenarios: Mapping[int, Scenario]) -> dict[int, str]:
    """Per scenario, where its first boolean or float key is (``events[3].key is True``): see
    :meth:`Inputs.key_refusal`."""
    found = {}
    for scenario_id, scenario in scenarios.items():
        for index, event in enumerate(scenario.events):
            key = getattr(event, "key", None)
            if isinstance(key, (bool, float)):
                found[scenario_id] = f"events[{index}].key is {key!r}"
                break
    return found


@dataclass(frozen=True)
class Feed:
    """How the records reach a pass.

    ``records``: the ordered records frame (``scenario, partition, side, key, value, ts, offset, position, _order_ts,
    _tie, _side_rank``); ``partitioned``: already placed by Kafka task (:mod:`kjoin.spark.placement`). ``by_partition``:
    ``(frame, held rank)``, the records sorted by ``(scenario, partition, held side first, offset)``, which the
    per-task passes merge into processing order themselves (:func:`kjoin.spark.passes.merge.merged_batches`) in place
    of sorting ``records``. ``sort_rows``: sort the native plan's rows by step within each Spark partition (small
    driver-built inputs: rows in emission order per task, as the processors give them). ``split``: each Kafka task's
    records split by key across Spark tasks (:mod:`kjoin.spark.passes.split`): the per-task passes then run per key
    bucket, and the native plan is not taken."""

    records: Any
    spark_partitions: int | None
    partitioned: bool = False
    by_partition: tuple[Any, int] | None = None
    sort_rows: bool = False
    split: KeySplit | None = None
    task_counts: Mapping[int, int] | None = None
    """Each scenario's partition count: numbers the tasks of unplaced ``records`` so that each gets a Spark task of
    its own (:mod:`kjoin.spark.placement`)."""


@dataclass(frozen=True)
class Plan:
    """One way to compute the results: see the module's table."""

    name: str
    method: str
    """What ``method=`` chooses it, and what :attr:`kjoin.spark.SparkRun.method` says when it ran."""
    serves: Callable[[Mapping[int, JoinSpec]], bool]
    unsupported: Callable[[Mapping[int, JoinSpec], Inputs], str | None]
    results: Callable[[Feed, Mapping[int, JoinSpec], Inputs], Any]
    fallback: str = ""
    """What to pass instead when ``method=`` forces this plan and it refuses."""
    function: Callable[[Mapping[int, JoinSpec], Inputs], Callable[[Any], Any]] | None = None
    """A per-task plan's ``mapInArrow`` function over each task's records in processing order (:func:`per_task`);
    ``None`` for the native plan."""
    fields: frozenset[str] = frozenset()
    """The :class:`JoinSpec` fields this plan runs when they are set (:meth:`JoinSpec.set_fields`). A spec that sets
    another is refused (:meth:`refusal`): a field added to the spec is refused by every plan until its pass says it
    handles it, never silently ignored."""

    def refusal(self, specs: Mapping[int, JoinSpec], inputs: Inputs) -> str | None:
        """Why this plan cannot run ``specs`` exactly (its own rules first, then the fields it does not handle), or
        ``None``."""
        why = self.unsupported(specs, inputs)
        if why is not None:
            return why
        for scenario_id, spec in specs.items():
            unhandled = spec.unhandled(self.fields)
            if unhandled:
                where = f"scenario {scenario_id}" if len(specs) > 1 else "the join"
                return f"{where} sets {', '.join(unhandled)}, which the {self.name} pass does not handle"
        return None


def _per_task_plan(
    name: str,
    method: str,
    serves: Callable[[Mapping[int, JoinSpec]], bool],
    unsupported: Callable[[Mapping[int, JoinSpec], Inputs], str | None],
    function: Callable[[Mapping[int, JoinSpec], Inputs], Callable[[Any], Any]],
    fields: frozenset[str],
    fallback: str = "",
) -> Plan:
    def results(feed: Feed, specs: Mapping[int, JoinSpec], inputs: Inputs) -> Any:
        return per_task(feed, lambda specs: function(specs, inputs), specs, inputs)

    return Plan(name, method, serves, unsupported, results, fallback, function, fields)


# -- the per-task passes: mapInArrow over each Kafka task's records in processing order -------------------
_PROCESSING_ORDER = ("scenario", "partition", *PROCESSING_ORDER)
_TASK_COLUMNS = ("scenario", "partition", "side", "key", "value", "ts", "offset", "position")


PassBuilder = Callable[[Mapping[int, JoinSpec]], Callable[[Any], Any]]
"""A per-task pass: its ``mapInArrow`` function for the given joins (by scenario id)."""


def per_task(feed: Feed, build: PassBuilder, specs: Mapping[int, JoinSpec], inputs: Inputs) -> Any:
    """The result rows of a per-task pass (``build(specs)``: its ``mapInArrow`` function), fed each task's records
    in processing order: sorted by Spark when they carry their position (``feed.records``), merged from the
    input-partition sort otherwise (``feed.by_partition``); per key bucket when ``feed.split``."""
    schema = result_schema(inputs.key_type, inputs.value_type)
    if feed.split is not None:
        spill_rows = held_rows(feed.split.frame.sparkSession.conf.get(HELD_ROWS_CONF, None))
        return split_results(feed.split, build, specs, inputs.key_type, inputs.value_type, spill_rows)
    function = build(specs)
    if feed.by_partition is None:
        grouped = group_by_task(feed.records, feed.partitioned, feed.spark_partitions, feed.task_counts)
        ordered = grouped.sortWithinPartitions(*_PROCESSING_ORDER)
        return ordered.select(*_TASK_COLUMNS).mapInArrow(function, schema)
    frame, held_rank = feed.by_partition
    spill_rows = held_rows(frame.sparkSession.conf.get(HELD_ROWS_CONF, None))

    def merged(batches: Any) -> Any:
        return function(merged_batches(batches, held_rank, spill_rows))

    return frame.mapInArrow(merged, schema)


def _all(specs: Mapping[int, JoinSpec], test: Callable[[JoinSpec], bool]) -> bool:
    return bool(specs) and all(test(spec) for spec in specs.values())


def _streams(specs: Mapping[int, JoinSpec]) -> bool:
    return _all(specs, lambda spec: spec.join == "stream-stream")


def _versioned(specs: Mapping[int, JoinSpec]) -> bool:
    return _all(specs, lambda spec: spec.versioned)


def _native_results(feed: Feed, specs: Mapping[int, JoinSpec], inputs: Inputs) -> Any:
    results = native.native_results(
        feed.records,
        specs,
        inputs.key_type,
        inputs.value_type,
        json_values=inputs.json_values,
        spark_partitions=feed.spark_partitions,
        partitioned=feed.partitioned,
    )
    if feed.sort_rows:
        results = results.sortWithinPartitions("scenario", "partition", "step")
    return results


# The spec fields each plan runs when set. A field a plan's own ``unsupported`` refuses is left out (its sentence says
# why); one that does not concern the plan's joins (a stream-stream pass and the tables' options) is in, since the
# scenario's rules keep it at its default there.
_TABLES = frozenset({"partitions", "window", "left", "right", "grace_ms", "versioned_mode", "commit_every"})
_STREAM_FIELDS = _TABLES | {"materialized", "send_old_values", "caching"}
_VERSIONED_FIELDS = _TABLES | {"self_join", "optimize"}
_NATIVE_FIELDS = _TABLES - {"grace_ms"} | {"optimize"}
_PROCESSOR_FIELDS = _TABLES | {"self_join", "optimize", "then", "materialized", "send_old_values", "caching"}

_VECTORISED_FALLBACK = "Use method='auto' (falls back to the native plan or the processors) or method='processors'."

PLANS: tuple[Plan, ...] = (
    _per_task_plan(
        "vectorised_stream",
        "vectorised",
        _streams,
        vectorised_stream.unsupported,
        lambda specs, inputs: vectorised_stream.stream_function(
            dict(specs), json_keys=inputs.json_keys, json_values=inputs.json_values
        ),
        _STREAM_FIELDS,
        _VECTORISED_FALLBACK,
    ),
    _per_task_plan(
        "vectorised_versioned",
        "vectorised",
        lambda specs: not _streams(specs) and _versioned(specs),
        vectorised_versioned.unsupported,
        lambda specs, inputs: vectorised_versioned.versioned_function(
            dict(specs), json_keys=inputs.json_keys, json_values=inputs.json_values
        ),
        _VERSIONED_FIELDS,
        _VECTORISED_FALLBACK,
    ),
    _per_task_plan(
        "vectorised",
        "vectorised",
        lambda specs: not _streams(specs) and not _versioned(specs),
        vectorised.unsupported,
        lambda specs, inputs: vectorised.vectorised_function(dict(specs), json_values=inputs.json_values),
        _NATIVE_FIELDS,
        _VECTORISED_FALLBACK,
    ),
    Plan(
        "native",
        "native",
        lambda specs: True,
        native.unsupported,
        _native_results,
        "Use method='auto' (falls back to the processors) or method='processors'.",
        fields=_NATIVE_FIELDS,
    ),
    _per_task_plan(
        "processors",
        "processors",
        lambda specs: True,
        lambda specs, inputs: None,
        lambda specs, inputs: task_function(
            dict(specs), inputs.joiner, json_values=inputs.json_values, json_keys=inputs.json_keys
        ),
        _PROCESSOR_FIELDS,
    ),
)


class SlowPathWarning(UserWarning):
    """``method="auto"`` took kjoin's processors where the topics alone would not make it: the warning names
    the cost and what to change (``method="processors"`` says you chose it)."""


JSON_SLOW_PATH = (
    "value='json': this join runs on kjoin's processors, not the vectorised pass, because the processors "
    "decode each JSON value and the joiner re-encodes it canonically, which the array passes cannot reproduce "
    "exactly; that costs about 3x (133 s against 46 s for the same stream-table join with "
    "value='string'). If your joiner does not need the values decoded, read them with value='string' (the "
    "results then carry each producer's JSON text as written); to choose the processors knowingly, pass "
    "method='processors'"
)

AUTO_MIN_RECORDS_PER_TASK = 200
"""``auto`` runs the vectorised pass or the native plan only when Kafka tasks hold this many records on average
(when known: :func:`kjoin.spark.run_scenarios`); below, the processors. Measured on 1,000 small scenarios (about 15
records each, 2-core machine under load): processors 1.3 s, vectorised 5.4-6.9 s, native 5.8-7.3 s; the array
passes cost a few milliseconds per task and batch, the processors about 80 us per record."""


def execute(
    feed: Feed,
    specs: Mapping[int, JoinSpec],
    inputs: Inputs,
    method: str = "auto",
    records_per_task: float | None = None,
) -> tuple[Any, str]:
    """The results frame of the first plan in :data:`PLANS` that ``method`` allows, serves the joins and runs them
    exactly, and that plan's method. ``method`` forcing a plan that refuses: a :class:`SparkInputError` with its
    reason. ``records_per_task``: the mean records per Kafka task when known (``auto`` takes the processors for
    small tasks, :data:`AUTO_MIN_RECORDS_PER_TASK`)."""
    if method not in METHODS:
        raise SparkInputError(f"method: expected one of {' | '.join(METHODS)}, got {method!r}")
    if method == "auto" and inputs.json_values and not inputs.json_keys and records_per_task is None:
        warnings.warn(JSON_SLOW_PATH, SlowPathWarning, stacklevel=3)
    plan = choose(specs, inputs, method, records_per_task, split=feed.split is not None)
    return plan.results(feed, specs, inputs), plan.method


def choose(
    specs: Mapping[int, JoinSpec],
    inputs: Inputs,
    method: str = "auto",
    records_per_task: float | None = None,
    split: bool = False,
) -> Plan:
    """The plan :func:`execute` runs (``method`` checked by it); ``split``: the tasks are split by key (no native
    plan)."""
    if method == "auto" and records_per_task is not None and records_per_task < AUTO_MIN_RECORDS_PER_TASK:
        method = "processors"
    why: str | None = None
    for plan in PLANS:
        if method not in ("auto", plan.method) or not plan.serves(specs):
            continue
        if split and plan.name == "native":
            continue  # Spark SQL windows over each whole task: the key split is for the per-task passes
        why = plan.refusal(specs, inputs)
        if why is None:
            return plan
        if method == plan.method:
            raise SparkInputError(f"method={method!r} cannot run this join exactly: {why}. {plan.fallback}")
    raise SparkInputError(f"no pass can run this join exactly: {why}")  # the processors refused a field


def paired_results(
    feed: Feed, first: JoinSpec, second: JoinSpec, inputs: Inputs, method: str = "auto"
) -> Paired | None:
    """The differences between joining the records as ``first`` and as ``second``
    (:data:`kjoin.spark.passes.comparison.DIFF_SCHEMA`): both joins and their comparison in one per-task pass
    (:mod:`kjoin.spark.passes.paired`); ``None`` when a join's plan is not a per-task one, the feed is not the
    input-partition sort, or its tasks are split by key (then join twice and compare)."""
    if feed.by_partition is None or feed.split is not None:
        return None
    plans = [choose({0: spec}, inputs, method) for spec in (first, second)]
    if any(plan.function is None for plan in plans):
        return None
    frame, held_rank = feed.by_partition
    spill_rows = held_rows(frame.sparkSession.conf.get(HELD_ROWS_CONF, None))
    functions = [plan.function({0: spec}, inputs) for plan, spec in zip(plans, (first, second))]  # type: ignore[misc]
    fallbacks = _counter(frame.sparkSession)
    chunk_rows = diff_chunk_rows(frame.sparkSession)
    function = paired_function(
        functions[0], functions[1], held_rank, spill_rows, inputs.json_keys, inputs.json_values, fallbacks, chunk_rows
    )
    return Paired(frame.mapInArrow(function, DIFF_SCHEMA), fallbacks)


def _counter(spark: Any) -> Any:
    """A Spark accumulator starting at 0 (``None`` on Spark Connect, which has none)."""
    try:
        return spark.sparkContext.accumulator(0)
    except Exception:  # pyspark.errors' Connect errors: no SparkContext on the client
        return None
