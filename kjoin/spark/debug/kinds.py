"""The kinds of join the debugger explains, one entry each (:class:`~kjoin.spark.debug.why.JoinVerdicts`).

A kind says which joins it serves, the verdicts its null results can have, and how one record's verdict is read:
a primary-key kind through :func:`kjoin.spark.debug.why.diagnose` and its two hooks (the other partitions, the
partners in the record's own partition), the foreign-key kind from the whole scenario's trace. The summary's
columns and ``SparkRun.why`` read the kind of a join here, so a new kind of join is one entry of :data:`KINDS` (with
its hooks beside its processor's debugging module).
"""

from __future__ import annotations

from ...scenario import Scenario
from .fk import FOREIGN_KEY
from .why import TABLE, WINDOWED, JoinVerdicts

__all__ = ["KINDS", "kind_of"]

KINDS: tuple[JoinVerdicts, ...] = (FOREIGN_KEY, WINDOWED, TABLE)
"""Every kind, most specific first: the first that serves a join explains it."""


def kind_of(config: Scenario) -> JoinVerdicts:
    """The kind that explains ``config``'s join."""
    for kind in KINDS:
        if kind.serves(config):
            return kind
    raise ValueError(f"no debugging kind serves the join {config.join!r}")  # pragma: no cover - TABLE serves the rest
