"""The record loop: every scenario's records go through it, one step per record.

:func:`run_steps` feeds each record of a script to ``process(record, ctx)`` (the processor of
its task), checks that the processor settled the record's fate, records the state changes
the step made, and keeps the step. A foreign-key join's script also holds delivery
instructions, and its scheduler delivers messages between inputs
(:mod:`kjoin.joins.fk_delivery`): each delivery is a step too (a
:class:`~kjoin.trace.DeliveryStep`). Primary-key joins, foreign-key joins, aggregates and the
WTable joins all run here; they differ only in what builds their processors.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from ..joins.context import StepContext
from ..joins.fk_delivery import NoSuchMessage, Scheduler
from ..joins.fk_protocol import Message
from ..records import Output, Record
from ..scenario.fields import Deliver, ScenarioError
from ..state import StateHistory, StateLog
from ..trace import DeliveryStep, Step

__all__ = ["run_steps"]


def run_steps(
    log: StateLog,
    script: Iterable[Record | Deliver],
    process: Callable[[Record, StepContext], None],
    joiner: Callable[[Any, Any], Any],
    *,
    scheduler: Scheduler | None = None,
    deliver: Callable[[Message, StepContext], None] | None = None,
    settle: Callable[[StepContext, int], None] | None = None,
    note: Callable[[int, Record, Sequence[Output]], str | None] | None = None,
) -> tuple[list[Step], StateHistory]:
    """Run ``script`` and return its steps and the state history.

    ``log`` holds the stores built so far (their initial state is the history's start).
    ``scheduler`` and ``deliver(message, ctx)``: a foreign-key join's message deliveries.
    ``settle(ctx, task)``: what happens after a step's processing and before its changes are
    recorded (a materialized result's stores). ``note(index, record, outputs)``: a sentence appended to
    the step's explanation (the arrival's wait, the tie it was taken on), or ``None``.
    """
    history = StateHistory(log.copy())
    log.take_changes()
    steps: list[Step] = []

    def close(ctx: StepContext, task: int) -> None:
        if ctx.fate is None:  # pragma: no cover - every processor settles
            raise AssertionError(f"step {ctx.index}: the processor did not settle the record's fate")
        if settle is not None:
            settle(ctx, task)
        history.record(log.take_changes(), log)

    def delivery(message: Message) -> None:
        assert deliver is not None
        ctx = StepContext(len(steps), None, joiner, partition=message.partition)
        deliver(message, ctx)
        close(ctx, message.partition)
        steps.append(
            DeliveryStep.of(ctx.index, message, tuple(ctx.outputs), ctx.fate, ctx.reason, ctx.until_ms, ctx.explain())
        )

    for event_index, item in enumerate(script):
        if isinstance(item, Deliver):
            if scheduler is None:  # pragma: no cover - only a foreign-key join's script has instructions
                raise ScenarioError(f"events[{event_index}].deliver: only a foreign-key join delivers messages")
            try:
                scheduler.on_instruction(item.which, delivery)
            except NoSuchMessage as error:
                raise ScenarioError(f"events[{event_index}].deliver: {error}") from None
            continue
        if scheduler is not None:
            scheduler.before_input(item, delivery)
        ctx = StepContext(len(steps), item, joiner)
        process(item, ctx)
        close(ctx, item.partition)
        extra = None if note is None else note(ctx.index, item, ctx.outputs)
        explain = ctx.explain() if extra is None else f"{ctx.explain()} {extra}"
        assert ctx.fate is not None
        steps.append(
            Step(ctx.index, item, item.partition, tuple(ctx.outputs), ctx.fate, ctx.reason, ctx.until_ms, explain)
        )
        if scheduler is not None:
            scheduler.after_input(delivery)
    if scheduler is not None:
        scheduler.at_end(delivery)
    return steps, history
