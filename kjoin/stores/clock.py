"""The clock: a task's stream time and the other per-task times its stores keep."""

from __future__ import annotations

from typing import Any, Mapping

from ..state import StateLog
from .base import Store

__all__ = ["Clock", "CLOCK", "STREAM_TIME", "observed_time_name"]

CLOCK = "clock"
STREAM_TIME = "stream time"
"""The clock entry of a join's stream time (the largest timestamp it has seen)."""


def observed_time_name(store_name: str) -> str:
    """The clock entry of a store's observed stream time (the largest ts ever put into it)."""
    return f"{store_name} observed"


class Clock(Store):
    """Per-task times: stream time and friends, visible in the state as a store.

    Times that were never set read as ``None`` (Kafka starts stream time at -1).
    Rows: ``clock | ms``, one per time, by name.
    """

    kind = "clock"
    header = ("clock", "ms")
    default_names = (CLOCK,)

    def __init__(self, log: StateLog, task: int, name: str = CLOCK) -> None:
        super().__init__(log, task, name)
        self._times: dict[str, int] = {}  # read on every record: kept here, written through to the log

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        return (entry_key, stored)

    @classmethod
    def summary(cls, record: Mapping[str, Any], stored: Any = None) -> tuple[Any, Any, Any, Any]:
        return record["clock"], record["ms"], None, None

    def get(self, name: str) -> int | None:
        return self._times.get(name)

    def set(self, name: str, value: int | None) -> None:
        if value is None:
            if self._times.pop(name, None) is not None:
                self._log.delete(self.store, name)
        elif self._times.get(name) != value:
            self._times[name] = value
            self._log.put(self.store, name, value)

    def advance(self, name: str, ts: int) -> int:
        """Set ``name`` to max(current, ts) and return it."""
        current = self.get(name)
        if current is None or ts > current:
            self.set(name, ts)
            return ts
        return current
