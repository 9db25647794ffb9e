"""The records a hopping-window join keeps (:class:`kjoin.joins.hopping.HoppingWindowJoin` writes them straight
to the StateLog): what its snapshot entries mean."""

from __future__ import annotations

from typing import Any

from .base import StoreKind

__all__ = ["HOPPING_WINDOW", "HoppingWindowKind"]

HOPPING_WINDOW = "hopping window"


class HoppingWindowKind(StoreKind):
    """A hopping-window join's records: ``(key, ts, seq) -> value``, rows ``key | ts | value``."""

    kind = HOPPING_WINDOW
    header = ("key", "ts", "value")

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        return (entry_key[0], entry_key[1], stored)
