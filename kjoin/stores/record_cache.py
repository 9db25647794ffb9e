"""Record caches (KIP-63): the updates a caching store holds back until the next commit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..state import StateLog
from .base import Store

__all__ = ["RecordCache", "CachedUpdate"]


@dataclass(frozen=True)
class CachedUpdate:
    """One dirty entry of a record cache: the latest update of a key since the last commit.

    ``item`` is what will be forwarded (a source table's record, or a join result);
    ``old`` the store's value before the first update since the last commit (what a
    flushed ``Change`` carries as old value); ``replaced`` how many earlier updates of the
    key this one overwrote.
    """

    key: Any
    item: Any
    new: Any
    ts: int
    old: Any
    step: int
    replaced: int


class RecordCache(Store):
    """A caching store's dirty entries (Kafka's ``CachingKeyValueStore`` over a ``NamedCache``).

    Reads see the newest value at once (the table store itself is updated); only the
    forwarding waits. A commit flushes the entries in the order their keys were last
    written, one per key. Entries in the state: ``key -> (new value, ts, step, replaced)``;
    rows ``key | new value | ts | from step | replaced`` in key order.
    """

    kind = "record cache"
    header = ("key", "new value", "ts", "from step", "replaced")

    def __init__(self, log: StateLog, task: int, name: str) -> None:
        super().__init__(log, task, name)
        self._dirty: dict[Any, CachedUpdate] = {}

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        return (entry_key, *stored)

    @classmethod
    def summary(cls, record: Mapping[str, Any], stored: Any = None) -> tuple[Any, Any, Any, Any]:
        return record["key"], record["ts"], record["new value"], f"from step {record['from step']}"

    def __len__(self) -> int:
        return len(self._dirty)

    def put(self, key: Any, item: Any, new: Any, ts: int, old_before: Any, step: int) -> CachedUpdate:
        earlier = self._dirty.pop(key, None)  # re-added below: dirty order is the order of last writes
        old = old_before if earlier is None else earlier.old
        entry = CachedUpdate(key, item, new, ts, old, step, 0 if earlier is None else earlier.replaced + 1)
        self._dirty[key] = entry
        self._log.put(self.store, key, (new, ts, step, entry.replaced))
        return entry

    def holds_step(self, step: int) -> bool:
        """Does a dirty entry come from ``step``'s record?"""
        return any(entry.step == step for entry in self._dirty.values())

    def flush(self) -> list[CachedUpdate]:
        """Every dirty entry, in flush order; the cache is clean afterwards."""
        entries = list(self._dirty.values())
        for key in self._dirty:
            self._log.delete(self.store, key)
        self._dirty.clear()
        return entries
