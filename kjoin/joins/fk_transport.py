"""How a foreign-key join's messages travel between tasks: one ordered queue per topic partition.

This is a transport, not a store: Kafka keeps no state for a message on its way. kjoin
still writes every message in flight into the state of its destination task (the
``in flight`` entries, ``id -> Message``), so a trace shows what is on its way after any
step; :class:`InFlight` describes those entries as rows.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable, Mapping

from ..records import render_value
from ..state import StateLog, StoreId
from ..stores import IN_FLIGHT
from ..stores.base import Item, StoreKind
from .fk_protocol import Message, SubscriptionWrapper, shown

__all__ = ["InFlightMessages", "InFlight", "IN_FLIGHT", "carries"]


def carries(message: Message) -> str:
    """What a message asks or answers: ``(Y, A) PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE`` for a
    subscription (its combined key and instruction), ``A ← bar`` for a response."""
    value = message.value
    if isinstance(value, SubscriptionWrapper):
        return f"({render_value(message.key)}, {render_value(value.pk)}) {value.instruction.value}"
    return f"{render_value(message.key)} ← {shown(value.foreign_value)}"


class InFlight(StoreKind):
    """The messages on their way to one task, oldest first: ``id | topic | to task | key |
    carries | hash | ts | sent at step``."""

    kind = "in flight"
    header = ("id", "topic", "to task", "key", "carries", "hash", "ts", "sent at step")
    default_names = (IN_FLIGHT,)

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        m = stored
        return (m.id, m.topic, m.partition, m.key, carries(m), m.value.hash, m.ts, m.sent_step)

    @classmethod
    def order(cls, item: Item) -> Any:
        return item[1].seq

    @classmethod
    def summary(cls, record: Mapping[str, Any], stored: Any = None) -> tuple[Any, Any, Any, Any]:
        return record["key"], record["ts"], stored.describe(), record["id"]


class InFlightMessages:
    """Messages sent between tasks and not yet delivered, one queue per (topic, partition).

    Kafka delivers a topic partition in order; between partitions (and topics) any
    interleaving can happen. Entries in the state of the destination task: ``id -> Message``.
    """

    header = InFlight.header

    def __init__(self, log: StateLog, tasks: Iterable[int] = ()) -> None:
        """``tasks``: the tasks whose queues appear in the state from the first step."""
        self._log = log
        self._queues: dict[tuple[str, int], list[Any]] = {}
        self._seq = itertools.count(1)
        for task in tasks:
            log.declare(_queue_store(task))

    def next_id(self) -> str:
        return f"m{next(self._seq)}"

    def send(self, message: Any) -> None:
        self._queues.setdefault((message.topic, message.partition), []).append(message)
        self._log.put(_queue_store(message.partition), message.id, message)

    def __len__(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    def rows(self) -> list[tuple]:
        """Every message in flight as a row, oldest first."""
        return [InFlight.row(m.id, m) for m in self.pending()]

    def heads(self) -> list[Any]:
        """The next deliverable message of every non-empty queue, oldest first."""
        return sorted((queue[0] for queue in self._queues.values() if queue), key=lambda m: m.seq)

    def pending(self) -> list[Any]:
        """Every message in flight, oldest first."""
        return sorted((m for queue in self._queues.values() for m in queue), key=lambda m: m.seq)

    def take(self, message: Any) -> None:
        """Remove ``message``, which must be the head of its queue."""
        queue = self._queues[(message.topic, message.partition)]
        if queue[0] is not message:
            raise ValueError(f"{message.id} is behind {queue[0].id} in {message.topic} partition {message.partition}")
        queue.pop(0)
        self._log.delete(_queue_store(message.partition), message.id)


def _queue_store(task: int) -> StoreId:
    """Where the messages on their way to ``task`` appear in its state."""
    return StoreId(task, IN_FLIGHT, InFlight.kind)
