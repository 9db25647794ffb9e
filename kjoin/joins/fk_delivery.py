"""When a foreign-key join's messages are delivered: one scheduler per delivery mode.

A scheduler decides only *when* the engine delivers which message in flight; what a
delivery does is :meth:`ForeignKeyJoin.deliver <kjoin.joins.foreign_key.ForeignKeyJoin.deliver>`.
The engine asks it at four moments: before an input record (:meth:`~Scheduler.before_input`),
after it (:meth:`~Scheduler.after_input`), at a ``{deliver: ...}`` instruction
(:meth:`~Scheduler.on_instruction`) and after the last event (:meth:`~Scheduler.at_end`).

* :class:`ImmediateDelivery`: after each input, everything, in the order sent (Kafka's
  TopologyTestDriver processes each input to completion).
* :class:`ExplicitDelivery`: only what ``{deliver: ...}`` instructions release.
* :class:`RandomDelivery`: after each input a seeded random number of messages, each picked
  at random among the heads of the (topic, partition) queues; the rest at the end. With
  ``wait_for_row``, an input record first waits until nothing about its row is in flight.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from ..records import Record, Side
from .fk_transport import InFlightMessages
from .fk_protocol import SUBSCRIPTION, Message

__all__ = ["Scheduler", "ImmediateDelivery", "ExplicitDelivery", "RandomDelivery", "scheduler_for", "NoSuchMessage"]

Deliver = Callable[[Message], None]
"""Delivers one message (the head of its queue) as a step of its own."""


class NoSuchMessage(ValueError):
    """A ``{deliver: ...}`` instruction that names nothing deliverable (the message says why)."""


class Scheduler:
    """Delivers nothing on its own: the base of the delivery modes."""

    def __init__(self, in_flight: InFlightMessages) -> None:
        self.in_flight = in_flight

    def before_input(self, record: Record, deliver: Deliver) -> None:
        """Called before ``record`` is processed."""

    def after_input(self, deliver: Deliver) -> None:
        """Called after an input record was processed."""

    def on_instruction(self, which: str, deliver: Deliver) -> None:  # pragma: no cover - the scenario rules forbid it
        raise NoSuchMessage("deliver events need delivery: explicit")

    def at_end(self, deliver: Deliver) -> None:
        """Called after the last event."""

    def _deliver_in_order(self, deliver: Deliver) -> None:
        while len(self.in_flight):
            deliver(self.in_flight.heads()[0])


class ImmediateDelivery(Scheduler):
    """After each input record, every message in flight, oldest first."""

    def after_input(self, deliver: Deliver) -> None:
        self._deliver_in_order(deliver)


class ExplicitDelivery(Scheduler):
    """Messages wait in flight until a ``{deliver: next | all | subscription | response | m3}`` releases them."""

    def on_instruction(self, which: str, deliver: Deliver) -> None:
        if which == "all":  # everything, including what the deliveries send
            self._deliver_in_order(deliver)
            return
        heads = self.in_flight.heads()
        if which == "next":
            chosen = heads[:1]
        elif which in ("subscription", "response"):
            chosen = [m for m in heads if m.topic == which][:1]
        else:
            pending = {m.id: m for m in self.in_flight.pending()}
            if which not in pending:
                raise NoSuchMessage(f"no message {which} is in flight (in flight: {', '.join(pending) or 'nothing'})")
            message = pending[which]
            if message not in heads:
                raise NoSuchMessage(
                    f"{which} waits behind an earlier message of {message.topic} partition {message.partition}; "
                    "Kafka delivers a partition in order"
                )
            chosen = [message]
        if not chosen:
            raise NoSuchMessage(f"no {which} message is in flight")
        for message in chosen:
            deliver(message)


class RandomDelivery(Scheduler):
    """A seeded random interleaving that keeps every (topic, partition) in order."""

    def __init__(self, in_flight: InFlightMessages, seed: int, wait_for_row: bool) -> None:
        super().__init__(in_flight)
        self.rng = random.Random(seed)
        self.wait_for_row = wait_for_row

    def before_input(self, record: Record, deliver: Deliver) -> None:
        if self.wait_for_row:
            while any(_about_row(message, record) for message in self.in_flight.pending()):
                deliver(self.rng.choice(self.in_flight.heads()))

    def after_input(self, deliver: Deliver) -> None:
        for _ in range(self.rng.randint(0, len(self.in_flight))):
            if not len(self.in_flight):
                break
            deliver(self.rng.choice(self.in_flight.heads()))

    def at_end(self, deliver: Deliver) -> None:
        while len(self.in_flight):
            deliver(self.rng.choice(self.in_flight.heads()))


def scheduler_for(delivery: Any, in_flight: InFlightMessages) -> Scheduler:
    """The scheduler of a scenario's ``delivery`` (its ``mode``, ``seed`` and ``wait_for_row``)."""
    if delivery.mode == "immediate":
        return ImmediateDelivery(in_flight)
    if delivery.mode == "explicit":
        return ExplicitDelivery(in_flight)
    return RandomDelivery(in_flight, delivery.seed, delivery.wait_for_row)


def _about_row(message: Message, record: Record) -> bool:
    """Is ``message`` about the row ``record`` changes: for a left row, a subscription from it or a
    response to it; for a right row, a subscription to it (the right task answers it with whatever
    the row holds when the subscription arrives)."""
    if record.side is Side.LEFT:
        target = message.value.pk if message.topic == SUBSCRIPTION else message.key  # type: ignore[union-attr]
    elif message.topic == SUBSCRIPTION:
        target = message.key
    else:
        return False
    return type(target) is type(record.key) and target == record.key
