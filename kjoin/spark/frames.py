"""The columns of the frames a Spark run gives (:class:`kjoin.spark.SparkRun`)."""

from __future__ import annotations

__all__ = ["OUTPUT_COLUMNS", "STEP_COLUMNS", "CAUSE_COLUMNS", "CAUSE_TYPES"]

OUTPUT_COLUMNS = [
    "scenario",
    "partition",
    "step",
    "side",
    "offset",
    "key",
    "left",
    "right",
    "value",
    "ts",
    "tombstone",
    "kind",
    "origin_step",
]
"""Columns of :attr:`SparkRun.outputs`: ``step``/``side``/``offset`` name the input record
whose processing emitted the output; ``origin_step`` the record whose value it carries."""
STEP_COLUMNS = ["scenario", "partition", "step", "side", "offset", "key", "ts", "fate", "reason", "until_ms"]
"""Columns of :attr:`SparkRun.steps`: every input record that did not join (dropped,
buffered, stored, no match), with its reason."""
CAUSE_COLUMNS = ["cause_side", "cause_partition", "cause_offset"]
"""Columns of :attr:`SparkRun.explained_outputs` naming the record that caused a result's reason, where one
did (:mod:`kjoin.spark.debug.audit`): the misrouted record behind ``partner-other-partition``, ``joined-stale`` or
``joined-deleted``, the null-key record behind ``partner-null-key``; null otherwise."""
CAUSE_TYPES = ("string", "int", "bigint")
"""The Spark types of :data:`CAUSE_COLUMNS`."""
