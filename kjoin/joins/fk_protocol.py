"""The messages of a foreign-key join: subscriptions, responses, and what they carry.

How it works (KIP-213; docs/semantics.md §4):

* The left (LHS) task of a primary key sends a *subscription* to the right (RHS) task that
  owns the foreign key: ``(fk, SubscriptionWrapper(hash of the new left value, instruction,
  pk, pk's partition))``.
* The RHS task keeps every live subscription in a store keyed by :class:`CombinedKey`
  ``(fk, pk)``, serialized ``[4-byte len(fk)][fk][pk]`` so that all subscribers of one
  foreign key sit together and a prefix scan finds them in primary-key byte order.
* The RHS answers with a *response* ``(pk, ResponseWrapper(hash, right value))`` sent to the
  partition of the primary key; the LHS drops it as stale when the hash no longer matches
  the hash of its current left value.

The hash is BLAKE2b with a 16-byte (128-bit) digest of the value's serialized bytes
(:func:`kjoin.serde.serialize_value`, the String serde's). Kafka uses Murmur3-128 of the same
bytes; any 128-bit hash of them gives the same equalities. A deleted value has no hash
(``None``), as in Kafka.

A response carries the right value as bytes, and a missing one as zero bytes, so a right value
that serializes to zero bytes (``""``) arrives as null (:attr:`ResponseWrapper.received`,
:func:`kjoin.serde.through_response`).
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from typing import Any

from ..partitioner import serialize_key
from ..records import render_value
from ..serde import serialize_value, serializes_to_nothing, through_response
from ..times import stamp

__all__ = [
    "Instruction",
    "CombinedKey",
    "SubscriptionWrapper",
    "ResponseWrapper",
    "Message",
    "value_hash",
    "fk_bytes",
    "extract_foreign_key",
    "short_hash",
    "shown",
    "SUBSCRIPTION",
    "RESPONSE",
]

SUBSCRIPTION = "subscription"
"""The topic from the left tasks to the right tasks, partitioned by foreign key."""
RESPONSE = "response"
"""The topic from the right tasks back to the left tasks, partitioned by primary key."""


class Instruction(enum.Enum):
    """What a subscription asks the right side to do (Kafka's ``SubscriptionWrapper.Instruction``)."""

    DELETE_KEY_NO_PROPAGATE = "DELETE_KEY_NO_PROPAGATE"
    """Remove the subscription ``(fk, pk)`` and send nothing back. Sent to the *old* foreign key
    when a left row moves to another foreign key (inner joins; left joins before 3.7): the
    subscription to the new foreign key answers for the row."""
    DELETE_KEY_AND_PROPAGATE = "DELETE_KEY_AND_PROPAGATE"
    """Remove the subscription and answer with a null right value, so that the left side
    deletes its result (or, in a left join whose row still exists, re-joins it with null).
    Sent for a left delete; from 3.7.0 to 3.9.0 and in 4.0.0 by a left join to the old foreign
    key of a change; since
    3.9.1 and 4.0.1 by an inner join to the old foreign key of a row whose foreign key became null."""
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE"
    """Store the subscription and always answer: with the right value, or with null when the
    foreign key has none, so that an earlier result is wiped out. Sent for updates (by an inner
    join since 3.9.1 only for a change of foreign key), for new rows of a left join, and (since
    3.7) for a left join's null foreign key."""
    PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = "PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE"
    """Store the subscription and answer only if the foreign key has a right value. Sent by an
    inner join for a new left row: there is no earlier result to wipe out; since 3.9.1 and 4.0.1
    also for a row whose foreign key was null, and for an update that keeps its foreign key (a
    row that finds no right value now found none before, so it has no result to wipe out)."""

    @property
    def deletes(self) -> bool:
        """Does the right side remove the subscription (rather than upsert it)?"""
        return self in (Instruction.DELETE_KEY_NO_PROPAGATE, Instruction.DELETE_KEY_AND_PROPAGATE)

    def __str__(self) -> str:
        return self.value


def extract_foreign_key(path: str, value: Any) -> Any:
    """The foreign-key extractor of ``foreign_key: <path>``: the field at ``path`` (``fk``,
    ``customer.id``) in a left value. A plain field lookup, never code; ``None`` when the
    field holds null. (Scenario validation checks every left value has the field.)"""
    for part in path.split("."):
        value = value[part]
        if value is None:
            return None
    return value


def value_hash(value: Any) -> str | None:
    """The 128-bit hash of a left value's serialized bytes as 32 hex digits; ``None`` for a
    deleted value."""
    data = serialize_value(value)
    return None if data is None else hashlib.blake2b(data, digest_size=16).hexdigest()


def shown(value: Any) -> str:
    """A value in an explanation: as :func:`render_value` writes it, but a value of zero bytes
    as ``""`` rather than nothing."""
    return '""' if serializes_to_nothing(value) else render_value(value)


def short_hash(digest: str | None) -> str:
    """The first 8 hex digits, as explanations show a hash: ``#3f2a9c01``; ``#null``."""
    return "#null" if digest is None else f"#{digest[:8]}"


def fk_bytes(fk: Any) -> bytes | None:
    """The serialized foreign key (Kafka compares foreign keys by their bytes)."""
    return None if fk is None else serialize_key(fk)


@dataclass(frozen=True, slots=True)
class CombinedKey:
    """The subscription store's key: a foreign key and a primary key.

    Ordered as Kafka's bytes ``[4-byte len(fk)][fk][pk]``: by foreign-key length, foreign-key
    bytes, then primary-key bytes (see :meth:`sort_key`).
    """

    fk: Any
    pk: Any
    pk_bytes: bytes | None = field(default=None, compare=False)
    """The primary key as the join's key serde writes it, where that is not the String serde's: a windowed table's
    ``Windowed<K>`` (:meth:`ForeignKeyJoin.primary_key_bytes`)."""

    def sort_key(self) -> tuple[int, bytes, bytes]:
        fk = serialize_key(self.fk)
        return (len(fk), fk, serialize_key(self.pk) if self.pk_bytes is None else self.pk_bytes)

    def prefix(self) -> tuple[int, bytes]:
        """The bytes a prefix scan for this foreign key matches."""
        fk = serialize_key(self.fk)
        return (len(fk), fk)

    def __str__(self) -> str:
        return f"({render_value(self.fk)}, {render_value(self.pk)})"


@dataclass(frozen=True, slots=True)
class SubscriptionWrapper:
    """The value of a subscription message and of a subscription-store row."""

    hash: str | None
    instruction: Instruction
    pk: Any
    primary_partition: int


@dataclass(frozen=True, slots=True)
class ResponseWrapper:
    """The value of a response message: the subscription's hash and the right value (or null).

    ``foreign_value`` is the right value the right task sent; :attr:`received` what the left
    task reads back (``SubscriptionResponseWrapperSerde`` writes a missing value as zero bytes,
    so a value that serializes to zero bytes, ``""``, is read as null)."""

    hash: str | None
    foreign_value: Any
    primary_partition: int

    @property
    def received(self) -> Any:
        """The right value as the left task deserializes it."""
        return through_response(self.foreign_value)

    @property
    def arrives_as_null(self) -> bool:
        """Is the right value one that serializes to zero bytes, read back as null?"""
        return serializes_to_nothing(self.foreign_value)


@dataclass(frozen=True, slots=True)
class Message:
    """One message between tasks, from the moment it is sent until it is delivered.

    ``id`` (``m1``, ``m2``, …) numbers messages in the order they were sent. ``partition`` is
    the destination task. ``origin_step`` is the step of the input record whose change set
    off the chain; ``sent_step`` the step that sent this message.
    """

    id: str
    topic: str
    partition: int
    key: Any
    value: SubscriptionWrapper | ResponseWrapper
    ts: int
    origin_step: int
    sent_step: int

    @property
    def seq(self) -> int:
        return int(self.id[1:])

    def describe(self) -> str:
        """``subscription m1 (Y, A) PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE #3f2a9c01 @2 → task 1``."""
        if isinstance(self.value, SubscriptionWrapper):
            body = (
                f"({render_value(self.key)}, {render_value(self.value.pk)}) {self.value.instruction} "
                f"{short_hash(self.value.hash)}"
            )
        else:
            body = f"{render_value(self.key)} ← {shown(self.value.foreign_value)} {short_hash(self.value.hash)}"
        return f"{self.topic} {self.id} {body} {stamp(self.ts)} → task {self.partition}"

    def to_dict(self) -> dict[str, Any]:
        value = self.value
        data: dict[str, Any] = {
            "id": self.id,
            "topic": self.topic,
            "partition": self.partition,
            "key": self.key,
            "ts": self.ts,
            "hash": value.hash,
            "origin_step": self.origin_step,
            "sent_step": self.sent_step,
        }
        if isinstance(value, SubscriptionWrapper):
            data.update(instruction=value.instruction.value, pk=value.pk)
        else:
            data.update(foreign_value=value.foreign_value)
        return data
