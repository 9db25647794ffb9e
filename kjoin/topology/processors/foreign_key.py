"""The foreign-key join node (KIP-213): one :class:`TopologyForeignKeyJoin` for every partition, its messages
written to the topology's subscription and response topics, its result materialized per task."""

from __future__ import annotations

from typing import Any, Callable

from ...fates import Fate, Reason
from ...joins.context import StepContext
from ...joins.foreign_key import FROM_COPY, ForeignKeyJoin, ForeignKeyTask
from ...joins.fk_protocol import SUBSCRIPTION, Message
from ...joins.options import ForeignKeyOptions, TableOptions
from ...partitioner import default_partition
from ...records import Record, Side, render_value
from ...semantics import Semantics
from ...serde import string_serde_text
from ...stores import TableStore
from ...times import at
from ..functions import Function, UserFunctionError, field_of
from ..graph import Graph, Node, Topic, windowed_kind
from ..plain import not_a_key, shown
from .base import Outcome, Rec, ScopedLog, join_outcome

__all__ = ["ForeignKeyNode", "TopologyForeignKeyJoin"]

CHANGE_OLD_PARENTS = frozenset(
    {"table-table", "aggregate", "table-aggregate", "cogroup", "suppress", "table-filter", "table-map-values"}
)
"""The left parents whose ``Change(new, old)`` the subscriptions follow (Kafka's ``SubscriptionSendProcessor`` reads
``change.oldValue``), where the join's copy of the left table would hold another old value: a table-table join's
old row (its getter, not the last row it forwarded), and an aggregate's first old value, the initializer's
(``KStreamAggregate`` forwards ``Change(new, initializer())`` when it sends old values: a count's first update is
``Change(1, 0)``, an update of a row the copy never held), a suppression's eviction, whose old value is its latest
buffered update's (not the row it last let through), and a view's change, whose old value is its parent's seen through
it (or, materialized from 2.7, its own store's row)."""


class TopologyForeignKeyJoin(ForeignKeyJoin):
    """kjoin's foreign-key join with the topology's subscription and response topics: their partition counts and
    partitioners (Kafka's ``TableJoined.with(partitioner, otherPartitioner)``: the other partitioner routes a
    subscription by its foreign key, the partitioner a response by its primary key, in place of the partition its
    subscription came from). A partition out of a topic's range stops the run, as Kafka's producer refuses it. Its
    tables are copies of its parents (a source table, or another join's result, which no ``KTableSource`` writes): a
    source drops its idempotent updates before they reach the join (KIP-557,
    :class:`~kjoin.topology.processors.tables.TableSource`). A response is resolved and a subscription joined through
    the tables' value getters, as Kafka's are (the copies give the old values the changes of a source carry)."""

    tables_are_sources = False

    def __init__(
        self,
        log: Any,
        options: ForeignKeyOptions,
        subscription: Topic,
        response: Topic,
        getters: tuple[Callable[[int], Any], Callable[[int], Any]],
        extractor: Any = None,
        text_keys: bool = True,
        windowed_keys: str | None = None,
    ) -> None:
        """``getters``: the left and the right table's value getter in the task of a partition; ``text_keys``: the
        foreign key through the String serde (a Python extractor's result as its text); ``windowed_keys``: ``time``
        or ``session`` when the left table is keyed by ``Windowed<K>``."""
        assert subscription.partitions is not None
        super().__init__(log, options, subscription.partitions, eager=())
        self.subscription = subscription
        self.response = response
        self.extractor = extractor
        self.text_keys = text_keys
        self.windowed_keys = windowed_keys
        self.left_key: Any = None
        """The key of the left row whose foreign key is asked for (a ``BiFunction`` extractor reads it)."""
        self.left_getter, self.right_getter = getters
        """Where a copy of the table would differ: a table-table join's getter joins its parents' rows now (an inner
        join forwards nothing when its row goes away with its partner already gone) and stamps them with the newest
        present row's time; a suppression's answers a key its buffer holds with its prior value; a view's filters or
        maps its parent's row; a window store's finds nothing behind its retention."""

    def process(self, record: Record, ctx: StepContext, change_old: Any = FROM_COPY) -> None:
        self.left_key = record.key
        super().process(record, ctx, change_old)

    def primary_key_bytes(self, pk: Any) -> bytes | None:
        """A windowed left table's key through its windowed serde (``TimeWindowedSerde``, ``SessionWindowedSerde``):
        the subscription store orders a foreign key's subscribers by it."""
        if self.windowed_keys is None:
            return None
        return pk.serialized(session=self.windowed_keys == "session")

    def current_left(self, task: ForeignKeyTask, pk: Any) -> tuple[Any, int] | None:
        return self.left_getter(task.task).get(pk)

    def current_right(self, task: ForeignKeyTask, fk: Any) -> tuple[Any, int] | None:
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
        self,
        node: Node,
        graph: Graph,
        log: Any,
        semantics: Semantics,
        subtopology_of: dict[str, int],
        getter_of: Callable[[Node], Callable[[int], Any]],
    ) -> None:
        """``getter_of``: a table's value getter in the task of a partition (the run's)."""
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
            (getter_of(left), getter_of(right)),
            extractor,
            graph.text_keys,
            windowed_kind(left),
        )
        self._log = log
        self.drops_idempotent = semantics.drops_idempotent_table_updates and graph.materialized(node, semantics)
        """The result's ``KTableSource`` drops a result that changes nothing (KIP-557, 2.6.0 to 2.7.0) when Kafka
        materializes it (:meth:`Graph.materialized`: a named store, or a later join or group-by reads it)."""
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

    def as_table(self, partition: int) -> TableStore:
        """The join's materialized result in the task of ``partition``, which a later join reads."""
        return self.result_store(partition)

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
        follows_change = port is Side.LEFT and rec.has_old and self.node.parents[0].op in CHANGE_OLD_PARENTS
        self.join.process(record, ctx, change_old=rec.old if follows_change else FROM_COPY)
        outcome = join_outcome(ctx, table=True)
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
