"""A foreign-key join's subscription store (KIP-213), on the tasks of the foreign keys."""

from __future__ import annotations

from typing import Any, Mapping

from ..state import StateLog
from .base import Item, Store

__all__ = ["SubscriptionStore", "SUBSCRIPTIONS"]

SUBSCRIPTIONS = "subscription store"


class SubscriptionStore(Store):
    """The right task's subscription store of a foreign-key join.

    Keyed by ``CombinedKey(fk, pk)`` in Kafka's byte order (``[len(fk)][fk][pk]``), so a
    prefix scan for one foreign key returns exactly its subscribers, in primary-key byte
    order. Entries in the state: ``CombinedKey -> (SubscriptionWrapper, ts)``; rows
    ``fk | pk | hash | instruction | ts`` in CombinedKey byte order.
    """

    kind = "subscription store"
    header = ("fk", "pk", "hash", "instruction", "ts")
    default_names = (SUBSCRIPTIONS,)

    def __init__(self, log: StateLog, task: int) -> None:
        super().__init__(log, task, SUBSCRIPTIONS)
        self._rows: dict[Any, tuple[Any, int]] = {}
        self._by_prefix: dict[Any, set[Any]] = {}
        """The combined keys of each prefix, so that a prefix scan reads only its own subscriptions."""

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        wrapper, ts = stored
        return (entry_key.fk, entry_key.pk, wrapper.hash, wrapper.instruction.value, ts)

    @classmethod
    def order(cls, item: Item) -> Any:
        return item[0].sort_key()

    @classmethod
    def summary(cls, record: Mapping[str, Any], stored: Any = None) -> tuple[Any, Any, Any, Any]:
        return f"({record['fk']}, {record['pk']})", record["ts"], record["instruction"], f"hash {record['hash']}"

    @classmethod
    def entry_label(cls, entry_key: Any) -> str | None:
        return str(entry_key)

    def put(self, combined_key: Any, wrapper: Any, ts: int) -> None:
        self._rows[combined_key] = (wrapper, ts)
        self._by_prefix.setdefault(combined_key.prefix(), set()).add(combined_key)
        self._log.put(self.store, combined_key, (wrapper, ts))

    def delete(self, combined_key: Any) -> bool:
        existed = self._rows.pop(combined_key, None) is not None
        if existed:
            members = self._by_prefix[combined_key.prefix()]
            members.discard(combined_key)
            if not members:
                del self._by_prefix[combined_key.prefix()]
        self._log.delete(self.store, combined_key)
        return existed

    def prefix_scan(self, prefix: tuple[int, bytes]) -> list[tuple[Any, Any, int]]:
        """``(combined key, wrapper, ts)`` of every subscription whose prefix is exactly ``prefix``."""
        found = [(ck, *self._rows[ck]) for ck in self._by_prefix.get(prefix, ())]
        return sorted(found, key=lambda item: item[0].sort_key())
