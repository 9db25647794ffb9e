"""The state stores a join keeps, each writing every change through the run's StateLog.

* :class:`WindowStore`: one side's stream records of a stream-stream join, kept for the
  store's retention (before + after + grace) and fetched by key and time range.
* :class:`OuterJoinBuffer`: the 3.1+ store of left/outer records still waiting for a partner,
  ordered as Kafka orders it (timestamp, right before left, key bytes, arrival).
* :class:`TableStore`: a KTable's materialized view (latest value and timestamp per key).
* :class:`Clock`: the task's stream time and the other per-task times the join keeps.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from dataclasses import dataclass
from typing import Any

from .partitioner import serialize_key
from .records import Side
from .state import StateLog, StoreId

__all__ = ["WindowStore", "OuterJoinBuffer", "BufferedRecord", "TableStore", "Clock", "window_store_name", "table_store_name"]

OUTER_BUFFER = "outer-join buffer"
CLOCK = "clock"


def window_store_name(side: Side) -> str:
    return f"{side} window"


def table_store_name(side: Side) -> str:
    return f"{side} table"


class Clock:
    """Per-task times: stream time and friends, visible in the state as a store.

    Times that were never set read as ``None`` (Kafka starts stream time at -1).
    """

    def __init__(self, log: StateLog, task: int) -> None:
        self._log = log
        self._store = StoreId(task, CLOCK)
        self._times: dict[str, int] = {}  # read on every record: kept here, written through to the log
        log.declare(self._store)

    def get(self, name: str) -> int | None:
        return self._times.get(name)

    def set(self, name: str, value: int | None) -> None:
        if value is None:
            if self._times.pop(name, None) is not None:
                self._log.delete(self._store, name)
        elif self._times.get(name) != value:
            self._times[name] = value
            self._log.put(self._store, name, value)

    def advance(self, name: str, ts: int) -> int:
        """Set ``name`` to max(current, ts) and return it."""
        current = self.get(name)
        if current is None or ts > current:
            self.set(name, ts)
            return ts
        return current


class WindowStore:
    """One side's window store in a stream-stream join.

    A fetch returns only records with ``ts >= observed - retention + 1``, where ``observed``
    is the largest timestamp ever put into *this* store: Kafka's segmented store hides
    older records, and kjoin removes them from the visible state at the same moment.
    Rows in the state: ``(key, ts, seq) -> value``.
    """

    def __init__(self, log: StateLog, task: int, side: Side, retention_ms: int, clock: Clock) -> None:
        self._log = log
        self.store = StoreId(task, window_store_name(side))
        self.retention_ms = retention_ms
        self._clock = clock
        self._observed_name = f"{side} window observed"
        self._by_key: dict[Any, list[tuple[int, int, Any]]] = {}
        self._by_time: list[tuple[int, int, Any]] = []  # heap of (ts, seq, key)
        self._seq = itertools.count()
        log.declare(self.store)

    @property
    def observed_ms(self) -> int | None:
        return self._clock.get(self._observed_name)

    def visible_from(self) -> int | None:
        """The oldest timestamp a fetch can still return, or ``None`` before the first put."""
        observed = self.observed_ms
        return None if observed is None else observed - self.retention_ms + 1

    def put(self, key: Any, ts: int, value: Any) -> bool:
        """Store a record; ``False`` if it is already older than the retention."""
        self._clock.advance(self._observed_name, ts)
        self._expire()
        start = self.visible_from()
        if start is not None and ts < start:
            return False
        seq = next(self._seq)
        bisect.insort(self._by_key.setdefault(key, []), (ts, seq, value), key=lambda row: row[:2])
        heapq.heappush(self._by_time, (ts, seq, key))
        self._log.put(self.store, (key, ts, seq), value)
        return True

    def fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any]]:
        """``(ts, value)`` of ``key``'s records with ``time_from <= ts <= time_to``, in (ts, arrival) order."""
        start = self.visible_from()
        if start is not None:
            time_from = max(time_from, start)
        rows = self._by_key.get(key, ())
        lo = bisect.bisect_left(rows, time_from, key=lambda row: row[0])
        found = []
        for ts, _, value in itertools.islice(rows, lo, None):
            if ts > time_to:
                break
            found.append((ts, value))
        return found

    def _expire(self) -> None:
        start = self.visible_from()
        while self._by_time and self._by_time[0][0] < start:
            ts, seq, key = heapq.heappop(self._by_time)
            rows = self._by_key[key]
            rows.remove(next(row for row in rows if row[1] == seq))
            if not rows:
                del self._by_key[key]
            self._log.delete(self.store, (key, ts, seq))


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


class OuterJoinBuffer:
    """The shared outer-join store of a 3.1+ left/outer stream-stream join (one per task).

    Kafka keys it by ``<ts, side, key>`` with a list of values per key; iteration order is
    timestamp ascending, then right (side byte 0) before left (1), then the serialized key
    bytes unsigned, then arrival. A match deletes the whole list of its ``<ts, side, key>``.
    Rows in the state: ``(ts, side byte, key bytes, seq) -> BufferedRecord``.
    """

    def __init__(self, log: StateLog, task: int) -> None:
        self._log = log
        self.store = StoreId(task, OUTER_BUFFER)
        self._groups: dict[tuple[int, int, bytes], list[tuple[int, BufferedRecord]]] = {}
        self._order: list[tuple[int, int, bytes]] = []
        self._seq = itertools.count()
        log.declare(self.store)

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


class TableStore:
    """A KTable's materialized view: ``key -> (value, ts)``; a null value deletes the key.

    Rows in the state: ``key -> (value, ts, old_value)``; ``old_value`` is what Kafka's
    ``Change(new, old)`` carries when this table sends old values, else ``None``.
    """

    def __init__(self, log: StateLog, task: int, side: Side, sends_old_values: bool) -> None:
        self._log = log
        self.store = StoreId(task, table_store_name(side))
        self.sends_old_values = sends_old_values
        self._rows: dict[Any, tuple[Any, int]] = {}
        log.declare(self.store)

    def get(self, key: Any) -> tuple[Any, int] | None:
        """``(value, ts)`` of the latest non-deleted version, or ``None``."""
        return self._rows.get(key)

    def put(self, key: Any, value: Any, ts: int) -> tuple[Any, int] | None:
        """Write the update; return the previous ``(value, ts)`` or ``None``."""
        previous = self._rows.get(key)
        if value is None:
            if previous is not None:
                del self._rows[key]
                self._log.delete(self.store, key)
        else:
            self._rows[key] = (value, ts)
            old = previous[0] if (previous is not None and self.sends_old_values) else None
            self._log.put(self.store, key, (value, ts, old))
        return previous
