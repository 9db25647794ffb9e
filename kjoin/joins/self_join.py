"""The single-store self-join (``TOPOLOGY_OPTIMIZATION`` with ``single.store.self.join``).

When an inner join joins a stream with itself, Kafka can rewrite the topology to keep one
window store instead of two. How the rewritten processor works (docs/semantics.md §1.9):

* A record with a null key or value is skipped *before* stream time advances (the
  unoptimized join advances it first).
* Otherwise stream time advances, and the record is joined with the earlier records of the
  store twice: first as the left record (``this-other``, window ``[t - before, t + after]``),
  then as the right record (``other-this``, window ``[t - after, t + before]``).
* The record's join with itself (``this-this``) is placed where the unoptimized join would
  emit it: before the first ``other-this`` result whose other record is newer. It is emitted
  only if ``t > stream time - retention + 1``.
* The record is then put into the store (never seen by its own lookups).

The outputs equal the unoptimized join's except at one boundary: the unoptimized join sees
itself through the left store if ``t >= observed - retention + 1``, the rewritten one
emits the self-result only if ``t > stream time - retention + 1``.
"""

from __future__ import annotations

from ..fates import Fate, Reason
from ..records import OutputKind, Record, Side, render_value
from ..semantics import Semantics
from ..state import StateLog
from ..stores import CLOCK, Clock, WindowStore
from ..stores.base import Store, owned
from .context import StepContext
from .stream_stream import STREAM_TIME, JoinWindows
from ..times import at

__all__ = ["OptimizedSelfJoin", "SELF_WINDOW"]

SELF_WINDOW = "self window"


class OptimizedSelfJoin:
    """One task's inner self-join over a single window store."""

    REASONS = frozenset({Reason.NULL_KEY, Reason.NULL_VALUE, Reason.EXPIRED, Reason.NO_PARTNER})

    def __init__(self, log: StateLog, task: int, window: JoinWindows, semantics: Semantics) -> None:
        self.window = window
        self.semantics = semantics
        self.clock = Clock(log, task, CLOCK)
        self.store = WindowStore(
            log,
            task,
            Side.LEFT,
            window.retention_ms,
            self.clock,
            SELF_WINDOW,
            hides_expired=semantics.window_store_hides_expired,  # always true: the rewrite exists from 3.4
        )

    def state_stores(self) -> tuple[Store, ...]:
        """Its clock and its one window store."""
        return owned(self.clock, self.store)

    def process(self, record: Record, ctx: StepContext) -> None:
        if record.key is None or record.value is None:
            what = "key" if record.key is None else "value"
            ctx.drop(
                Reason.NULL_KEY if record.key is None else Reason.NULL_VALUE,
                f"{record.describe()} has a null {what}: skipped before stream time advances (the single-store "
                "self-join checks first).",
            )
            return
        t = record.ts
        stream_time = self.clock.advance(STREAM_TIME, t)
        retention = self.window.retention_ms
        emit_self = t > stream_time - retention + 1
        before, after = self.window.before_ms, self.window.after_ms
        as_left = self.store.fetch(record.key, max(0, t - before), max(0, t + after))  # look up
        for other_ts, other in as_left:  # call the joiner: this-other
            ctx.emit(OutputKind.JOINED, record.key, record.value, other, max(t, other_ts))
        as_right = self.store.fetch(record.key, max(0, t - after), max(0, t + before))
        self_done = not emit_self
        for other_ts, other in as_right:  # other-this, with this-this at its place in time
            if other_ts > t and not self_done:
                ctx.emit(OutputKind.JOINED, record.key, record.value, record.value, t)
                self_done = True
            ctx.emit(OutputKind.JOINED, record.key, other, record.value, max(t, other_ts))
        if not self_done:
            ctx.emit(OutputKind.JOINED, record.key, record.value, record.value, t)
        found = len(as_left) + len(as_right)
        itself = (
            "and itself"
            if emit_self
            else f"but not itself (ts {t} <= stream time {stream_time} - retention {retention} + 1)"
        )
        summary = f"{record.describe()} joined {found} earlier record(s) of the single self-join store {itself}."
        if ctx.outputs:
            ctx.settle(Fate.JOINED, None, summary)
        else:
            ctx.settle(Fate.NO_MATCH, Reason.EXPIRED, summary)
        if not self.store.put(record.key, t, record.value):  # update state
            ctx.note(f"{at(render_value(record.value), t)} is older than the store's retention: it is not stored.")
