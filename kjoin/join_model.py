"""A join as values: its variant, its window and its tables' options, shared by every engine.

The reference engine's processors, the Spark passes, the exporter and the diff all read a join through these
types, so "does this side's record come out without a partner" is one method (:meth:`Variant.outer`), not a
string comparison repeated in each of them. A scenario (:mod:`kjoin.scenario`) holds them; the processors take
them as plain arguments, never the scenario.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .records import Side

__all__ = ["Variant", "JoinWindows", "TableOptions", "DEFAULT_GRACE_OF_DEPRECATED_API_MS"]

DEFAULT_GRACE_OF_DEPRECATED_API_MS = 24 * 60 * 60 * 1000
"""The grace of the deprecated ``JoinWindows.of(...)`` API: 24 hours minus the window's size."""


class Variant(StrEnum):
    """A join's variant. A member equals its text (``Variant.LEFT == "left"``), so a scenario document's
    ``variant: left`` and the member read the same; :data:`kjoin.scenario.VARIANTS` says which join has which."""

    INNER = "inner"
    """Only matches come out."""
    LEFT = "left"
    """A left record without a partner comes out with a null right value."""
    OUTER = "outer"
    """A record of either side without a partner comes out with a null partner."""

    def outer(self, side: str | Side) -> bool:
        """Does a record of ``side`` without a partner come out (with a null partner)?"""
        return self is Variant.OUTER or (self is Variant.LEFT and Side(side) is Side.LEFT)

    @property
    def inner(self) -> bool:
        """Do only matches come out?"""
        return self is Variant.INNER


@dataclass(frozen=True)
class JoinWindows:
    """A stream-stream join window: ``before_ms``/``after_ms`` around each left record, and ``grace_ms``.

    ``grace_ms=None`` stands for the deprecated ``JoinWindows.of(...)`` API: its grace is
    ``max(24h - (before + after), 0)``, and it keeps the eager (pre-3.1) left/outer results.
    ``spurious_result_fix=False`` does the same for an explicit grace (``of(...).grace(g)``).
    """

    before_ms: int
    after_ms: int
    grace_ms: int | None = None
    spurious_result_fix: bool | None = None

    @property
    def effective_grace_ms(self) -> int:
        if self.grace_ms is not None:
            return self.grace_ms
        return max(DEFAULT_GRACE_OF_DEPRECATED_API_MS - self.before_ms - self.after_ms, 0)

    @property
    def retention_ms(self) -> int:
        """Each window store keeps before + after + grace."""
        return self.before_ms + self.after_ms + self.effective_grace_ms

    @property
    def deprecated_api(self) -> bool:
        return self.grace_ms is None or self.spurious_result_fix is False


@dataclass(frozen=True)
class TableOptions:
    """Options of one input table (``left:``/``right:`` in a scenario)."""

    versioned: bool = False
    history_retention_ms: int | None = None
