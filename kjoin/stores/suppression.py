"""``suppress``'s buffer: the newest update of each windowed key, waiting for its window to close.

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

__all__ = ["SuppressionStore", "SUPPRESSION_BUFFER"]

SUPPRESSION_BUFFER = "suppression buffer"


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

    def evict_until(self, expiry: int) -> list[Any]:
        """Remove and return, in buffer order, every entry whose window end is at most ``expiry``."""
        due = sorted((e for e in self._entries if e[3] <= expiry), key=self._order)
        evicted = []
        for entry in due:
            output = self._entries.pop(entry)
            self._log.delete(self.store, (entry[1], entry[2], entry[3]))
            evicted.append(output)
        return evicted
