"""The kinds of join the debugger explains, one entry each (:class:`~kjoin.spark.debug.diagnosis.JoinVerdicts`).

A kind says which joins it serves, the verdicts its null results can have, and how one record's verdict is read:
a primary-key kind through :meth:`~kjoin.spark.debug.diagnosis.JoinVerdicts.diagnose` and its two hooks (the other
partitions, the partners in the record's own partition), the foreign-key kind from the whole scenario's trace. The
summary's columns and ``SparkRun.why`` read the kind of a join here, so a new kind of join is one entry of
:data:`KINDS` (with its hooks in a module of its own beside :mod:`~kjoin.spark.debug.windowed`,
:mod:`~kjoin.spark.debug.table` and :mod:`~kjoin.spark.debug.fk`).
"""

from __future__ import annotations

from ...scenario import Scenario
from .diagnosis import JoinVerdicts
from .fk import FOREIGN_KEY
from .table import TABLE
from .windowed import WINDOWED

__all__ = ["KINDS", "kind_of"]

KINDS: tuple[JoinVerdicts, ...] = (FOREIGN_KEY, WINDOWED, TABLE)
"""Every kind, most specific first: the first that serves a join explains it."""


def kind_of(config: Scenario) -> JoinVerdicts:
    """The kind that explains ``config``'s join."""
    for kind in KINDS:
        if kind.serves(config):
            return kind
    raise ValueError(f"no debugging kind serves the join {config.join!r}")  # pragma: no cover - TABLE serves the rest
