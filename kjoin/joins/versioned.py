"""Joins over versioned tables (KIP-914) and the stream-table grace period (KIP-923).

How it works (docs/semantics.md §2.3–2.4, §3.5, §5):

* **Stream-table, versioned table.** A stream record looks up ``get(key, stream ts)``: the
  table version valid at the stream record's timestamp, not the latest. A lookup older than
  history retention can only find the latest version, and only if it is old enough;
  otherwise it finds nothing (inner: no output; left: ``joiner(v, null)``).
* **Grace period.** Stream records that pass the null checks wait in a grace buffer. Its
  stream time B is the largest ts accepted; a record with ``ts < B - grace`` is joined at
  once; any other is buffered, and then every buffered record with ``ts <= B - grace`` is
  joined, in (ts, key bytes, arrival) order, against the version of its own ts, looked up
  *then*.
* **Table-table, versioned side.** The versioned store refuses a put older than observed
  stream time minus history retention (nothing happens). An out-of-order version is stored
  but the processor of *that* side emits nothing (``versioned_mode: final``). An in-order
  update joins the other side's *latest* value, as an unversioned join does. An unversioned
  side keeps offset semantics: its out-of-order updates overwrite and join.
* **Seed 003's rejected designs** (both tables versioned, inner join, teaching only):
  ``attempt1`` joins an out-of-order record with the other side's version at its
  timestamp (one timestamped lookup); ``attempt2`` emits, for *every* record, one result per
  version of the other side whose validity overlaps the new version's, at
  max(new ts, other version ts), oldest first.

Example (seed 003, both tables versioned, inner join, ``final``):

| record | result |
|---|---|
| A a0@0 | B empty: nothing |
| B b2@2 | (a0, b2)@2 |
| A a5@5 | (a5, b2)@5 |
| A a1@1 | out-of-order on A: stored as a version, nothing emitted |
"""

from __future__ import annotations

from typing import Any

from ..fates import Fate, Reason
from ..records import OutputKind, Record, Side, render_value
from ..semantics import Semantics
from ..state import StateLog
from ..stores import GraceBuffer, GraceBuffered, PutResult, VersionedStore
from .context import StepContext
from .stream_table import StreamTableJoin
from .table_table import TableTableJoin

__all__ = ["VersionedStreamTableJoin", "VersionedTableTableJoin"]


class VersionedStreamTableJoin(StreamTableJoin):
    """One task's stream-table join against a versioned table, with an optional grace buffer."""

    def __init__(self, log: StateLog, task: int, variant: str, semantics: Semantics, history_retention_ms: int, grace_ms: int | None) -> None:
        super().__init__(log, task, variant, semantics, VersionedStore(log, task, Side.RIGHT, history_retention_ms, sends_old_values=False))
        self.buffer = None if grace_ms is None else GraceBuffer(log, task, grace_ms)

    # -- update state -------------------------------------------------------------------
    def _update_table(self, record: Record, ctx: StepContext) -> None:
        if record.key is None:
            ctx.drop(Reason.NULL_KEY, f"{record.describe()} is a table update with a null key: skipped.")
            return
        outcome, _ = self.table.put(record.key, record.value, record.ts)
        if outcome is PutResult.EXPIRED:
            ctx.drop(Reason.EXPIRED_PUT, f"{record.describe()} is older than observed stream time {self.table.observed_ms} minus history retention {self.table.history_retention_ms}: the versioned table refuses it.")
            return
        kind = "the latest version" if outcome is PutResult.LATEST else "an older (out-of-order) version"
        what = "tombstone" if record.value is None else render_value(record.value)
        ctx.settle(Fate.STORED, Reason.TABLE_UPDATE, f"Table update for key {render_value(record.key)}: {what}@{record.ts} stored as {kind}; table updates never trigger a stream-table join.")

    # -- look up and call the joiner -----------------------------------------------------
    def _join_stream_record(self, record: Record, ctx: StepContext) -> None:
        if record.key is None:
            if self.variant == "left" and record.value is not None and self.semantics.relaxed_null_keys:
                if self.buffer is not None:
                    ctx.drop(Reason.NULL_KEY_IN_GRACE_BUFFER, f"{record.describe()} has a null key: with a grace period Kafka's buffer.put throws NullPointerException (the task fails); kjoin skips it.")
                    return
                ctx.emit(OutputKind.NULL_KEY, None, record.value, None, record.ts)
                ctx.settle(Fate.JOINED, None, f"{record.describe()} has a null key: a left join joins it with null without a lookup (KIP-962).")
                return
            ctx.drop(Reason.NULL_KEY, f"{record.describe()} has a null key: skipped.")
            return
        if record.value is None:
            ctx.drop(Reason.NULL_VALUE, f"stream record @{record.ts} has a null value: skipped (KIP-77).")
            return
        if self.buffer is None:
            self._join(record.key, record.value, record.ts, ctx, None)
            return
        waiting = GraceBuffered(record.key, record.value, record.ts, ctx.index)
        if not self.buffer.put(waiting):
            ctx.note(f"{record.describe()} is older than the grace buffer's stream time {self.buffer.stream_time} minus grace {self.buffer.grace_ms}: joined at once.")
            self._join(record.key, record.value, record.ts, ctx, None)
        for evicted in self.buffer.evict():
            self._join(evicted.key, evicted.value, evicted.ts, ctx, evicted.origin_step)
        if ctx.fate is None:
            until = record.ts + self.buffer.grace_ms
            ctx.settle(Fate.BUFFERED, Reason.GRACE_PERIOD, f"{record.describe()} waits in the grace buffer until its stream time reaches {until} (ts + grace {self.buffer.grace_ms}).", until_ms=until)

    def _join(self, key: Any, value: Any, ts: int, ctx: StepContext, origin_step: int | None) -> None:
        """Look up the version valid at ``ts`` and call the joiner (or not); settle the step's
        own record, or note what an earlier buffered record did."""
        found, expired = self.table.get_as_of(key, ts)
        own = origin_step is None or origin_step == ctx.index
        who = f"stream {render_value(value)}@{ts} (key {render_value(key)})" + ("" if own else f" from step {origin_step}, leaving the grace buffer,")
        looked = f"{who} looked up the table as of {ts} and found " + ("nothing" if found is None else f"{render_value(found[0])}@{found[1]}")
        if expired:
            looked += f" ({ts} is older than observed stream time minus history retention: only the latest version can answer; Kafka logs 'Returning null for expired get.' when it cannot)"
        origin = None if own else origin_step
        if found is None and self.variant == "inner":
            text = f"{looked}; inner join: no output."
            if own:
                ctx.settle(Fate.NO_MATCH, Reason.NO_PARTNER, text)
            else:
                ctx.note(text)
            return
        ctx.emit(OutputKind.JOINED if found else OutputKind.UNMATCHED, key, value, None if found is None else found[0], ts, origin_step=origin)
        if own:
            ctx.settle(Fate.JOINED, None, f"{looked}; joiner called.")
        else:
            ctx.note(f"{looked}; joiner called.")


class VersionedTableTableJoin(TableTableJoin):
    """One task's table-table join where one or both tables are versioned."""

    def __init__(self, log: StateLog, task: int, variant: str, semantics: Semantics, left: Any, right: Any, mode: str = "final") -> None:
        versioned = {side: VersionedStore(log, task, side, options.history_retention_ms, sends_old_values=False) for side, options in ((Side.LEFT, left), (Side.RIGHT, right)) if options.versioned}
        super().__init__(log, task, variant, semantics, sources=versioned)
        self.mode = mode

    def process(self, record: Record, ctx: StepContext) -> None:
        this_table = self.tables[record.side]
        if record.key is None or not isinstance(this_table, VersionedStore):
            super().process(record, ctx)  # an unversioned side keeps offset semantics
            return
        outcome, previous = this_table.put(record.key, record.value, record.ts)  # update state
        if outcome is PutResult.EXPIRED:
            ctx.drop(Reason.EXPIRED_PUT, f"{record.describe()} is older than observed stream time {this_table.observed_ms} minus history retention {this_table.history_retention_ms}: the versioned {record.side} table refuses it; nothing is forwarded.")
            return
        if self.mode == "attempt2":
            self._emit_history(record, ctx)
            return
        if outcome is PutResult.OUT_OF_ORDER:
            if self.mode == "attempt1":
                other, _ = self.tables[record.side.other].get_as_of(record.key, record.ts)  # type: ignore[attr-defined]
                ctx.note(f"Attempt 1: out-of-order {record.side} record; one timestamped lookup of the {record.side.other} table as of {record.ts}.")
                self._rule(record, None, other, ctx)
                return
            ctx.drop(Reason.OUT_OF_ORDER_VERSION, f"{record.describe()} is stored as an older version of the versioned {record.side} table (its latest is newer): out-of-order, no join result (KIP-914).")
            return
        old = previous[0] if (previous is not None and this_table.sends_old_values) else None
        other = self.tables[record.side.other].get(record.key)  # look up: always the latest
        rule = self._old_rule if not self.semantics.kip77 else self._rule
        rule(record, old, other, ctx)  # call the joiner (or not)

    def _emit_history(self, record: Record, ctx: StepContext) -> None:
        """Attempt 2: one result per other-side version overlapping the new version's validity."""
        this_table = self.tables[record.side]
        other_table = self.tables[record.side.other]
        assert isinstance(this_table, VersionedStore) and isinstance(other_table, VersionedStore)
        valid_to = next(to for start, to, _ in this_table.versions(record.key) if start == record.ts)
        overlapping = [
            (start, value)
            for start, to, value in other_table.versions(record.key)
            if value is not None and (valid_to is None or start < valid_to) and (to is None or to > record.ts)
        ]
        span = f"[{record.ts}, {'∞' if valid_to is None else valid_to})"
        if not overlapping:
            ctx.settle(Fate.NO_MATCH, Reason.NO_PARTNER, f"Attempt 2: {record.describe()} is valid in {span}; no {record.side.other} version overlaps it: no output.")
            return
        for start, value in overlapping:
            ts = max(record.ts, start)
            if record.value is None:
                left, right = self._pair(record.side, None, value)
                ctx.emit_tombstone(record.key, left, right, ts)
            else:
                left, right = self._pair(record.side, record.value, value)
                ctx.emit(OutputKind.JOINED, record.key, left, right, ts)
        ctx.settle(Fate.JOINED, None, f"Attempt 2: {record.describe()} is valid in {span}; scanned the {record.side.other} table's history: {len(overlapping)} result(s), one per overlapping version.")
