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
from both parents on demand, with that join's own joiner (``KTableKTableJoinValueGetter``),
which is how a chained join (``a.join(b).join(b)``) looks up its left side. When the result
*sends old values* (a downstream join or a user needs them), each output also carries the
``Change``'s old value: the joiner applied to the old input value and the other side's
current value (``old`` of :class:`~kjoin.records.Output`).

Old semantics (0.10.0/0.10.1): every update emits — the joiner's result when the rule's
values are there, a tombstone otherwise (the "unnecessary" tombstones KIP-77 removed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..fates import Fate, Reason
from ..join_model import Variant
from ..records import OutputKind, Record, Side, render_value
from ..semantics import Semantics
from ..state import StateLog
from ..times import at
from ..stores import TableStore
from ..stores.base import Store, owned
from .context import NO_OLD, Joiner, OldValue, StepContext, drop_idempotent_update, drop_null_key_update

__all__ = ["TableTableJoin"]

_SETTLED = object()
"""What :meth:`TableTableJoin.store` returns when the put itself settled the record (nothing to join)."""


@dataclass(frozen=True)
class _TableSide:
    """One side of a table-table join, as the rules see it: is this side kept with null when
    the other has no row (``outer``), and is the other side kept so (``other_outer``)?

    Inner: neither; left: the left side is outer; outer: both. The right side of a left join
    (``follows_other``) only updates the result of an existing left row, and never deletes it.
    """

    side: Side
    outer: bool
    other_outer: bool

    def pair(self, mine: Any, other: Any) -> tuple[Any, Any]:
        """(left, right) for the joiner."""
        return (mine, other) if self.side is Side.LEFT else (other, mine)

    @property
    def follows_other(self) -> bool:
        return self.other_outer and not self.outer

    @property
    def no_partner(self) -> str:
        """What happens to an update of this side when the other side has no row."""
        return (
            "no left row to update: no output."
            if self.follows_other
            else "inner join: no output, not even for a delete."
        )

    def has_result(self, mine: Any, other: Any) -> bool:
        """Is there a join result when this side holds ``mine`` and the other ``other`` (``None``: nothing)?"""
        if other is None:
            return mine is not None and self.outer
        return mine is not None or self.other_outer

    def keeps_result(self, other: tuple[Any, int] | None) -> bool:
        """With this side deleted, does the other side's row still have a result (``joiner(null, other)``),
        rather than a tombstone?"""
        if other is None or not self.other_outer:
            return False
        return self.follows_other or other[0] is not None


def _sides(variant: Variant) -> dict[Side, _TableSide]:
    left_outer, right_outer = variant.outer(Side.LEFT), variant.outer(Side.RIGHT)
    return {
        Side.LEFT: _TableSide(Side.LEFT, left_outer, right_outer),
        Side.RIGHT: _TableSide(Side.RIGHT, right_outer, left_outer),
    }


class TableTableJoin:
    """One task's table-table join of two parents.

    The parents are the left and right source tables (``tables``), or for a chained join an
    upstream join's result on the left (see :mod:`kjoin.joins.chains`). ``sends_old_values``:
    this join's results carry ``Change.old`` (and both parents then send old values too).
    """

    REASONS = frozenset({Reason.NULL_KEY, Reason.NO_PARTNER, Reason.NOTHING_TO_DELETE})

    def __init__(
        self,
        log: StateLog,
        task: int,
        variant: str | Variant,
        semantics: Semantics,
        sends_old_values: bool = False,
        left: Any = None,
        right: Any = None,
        sources: dict[Side, Any] | None = None,
    ) -> None:
        """``left``/``right``: parents other than a new plain source table (an upstream join,
        or a source shared with an upstream join); ``sources``: source stores to use instead
        of plain ones (versioned tables)."""
        self.variant = Variant(variant)
        self.semantics = semantics
        self.sends_old_values = sends_old_values
        self.sides = _sides(self.variant)
        self.tables: dict[Side, Any] = {}  # this join's own source tables
        self.parents: dict[Side, Any] = {}
        given = {Side.LEFT: left, Side.RIGHT: right}
        for side in Side:
            parent = given[side]
            if parent is None:
                parent = (sources or {}).get(side) or TableStore(log, task, side, sends_old_values=False)
                self.tables[side] = parent
            if self.sides[side].outer or sends_old_values:  # "nothing before" is known only from old values
                parent.enable_sending_old_values()
            self.parents[side] = parent

    def state_stores(self) -> tuple[Store, ...]:
        """Its own source tables (plain or versioned); a parent that is another join keeps its own."""
        return owned(*self.tables.values())

    def enable_sending_old_values(self) -> None:
        """A downstream join needs this join's old values: so do both of its parents."""
        self.sends_old_values = True
        for parent in self.parents.values():
            parent.enable_sending_old_values()

    # -- the processor: update state, look up, call the joiner -------------------------------
    def process(self, record: Record, ctx: StepContext) -> None:
        """A source table update (the join's parents are the two source tables)."""
        if drop_null_key_update(record, ctx) or self.drop_idempotent(record, ctx):
            return
        old = self.store(record, ctx)
        if old is not _SETTLED:
            self.on_change(record.side, record, old, ctx)

    def drop_idempotent(self, record: Record, ctx: StepContext) -> bool:
        """KIP-557 (2.6.0 to 2.7.0): the record's source table drops an update that changes nothing."""
        return drop_idempotent_update(self.tables.get(record.side), record, self.semantics, ctx)

    def update(self, record: Record) -> Any:
        """Write a source update into its table; return the value it replaced (or ``None``)."""
        previous = self.tables[record.side].put(record.key, record.value, record.ts)
        return None if previous is None else previous[0]

    def store(self, record: Record, ctx: StepContext) -> Any:
        """Update state: write the update into its table and return the ``Change``'s old value
        (``None`` unless the table sends old values), or ``_SETTLED`` when nothing is to join."""
        old = self.update(record)
        return old if self.tables[record.side].sends_old_values else None

    def on_change(self, side: Side, change: Record, old: Any, ctx: StepContext) -> None:
        """Join ``Change(change.value, old)`` from the ``side`` parent with the other parent's current value."""
        other = self.look_up(side.other, change.key, ctx.joiner)
        rule = self._old_rule if not self.semantics.kip77 else self._rule
        rule(change, old, other, ctx)

    def look_up(self, side: Side, key: Any, joiner: Joiner) -> tuple[Any, int] | None:
        """The ``side`` parent's ``(value, ts)`` of ``key``. A parent given as a value getter (a topology's
        upstream join) applies its own joiner; a parent given as a bare join (one scenario's chain, one joiner
        for every join) is asked with ``joiner``."""
        parent = self.parents[side]
        return parent.value_of(key, joiner) if isinstance(parent, TableTableJoin) else parent.get(key)

    def value_of(self, key: Any, joiner: Joiner) -> tuple[Any, int] | None:
        """The join result's value getter: ``(joined value, ts)`` of ``key`` now, or ``None``."""
        left = self.look_up(Side.LEFT, key, joiner)
        if left is None and not self.sides[Side.RIGHT].outer:
            return None
        right = self.look_up(Side.RIGHT, key, joiner)
        if not self.sides[Side.LEFT].has_result(left, right):
            return None
        present = [found for found in (left, right) if found is not None]
        return joiner(None if left is None else left[0], None if right is None else right[0]), max(
            ts for _, ts in present
        )

    # -- the rules ----------------------------------------------------------------------
    def _rule(self, record: Record, old: Any, other: tuple[Any, int] | None, ctx: StepContext) -> None:
        side = self.sides[record.side]
        new = record.value
        if other is None and not side.outer:
            ctx.settle(Fate.NO_MATCH, Reason.NO_PARTNER, lambda: self._said(record, other, side.no_partner))
            return
        if other is None and new is None and old is None:
            ctx.settle(
                Fate.STORED,
                Reason.NOTHING_TO_DELETE,
                lambda: self._said(
                    record,
                    other,
                    "there was no result to delete: no tombstone.",
                ),
            )
            return
        old_value = self._old_value(side, old, other)
        if new is None and not side.keeps_result(other):
            self._tombstone(side, record, other, ctx, old_value)
            return
        self._emit(side, record, other, ctx, old_value)

    def _old_rule(self, record: Record, old: Any, other: tuple[Any, int] | None, ctx: StepContext) -> None:
        """0.10.0/0.10.1: every update emits, the joiner's result or a tombstone."""
        side = self.sides[record.side]
        old_value = self._old_value(side, old, other)
        if side.has_result(record.value, None if other is None else other[0]):
            self._emit(side, record, other, ctx, old_value)
        else:
            self._tombstone(side, record, other, ctx, old_value)

    def _old_value(self, side: _TableSide, old: Any, other: tuple[Any, int] | None) -> OldValue:
        """The (left, right) pair of the result's old value, ``NO_OLD``, or ``None`` when the
        result does not send old values. Kafka joins the old input value with the other
        side's *current* value; a left join's right side always has a left value to join."""
        if not self.sends_old_values:
            return None
        has_old = old is not None or side.keeps_result(other)
        return side.pair(old, None if other is None else other[0]) if has_old else NO_OLD

    # -- outputs ------------------------------------------------------------------------
    def _ts(self, record: Record, other: tuple[Any, int] | None) -> int:
        if other is None or not self.semantics.table_table_output_ts_is_max:
            return record.ts
        return max(record.ts, other[1])

    def _emit(
        self, side: _TableSide, record: Record, other: tuple[Any, int] | None, ctx: StepContext, old: OldValue
    ) -> None:
        left, right = side.pair(record.value, None if other is None else other[0])
        kind = OutputKind.JOINED if other is not None else OutputKind.UNMATCHED
        output = ctx.emit(kind, record.key, left, right, self._ts(record, other), old=old)
        ctx.settle(
            Fate.JOINED,
            None,
            lambda: self._said(
                record,
                other,
                f"joiner called: {render_value(output.value)}.",
            ),
        )

    def _tombstone(
        self, side: _TableSide, record: Record, other: tuple[Any, int] | None, ctx: StepContext, old: OldValue
    ) -> None:
        left, right = side.pair(record.value, None if other is None else other[0])
        ctx.emit_tombstone(record.key, left, right, self._ts(record, other), old=old)
        ctx.settle(Fate.JOINED, None, lambda: self._said(record, other, "the result is deleted: tombstone."))

    @staticmethod
    def _said(record: Record, other: tuple[Any, int] | None, outcome: str) -> str:
        verb = "deletes" if record.value is None else f"sets {render_value(record.value)}"
        found = "nothing" if other is None else at(render_value(other[0]), other[1])
        return (
            f"{record.side} table update {verb} for key {at(render_value(record.key), record.ts)}; "
            f"the {record.side.other} table has {found}; {outcome}"
        )
