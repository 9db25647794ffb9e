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

A join's result is itself a table: its value getter computes the joined value of a key
from both parents on demand, which is how a chained join (``a.join(b).join(b)``) looks up
its left side. When the result *sends old values* (a downstream join or a user needs them),
each output also carries the ``Change``'s old value: the joiner applied to the old input
value and the other side's current value (``old`` of :class:`~kjoin.records.Output`).

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
from .context import NO_OLD, Joiner, OldValue, StepContext

__all__ = ["TableTableJoin"]


class TableTableJoin:
    """One task's table-table join of two parents.

    The parents are the left and right source tables (``tables``), or for a chained join an
    upstream join's result on the left (see :mod:`kjoin.joins.topology`). ``sends_old_values``:
    this join's results carry ``Change.old`` (and both parents then send old values too).
    """

    def __init__(
        self, log: StateLog, task: int, variant: str, semantics: Semantics, sends_old_values: bool = False, left: Any = None, right: Any = None, sources: dict[Side, Any] | None = None
    ) -> None:
        """``left``/``right``: parents other than a new plain source table (an upstream join,
        or a source shared with an upstream join); ``sources``: source stores to use instead
        of plain ones (versioned tables)."""
        self.variant = variant
        self.semantics = semantics
        self.sends_old_values = sends_old_values
        sends_old = {Side.LEFT: variant in ("left", "outer") or sends_old_values, Side.RIGHT: variant == "outer" or sends_old_values}
        self.tables: dict[Side, Any] = {}  # this join's own source tables
        self.parents: dict[Side, Any] = {}
        given = {Side.LEFT: left, Side.RIGHT: right}
        for side in Side:
            parent = given[side]
            if parent is None:
                parent = self.tables[side] = (sources or {}).get(side) or TableStore(log, task, side, sends_old_values=False)
            if sends_old[side]:
                parent.enable_sending_old_values()
            self.parents[side] = parent

    def enable_sending_old_values(self) -> None:
        """A downstream join needs this join's old values: so do both of its parents."""
        self.sends_old_values = True
        for parent in self.parents.values():
            parent.enable_sending_old_values()

    # -- the processor: update state, look up, call the joiner -------------------------------
    def process(self, record: Record, ctx: StepContext) -> None:
        """A source table update (the join's parents are the two source tables)."""
        if record.key is None:
            ctx.drop(Reason.NULL_KEY, lambda: f"{record.describe()} is a table update with a null key: skipped.")
            return
        raw_old = self.update(record)
        self.on_change(record.side, record, raw_old if self.tables[record.side].sends_old_values else None, ctx)

    def update(self, record: Record) -> Any:
        """Write a source update into its table; return the value it replaced (or ``None``).
        The ``Change`` carries it as old value only if the table sends old values."""
        previous = self.tables[record.side].put(record.key, record.value, record.ts)
        return None if previous is None else previous[0]

    def on_change(self, side: Side, change: Record, old: Any, ctx: StepContext) -> None:
        """Join ``Change(change.value, old)`` from the ``side`` parent with the other parent's current value."""
        other = self.look_up(side.other, change.key, ctx.joiner)
        rule = self._old_rule if not self.semantics.kip77 else self._rule
        rule(change, old, other, ctx)

    def look_up(self, side: Side, key: Any, joiner: Joiner) -> tuple[Any, int] | None:
        parent = self.parents[side]
        return parent.value_of(key, joiner) if isinstance(parent, TableTableJoin) else parent.get(key)

    def value_of(self, key: Any, joiner: Joiner) -> tuple[Any, int] | None:
        """The join result's value getter: ``(joined value, ts)`` of ``key`` now, or ``None``."""
        left = self.look_up(Side.LEFT, key, joiner)
        if left is None and self.variant != "outer":
            return None
        right = self.look_up(Side.RIGHT, key, joiner)
        if right is None and (self.variant == "inner" or left is None):
            return None
        present = [found for found in (left, right) if found is not None]
        return joiner(None if left is None else left[0], None if right is None else right[0]), max(ts for _, ts in present)

    # -- the rules ----------------------------------------------------------------------
    def _rule(self, record: Record, old: Any, other: tuple[Any, int] | None, ctx: StepContext) -> None:
        new = record.value
        other_value = None if other is None else other[0]
        if self.variant == "left" and record.side is Side.RIGHT:
            if other is None:
                ctx.settle(Fate.NO_MATCH, Reason.NO_PARTNER, lambda: self._said(record, other, "no left row to update: no output."))
                return
            self._emit(record, other, ctx, value_pair=(other_value, new), old=self._old_value(record.side, old, other))
            return
        outer_side = self.variant == "outer" or (self.variant == "left" and record.side is Side.LEFT)
        if other is None and not outer_side:
            ctx.settle(Fate.NO_MATCH, Reason.NO_PARTNER, lambda: self._said(record, other, "inner join: no output, not even for a delete."))
            return
        if other is None and new is None and old is None:
            ctx.settle(Fate.STORED, Reason.NOTHING_TO_DELETE, lambda: self._said(record, other, "there was no result to delete: no tombstone."))
            return
        old_value = self._old_value(record.side, old, other)
        if new is None and (other_value is None or not outer_side or self.variant == "left"):
            self._tombstone(record, other, ctx, old_value)
            return
        self._emit(record, other, ctx, value_pair=self._pair(record.side, new, other_value), old=old_value)

    def _old_rule(self, record: Record, old: Any, other: tuple[Any, int] | None, ctx: StepContext) -> None:
        new = record.value
        other_value = None if other is None else other[0]
        if self.variant == "inner":
            ok = new is not None and other_value is not None
        elif self.variant == "left":
            ok = (new if record.side is Side.LEFT else other_value) is not None
        else:
            ok = new is not None or other_value is not None
        old_value = self._old_value(record.side, old, other)
        if ok:
            self._emit(record, other, ctx, value_pair=self._pair(record.side, new, other_value), old=old_value)
        else:
            self._tombstone(record, other, ctx, old_value)

    def _old_value(self, side: Side, old: Any, other: tuple[Any, int] | None) -> OldValue:
        """The (left, right) pair of the result's old value, ``NO_OLD``, or ``None`` when the
        result does not send old values. Kafka joins the old input value with the other
        side's *current* value; a left join's right side always has a left value to join."""
        if not self.sends_old_values:
            return None
        other_value = None if other is None else other[0]
        if self.variant == "left" and side is Side.RIGHT:
            return (other_value, old)
        if self.variant == "outer":
            has_old = other_value is not None or old is not None
        else:
            has_old = old is not None
        return self._pair(side, old, other_value) if has_old else NO_OLD

    # -- outputs ------------------------------------------------------------------------
    @staticmethod
    def _pair(side: Side, mine: Any, other: Any) -> tuple[Any, Any]:
        return (mine, other) if side is Side.LEFT else (other, mine)

    def _ts(self, record: Record, other: tuple[Any, int] | None) -> int:
        if other is None or not self.semantics.table_table_output_ts_is_max:
            return record.ts
        return max(record.ts, other[1])

    def _emit(self, record: Record, other: tuple[Any, int] | None, ctx: StepContext, value_pair: tuple[Any, Any], old: OldValue = None) -> None:
        left, right = value_pair
        output = ctx.emit(OutputKind.JOINED if other is not None else OutputKind.UNMATCHED, record.key, left, right, self._ts(record, other), old=old)
        ctx.settle(Fate.JOINED, None, lambda: self._said(record, other, f"joiner called: {render_value(output.value)}."))

    def _tombstone(self, record: Record, other: tuple[Any, int] | None, ctx: StepContext, old: OldValue = None) -> None:
        left, right = self._pair(record.side, record.value, None if other is None else other[0])
        ctx.emit_tombstone(record.key, left, right, self._ts(record, other), old=old)
        ctx.settle(Fate.JOINED, None, lambda: self._said(record, other, "the result is deleted: tombstone."))

    @staticmethod
    def _said(record: Record, other: tuple[Any, int] | None, outcome: str) -> str:
        verb = "deletes" if record.value is None else f"sets {render_value(record.value)}"
        found = "nothing" if other is None else f"{render_value(other[0])}@{other[1]}"
        return f"{record.side} table update {verb} for key {render_value(record.key)}@{record.ts}; the {record.side.other} table has {found}; {outcome}"
