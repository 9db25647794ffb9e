"""KTable-KTable primary-key joins: inner, left, outer, with tombstones.

How it works (since KIP-77, 0.10.2; "other" is the other table's current value):

* Every update writes its own table first (a null value deletes the key), then looks up
  the other table.
* Inner: other missing → no output, even for a delete. Otherwise ``joiner(new, other)``,
  or a tombstone when the update is a delete.
* Left, left update: other missing and nothing before or after → no output; otherwise
  ``joiner(new, other-or-null)``, or a tombstone when the update is a delete.
* Left, right update: left missing → no output; otherwise always ``joiner(left, new right)``,
  even when the right update is a delete (``C-null``, not a tombstone).
* Outer: other missing and nothing before or after → no output; otherwise
  ``joiner(new, other)`` if either is non-null, else a tombstone.
* A result carries max(update ts, other ts), or the update ts when the other is missing.
  A left join makes the left table send old values, an outer join both: "nothing before"
  is only known to a table that sends old values.

Old semantics (0.10.0/0.10.1): every update emits — the joiner's result when the rule's
values are there, a tombstone otherwise (the "unnecessary" tombstones KIP-77 removed).
"""

from __future__ import annotations

from typing import Any

from ..fates import Fate, Reason
from ..records import OutputKind, Record, Side, render_value
from ..semantics import Semantics
from ..state import StateLog
from ..stores import TableStore
from .context import StepContext

__all__ = ["TableTableJoin"]


class TableTableJoin:
    """One task's table-table join: the left and right tables' stores."""

    def __init__(self, log: StateLog, task: int, variant: str, semantics: Semantics) -> None:
        self.variant = variant
        self.semantics = semantics
        sends_old = {Side.LEFT: variant in ("left", "outer"), Side.RIGHT: variant == "outer"}
        self.tables = {side: TableStore(log, task, side, sends_old[side]) for side in Side}

    def process(self, record: Record, ctx: StepContext) -> None:
        if record.key is None:
            ctx.drop(Reason.NULL_KEY, f"{record.describe()} is a table update with a null key: skipped.")
            return
        this_table = self.tables[record.side]
        previous = this_table.put(record.key, record.value, record.ts)  # update state
        old = previous[0] if (previous is not None and this_table.sends_old_values) else None
        other = self.tables[record.side.other].get(record.key)  # look up
        rule = self._old_rule if not self.semantics.kip77 else self._rule
        rule(record, old, other, ctx)  # call the joiner (or not)

    # -- the rules ----------------------------------------------------------------------
    def _rule(self, record: Record, old: Any, other: tuple[Any, int] | None, ctx: StepContext) -> None:
        new = record.value
        other_value = None if other is None else other[0]
        if self.variant == "left" and record.side is Side.RIGHT:
            if other is None:
                ctx.settle(Fate.NO_MATCH, Reason.NO_PARTNER, self._said(record, other, "no left row to update: no output."))
                return
            self._emit(record, other, ctx, value_pair=(other_value, new))
            return
        outer_side = self.variant == "outer" or (self.variant == "left" and record.side is Side.LEFT)
        if other is None and not outer_side:
            ctx.settle(Fate.NO_MATCH, Reason.NO_PARTNER, self._said(record, other, "inner join: no output, not even for a delete."))
            return
        if other is None and new is None and old is None:
            ctx.settle(Fate.STORED, Reason.NOTHING_TO_DELETE, self._said(record, other, "there was no result to delete: no tombstone."))
            return
        if new is None and (other_value is None or not outer_side or self.variant == "left"):
            self._tombstone(record, other, ctx)
            return
        self._emit(record, other, ctx, value_pair=self._pair(record.side, new, other_value))

    def _old_rule(self, record: Record, old: Any, other: tuple[Any, int] | None, ctx: StepContext) -> None:
        new = record.value
        other_value = None if other is None else other[0]
        if self.variant == "inner":
            ok = new is not None and other_value is not None
        elif self.variant == "left":
            ok = (new if record.side is Side.LEFT else other_value) is not None
        else:
            ok = new is not None or other_value is not None
        if ok:
            self._emit(record, other, ctx, value_pair=self._pair(record.side, new, other_value))
        else:
            self._tombstone(record, other, ctx)

    # -- outputs ------------------------------------------------------------------------
    @staticmethod
    def _pair(side: Side, mine: Any, other: Any) -> tuple[Any, Any]:
        return (mine, other) if side is Side.LEFT else (other, mine)

    def _ts(self, record: Record, other: tuple[Any, int] | None) -> int:
        if other is None or not self.semantics.table_table_output_ts_is_max:
            return record.ts
        return max(record.ts, other[1])

    def _emit(self, record: Record, other: tuple[Any, int] | None, ctx: StepContext, value_pair: tuple[Any, Any]) -> None:
        left, right = value_pair
        output = ctx.emit(OutputKind.JOINED if other is not None else OutputKind.UNMATCHED, record.key, left, right, self._ts(record, other))
        ctx.settle(Fate.JOINED, None, self._said(record, other, f"joiner called: {render_value(output.value)}."))

    def _tombstone(self, record: Record, other: tuple[Any, int] | None, ctx: StepContext) -> None:
        left, right = self._pair(record.side, record.value, None if other is None else other[0])
        ctx.emit_tombstone(record.key, left, right, self._ts(record, other))
        ctx.settle(Fate.JOINED, None, self._said(record, other, "the result is deleted: tombstone."))

    @staticmethod
    def _said(record: Record, other: tuple[Any, int] | None, outcome: str) -> str:
        verb = "deletes" if record.value is None else f"sets {render_value(record.value)}"
        found = "nothing" if other is None else f"{render_value(other[0])}@{other[1]}"
        return f"{record.side} table update {verb} for key {render_value(record.key)}@{record.ts}; the {record.side.other} table has {found}; {outcome}"
