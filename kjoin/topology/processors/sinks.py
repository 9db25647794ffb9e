"""The nodes that write records to topics: ``to`` (a user's topic) and a repartition topic's sink."""

from __future__ import annotations

from typing import Any

from ...fates import Fate, Reason
from ...records import Side, render_value
from ...times import at
from .base import NodeProcessor, OldValue, Outcome, Rec, said

__all__ = ["TopicSink", "RepartitionSink"]


class TopicSink(NodeProcessor):
    """``to``: write the record to its topic."""

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        topic = self.node.topic
        if self.node.params.get("carries_old"):  # a table group-by's repartition topic: Change(new, old)
            change = at(f"{render_value(rec.key)}:Change({render_value(rec.value)}, {render_value(rec.old)})", rec.ts)
            return Outcome(
                Fate.FORWARDED,
                None,
                lambda: f"wrote {change} to {topic}.",
                writes=[(topic, rec.key, rec.value, rec.ts, OldValue(rec.old))],
            )
        return Outcome(Fate.FORWARDED, None, _Wrote(rec, topic), writes=[(topic, rec.key, rec.value, rec.ts, None)])  # type: ignore[list-item]


class _Wrote:
    """A sink's words, written when read: ``wrote key:value@ts to topic.`` Two slots, not a closure: a whole run keeps
    one per record written."""

    __slots__ = ("rec", "topic")

    def __init__(self, rec: Rec, topic: str) -> None:
        self.rec, self.topic = rec, topic

    def __call__(self) -> str:
        return f"wrote {said(self.rec)} to {self.topic}."


class RepartitionSink(TopicSink):
    """A repartition topic's sink: as ``to``, but a null key is filtered out unless a join below takes null keys."""

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        if rec.key is not None:
            return super().handle(port, rec, step)
        topic = self.node.topic
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
        writes: list[Any] = [(topic, rec.key, rec.value, rec.ts, None)]
        return Outcome(Fate.FORWARDED, None, text, writes=writes)
