"""A GlobalKTable's store: every partition of the global topic, in every application instance.

A GlobalKTable is not partitioned with the stream that joins it: each instance of the
application keeps the *whole* table, written by its global thread (``GlobalStreamThread``)
and read by every stream task of the instance. So kjoin keeps one global store per run, not
one per task, and shows it with task :data:`GLOBAL_TASK`.
"""

from __future__ import annotations

from typing import Any

from ..records import Side
from ..state import StateLog
from .table import TableStore

__all__ = ["GlobalTableStore", "GLOBAL_TABLE", "GLOBAL_TASK"]

GLOBAL_TABLE = "global table"

GLOBAL_TASK = 0
"""The task the global store (and a global-topic record's step) is shown with. The store belongs to no stream task
(every task of the instance reads it); kjoin files it with task 0, which every run has, so that a one-partition
scenario (the case TopologyTestDriver runs) shows one task holding the stream and the global table."""


class GlobalTableStore(TableStore):
    """The global table's materialized view: ``key -> (value, ts)`` of the whole global topic; a null value deletes
    the key. Rows ``key | value | ts`` in key order (a global table sends no old values)."""

    kind = "global table"
    header = ("key", "value", "ts")
    default_names = (GLOBAL_TABLE,)

    def __init__(self, log: StateLog) -> None:
        super().__init__(log, GLOBAL_TASK, Side.RIGHT, sends_old_values=False, name=GLOBAL_TABLE)

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        value, ts, _ = stored
        return (entry_key, value, ts)

    @classmethod
    def summary(cls, record: Any, stored: Any = None) -> tuple[Any, Any, Any, Any]:
        return record["key"], record["ts"], record["value"], None
