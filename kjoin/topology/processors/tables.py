"""The table nodes: a table read from a topic (or a stream's ``to_table``), a global table, and a table's ``filter``
or ``mapValues`` view. Each is read by the joins and views below it through :meth:`~NodeProcessor.as_table`."""

from __future__ import annotations

from typing import Any

from ...fates import Fate, Reason
from ...joins.context import StepContext, drop_idempotent_update, drop_null_key_update
from ...records import Record, Side, render_value
from ...semantics import Semantics
from ...stores import TableStore, VersionedStore
from ...stores.global_table import GlobalTableStore
from ..functions import Function
from ..graph import VIEW_OPS, Node
from .base import NodeProcessor, Outcome, Rec, Wiring, said

__all__ = ["TableView", "TableFilter", "TableMapValues", "TableSource", "GlobalTableSource"]


class TableView(NodeProcessor):
    """A table's ``filter`` or ``mapValues`` (``KTableFilter``, ``KTableMapValues``): each ``Change(new, old)`` of
    its parent becomes ``Change(f(new), f(old))``, the old half only when this table sends old values.

    * filter: a row that fails the predicate is null (a tombstone: the key is not in the filtered table); with old
      values on, a change whose new and old rows both fail is not forwarded at all ("unnecessary to forward").
    * mapValues: a null row stays null, the mapper is not called.
    * Materialized (``Materialized.as``): the result is stored in a store of its own, which a join's lookup reads
      (and the old value is the stored one); else a lookup reads the parent and applies the function on the fly.
    """

    filters: bool
    """A filter (a row that fails the predicate is null), or a mapping of values."""

    @classmethod
    def build(cls, node: Node, partition: int, wiring: Wiring) -> "TableView":
        return cls(node, partition, wiring.log, wiring.semantics, wiring.table(node.parents[0], partition))

    def __init__(self, node: Node, partition: int, log: Any, semantics: Semantics, parent_getter: Any) -> None:
        super().__init__(node, partition)
        self.fn: Function = node.params["fn"]
        self.parent_getter = parent_getter
        self.store = TableStore(log, partition, Side.RIGHT, False, "view") if node.params["materialized"] else None
        self.keeps_own_old_values = self.store is not None and semantics.materialized_view_keeps_old_values
        self.sends_old_values = False
        asked = node.params.get("sends_old_values") or any(_reads_old_values(node, c, p) for c, p in node.children)
        # KAFKA-10077 (2.7): a filter asks a parent that keeps a store for old values from the start (whether the
        # parent kept one when the filter was built: kjoin.topology.graph.Graph.keeps_store). KTableFilter's
        # constructor asks its parent itself, materialized or not: a parent mapValues then maps old values too
        eager = self.filters and semantics.table_filter_skips_absent_tombstones and node.params["parent_keeps_store"]
        if eager:
            self.parent_getter.enable_sending_old_values()
        if asked or eager:
            self.enable_sending_old_values()

    def enable_sending_old_values(self) -> None:
        """A table join's outer side or a group-by reads this table's old values: it asks its parent for them,
        unless it is materialized and keeps its own (from 2.7, KAFKA-10494; before, it asked its parent too)."""
        self.sends_old_values = True
        if self.store is not None:
            self.store.enable_sending_old_values()
        if not self.keeps_own_old_values:
            self.parent_getter.enable_sending_old_values()

    def of(self, key: Any, value: Any) -> Any:
        """The row as this table has it: null stays null; a filtered-out row is null."""
        if value is None:
            return None
        if self.filters:
            return value if self.fn(key, value) else None
        return self.fn(value)

    def get(self, key: Any) -> tuple[Any, int] | None:
        """The value getter a join reads: ``(value, ts)`` or ``None``."""
        if self.store is not None:
            return self.store.get(key)
        found = self.parent_getter.get(key)
        if found is None:
            return None
        value = self.of(key, found[0])
        return None if value is None else (value, found[1])

    def as_table(self, partition: int) -> Any:
        return self

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        new = self.of(rec.key, rec.value)
        if not self.sends_old_values:  # KTableFilter/KTableMapValues.computeOldValue: no old value, no call
            old = None
        elif self.keeps_own_old_values:  # from 2.7 (KAFKA-10494) its own store's row; before, the Change's old value
            previous = self.store.get(rec.key)
            old = None if previous is None else previous[0]
        else:
            old = self.of(rec.key, rec.old)
        what = self.fn.text
        if self.filters and self.sends_old_values and new is None and old is None:
            return Outcome(
                Fate.DROPPED,
                Reason.FILTERED,
                lambda: f"{what}: {said(rec)} is not in the filtered table, and was not before: nothing to forward.",
            )
        if self.store is not None:
            self.store.put(rec.key, new, rec.ts)
        change = Rec(rec.key, new, rec.ts, old, self.sends_old_values, rec.is_latest)
        if self.filters:
            text = (
                (lambda: f"{what}: kept {said(rec)}.") if new is not None and rec.value is not None
                else (lambda: f"{what}: {said(rec)} is not in the filtered table: forwarded as a tombstone.")
            )  # fmt: skip
        else:
            text = lambda: f"{render_value(rec.value)} → {render_value(new)}."  # noqa: E731
        return Outcome(Fate.FORWARDED, None, text, [change])


def _reads_old_values(view: Node, child: Node, port: Side | None) -> bool:
    """Does ``child`` read ``view``'s old values (Kafka's ``enableSendingOldValues`` at build time)? A table-table
    join's outer side, a join whose own result sends them, a table group-by, a view below that sends them."""
    if child.op == "table-table":
        variant = child.params["variant"]
        outer = variant == "outer" or (variant == "left" and port is Side.LEFT)
        return outer or bool(child.params.get("sends_old_values"))
    if child.op in ("table-group-by", "fk"):  # KTableImpl.doJoinOnForeignKey: enableSendingOldValues(true), both
        return True
    if child.op in VIEW_OPS and not child.params["materialized"]:
        return bool(child.params.get("sends_old_values")) or any(
            _reads_old_values(child, grandchild, p) for grandchild, p in child.children
        )
    return False


class TableFilter(TableView):
    """A table's ``filter`` (``KTableFilter``)."""

    filters = True


class TableMapValues(TableView):
    """A table's ``mapValues`` (``KTableMapValues``)."""

    filters = False


class TableSource(NodeProcessor):
    """A table read from a topic (or a stream's ``to_table``: Kafka's ``KTableSource`` too), materialized:
    update the store, forward ``Change(new, old)``."""

    @classmethod
    def build(cls, node: Node, partition: int, wiring: Wiring) -> "TableSource":
        return cls(node, partition, wiring.log, wiring.semantics, wiring.materialized)

    def __init__(self, node: Node, partition: int, log: Any, semantics: Semantics, materialized: bool = True) -> None:
        super().__init__(node, partition)
        self.semantics = semantics
        self.materialized = materialized
        """Whether Kafka writes this ``KTableSource`` through a store (:meth:`Graph.materialized`)."""
        retention = node.params.get("history_retention_ms")
        if retention is None:
            self.store: Any = TableStore(log, partition, Side.RIGHT, False, "table")
        else:
            self.store = VersionedStore(
                log,
                partition,
                Side.RIGHT,
                retention,
                sends_old_values=False,
                same_ts_tombstone_leaves_no_trace=semantics.versioned_same_ts_tombstone_leaves_no_trace,
            )
        if node.params.get("sends_old_values"):  # a table group-by downstream reads Change(new, old)
            self.store.enable_sending_old_values()
        self.writers: dict[Any, int] = {}
        """key -> the step whose update is the key's latest value (for ``why``)."""

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        ctx = StepContext(step, Record(Side.RIGHT, rec.key, rec.value, rec.ts, self.partition), no_joiner)
        if drop_null_key_update(ctx.record, ctx) or (  # type: ignore[arg-type]
            self.materialized and drop_idempotent_update(self.store, ctx.record, self.semantics, ctx)  # type: ignore[arg-type]
        ):
            return Outcome(Fate.DROPPED, ctx.reason, ctx.explain)
        if isinstance(self.store, VersionedStore):
            outcome, previous = self.store.put(rec.key, rec.value, rec.ts)
            if outcome.name == "EXPIRED":
                return Outcome(
                    Fate.DROPPED, Reason.EXPIRED_PUT, f"{said(rec)} is older than history retention allows: refused."
                )
            latest = outcome.name == "LATEST"
            text = f"stored {said(rec)} as {'the latest' if latest else 'an older (out-of-order)'} version."
        else:
            previous = self.store.put(rec.key, rec.value, rec.ts)
            latest = True
            text = f"stored {said(rec)}" + (" (a delete)." if rec.value is None else ".")
        if latest:
            self.writers[rec.key] = step
        old = None if previous is None or not self.store.sends_old_values else previous[0]
        forwarded = [Rec(rec.key, rec.value, rec.ts, old, self.store.sends_old_values, latest)]
        return Outcome(Fate.STORED, Reason.TABLE_UPDATE, text, forwarded)

    def as_table(self, partition: int) -> Any:
        return self.store


def no_joiner(left: Any, right: Any) -> Any:  # pragma: no cover - a table source joins nothing
    raise AssertionError("a table source calls no joiner")


class GlobalTableSource(NodeProcessor):
    """A global table (Kafka's ``GlobalKTable``): the whole global topic in one store every task reads, updated by
    the global thread (kjoin files its steps under the task ``global``)."""

    def __init__(self, node: Node, log: Any, semantics: Semantics | None = None) -> None:
        super().__init__(node, 0)
        self.semantics = Semantics.parse(semantics)
        self.store = GlobalTableStore(log)
        self.writers: dict[Any, int] = {}

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        ctx = StepContext(step, Record(Side.RIGHT, rec.key, rec.value, rec.ts, 0), no_joiner)
        record: Record = ctx.record  # type: ignore[assignment]
        if drop_null_key_update(record, ctx) or drop_idempotent_update(self.store, record, self.semantics, ctx):
            return Outcome(Fate.DROPPED, ctx.reason, ctx.explain)
        self.store.put(rec.key, rec.value, rec.ts)
        self.writers[rec.key] = step
        text = (
            f"the global store now holds {said(rec)}" + (" (a delete)" if rec.value is None else "")
            + "; a global table update never triggers a join."
        )  # fmt: skip
        return Outcome(Fate.STORED, Reason.TABLE_UPDATE, text)
