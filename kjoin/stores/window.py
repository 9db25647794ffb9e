"""A stream-stream join's window stores: one side's records, kept for the store's retention."""

from __future__ import annotations

import bisect
import heapq
import itertools
from typing import Any

from ..records import Side
from ..state import StateLog
from .base import Store
from .clock import Clock, observed_time_name

__all__ = ["WindowStore", "window_store_name", "MIN_SEGMENT_INTERVAL_MS", "MAINTAIN_MS"]

MIN_SEGMENT_INTERVAL_MS = 60_000
"""Kafka's RocksDB window stores never cut segments shorter than a minute (``max(retention / 2, 60 s)``)."""

MAINTAIN_MS = 24 * 60 * 60 * 1000
"""``Windows.DEFAULT_RETENTION_MS`` (one day): before 3.0 (KAFKA-7106) the retention of a windowed aggregate's store
when the application sets none, ``Windows.maintainMs()`` (time windows) and ``SessionWindows.maintainMs()``."""


def window_store_name(side: Side) -> str:
    return f"{side} window"


class WindowStore(Store):
    """One side's window store in a stream-stream join.

    ``observed`` is the largest timestamp ever put into *this* store. How long a record stays
    findable depends on the era (``Semantics.window_store_hides_expired``, KAFKA-12960):

    * Kafka 3.4+ (``hides_expired=True``): a fetch returns only records with
      ``ts >= observed - retention + 1``; kjoin removes older records from the visible state at
      the moment Kafka stops returning them, and refuses a put that is already that old.
    * Before 3.4: Kafka's RocksDB store keeps records in segments of ``max(retention / 2,
      60 s)`` (``ts // interval``) and a fetch returns everything its live segments hold. A put
      drops every segment below ``(observed - retention) // interval`` and is refused
      ("Skipping record for expired segment") only if its own segment is one of those; a
      record older than the retention in a live segment is stored and found.

    Entries in the state: ``(key, ts, seq) -> value``; rows ``key | ts | value`` in (key, ts,
    arrival) order.
    """

    kind = "window"
    header = ("key", "ts", "value")
    default_names = tuple(window_store_name(side) for side in Side)

    def __init__(
        self,
        log: StateLog,
        task: int,
        side: Side,
        retention_ms: int,
        clock: Clock,
        name: str | None = None,
        hides_expired: bool = True,
    ) -> None:
        super().__init__(log, task, name or window_store_name(side))
        self.retention_ms = retention_ms
        self.hides_expired = hides_expired
        """Kafka 3.4+ (``Semantics.window_store_hides_expired``): fetches skip records older than the retention."""
        self.segment_interval_ms = max(retention_ms // 2, MIN_SEGMENT_INTERVAL_MS)
        self._clock = clock
        self._observed_name = observed_time_name(window_store_name(side))
        self._by_key: dict[Any, list[tuple[int, int, Any]]] = {}
        self._by_time: list[tuple[int, int, Any]] = []  # heap of (ts, seq, key)
        self._seq = itertools.count()

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        key, ts, _ = entry_key
        return (key, ts, stored)

    @property
    def observed_ms(self) -> int | None:
        return self._clock.get(self._observed_name)

    def visible_from(self) -> int | None:
        """The oldest timestamp a fetch can still return, or ``None`` before the first put. Before 3.4 that is
        the first timestamp of the oldest live segment."""
        observed = self.observed_ms
        if observed is None:
            return None
        if self.hides_expired:
            return observed - self.retention_ms + 1
        return max(self.min_live_segment() * self.segment_interval_ms, 0)

    def min_live_segment(self) -> int:
        """Before 3.4: the oldest segment still alive, ``(observed - retention) // interval``."""
        observed = self.observed_ms
        assert observed is not None
        return (observed - self.retention_ms) // self.segment_interval_ms

    def behind_retention(self, ts: int) -> bool:
        """The record at ``ts`` is older than ``observed - retention + 1`` (found before 3.4 only while its segment
        lives)."""
        observed = self.observed_ms
        return observed is not None and ts < observed - self.retention_ms + 1

    def put(self, key: Any, ts: int, value: Any) -> bool:
        """Store a record; ``False`` if it is already older than the retention (3.4+) or its segment was dropped
        (before 3.4)."""
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

    def observe(self, ts: int) -> None:
        """A put that stores nothing (a null value before KAFKA-9921, 2.5.1): the observed time still advances, and
        what falls behind the retention (3.4+) or into a dropped segment (before) goes."""
        self._clock.advance(self._observed_name, ts)
        self._expire()

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
        """Remove what fetches can no longer return: records behind the retention (3.4+), or whole segments
        below the oldest live one (before 3.4: one segment's records all leave at the same put)."""
        start = self.visible_from()
        while self._by_time and self._by_time[0][0] < start:
            ts, seq, key = heapq.heappop(self._by_time)
            rows = self._by_key[key]
            rows.remove(next(row for row in rows if row[1] == seq))
            if not rows:
                del self._by_key[key]
            self._log.delete(self.store, (key, ts, seq))
