"""KStream-KTable joins: inner and left. The left input is the stream, the right the table.

How it works:

* A table record only updates the table (a null value deletes the key); it never
  triggers output.
* A stream record looks up the table's *current* value for its key, whatever the
  timestamps, and the result carries the stream record's timestamp.
* Inner: the joiner is called only when the table has a value. Left: always, with null
  when the table has none.
* Since KIP-77 (0.10.2) a stream record with a null value is skipped; before, it triggered
  the lookup (``null-a``). A null key is skipped, except in a left join since KIP-962 (3.7),
  where it is joined with null without a lookup.
* The inner join exists only since 0.10.2.
"""

from __future__ import annotations

from typing import Any, Callable

from ..fates import Fate, Reason
from ..join_model import Variant
from ..records import OutputKind, Record, Side, render_value
from ..semantics import Semantics
from ..state import StateLog
from ..times import at
from ..stores import TableStore
from ..stores.base import Store, owned
from .context import StepContext, drop_idempotent_update, drop_null_key_update

__all__ = ["StreamTableJoin"]


class StreamTableJoin:
    """One task's stream-table join: the right table's store.

    The steps a versioned table changes are methods of their own: :meth:`_write` (update
    state), :meth:`_look_up` (which version answers) and :meth:`_join_now_or_later` (a grace
    buffer); the skip rules and calling the joiner are written once, here.
    """

    REASONS = frozenset({Reason.NULL_KEY, Reason.NULL_VALUE, Reason.NO_PARTNER, Reason.TABLE_UPDATE})

    def __init__(
        self, log: StateLog, task: int, variant: str | Variant, semantics: Semantics, table: Any = None
    ) -> None:
        """``table``: the right table's store, when it is not a plain one (a versioned table)."""
        self.variant = Variant(variant)
        self.semantics = semantics
        self.table = table if table is not None else TableStore(log, task, Side.RIGHT, sends_old_values=False)

    def state_stores(self) -> tuple[Store, ...]:
        """The right table's store (and what it keeps: a versioned store's clock)."""
        return owned(self.table)

    def process(self, record: Record, ctx: StepContext) -> None:
        if record.side is Side.RIGHT:
            if not drop_null_key_update(record, ctx) and not drop_idempotent_update(
                self.table, record, self.semantics, ctx
            ):
                self._put(record, ctx)
        else:
            self._join_stream_record(record, ctx)

    # -- update state -------------------------------------------------------------------
    def _put(self, record: Record, ctx: StepContext) -> None:
        change = self._write(record, ctx)
        if change is not None:
            ctx.settle(
                Fate.STORED,
                Reason.TABLE_UPDATE,
                lambda: (
                    f"Table update for key {render_value(record.key)}{change()}; table updates never trigger a "
                    "stream-table join."
                ),
            )

    def _write(self, record: Record, ctx: StepContext) -> Callable[[], str] | None:
        """Write the update into the table; return what it changed, or ``None`` when the
        table refused it (and the step is settled)."""
        previous = self.table.put(record.key, record.value, record.ts)
        if record.value is None:
            return lambda: " deleted the key" if previous is not None else " deleted nothing (the key was absent)"
        return lambda: f" set it to {render_value(record.value)}"

    # -- skip rules -----------------------------------------------------------------------
    def _join_stream_record(self, record: Record, ctx: StepContext) -> None:
        if record.key is None:
            if self.variant.outer(Side.LEFT) and record.value is not None and self.semantics.relaxed_null_keys:
                self._join_null_key(record, ctx)
                return
            ctx.drop(Reason.NULL_KEY, lambda: f"{record.describe()} has a null key: skipped.")
            return
        if record.value is None and self.semantics.kip77:
            ctx.drop(Reason.NULL_VALUE, lambda: f"stream record @{record.ts} has a null value: skipped (KIP-77).")
            return
        self._join_now_or_later(record, ctx)

    def _join_null_key(self, record: Record, ctx: StepContext) -> None:
        ctx.emit(OutputKind.NULL_KEY, None, record.value, None, record.ts)
        ctx.settle(
            Fate.JOINED,
            None,
            lambda: f"{record.describe()} has a null key: a left join joins it with null without a lookup (KIP-962).",
        )

    def _join_now_or_later(self, record: Record, ctx: StepContext) -> None:
        self._join(record, ctx)

    # -- look up and call the joiner -----------------------------------------------------
    def _look_up(self, record: Record, origin_step: int | None) -> tuple[tuple[Any, int] | None, Callable[[bool], str]]:
        """The table's answer for ``record``, and the story of the lookup (told for a miss
        of an inner join when its argument is true); ``origin_step``: an earlier record's."""
        found = self.table.get(record.key)

        def looked(missed: bool) -> str:
            if missed:
                return f"{record.describe()} looked up the table: key {render_value(record.key)} is absent"
            return f"{record.describe()} looked up the table and " + (
                f"found {at(render_value(found[0]), found[1])}" if found else "found nothing"
            )

        return found, looked

    def _join(self, record: Record, ctx: StepContext, origin_step: int | None = None) -> None:
        """Look up the table and call the joiner (or not); settle the step's own record, or
        note what an earlier record (``origin_step``, leaving a grace buffer) did."""
        own = origin_step is None or origin_step == ctx.index
        found, looked = self._look_up(record, None if own else origin_step)
        if found is None and self.variant.inner:
            _tell(ctx, own, Fate.NO_MATCH, Reason.NO_PARTNER, lambda: f"{looked(True)}; inner join: no output.")
            return
        kind = OutputKind.JOINED if found else OutputKind.UNMATCHED
        table_value = None if found is None else found[0]
        ctx.emit(kind, record.key, record.value, table_value, record.ts, origin_step=None if own else origin_step)
        _tell(ctx, own, Fate.JOINED, None, lambda: f"{looked(False)}; joiner called.")


def _tell(ctx: StepContext, own: bool, fate: Fate, reason: Reason | None, text: Callable[[], str]) -> None:
    """Settle the step's own record with ``text``, or note what an earlier record did."""
    if own:
        ctx.settle(fate, reason, text)
    else:
        ctx.note(text)
