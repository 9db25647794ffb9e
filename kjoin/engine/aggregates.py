"""Run the windowed-table design's aggregates and WTable joins, record by record: from a scenario
(:func:`run_aggregate`, what :func:`kjoin.run` does with an
:class:`~kjoin.scenario.AggregateSpec`) or from Python.

Each runner takes events (dicts ``{side, key, value, ts[, partition]}`` in processing order,
``side`` optional where there is one input) and returns an :class:`~kjoin.trace.AggregateTrace`:
a :class:`~kjoin.trace.Trace` with one step per event and the state after every step::

    >>> from kjoin.engine.aggregates import run_window_aggregate, TimeWindows
    >>> trace = run_window_aggregate([{"key": "p1", "value": 1, "ts": 5}], TimeWindows(10))
    >>> [o.render() for o in trace.outputs]
    ['p1@[0, 10)=1']

* :func:`run_table_aggregate`: a KTable grouped by a field of its value and aggregated.
* :func:`run_window_aggregate`: a stream aggregated in tumbling or hopping windows; the
  trace's :meth:`~kjoin.trace.AggregateTrace.wtable` is the resulting WTable.
* :func:`run_wtable_join`: one of the WTable joins of the windowed-table design (see :mod:`kjoin.joins.wtable`).
* :func:`run_hopping_join`: an inner stream-stream join over hopping windows.

The processors are in :mod:`kjoin.joins` (``aggregate``, ``window_aggregate``, ``wtable``, ``hopping``,
``session_aggregate``, ``sliding_aggregate``; built for a scenario by :mod:`kjoin.engine.windowed`); the stores in
:mod:`kjoin.stores` (``aggregate``, ``repartition``, ``segmented_window``); every run goes through the one record
loop, :func:`kjoin.engine.loop.run_steps`. This module also gathers the vocabulary these runs take (aggregations,
windows, shifters, selectors) and what reads their traces (:func:`~kjoin.consistency.consistency_marks`,
:func:`~kjoin.consistency.materialize`, :func:`~kjoin.trace.output_to_dict`), so that one import serves a notebook.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from ..consistency import consistency_marks, materialize
from ..joins.aggregate import (
    Aggregation,
    TableAggregate,
    count,
    custom,
    group_by_mapper,
    reduce,
    sum_of,
)
from ..joins.context import StepContext, default_joiner
from ..joins.hopping import HoppingWindowJoin
from ..joins.tasks import Tasks
from ..joins.window_aggregate import (
    DAY_MS,
    WEEK_MS,
    TimeWindows,
    Window,
    Windowed,
    WTable,
    WTableWriteError,
    window_aggregate_factory,
)
from ..joins.wtable import (
    RESULT_TYPES,
    Selector,
    Shifter,
    select_by_field,
    select_by_timestamp,
    shift_by,
    wtable_join_factory,
    wtable_layouts,
)
from ..records import Record
from ..scenario.aggregate import AGGREGATE_JOINS, AggregateConfig, AggregateSpec, event_records
from ..scenario.windowed import needs_windowed_runner
from ..scenario.fields import ScenarioError
from ..semantics import Semantics, parse_semantics
from ..state import StateLog
from ..stores.segmented_window import SegmentLayout
from ..trace import AggregateTrace, output_to_dict
from .loop import run_steps
from .windowed import windowed_factory

__all__ = [
    "AggregateConfig",
    "AggregateTrace",
    "TimeWindows",
    "Window",
    "Windowed",
    "WTable",
    "WTableWriteError",
    "SegmentLayout",
    "aggregate_processors",
    "run_aggregate",
    "run_spec",
    "run_table_aggregate",
    "run_window_aggregate",
    "run_windowed_aggregate",
    "run_wtable_join",
    "run_hopping_join",
    "hopping_join_counts",
    "output_to_dict",
    "consistency_marks",
    "materialize",
    "count",
    "sum_of",
    "reduce",
    "custom",
    "shift_by",
    "select_by_timestamp",
    "select_by_field",
    "JOINS",
    "DAY_MS",
    "WEEK_MS",
    "RESULT_TYPES",
]

JOINS = AGGREGATE_JOINS


# -- a scenario ---------------------------------------------------------------------------
def run_aggregate(spec: AggregateSpec, joiner: Callable[[Any, Any], Any] = default_joiner) -> AggregateTrace:
    """Run a windowed-table scenario; ``joiner(left, right)`` makes a WTable join's result values."""
    events, partitions = spec.events, spec.partitions
    try:
        if spec.join == "table-aggregate":
            return run_table_aggregate(
                events, spec.data["group_by"], spec.aggregation("aggregate"), partitions, spec.semantics()
            )
        if spec.join == "window-aggregate" and needs_windowed_runner(spec.data):
            return run_windowed_aggregate(
                events,
                spec.windows("window"),  # type: ignore[arg-type]
                spec.aggregation("aggregate"),
                spec.semantics(),
                partitions,
                **_final_results_options(spec),
            )
        if spec.join == "window-aggregate":
            return run_window_aggregate(
                events, spec.windows("window"), spec.aggregation("aggregate"), partitions, **spec.store_options()
            )
        return run_wtable_join(events, spec.join, partitions=partitions, joiner=joiner, **spec.wtable_options())
    except ValueError as error:
        raise ScenarioError(str(error), spec.source) from None


def run_spec(data: Any, source: str | None = None) -> AggregateTrace:
    """Validate and run a windowed-table scenario given as data (a dict as a scenario file holds)."""
    return run_aggregate(AggregateSpec.from_dict(data, source))


def aggregate_processors(spec: AggregateSpec) -> tuple[str, Callable[..., Any]]:
    """How an engine that runs tasks apart (Spark) builds a windowed-table scenario's processors.

    ``("task", (log, task) -> processor)`` for a windowed aggregate and the WTable joins: each
    task keeps its own stores and stream time, so tasks run independently. ``("scenario",
    (log) -> processor)`` for a table aggregate: one update can move a record between groups
    in two tasks (the repartition topic crosses tasks), so the whole topology runs as one.
    The processor's ``process(record, ctx)`` is the one the reference engine calls.
    """
    try:
        if spec.join == "table-aggregate":
            mapper, name = group_by_mapper(spec.data["group_by"])
            aggregation = spec.aggregation("aggregate")
            partitions, rules = spec.partitions, spec.semantics()
            return "scenario", lambda log: TableAggregate(log, partitions, mapper, aggregation, name, rules)
        if spec.join == "window-aggregate" and needs_windowed_runner(spec.data):
            return "task", windowed_factory(
                spec.windows("window"), spec.aggregation("aggregate"), spec.semantics(), **_final_results_options(spec)
            )
        if spec.join == "window-aggregate":
            return "task", window_aggregate_factory(
                spec.windows("window"), spec.aggregation("aggregate"), **spec.store_options()
            )
        return "task", wtable_join_factory(spec.join, **spec.wtable_options())
    except ValueError as error:
        raise ScenarioError(str(error), spec.source) from None


def _final_results_options(spec: AggregateSpec) -> dict[str, Any]:
    """A windowed aggregate's emit strategy, suppression and window store layout (:mod:`kjoin.scenario.windowed`'s
    fields)."""
    data = spec.data
    return {
        "emit": data.get("emit", "updates"),
        "suppress": data.get("suppress"),
        "retention_ms": data.get("retention_ms"),
        "segments": data.get("segments"),
    }


# -- the loop -----------------------------------------------------------------------------
def _run(
    config: AggregateConfig,
    records: list[Record],
    log: StateLog,
    process: Callable[[Record, StepContext], None],
    joiner: Callable[[Any, Any], Any] = default_joiner,
) -> AggregateTrace:
    steps, history = run_steps(log, records, process, joiner)
    return AggregateTrace(config, steps, history)


def _tasks(factory: Callable[[Any, int], Any], log: StateLog, records: list[Record]) -> Tasks:
    """The tasks of the partitions that have records, built before the first step (their stores
    show from the start); a scenario's other partitions get no task, so ``partitions: 100000``
    costs nothing."""
    return Tasks(factory, log, sorted({record.partition for record in records}))


# -- from Python --------------------------------------------------------------------------
def run_table_aggregate(
    events: Iterable[Mapping[str, Any]],
    group_by: str | Callable[[Any, Any], Any],
    aggregation: Aggregation | None = None,
    partitions: int = 1,
    semantics: Semantics | str | None = None,
) -> AggregateTrace:
    """``table.groupBy(group_by).aggregate(...)`` over table updates (``value`` null: a delete).

    ``group_by``: a field path of the value (``"page"``, ``"a.b"``) or ``(key, value) -> group``.
    ``aggregation``: :func:`count` (default), :func:`sum_of`, :func:`reduce` or :func:`custom`.
    ``semantics``: the Kafka version whose rules apply (default: the latest); before 3.5 an update that keeps its
    group updates the aggregate twice, the subtract then the add (KIP-904).
    """
    aggregation = aggregation or count()
    mapper, name = group_by_mapper(group_by)
    log = StateLog()
    rules = parse_semantics(semantics)
    topology = TableAggregate(log, partitions, mapper, aggregation, name, rules)
    config = AggregateConfig(
        "table-aggregate", aggregation.name, partitions, {"group_by": group_by, "semantics": rules}
    )
    return _run(config, event_records(events, partitions), log, topology.process)


def run_window_aggregate(
    events: Iterable[Mapping[str, Any]],
    windows: TimeWindows,
    aggregation: Aggregation | None = None,
    partitions: int = 1,
    retention_ms: int | None = None,
    segments: int | None = None,
    semantics: Semantics | str | None = None,
) -> AggregateTrace:
    """``stream.groupByKey().windowedBy(windows).aggregate(...)``; the result is a WTable.

    ``retention_ms`` (default ``size + grace``) and ``segments`` (default: Kafka's interval,
    ``max(retention / 2, 60 s)``; else the seed's rolling stores) lay out the window store.
    ``semantics``: the Kafka version whose rules apply (default: the latest).
    """
    aggregation = aggregation or count()
    log = StateLog()
    rules = parse_semantics(semantics)
    if retention_ms is None:
        retention_ms = windows.store_retention_ms(rules, settable="retention_ms")
    factory = window_aggregate_factory(windows, aggregation, retention_ms, segments, rules)
    records = event_records(events, partitions)
    tasks = _tasks(factory, log, records)
    options = {"windows": windows, "layout": windows.layout(retention_ms, segments), "semantics": rules}
    config = AggregateConfig("window-aggregate", aggregation.name, partitions, options)
    return _run(config, records, log, lambda record, ctx: tasks[record.partition].process(record, ctx))


def run_windowed_aggregate(
    events: Iterable[Mapping[str, Any]],
    windows: Any,
    aggregation: Aggregation,
    semantics: Semantics,
    partitions: int = 1,
    emit: str = "updates",
    suppress: str | None = None,
    retention_ms: int | None = None,
    segments: int | None = None,
) -> AggregateTrace:
    """A windowed aggregate of any window kind (time, session, sliding), emit strategy and suppression
    (:mod:`kjoin.engine.windowed`)."""
    factory = windowed_factory(windows, aggregation, semantics, emit, suppress, retention_ms, segments)
    log = StateLog()
    records = event_records(events, partitions)
    tasks = _tasks(factory, log, records)
    options: dict[str, Any] = {"windows": windows, "semantics": semantics, "emit": emit, "suppress": suppress}
    if isinstance(windows, TimeWindows):
        options["layout"] = windows.layout(retention_ms, segments)
    config = AggregateConfig("window-aggregate", aggregation.name, partitions, options)
    return _run(config, records, log, lambda record, ctx: tasks[record.partition].process(record, ctx))


def run_wtable_join(
    events: Iterable[Mapping[str, Any]],
    join: str,
    windows: TimeWindows,
    variant: str = "left",
    aggregation: Aggregation | None = None,
    right_aggregation: Aggregation | None = None,
    right_windows: TimeWindows | None = None,
    shifter: Shifter | None = None,
    selector: Selector | None = None,
    joiner: Callable[[Any, Any], Any] = default_joiner,
    partitions: int = 1,
    self_join: bool = False,
    retention_ms: int | None = None,
    segments: int | None = None,
    semantics: Semantics | str | None = None,
) -> AggregateTrace:
    """Run one WTable join of the windowed-table design. The WTable side(s) are windowed aggregates of the side's
    events.

    * ``wtable-wtable``: both sides are streams aggregated in ``windows`` (the right in
      ``right_windows`` if given, with a ``shifter``); ``variant`` inner, left or outer.
    * ``wtable-table``: the left side is aggregated; right events are table updates.
    * ``stream-wtable`` / ``table-wtable``: left events are stream records / table updates; the
      right side is aggregated; ``selector(key, value, ts)`` picks the window to look up.

    ``self_join``: a ``wtable-wtable`` left join of one WTable with itself (every event is a
    record of the one stream), e.g. today's page views against last week's with
    ``shifter=shift_by(-WEEK_MS)``. ``retention_ms`` (at least size + grace, the default) and
    ``segments`` set each window store's layout: a shifted lookup finds last week's window only
    if the store still keeps it (and, in Kafka 3.4+, only while the window is within the retention:
    ``semantics``, default the latest).
    """
    factory = wtable_join_factory(
        join,
        windows,
        variant,
        aggregation,
        right_aggregation,
        right_windows,
        shifter,
        selector,
        self_join,
        retention_ms,
        segments,
        semantics,
    )
    log = StateLog()
    records = event_records(events, partitions)
    tasks = _tasks(factory, log, records)
    layouts = wtable_layouts(join, windows, right_windows, retention_ms, segments, parse_semantics(semantics))
    options = {
        "windows": windows,
        "right_windows": right_windows or windows,
        "layout": layouts[0],
        "right_layout": layouts[1],
        "shifter": shifter,
        "selector": selector,
        "self_join": self_join,
        "semantics": parse_semantics(semantics),
    }
    config = AggregateConfig(join, variant, partitions, options)
    return _run(
        config,
        records,
        log,
        lambda record, ctx: tasks[record.partition].process(record, ctx),
        joiner,
    )


def run_hopping_join(
    events: Iterable[Mapping[str, Any]],
    windows: TimeWindows,
    per: str = "pair",
    joiner: Callable[[Any, Any], Any] = default_joiner,
    partitions: int = 1,
) -> AggregateTrace:
    """An inner stream-stream join over hopping ``windows``: ``per="pair"`` (the seed's choice)
    emits one output per matching pair, ``per="window"`` one per shared window."""
    log = StateLog()
    records = event_records(events, partitions)
    tasks = _tasks(lambda task_log, task: HoppingWindowJoin(task_log, task, windows, per), log, records)
    config = AggregateConfig("hopping-join", "inner", partitions, {"windows": windows, "per": per})
    return _run(
        config,
        records,
        log,
        lambda record, ctx: tasks[record.partition].process(record, ctx),
        joiner,
    )


def hopping_join_counts(events: Iterable[Mapping[str, Any]], windows: TimeWindows) -> dict[str, int]:
    """Both counts on the same input: ``per_pair`` outputs (the seed's choice) and ``per_window`` outputs."""
    events = list(events)
    return {
        "per_pair": len(run_hopping_join(events, windows, "pair").outputs),
        "per_window": len(run_hopping_join(events, windows, "window").outputs),
    }
