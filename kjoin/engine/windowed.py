"""One task's processor of a windowed aggregate beyond the plain tumbling and hopping ones: session and sliding
windows (:mod:`kjoin.joins.session_aggregate`, :mod:`kjoin.joins.sliding_aggregate`), emit-final and
``suppress(untilWindowCloses)`` (:mod:`kjoin.joins.final_results`), wired from the fields
:mod:`kjoin.scenario.windowed` reads. :mod:`kjoin.engine.aggregates` runs it (and hands it to the Spark pass of seed
000 through :func:`~kjoin.engine.aggregates.aggregate_processors`).
"""

from __future__ import annotations

from typing import Any, Callable

from ..joins.aggregate import Aggregation
from ..joins.final_results import EmitFinalTimeWindows, SuppressionBuffer
from ..joins.session_aggregate import SessionAggregate, SessionWindows
from ..joins.sliding_aggregate import SlidingAggregate, SlidingWindows
from ..joins.window_aggregate import TimeWindows, WindowAggregate
from ..semantics import Semantics
from ..state import StateLog

__all__ = ["windowed_factory"]


def windowed_factory(
    windows: TimeWindows | SessionWindows | SlidingWindows,
    aggregation: Aggregation,
    semantics: Semantics,
    emit: str = "updates",
    suppress: str | None = None,
    retention_ms: int | None = None,
    segments: int | None = None,
) -> Callable[[StateLog, int], Any]:
    """``(log, task) -> processor`` of one task's windowed aggregate, with emit-final or a suppression buffer."""
    final = emit == "final"

    def new(log: StateLog, task: int) -> Any:
        buffer = None
        if suppress is not None:
            duration = windows.suppress_duration_ms if not isinstance(windows, TimeWindows) else windows.grace_ms
            buffer = SuppressionBuffer(log, task, duration, session=isinstance(windows, SessionWindows))
        on_update = None if buffer is None else buffer.process
        if isinstance(windows, SessionWindows):
            processor: Any = SessionAggregate(log, task, windows, aggregation, semantics, final, on_update)
        elif isinstance(windows, SlidingWindows):
            processor = SlidingAggregate(log, task, windows, aggregation, semantics, final, on_update)
        else:
            layout = windows.layout(retention_ms, segments)

            def make(on_update: Any = on_update) -> WindowAggregate:
                return WindowAggregate(
                    log, task, windows, aggregation, layout=layout, semantics=semantics, on_update=on_update
                )

            processor = (
                EmitFinalTimeWindows(make, on_update or (lambda output, ctx: ctx.forward(output))) if final else make()
            )
        return processor if buffer is None else _Suppressed(processor, buffer)

    return new


class _Suppressed:
    """A windowed aggregate whose updates go through a suppression buffer: the step's fate says when they wait."""

    def __init__(self, aggregate: Any, buffer: SuppressionBuffer) -> None:
        self.aggregate = aggregate
        self.buffer = buffer

    def process(self, record: Any, ctx: Any) -> None:
        self.aggregate.process(record, ctx)
        self.buffer.settle(ctx, record)
