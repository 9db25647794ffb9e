"""Run a scenario through the reference engine, one record at a time.

Each partition is a Kafka task with its own join instance: its own stores and its own
stream time. A record goes to the task of its partition; the steps keep the scenario's
processing order across tasks.
"""

from __future__ import annotations

from typing import Any, Callable

from .joins import StepContext, StreamStreamJoin, StreamTableJoin, TableTableJoin, default_joiner
from .scenario import Scenario
from .state import StateHistory, StateLog
from .trace import Step, Trace

__all__ = ["run"]


def run(scenario: Scenario, joiner: Callable[[Any, Any], Any] = default_joiner) -> Trace:
    """Process every event of ``scenario`` and return the trace.

    ``joiner(left, right)`` computes each result's value; the default renders ``A-a``.
    """
    log = StateLog()
    tasks: dict[int, Any] = {}
    for task in range(scenario.partitions):
        tasks[task] = _new_join(scenario, log, task)
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


def _new_join(scenario: Scenario, log: StateLog, task: int) -> Any:
    if scenario.join == "stream-stream":
        assert scenario.window is not None
        return StreamStreamJoin(log, task, scenario.variant, scenario.window, scenario.semantics)
    if scenario.join == "stream-table":
        return StreamTableJoin(log, task, scenario.variant, scenario.semantics)
    return TableTableJoin(log, task, scenario.variant, scenario.semantics)
