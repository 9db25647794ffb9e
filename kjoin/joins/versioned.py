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

from typing import Any, Callable

from ..fates import Fate, Reason
from ..join_model import Variant
from ..records import OutputKind, Record, Side, render_value
from ..semantics import Semantics
from ..state import StateLog
from ..stores import GraceBuffer, GraceBuffered, PutResult, VersionedStore
from ..stores.base import Store, owned
from .context import StepContext
from .options import TableOptions
from .stream_table import StreamTableJoin
from .table_table import _SETTLED, TableTableJoin
from ..times import at, moment

__all__ = ["VersionedStreamTableJoin", "VersionedTableTableJoin"]


class VersionedStreamTableJoin(StreamTableJoin):
    """One task's stream-table join against a versioned table, with an optional grace buffer."""

    REASONS = StreamTableJoin.REASONS | {Reason.EXPIRED_PUT, Reason.GRACE_PERIOD, Reason.NULL_KEY_IN_GRACE_BUFFER}

    def __init__(
        self,
        log: StateLog,
        task: int,
        variant: str | Variant,
        semantics: Semantics,
        history_retention_ms: int,
        grace_ms: int | None,
        table: VersionedStore | None = None,
    ) -> None:
        """``table``: the versioned table's store when another node owns it (a topology's table source)."""
        if table is None:
            table = VersionedStore(
                log,
                task,
                Side.RIGHT,
                history_retention_ms,
                sends_old_values=False,
                same_ts_tombstone_leaves_no_trace=semantics.versioned_same_ts_tombstone_leaves_no_trace,
            )
        super().__init__(log, task, variant, semantics, table)
        self.buffer = None if grace_ms is None else GraceBuffer(log, task, grace_ms)
        self.held = False
        """Did the grace buffer take the record in hand?"""
        self.released: list[tuple[int, int]] = []
        """The outputs of the record in hand that records leaving the grace buffer gave: (index among its outputs,
        the step that buffered the record), the record itself included when it left at once."""

    def state_stores(self) -> tuple[Store, ...]:
        """The versioned table's store and the grace buffer (with a grace period), each with its clock."""
        return owned(self.table, self.buffer)

    def process(self, record: Record, ctx: StepContext) -> None:
        """``held`` and ``released`` describe the record in hand only: a record that never reaches the grace buffer
        (a table update, a stream record skipped for its null key or value) holds nothing and releases nothing."""
        self.held = False
        self.released.clear()
        super().process(record, ctx)

    # -- update state -------------------------------------------------------------------
    def _write(self, record: Record, ctx: StepContext) -> Callable[[], str] | None:
        outcome, _ = self.table.put(record.key, record.value, record.ts)
        if outcome is PutResult.EXPIRED:
            observed_ms, retention_ms = self.table.observed_ms, self.table.history_retention_ms
            ctx.drop(
                Reason.EXPIRED_PUT,
                lambda: (
                    f"{record.describe()} is older than observed stream time {observed_ms} minus history retention "
                    f"{retention_ms}: the versioned table refuses it."
                ),
            )
            return None
        kind = "the latest version" if outcome is PutResult.LATEST else "an older (out-of-order) version"
        what = lambda: "tombstone" if record.value is None else render_value(record.value)  # noqa: E731
        return lambda: f": {at(what(), record.ts)} stored as {kind}"

    # -- the grace buffer -----------------------------------------------------------------
    def _join_null_key(self, record: Record, ctx: StepContext) -> None:
        if self.buffer is None:
            super()._join_null_key(record, ctx)
            return
        ctx.drop(
            Reason.NULL_KEY_IN_GRACE_BUFFER,
            lambda: (
                f"{record.describe()} has a null key: with a grace period Kafka's buffer.put throws "
                "NullPointerException (the task fails); kjoin skips it."
            ),
        )

    def _join_now_or_later(self, record: Record, ctx: StepContext) -> None:
        buffer = self.buffer
        if buffer is None:
            self._join(record, ctx)
            return
        self.held = buffer.put(GraceBuffered(record.key, record.value, record.ts, ctx.index))
        if not self.held:
            stream_time = buffer.stream_time
            ctx.note(
                lambda: (
                    f"{record.describe()} is older than the grace buffer's stream time {stream_time} minus grace "
                    f"{buffer.grace_ms}: joined at once."
                )
            )
            self._join(record, ctx)
        for evicted in buffer.evict():
            first = len(ctx.outputs)
            self._join(Record(Side.LEFT, evicted.key, evicted.value, evicted.ts), ctx, evicted.origin_step)
            self.released += [(index, evicted.origin_step) for index in range(first, len(ctx.outputs))]
        if ctx.fate is None:
            until = record.ts + buffer.grace_ms
            ctx.settle(
                Fate.BUFFERED,
                Reason.GRACE_PERIOD,
                lambda: (
                    f"{record.describe()} waits in the grace buffer until its stream time reaches {until} "
                    f"(ts + grace {buffer.grace_ms})."
                ),
                until_ms=until,
            )

    # -- look up: the version valid at the record's timestamp ------------------------------
    def _look_up(self, record: Record, origin_step: int | None) -> tuple[tuple[Any, int] | None, Callable[[bool], str]]:
        found, expired = self.table.get_as_of(record.key, record.ts)
        ts = record.ts

        def looked(missed: bool) -> str:
            leaving = "" if origin_step is None else f" from step {origin_step}, leaving the grace buffer,"
            who = f"stream {at(render_value(record.value), ts)} (key {render_value(record.key)}){leaving}"
            text = f"{who} looked up the table as of {moment(ts)} and found " + (
                "nothing" if found is None else at(render_value(found[0]), found[1])
            )
            if expired:
                text += (
                    f" ({ts} is older than observed stream time minus history retention: only the latest version can "
                    "answer; Kafka logs 'Returning null for expired get.' when it cannot)"
                )
            return text

        return found, looked


class VersionedTableTableJoin(TableTableJoin):
    """One task's table-table join where one or both tables are versioned: only the put into
    a versioned table differs (it can refuse an update, or store it as an older version);
    looking up and calling the joiner are the unversioned join's."""

    REASONS = TableTableJoin.REASONS | {Reason.EXPIRED_PUT, Reason.OUT_OF_ORDER_VERSION}

    def __init__(
        self,
        log: StateLog,
        task: int,
        variant: str | Variant,
        semantics: Semantics,
        left: TableOptions,
        right: TableOptions,
        mode: str = "final",
    ) -> None:
        versioned = {
            side: VersionedStore(
                log,
                task,
                side,
                options.history_retention_ms,
                sends_old_values=False,
                same_ts_tombstone_leaves_no_trace=semantics.versioned_same_ts_tombstone_leaves_no_trace,
            )
            for side, options in ((Side.LEFT, left), (Side.RIGHT, right))
            if options.versioned and options.history_retention_ms is not None
        }
        super().__init__(log, task, variant, semantics, sources=versioned)
        self.mode = mode

    def store(self, record: Record, ctx: StepContext) -> Any:
        this_table = self.tables[record.side]
        if not isinstance(this_table, VersionedStore):
            return super().store(record, ctx)  # an unversioned side keeps offset semantics
        outcome, previous = this_table.put(record.key, record.value, record.ts)
        if outcome is PutResult.EXPIRED:
            observed_ms, retention_ms = this_table.observed_ms, this_table.history_retention_ms
            ctx.drop(
                Reason.EXPIRED_PUT,
                lambda: (
                    f"{record.describe()} is older than observed stream time {observed_ms} minus history "
                    f"retention {retention_ms}: the versioned {record.side} table refuses it; nothing is forwarded."
                ),
            )
            return _SETTLED
        if self.mode == "attempt2":
            self._emit_history(record, ctx)
            return _SETTLED
        if outcome is PutResult.OUT_OF_ORDER:
            if self.mode == "attempt1":
                other, _ = self.tables[record.side.other].get_as_of(record.key, record.ts)  # type: ignore[attr-defined]
                ctx.note(
                    f"Attempt 1: out-of-order {record.side} record; one timestamped lookup of the {record.side.other} "
                    f"table as of {moment(record.ts)}."
                )
                self._rule(record, None, other, ctx)
                return _SETTLED
            ctx.drop(
                Reason.OUT_OF_ORDER_VERSION,
                lambda: (
                    f"{record.describe()} is stored as an older version of the versioned {record.side} table (its "
                    "latest is newer): out-of-order, no join result (KIP-914)."
                ),
            )
            return _SETTLED
        return previous[0] if (previous is not None and this_table.sends_old_values) else None

    def _emit_history(self, record: Record, ctx: StepContext) -> None:
        """Attempt 2: one result per other-side version overlapping the new version's validity."""
        this_table = self.tables[record.side]
        other_table = self.tables[record.side.other]
        assert isinstance(this_table, VersionedStore) and isinstance(other_table, VersionedStore)
        # the next version's ts (a tombstone at the latest's own ts is no version: it is valid until the next one)
        valid_to = next((start for start, _, _ in this_table.versions(record.key) if start > record.ts), None)
        overlapping = [
            (start, value)
            for start, to, value in other_table.versions(record.key)
            if value is not None and (valid_to is None or start < valid_to) and (to is None or to > record.ts)
        ]
        span = f"[{record.ts}, {'∞' if valid_to is None else valid_to})"
        if not overlapping:
            ctx.settle(
                Fate.NO_MATCH,
                Reason.NO_PARTNER,
                f"Attempt 2: {record.describe()} is valid in {span}; no {record.side.other} version overlaps it: no "
                "output.",
            )
            return
        for start, value in overlapping:
            ts = max(record.ts, start)
            if record.value is None:
                left, right = self.sides[record.side].pair(None, value)
                ctx.emit_tombstone(record.key, left, right, ts)
            else:
                left, right = self.sides[record.side].pair(record.value, value)
                ctx.emit(OutputKind.JOINED, record.key, left, right, ts)
        ctx.settle(
            Fate.JOINED,
            None,
            f"Attempt 2: {record.describe()} is valid in {span}; scanned the {record.side.other} table's history: "
            f"{len(overlapping)} result(s), one per overlapping version.",
        )
