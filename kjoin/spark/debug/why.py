"""Debug your own topics: one key's drill-down and the diagnosis of one record, without running a whole Kafka task
through the reference engine. This module is the front door; the work is in one module per job:

* :mod:`kjoin.spark.debug.key_trace`: one key's drill-down of one task (:func:`key_trace`, :class:`KeyTrace`), its
  clock records and the outer-join buffer's replayed releases (:class:`ReplayedSweepJoin`);
* :mod:`kjoin.spark.debug.diagnosis`: the verdicts (:data:`VERDICTS`), a :class:`Diagnosis`, and the one shape every
  kind of join fills (:class:`JoinVerdicts`, whose :meth:`~JoinVerdicts.diagnose` runs the shared steps);
* :mod:`kjoin.spark.debug.windowed`, :mod:`kjoin.spark.debug.table`, :mod:`kjoin.spark.debug.fk`: the kinds, each
  its two hooks (the foreign-key kind reads the whole scenario's trace instead), listed in
  :mod:`kjoin.spark.debug.kinds`.
"""

from __future__ import annotations

from typing import Any

from ...records import Record
from ...scenario import Scenario
from ...times import duration, when
from .diagnosis import ARRIVAL_NOTE, VERDICTS, Diagnosis, JoinVerdicts, Partner, arrival_note, span
from .key_trace import KeyTrace, ReplayedSweepJoin, key_trace, replays_sweep, stand_in_key, sweeps_outer_buffer
from .kinds import kind_of
from .table import TABLE, TABLE_NULL_VERDICTS
from .windowed import WINDOWED, WINDOWED_NULL_VERDICTS

__all__ = [
    "KeyTrace", "Diagnosis", "Partner", "VERDICTS", "JoinVerdicts", "WINDOWED", "TABLE", "key_trace", "diagnose",
    "ARRIVAL_NOTE", "arrival_note", "span", "duration", "when", "ReplayedSweepJoin", "replays_sweep",
    "sweeps_outer_buffer", "stand_in_key", "TABLE_NULL_VERDICTS", "WINDOWED_NULL_VERDICTS", "verdicts_of",
]  # fmt: skip


def verdicts_of(config: Scenario) -> JoinVerdicts:
    """The primary-key kind that explains ``config``'s join (a foreign-key join's verdicts read the whole scenario:
    :data:`kjoin.spark.debug.fk.FOREIGN_KEY`)."""
    kind = kind_of(config)
    return kind if kind.whole_trace is None else (WINDOWED if WINDOWED.serves(config) else TABLE)


def diagnose(record: Record, config: Scenario, *args: Any, **named: Any) -> Diagnosis:
    """The verdict for ``record`` of a primary-key join, by its kind: :meth:`JoinVerdicts.diagnose`, whose arguments
    it takes."""
    found: Diagnosis = verdicts_of(config).diagnose(record, config, *args, **named)
    return found
