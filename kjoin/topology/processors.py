"""The processors of a topology's nodes, one instance per task, built on kjoin's join processors.

Each :class:`NodeProcessor` handles one record handed to its node (:meth:`~NodeProcessor.handle`)
and reports an :class:`Outcome`: the fate, the reason and the story, the records it forwards to
its children (a table's ``Change`` carries its old value), and the records it writes to topics.
The joins are kjoin's own processors (:mod:`kjoin.joins`), fed through a :class:`ScopedLog` that
names every store after its node and files it under its Kafka task (``"1_0"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Callable

from ..fates import Fate, Reason
from ..joins.context import StepContext, drop_idempotent_update, drop_null_key_update
from ..joins.foreign_key import FROM_COPY, ForeignKeyJoin, ForeignKeyTask
from ..joins.global_table import GlobalTableJoin
from ..joins.fk_protocol import SUBSCRIPTION, Message
from ..joins.options import ForeignKeyOptions, TableOptions
from ..joins.stream_stream import InstanceTimes, StreamStreamJoin
from ..joins.stream_table import StreamTableJoin
from ..joins.table_table import TableTableJoin
from ..joins.versioned import VersionedStreamTableJoin
from ..partitioner import default_partition
from ..records import Record, Side, render_value
from ..semantics import Semantics
from ..serde import string_serde_text
from ..state import StoreId
from ..stores import Clock, TableStore, VersionedStore
from ..stores.global_table import GlobalTableStore
from .functions import Function, UserFunctionError, field_of
from .plain import as_written, not_a_key, shown
from .graph import VIEW_OPS, Graph, Node, Topic
from ..times import at

__all__ = [
    "said", "Rec", "Outcome", "OldValue", "ScopedLog", "build_processor", "NodeProcessor", "TaskClock", "TableView",
    "getter_of",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Rec:
    """A record handed from node to node: a stream record, or a table's ``Change(value, old)``."""

    key: Any
    value: Any
    ts: int
    old: Any = None
    has_old: bool = False
    is_latest: bool = True
    """A versioned table's ``Change.isLatest``: false for an out-of-order version (KIP-914)."""
    to: str | None = None
    """The one child the record goes to (Kafka's ``context.forward(record, childName)``: a ``split``'s branch);
    ``None``: every child."""


@dataclass
class Outcome:
    fate: Fate
    reason: Reason | None
    explain: Any
    """The story: text, or a function that writes it when someone reads it (:attr:`NodeVisit.explain`)."""
    forwarded: list[Rec] = field(default_factory=list)
    writes: list[tuple[str, Any, Any, int, Any]] = field(default_factory=list)
    """(topic, key, value, ts, message or None): records for the runtime to append to topics."""


class _LiveView:
    def __init__(self, scoped: "ScopedLog") -> None:
        self._scoped = scoped

    def get(self, store: StoreId, default: Any = None) -> Any:
        return self._scoped._log.live.get(self._scoped.id_of(store), default)


class ScopedLog:
    """A :class:`~kjoin.state.StateLog` seen by one node's processors: a store ``right table`` of
    partition 1 becomes ``StoreId("0_1", "join-3: right table")``."""

    def __init__(self, log: Any, prefix: str, task_of: Callable[[int, str], str]) -> None:
        self._log = log
        self._prefix = prefix
        self._task_of = task_of
        self.live = _LiveView(self)

    def id_of(self, store: StoreId) -> StoreId:
        return StoreId(self._task_of(store.task, store.name), f"{self._prefix}{store.name}", store.kind)

    def put(self, store: StoreId, entry_key: Any, row: Any) -> None:
        self._log.put(self.id_of(store), entry_key, row)

    def delete(self, store: StoreId, entry_key: Any) -> None:
        self._log.delete(self.id_of(store), entry_key)

    def get(self, store: StoreId, entry_key: Any, default: Any = None) -> Any:
        return self._log.get(self.id_of(store), entry_key, default)

    def declare(self, store: StoreId) -> None:
        self._log.declare(self.id_of(store))


class TaskClock:
    """A task's own stream time (the largest timestamp it has taken), shown as a store ``task``."""

    def __init__(self, log: Any, task: str) -> None:
        self.clock = Clock(log, task, "task")  # type: ignore[arg-type]

    def advance(self, ts: int) -> int:
        return self.clock.advance("stream time", ts)


class OldValue:
    """A repartition record's old half (a table group-by writes ``Change(new, old)`` to its topic)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class NodeProcessor:
    """One node's processor in one task."""

    def __init__(self, node: Node, partition: int) -> None:
        self.node = node
        self.partition = partition

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:  # pragma: no cover - abstract
        raise NotImplementedError


def said(rec: Rec) -> str:
    return at(f"{render_value(rec.key)}:{render_value(rec.value)}", rec.ts)


class _Pass(NodeProcessor):
    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        op = self.node.op
        if op in ("stream", "repartition-source"):
            return Outcome(Fate.FORWARDED, None, lambda: f"read {said(rec)}.", [rec])
        if op == "merge":
            return Outcome(Fate.FORWARDED, None, lambda: f"merged {said(rec)} into one stream.", [rec])
        if op == "to_stream":
            plain = Rec(rec.key, rec.value, rec.ts)
            return Outcome(Fate.FORWARDED, None, lambda: f"the table's change {said(rec)} as a stream record.", [plain])
        fn = self.node.params["fn"]
        if op == "filter":
            if fn(rec.key, rec.value):
                return Outcome(Fate.FORWARDED, None, lambda: f"{fn.text}: kept.", [rec])
            return Outcome(Fate.DROPPED, Reason.FILTERED, lambda: f"{fn.text}: false for {said(rec)}, filtered out.")
        if op == "map_values":
            new = Rec(rec.key, fn(rec.value), rec.ts)
            return Outcome(
                Fate.FORWARDED, None, lambda: f"{render_value(rec.value)} → {render_value(new.value)}.", [new]
            )
        if op in ("select_key", "group_by"):
            new = Rec(fn(rec.key, rec.value), rec.value, rec.ts)
            return Outcome(
                Fate.FORWARDED,
                None,
                lambda: f"key {render_value(rec.key)} → {render_value(new.key)} ({fn.text}).",
                [new],
            )
        if op == "map":
            pair = fn(rec.key, rec.value)
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise UserFunctionError(
                    f"the map function ({fn.text})", f"returned {shown(pair)}", fix="return a pair (key, value)"
                )
            new = Rec(pair[0], as_written(pair[1]), rec.ts)
            return Outcome(Fate.FORWARDED, None, lambda: f"{said(rec)} → {said(new)}.", [new])
        if op in ("flat_map_values", "flat_map"):
            if op == "flat_map_values":
                made = [Rec(rec.key, as_written(value), rec.ts) for value in _many(fn(rec.value), fn, rec)]
            else:
                made = [Rec(key, as_written(value), rec.ts) for key, value in _pairs(fn(rec.key, rec.value), fn, rec)]
            if not made:
                return Outcome(Fate.DROPPED, Reason.FILTERED, lambda: f"{fn.text}: no records from {said(rec)}.")
            return Outcome(
                Fate.FORWARDED, None, lambda: f"{fn.text}: {said(rec)} → " + ", ".join(map(said, made)) + ".", made
            )
        raise AssertionError(op)  # pragma: no cover


MAX_RECORDS_PER_RECORD = 100_000
"""The most records ``flat_map`` or ``flat_map_values`` makes of one record: more (an endless iterator, say) stops
the run at the node, with the record, rather than filling the memory."""


def _many(values: Any, fn: Function, rec: Rec, what: str = "flat_map_values", items: str = "values") -> list[Any]:
    if values is None or isinstance(values, (str, bytes, dict, set, frozenset)) or not hasattr(values, "__iter__"):
        raise UserFunctionError(
            f"the {what} function ({fn.text})", f"returned {shown(values)}", fix=f"return a list of {items}"
        )
    try:
        found = list(islice(values, MAX_RECORDS_PER_RECORD + 1))
    except Exception as error:  # noqa: BLE001 - an iterator the function returned raised while kjoin read it
        raise UserFunctionError(
            f"the {what} function ({fn.text})",
            f"returned an iterator that raised {type(error).__name__}: {error}",
            error,
        ) from error
    if len(found) > MAX_RECORDS_PER_RECORD:
        raise UserFunctionError(
            f"the {what} function ({fn.text})",
            f"returned more than {MAX_RECORDS_PER_RECORD:,} {items} for one record (an endless iterator?), kjoin's "
            "bound on the records one record makes",
            fix=f"return at most {MAX_RECORDS_PER_RECORD:,} {items} for a record",
        )
    return found


def _pairs(pairs: Any, fn: Function, rec: Rec) -> list[tuple[Any, Any]]:
    found = _many(pairs, fn, rec, "flat_map", "(key, value) pairs")
    if not all(isinstance(pair, (tuple, list)) and len(pair) == 2 for pair in found):
        raise UserFunctionError(
            f"the flat_map function ({fn.text})", f"returned {shown(found)}", fix="return a list of (key, value) pairs"
        )
    return [tuple(pair) for pair in found]  # type: ignore[misc]


class TableView(NodeProcessor):
    """A table's ``filter`` or ``mapValues`` (``KTableFilter``, ``KTableMapValues``): each ``Change(new, old)`` of
    its parent becomes ``Change(f(new), f(old))``, the old half only when this table sends old values.

    * filter: a row that fails the predicate is null (a tombstone: the key is not in the filtered table); with old
      values on, a change whose new and old rows both fail is not forwarded at all ("unnecessary to forward").
    * mapValues: a null row stays null, the mapper is not called.
    * Materialized (``Materialized.as``): the result is stored in a store of its own, which a join's lookup reads
      (and the old value is the stored one); else a lookup reads the parent and applies the function on the fly.
    """

    def __init__(self, node: Node, partition: int, log: Any, semantics: Semantics, parent_getter: Any) -> None:
        super().__init__(node, partition)
        self.fn: Function = node.params["fn"]
        self.filters = node.op == "table-filter"
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

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        new = self.of(rec.key, rec.value)
        if not self.sends_old_values:  # KTableFilter/KTableMapValues.computeOldValue: no old value, no call
            old = None
        elif self.store is not None:
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
    if child.op == "table-group-by":
        return True
    if child.op in VIEW_OPS and not child.params["materialized"]:
        return bool(child.params.get("sends_old_values")) or any(
            _reads_old_values(child, grandchild, p) for grandchild, p in child.children
        )
    return False


class _Sink(NodeProcessor):
    """``to`` and a repartition topic's sink: write the record to its topic."""

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        topic = self.node.topic
        if self.node.op == "repartition-sink" and rec.key is None:
            if not self.node.params["keeps_null_keys"]:
                return Outcome(
                    Fate.DROPPED,
                    Reason.NULL_KEY_NOT_REPARTITIONED,
                    f"{said(rec)} has a null key: Kafka filters it out before the repartition topic {topic} (no "
                    "join below takes null keys).",
                )
            text = (
                f"wrote {said(rec)} to {topic}, null key and all: a join below takes null keys (KIP-962, 3.7+), "
                "so Kafka keeps them in the repartition topics above it (partition 0 here; a producer picks one)."
            )
            return Outcome(Fate.FORWARDED, None, text, writes=[(topic, rec.key, rec.value, rec.ts, None)])  # type: ignore[list-item]
        if self.node.params.get("carries_old"):  # a table group-by's repartition topic: Change(new, old)
            change = at(f"{render_value(rec.key)}:Change({render_value(rec.value)}, {render_value(rec.old)})", rec.ts)
            return Outcome(
                Fate.FORWARDED,
                None,
                lambda: f"wrote {change} to {topic}.",
                writes=[(topic, rec.key, rec.value, rec.ts, OldValue(rec.old))],
            )
        return Outcome(
            Fate.FORWARDED,
            None,
            lambda: f"wrote {said(rec)} to {topic}.",
            writes=[(topic, rec.key, rec.value, rec.ts, None)],
        )  # type: ignore[list-item]


class _TableSource(NodeProcessor):
    """A table read from a topic (or a stream's ``to_table``: Kafka's ``KTableSource`` too), materialized:
    update the store, forward ``Change(new, old)``."""

    def __init__(self, node: Node, partition: int, log: Any, semantics: Semantics, materialized: bool = True) -> None:
        super().__init__(node, partition)
        self.semantics = semantics
        self.materialized = materialized
        """Kafka materializes a source table that a join or a group-by reads (:meth:`Graph.materialized`)."""
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
        ctx = StepContext(step, Record(Side.RIGHT, rec.key, rec.value, rec.ts, self.partition), _no_joiner)
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


def _no_joiner(left: Any, right: Any) -> Any:  # pragma: no cover - a table source joins nothing
    raise AssertionError("a table source calls no joiner")


class _ValueGetter:
    """A table-table join's result read as a table (Kafka's value getter): ``get(key)``."""

    def __init__(self, join: TableTableJoin, joiner: Any) -> None:
        self.join = join
        self.joiner = joiner

    def get(self, key: Any) -> Any:
        return self.join.value_of(key, self.joiner)

    def enable_sending_old_values(self) -> None:
        self.join.enable_sending_old_values()


def _outcome_of(ctx: StepContext, table: bool) -> Outcome:
    """A join processor's report as an outcome: its outputs become the records it forwards."""
    forwarded = []
    for output in ctx.outputs:
        value = None if output.tombstone else output.value
        forwarded.append(
            Rec(output.key, value, output.ts, output.old, output.has_old)
            if table
            else Rec(output.key, value, output.ts)
        )
    fate = ctx.fate if ctx.fate is not None else (Fate.JOINED if forwarded else Fate.STORED)
    return Outcome(fate, ctx.reason, ctx.explain, forwarded)


class _StreamStream(NodeProcessor):
    def __init__(
        self, node: Node, partition: int, log: Any, semantics: Semantics, instance: InstanceTimes | None = None
    ) -> None:
        """``instance``: the time trackers of the application instance the task runs in (shared by its tasks
        before KAFKA-14862, ``Semantics.outer_join_time_per_task``)."""
        super().__init__(node, partition)
        p = node.params
        self.join = StreamStreamJoin(log, partition, p["variant"], p["window"], semantics, instance=instance)

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        assert port is not None
        record = Record(port, rec.key, rec.value, rec.ts, self.partition)
        ctx = StepContext(step, record, self.node.params["joiner"])
        self.join.process(record, ctx)
        return _outcome_of(ctx, table=False)


class _StreamTable(NodeProcessor):
    def __init__(self, node: Node, partition: int, log: Any, semantics: Semantics, table: Any) -> None:
        super().__init__(node, partition)
        p = node.params
        if isinstance(table, VersionedStore):
            retention = p["table"].params["history_retention_ms"]
            self.join: StreamTableJoin = VersionedStreamTableJoin(
                log, partition, p["variant"], semantics, retention, p.get("grace_ms"), table=table
            )
        else:
            self.join = StreamTableJoin(log, partition, p["variant"], semantics, table)

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        record = Record(Side.LEFT, rec.key, rec.value, rec.ts, self.partition)
        joiner = self.node.params["joiner"]
        if joiner.keys == 2:  # ValueJoinerWithStreamAndMappedKey (KIP-1340): the stream key and the looked-up key
            selector = self.node.params.get("key_selector")
            mapped = rec.key if selector is None else selector(rec.key, rec.value)
            call = joiner
            joiner = Function(lambda left, right: call(rec.key, mapped, left, right), None, joiner.text)
        ctx = StepContext(step, record, joiner)
        self.join.process(record, ctx)
        return _outcome_of(ctx, table=False)


class _TableTable(NodeProcessor):
    def __init__(self, node: Node, partition: int, log: Any, semantics: Semantics, parents: list[Any]) -> None:
        super().__init__(node, partition)
        p = node.params
        self.join = TableTableJoin(
            log,
            partition,
            p["variant"],
            semantics,
            sends_old_values=bool(p.get("sends_old_values")),
            left=parents[0],
            right=parents[1],
        )

    @property
    def table(self) -> _ValueGetter:
        return _ValueGetter(self.join, self.node.params["joiner"])

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        assert port is not None
        if not rec.is_latest:  # KTableKTableJoin: "Skipping out-of-order record from versioned table"
            return Outcome(
                Fate.DROPPED,
                Reason.OUT_OF_ORDER_VERSION,
                lambda: (
                    f"{said(rec)} is an older version of the versioned {port} table (its latest is newer): "
                    "out-of-order, no join result (KIP-914)."
                ),
            )
        record = Record(port, rec.key, rec.value, rec.ts, self.partition)
        ctx = StepContext(step, record, self.node.params["joiner"])
        self.join.on_change(port, record, rec.old, ctx)
        return _outcome_of(ctx, table=True)


class TopologyForeignKeyJoin(ForeignKeyJoin):
    """kjoin's foreign-key join with the topology's subscription and response topics: their partition counts and
    partitioners (Kafka's ``TableJoined.with(partitioner, otherPartitioner)``: the other partitioner routes a
    subscription by its foreign key, the partitioner a response by its primary key, in place of the partition its
    subscription came from). A partition out of a topic's range stops the run, as Kafka's producer refuses it. Its
    tables are copies of its parents (a source table, or another join's result, which no ``KTableSource`` writes): a
    source drops its idempotent updates before they reach the join (KIP-557, :class:`_TableSource`)."""

    tables_are_sources = False

    def __init__(
        self,
        log: Any,
        options: ForeignKeyOptions,
        subscription: Topic,
        response: Topic,
        extractor: Any = None,
        text_keys: bool = True,
    ) -> None:
        """``text_keys``: the foreign key through the String serde (a Python extractor's result as its text)."""
        assert subscription.partitions is not None
        super().__init__(log, options, subscription.partitions, eager=())
        self.subscription = subscription
        self.response = response
        self.extractor = extractor
        self.text_keys = text_keys
        self.left_key: Any = None
        """The key of the left row whose foreign key is asked for (a ``BiFunction`` extractor reads it)."""
        self.left_getter: Callable[[int], Any] | None = None
        """The left table's value getter in the task of a partition, where the join's copy of the left table can
        differ from it: a table-table join's getter joins its parents' rows now (an inner join forwards nothing when
        its row goes away with its partner already gone) and stamps them with the newest present row's time (the
        join forwarded the time of the update that set it off)."""
        self.right_getter: Callable[[int], Any] | None = None
        """The right table's value getter, likewise."""

    def process(self, record: Record, ctx: StepContext, change_old: Any = FROM_COPY) -> None:
        self.left_key = record.key
        super().process(record, ctx, change_old)

    def current_left(self, task: ForeignKeyTask, pk: Any) -> tuple[Any, int] | None:
        if self.left_getter is None:
            return super().current_left(task, pk)
        return self.left_getter(task.task).get(pk)

    def current_right(self, task: ForeignKeyTask, fk: Any) -> tuple[Any, int] | None:
        if self.right_getter is None:
            return super().current_right(task, fk)
        return self.right_getter(task.task).get(fk)

    def fk_of(self, value: Any) -> Any:
        """The foreign key: the extractor's (a Python function), or the field at ``foreign_key`` of a JSON
        object value as text (null when it is missing or the value is not an object, as the harness reads it)."""
        if self.extractor is not None:
            if value is None:
                found = None
            elif self.extractor.keys:  # a BiFunction extractor (KIP-1104): the left row's key too
                found = self.extractor(self.left_key, value)
            else:
                found = self.extractor(value)
            problem = not_a_key(found)
            if problem is not None:
                raise UserFunctionError(f"the foreign-key extractor ({self.extractor.text})", f"returned {problem}")
            return string_serde_text(found) if self.text_keys else found
        return string_serde_text(field_of(value, self.path))

    def partition_of(self, key: Any) -> int:
        return _routed(self.subscription, "other_partitioner", key)

    def response_partition(self, pk: Any, primary_partition: int) -> int:
        if self.response.partitioner is None:
            return primary_partition
        return _routed(self.response, "partitioner", pk)


def _routed(topic: Topic, argument: str, key: Any) -> int:
    """The partition of ``topic`` a foreign-key join's message with ``key`` goes to, by the join's ``argument``
    (``partitioner`` or ``other_partitioner``; none: murmur2): a partitioner that raises or names no partition of
    the topic is a :class:`UserFunctionError` naming the argument and the topic."""
    partitions = topic.partitions
    assert partitions is not None
    if topic.partitioner is None:
        return 0 if partitions == 1 else default_partition(key, partitions)
    function = f"the {argument} ({topic.partitioner.text}) of {topic.name}"
    try:
        chosen = topic.partitioner(key, partitions)
    except UserFunctionError as error:
        raise UserFunctionError(function, error.problem, error.original) from error
    if not isinstance(chosen, int) or isinstance(chosen, bool) or not 0 <= chosen < partitions:
        raise UserFunctionError(
            function,
            f"returned {shown(chosen)} for the key {shown(key)}; a partition of {topic.name} is a number from 0 to "
            f"{partitions - 1} (Kafka's producer refuses any other)",
            fix=f"return a partition from 0 to {partitions - 1}",
        )
    return chosen


class ForeignKeyNode:
    """A foreign-key join node: one :class:`TopologyForeignKeyJoin` for every partition, its
    messages written to the subscription and response topics, and its result materialized per
    task (Kafka's ``KTABLE-FK-JOIN-OUTPUT`` source, which a later join reads and takes old values from)."""

    def __init__(
        self, node: Node, graph: Graph, log: Any, semantics: Semantics, subtopology_of: dict[str, int]
    ) -> None:
        self.node = node
        p = node.params
        left, right = node.parents
        subscription = graph.topics[p["subscription_topic"]]
        self.left_sub = subtopology_of[node.name]
        self.right_sub = subtopology_of[right.name]
        right_side = ("right table", "subscriptions")

        def task_of(task: int, name: str) -> str:
            return f"{self.right_sub if name in right_side else self.left_sub}_{task}"

        extractor = p["foreign_key"] if isinstance(p["foreign_key"], Function) else None
        options = ForeignKeyOptions(
            p["variant"],
            semantics,
            "(a function)" if extractor else p["foreign_key"],
            left=_table_options(left),
            right=_table_options(right),
        )
        self.join = TopologyForeignKeyJoin(
            ScopedLog(log, f"{node.name}: ", task_of),
            options,
            subscription,
            graph.topics[p["response_topic"]],
            extractor,
            graph.text_keys,
        )
        self._log = log
        self.drops_idempotent = semantics.drops_idempotent_table_updates and graph.materialized(node)
        """The result's ``KTableSource`` drops a result that changes nothing (KIP-557, 2.6.0 to 2.7.0) when Kafka
        materializes it: a later join or group-by reads it."""
        self._results: dict[int, TableStore] = {}
        self._sent = 0
        self.writers: dict[tuple[int, Any], int] = {}
        """(partition, key) -> the step whose response is the key's current result (for ``why``)."""

    def result_store(self, partition: int) -> TableStore:
        if partition not in self._results:
            self._results[partition] = TableStore(
                ScopedLog(self._log, f"{self.node.name}: ", lambda task, name: f"{self.left_sub}_{task}"),  # type: ignore[arg-type]
                partition,
                Side.LEFT,
                bool(self.node.params.get("sends_old_values")),  # a table group-by below reads Change(new, old)
                "result",
            )
        return self._results[partition]

    def topic_of(self, message: Message) -> str:
        key = "subscription_topic" if message.topic == SUBSCRIPTION else "response_topic"
        return self.node.params[key]

    def _new_messages(self) -> list[tuple[str, Any, Any, int, Any]]:
        pending = [m for m in self.join.in_flight.pending() if m.seq > self._sent]
        if pending:
            self._sent = max(m.seq for m in pending)
        return [(self.topic_of(m), m.key, m.value, m.ts, m) for m in pending]

    def handle_input(self, port: Side, rec: Rec, partition: int, step: int) -> Outcome:
        record = Record(port, rec.key, rec.value, rec.ts, partition)
        ctx = StepContext(step, record, self.node.params["joiner"])
        joined_parent = port is Side.LEFT and rec.has_old and self.node.parents[0].op == "table-table"
        self.join.process(record, ctx, change_old=rec.old if joined_parent else FROM_COPY)
        outcome = _outcome_of(ctx, table=True)
        outcome.writes = self._new_messages()
        return outcome

    def handle_message(self, message: Message, step: int) -> Outcome:
        """A subscription or response taken by its task (always the head of its partition: tasks take each
        partition in offset order)."""
        ctx = StepContext(step, None, self.node.params["joiner"], partition=message.partition)
        self.join.deliver(message, ctx)
        store = self.result_store(message.partition)
        forwarded = []
        for output in ctx.outputs:
            value = None if output.tombstone else output.value
            if self.drops_idempotent and store.unchanged_by(output.key, value, output.ts):
                ctx.note(
                    f"The result table drops {at(output.render(), output.ts)} for {render_value(output.key)}: it "
                    "changes nothing there (KIP-557: a KTableSource drops an idempotent update, 2.6.0 to 2.7.0)."
                )
                continue
            previous = store.put(output.key, value, output.ts)
            self.writers[(message.partition, output.key)] = step
            old = None if previous is None else previous[0]
            forwarded.append(
                Rec(output.key, value, output.ts, old if store.sends_old_values else None, store.sends_old_values)
            )
        fate = ctx.fate if ctx.fate is not None else Fate.STORED
        if ctx.outputs and not forwarded:  # the result table dropped every result (KIP-557)
            return Outcome(Fate.DROPPED, Reason.IDEMPOTENT_UPDATE, ctx.explain, [], self._new_messages())
        return Outcome(fate, ctx.reason, ctx.explain, forwarded, self._new_messages())


def _table_options(node: Node) -> TableOptions:
    """A foreign-key join keeps its own copy of each table (kjoin's ForeignKeyJoin): versioned like the source
    table, so that it refuses and skips the same versions (KIP-914)."""
    retention = node.params.get("history_retention_ms") if node.op == "table" else None
    return TableOptions() if retention is None else TableOptions(True, retention)


PASS_OPS = (
    "stream",
    "repartition-source",
    "filter",
    "map_values",
    "select_key",
    "map",
    "to_stream",
    "merge",
    "group_by",
    "flat_map_values",
    "flat_map",
)
"""Nodes that keep no state: each record passes (or is filtered out) on its own."""


class GlobalTableSource(NodeProcessor):
    """A global table (Kafka's ``GlobalKTable``): the whole global topic in one store every task reads, updated by
    the global thread (kjoin files its steps under the task ``global``)."""

    def __init__(self, node: Node, log: Any, semantics: Semantics | None = None) -> None:
        super().__init__(node, 0)
        self.semantics = Semantics.parse(semantics)
        self.store = GlobalTableStore(log)
        self.writers: dict[Any, int] = {}

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        ctx = StepContext(step, Record(Side.RIGHT, rec.key, rec.value, rec.ts, 0), _no_joiner)
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


class _StreamGlobal(NodeProcessor):
    """A stream joined with a global table (``KStreamGlobalKTableJoin``): kjoin's
    :class:`~kjoin.joins.global_table.GlobalTableJoin` reading the topology's one global store."""

    def __init__(self, node: Node, partition: int, log: Any, semantics: Semantics, table: GlobalTableSource) -> None:
        super().__init__(node, partition)
        p = node.params
        selector = p.get("key_selector")
        self.join = GlobalTableJoin(
            log,
            p["variant"],
            semantics,
            None if selector is None else selector.text,
            table=table.store,
            select=selector,
        )

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        record = Record(Side.LEFT, rec.key, rec.value, rec.ts, self.partition)
        joiner = self.node.params["joiner"]
        if joiner.keys == 2:  # ValueJoinerWithStreamAndMappedKey (KIP-1340): the stream key and the looked-up key
            selector = self.node.params.get("key_selector")
            mapped = rec.key if selector is None else selector(rec.key, rec.value)
            call = joiner
            joiner = Function(lambda left, right: call(rec.key, mapped, left, right), None, joiner.text)
        ctx = StepContext(step, record, joiner)
        self.join.process(record, ctx)
        return _outcome_of(ctx, table=False)


def build_processor(
    node: Node,
    partition: int,
    log: Any,
    semantics: Semantics,
    parent: Callable[[Node], Any],
    materialized: bool = True,
    instance: InstanceTimes | None = None,
) -> NodeProcessor:
    """The processor of ``node`` in the task of ``partition``; ``parent(node)`` gives another node's
    processor of the same task (a join reads its tables' stores through them); ``instance``: what the tasks of the
    task's application instance share (a stream-stream join's time tracker). Aggregates:
    :func:`kjoin.topology.aggregates.build_aggregate`."""
    if node.op in PASS_OPS:
        return _Pass(node, partition)
    if node.op in ("to", "repartition-sink"):
        return _Sink(node, partition)
    if node.op in ("table", "to_table"):
        return _TableSource(node, partition, log, semantics, materialized)
    if node.op in VIEW_OPS:
        return TableView(node, partition, log, semantics, getter_of(node.parents[0], partition, parent))
    if node.op == "stream-global":
        return _StreamGlobal(node, partition, log, semantics, parent(node.parents[1]))
    if node.op == "stream-stream":
        return _StreamStream(node, partition, log, semantics, instance)
    if node.op == "stream-table":
        return _StreamTable(node, partition, log, semantics, getter_of(node.params["table"], partition, parent))
    if node.op == "table-table":
        parents = [table_of(p, partition, parent) for p in node.parents]
        return _TableTable(node, partition, log, semantics, parents)
    raise AssertionError(node.op)  # pragma: no cover


def table_of(node: Node, partition: int, parent: Callable[[Node], Any]) -> Any:
    """What a join reads a table node through: a source's store, a table-table join's value getter (which
    calls that join's own joiner, whatever joiner the reader has), a foreign-key join's materialized result."""
    processor = parent(node)
    if isinstance(processor, _TableSource):
        return processor.store
    if getattr(processor, "table", None) is not None and node.op in ("aggregate", "table-aggregate", "cogroup"):
        return processor.table  # type: ignore[attr-defined]
    if isinstance(processor, _TableTable):
        return processor.table  # its value getter applies its own joiner (KTableKTableJoinValueGetter)
    if isinstance(processor, ForeignKeyNode):
        return processor.result_store(partition)
    if isinstance(processor, TableView):
        return processor
    raise AssertionError(f"{node.name} is not a table")  # pragma: no cover


def getter_of(node: Node, partition: int, parent: Callable[[Node], Any]) -> Any:
    """What a lookup reads table ``node`` through (Kafka's value getter): ``get(key) -> (value, ts) | None``."""
    return table_of(node, partition, parent)
