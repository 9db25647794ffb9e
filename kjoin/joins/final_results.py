"""Final results of windowed aggregates: ``suppress(untilWindowCloses)`` and emit-final.

Kafka ships two ways to see one result per window instead of every update:

* ``.suppress(Suppressed.untilWindowCloses(unbounded()))`` (2.1+, KIP-328): a processor *after* the aggregate
  (:class:`SuppressionBuffer`). It keeps the newest update of each windowed key in a buffer ordered by the window's
  end (then by the serialized windowed key), has its own stream time (the largest timestamp of the *updates* it
  received: records the aggregate dropped never reach it), and forwards every buffered update whose ``window end <=
  its stream time - grace`` (session windows: ``- grace - gap``), with the update's own timestamp. A tombstone
  (a session merged away) is dropped when it leaves the buffer.
* ``.emitStrategy(EmitStrategy.onWindowClose())`` (3.3+, KIP-825): inside the aggregate. Updates are stored but not
  forwarded; after each record, when the aggregate's close time (stream time - grace) moved on, every window that
  closed since the last emission is read from the store and forwarded once (:class:`EmitFinalTimeWindows` for
  tumbling and hopping windows; the session and sliding aggregates do it themselves). In production this check runs
  at most once per ``emit.interval`` of wall-clock time (an internal config,
  ``__emit.interval.ms.kstreams.windowed.aggregation__``, 1000 ms by default), so a closed window may be forwarded
  a record or more later than stream time alone says; TopologyTestDriver's wall clock does not move, which is why
  the oracle sets the interval to 0 and kjoin checks after every record.

Both forward a window once; they differ in *when* (the suppression buffer's stream time lags the aggregate's by the
dropped records) and in the timestamp and order of what they forward.

Who a final result is credited to: the step whose record closes a window *emits* it (it is among that step's
outputs), but the result is not that record's: its ``origin_step`` is the last step whose record the window took, as
with the suppression buffer (which forwards the window's latest update, made by that record), and the closing step's
explanation names the window and the records that built it (:class:`WindowBuilders`, bookkeeping of the trace, no
state of Kafka's).
"""

from __future__ import annotations

from typing import Any, Callable

from ..fates import Fate, Reason
from ..records import Record, render_value
from ..semantics import Semantics
from ..state import StateLog
from ..stores import Clock
from ..stores.suppression import SuppressionStore
from .aggregate import AggregateOutput, Aggregation
from .context import StepContext
from .window_aggregate import STREAM_TIME, WindowAggregate
from ..times import at

__all__ = ["SuppressionBuffer", "EmitFinalTimeWindows", "WindowedAggregateTask", "WindowBuilders"]


NAMED_BUILDERS = 6
"""A closed window's explanation names at most this many of the records that built it (then how many more)."""


class WindowBuilders:
    """Which records an emit-final aggregate took, per key, so that a window it forwards when it closes is credited to
    the records in it: :meth:`final` gives the closed window's ``origin_step`` (the last step that updated it) and the
    text that names them. Bookkeeping for the trace, not a store of Kafka's.

    ``end_inclusive``: session and sliding windows are ``[start, end]``, time windows ``[start, end)``; ``session``:
    a forwarded session forgets every record of its key up to its end (sessions of a key never overlap), a forwarded
    time or sliding window those up to its start (windows are forwarded by start, and one that closed takes no more
    records)."""

    def __init__(self, end_inclusive: bool, session: bool = False) -> None:
        self.end_inclusive = end_inclusive
        self.session = session
        self._taken: dict[bytes, list[tuple[int, int, Record]]] = {}  # key -> (ts, step, record), processing order

    def took(self, record: Record, step: int) -> None:
        """``record`` (of ``step``) updated at least one of its key's windows."""
        self._taken.setdefault(_key_bytes(record.key), []).append((record.ts, step, record))

    def final(self, key: Any, start: int, end: int, fallback_step: int) -> tuple[int, str]:
        """The window ``key@[start, end]`` is forwarded now: ``(origin_step, "built by ...")``. The records are
        forgotten as far as no window still open can hold them."""
        taken = self._taken.get(_key_bytes(key), [])
        built = [
            (step, record)
            for ts, step, record in taken
            if start <= ts and (ts <= end if self.end_inclusive else ts < end)
        ]
        forget = end if self.session else start
        kept = [entry for entry in taken if entry[0] > forget]
        if kept:
            self._taken[_key_bytes(key)] = kept
        else:
            self._taken.pop(_key_bytes(key), None)
        if not built:
            return fallback_step, ""
        named = ", ".join(f"{at(render_value(r.value), r.ts)} (step {step})" for step, r in built[:NAMED_BUILDERS])
        more = len(built) - NAMED_BUILDERS
        count = f"{len(built)} record{'s' if len(built) != 1 else ''}"
        text = f"built by {count}: {named}" + (f" and {more} more" if more > 0 else "")
        return max(step for step, _ in built), text


class WindowedAggregateTask:
    """What the session and sliding aggregates share (one task each): their options, their stream time's clock
    (``clock_name``), where an update goes (:meth:`_forward`: to ``on_update``, by default forwarded as the step's
    output, a suppression buffer hangs itself there; with ``emit_final`` nowhere) and, for emit-final, the close
    time of the last emission (:meth:`_emission_due`) and the records that built each window (:meth:`_took`). Each
    keeps its own store and its own search for the windows that closed."""

    SESSIONS = False
    """Its windows are sessions (a forwarded one forgets its key's records up to its end)."""

    def __init__(
        self,
        log: StateLog,
        task: int,
        windows: Any,
        aggregation: Aggregation,
        semantics: Semantics,
        emit_final: bool,
        on_update: Callable[[AggregateOutput, StepContext], None] | None,
        clock_name: str,
    ) -> None:
        self.windows = windows
        self.aggregation = aggregation
        self.task = task
        self.semantics = semantics
        self.emit_final = emit_final
        self.clock = Clock(log, task, clock_name)
        self.on_update = on_update or (lambda output, ctx: ctx.forward(output))
        self._last_emit_close: int | None = None
        self.builders = WindowBuilders(end_inclusive=True, session=self.SESSIONS)

    def _took(self, record: Record, ctx: StepContext) -> None:
        """Emit-final: ``record`` updated its windows (the builders of what is forwarded when they close)."""
        if self.emit_final:
            self.builders.took(record, ctx.index)

    def _forward(self, output: AggregateOutput, ctx: StepContext) -> None:
        """An update: to ``on_update``, unless emit-final holds every update back."""
        if not self.emit_final:
            self.on_update(output, ctx)

    def _emission_due(self, close: int) -> bool:
        """Emit-final (Kafka's ``maybeForwardFinalResult``): has the close time moved on since the last emission?"""
        return self.emit_final and (self._last_emit_close is None or self._last_emit_close < close)


class SuppressionBuffer:
    """``suppress(untilWindowCloses(unbounded()))`` after a windowed aggregate of one task.

    ``duration_ms`` is the grace (session windows: grace + inactivity gap); ``session``: the windowed keys are
    session keys (serialized key, end, start) rather than time-window keys (key, start)."""

    def __init__(self, log: StateLog, task: int, duration_ms: int, session: bool = False) -> None:
        self.duration_ms = duration_ms
        self.buffer = SuppressionStore(log, task, session)
        self._waits: dict[int, int] = {}  # step -> the stream time its latest buffered window waits for

    def process(self, output: AggregateOutput, ctx: StepContext) -> None:
        """The aggregate forwarded ``output``: buffer it, then forward every buffered update whose window closed."""
        assert output.window is not None
        stream_time = self.buffer.observe(output.ts)
        self.buffer.put(output)
        if output.origin_step == ctx.index and not output.tombstone:
            wait = output.window[1] + self.duration_ms - 1  # forwarded once its stream time passes this
            self._waits[ctx.index] = max(wait, self._waits.get(ctx.index, wait))
        expiry = stream_time - self.duration_ms
        for evicted in self.buffer.evict_until(expiry):
            start, end = evicted.window  # type: ignore[misc]
            where = f"{render_value(evicted.key)}@[{start}, {end}]"
            if evicted.tombstone:
                ctx.note(f"Suppression: {where} closed as a tombstone (a session merged away): dropped.")
                continue
            ctx.forward(evicted)
            ctx.note(
                f"Suppression: {where} closed (end {end} <= the buffer's stream time {stream_time} - "
                f"{self.duration_ms}): its final result {at(render_value(evicted.value), evicted.ts)} is forwarded."
            )

    def settle(self, ctx: StepContext, record: Record) -> None:
        """The step's fate after the buffer: a record whose updates all wait is buffered until its window closes."""
        until = self._waits.pop(ctx.index, None)
        if ctx.fate is not Fate.JOINED or any(o.origin_step == ctx.index for o in ctx.outputs):
            return
        ctx.settle(
            Fate.BUFFERED,
            Reason.WINDOW_OPEN,
            f"{ctx.summary} Suppression: its update(s) wait in the buffer until the window closes.",
            until_ms=until,
        )


class EmitFinalTimeWindows:
    """A tumbling or hopping windowed aggregate with ``emitStrategy(onWindowClose())``: the aggregate stores its
    updates without forwarding them; after each record this forwards the windows that closed since the last
    emission (Kafka's ``KStreamWindowAggregate.maybeForwardFinalResult``)."""

    def __init__(self, make: Callable[..., WindowAggregate], on_update: Callable[[AggregateOutput, StepContext], None]):
        self.aggregate = make(on_update=lambda output, ctx: None)
        # onWindowClose materializes a time-ordered store (TimeWindowedKStreamImpl.materialize): its reads, the
        # emission's range read and a value getter's point read alike, keep a window at observed - retention
        self.aggregate.store.time_first = True
        self.on_update = on_update
        self._last_emit_close: int | None = None
        self.builders = WindowBuilders(end_inclusive=False)

    def process(self, record: Record, ctx: StepContext) -> None:
        self.aggregate.process(record, ctx)
        if record.key is None:
            return
        if ctx.fate is Fate.JOINED:
            self.builders.took(record, ctx.index)
            windows = self.aggregate.windows
            last = windows.windows_for(record.ts)[-1]
            ctx.settle(
                Fate.BUFFERED,
                Reason.WINDOW_OPEN,
                f"{ctx.summary} Emit-final: nothing is forwarded until the window closes.",
                until_ms=last.end_ms + windows.grace_ms - 1,
            )
        self._maybe_emit(ctx)

    def _maybe_emit(self, ctx: StepContext) -> None:
        windows = self.aggregate.windows
        stream_time = self.aggregate.clock.get(STREAM_TIME)
        assert stream_time is not None
        close = stream_time - windows.grace_ms
        if self._last_emit_close is not None and self._last_emit_close >= close:
            return
        upper = close - windows.size_ms
        if upper < 0:
            return
        last = self._last_emit_close
        lower = 0 if last is None else max(0, last - windows.size_ms) + 1
        if last is not None and windows.windows_for(upper) == windows.windows_for(lower - 1):
            return  # no window closed since the last emission (the close time stays where it was)
        found = [
            (start, key, agg, ts)
            for key, start, agg, ts in self.aggregate.store.all_windows()
            if lower <= start <= upper
        ]
        for start, key, agg, ts in sorted(found, key=lambda w: (w[0], _key_bytes(w[1]))):
            window = (start, start + windows.size_ms)
            origin, built = self.builders.final(key, *window, ctx.index)
            self.on_update(
                AggregateOutput(key, agg, None, ts, False, "window", self.aggregate.task, origin, window), ctx
            )
            ctx.note(
                f"Emit-final: window {render_value(key)}@[{window[0]}, {window[1]}) closed (close time {close}): "
                f"{at(render_value(agg), ts)} forwarded" + (f", {built}." if built else ".")
            )
        self._last_emit_close = close


def _key_bytes(key: Any) -> bytes:
    return render_value(key).encode("utf-8")
