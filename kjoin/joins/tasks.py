"""A join's tasks, each built when its first record (or message) arrives.

A scenario may declare many partitions and use few: only tasks that have work get a
processor and stores. A task built before the first step shows its stores from the start,
empty; a task built later shows a store once something is written to it, so the state after
a step never depends on the records that come after it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ..state import StateLog, StoreId

__all__ = ["Tasks", "LateLog"]


class LateLog:
    """The log a task built during a step writes through: like its :class:`StateLog`, except
    that its stores are not declared empty (they appear when written)."""

    def __init__(self, log: StateLog) -> None:
        self.put, self.delete, self.get = log.put, log.delete, log.get

    def declare(self, store: StoreId) -> None:
        """A late task's empty store stays out of the state until something is put into it."""


class Tasks(dict):
    """``task -> processor``; a missing task is built on first use (with a :class:`LateLog`)."""

    def __init__(self, build: Callable[[Any, int], Any], log: StateLog, eager: Iterable[int] = ()) -> None:
        """``build(log, task)`` makes one task's processor; ``eager`` tasks are built now."""
        super().__init__()
        for task in eager:
            self[task] = build(log, task)
        self._build = build
        self._late = LateLog(log)

    def __missing__(self, task: int) -> Any:
        processor = self[task] = self._build(self._late, task)
        return processor
