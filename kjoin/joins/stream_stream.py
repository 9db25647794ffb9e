"""KStream-KStream windowed joins: inner, left, outer, in every era.

How it works (current Kafka; one instance per task):

* Each side has a window store written *after* its record was joined, so a record
  never meets itself. A left record at ``t`` looks up right records with ts in
  ``[t - before, t + after]``; a right record at ``t`` looks up left records in
  ``[t - after, t + before]``; both bounds inclusive and clamped at 0.
* A match calls the joiner once per partner, in the partner store's (ts, arrival) order;
  the result carries ``max(left ts, right ts)``.
* Stream time is one per task, shared by both sides (with the outer-join buffer's min time: Kafka's time
  tracker). 3.1 to 3.4.0 share one tracker between all the tasks of an application instance
  (``Semantics.outer_join_time_per_task``, :class:`InstanceTimes`). From 3.7 it advances on every record,
  including records then dropped for a null key or value; 3.1 to 3.6 skip those first, so
  they leave it alone (``Semantics.skipped_records_advance_stream_time``).
* Window stores: from 3.4 a fetch skips records older than the store's observed time minus
  the retention; before, records are kept and found until their whole segment (``max(retention
  / 2, 60 s)``) is dropped (``Semantics.window_store_hides_expired``, ``kjoin/stores/window.py``).
* Left/outer joins, 3.1+ (window with a grace): a record of an outer side without partner
  waits in the outer-join buffer and is emitted with null, at its own timestamp, once
  stream time is *strictly* greater than ``ts + after + grace`` (``ts + before + grace`` for
  right records). A later partner removes it from the buffer. A record whose window
  (``ts + after``) is already behind stream time on arrival is emitted at once.
* Left/outer joins before 3.1, or with the deprecated ``JoinWindows.of`` API: an unmatched
  record of an outer side is emitted with null at once; a later match is emitted as well.
* Old semantics (0.10.0/0.10.1): null values trigger lookups (but never enter a store);
  a left join is driven only by the left side and keeps no left store; left and outer joins
  call the joiner with null whenever the lookup finds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..fates import Fate, Reason
from ..join_model import DEFAULT_GRACE_OF_DEPRECATED_API_MS, JoinWindows, Variant
from ..records import OutputKind, Record, Side, render_value
from ..semantics import Semantics
from ..state import StateLog
from ..times import at, moment, span, stamp
from ..stores import CLOCK, OUTER_BUFFER, BufferedRecord, Clock, OuterJoinBuffer, WindowStore, window_store_name
from ..stores.base import Store, owned
from .context import StepContext

__all__ = ["JoinWindows", "StreamStreamJoin", "InstanceTimes", "DEFAULT_GRACE_OF_DEPRECATED_API_MS"]

STREAM_TIME = "stream time"
OUTER_MIN_TIME = "outer-join buffer min time"
INSTANCE_TIME_TRACKER = "time tracker of every task"


class InstanceTimes:
    """The time trackers of one application instance's left/outer stream-stream joins, before KAFKA-14862
    (``Semantics.outer_join_time_per_task`` off): Kafka builds one ``TimeTracker`` per join with the topology, and
    every task of the instance runs that join's processors with it. One :class:`Clock` per join (by its store
    prefix), in the state under task 0 (as the global store is), holding the instance's stream time and the
    outer-join buffer's min time; each task's window stores keep their own observed times."""

    def __init__(self, log: StateLog) -> None:
        self._log = log
        self._clocks: dict[str, Clock] = {}

    def clock(self, prefix: str) -> Clock:
        """The tracker of the join whose stores are named with ``prefix`` (built by the first task that asks)."""
        if prefix not in self._clocks:
            self._clocks[prefix] = Clock(self._log, 0, f"{prefix}{INSTANCE_TIME_TRACKER}")
        return self._clocks[prefix]


@dataclass(frozen=True)
class _JoinSide:
    """The view of the window from one side: how far to look back and ahead, and whether
    this side is an outer side (its unmatched records still produce a result)."""

    side: Side
    look_back_ms: int
    look_ahead_ms: int
    outer: bool

    def pair(self, mine: Any, other: Any) -> tuple[Any, Any]:
        """(left, right) for the joiner: the right side uses the reversed joiner."""
        return (mine, other) if self.side is Side.LEFT else (other, mine)


class StreamStreamJoin:
    """One task's stream-stream join: two window stores, stream time, and (3.1+ left/outer)
    the shared outer-join buffer."""

    REASONS = frozenset(
        {
            Reason.NULL_KEY,
            Reason.NULL_VALUE,
            Reason.NO_PARTNER,
            Reason.WINDOW_OPEN,
            Reason.NOT_A_TRIGGER,
            Reason.EXPIRED,
        }
    )

    def __init__(
        self,
        log: StateLog,
        task: int,
        variant: str | Variant,
        window: JoinWindows,
        semantics: Semantics,
        prefix: str = "",
        instance: InstanceTimes | None = None,
    ) -> None:
        """``prefix`` names the stores of a join further down a chain (``"join 2: "``). ``instance``: the time
        trackers of the application instance this task runs in, shared with its other tasks where Kafka shares
        them (before KAFKA-14862); ``None``: the task is alone in its instance (as TopologyTestDriver runs it)."""
        self.variant = variant = Variant(variant)
        self.window = window
        self.semantics = semantics
        self.clock = Clock(log, task, f"{prefix}{CLOCK}")
        self.stores = {
            side: WindowStore(
                log,
                task,
                side,
                window.retention_ms,
                self.clock,
                f"{prefix}{window_store_name(side)}",
                hides_expired=semantics.window_store_hides_expired,
            )
            for side in Side
        }
        self.sides = {
            Side.LEFT: _JoinSide(Side.LEFT, window.before_ms, window.after_ms, variant.outer(Side.LEFT)),
            Side.RIGHT: _JoinSide(Side.RIGHT, window.after_ms, window.before_ms, variant.outer(Side.RIGHT)),
        }
        holds_unmatched = not variant.inner and semantics.spurious_result_fix and not window.deprecated_api
        self.buffer = OuterJoinBuffer(log, task, f"{prefix}{OUTER_BUFFER}") if holds_unmatched else None
        shared = holds_unmatched and instance is not None and not semantics.outer_join_time_per_task
        self.times = instance.clock(prefix) if shared else self.clock
        """Kafka's time tracker: stream time and the outer-join buffer's min time (the task's own clock, or the
        instance's, :class:`InstanceTimes`)."""

    def state_stores(self) -> tuple[Store, ...]:
        """Its clock, the two window stores and the outer-join buffer (3.1+, left and outer joins)."""
        return owned(self.clock, *self.stores.values(), self.buffer)

    # -- the processor ------------------------------------------------------------------
    def process(self, record: Record, ctx: StepContext) -> None:
        if not self.semantics.kip77:
            self._process_old(record, ctx)
            return
        side = self.sides[record.side]
        if self.semantics.skipped_records_advance_stream_time:
            stream_time = self.times.advance(STREAM_TIME, record.ts)
            if record.key is None and record.value is not None and side.outer and self.semantics.relaxed_null_keys:
                self._forward_null_key(side, record, ctx)
                return
            if self._skipped(record, ctx):
                return
        else:  # 3.1 to 3.6: the null check comes first, a skipped record leaves stream time alone
            if record.key is None and record.value is not None and side.outer and self.semantics.relaxed_null_keys:
                self._forward_null_key(side, record, ctx)  # only with relaxed_null_keys switched on alone
                return
            if self._skipped(record, ctx):
                return
            stream_time = self.times.advance(STREAM_TIME, record.ts)
        if self.buffer is not None and record.ts == stream_time:
            self.sweep_outer_buffer(side, stream_time, ctx)
        partners = self._look_up(side, record)
        self._join(side, record, partners, ctx)
        if not partners:
            self._handle_unmatched(side, record, stream_time, ctx)
        self._store(record, ctx)

    # -- skip rules ---------------------------------------------------------------------
    def _skipped(self, record: Record, ctx: StepContext) -> bool:
        """Drop a record with a null key or value (with its reason); before KAFKA-9921 a null value's put still
        reaches its window store (``Semantics.join_window_store_skips_null_values``)."""
        if not self._null_checked(record, ctx):
            return False
        if record.key is not None and not self.semantics.join_window_store_skips_null_values:
            store = self.stores[record.side]
            store.observe(record.ts)
            ctx.note(
                f"Before Kafka 2.5.1 (KAFKA-9921) the null value is still put into the {record.side} window store: it "
                f"stores nothing, but the store's observed time is now {store.observed_ms}, and segments behind its "
                "retention are dropped."
            )
        return True

    def _null_checked(self, record: Record, ctx: StepContext) -> bool:
        time = (
            "stream time still advanced"
            if self.semantics.skipped_records_advance_stream_time
            else "stream time unchanged: before 3.7 the null check comes first"
        )
        if record.key is None:
            ctx.drop(Reason.NULL_KEY, lambda: f"{record.describe()} has a null key: skipped, not stored ({time}).")
            return True
        if record.value is None:
            ctx.drop(
                Reason.NULL_VALUE,
                lambda: f"{record.side} record {stamp(record.ts)} has a null value: skipped, not stored ({time}).",
            )
            return True
        return False

    def _forward_null_key(self, side: _JoinSide, record: Record, ctx: StepContext) -> None:
        left, right = side.pair(record.value, None)
        ctx.emit(OutputKind.NULL_KEY, None, left, right, record.ts)
        ctx.settle(
            Fate.JOINED,
            None,
            lambda: (
                f"{record.describe()} has a null key on an outer side: joined with null at once "
                "and never stored (KIP-962)."
            ),
        )

    # -- look up ------------------------------------------------------------------------
    def window_of(self, side: _JoinSide, ts: int) -> tuple[int, int]:
        """The other side's time range a record at ``ts`` on ``side`` joins with."""
        return max(0, ts - side.look_back_ms), max(0, ts + side.look_ahead_ms)

    def _look_up(self, side: _JoinSide, record: Record) -> list[tuple[int, Any]]:
        time_from, time_to = self.window_of(side, record.ts)
        return self.stores[side.side.other].fetch(record.key, time_from, time_to)

    # -- call the joiner ----------------------------------------------------------------
    def _join(self, side: _JoinSide, record: Record, partners: list[tuple[int, Any]], ctx: StepContext) -> None:
        time_from, time_to = self.window_of(side, record.ts)
        for other_ts, other_value in partners:
            left, right = side.pair(record.value, other_value)
            ts = max(record.ts, other_ts) if self.semantics.stream_stream_output_ts_is_max else record.ts
            ctx.emit(OutputKind.JOINED, record.key, left, right, ts)
            if self.buffer is not None:
                for waiting in self.buffer.delete(side.side.other, record.key, other_ts):
                    ctx.note(
                        lambda w=waiting: (
                            f"{at(render_value(w.value), w.ts)} found its partner and left the outer-join buffer."
                        )
                    )
        if partners:
            found = lambda: ", ".join(at(render_value(value), ts) for ts, value in partners)  # noqa: E731
            ctx.settle(
                Fate.JOINED,
                None,
                lambda: (
                    f"{record.describe()} found {found()} in the {side.side.other} window "
                    f"{span(time_from, time_to)}; joiner called {len(partners)} time(s)."
                ),
            )
            other_store = self.stores[side.side.other]
            kept = [(ts, value) for ts, value in partners if other_store.behind_retention(ts)]
            if kept:
                observed, retention = other_store.observed_ms, other_store.retention_ms
                ctx.note(
                    lambda: (
                        ", ".join(at(render_value(value), ts) for ts, value in kept)
                        + f" is older than the {side.side.other} window store's retention ({retention} ms before "
                        f"{observed}) but its segment still lives: found (Kafka before 3.4)."
                    )
                )

    def _handle_unmatched(self, side: _JoinSide, record: Record, stream_time: int, ctx: StepContext) -> None:
        time_from, time_to = self.window_of(side, record.ts)
        looked = lambda: (  # noqa: E731
            f"{record.describe()} found nothing in the {side.side.other} window {span(time_from, time_to)}"
        )
        if not side.outer:
            ctx.settle(Fate.NO_MATCH, Reason.NO_PARTNER, lambda: f"{looked()}; inner side: no output.")
            return
        left, right = side.pair(record.value, None)
        if self.buffer is None:
            ctx.emit(OutputKind.UNMATCHED, record.key, left, right, record.ts)
            ctx.settle(
                Fate.JOINED,
                None,
                lambda: (
                    f"{looked()}; emitted with null at once (eager left/outer semantics: a later match is emitted too)."
                ),
            )
            return
        if time_to < stream_time:
            ctx.emit(OutputKind.UNMATCHED, record.key, left, right, record.ts)
            ctx.settle(
                Fate.JOINED,
                None,
                lambda: (
                    f"{looked()}; its window ended at {moment(time_to)}, before {self._whose()}stream time "
                    f"{moment(stream_time)}: emitted with null at once."
                ),
            )
            return
        closes_at = record.ts + side.look_ahead_ms + self.window.effective_grace_ms
        self.buffer.put(BufferedRecord(side.side, record.key, record.value, record.ts, closes_at, ctx.index))
        min_time = self.times.get(OUTER_MIN_TIME)
        self.times.set(OUTER_MIN_TIME, record.ts if min_time is None else min(min_time, record.ts))
        ctx.settle(
            Fate.BUFFERED,
            Reason.WINDOW_OPEN,
            lambda: (
                f"{looked()}; held in the outer-join buffer until stream time passes {moment(closes_at)} (window "
                f"end {moment(time_to)} + grace {self.window.effective_grace_ms})."
            ),
            until_ms=closes_at,
        )

    def _whose(self) -> str:
        """``"the instance's "`` when the stream time is the instance's (shared by its tasks, before KAFKA-14862)."""
        return "the instance's " if self.times is not self.clock else ""

    def sweep_outer_buffer(self, side: _JoinSide, stream_time: int, ctx: StepContext) -> None:
        """Kafka's ``emitNonJoinedOuterRecords``: emit every buffered record whose window has closed.

        A hook: a record of ``side`` that moved stream time to ``stream_time`` calls it before its lookup. A replay
        of some of a task's records (:class:`kjoin.spark.debug.why.ReplayedSweepJoin`) overrides it to release what
        the whole task's run released (:meth:`release_held`), since the gate and the stop depend on every key.

        The sweep is gated by the buffer's min time (the smallest ts put since the last sweep,
        ``None`` standing for Kafka's ``Long.MAX_VALUE``): it runs only if a record that old,
        seen from the *processing* side, could have closed. A sweep resets the min time and
        then sets it to the ts of every entry it reads, including the entry that stops it
        once both sides have an open entry. That is 3.8+ (``outer_join_sweep_per_side``); 3.1 to
        3.7 close every entry at the processing side's bound and stop at the first open one, and
        from 3.1.1 gate with the processing side's look-back (``outer_join_sweep_gate_looks_back``).

        An entry is one *value*: the store keeps a list per ``<ts, side, key>`` and its iterator
        (``ListValueStore.all()``) yields each value of a list on its own. So when a list of
        several values is the second side's first open group, the sweep stops at its next value
        and leaves the min time at that group's ts, not at the ts of the group after it (which
        could keep the next sweep's gate shut).
        """
        grace = self.window.effective_grace_ms
        per_side = self.semantics.outer_join_sweep_per_side
        min_time = self.times.get(OUTER_MIN_TIME)
        # The gate: the processing side's after (3.1.0, and 3.8+), or its look-back (3.1.1 to 3.7).
        looks_back = self.semantics.outer_join_sweep_gate_looks_back and not per_side
        gate = side.look_back_ms if looks_back else side.look_ahead_ms
        if min_time is None or min_time + gate + grace >= stream_time:
            return
        self.times.set(OUTER_MIN_TIME, None)
        open_sides: set[Side] = set()
        for (ts, _, _), records in self.buffer.groups():
            self.times.set(OUTER_MIN_TIME, ts)
            if len(open_sides) == 2:
                break
            entry_side = records[0].side
            closes_at = self._sweep_close(side, records[0])
            if closes_at >= stream_time:
                if not per_side:
                    break
                open_sides.add(entry_side)
                if len(open_sides) == 2 and len(records) > 1:
                    break  # the group's next value is the next entry: the min time stays at ts
                continue
            self._release(records, closes_at, stream_time, ctx)

    def release_held(self, origin_steps: frozenset[int], side: _JoinSide, stream_time: int, ctx: StepContext) -> None:
        """Emit with null, and delete from the outer-join buffer, every group holding a record of ``origin_steps``
        (the steps that buffered them), as a sweep by a record of ``side`` at ``stream_time`` would."""
        if self.buffer is None:
            return
        for _, records in self.buffer.groups():
            if any(r.origin_step in origin_steps for r in records):
                self._release(records, self._sweep_close(side, records[0]), stream_time, ctx)

    def _sweep_close(self, side: _JoinSide, entry: BufferedRecord) -> int:
        """The time after which a sweep run by a record of ``side`` emits ``entry``. 3.8+: each
        entry closes at its own side's bound; 3.1 to 3.7: every entry at the processing side's."""
        if self.semantics.outer_join_sweep_per_side:
            return entry.closes_at_ms
        return entry.ts + side.look_ahead_ms + self.window.effective_grace_ms

    def _release(self, records: list[BufferedRecord], closes_at: int, stream_time: int, ctx: StepContext) -> None:
        """Emit one ``<ts, side, key>`` group of the buffer with null and delete it."""
        entry_side = records[0].side
        for waiting in records:
            left, right = self.sides[entry_side].pair(waiting.value, None)
            ctx.emit(OutputKind.WINDOW_CLOSED, waiting.key, left, right, waiting.ts, origin_step=waiting.origin_step)
            ctx.note(
                lambda w=waiting, closes=closes_at, of=entry_side: (
                    f"Stream time {moment(stream_time)} passed {moment(closes)}, "
                    f"the close of {of} {at(render_value(w.value), w.ts)}'s window plus grace: emitted with null."
                )
            )
        assert self.buffer is not None
        self.buffer.delete(entry_side, records[0].key, records[0].ts)

    # -- update state -------------------------------------------------------------------
    def _store(self, record: Record, ctx: StepContext) -> None:
        store = self.stores[record.side]
        if not store.put(record.key, record.ts, record.value):
            if store.hides_expired:
                ctx.note(
                    f"{record.describe()} is older than its own window store's retention ({store.retention_ms} ms "
                    f"before {store.observed_ms}): it is not stored."
                )
            else:
                ctx.note(
                    f"{record.describe()} falls in segment {record.ts // store.segment_interval_ms} of its own window "
                    f"store, already dropped (the oldest live segment starts at {store.visible_from()}): it is not "
                    'stored (Kafka before 3.4: "Skipping record for expired segment").'
                )
            if ctx.fate in (Fate.NO_MATCH, None):
                ctx.settle(Fate.NO_MATCH, Reason.EXPIRED)
        elif store.behind_retention(record.ts):
            ctx.note(
                f"{record.describe()} is older than its own window store's retention ({store.retention_ms} ms before "
                f"{store.observed_ms}) but its segment (from {store.visible_from()}, segments of "
                f"{store.segment_interval_ms} ms) still lives: stored and found until the segment is dropped "
                "(Kafka before 3.4)."
            )

    # -- 0.10.0 / 0.10.1 ----------------------------------------------------------------
    def _process_old(self, record: Record, ctx: StepContext) -> None:
        """Old semantics: null values trigger lookups; a left join is driven by the left side only."""
        if record.key is None:
            ctx.drop(Reason.NULL_KEY, lambda: f"{record.describe()} has a null key: skipped.")
            return
        side = self.sides[record.side]
        left_join = self.variant is Variant.LEFT
        if left_join and record.side is Side.RIGHT:
            ctx.settle(
                Fate.STORED,
                Reason.NOT_A_TRIGGER,
                lambda: (
                    f"{record.describe()}: in a 0.10.0 left join only left "
                    "records trigger a lookup; the record only enters the "
                    "right window."
                ),
            )
        else:
            partners = self._look_up(side, record)
            self._join(side, record, partners, ctx)
            outer_side = self.variant.outer(record.side)
            if not partners and outer_side:
                left, right = side.pair(record.value, None)
                ctx.emit(OutputKind.UNMATCHED, record.key, left, right, record.ts)
                time_from, time_to = self.window_of(side, record.ts)
                ctx.settle(
                    Fate.JOINED,
                    None,
                    lambda: (
                        f"{record.describe()} found nothing in the {side.side.other} window "
                        f"[{time_from}, {time_to}]; joiner called with null."
                    ),
                )
            elif not partners:
                time_from, time_to = self.window_of(side, record.ts)
                ctx.settle(
                    Fate.NO_MATCH,
                    Reason.NO_PARTNER,
                    lambda: (
                        f"{record.describe()} found nothing in the {side.side.other} window [{time_from}, {time_to}]."
                    ),
                )
        if record.value is None:
            ctx.note("A null value triggers a lookup in 0.10.0 but never enters a window store.")
        elif left_join and record.side is Side.LEFT:
            ctx.note("A 0.10.0 left join keeps no left window store.")
        else:
            self._store(record, ctx)
