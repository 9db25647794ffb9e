"""KTable-KTable foreign-key joins (KIP-213): inner and left, with the protocol made visible.

How it works (docs/semantics.md §4; one :class:`ForeignKeyTask` per partition, and the
messages between tasks travel through :class:`~kjoin.joins.fk_transport.InFlightMessages`):

* **Send subscription** (left task of the primary key). A left update writes the left
  table, then turns ``Change(new, old)`` into subscriptions: see
  :func:`subscription_instructions` for the table of instructions. Each carries the hash
  of the *new* left value (``None`` for a delete) and goes to the task of its foreign key.
* **Receive subscription and join** (right task of the foreign key). ``DELETE_*`` removes
  ``CombinedKey(fk, pk)`` from the subscription store, the others upsert it; then the right
  table is looked up and a response is sent to the primary key's task, or not, as the
  instruction says. Response ts = max(left ts, right ts), or the left ts without a right value.
* **Prefix scan on right updates** (right task). A right update writes the right table, then
  sends ``(hash, new right value)`` to every subscriber of that foreign key, in primary-key
  byte order, with the right record's ts.
* **Resolve the response by hash** (left task). The current left value is re-read and
  hashed; a different hash means the row changed since: the response is dropped as stale.
  Otherwise: right value null and (inner join, or the row is gone) → tombstone; else
  ``joiner(current left, right value)``. With ``hash_check: false`` (a teaching switch) no
  response is ever stale, and the race of seed 001 shows its stale result.

Routing: a subscription goes to the task of ``default_partition(fk)``, a response to the
partition of its primary key. A left join's null-foreign-key subscription (3.7+) has no key
to partition by (Kafka leaves it to the producer's partitioner); kjoin sends it to the left
record's own task.

Versioned tables: an out-of-order update of a versioned left or right table is stored as a
version but sends nothing (KIP-914). Lookups always read the latest version.

Example (inner join; the right table has ``(1, foo)``; ``{fk: 1}`` is the left value):

| step | input / message | result |
|---|---|---|
| 0 | left k → {fk: 1} | sends m1 PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE to fk 1 |
| 1 | m1 at the right task | stores (1, k), finds foo, sends m2 back |
| 2 | m2 at the left task | hash matches: joiner({fk: 1}, foo) |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from ..fates import Fate, Reason
from ..join_model import Variant
from ..partitioner import default_partition
from ..records import OutputKind, Record, Side, render_value
from ..semantics import Semantics
from ..state import StateLog
from ..stores import PutResult, SubscriptionStore, TableStore, VersionedStore
from .context import StepContext, drop_idempotent_update, drop_null_key_update
from .fk_transport import InFlightMessages
from .options import ForeignKeyOptions, TableOptions
from .tasks import Tasks
from ..times import at
from .fk_protocol import (
    RESPONSE,
    SUBSCRIPTION,
    CombinedKey,
    Instruction,
    Message,
    ResponseWrapper,
    SubscriptionWrapper,
    extract_foreign_key,
    fk_bytes,
    short_hash,
    shown,
    value_hash,
)

__all__ = ["busy_tasks", "ForeignKeyJoin", "ForeignKeyTask", "subscription_instructions", "Subscription"]


@dataclass(frozen=True, slots=True)
class Subscription:
    """One subscription the send processor decided to send: to ``fk`` with ``instruction``."""

    fk: Any
    instruction: Instruction


def subscription_instructions(
    old: Any, new: Any, fk_of: Any, variant: str | Variant, semantics: Semantics
) -> list[Subscription] | None:
    """The subscriptions for a left ``Change(new, old)``; ``None`` when the update is skipped
    for a null foreign key (Kafka: WARN and ``dropped-records``).

    Inner join before 3.9.1 (and left join before 3.7, new rows aside):

    * new row: fk null → skipped; else ONLY_IF → fk(new) (left join: NULL_IF)
    * delete: fk(old) null → skipped; else DELETE_AND_PROPAGATE → fk(old)
    * update: a null fk → skipped; fk changed → DELETE_NO_PROPAGATE → fk(old); NULL_IF → fk(new)

    Inner join since 3.9.1 and 4.0.1 (KAFKA-16407, KAFKA-16434; not 4.0.0):

    * new row, or fk(old) null: fk(new) null → skipped; else ONLY_IF → fk(new)
    * delete: DELETE_AND_PROPAGATE → fk(old) if not null; else nothing
    * update, fk(new) null: DELETE_AND_PROPAGATE → fk(old) (Kafka still logs the skip and counts it dropped)
    * update, fk kept: ONLY_IF → fk(new) (no join now means no join before: no tombstone needed)
    * update, fk changed: DELETE_NO_PROPAGATE → fk(old); NULL_IF → fk(new)

    Left join since 3.7 (KIP-962):

    * new row: NULL_IF → fk(new), fk may be null
    * delete: DELETE_AND_PROPAGATE → fk(old) if not null; NULL_IF → null
    * update: fk changed, fk(old) not null → DELETE_AND_PROPAGATE → fk(old) (DELETE_NO_PROPAGATE since
      3.9.1 and 4.0.1, KAFKA-16394); NULL_IF → fk(new)

    Nothing before and nothing after: nothing, in both.

    Foreign keys are compared by their serialized bytes.
    """
    if old is None and new is None:
        return []
    variant = Variant(variant)
    if variant is Variant.LEFT and semantics.relaxed_null_keys:
        return _left_join_instructions(old, new, fk_of, semantics)
    if variant.inner and semantics.fk_inner_follows_null_foreign_keys:
        return _inner_join_instructions(old, new, fk_of)
    if old is None:
        fk_new = fk_of(new)
        if fk_new is None:
            return None
        first = (
            Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE
            if variant is Variant.LEFT
            else Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE
        )
        return [Subscription(fk_new, first)]
    fk_old = fk_of(old)
    if fk_old is None:
        return None
    if new is None:
        return [Subscription(fk_old, Instruction.DELETE_KEY_AND_PROPAGATE)]
    fk_new = fk_of(new)
    if fk_new is None:
        return None
    sent = []
    if fk_bytes(fk_new) != fk_bytes(fk_old):
        sent.append(Subscription(fk_old, Instruction.DELETE_KEY_NO_PROPAGATE))
    sent.append(Subscription(fk_new, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE))
    return sent


def _inner_join_instructions(old: Any, new: Any, fk_of: Any) -> list[Subscription] | None:
    fk_old = None if old is None else fk_of(old)
    if new is None:  # a row with a null foreign key subscribed nowhere: nothing to remove
        return [] if fk_old is None else [Subscription(fk_old, Instruction.DELETE_KEY_AND_PROPAGATE)]
    fk_new = fk_of(new)
    if fk_new is None:
        return None if fk_old is None else [Subscription(fk_old, Instruction.DELETE_KEY_AND_PROPAGATE)]
    if fk_old is None or fk_bytes(fk_new) == fk_bytes(fk_old):
        return [Subscription(fk_new, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)]
    return [
        Subscription(fk_old, Instruction.DELETE_KEY_NO_PROPAGATE),
        Subscription(fk_new, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE),
    ]


def _left_join_instructions(old: Any, new: Any, fk_of: Any, semantics: Semantics) -> list[Subscription]:
    fk_new = None if new is None else fk_of(new)
    if old is None:
        return [Subscription(fk_new, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)]
    fk_old = fk_of(old)
    sent = []
    if fk_old is not None and fk_bytes(fk_new) != fk_bytes(fk_old):
        unsubscribe = (
            Instruction.DELETE_KEY_NO_PROPAGATE
            if semantics.fk_change_only_unsubscribes
            else Instruction.DELETE_KEY_AND_PROPAGATE
        )
        sent.append(Subscription(fk_old, unsubscribe))
    sent.append(Subscription(fk_new, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE))
    return sent


def _make_table(
    log: StateLog, task: int, side: Side, options: TableOptions, semantics: Semantics
) -> TableStore | VersionedStore:
    """A table that sends old values (a foreign-key join turns them on for both tables)."""
    if options.versioned:
        assert options.history_retention_ms is not None
        return VersionedStore(
            log,
            task,
            side,
            options.history_retention_ms,
            sends_old_values=True,
            same_ts_tombstone_leaves_no_trace=semantics.versioned_same_ts_tombstone_leaves_no_trace,
        )
    return TableStore(log, task, side, sends_old_values=True)


FROM_COPY: Any = object()
"""``ForeignKeyJoin.process``'s default old value: the row the join's copy of the left table held."""


def _put(table: TableStore | VersionedStore, key: Any, value: Any, ts: int) -> tuple[PutResult, tuple[Any, int] | None]:
    if isinstance(table, VersionedStore):
        return table.put(key, value, ts)
    return PutResult.LATEST, table.put(key, value, ts)


class ForeignKeyTask:
    """The stores of one task: the left table (rows of its primary keys), the right table (rows
    of its foreign keys) and the subscription store of its foreign keys."""

    def __init__(self, log: StateLog, task: int, left: TableOptions, right: TableOptions, semantics: Semantics) -> None:
        self.task = task
        self.left = _make_table(log, task, Side.LEFT, left, semantics)
        self.right = _make_table(log, task, Side.RIGHT, right, semantics)
        self.subscriptions = SubscriptionStore(log, task)


def busy_tasks(options: ForeignKeyOptions, partitions: int, records: Iterable[Record]) -> list[int]:
    """The tasks a foreign-key join over ``records`` can ever use: the partitions of its
    records (responses go back to them) and of the foreign keys their left values subscribe
    to. The engine builds these before the first step, and no other."""
    busy = set()
    for record in records:
        busy.add(record.partition)
        if record.side is Side.LEFT and record.value is not None and partitions > 1:
            fk = options.key_of(extract_foreign_key(options.foreign_key, record.value))
            if fk is not None:
                busy.add(default_partition(fk, partitions))
    return sorted(busy)


class ForeignKeyJoin:
    """Every task of a foreign-key join and the messages in flight between them.

    :meth:`process` handles an input record at its task; :meth:`deliver` hands one message in
    flight to its destination task. Both only ever *send* messages; when they are delivered
    is the engine's schedule.
    """

    tables_are_sources = True
    """Its left and right tables are source tables (``KTableSource``), which drop idempotent updates in 2.6.0 to 2.7.0
    (KIP-557); in a topology they are copies of whatever the join reads, whose own sources apply the rule."""

    def __init__(
        self, log: StateLog, options: ForeignKeyOptions, partitions: int = 1, eager: Iterable[int] | None = None
    ) -> None:
        """``eager``: the tasks built now (default: every partition; the engine passes
        :func:`busy_tasks`); any other task would be built when a record or a message first
        reaches it (:class:`~kjoin.joins.tasks.Tasks`)."""
        self.variant = options.variant
        self.semantics = options.semantics
        self.partitions = partitions
        self.hash_check = options.hash_check
        self.path = options.foreign_key
        self.key_of = options.key_of
        first = list(range(partitions) if eager is None else eager)
        self.tasks = Tasks(
            lambda task_log, task: ForeignKeyTask(task_log, task, options.left, options.right, options.semantics),
            log,
            first,
        )
        self.in_flight = InFlightMessages(log, first)  # a queue's rows sit in its destination task's state

    def fk_of(self, value: Any) -> Any:
        """The foreign-key extractor: the field at ``foreign_key`` in a left value."""
        return self.key_of(extract_foreign_key(self.path, value))

    def partition_of(self, key: Any) -> int:
        """The partition of the subscription topic a subscription for the foreign key ``key`` goes to."""
        return 0 if self.partitions == 1 else default_partition(key, self.partitions)

    def response_partition(self, pk: Any, primary_partition: int) -> int:
        """The partition of the response topic a response for the primary key ``pk`` goes to: the partition its
        subscription came from (Kafka's default response partitioner reads it from the subscription)."""
        return primary_partition

    # -- inputs -------------------------------------------------------------------------
    def process(self, record: Record, ctx: StepContext, change_old: Any = FROM_COPY) -> None:
        """A left or right table update. ``change_old``: the old value of the parent's ``Change`` where the
        subscriptions follow it (a table-table join's, which sends old values to a foreign-key join); by default
        the row the join's copy of the left table held."""
        if drop_null_key_update(record, ctx):
            return
        task = self.tasks[record.partition]
        table = task.left if record.side is Side.LEFT else task.right
        if self.tables_are_sources and drop_idempotent_update(table, record, self.semantics, ctx):
            return
        if record.side is Side.LEFT:
            self._send_subscriptions(self.tasks[record.partition], record, ctx, change_old)
        else:
            self._scan_subscribers(self.tasks[record.partition], record, ctx)

    def deliver(self, message: Message, ctx: StepContext) -> None:
        self.in_flight.take(message)
        task = self.tasks[message.partition]
        if message.topic == SUBSCRIPTION:
            self._receive_subscription(task, message, ctx)
        else:
            self._resolve_response(task, message, ctx)

    # -- 1. send subscription (left task) -------------------------------------------------
    def _send_subscriptions(
        self, task: ForeignKeyTask, record: Record, ctx: StepContext, change_old: Any = FROM_COPY
    ) -> None:
        outcome, previous = _put(task.left, record.key, record.value, record.ts)  # update state
        if _skipped_by_store(outcome, record, ctx):
            return
        old = (None if previous is None else previous[0]) if change_old is FROM_COPY else change_old
        sent = subscription_instructions(old, record.value, self.fk_of, self.variant, self.semantics)
        change = (
            f"left table update {render_value(record.key)}: {render_value(old)} → "
            f"{at(render_value(record.value), record.ts)}"
        )
        if sent is None:
            ctx.drop(
                Reason.NULL_FOREIGN_KEY,
                f"{change}; a null foreign key cannot be subscribed in this join: skipped (the left table keeps the "
                "update).",
            )
            return
        if not sent:
            nothing = (
                "nothing before and nothing after"
                if old is None
                else "the deleted row had a null foreign key, so it subscribed nowhere"
            )
            ctx.settle(Fate.STORED, Reason.NOTHING_TO_DELETE, f"{change}; {nothing}: no subscription.")
            return
        digest = value_hash(record.value)
        ids = []
        for subscription in sent:
            partition = task.task if subscription.fk is None else self.partition_of(subscription.fk)
            wrapper = SubscriptionWrapper(digest, subscription.instruction, record.key, record.partition)
            ids.append(self._send(SUBSCRIPTION, partition, subscription.fk, wrapper, record.ts, ctx.index, ctx))
        if self.variant.inner and record.value is not None and self.fk_of(record.value) is None:
            ctx.settle(
                Fate.STORED,
                Reason.NULL_FOREIGN_KEY_UNSUBSCRIBED,
                f"{change}; the new foreign key is null, so the row subscribes to nothing (Kafka logs it as skipped), "
                f"but it unsubscribes from its old foreign key {render_value(sent[0].fk)}, whose answer deletes the "
                f"old result: sent {', '.join(ids)} with the new value's hash {short_hash(digest)}.",
            )
            return
        ctx.settle(
            Fate.STORED,
            Reason.SUBSCRIPTION_SENT,
            f"{change}; sent {', '.join(ids)} with the new value's hash {short_hash(digest)}.",
        )

    # -- 2. receive subscription and join (right task) -----------------------------------
    def current_right(self, task: ForeignKeyTask, fk: Any) -> tuple[Any, int] | None:
        """The right row a subscription is joined with (``SubscriptionJoinProcessorSupplier`` reads the right table's
        value getter): ``(value, ts)`` or ``None``; here the join's copy of the right table."""
        return task.right.get(fk)

    def _receive_subscription(self, task: ForeignKeyTask, message: Message, ctx: StepContext) -> None:
        wrapper = message.value
        assert isinstance(wrapper, SubscriptionWrapper)
        fk, instruction = message.key, wrapper.instruction
        if fk is None and instruction is not Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
            ctx.drop(Reason.NULL_FOREIGN_KEY, f"{message.describe()}: a null foreign key with {instruction}: skipped.")
            return
        said = f"Task {task.task} received {message.describe()}"
        if fk is not None:  # update state
            combined = CombinedKey(fk, wrapper.pk, self.primary_key_bytes(wrapper.pk))
            if instruction.deletes:
                task.subscriptions.delete(combined)
                said += f"; removed subscription {combined}"
            else:
                task.subscriptions.put(combined, wrapper, message.ts)
                said += f"; stored subscription {combined}"
        found = None if fk is None else self.current_right(task, fk)  # look up
        ts = message.ts if found is None else max(message.ts, found[1])
        has = "nothing" if found is None else at(shown(found[0]), found[1])
        said += f"; the right table has {has} for {render_value(fk)}"
        if instruction is Instruction.DELETE_KEY_NO_PROPAGATE or (
            instruction is Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE and found is None
        ):
            ctx.settle(Fate.STORED, Reason.NO_PROPAGATE, f"{said}; {instruction}: no response.")
            return
        foreign_value = None if (found is None or instruction is Instruction.DELETE_KEY_AND_PROPAGATE) else found[0]
        response = ResponseWrapper(wrapper.hash, foreign_value, wrapper.primary_partition)
        partition = self.response_partition(wrapper.pk, wrapper.primary_partition)
        sent = self._send(RESPONSE, partition, wrapper.pk, response, ts, message.origin_step, ctx)
        ctx.settle(
            Fate.STORED,
            Reason.RESPONSE_SENT,
            f"{said}; {instruction}: sent {sent} ({shown(foreign_value)}) back{_zero_bytes_note(response)}.",
        )

    # -- 3. prefix scan on a right update (right task) ------------------------------------
    def _scan_subscribers(self, task: ForeignKeyTask, record: Record, ctx: StepContext) -> None:
        outcome, _ = _put(task.right, record.key, record.value, record.ts)  # update state
        if _skipped_by_store(outcome, record, ctx):
            return
        subscribers = task.subscriptions.prefix_scan(CombinedKey(record.key, None).prefix())  # look up
        change = lambda: (  # noqa: E731
            f"right table update {render_value(record.key)} → {at(shown(record.value), record.ts)}"
        )
        if not subscribers:
            ctx.settle(
                Fate.STORED,
                Reason.NO_SUBSCRIBER,
                lambda: f"{change()}; no left row subscribes to {render_value(record.key)}.",
            )
            return
        ids = [self._respond(wrapper, combined.pk, record, ctx) for combined, wrapper, _ in subscribers]
        found = lambda: ", ".join(str(s[0]) for s in subscribers)  # noqa: E731
        ctx.settle(
            Fate.STORED,
            Reason.RESPONSE_SENT,
            lambda: (
                f"{change()}; prefix scan found {found()}: sent {', '.join(ids)}"
                f"{_zero_bytes_note(ResponseWrapper(None, record.value, 0))}."
            ),
        )

    def _respond(self, wrapper: SubscriptionWrapper, pk: Any, record: Record, ctx: StepContext) -> str:
        """Send the right update ``record`` to the subscriber ``pk``; return the message id."""
        response = ResponseWrapper(wrapper.hash, record.value, wrapper.primary_partition)
        partition = self.response_partition(pk, wrapper.primary_partition)
        return self._send(RESPONSE, partition, pk, response, record.ts, ctx.index, ctx)

    # -- 4. resolve the response by hash (left task) -------------------------------------
    def primary_key_bytes(self, pk: Any) -> bytes | None:
        """The primary key's bytes in the subscription store's key when the left table's key serde is not the
        String serde (``None``: it is)."""
        return None

    def current_left(self, task: ForeignKeyTask, pk: Any) -> tuple[Any, int] | None:
        """The left row a response is resolved against (``ResponseJoinProcessor`` reads the left table's value
        getter): ``(value, ts)`` or ``None``; here the join's copy of the left table."""
        return task.left.get(pk)

    def _resolve_response(self, task: ForeignKeyTask, message: Message, ctx: StepContext) -> None:
        response = message.value
        assert isinstance(response, ResponseWrapper)
        pk = message.key
        current = self.current_left(task, pk)  # look up
        current_value = None if current is None else current[0]
        current_hash = value_hash(current_value)
        said = (
            f"Task {task.task} received {message.describe()}; the left row is {render_value(current_value)} "
            f"{short_hash(current_hash)}"
        )
        if current_hash != response.hash:
            if self.hash_check:
                ctx.drop(Reason.STALE_RESPONSE, f"{said}: the hashes differ, the response is stale: dropped.")
                return
            said += " (hashes differ; hash check off: joined anyway)"
        foreign_value = response.received  # a right value of zero bytes is read back as null
        if response.arrives_as_null:
            said += (
                f"; the right value {shown(response.foreign_value)} serializes to zero bytes, and a response writes "
                "a missing right value as zero bytes too: Kafka cannot tell them apart and reads it as null"
            )
        if foreign_value is None and (self.variant.inner or current_value is None):  # call the joiner (or not)
            ctx.emit_tombstone(pk, current_value, None, message.ts, origin_step=message.origin_step)
            ctx.settle(Fate.JOINED, None, f"{said}: no right value: tombstone.")
            return
        kind = OutputKind.JOINED if foreign_value is not None and current_value is not None else OutputKind.UNMATCHED
        output = ctx.emit(kind, pk, current_value, foreign_value, message.ts, origin_step=message.origin_step)
        ctx.settle(Fate.JOINED, None, f"{said}: joiner called: {render_value(output.value)}.")

    # -- sending --------------------------------------------------------------------------
    def _send(
        self, topic: str, partition: int, key: Any, value: Any, ts: int, origin_step: int, ctx: StepContext
    ) -> str:
        message = Message(self.in_flight.next_id(), topic, partition, key, value, ts, origin_step, ctx.index)
        self.in_flight.send(message)
        return message.id


def _zero_bytes_note(response: ResponseWrapper) -> str:
    """What an explanation adds when a response carries a right value of zero bytes."""
    if not response.arrives_as_null:
        return ""
    return (
        f" (the right value {shown(response.foreign_value)} serializes to zero bytes, as a missing one does: the "
        "left task will read it as null)"
    )


def _skipped_by_store(outcome: PutResult, record: Record, ctx: StepContext) -> bool:
    """A versioned table's refused put, or an out-of-order version: nothing is sent (KIP-914)."""
    if outcome is PutResult.EXPIRED:
        ctx.drop(
            Reason.EXPIRED_PUT,
            f"{record.describe()} is older than the {record.side} table's history retention allows: not stored, "
            "nothing sent.",
        )
        return True
    if outcome is PutResult.OUT_OF_ORDER:
        ctx.drop(
            Reason.OUT_OF_ORDER_VERSION,
            f"{record.describe()} is stored as an older version of the versioned {record.side} table; out-of-order: "
            "nothing sent.",
        )
        return True
    return False
