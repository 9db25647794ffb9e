"""The vocabulary of a scenario: its allowed values and the small value objects it holds.

Everything a scenario field may hold is declared here, once: the ``Literal`` types accepted
at the public edge (with the tuples the parser checks against, derived from them), and the
frozen value objects of the nested fields (``window`` aside: :class:`~kjoin.joins.JoinWindows`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

from ..join_model import JoinWindows, TableOptions
from ..records import Side

__all__ = [
    "JoinKind",
    "Variant",
    "VersionedMode",
    "DeliveryMode",
    "JOINS",
    "VARIANTS",
    "VERSIONED_MODES",
    "DELIVERY_MODES",
    "DELIVER_SELECTORS",
    "CACHING_STORES",
    "KEY_TYPES",
    "MAX_TIMESTAMP_MS",
    "ScenarioError",
    "TableOptions",
    "ChainedJoin",
    "Event",
    "Deliver",
    "Delivery",
    "Arrival",
    "ARRIVAL_SIDE_FIELDS",
    "field_names",
]

JoinKind = Literal["stream-stream", "stream-table", "table-table", "fk", "stream-globaltable"]
"""The kinds of join a scenario can run (``fk``: a KTable-KTable foreign-key join; ``stream-globaltable``: a
KStream-GlobalKTable join, its right events the global topic's records)."""
Variant = Literal["inner", "left", "outer"]
"""Join variants; :data:`VARIANTS` says which kind of join has which."""
VersionedMode = Literal["final", "attempt1", "attempt2"]
"""How a table-table join over versioned tables handles an out-of-order record (seed 003):
``final`` emits nothing (KIP-914 as shipped); ``attempt1`` joins it with one timestamped
lookup of the other side; ``attempt2`` scans the other side's history and emits every older
result the record changes."""
DeliveryMode = Literal["immediate", "explicit", "random"]
"""When a foreign-key join's messages are delivered (see :class:`Delivery`)."""

JOINS: tuple[str, ...] = get_args(JoinKind)
VARIANTS: dict[str, tuple[str, ...]] = {
    "stream-stream": ("inner", "left", "outer"),
    "stream-table": ("inner", "left"),
    "table-table": ("inner", "left", "outer"),
    "fk": ("inner", "left"),
    "stream-globaltable": ("inner", "left"),
}
VERSIONED_MODES: tuple[str, ...] = get_args(VersionedMode)
DELIVERY_MODES: tuple[str, ...] = get_args(DeliveryMode)
DELIVER_SELECTORS = ("next", "all", "subscription", "response")
CACHING_STORES = ("left", "right", "result")
"""The stores a ``caching:`` list can name: the source tables and a materialized result."""
KEY_TYPES = (str, int, float, bool)
"""The Python types of a non-null key (and of a foreign key)."""
MAX_TIMESTAMP_MS = 2**63 - 1
"""Kafka's timestamps are 64-bit signed longs: the largest timestamp a record can carry."""


class ScenarioError(ValueError):
    """A scenario that cannot run: the message names where and what is expected."""

    def __init__(self, message: str, source: str | None = None) -> None:
        self.source = source
        super().__init__(f"{source}: {message}" if source else message)


@dataclass(frozen=True)
class ChainedJoin:
    """One more join in a chain (``then:``): the result so far joined with the right input
    again, with this variant (and, for stream-stream joins, this window)."""

    variant: Variant
    window: JoinWindows | None = None


@dataclass(frozen=True)
class Event:
    """One input event as the scenario lists it; partition and offset may be left to kjoin."""

    side: Side
    key: Any
    value: Any
    ts: int
    partition: int | None = None
    offset: int | None = None


@dataclass(frozen=True)
class Deliver:
    """A foreign-key scenario's instruction to deliver messages in flight (explicit delivery).

    ``which`` is ``next`` (the oldest deliverable message), ``all`` (everything, including what
    the deliveries send), ``subscription`` / ``response`` (the oldest deliverable message of
    that topic) or a message id such as ``m3``.
    """

    which: str


@dataclass(frozen=True)
class Delivery:
    """When a foreign-key join's messages between tasks are delivered.

    * ``immediate`` (default): after each input record, every message is delivered in the
      order sent, as Kafka's TopologyTestDriver processes each input to completion. (The
      driver picks among its internal partitions by head timestamp; the two orders agree
      whenever the messages' timestamps do not decrease, as in every seed table.)
    * ``explicit``: messages wait in flight until a ``{deliver: ...}`` event releases them.
    * ``random``: after each input record a seeded random number of messages is delivered,
      picking at random among the heads of the (topic, partition) queues, so each partition
      stays in order; everything left is delivered the same way after the last event.
      With ``wait_for_row``, an input record is processed only once every message about its
      row has been delivered (a left row's subscriptions and responses, the subscriptions to
      a right row): the condition under which the join is sure to converge to the SQL join.
      Without it a result can stay stale, as in Kafka: a left row updated again while its
      answer is still travelling; and, in an inner join since 3.9.1, a right row deleted
      while the subscription of an update that keeps its foreign key travels (the delete's
      answer carries the old hash and is dropped; the update asks for an answer only if
      the right row exists).
    """

    mode: DeliveryMode = "immediate"
    seed: int = 0
    wait_for_row: bool = False


@dataclass(frozen=True)
class Arrival:
    """When each side's records reach their Kafka task: a side's record arrives ``lag_ms`` after
    its timestamp (and never before the records ahead of it in its partition), and the task
    processes what has arrived, as Kafka Streams does with ``max.task.idle.ms = 0``: of the
    input partitions that have records buffered, the one whose next record has the lowest
    timestamp (on a tie, the one it did not take its last record from:
    :class:`kjoin.ordering.PartitionGroup`). Both lags 0: both partitions always have records
    buffered, Kafka's timestamp-ordered merge (what ``max.task.idle.ms`` waiting gives).

    With ``arrival``, a scenario's events are listed per partition (their offsets) and the
    processing order is computed; without it, the events run in their listed order."""

    left_lag_ms: int = 0
    right_lag_ms: int = 0
    left_partition_lags: tuple[tuple[int, int], ...] = ()
    """``(partition, lag_ms)``: partitions of the left topic that lag by their own amount (instead of
    ``left_lag_ms``): ``arrival: {left: {partitions: {2: 5000}}}``, one broker or producer behind."""
    right_partition_lags: tuple[tuple[int, int], ...] = ()

    def lag_ms(self, side: str, partition: int | None = None) -> int:
        """How long after its timestamp a record of ``side`` (in ``partition``, when given) reaches its task."""
        own = dict(self.left_partition_lags if side == "left" else self.right_partition_lags)
        if partition is not None and partition in own:
            return own[partition]
        return self.left_lag_ms if side == "left" else self.right_lag_ms

    def partition_lags(self, side: str) -> dict[int, int]:
        return dict(self.left_partition_lags if side == "left" else self.right_partition_lags)


ARRIVAL_SIDE_FIELDS = ("lag_ms", "partitions")
"""The fields of one side of ``arrival:`` (``{right: {lag_ms: 5000, partitions: {2: 8000}}}``): the side's lag, and
partitions that lag by their own amount."""


def field_names(value_object: type) -> tuple[str, ...]:
    """The fields a nested mapping of a scenario takes: those of the value object it becomes (``window:`` a
    :class:`~kjoin.joins.JoinWindows`, ``left:``/``right:`` a :class:`TableOptions`, ``delivery:`` a
    :class:`Delivery`, an item of ``then:`` a :class:`ChainedJoin`, an event an :class:`Event`). The parser refuses
    any other field and the reference pages list these, so the two cannot disagree."""
    return tuple(field.name for field in fields(value_object))
