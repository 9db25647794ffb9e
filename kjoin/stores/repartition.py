"""A group-by's repartition topic (the windowed-table design's table aggregate), kept as a store so that a stepper sees
what the
group-by wrote: :class:`RepartitionTopic`, one partition's records by offset, each a ``Change(new, old)``
(:class:`RepartitionRecord`). A topic is a log: records stay after the aggregate read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..records import render_value
from ..state import StateLog, StoreId
from .base import StoreKind

__all__ = ["RepartitionRecord", "RepartitionTopic", "RepartitionTopicKind"]


@dataclass(frozen=True, slots=True)
class RepartitionRecord:
    """One record a group-by wrote to the repartition topic: ``Change(new, old)`` for ``key``."""

    key: Any
    new: Any
    old: Any
    ts: int
    origin_step: int

    def describe(self) -> str:
        return f"{render_value(self.key)}: Change(new={render_value(self.new)}, old={render_value(self.old)})"


class RepartitionTopic:
    """One partition of a group-by's repartition topic: every record written, by offset.

    A topic is a log, so records stay after the aggregate read them. Rows in the state:
    ``offset -> (text, ts, key, new, old, from step)``.
    """

    header = ("offset", "key", "new", "old", "ts", "from step")

    def __init__(self, log: StateLog, task: int, name: str = "repartition topic") -> None:
        self._log = log
        self.name = name
        self.store = StoreId(task, name, RepartitionTopicKind.kind)
        self._records: dict[int, tuple] = {}
        log.declare(self.store)

    def append(self, record: RepartitionRecord) -> int:
        offset = len(self._records)
        self._records[offset] = (record.describe(), record.ts, record.key, record.new, record.old, record.origin_step)
        self._log.put(self.store, offset, self._records[offset])
        return offset

    def rows(self) -> list[tuple]:
        return self.rows_from(self._records)

    @staticmethod
    def rows_from(entries: dict[Any, Any]) -> list[tuple]:
        return [(offset, r[2], r[3], r[4], r[1], r[5]) for offset, r in sorted(entries.items())]


class RepartitionTopicKind(StoreKind):
    """``offset -> (text, ts, key, new, old, from step)``: rows by offset."""

    kind = "repartition topic"
    header = RepartitionTopic.header

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        return (entry_key, stored[2], stored[3], stored[4], stored[1], stored[5])

    @classmethod
    def summary(cls, record: Any, stored: Any = None) -> tuple[Any, Any, Any, Any]:
        detail = f"old {render_value(record['old'])}, offset {record['offset']}"
        return record["key"], record["ts"], record["new"], detail
