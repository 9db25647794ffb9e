"""A session-windowed aggregate's store: every session of every key, ``(key, start, end) -> (aggregate, ts)``.

Kafka's ``RocksDBSessionStore`` over a segmented store whose records are timestamped by the session's *end*:

* The store's observed time is the largest session end ever put or removed (not stream time: a record dropped as
  late puts nothing).
* Kafka 3.4+ (KAFKA-12960, ``Semantics.window_store_hides_expired``): a read (``findSessions``) skips a session
  whose end is behind ``observed - retention + 1``, and a put of such a session is refused ("Skipping record for
  expired put"); its update is still forwarded.
* Before 3.4 a read finds a session until its segment is dropped: segments of ``max(retention / 2, 60 s)`` by
  session end, dropped whole once they fall below ``(observed - retention) // interval`` (at a put).
* The retention is ``inactivity gap + grace`` (Kafka's default for a session aggregate's store from 3.0; before,
  one day: ``SessionWindows.store_retention_ms``).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..records import render_value
from ..state import StateLog
from .base import Store, sort_key
from .window import MIN_SEGMENT_INTERVAL_MS

__all__ = ["SessionStore", "SESSION_STORE"]

SESSION_STORE = "session store"


class SessionStore(Store):
    """One task's sessions. Entries ``(key, start, end) -> (aggregate, ts)``; rows ``key | session | value | ts``
    by key, then end, then start (Kafka's session key order: key, end, start)."""

    kind = "session store"
    header = ("key", "session", "value", "ts")
    default_names = (SESSION_STORE,)

    def __init__(
        self,
        log: StateLog,
        task: int,
        retention_ms: int,
        hides_expired: bool,
        time_first: bool = False,
        name: str = SESSION_STORE,
    ):
        """``time_first``: the time-ordered store of an emit-final aggregate, whose 3.4+ retention check keeps one
        millisecond more on a put and on its range read of closed sessions (a session ending at ``observed -
        retention`` is still stored and forwarded), but not on ``findSessions``, which starts one millisecond
        later as every 3.4+ session store's does (the next record within the gap does not merge with it)."""
        super().__init__(log, task, name)
        self.retention_ms = retention_ms
        self.hides_expired = hides_expired
        self.time_first = time_first
        self.segment_interval_ms = max(retention_ms // 2, MIN_SEGMENT_INTERVAL_MS)
        self.observed_ms: int | None = None
        self._sessions: dict[tuple[str, Any], dict[tuple[int, int], Any]] = {}  # (type, key) -> {(start, end): agg}
        self._keys: dict[tuple[str, Any], Any] = {}

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        key, start, end = entry_key
        return (key, f"[{start}, {end}]", stored[0], stored[1])

    @classmethod
    def order(cls, item: Any) -> Any:
        key, start, end = item[0]
        return (sort_key(key), end, start)

    @classmethod
    def entry_label(cls, entry_key: Any) -> str | None:
        key, start, end = entry_key
        return f"session {render_value(key)}@[{start}, {end}]"

    @classmethod
    def summary(cls, record: Mapping[str, Any], stored: Any = None) -> tuple[Any, Any, Any, Any]:
        return record["key"], record["ts"], record["value"], f"session {record['session']}"

    # -- read ---------------------------------------------------------------------------
    def visible_from(self) -> int | None:
        """The oldest session end a read can still return (``None``: every one)."""
        if self.observed_ms is None:
            return None
        if self.hides_expired:
            return self.observed_ms - self.retention_ms + (0 if self.time_first else 1)
        return None

    def find_sessions(self, key: Any, earliest_end: int, latest_start: int) -> list[tuple[int, int, Any, int]]:
        """``(start, end, aggregate, ts)`` of ``key``'s sessions with ``end >= earliest_end`` and ``start <=
        latest_start``, by end then start (``findSessions``), skipping what a read no longer sees."""
        floor = self.visible_from()
        if floor is not None:
            # the time-ordered store keeps (puts) a session ending at observed - retention, but its findSessions
            # starts one millisecond later, as every 3.4+ session store reads (found by the oracle's wide sweep)
            earliest_end = max(earliest_end, floor + (1 if self.time_first else 0))
        found = [
            (start, end, agg, ts)
            for (start, end), (agg, ts) in self._sessions.get(_by_type(key), {}).items()
            if end >= earliest_end and start <= latest_start
        ]
        return sorted(found, key=lambda s: (s[1], s[0]))

    def sessions_ending(self, earliest_end: int, latest_end: int) -> list[tuple[Any, int, int, Any, int]]:
        """Every key's sessions with ``earliest_end <= end <= latest_end``: ``(key, start, end, aggregate, ts)`` in
        the order of an emit-final range read (Kafka's time-first session key: end, start, key). Unlike
        :meth:`find_sessions`, the range read of an emit-final aggregate's time-ordered store still finds a session
        behind the retention (harness: 3.4.1 and 4.4.0 emit a session whose end is older than observed -
        retention), as long as its segment lives: every put drops the segments wholly behind the retention
        (``cleanupExpiredSegments``), and a session in one is gone (the topology walk's far-jumping timestamps)."""
        live = None if self.observed_ms is None else self._min_live_segment()
        found = [
            (self._keys[typed], start, end, agg, ts)
            for typed, sessions in self._sessions.items()
            for (start, end), (agg, ts) in sessions.items()
            if earliest_end <= end <= latest_end and (live is None or end // self.segment_interval_ms >= live)
        ]
        return sorted(found, key=lambda s: (s[2], s[1], _key_bytes(s[0])))

    # -- write --------------------------------------------------------------------------
    def put(self, key: Any, start: int, end: int, agg: Any, ts: int) -> bool:
        """Store a session; ``False`` when Kafka 3.4+ refuses it as an expired put (its end is behind the
        retention) or before 3.4 its segment was already dropped."""
        self._observe(end)
        floor = self.visible_from()
        if floor is not None and end < floor:
            return False
        if not self.hides_expired and end // self.segment_interval_ms < self._min_live_segment():
            return False
        if agg is None:  # Kafka's session stores remove a session put with a null aggregate
            self.remove(key, start, end)
            return True
        typed = _by_type(key)
        self._keys[typed] = key
        self._sessions.setdefault(typed, {})[(start, end)] = (agg, ts)
        self._log.put(self.store, (key, start, end), (agg, ts))
        return True

    def remove(self, key: Any, start: int, end: int) -> None:
        self._observe(end)
        sessions = self._sessions.get(_by_type(key), {})
        if sessions.pop((start, end), None) is not None:
            self._log.delete(self.store, (key, start, end))

    def _observe(self, end: int) -> None:
        self.observed_ms = end if self.observed_ms is None else max(self.observed_ms, end)
        if not self.hides_expired:  # before 3.4: whole segments go once they fall behind the retention
            live = self._min_live_segment()
            for typed, sessions in self._sessions.items():
                for start, session_end in [s for s in sessions if s[1] // self.segment_interval_ms < live]:
                    del sessions[(start, session_end)]
                    self._log.delete(self.store, (self._keys[typed], start, session_end))

    def _min_live_segment(self) -> int:
        assert self.observed_ms is not None
        return (self.observed_ms - self.retention_ms) // self.segment_interval_ms

    def describe(self, key: Any) -> str:
        sessions = sorted(self._sessions.get(_by_type(key), {}).items(), key=lambda s: (s[0][1], s[0][0]))
        return ", ".join(f"[{s}, {e}]={render_value(agg)}" for (s, e), (agg, _) in sessions) or "no session"


def _by_type(key: Any) -> tuple[str, Any]:
    return type(key).__name__, key


def _key_bytes(key: Any) -> bytes:
    """A key as the string serde writes it (kjoin's keys reach Kafka as text)."""
    return render_value(key).encode("utf-8")
