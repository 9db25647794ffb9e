"""Run a scenario through the reference engine, one record at a time.

Each partition is a Kafka task with its own join instance: its own stores and its own
stream time. A record goes to the task of its partition; the steps keep the scenario's
processing order across tasks.

A foreign-key join also sends messages between its tasks. There a step is either an input
record or the delivery of one message; the scenario's ``delivery`` decides when messages
are delivered (see :class:`~kjoin.scenario.Delivery`).
"""

from __future__ import annotations

import random
from typing import Any, Callable

from .joins import StepContext, StreamStreamJoin, StreamTableJoin, TableTableJoin, default_joiner
from .joins.fk_protocol import SUBSCRIPTION, Message
from .joins.foreign_key import ForeignKeyJoin
from .joins.self_join import OptimizedSelfJoin
from .fates import Fate
from .joins.topology import ResultSink, SelfJoin, StreamChain, TablePipeline
from .joins.versioned import VersionedStreamTableJoin, VersionedTableTableJoin
from .records import Record, Side
from .scenario import Deliver, Scenario, ScenarioError
from .state import StateHistory, StateLog
from .trace import Step, Trace

__all__ = ["run", "new_join"]


def run(scenario: Scenario, joiner: Callable[[Any, Any], Any] = default_joiner) -> Trace:
    """Process every event of ``scenario`` and return the trace.

    ``joiner(left, right)`` computes each result's value; the default renders ``A-a``.
    """
    if scenario.join == "fk":
        return _run_foreign_key(scenario, joiner)
    log = StateLog()
    tasks: dict[int, Any] = {}
    for task in range(scenario.partitions):
        tasks[task] = new_join(scenario, log, task)
    history = StateHistory(log.copy())
    log.take_changes()
    steps: list[Step] = []
    for index, record in enumerate(scenario.records()):
        ctx = StepContext(index, record, joiner)
        tasks[record.partition].process(record, ctx)
        if ctx.fate is None:  # pragma: no cover - every processor settles
            raise AssertionError(f"step {index}: the processor did not settle the record's fate")
        history.record(log.take_changes(), log)
        steps.append(Step(index, record, record.partition, tuple(ctx.outputs), ctx.fate, ctx.reason, ctx.until_ms, ctx.explain()))
    return Trace(scenario, steps, history)


def new_join(scenario: Scenario, log: StateLog, task: int) -> Any:
    """The join processor of one task of ``scenario`` (a primary-key join), writing its
    stores through ``log``. Call ``process(record, ctx)`` on it for each of the task's records."""
    if scenario.join == "stream-stream":
        return _stream_stream(scenario, log, task)
    if scenario.join == "stream-table":
        if scenario.right.versioned:
            assert scenario.right.history_retention_ms is not None
            return VersionedStreamTableJoin(log, task, scenario.variant, scenario.semantics, scenario.right.history_retention_ms, scenario.grace_ms)
        return StreamTableJoin(log, task, scenario.variant, scenario.semantics)
    return _table_table(scenario, log, task)


def _stream_stream(scenario: Scenario, log: StateLog, task: int) -> Any:
    window = scenario.window
    assert window is not None
    if scenario.optimize:
        return OptimizedSelfJoin(log, task, window, scenario.semantics)
    first = StreamStreamJoin(log, task, scenario.variant, window, scenario.semantics)
    if scenario.self_join:
        return SelfJoin(first)
    if not scenario.then:
        return first
    stages = [first]
    for number, chained in enumerate(scenario.then, start=2):
        stages.append(StreamStreamJoin(log, task, chained.variant, chained.window or window, scenario.semantics, prefix=f"join {number}: "))
    return StreamChain(stages)


def _table_table(scenario: Scenario, log: StateLog, task: int) -> Any:
    if scenario.left.versioned or scenario.right.versioned:
        first: TableTableJoin = VersionedTableTableJoin(log, task, scenario.variant, scenario.semantics, scenario.left, scenario.right, scenario.versioned_mode)
    else:
        first = TableTableJoin(log, task, scenario.variant, scenario.semantics)
    if not (scenario.then or scenario.materialized or scenario.send_old_values or scenario.caching):
        return first
    stages = [first]
    for chained in scenario.then:
        stages.append(TableTableJoin(log, task, chained.variant, scenario.semantics, left=stages[-1], right=first.tables[Side.RIGHT]))
    return TablePipeline(
        log, task, stages, send_old_values=scenario.send_old_values, materialized=scenario.materialized, caching=scenario.caching, commit_every=scenario.commit_every
    )


# -- foreign-key joins: inputs and message deliveries ---------------------------------------
def _run_foreign_key(scenario: Scenario, joiner: Callable[[Any, Any], Any]) -> Trace:
    log = StateLog()
    join = ForeignKeyJoin(log, scenario)
    results = {task: ResultSink(log, task, "result" in scenario.caching) for task in range(scenario.partitions)} if scenario.materialized else {}
    history = StateHistory(log.copy())
    log.take_changes()
    steps: list[Step] = []
    rng = random.Random(scenario.delivery.seed)
    mode = scenario.delivery.mode

    def close(ctx: StepContext, task: int, message: Message | None = None) -> None:
        if ctx.fate is None:  # pragma: no cover - every processor settles
            raise AssertionError(f"step {ctx.index}: the processor did not settle the fate")
        if results:
            _materialize(results, ctx, commit=mode != "immediate" or not len(join.in_flight))
        history.record(log.take_changes(), log)
        steps.append(Step(ctx.index, ctx.record, task, tuple(ctx.outputs), ctx.fate, ctx.reason, ctx.until_ms, ctx.explain(), message))

    def deliver(message: Message) -> None:
        side = Side.RIGHT if message.topic == SUBSCRIPTION else Side.LEFT
        record = Record(side, message.key, message.describe(), message.ts, message.partition, message.seq)
        ctx = StepContext(len(steps), record, joiner)
        join.deliver(message, ctx)
        close(ctx, message.partition, message)

    for event_index, item in enumerate(scenario.script()):
        if isinstance(item, Deliver):
            for message in _select(join, item, event_index, deliver):
                deliver(message)
            continue
        if mode == "random" and scenario.delivery.wait_for_row and item.side is Side.LEFT:
            while any(_about_row(message, item.key) for message in join.in_flight.pending()):
                deliver(rng.choice(join.in_flight.heads()))
        ctx = StepContext(len(steps), item, joiner)
        join.process(item, ctx)
        close(ctx, item.partition)
        if mode == "immediate":
            while len(join.in_flight):
                deliver(join.in_flight.heads()[0])
        elif mode == "random":
            for _ in range(rng.randint(0, len(join.in_flight))):
                if not len(join.in_flight):
                    break
                deliver(rng.choice(join.in_flight.heads()))
    if mode == "random":
        while len(join.in_flight):
            deliver(rng.choice(join.in_flight.heads()))
    return Trace(scenario, steps, history)


def _materialize(results: dict[int, ResultSink], ctx: StepContext, commit: bool) -> None:
    """Route a step's results through the materialized result stores of their tasks; on a
    commit (TopologyTestDriver: once an input is fully processed, nothing left in flight),
    flush their caches."""
    outputs, ctx.outputs = ctx.outputs, []
    for output in outputs:
        results[output.partition].put(output, ctx)
    held = outputs and not ctx.outputs  # every result went into a cache
    if commit:
        for task in sorted(results):
            results[task].flush(ctx)
    elif ctx.fate is Fate.JOINED and held:
        ResultSink.settle_held(ctx)


def _about_row(message: Message, pk: Any) -> bool:
    """Is ``message`` a subscription from, or a response to, the left row ``pk``?"""
    target = message.value.pk if message.topic == SUBSCRIPTION else message.key  # type: ignore[union-attr]
    return type(target) is type(pk) and target == pk


def _select(join: ForeignKeyJoin, item: Deliver, event_index: int, deliver: Callable[[Message], None]) -> list[Message]:
    """The messages a ``{deliver: ...}`` event releases (``all`` delivers as it goes)."""
    where = f"events[{event_index}].deliver"
    if item.which == "all":
        while len(join.in_flight):
            deliver(join.in_flight.heads()[0])
        return []
    heads = join.in_flight.heads()
    if item.which == "next":
        chosen = heads[:1]
    elif item.which in ("subscription", "response"):
        chosen = [m for m in heads if m.topic == item.which][:1]
    else:
        pending = {m.id: m for m in join.in_flight.pending()}
        if item.which not in pending:
            raise ScenarioError(f"{where}: no message {item.which} is in flight (in flight: {', '.join(pending) or 'nothing'})")
        message = pending[item.which]
        if message not in heads:
            raise ScenarioError(f"{where}: {item.which} waits behind an earlier message of {message.topic} partition {message.partition}; Kafka delivers a partition in order")
        chosen = [message]
    if not chosen:
        raise ScenarioError(f"{where}: no {item.which} message is in flight")
    return chosen
