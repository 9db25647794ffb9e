"""Run a scenario through the reference engine, one record at a time.

Each partition is a Kafka task with its own join instance: its own stores and its own
stream time. A record goes to the task of its partition; the steps keep the scenario's
processing order across tasks. Only tasks that have records are built: a scenario with a
million partitions and three records has at most three tasks' worth of state. The first
record's task is built before the first step, any other when its first record arrives
(:mod:`kjoin.joins.tasks`), so the state after a step never depends on later records. A
foreign-key join's tasks talk to each other: every task its records or their foreign keys
reach is built before the first step. With ``one_instance`` the tasks run in one application
instance and share what Kafka shares there (a left/outer stream-stream join's time tracker
before KAFKA-14862: :class:`kjoin.joins.stream_stream.InstanceTimes`), so the processing order
across tasks matters.

The engine is the edge where a scenario becomes processors: each processor takes only its
own options (variant, semantics, window, table options), never the scenario. Every record
reaches its processor through the source stage (:mod:`kjoin.engine.source`), which the Spark
engine's processors pass runs too.

A foreign-key join also sends messages between its tasks. There a step is either an input
record (a :class:`~kjoin.trace.Step`) or the delivery of one message (a
:class:`~kjoin.trace.DeliveryStep`); the scheduler of the scenario's ``delivery`` mode
decides when messages are delivered (:mod:`kjoin.joins.fk_delivery`).

The windowed-table design's aggregates and WTable joins (an :class:`~kjoin.scenario.AggregateSpec`) build their
processors in :mod:`kjoin.engine.aggregates`. Every scenario runs through the one record loop,
:func:`kjoin.engine.loop.run_steps`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

from ..fates import Fate, Reason
from ..joins import StepContext, StreamStreamJoin, StreamTableJoin, TableTableJoin, default_joiner
from ..joins.contract import Processor
from ..joins.stream_stream import InstanceTimes
from ..joins.fk_delivery import scheduler_for
from ..joins.foreign_key import ForeignKeyJoin, busy_tasks
from ..joins.global_table import GlobalTableJoin
from ..joins.options import ForeignKeyOptions
from ..joins.self_join import OptimizedSelfJoin
from ..joins.tasks import Tasks
from ..joins.chains import ResultSink, SelfJoin, StreamChain, TablePipeline
from ..joins.versioned import VersionedStreamTableJoin, VersionedTableTableJoin
from ..ordering import ties_taken_first
from ..records import Output, OutputKind, Record, Side
from ..scenario import AggregateSpec, Scenario, ScenarioError
from ..state import StateLog
from ..stores.global_table import GLOBAL_TASK
from ..trace import Trace
from .aggregates import run_aggregate
from .loop import run_steps
from .source import source_stage

__all__ = ["run", "new_join", "foreign_key_options"]


def run(
    scenario: Scenario | AggregateSpec,
    joiner: Callable[[Any, Any], Any] = default_joiner,
    make_join: Callable[[Scenario, StateLog, int], Processor] | None = None,
    explain_ties: bool = True,
) -> Trace:
    """Process every event of ``scenario`` and return the trace.

    ``joiner(left, right)`` computes each result's value; the default renders ``A-a``.
    ``make_join(scenario, log, task)`` builds a primary-key join's processor for a task (default
    :func:`new_join`; the Spark drill-down of one key passes its own). An
    aggregate or windowed-table scenario (an :class:`~kjoin.scenario.AggregateSpec`, what
    :func:`kjoin.load_scenario` gives for those ``join:`` names) builds its processors in
    :mod:`kjoin.engine.aggregates`. ``explain_ties``: a step that joined nothing while its partner waited behind
    it on a tie says so (:class:`kjoin.ordering.TakenFirst`); off for a run of some of a task's records only (the
    Spark drill-down of one key), where the record taken before is not the task's.
    """
    if isinstance(scenario, AggregateSpec):
        return run_aggregate(scenario, joiner)
    if not isinstance(scenario, Scenario):
        raise ScenarioError(
            f"kjoin.run: expected a kjoin.Scenario, got {type(scenario).__name__}; build one with "
            "kjoin.Scenario.from_dict(data), kjoin.load_scenario(path) or kjoin.Scenario.from_records(...)"
        )
    if not callable(joiner):
        raise ScenarioError(f"kjoin.run: the joiner must be a function (left, right) -> value, got {joiner!r:.60}")
    if scenario.join == "fk":
        return _run_foreign_key(scenario, joiner)
    if scenario.join == "stream-globaltable":
        return _run_global_table(scenario, joiner)
    log = StateLog()
    records = scenario.records()
    # a task without records has no processor and no stores
    tasks = Tasks(_task_builder(scenario, log, make_join), log, _first_task(records))
    waits = scenario.arrival_waits() if scenario.arrival is not None else None
    ties = ties_taken_first(records, scenario.arrival) if explain_ties else [None] * len(records)

    def note(index: int, record: Record, outputs: Sequence[Output]) -> str | None:
        """Why the step's verdict depends on arrival: what the task did not wait for, or the tie that put the
        record's partner after it (said only when the record looked up and joined nothing)."""
        wait = None if waits is None else waits[index]
        if wait is not None:
            return wait.explain(record)
        tie = ties[index]
        if tie is None or any(output.kind is OutputKind.JOINED for output in outputs):
            return None
        if scenario.join == "stream-table" and record.side is Side.RIGHT:
            return None  # a table update looks nothing up
        return tie.explain(record)

    stage = source_stage(scenario)
    steps, history = run_steps(
        log, records, lambda record, ctx: tasks[record.partition].process(stage(record), ctx), joiner, note=note
    )
    return Trace(scenario, steps, history)


def _task_builder(scenario: Scenario, log: StateLog, make_join: Callable[..., Any] | None) -> Callable[..., Any]:
    """``build(task_log, task)``: one task's processor, by ``make_join`` or :func:`new_join`; with ``one_instance``
    every task's joins get the run's one :class:`InstanceTimes` (what an instance's tasks share)."""
    if make_join is not None:
        return lambda task_log, task: make_join(scenario, task_log, task)
    if not scenario.one_instance:
        return lambda task_log, task: new_join(scenario, task_log, task)
    instance = InstanceTimes(log)
    return lambda task_log, task: new_join(scenario, task_log, task, instance)


def _first_task(records: list[Any]) -> list[int]:
    """The task built before the first step: the first record's (every other task is built
    when its first record or message arrives)."""
    return [records[0].partition if records else 0]


def new_join(scenario: Scenario, log: StateLog, task: int, instance: InstanceTimes | None = None) -> Processor:
    """The join processor of one task of ``scenario`` (a primary-key join), writing its
    stores through ``log``. Call ``process(source_stage(record), ctx)`` on it for each of the task's records
    (:mod:`kjoin.engine.source`); its ``REASONS`` are the reasons it may give. ``instance``: what the tasks of one
    application instance share (``scenario.one_instance``; one for every task of a run)."""
    if scenario.join == "stream-globaltable":  # one global store for every task: only kjoin.run builds it
        raise ScenarioError(
            "join: stream-globaltable runs in the reference engine (kjoin.run): its global store is shared by every "
            "task, which a per-task processor cannot hold"
        )
    if scenario.join == "stream-stream":
        return _stream_stream(scenario, log, task, instance)
    if scenario.join == "stream-table":
        if scenario.right.versioned:
            assert scenario.right.history_retention_ms is not None
            return VersionedStreamTableJoin(
                log, task, scenario.variant, scenario.semantics, scenario.right.history_retention_ms, scenario.grace_ms
            )
        return StreamTableJoin(log, task, scenario.variant, scenario.semantics)
    return _table_table(scenario, log, task)


def _stream_stream(scenario: Scenario, log: StateLog, task: int, instance: InstanceTimes | None) -> Processor:
    window = scenario.window
    assert window is not None
    if scenario.optimize:
        return OptimizedSelfJoin(log, task, window, scenario.semantics)
    first = StreamStreamJoin(log, task, scenario.variant, window, scenario.semantics, instance=instance)
    if scenario.self_join:
        return SelfJoin(first)
    if not scenario.then:
        return first
    stages = [first]
    for number, chained in enumerate(scenario.then, start=2):
        stages.append(
            StreamStreamJoin(
                log,
                task,
                chained.variant,
                chained.window or window,
                scenario.semantics,
                prefix=f"join {number}: ",
                instance=instance,
            )
        )
    return StreamChain(stages)


def _table_table(scenario: Scenario, log: StateLog, task: int) -> Processor:
    if scenario.left.versioned or scenario.right.versioned:
        first: TableTableJoin = VersionedTableTableJoin(
            log, task, scenario.variant, scenario.semantics, scenario.left, scenario.right, scenario.versioned_mode
        )
    else:
        first = TableTableJoin(log, task, scenario.variant, scenario.semantics)
    if not (scenario.then or scenario.materialized or scenario.send_old_values or scenario.caching):
        return first
    stages = [first]
    for chained in scenario.then:
        stages.append(
            TableTableJoin(
                log, task, chained.variant, scenario.semantics, left=stages[-1], right=first.tables[Side.RIGHT]
            )
        )
    return TablePipeline(
        log,
        task,
        stages,
        send_old_values=scenario.send_old_values,
        materialized=scenario.materialized,
        caching=scenario.caching,
        commit_every=scenario.commit_every,
    )


# -- KStream-GlobalKTable joins: one global store for every task ---------------------------
def _run_global_table(scenario: Scenario, joiner: Callable[[Any, Any], Any]) -> Trace:
    """The stream's records at their tasks, the global topic's records at the global store, in the scenario's
    order (TopologyTestDriver's: a global record is applied when it is piped), through the one record loop. The
    join keeps no state per task, so one processor serves them all; a global record's step is shown at
    :data:`~kjoin.stores.global_table.GLOBAL_TASK`."""
    log = StateLog()
    join = GlobalTableJoin(log, scenario.variant, scenario.semantics, scenario.foreign_key)
    script = [
        record if record.side is Side.LEFT else dataclasses.replace(record, partition=GLOBAL_TASK)
        for record in scenario.records()
    ]
    stage = source_stage(scenario)
    steps, history = run_steps(log, script, lambda record, ctx: join.process(stage(record), ctx), joiner)
    return Trace(scenario, steps, history)


# -- foreign-key joins: inputs and message deliveries ---------------------------------------
def foreign_key_options(scenario: Scenario) -> ForeignKeyOptions:
    """The options a foreign-key join's processors take from ``scenario``."""
    assert scenario.foreign_key is not None
    return ForeignKeyOptions(
        scenario.variant,
        scenario.semantics,
        scenario.foreign_key,
        scenario.hash_check,
        scenario.left,
        scenario.right,
        scenario.key_function(),
    )


def _run_foreign_key(scenario: Scenario, joiner: Callable[[Any, Any], Any]) -> Trace:
    """Input records and message deliveries, each a step; the scenario's delivery mode's
    scheduler decides when each message is delivered (:mod:`kjoin.joins.fk_delivery`)."""
    log = StateLog()
    options = foreign_key_options(scenario)
    busy = busy_tasks(options, scenario.partitions, scenario.records())  # tasks talk: all are built first
    join = ForeignKeyJoin(log, options, scenario.partitions, busy)
    caching = "result" in scenario.caching
    results = Tasks(
        lambda task_log, task: ResultSink(task_log, task, caching, scenario.semantics.drops_idempotent_table_updates),
        log,
        busy if scenario.materialized else (),
    )
    scheduler = scheduler_for(scenario.delivery, join.in_flight)
    since_commit: dict[int, int] = {}  # task -> the records it processed since its last commit

    def settle(ctx: StepContext, task: int) -> None:
        if scenario.materialized:
            # A message delivered to a task is a record of that task (of the subscription or response topic), and
            # counts towards its commits as an input record does (TopologyTestDriver commits after each of them).
            since_commit[task] = since_commit.get(task, 0) + 1
            commit = since_commit[task] >= scenario.commit_every
            if commit:
                since_commit[task] = 0
            _materialize(results, ctx, task, commit)

    stage = source_stage(scenario)
    steps, history = run_steps(
        log,
        scenario.script(),
        lambda record, ctx: join.process(stage(record), ctx),
        joiner,
        scheduler=scheduler,
        deliver=join.deliver,
        settle=settle,
    )
    return Trace(scenario, steps, history)


def _materialize(results: Tasks, ctx: StepContext, task: int, commit: bool) -> None:
    """Route a step's results through the materialized result stores of their tasks; when
    ``task`` (the step's task) commits, flush its cache.

    TopologyTestDriver commits after every record it processes, and the records of the
    subscription and response topics are records too: ``completeAllProcessableWork`` runs
    ``task.process``, then ``commit(task.prepareCommit())``, for each of them. So a left update
    that sets off two responses for its row (a left join of 3.7.0 to 3.9.0 or 4.0.0 whose
    foreign key changes, ``fk_change_only_unsubscribes``) forwards both results from a
    caching result store, not only the newest. (Steps at a task of a foreign-key join are
    input records and deliveries; only a response's delivery has results, at its own task.)"""
    outputs, ctx.outputs = ctx.outputs, []
    kept = [output for output in outputs if results[output.partition].put(output, ctx)]
    held = kept and not ctx.outputs  # every result went into a cache
    if commit:
        results[task].flush(ctx)
    elif ctx.fate is Fate.JOINED and held:
        ResultSink.settle_held(ctx)
    if outputs and not kept and ctx.fate is Fate.JOINED:  # the result table dropped every result (KIP-557)
        ctx.settle(Fate.DROPPED, Reason.IDEMPOTENT_UPDATE, ctx.summary)
