"""The state of a run after every step, kept as per-step changes plus checkpoints.

Every store of every task writes through one :class:`StateLog`. A store is named by a
:class:`StoreId` (task, name) and holds entries ``entry_key -> row``. After each input
record the log closes a *step*: the list of entries put or deleted during it. A full copy
(a checkpoint) is taken whenever the changes since the last copy outnumber the live
entries, so memory stays proportional to the number of changes and reading the state
after any step applies at most that many changes to the nearest checkpoint; nothing is
re-run.
"""

from __future__ import annotations

import bisect
from typing import Any, NamedTuple

__all__ = ["StoreId", "StateLog", "StateHistory", "DELETED"]

DELETED = object()
"""Marker for a deleted entry in a change list."""


class _TaskAndName(NamedTuple):
    task: int
    name: str


class StoreId(_TaskAndName):
    """A store of one task: ``StoreId(0, "left window")``. (A named tuple: it is hashed on
    every state change, and a tuple hashes fastest.)

    ``kind`` says what the store's entries mean: the name of a :class:`kjoin.stores.StoreKind`,
    set by the store that makes the id (``None`` for an id made by hand). It describes the store
    and is no part of its identity: ``StoreId(0, "left window")`` equals, and finds, the window
    store's own id. Because every change carries its store's id, the kind reaches every
    snapshot of the state without being logged apart.
    """

    kind: str | None

    def __new__(cls, task: int, name: str, kind: str | None = None) -> "StoreId":
        self = super().__new__(cls, task, name)
        self.kind = kind
        return self

    def __str__(self) -> str:
        return f"task {self.task}: {self.name}"


Entries = dict[Any, Any]
Change = tuple[StoreId, Any, Any]  # (store, entry key, row or DELETED)


class StateLog:
    """The live contents of every store, and the changes made during the current step.

    ``keep_changes=False`` keeps the live stores only: what a join needs to run, without
    the per-step changes a trace needs to be replayed (the Spark engine's tasks).
    """

    def __init__(self, keep_changes: bool = True) -> None:
        self.live: dict[StoreId, Entries] = {}
        self._changes: list[Change] = []
        self._keep_changes = keep_changes
        self._size = 0  # live entries in all stores, kept as they change

    def put(self, store: StoreId, entry_key: Any, row: Any) -> None:
        entries = self.live.setdefault(store, {})
        self._size += entry_key not in entries
        entries[entry_key] = row
        if self._keep_changes:
            self._changes.append((store, entry_key, row))

    def delete(self, store: StoreId, entry_key: Any) -> None:
        entries = self.live.get(store)
        if entries is not None and entry_key in entries:
            del entries[entry_key]
            self._size -= 1
            if self._keep_changes:
                self._changes.append((store, entry_key, DELETED))

    def get(self, store: StoreId, entry_key: Any, default: Any = None) -> Any:
        return self.live.get(store, {}).get(entry_key, default)

    def declare(self, store: StoreId) -> None:
        """Make an empty store visible in snapshots before anything is put into it."""
        self.live.setdefault(store, {})

    def take_changes(self) -> tuple[Change, ...]:
        changes, self._changes = tuple(self._changes), []
        return changes

    def size(self) -> int:
        """The number of live entries in all stores."""
        return self._size

    def copy(self) -> dict[StoreId, Entries]:
        return {store: dict(entries) for store, entries in self.live.items()}


class StateHistory:
    """The state after every step of a finished run: changes plus checkpoints."""

    MIN_CHECKPOINT_GAP = 256

    def __init__(self, initial: dict[StoreId, Entries]) -> None:
        self._changes: list[tuple[Change, ...]] = []
        self._checkpoint_steps: list[int] = [-1]
        self._checkpoints: list[dict[StoreId, Entries]] = [initial]
        self._since_checkpoint = 0

    def record(self, changes: tuple[Change, ...], log: StateLog) -> None:
        """Append the changes of the next step; checkpoint when it pays for itself."""
        self._changes.append(changes)
        self._since_checkpoint += len(changes)
        if self._since_checkpoint >= max(self.MIN_CHECKPOINT_GAP, log.size()):
            self._checkpoint_steps.append(len(self._changes) - 1)
            self._checkpoints.append(log.copy())
            self._since_checkpoint = 0

    def __len__(self) -> int:
        return len(self._changes)

    def changes(self, step: int) -> tuple[Change, ...]:
        return self._changes[step]

    def at(self, step: int) -> dict[StoreId, Entries]:
        """All stores after ``step`` (``-1``: before the first record)."""
        if not -1 <= step < len(self._changes):
            raise IndexError(f"step {step} is outside this trace (0 to {len(self._changes) - 1})")
        index = bisect.bisect_right(self._checkpoint_steps, step) - 1
        base = self._checkpoints[index]
        stores = {store: dict(entries) for store, entries in base.items()}
        for later in range(self._checkpoint_steps[index] + 1, step + 1):
            _apply(stores, self._changes[later])
        return stores


def _apply(stores: dict[StoreId, Entries], changes: tuple[Change, ...]) -> None:
    for store, entry_key, row in changes:
        entries = stores.setdefault(store, {})
        if row is DELETED:
            entries.pop(entry_key, None)
        else:
            entries[entry_key] = row
