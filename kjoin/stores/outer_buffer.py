"""The outer-join buffer of a 3.1+ left/outer stream-stream join: records waiting for a partner."""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from typing import Any, Mapping

from ..partitioner import serialize_key
from ..records import Side
from ..state import StateLog
from .base import Item, Store

__all__ = ["OuterJoinBuffer", "BufferedRecord", "OUTER_BUFFER"]

OUTER_BUFFER = "outer-join buffer"


@dataclass(frozen=True, slots=True)
class BufferedRecord:
    """A left/outer record waiting in the outer-join buffer for a partner or for its window to close."""

    side: Side
    key: Any
    value: Any
    ts: int
    closes_at_ms: int
    """The record is emitted with null once stream time is strictly greater than this."""
    origin_step: int


class OuterJoinBuffer(Store):
    """The shared outer-join store of a 3.1+ left/outer stream-stream join (one per task).

    Kafka keys it by ``<ts, side, key>`` with a list of values per key; iteration order is
    timestamp ascending, then right (side byte 0) before left (1), then the serialized key
    bytes unsigned, then arrival. A match deletes the whole list of its ``<ts, side, key>``.
    Entries in the state: ``(ts, side byte, key bytes, seq) -> BufferedRecord``; rows
    ``ts | side | key | value | closes_at_ms | origin_step`` in Kafka's iteration order.
    """

    kind = "outer-join buffer"
    header = ("ts", "side", "key", "value", "closes_at_ms", "origin_step")
    default_names = (OUTER_BUFFER,)

    def __init__(self, log: StateLog, task: int, name: str = OUTER_BUFFER) -> None:
        super().__init__(log, task, name)
        self._groups: dict[tuple[int, int, bytes], list[tuple[int, BufferedRecord]]] = {}
        self._order: list[tuple[int, int, bytes]] = []
        self._seq = itertools.count()

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        r = stored
        return (r.ts, r.side.value, r.key, r.value, r.closes_at_ms, r.origin_step)

    @classmethod
    def order(cls, item: Item) -> Any:
        return item[0]

    @classmethod
    def summary(cls, record: Mapping[str, Any], stored: Any = None) -> tuple[Any, Any, Any, Any]:
        return record["key"], record["ts"], record["value"], f"{record['side']}, closes after {record['closes_at_ms']}"

    @staticmethod
    def group_key(side: Side, key: Any, ts: int) -> tuple[int, int, bytes]:
        return (ts, 1 if side is Side.LEFT else 0, serialize_key(key))

    def __len__(self) -> int:
        return len(self._order)

    def put(self, record: BufferedRecord) -> None:
        group = self.group_key(record.side, record.key, record.ts)
        if group not in self._groups:
            self._groups[group] = []
            bisect.insort(self._order, group)
        seq = next(self._seq)
        self._groups[group].append((seq, record))
        self._log.put(self.store, (*group, seq), record)

    def delete(self, side: Side, key: Any, ts: int) -> list[BufferedRecord]:
        """Remove every record buffered for ``<ts, side, key>``; return what was removed."""
        group = self.group_key(side, key, ts)
        entries = self._groups.pop(group, None)
        if entries is None:
            return []
        del self._order[bisect.bisect_left(self._order, group)]
        for seq, _ in entries:
            self._log.delete(self.store, (*group, seq))
        return [record for _, record in entries]

    def groups(self) -> list[tuple[tuple[int, int, bytes], list[BufferedRecord]]]:
        """All groups in Kafka's iteration order (a copy: safe to delete while iterating)."""
        return [(group, [record for _, record in self._groups[group]]) for group in self._order]
