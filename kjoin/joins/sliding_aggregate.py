"""Sliding-window aggregates: ``stream.groupByKey().windowedBy(SlidingWindows...).aggregate(...)`` (KIP-450, 2.7).

A sliding window ``[start, start + time difference]`` (both ends inclusive) exists only where the set of records it
holds changes: each record at ``ts`` has a *left window* ``[ts - diff, ts]`` (ending at it) and, if later records
follow within ``diff``, a *right window* ``[ts + 1, ts + 1 + diff]`` (starting just after it). How it works (Kafka's
``KStreamSlidingWindowAggregate``, one instance per task; ported step by step):

* A null key or a null value is skipped (``null-key``, ``null-value``).
* Stream time is the largest timestamp seen; the close time is ``stream time - grace``. A record whose own left
  window ``[ts - diff, ts]`` ended before the close time is late and dropped (``expired-window``).
* The record reads its key's windows starting in ``[ts - 2 diff, ts + 1]``, newest first, and adds itself to every
  window containing it; it then creates what is missing: the previous record's right window (when it now holds
  this record), its own left window (from the aggregate of the window just before it, or the initializer), and
  its own right window (a copy of the window holding the later records). A window that has closed is skipped
  (``Skipping record for expired window``; before 3.3 a window ending at the close time too, KAFKA-13739,
  ``Semantics.sliding_window_open_at_close_time``). Records earlier than ``diff`` (``ts < diff``) share the window
  ``[0, diff]`` instead of a left window with a negative start (``processEarly``).
* Each update carries the window's largest record timestamp.
* The store keeps ``2 diff + grace`` (Kafka's default), segmented by window start as a time window store
  (:class:`kjoin.stores.segmented_window.SegmentedWindowStore`; a read skips a window behind the retention in 3.4+).
* Emit-final (``emit: final``, 3.3+): no update is forwarded; after a (not early, not late) record, each window that
  ended before the close time is forwarded once, oldest start first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..stores.segmented_window import SegmentedWindowStore, SegmentLayout
from ..fates import Fate, Reason
from ..records import Record, render_value
from ..semantics import Semantics
from ..state import StateLog
from .aggregate import AggregateOutput, Aggregation, AggregationError
from .context import StepContext
from .final_results import WindowedAggregateTask
from ..times import at

__all__ = ["SlidingWindows", "SlidingAggregate"]

STREAM_TIME = "stream time"


@dataclass(frozen=True)
class SlidingWindows:
    """``SlidingWindows.ofTimeDifferenceAndGrace(diff, grace)``."""

    difference_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.difference_ms <= 0:
            raise ValueError(f"time_difference_ms must be positive, not {self.difference_ms}")
        if self.grace_ms < 0:
            raise ValueError(f"grace_ms must not be negative, not {self.grace_ms}")

    @property
    def retention_ms(self) -> int:
        """The window store's default retention: ``2 diff + grace``."""
        return 2 * self.difference_ms + self.grace_ms

    @property
    def suppress_duration_ms(self) -> int:
        return self.grace_ms

    def describe(self) -> str:
        return f"sliding windows, time difference {self.difference_ms} ms, grace {self.grace_ms} ms"


class SlidingAggregate(WindowedAggregateTask):
    """One task's sliding-window aggregate: its stream time and its window store (by window start)."""

    def __init__(
        self,
        log: StateLog,
        task: int,
        windows: SlidingWindows,
        aggregation: Aggregation,
        semantics: Semantics,
        emit_final: bool = False,
        on_update: Callable[[AggregateOutput, StepContext], None] | None = None,
    ) -> None:
        super().__init__(log, task, windows, aggregation, semantics, emit_final, on_update, "sliding aggregate clock")
        self.store = SegmentedWindowStore(
            log,
            task,
            "sliding window store",
            windows.difference_ms,
            SegmentLayout.kafka(windows.retention_ms),
            strict_retention=semantics.window_store_hides_expired,
            time_first=emit_final,  # onWindowClose materializes a time-ordered store (SlidingWindowedKStreamImpl)
        )

    # -- the record ---------------------------------------------------------------------------
    def process(self, record: Record, ctx: StepContext) -> None:
        if record.key is None or record.value is None:
            reason = Reason.NULL_KEY if record.key is None else Reason.NULL_VALUE
            what = "key" if record.key is None else "value"
            ctx.drop(reason, lambda: f"{record.describe()} has a null {what}: a sliding-window aggregate skips it.")
            return
        stream_time = self.clock.advance(STREAM_TIME, record.ts)
        close = stream_time - self.windows.grace_ms
        diff = self.windows.difference_ms
        if record.ts + diff < close:
            ctx.drop(
                Reason.EXPIRED_WINDOW,
                lambda: (
                    f"{record.describe()} is late: its window [{record.ts}, {record.ts + diff}] ended before the "
                    f"close time {close} (stream time {stream_time} - grace {self.windows.grace_ms})."
                ),
            )
            return
        self._updated: list[str] = []
        try:
            if record.ts < diff:
                self._process_early(record, close, ctx)
            else:
                self._process(record, close, ctx)
        except AggregationError as error:
            raise AggregationError(f"events[{record.offset}] ({record.describe()}): {error}") from None
        updated = ", ".join(self._updated) or "no window"
        if self._updated:
            self._took(record, ctx)
        ctx.settle(
            Fate.BUFFERED if self.emit_final else Fate.JOINED,
            Reason.WINDOW_OPEN if self.emit_final else None,
            lambda: (
                f"{record.describe()} updated {updated} (stream time {stream_time})."
                + (" Emit-final: nothing is forwarded until a window closes." if self.emit_final else "")
            ),
            until_ms=record.ts + diff + self.windows.grace_ms if self.emit_final else None,
        )
        if record.ts >= diff:
            self._maybe_emit_final(ctx, close)

    def _windows(self, key: Any, low: int, high: int) -> list[tuple[int, Any, int]]:
        """``(start, aggregate, ts)`` of ``key``'s windows starting in ``[low, high]``, by start."""
        return [(start, agg, ts) for start, _, agg, ts in self.store.windows_of(key) if low <= start <= high]

    def _process(self, record: Record, close: int, ctx: StepContext) -> None:
        """Kafka's ``processReverse``: the key's windows from ``ts + 1`` down to ``ts - 2 diff``."""
        ts, diff = record.ts, self.windows.difference_ms
        starts: set[int] = set()
        left_agg = right_agg = previous = None
        left_created = right_created = False
        for start, agg, max_ts in reversed(self._windows(record.key, max(0, ts - 2 * diff), ts + 1)):
            starts.add(start)
            end = start + diff
            if start == ts + 1:
                right_created = True
            elif end > ts:
                if right_agg is None:
                    right_agg = (agg, max_ts)
                self._update_window(start, (agg, max_ts), record, close, ctx)
            elif end == ts:
                left_created = True
                self._update_window(start, (agg, max_ts), record, close, ctx)
                if max_ts < ts:
                    previous = max_ts
                else:
                    return
            else:
                left_agg = (agg, max_ts)
                previous = max_ts
                break
        if previous is not None:
            previous_right = previous + 1
            if previous_right not in starts and previous_right + diff >= ts:
                self._update_window(previous_right, (self._initial(), ts), record, close, ctx)
        if not left_created:
            if previous is not None and ts - diff <= previous and left_agg is not None:
                start_value = (left_agg[0], ts)
            else:
                start_value = (self._initial(), ts)
            self._update_window(ts - diff, start_value, record, close, ctx)
        if not right_created and right_agg is not None and right_agg[1] > ts:
            self._copy_right_window(record, right_agg, ctx)

    def _process_early(self, record: Record, close: int, ctx: StepContext) -> None:
        """Kafka's ``processEarly``: ``ts < diff``, the window ``[0, diff]`` stands in for the left window."""
        ts = record.ts
        combined = right_agg = previous = None
        right_created = False
        starts: set[int] = set()
        for start, agg, max_ts in self._windows(record.key, 0, ts + 1):
            starts.add(start)
            if start == 0:
                combined = (agg, max_ts)
                if max_ts < ts:
                    previous = max_ts
            elif start <= ts:
                right_agg = (agg, max_ts)
                self._update_window(start, (agg, max_ts), record, close, ctx)
            elif start == ts + 1:
                right_created = True
        if right_agg is None and combined is not None and combined[1] > ts:
            right_agg = combined
        if not right_created and right_agg is not None and right_agg[1] > ts:
            self._copy_right_window(record, right_agg, ctx)
        if previous is not None and previous + 1 not in starts:
            self._update_window(previous + 1, (self._initial(), ts), record, close, ctx)
        self._update_window(0, combined if combined is not None else (self._initial(), ts), record, close, ctx)

    # -- update state and forward ----------------------------------------------------------------
    def _initial(self) -> Any:
        return self.aggregation.initializer() if self.aggregation.initializer is not None else None

    def _update_window(
        self, start: int, current: tuple[Any, int], record: Record, close: int, ctx: StepContext
    ) -> None:
        """Kafka's ``updateWindowAndForward``: add the record to the window unless it has closed."""
        end = start + self.windows.difference_ms
        if end < close or (end == close and not self.semantics.sliding_window_open_at_close_time):
            ctx.note(f"Window [{start}, {end}] has closed (close time {close}): skipped for it.")
            return
        old, old_ts = current
        new = self.aggregation.add(record.key, record.value, old)
        ts = record.ts if old is None else max(record.ts, old_ts)
        self.store.put(record.key, start, new, ts)
        self._updated.append(f"[{start}, {end}]: {render_value(old)} -> {render_value(new)}")
        self._forward(
            AggregateOutput(
                record.key, new, old, ts, False, "window", self.task, ctx.index, (start, end), inclusive=True
            ),
            ctx,
        )

    def _copy_right_window(self, record: Record, right: tuple[Any, int], ctx: StepContext) -> None:
        """Kafka's ``createCurrentRecordRightWindow``: the record's right window holds what the window found after
        it holds, stored and forwarded as it is."""
        start = record.ts + 1
        end = start + self.windows.difference_ms
        self.store.put(record.key, start, right[0], right[1])
        self._updated.append(f"[{start}, {end}] (its right window): {render_value(right[0])}")
        output = AggregateOutput(
            record.key, right[0], None, right[1], False, "window", self.task, ctx.index, (start, end), inclusive=True
        )
        self._forward(output, ctx)

    # -- emit-final ------------------------------------------------------------------------------
    def _maybe_emit_final(self, ctx: StepContext, close: int) -> None:
        """Forward each window with ``end < close`` not forwarded before (start in ``[last close - diff, close -
        diff - 1]``), by start then key."""
        if not self._emission_due(close):
            return
        diff = self.windows.difference_ms
        upper = close - diff - 1
        if upper < 0:
            return
        lower = 0 if self._last_emit_close is None else max(0, self._last_emit_close - diff)
        found = [(start, key, agg, ts) for key, start, agg, ts in self.store.all_windows() if lower <= start <= upper]
        for start, key, agg, ts in sorted(found, key=lambda w: (w[0], render_value(w[1]).encode())):
            origin, built = self.builders.final(key, start, start + diff, ctx.index)
            self.on_update(
                AggregateOutput(
                    key, agg, None, ts, False, "window", self.task, origin, (start, start + diff), inclusive=True
                ),
                ctx,
            )
            ctx.note(
                f"Emit-final: window {render_value(key)}@[{start}, {start + diff}] closed (close time {close}): "
                f"{at(render_value(agg), ts)} forwarded" + (f", {built}." if built else ".")
            )
        self._last_emit_close = close
