"""A KTable aggregate's store (``table.groupBy(...).aggregate(...)``, the windowed-table design), writing every change
through the
StateLog: :class:`AggregateStore`, ``group -> (aggregate, ts)``; a null aggregate deletes the group.

It follows the store contract of the house: a display ``name``, a ``header`` (column names) and ``rows()``
(display rows in header order, in a deterministic order), and a static ``rows_from(entries)`` that decodes the same
rows from a snapshot's entries (``trace.state_at(i).stores[StoreId(task, name)]``), so a stepper can show any step.
The records a group-by writes on their way to it are :mod:`kjoin.stores.repartition`'s.
"""

from __future__ import annotations

from typing import Any

from ..state import StateLog, StoreId
from .base import StoreKind, type_then_value

__all__ = ["AggregateStore", "AggregateStoreKind"]


class AggregateStore:
    """A KTable aggregate's result: ``group key -> (aggregate, ts)``; a null aggregate deletes.

    Rows in the state: ``group -> (aggregate, ts)``.
    """

    header = ("key", "value", "ts")

    def __init__(self, log: StateLog, task: int, name: str = "aggregate store") -> None:
        self._log = log
        self.name = name
        self.store = StoreId(task, name, AggregateStoreKind.kind)
        self._rows: dict[Any, tuple[Any, int]] = {}
        log.declare(self.store)

    def get(self, key: Any) -> tuple[Any, int] | None:
        return self._rows.get(key)

    def put(self, key: Any, value: Any, ts: int) -> None:
        if value is None:
            if self._rows.pop(key, None) is not None:
                self._log.delete(self.store, key)
            return
        self._rows[key] = (value, ts)
        self._log.put(self.store, key, (value, ts))

    def rows(self) -> list[tuple]:
        return self.rows_from(self._rows)

    @staticmethod
    def rows_from(entries: dict[Any, Any]) -> list[tuple]:
        return [
            (key, row[0], row[1]) for key, row in sorted(entries.items(), key=lambda item: type_then_value(item[0]))
        ]


class AggregateStoreKind(StoreKind):
    """``group -> (aggregate, ts)``: rows ``key | value | ts``."""

    kind = "aggregate store"
    header = AggregateStore.header

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        return (entry_key, stored[0], stored[1])
