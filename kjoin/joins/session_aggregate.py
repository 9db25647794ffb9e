"""Session-windowed aggregates: ``stream.groupByKey().windowedBy(SessionWindows...).aggregate(...)``.

A session is a run of a key's records with no gap longer than the inactivity gap between them; it is a window
``[start, end]`` (both ends inclusive: the first and the last record's timestamps). How it works (Kafka's
``KStreamSessionWindowAggregate``; one instance per task):

* A null key is skipped. A null value is not (it reaches the aggregator: ``count()`` counts it).
* Stream time is the largest timestamp seen. The close time is ``stream time - grace - gap`` (Kafka 3.0+,
  KAFKA-12718; before, ``stream time - grace``: ``Semantics.session_close_includes_gap``).
* The record at ``ts`` looks up every session of its key overlapping ``[ts - gap, ts + gap]``
  (``findSessions``, by end then start) and merges them with ``[ts, ts]`` into one session (the merger adds their
  aggregates). If the merged session ends before the close time the record is dropped as late
  (``expired-window``). Otherwise each merged session is removed and a tombstone forwarded for it, then the
  aggregator adds the record and the merged session is stored and forwarded.
* Every update carries the session's end as its timestamp (a tombstone its old session's end).
* The store keeps a session ``gap + grace`` past its end (3.0+), one day before (``SessionWindows.maintainMs``,
  KAFKA-7106): a session table's getter finds it that long.
* Emit-final (``emit: final``, ``emitStrategy(onWindowClose())``, 3.3+): nothing is forwarded on update; after each
  record, every session whose end is behind the close time and was not emitted before is forwarded once
  (:mod:`kjoin.joins.final_results`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..fates import Fate, Reason
from ..records import Record, render_value
from ..semantics import Semantics
from ..state import StateLog
from ..stores.session import SessionStore
from ..stores.window import MAINTAIN_MS
from .aggregate import AggregateOutput, Aggregation, AggregationError
from .context import StepContext
from .final_results import WindowedAggregateTask

__all__ = ["SessionWindows", "SessionAggregate"]

STREAM_TIME = "stream time"


@dataclass(frozen=True)
class SessionWindows:
    """``SessionWindows.ofInactivityGapAndGrace(gap, grace)``."""

    gap_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.gap_ms <= 0:
            raise ValueError(f"inactivity_gap_ms must be positive, not {self.gap_ms}")
        if self.grace_ms < 0:
            raise ValueError(f"grace_ms must not be negative, not {self.grace_ms}")

    @property
    def retention_ms(self) -> int:
        """The session store's default retention from Kafka 3.0: ``gap + grace``."""
        return self.gap_ms + self.grace_ms

    def store_retention_ms(self, semantics: Semantics) -> int:
        """The session store's retention when the application sets none (``Materialized.withRetention``): ``gap +
        grace`` from 3.0 (``Semantics.window_retention_size_and_grace``, KAFKA-7106); before, the deprecated
        ``SessionWindows.maintainMs()``: one day, or the gap if larger. A session table's getter (a windowed
        table's join) finds a session that long, in segments of ``max(retention / 2, 60 s)``."""
        if semantics.window_retention_size_and_grace:
            return self.retention_ms
        return max(MAINTAIN_MS, self.gap_ms)

    @property
    def suppress_duration_ms(self) -> int:
        """How long ``suppress(untilWindowCloses)`` waits past a session's end: ``grace + gap``."""
        return self.grace_ms + self.gap_ms

    def close_time(self, stream_time: int, semantics: Semantics) -> int:
        gap = self.gap_ms if semantics.session_close_includes_gap else 0
        return stream_time - self.grace_ms - gap

    def describe(self) -> str:
        return f"session windows, inactivity gap {self.gap_ms} ms, grace {self.grace_ms} ms"


class SessionAggregate(WindowedAggregateTask):
    """One task's session-windowed aggregate: its stream time and its session store.

    ``on_update(output, ctx)`` receives every update (default: forwarded as the step's outputs; a suppression buffer
    hangs itself there). With ``emit_final`` updates are not forwarded; closed sessions are, once each."""

    SESSIONS = True

    def __init__(
        self,
        log: StateLog,
        task: int,
        windows: SessionWindows,
        aggregation: Aggregation,
        semantics: Semantics,
        emit_final: bool = False,
        on_update: Callable[[AggregateOutput, StepContext], None] | None = None,
    ) -> None:
        super().__init__(log, task, windows, aggregation, semantics, emit_final, on_update, "session aggregate clock")
        retention = windows.store_retention_ms(semantics)
        self.store = SessionStore(log, task, retention, semantics.window_store_hides_expired, emit_final)

    def process(self, record: Record, ctx: StepContext) -> None:
        if record.key is None:
            ctx.drop(Reason.NULL_KEY, lambda: f"{record.describe()} has a null key: skipped.")
            return
        stream_time = self.clock.advance(STREAM_TIME, record.ts)
        close = self.windows.close_time(stream_time, self.semantics)
        gap = self.windows.gap_ms
        merged = self.store.find_sessions(record.key, record.ts - gap, record.ts + gap)
        start = min([record.ts, *(s[0] for s in merged)])
        end = max([record.ts, *(s[1] for s in merged)])
        if end < close:
            ctx.drop(
                Reason.EXPIRED_WINDOW,
                lambda: (
                    f"{record.describe()} is late: its session [{start}, {end}] ends before the close time {close} "
                    f"(stream time {stream_time} - grace {self.windows.grace_ms}"
                    + (f" - gap {gap}" if self.semantics.session_close_includes_gap else "")
                    + ')  ("Skipping record for expired window").'
                ),
            )
            self._maybe_emit_final(ctx, close)
            return
        try:
            agg = self.aggregation.initializer() if self.aggregation.initializer is not None else None
            for _, _, old_agg, _ in merged:
                agg = _merge(self.aggregation, record.key, agg, old_agg)
            agg = self.aggregation.add(record.key, record.value, agg)
        except AggregationError as error:
            raise AggregationError(f"events[{record.offset}] ({record.describe()}): {error}") from None
        if (start, end) != (record.ts, record.ts):
            for old_start, old_end, old_agg, _ in merged:
                self.store.remove(record.key, old_start, old_end)
                self._forward(
                    AggregateOutput(
                        record.key,
                        None,
                        old_agg,
                        old_end,
                        True,
                        "window",
                        self.task,
                        ctx.index,
                        (old_start, old_end),
                        inclusive=True,
                    ),
                    ctx,
                )
        stored = self.store.put(record.key, start, end, agg, end)
        self._took(record, ctx)
        self._forward(
            AggregateOutput(
                record.key, agg, None, end, False, "window", self.task, ctx.index, (start, end), inclusive=True
            ),
            ctx,
        )
        merged_text = f"merged {', '.join(f'[{s}, {e}]' for s, e, _, _ in merged)} into " if merged else "opened "
        expired = "" if stored else " (the store refused the put: it is already behind its retention, Kafka 3.4+)"
        ctx.settle(
            Fate.BUFFERED if self.emit_final else Fate.JOINED,
            Reason.WINDOW_OPEN if self.emit_final else None,
            lambda: (
                f"{record.describe()} {merged_text}session [{start}, {end}] = {render_value(agg)}{expired} "
                f"(stream time {stream_time})."
                + (" Emit-final: nothing is forwarded until the session closes." if self.emit_final else "")
            ),
            until_ms=(end + self.windows.grace_ms + gap) if self.emit_final else None,
        )
        self._maybe_emit_final(ctx, close)

    # -- emit-final: forward each closed session once ------------------------------------------
    def _maybe_emit_final(self, ctx: StepContext, close: int) -> None:
        """Kafka's ``maybeForwardFinalResult``: when the close time moved on, forward every session whose end lies in
        ``[last close, close - 1]`` (3.3+; TopologyTestDriver's wall clock never moves, so the harness sets the emit
        interval to 0: a running application checks at most once per ``emit.interval`` of wall-clock time)."""
        if not self._emission_due(close):
            return
        upper = close - 1
        if upper < 0:
            return
        lower = max(0, self._last_emit_close if self._last_emit_close is not None else 0)
        if upper < lower:
            return
        for key, start, end, agg, _ in self.store.sessions_ending(lower, upper):
            origin, built = self.builders.final(key, start, end, ctx.index)
            output = AggregateOutput(
                key, agg, None, end, False, "window", self.task, origin, (start, end), inclusive=True
            )
            self.on_update(output, ctx)
            ctx.note(
                f"Emit-final: session {render_value(key)}@[{start}, {end}] closed (close time {close}): "
                f"{render_value(agg)} forwarded" + (f", {built}." if built else ".")
            )
        self._last_emit_close = close


def _merge(aggregation: Aggregation, key: Any, agg: Any, other: Any) -> Any:
    """The session merger: of count and sum ``(k, a, b) -> a + b``; of a reduce the reducer itself (Kafka's
    ``mergerForAggregator(aggregatorForReducer(reducer))``: ``reducer(a, b)``, or ``b`` while ``a`` is null)."""
    if agg is None:
        return other
    if other is None:
        return agg
    if aggregation.is_reduce:
        return aggregation.add(key, other, agg)
    return agg + other
