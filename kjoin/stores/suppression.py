"""``suppress``'s buffers: the newest update of each windowed key, waiting for its window to close
(:class:`SuppressionStore`), or of each key, waiting for its time limit (:class:`TimeLimitStore`).

Kafka's ``InMemoryTimeOrderedKeyValueBuffer`` under ``KTableSuppressProcessor``: entries are ordered by their buffer
time (for ``untilWindowCloses``, the window's end) and then by the serialized windowed key (the key's bytes and the
window start; a session key's bytes, end and start); an update of a buffered key replaces it. The buffer keeps its
own stream time: the largest timestamp of the updates it received.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..records import render_value
from ..state import StateLog
from .base import Store
from .clock import STREAM_TIME, Clock

__all__ = ["SuppressionStore", "TimeLimitStore", "SUPPRESSION_BUFFER", "TIME_LIMIT_BUFFER"]

SUPPRESSION_BUFFER = "suppression buffer"
TIME_LIMIT_BUFFER = "time-limit buffer"


class SuppressionStore(Store):
    """Entries ``(key, start, end) -> (value, ts, tombstone, origin step)``; rows ``key | window | value | ts`` in
    eviction order. The buffer's own stream time is kept in a clock of its own (``suppression buffer clock``)."""

    kind = "suppression buffer"
    header = ("key", "window", "value", "ts")
    default_names = (SUPPRESSION_BUFFER,)

    def __init__(self, log: StateLog, task: int, session: bool = False, name: str = SUPPRESSION_BUFFER) -> None:
        super().__init__(log, task, name)
        self.session = session
        self.clock = Clock(log, task, f"{name} clock")
        self._entries: dict[tuple[str, Any, int, int], Any] = {}
        self._priors: dict[tuple[str, Any, int, int], Any] = {}
        self.evicted_priors: dict[tuple[str, Any, int, int], Any] = {}
        """The prior values of the entries the last :meth:`evict_until` removed."""
        """Each entry's prior value (``BufferValue.priorValue``): the old value of the update that made the entry,
        kept when a later update replaces it; what the buffer's value getter answers for the entry's key."""

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        key, start, end = entry_key
        return (key, f"[{start}, {end}]", None if stored[2] else stored[0], stored[1])

    @classmethod
    def order(cls, item: Any) -> Any:
        key, start, end = item[0]
        return (end, render_value(key).encode("utf-8"), start)

    @classmethod
    def entry_label(cls, entry_key: Any) -> str | None:
        key, start, end = entry_key
        return f"{render_value(key)}@[{start}, {end}]"

    @property
    def stream_time(self) -> int | None:
        return self.clock.get(STREAM_TIME)

    @classmethod
    def summary(cls, record: Mapping[str, Any], stored: Any = None) -> tuple[Any, Any, Any, Any]:
        return record["key"], record["ts"], record["value"], f"window {record['window']}"

    def observe(self, ts: int) -> int:
        """Advance the buffer's stream time to ``ts`` (if later) and return it."""
        return self.clock.advance(STREAM_TIME, ts)

    def put(self, output: Any) -> None:
        start, end = output.window
        entry = (type(output.key).__name__, output.key, start, end)
        if entry not in self._entries:
            self._priors[entry] = output.old
        self._entries[entry] = output
        self._log.put(
            self.store, (output.key, start, end), (output.value, output.ts, output.tombstone, output.origin_step)
        )

    def _order(self, entry: tuple[str, Any, int, int]) -> tuple:
        _, key, start, end = entry
        key_bytes = render_value(key).encode("utf-8")
        tail = (
            end.to_bytes(8, "big", signed=True) + start.to_bytes(8, "big", signed=True)
            if self.session
            else (start.to_bytes(8, "big", signed=True))
        )
        return (end, key_bytes + tail)

    def __contains__(self, entry: object) -> bool:
        """Whether the buffer holds ``(key's type name, key, start, end)``."""
        return entry in self._entries

    def evict_until(self, expiry: int) -> list[Any]:
        """Remove and return, in buffer order, every entry whose window end is at most ``expiry`` (their prior values
        in :attr:`evicted_priors`)."""
        due = sorted((e for e in self._entries if e[3] <= expiry), key=self._order)
        self.evicted_priors = {entry: self._priors.pop(entry) for entry in due}
        evicted = []
        for entry in due:
            output = self._entries.pop(entry)
            self._log.delete(self.store, (entry[1], entry[2], entry[3]))
            evicted.append(output)
        return evicted

    def prior(self, entry: tuple[str, Any, int, int]) -> tuple[bool, Any]:
        """``(held, prior value)`` of ``(key's type name, key, start, end)``: whether the buffer holds the entry, and
        its prior value (``priorValueForBuffered``)."""
        if entry in self._priors:
            return True, self._priors[entry]
        return False, None

    def __len__(self) -> int:
        return len(self._entries)


class TimeLimitStore(Store):
    """``suppress(untilTimeLimit)``'s buffer (the same ``InMemoryTimeOrderedKeyValueBuffer``): entries ``key ->
    (buffer time, value, ts, prior value, old value)`` ordered by buffer time, then by the serialized key. The buffer
    time is the timestamp of the key's *first* buffered update: a later update replaces the value in the same place
    (Kafka's "non-resetting semantics" of ``cleanPut``), the prior value stays the one before the first update, and
    the old value is the latest update's (``BufferValue``'s ``oldValue``: an eviction forwards ``Change(new, old)``).
    Rows ``key | buffered at | value | ts`` in eviction order; the buffer's own stream time is in its clock."""

    kind = "time-limit buffer"
    header = ("key", "buffered at", "value", "ts")
    default_names = (TIME_LIMIT_BUFFER,)

    def __init__(self, log: StateLog, task: int, name: str = TIME_LIMIT_BUFFER) -> None:
        super().__init__(log, task, name)
        self.clock = Clock(log, task, f"{name} clock")
        self._entries: dict[tuple[str, Any], tuple[int, Any, Any, int, Any, Any]] = {}  # typed key -> (time, key, ..)

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        return (entry_key, stored[0], stored[1], stored[2])

    @classmethod
    def order(cls, item: Any) -> Any:
        return (item[1][0], _serialized(item[0]))

    @classmethod
    def entry_label(cls, entry_key: Any) -> str | None:
        return render_value(entry_key)

    @classmethod
    def summary(cls, record: Mapping[str, Any], stored: Any = None) -> tuple[Any, Any, Any, Any]:
        return record["key"], record["ts"], record["value"], f"buffered at {record['buffered at']}"

    def observe(self, ts: int) -> int:
        """Advance the buffer's stream time to ``ts`` (if later) and return it."""
        return self.clock.advance(STREAM_TIME, ts)

    def put(self, key: Any, value: Any, ts: int, old: Any) -> None:
        entry = (type(key).__name__, key)
        found = self._entries.get(entry)
        time, prior = (ts, old) if found is None else (found[0], found[4])
        self._entries[entry] = (time, key, value, ts, prior, old)
        self._log.put(self.store, key, (time, value, ts, prior))

    def __len__(self) -> int:
        return len(self._entries)

    def held(self, key: Any) -> tuple[Any, int] | None:
        """``(prior value, ts of the latest buffered update)`` of ``key`` if the buffer holds it (Kafka's
        ``priorValueForBuffered``), else ``None``."""
        found = self._entries.get((type(key).__name__, key))
        return None if found is None else (found[4], found[3])

    def _first(self) -> tuple[str, Any] | None:
        if not self._entries:
            return None
        return min(self._entries, key=lambda e: (self._entries[e][0], _serialized(e[1])))

    def evict_first(self, until: int | None = None) -> tuple[Any, Any, int, Any, Any] | None:
        """Remove and return the first entry ``(key, value, ts, prior value, old value)`` if its buffer time is at
        most ``until`` (``None``: whatever its time)."""
        first = self._first()
        if first is None or (until is not None and self._entries[first][0] > until):
            return None
        _, key, value, ts, prior, old = self._entries.pop(first)
        self._log.delete(self.store, key)
        return key, value, ts, prior, old


def _serialized(key: Any) -> bytes:
    """A key's bytes as the buffer orders them: a windowed key (``start_ms``) is its key's bytes then its window start
    (Kafka's ``TimeWindowedSerializer``), any other key its text's."""
    start = getattr(key, "start_ms", None)
    if start is None:
        return render_value(key).encode("utf-8")
    return render_value(key.key).encode("utf-8") + start.to_bytes(8, "big", signed=True)
