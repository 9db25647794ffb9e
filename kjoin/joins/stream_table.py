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

from typing import Any

from ..fates import Fate, Reason
from ..records import OutputKind, Record, Side, render_value
from ..semantics import Semantics
from ..state import StateLog
from ..stores import TableStore
from .context import StepContext

__all__ = ["StreamTableJoin"]


class StreamTableJoin:
    """One task's stream-table join: the right table's store."""

    def __init__(self, log: StateLog, task: int, variant: str, semantics: Semantics, table: Any = None) -> None:
        """``table``: the right table's store, when it is not a plain one (a versioned table)."""
        self.variant = variant
        self.semantics = semantics
        self.table = table if table is not None else TableStore(log, task, Side.RIGHT, sends_old_values=False)

    def process(self, record: Record, ctx: StepContext) -> None:
        if record.side is Side.RIGHT:
            self._update_table(record, ctx)
        else:
            self._join_stream_record(record, ctx)

    # -- update state -------------------------------------------------------------------
    def _update_table(self, record: Record, ctx: StepContext) -> None:
        if record.key is None:
            ctx.drop(Reason.NULL_KEY, lambda: f"{record.describe()} is a table update with a null key: skipped.")
            return
        previous = self.table.put(record.key, record.value, record.ts)
        if record.value is None:
            change = "deleted the key" if previous is not None else "deleted nothing (the key was absent)"
        else:
            change = f"set it to {render_value(record.value)}"
        ctx.settle(Fate.STORED, Reason.TABLE_UPDATE, lambda: f"Table update for key {render_value(record.key)} {change}; table updates never trigger a stream-table join.")

    # -- look up and call the joiner -----------------------------------------------------
    def _join_stream_record(self, record: Record, ctx: StepContext) -> None:
        if record.key is None:
            if self.variant == "left" and record.value is not None and self.semantics.relaxed_null_keys:
                ctx.emit(OutputKind.NULL_KEY, None, record.value, None, record.ts)
                ctx.settle(Fate.JOINED, None, lambda: f"{record.describe()} has a null key: a left join joins it with null without a lookup (KIP-962).")
                return
            ctx.drop(Reason.NULL_KEY, lambda: f"{record.describe()} has a null key: skipped.")
            return
        if record.value is None and self.semantics.kip77:
            ctx.drop(Reason.NULL_VALUE, lambda: f"stream record @{record.ts} has a null value: skipped (KIP-77).")
            return
        found = self.table.get(record.key)
        if found is None and self.variant == "inner":
            ctx.settle(Fate.NO_MATCH, Reason.NO_PARTNER, lambda: f"{record.describe()} looked up the table: key {render_value(record.key)} is absent; inner join: no output.")
            return
        table_value = None if found is None else found[0]
        ctx.emit(OutputKind.JOINED if found else OutputKind.UNMATCHED, record.key, record.value, table_value, record.ts)
        looked = lambda: f"found {render_value(table_value)}@{found[1]}" if found else "found nothing"  # noqa: E731
        ctx.settle(Fate.JOINED, None, lambda: f"{record.describe()} looked up the table and {looked()}; joiner called.")
