"""A topology's grouping and aggregating processors, one instance per task.

How it works (Kafka's processors, with caching off as kjoin's every run):

* :class:`StreamAggregate` is ``KStreamAggregate``/``KStreamReduce`` (``groupBy``/``groupByKey`` then ``count``,
  ``reduce``, ``aggregate``): a null key or a null value is skipped; the group's aggregate starts from the
  initializer (a reduce: from the first value), is stored with ``max(record ts, aggregate ts)`` and forwarded as
  ``Change(new aggregate, old aggregate)``. A re-keyed stream is read through its repartition topic first.
* Windowed (``windowed_by``) it is kjoin's windowed aggregates: tumbling or hopping windows
  (``KStreamWindowAggregate``, :class:`~kjoin.joins.window_aggregate.WindowAggregate` on the seed's segmented
  window store: only a null key is skipped, ``Semantics.windowed_aggregate_counts_null_values``; every window
  holding the record that has not closed, ``end + grace > the processor's stream time``, is updated), session
  windows (:class:`~kjoin.joins.session_aggregate.SessionAggregate`: a merged session's old rows are forwarded as
  tombstones) and sliding windows (:class:`~kjoin.joins.sliding_aggregate.SlidingAggregate`). The result is keyed
  by a :class:`WindowedKey` (``[key@start/end]``, as Kafka's ``Windowed.toString``).
* :class:`TableGroupBy` is ``KTableRepartitionMap``: it maps a table's ``Change(new, old)`` to its groups. Both
  halves in one group: one repartition record ``Change(new, old)`` (KIP-904, 3.5+; before, two records); else
  the old half ``Change(null, old)`` to the old group, then ``Change(new, null)`` to the new. A null group key or
  a null value makes no half.
* :class:`TableAggregate` is ``KTableAggregate``/``KTableReduce``: the subtractor with the old value (if the group
  has an aggregate), then the adder with the new one, stored and forwarded as ``Change(new, old)``.
"""

from __future__ import annotations

import struct
from typing import Any

from ..fates import Fate, Reason
from ..partitioner import serialize_key
from ..joins.aggregate import Aggregation, AggregationError
from ..joins.context import StepContext
from ..joins.final_results import EmitFinalTimeWindows
from ..joins.table_group_by import SPLIT_NOTE, group_halves, split_in_one_group
from ..joins.session_aggregate import SessionAggregate, SessionWindows
from ..joins.sliding_aggregate import SlidingAggregate, SlidingWindows
from ..joins.window_aggregate import WindowAggregate
from ..records import Record, Side, render_value
from ..semantics import Semantics
from ..stores.aggregate import AggregateStore
from .graph import Node, TopologyError
from .plain import as_written
from .processors import NodeProcessor, OldValue, Outcome, Rec, said
from ..times import at

__all__ = [
    "StreamAggregate",
    "TableGroupBy",
    "TableAggregate",
    "WindowedKey",
    "OldValue",
    "AGGREGATE_OPS",
    "build_aggregate",
]


class WindowedKey(str):
    """A windowed aggregate's key: Kafka's ``Windowed<K>``, written ``[key@start/end]`` as its ``toString``."""

    key: Any
    start_ms: int
    end_ms: int

    def __new__(cls, key: Any, start_ms: int, end_ms: int) -> "WindowedKey":
        made = super().__new__(cls, f"[{render_value(key)}@{start_ms}/{end_ms}]")
        made.key, made.start_ms, made.end_ms = key, start_ms, end_ms
        return made

    def __reduce__(self) -> tuple[Any, tuple[Any, int, int]]:
        # pickled whole (the Spark engine carries written records between stages), not as the text alone
        return (WindowedKey, (self.key, self.start_ms, self.end_ms))

    def window_bytes(self, session: bool) -> bytes:
        """What Kafka's windowed serde writes after the key's bytes: the window's start (``TimeWindowedSerializer``),
        or a session's end and start (``SessionWindowedSerializer``), each a big-endian long."""
        times = (self.end_ms, self.start_ms) if session else (self.start_ms,)
        return b"".join(struct.pack(">q", t) for t in times)

    def serialized(self, session: bool) -> bytes:
        """The bytes Kafka's windowed serde writes: the key's, then :meth:`window_bytes`; where a store or topic
        keyed by ``Windowed<K>`` orders by bytes (a foreign-key join's subscriptions, ``[fk][pk]``), windows of one
        key come in the order of their start, not of this text."""
        return serialize_key(self.key) + self.window_bytes(session)


class _AggregateTable:
    """What a join reads an aggregate through (its value getter), and whether it sends old values (Kafka's
    ``sendOldValues``: on when a table join or a table group-by reads the aggregate).

    A windowed aggregate is read by its :class:`WindowedKey`, as Kafka's windowed value getters read
    ``Windowed<K>``: tumbling, hopping and sliding windows fetch the key's window by its start
    (``windowStore.fetch(key, start)``: the stored aggregate and timestamp, nothing for a window behind the store's
    retention); session windows fetch the exact session (``fetchSession(key, start, end)``) with the session's end as
    its timestamp (``KStreamSessionWindowAggregate``'s getter)."""

    def __init__(self, store: AggregateStore | None, node: Node, windowed: Any = None) -> None:
        self.store = store
        self.windowed = windowed
        self.sends_old_values = any(child.op in OLD_VALUE_READERS for child, _ in node.children)

    def get(self, key: Any) -> Any:
        if self.windowed is None:
            assert self.store is not None
            return self.store.get(key)
        assert isinstance(key, WindowedKey), "a windowed aggregate is read by a windowed key (graph.windowed_table)"
        if isinstance(self.windowed, SessionAggregate):
            for start, end, agg, _ts in self.windowed.store.find_sessions(key.key, key.end_ms, key.start_ms):
                if (start, end) == (key.start_ms, key.end_ms):
                    return (agg, end)
            return None
        aggregate = self.windowed.aggregate if isinstance(self.windowed, EmitFinalTimeWindows) else self.windowed
        return aggregate.store.fetch(key.key, key.start_ms)

    def enable_sending_old_values(self) -> None:
        self.sends_old_values = True

    def change(self, key: Any, new: Any, old: Any, ts: int) -> Rec:
        """The record forwarded: ``Change(new, old)``, the old value only when it is asked for."""
        return Rec(key, new, ts, old if self.sends_old_values else None, self.sends_old_values)


OLD_VALUE_READERS = ("table-table", "fk", "table-group-by", "suppress")


def _failing(error: AggregationError, rec: Rec) -> AggregationError:
    return AggregationError(f"{said(rec)}: {error}")


class StreamAggregate(NodeProcessor):
    """``count``/``reduce``/``aggregate`` of a grouped stream, windowed or not."""

    def __init__(self, node: Node, partition: int, log: Any, semantics: Semantics) -> None:
        super().__init__(node, partition)
        self.aggregation: Aggregation = node.params["aggregation"]
        windows = node.params.get("windows")
        final = node.params.get("emit") == "final"  # emitStrategy(onWindowClose()), KIP-825
        self.windowed: Any = None
        if isinstance(windows, SessionWindows):
            retention = windows.store_retention_ms(semantics)
            if retention < windows.gap_ms + windows.grace_ms:
                raise TopologyError(
                    f"{node.name}: inactivity gap {windows.gap_ms} + grace {windows.grace_ms} is more than the session "
                    f"store's retention {retention} (SessionWindows.maintainMs before 3.0), and Kafka {semantics} "
                    "refuses it (IllegalArgumentException: The retention period of the session store ... must be no "
                    "smaller than the session inactivity gap plus the grace period); choose a shorter grace or "
                    "semantics 3.0 or later"
                )
            self.windowed = SessionAggregate(log, partition, windows, self.aggregation, semantics, final)
            self.store = None
        elif isinstance(windows, SlidingWindows):
            self.windowed = SlidingAggregate(log, partition, windows, self.aggregation, semantics, final)
            self.store = None
        elif windows is not None:
            # the store's retention: size + grace from 3.0, Windows.maintainMs() before (KAFKA-7106)
            try:
                layout = windows.layout(windows.store_retention_ms(semantics))
            except ValueError as error:
                raise TopologyError(
                    f"{node.name}: {error} (IllegalArgumentException: The retention period of the window store ... "
                    "must be no smaller than its window size plus the grace period)"
                ) from None

            def make(on_update: Any = None) -> WindowAggregate:
                return WindowAggregate(
                    log, partition, windows, self.aggregation, layout=layout, on_update=on_update, semantics=semantics
                )

            self.windowed = EmitFinalTimeWindows(make, lambda output, ctx: ctx.forward(output)) if final else make()
            self.store = None
        else:
            self.store = AggregateStore(log, partition, "aggregate store")
        self.table = _AggregateTable(self.store, node, self.windowed)
        self.writers: dict[Any, int] = {}
        """group -> the step that last updated its aggregate (for ``why``)."""

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        if self.windowed is not None:
            return self._windowed(rec, step)
        if rec.key is None or rec.value is None:
            what = "key" if rec.key is None else "value"
            reason = Reason.NULL_KEY if rec.key is None else Reason.NULL_VALUE
            return Outcome(
                Fate.DROPPED, reason, f"{said(rec)} has a null {what}: the aggregate skips it (KStreamAggregate)."
            )
        assert self.store is not None
        found = self.store.get(rec.key)
        old = None if found is None else found[0]
        ts = rec.ts if found is None else max(rec.ts, found[1])
        try:
            new = self.aggregation.add(rec.key, rec.value, old)
        except AggregationError as error:
            raise _failing(error, rec) from None
        self.store.put(rec.key, new, ts)
        self.writers[rec.key] = step
        if found is None and not self.aggregation.is_reduce:
            old = self.aggregation.initializer()  # type: ignore[misc]  # Kafka's old value: the initializer's
        start = "" if found is not None else (" (its first value)" if self.aggregation.is_reduce else " (initializer)")
        text = (
            f"group {render_value(rec.key)}: {render_value(old)}{start} → {self.aggregation.name} → "
            f"{at(render_value(new), ts)}; forwards Change({render_value(new)}, {render_value(old)})."
        )
        return Outcome(Fate.JOINED, None, text, [self.table.change(rec.key, new, old, ts)])

    def _windowed(self, rec: Rec, step: int) -> Outcome:
        assert self.windowed is not None
        record = Record(Side.LEFT, rec.key, rec.value, rec.ts, self.partition)
        ctx = StepContext(step, record, _no_joiner)
        try:
            self.windowed.process(record, ctx)
        except AggregationError as error:
            raise _failing(error, rec) from None
        forwarded = []
        for output in ctx.outputs:
            window = output.window  # type: ignore[attr-defined]
            key = WindowedKey(output.key, window[0], window[1])
            value = None if output.tombstone else output.value  # type: ignore[attr-defined]
            forwarded.append(self.table.change(key, value, output.old, output.ts))  # type: ignore[attr-defined]
        fate = ctx.fate if ctx.fate is not None else Fate.JOINED
        return Outcome(fate, ctx.reason, ctx.explain, forwarded)


def _no_joiner(left: Any, right: Any) -> Any:  # pragma: no cover - an aggregate joins nothing
    raise AssertionError("an aggregate calls no joiner")


class TableGroupBy(NodeProcessor):
    """``KTableRepartitionMap``: a table's change, mapped to its group(s), for the repartition topic."""

    def __init__(self, node: Node, partition: int, semantics: Semantics) -> None:
        super().__init__(node, partition)
        self.single_update = semantics.table_aggregate_single_update

    def _pair(self, key: Any, value: Any) -> tuple[Any, Any] | None:
        if value is None:
            return None
        fn = self.node.params["fn"]
        try:
            pair = fn(key, value)
        except (TypeError, ValueError, KeyError, AttributeError) as error:
            raise AggregationError(
                f"group_by ({fn.text}) failed on key {render_value(key)}, value {render_value(value)}: {error}"
            ) from None
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise AggregationError(
                f"group_by ({fn.text}) returned {pair!r:.60} for key {render_value(key)}; a table's group_by "
                "returns (new key, new value)"
            )
        return None if pair[0] is None or pair[1] is None else (pair[0], as_written(pair[1]))

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        if not rec.is_latest:
            return Outcome(
                Fate.DROPPED,
                Reason.OUT_OF_ORDER_VERSION,
                lambda: (
                    f"{said(rec)} is an older version of the versioned table (its latest is newer): a group-by "
                    "aggregates latest-by-timestamp values only, so it is not repartitioned (KIP-914)."
                ),
            )
        pairs = group_halves(self._pair(rec.key, rec.value), self._pair(rec.key, rec.old), self.single_update)
        halves = [Rec(half.group, half.new, rec.ts, half.old, True) for half in pairs]
        if not halves:
            return Outcome(
                Fate.STORED,
                Reason.NULL_GROUP_KEY,
                lambda: (
                    f"Change({render_value(rec.value)}, {render_value(rec.old)}): no group (a null group key or "
                    "value on both halves): nothing to repartition."
                ),
            )

        def story() -> str:
            parts = [f"{render_value(h.key)}: Change({render_value(h.value)}, {render_value(h.old)})" for h in halves]
            kept = len(halves) == 1 and halves[0].value is not None and halves[0].old is not None
            one = " (KIP-904, 3.5+: one record, as both halves keep their group)" if kept else ""
            if split_in_one_group(pairs):
                one = SPLIT_NOTE
            return f"Change({render_value(rec.value)}, {render_value(rec.old)}) grouped: {'; '.join(parts)}{one}."

        return Outcome(Fate.FORWARDED, None, story, halves)


class TableAggregate(NodeProcessor):
    """``count``/``reduce``/``aggregate`` of a grouped table: subtract the old value, add the new one."""

    def __init__(self, node: Node, partition: int, log: Any) -> None:
        super().__init__(node, partition)
        self.aggregation: Aggregation = node.params["aggregation"]
        self.store = AggregateStore(log, partition, "aggregate store")
        self.table = _AggregateTable(self.store, node)
        self.writers: dict[Any, int] = {}
        """group -> the step that last updated its aggregate (for ``why``)."""

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        found = self.store.get(rec.key)
        old_agg = None if found is None else found[0]
        agg, ts, done = old_agg, rec.ts, []
        try:
            if rec.old is not None and old_agg is not None:
                agg = self.aggregation.subtract(rec.key, rec.old, agg)
                ts = max(rec.ts, found[1])  # type: ignore[index]
                done.append(f"subtractor({render_value(rec.old)}) → {render_value(agg)}")
            if rec.value is not None:
                start = agg
                agg = self.aggregation.add(rec.key, rec.value, agg)
                if found is not None:
                    ts = max(rec.ts, found[1])
                done.append(
                    f"adder({render_value(rec.value)}) → {render_value(agg)}"
                    + (" from the initializer" if start is None and not self.aggregation.is_reduce else "")
                )
        except AggregationError as error:
            raise _failing(error, rec) from None
        self.store.put(rec.key, agg, ts)
        self.writers[rec.key] = step
        text = (
            f"group {render_value(rec.key)}: {render_value(old_agg)}, {', '.join(done) or 'nothing to apply'}; "
            f"forwards {at(f'Change({render_value(agg)}, {render_value(old_agg)})', ts)}."
        )
        return Outcome(Fate.JOINED, None, text, [self.table.change(rec.key, agg, old_agg, ts)])


AGGREGATE_OPS = ("aggregate", "table-group-by", "table-aggregate")
"""The graph ops whose processors live here (:func:`build_aggregate`); the others' are
:func:`kjoin.topology.processors.build_processor`'s."""


def build_aggregate(node: Node, partition: int, log: Any, semantics: Semantics) -> NodeProcessor:
    """The processor of an aggregate node (one of :data:`AGGREGATE_OPS`) in the task of ``partition``."""
    if node.op == "aggregate":
        return StreamAggregate(node, partition, log, semantics)
    if node.op == "table-group-by":
        return TableGroupBy(node, partition, semantics)
    if node.op == "table-aggregate":
        return TableAggregate(node, partition, log)
    raise AssertionError(node.op)  # pragma: no cover
