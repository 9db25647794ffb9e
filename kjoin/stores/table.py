"""A KTable's materialized view: the latest value and timestamp of every key."""

from __future__ import annotations

from typing import Any, Mapping

from ..records import Side
from ..serde import serialize_value
from ..state import StateLog
from .base import Store

__all__ = ["TableStore", "table_store_name"]


def table_store_name(side: Side) -> str:
    return f"{side} table"


class TableStore(Store):
    """A KTable's materialized view: ``key -> (value, ts)``; a null value deletes the key.

    Entries in the state: ``key -> (value, ts, old_value)``; ``old_value`` is what Kafka's
    ``Change(new, old)`` carries when this table sends old values, else ``None``. Rows
    ``key | value | ts | old_value`` in key order.
    """

    kind = "table"
    header = ("key", "value", "ts", "old_value")
    default_names = tuple(table_store_name(side) for side in Side)

    def __init__(self, log: StateLog, task: int, side: Side, sends_old_values: bool, name: str | None = None) -> None:
        super().__init__(log, task, name or table_store_name(side))
        self.sends_old_values = sends_old_values
        self._rows: dict[Any, tuple[Any, int]] = {}

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        value, ts, old = stored
        return (entry_key, value, ts, old)

    @classmethod
    def summary(cls, record: Mapping[str, Any], stored: Any = None) -> tuple[Any, Any, Any, Any]:
        old = record["old_value"]
        return record["key"], record["ts"], record["value"], None if old is None else f"old: {old}"

    def get(self, key: Any) -> tuple[Any, int] | None:
        """``(value, ts)`` of the latest non-deleted version, or ``None``."""
        return self._rows.get(key)

    def enable_sending_old_values(self) -> None:
        """A downstream join needs ``Change.old`` (Kafka's ``enableSendingOldValues``)."""
        self.sends_old_values = True

    def unchanged_by(self, key: Any, value: Any, ts: int) -> bool:
        """Would ``put(key, value, ts)`` change nothing, as Kafka 2.6.0 to 2.7.0's ``putIfDifferentValues`` judges it
        (KIP-557, ``ValueAndTimestampSerializer.compareValuesAndCheckForIncreasingTimestamp``)? The new value's bytes
        equal the stored value's and its timestamp is not older than the stored one; or both are null (a delete of an
        absent key). A newer timestamp alone is no change: such a put would keep the old timestamp."""
        previous = self._rows.get(key)
        if previous is None or value is None:
            return previous is None and value is None
        return ts >= previous[1] and serialize_value(value) == serialize_value(previous[0])

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
