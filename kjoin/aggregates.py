"""Run seed 000's aggregates and WTable joins from Python, record by record.

Each function takes events (dicts ``{side, key, value, ts[, partition]}`` in processing order,
``side`` optional where there is one input) and returns an :class:`AggregateTrace`: a
:class:`~kjoin.trace.Trace` with one step per event and the state after every step::

    >>> from kjoin.aggregates import run_window_aggregate, TimeWindows
    >>> trace = run_window_aggregate([{"key": "p1", "value": 1, "ts": 5}], TimeWindows(10))
    >>> [o.render() for o in trace.outputs]
    ['p1@[0, 10)=1']

* :func:`run_table_aggregate`: a KTable grouped by a field of its value and aggregated.
* :func:`run_window_aggregate`: a stream aggregated in tumbling or hopping windows; the
  trace's :meth:`AggregateTrace.wtable` is the resulting WTable.
* :func:`run_wtable_join`: one of the WTable joins of seed 000 (see :mod:`kjoin.joins.wtable`).

:func:`output_to_dict` writes any output as JSON-ready data; a windowed key becomes
``key`` plus ``window: {start_ms, end_ms}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from .aggregate_stores import SegmentLayout
from .joins.aggregate import Aggregation, AggregateOutput, TableAggregate, count, custom, field_of, reduce, sum_of
from .joins.context import StepContext, default_joiner
from .joins.window_aggregate import TimeWindows, Window, WindowAggregate, Windowed, WTable, WTableWriteError
from .joins.wtable import (
    RESULT_TYPES,
    WTABLE_JOINS,
    Selector,
    Shifter,
    StreamWTableJoin,
    TableWTableJoin,
    WTableTableJoin,
    WTableWTableJoin,
    select_by_field,
    select_by_timestamp,
    shift_by,
)
from .records import Output, Record, Side, render_value
from .semantics import Semantics, parse_semantics
from .state import StateHistory, StateLog
from .trace import Step, Trace

__all__ = [
    "AggregateConfig",
    "AggregateTrace",
    "TimeWindows",
    "Window",
    "Windowed",
    "WTable",
    "WTableWriteError",
    "SegmentLayout",
    "run_table_aggregate",
    "run_window_aggregate",
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

JOINS = ("table-aggregate", "window-aggregate", *WTABLE_JOINS)
DAY_MS = 24 * 60 * 60 * 1000
WEEK_MS = 7 * DAY_MS


@dataclass(frozen=True)
class AggregateConfig:
    """What a run was asked to do (the trace's ``scenario``): the join name, variant and options."""

    join: str
    variant: str = "left"
    partitions: int = 1
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def window(self) -> None:
        """No join window (``JoinWindows``) here: a windowed aggregate's windows are
        ``options["windows"]``. Views that draw a stream-stream join's window read ``None``."""
        return None


class AggregateTrace(Trace):
    """A trace of an aggregate or a WTable join; :meth:`wtable` gives a windowed result."""

    def wtable(self) -> WTable:
        """The WTable of a windowed aggregate (or of a join whose result is a WTable)."""
        if self.scenario.join == "window-aggregate":
            return WTable(o for o in self.outputs if isinstance(o, AggregateOutput))
        if RESULT_TYPES.get(self.scenario.join) == "WTable":
            return WTable(_as_aggregate_output(o) for o in self.outputs)
        raise TypeError(
            f"a {self.scenario.join} result is a {RESULT_TYPES.get(self.scenario.join, 'KTable')}, not a WTable"
        )


def _as_aggregate_output(output: Output) -> AggregateOutput:
    key = output.key
    assert isinstance(key, Windowed)
    return AggregateOutput(
        key.key,
        output.value,
        None,
        output.ts,
        output.tombstone,
        "join",
        output.partition,
        output.origin_step,
        (key.window.start_ms, key.window.end_ms),
    )


def output_to_dict(output: Any) -> dict[str, Any]:
    """An output as JSON-ready data; a :class:`Windowed` key becomes ``key`` and ``window``."""
    data = output.to_dict()
    key = data.get("key")
    if isinstance(key, Windowed):
        data["key"] = key.key
        data["window"] = key.window.to_dict()
    return data


def materialize(outputs: Iterable[Any]) -> dict[Any, Any]:
    """A changelog as a table: the latest value of every key; a tombstone deletes the key."""
    table: dict[Any, Any] = {}
    for output in outputs:
        key = output.key if getattr(output, "window", None) is None else Windowed(output.key, Window(*output.window))
        if output.tombstone:
            table.pop(key, None)
        else:
            table[key] = output.value
    return table


# -- events -------------------------------------------------------------------------------
def _records(events: Iterable[Mapping[str, Any]], partitions: int, default_side: Side = Side.LEFT) -> list[Record]:
    from .partitioner import default_partition

    from .records import kafka_keys

    events = list(events)
    key_of = kafka_keys(event.get("key") for event in events if isinstance(event, Mapping))
    records = []
    for index, event in enumerate(events):
        missing = [name for name in ("key", "ts") if name not in event]
        if missing:
            raise ValueError(f"events[{index}] has no {', '.join(missing)}: every event needs key, value and ts")
        ts = event["ts"]
        if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
            raise ValueError(f"events[{index}].ts is {ts!r}: timestamps are integer milliseconds >= 0")
        side = Side(event.get("side", default_side.value))
        key = key_of(event["key"])
        partition = event.get("partition")
        if partition is None:
            partition = default_partition(key, partitions) if (key is not None and partitions > 1) else 0
        if not 0 <= partition < partitions:
            raise ValueError(f"events[{index}].partition is {partition}, outside 0..{partitions - 1}")
        records.append(Record(side, key, event.get("value"), ts, partition, index))
    return records


def _run(
    config: AggregateConfig,
    records: list[Record],
    log: StateLog,
    process: Callable[[Record, StepContext], None],
    joiner: Callable[[Any, Any], Any] = default_joiner,
) -> AggregateTrace:
    history = StateHistory(log.copy())
    log.take_changes()
    steps: list[Step] = []
    for index, record in enumerate(records):
        ctx = StepContext(index, record, joiner)
        process(record, ctx)
        if ctx.fate is None:  # pragma: no cover - every processor settles
            raise AssertionError(f"step {index}: the processor did not settle the record's fate")
        history.record(log.take_changes(), log)
        steps.append(
            Step(index, record, record.partition, tuple(ctx.outputs), ctx.fate, ctx.reason, ctx.until_ms, ctx.explain())
        )
    return AggregateTrace(config, steps, history)  # type: ignore[arg-type]


def _tasks(factory: Callable[[Any, int], Any], log: StateLog, records: list[Record]) -> Any:
    """The tasks of the partitions that have records, built before the first step (their stores
    show from the start); a scenario's other partitions get no task, so ``partitions: 100000``
    costs nothing."""
    from .joins.tasks import Tasks

    return Tasks(factory, log, sorted({record.partition for record in records}))


def _group_by(group_by: str | Callable[[Any, Any], Any]) -> tuple[Callable[[Any, Any], Any], str]:
    if callable(group_by):
        return group_by, "group-by mapper"

    def mapper(key: Any, value: Any) -> Any:
        group = field_of(value, group_by)
        if group is not None and not isinstance(group, (str, int, float, bool)):
            raise ValueError(
                f"the group-by field {group_by!r} of value {render_value(value)} is {render_value(group)}; a group "
                "is a key: a string, number or null"
            )
        return group

    return mapper, f"group-by on field {group_by!r}"


# -- the three runners --------------------------------------------------------------------
def run_table_aggregate(
    events: Iterable[Mapping[str, Any]],
    group_by: str | Callable[[Any, Any], Any],
    aggregation: Aggregation | None = None,
    partitions: int = 1,
) -> AggregateTrace:
    """``table.groupBy(group_by).aggregate(...)`` over table updates (``value`` null: a delete).

    ``group_by``: a field path of the value (``"page"``, ``"a.b"``) or ``(key, value) -> group``.
    ``aggregation``: :func:`count` (default), :func:`sum_of`, :func:`reduce` or :func:`custom`.
    """
    aggregation = aggregation or count()
    mapper, name = _group_by(group_by)
    log = StateLog()
    topology = TableAggregate(log, partitions, mapper, aggregation, name)
    config = AggregateConfig("table-aggregate", aggregation.name, partitions, {"group_by": group_by})
    return _run(config, _records(events, partitions), log, topology.process)


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
    factory = window_aggregate_factory(windows, aggregation, retention_ms, segments, semantics)
    records = _records(events, partitions)
    tasks = _tasks(factory, log, records)
    options = {
        "windows": windows,
        "layout": windows.layout(retention_ms, segments),
        "semantics": parse_semantics(semantics),
    }
    config = AggregateConfig("window-aggregate", aggregation.name, partitions, options)
    return _run(config, records, log, lambda record, ctx: tasks[record.partition].process(record, ctx))


def window_aggregate_factory(
    windows: TimeWindows,
    aggregation: Aggregation,
    retention_ms: int | None = None,
    segments: int | None = None,
    semantics: Semantics | str | None = None,
) -> Callable[[StateLog, int], WindowAggregate]:
    """``(log, task) -> processor`` of one task of a windowed aggregate (the Spark engine builds
    its tasks with it, so both engines run the same processors)."""
    layout = windows.layout(retention_ms, segments)
    rules = parse_semantics(semantics)
    return lambda log, task: WindowAggregate(log, task, windows, aggregation, layout=layout, semantics=rules)


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
    """Run one WTable join of seed 000. The WTable side(s) are windowed aggregates of the side's events.

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
    records = _records(events, partitions)
    tasks = _tasks(factory, log, records)
    options = {
        "windows": windows,
        "right_windows": right_windows or windows,
        "layout": windows.layout(retention_ms, segments),
        "right_layout": (right_windows or windows).layout(retention_ms, segments),
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


def wtable_join_factory(
    join: str,
    windows: TimeWindows,
    variant: str = "left",
    aggregation: Aggregation | None = None,
    right_aggregation: Aggregation | None = None,
    right_windows: TimeWindows | None = None,
    shifter: Shifter | None = None,
    selector: Selector | None = None,
    self_join: bool = False,
    retention_ms: int | None = None,
    segments: int | None = None,
    semantics: Semantics | str | None = None,
) -> Callable[[StateLog, int], Any]:
    """``(log, task) -> processor`` of one task of a WTable join, after checking the options
    (the arguments of :func:`run_wtable_join`)."""
    if join not in WTABLE_JOINS:
        raise ValueError(f"join must be one of {', '.join(WTABLE_JOINS)}, not {join!r}")
    if variant not in ("inner", "left", "outer"):
        raise ValueError(f"variant must be inner, left or outer, not {variant!r}")
    if join != "wtable-wtable" and variant != "left":
        raise ValueError(f"{join} exists only as a left join in the seed's API, not {variant}")
    if join in ("stream-wtable", "table-wtable") and selector is None:
        raise ValueError(
            f"{join} needs a window selector: (key, value, ts) -> window, e.g. select_by_timestamp(windows)"
        )
    left_agg = aggregation or count()
    right_agg = right_aggregation or left_agg
    left_layout = windows.layout(retention_ms, segments)
    right_layout = (right_windows or windows).layout(retention_ms, segments)
    rules = parse_semantics(semantics)

    def new(log: StateLog, task: int) -> Any:
        if join == "wtable-wtable":
            layouts = (left_layout, right_layout)
            right = right_windows or windows
            return WTableWTableJoin(
                log, task, variant, windows, right, left_agg, right_agg, shifter, self_join, layouts, rules
            )
        if join == "wtable-table":
            return WTableTableJoin(log, task, windows, left_agg, left_layout, rules)
        if join == "stream-wtable":
            return StreamWTableJoin(log, task, windows, right_agg, selector, right_layout, rules)  # type: ignore[arg-type]
        return TableWTableJoin(log, task, windows, right_agg, selector, right_layout, rules)  # type: ignore[arg-type]

    return new


def run_hopping_join(
    events: Iterable[Mapping[str, Any]],
    windows: TimeWindows,
    per: str = "pair",
    joiner: Callable[[Any, Any], Any] = default_joiner,
    partitions: int = 1,
) -> AggregateTrace:
    """An inner stream-stream join over hopping ``windows``: ``per="pair"`` (the seed's choice)
    emits one output per matching pair, ``per="window"`` one per shared window."""
    from .joins.hopping import HoppingWindowJoin

    log = StateLog()
    records = _records(events, partitions)
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


# -- consistency: does the materialized result equal the join of the materialized inputs? -------
def consistency_marks(trace: Trace) -> list[bool]:
    """After each step of a table join: does materializing its results so far give the SQL join of
    its materialized inputs (the stores as they are after the step)?

    Works for ``table-table`` traces of :func:`kjoin.run` (unversioned, one join) and for the
    ``wtable-wtable``, ``wtable-table`` and ``table-wtable`` traces of :func:`run_wtable_join`.
    Results are compared as ``(left, right)`` pairs, so the joiner does not matter. Seed 000
    says table joins are eventually consistent: the marks are true whenever the inputs are
    quiet. A window dropped from its store (behind the retention) is no longer an input, while
    its results stay in the result table: the marks then turn false.
    """
    join = trace.scenario.join
    if join not in ("table-table", "wtable-wtable", "wtable-table", "table-wtable"):
        raise ValueError(f"consistency is defined for table joins, not {join} (a stream has no materialization)")
    marks = []
    result: dict[Any, Any] = {}
    for step in trace:
        for output in step.outputs:
            if output.tombstone:
                result.pop(output.key, None)
            else:
                result[output.key] = (output.left, output.right)
        marks.append(result == _join_of_inputs(trace, step.index))
    return marks


def _rows(trace: Trace, step: int, name: str) -> dict[Any, Any]:
    """Every task's rows of store ``name``: tables as ``key -> value``, window stores as ``Windowed -> aggregate``."""
    rows: dict[Any, Any] = {}
    for store, entries in trace.state_at(step).stores.items():
        if store.name != name:
            continue
        for entry, row in entries.items():
            if isinstance(entry, tuple) and name.endswith("window aggregate store"):
                rows[Windowed(entry[0], Window(entry[1], row[2]))] = row[0]
            else:
                rows[entry] = row[0]
    return rows


def _join_of_inputs(trace: Trace, step: int) -> dict[Any, Any]:
    config = trace.scenario
    variant = config.variant
    if config.join == "table-table":
        return _sql_join(variant, _rows(trace, step, "left table"), _rows(trace, step, "right table"))
    if config.join == "wtable-table":
        table = _rows(trace, step, "right table")
        return {
            key: (agg, table.get(key.key)) for key, agg in _rows(trace, step, "left window aggregate store").items()
        }
    if config.join == "table-wtable":
        select = config.options["selector"]
        table, wtable = _rows(trace, step, "left table"), _rows(trace, step, "right window aggregate store")
        found = {}
        for key, value in table.items():
            window = select(key, value, 0)
            found[key] = (value, None if window is None else wtable.get(Windowed(key, window)))
        return found
    shifter = config.options.get("shifter")
    if config.options.get("self_join"):
        left = right = _rows(trace, step, "window aggregate store")
    else:
        left = _rows(trace, step, "left window aggregate store")
        right = _rows(trace, step, "right window aggregate store")
    if shifter is None:
        return _sql_join(variant, left, right)
    return {key: (agg, right.get(Windowed(key.key, shifter(key.window)))) for key, agg in left.items()}


def _sql_join(variant: str, left: Mapping[Any, Any], right: Mapping[Any, Any]) -> dict[Any, Any]:
    keys = {"inner": left.keys() & right.keys(), "left": set(left), "outer": left.keys() | right.keys()}[variant]
    return {key: (left.get(key), right.get(key)) for key in keys}
