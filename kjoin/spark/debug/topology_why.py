"""A whole app's run, debugged: the verdicts of :mod:`kjoin.topology.verdicts` over a Spark topology run (or over
topics read from dumps by ``kjoin debug``), and the frames a user reads them from.

How it works: the run's input topics are collected to the driver and run once by the reference engine's ``stages``
schedule (:func:`kjoin.topology.runtime.run_records`), which is what :func:`kjoin.spark.run_topology` computes,
record for record (``tests/test_spark_topology.py``); that one trace answers every verdict, the summary and the
audit. Each record keeps its own partition and offset (a misrouted record stays where it was written), so a verdict
names the records behind it as the topics hold them.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import pandas as pd

from ...topology.runtime import run_records
from ...topology.trace import TopicRecord, TopologyTrace
from ...topology.verdicts import AppExplainer, AppVerdict, audit, audit_records, explained_outputs, summary

if TYPE_CHECKING:  # pragma: no cover
    from ..topology import TopologyRun

__all__ = ["AppDebug", "app_debug", "audit_frame", "numbered_events", "collector_paused"]

EXPLAINED_COLUMNS = (
    "topic", "partition", "offset", "input_topic", "input_partition", "input_offset", "verdict", "node", "text",
)  # fmt: skip
SUMMARY_COLUMNS = ("topic", "result", "verdict", "node", "count")
AUDIT_COLUMNS = ("topic", "partition", "offset", "key", "expected_partition", "joins")
DROP_COLUMNS = ("step", "task", "topic", "partition", "offset", "key", "fate", "dropped")


def numbered_events(topology: Any, records: Iterable[TopicRecord]) -> list[TopicRecord]:
    """Input records in the order the reference engine lists a run's events (topic by topic as the topology
    declares them, each partition in offset order), each numbered by its place (its ``event``)."""
    rank = {name: number for number, name in enumerate(topology.graph.topics)}
    ordered = sorted(records, key=lambda r: (rank[r.topic], r.partition, r.offset))
    return [replace(record, event=number, written_at=None) for number, record in enumerate(ordered)]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a whole app's trace and verdicts are built, then restore it.

    A trace holds millions of long-lived objects (steps, visits, records) and frees none of them while it grows; each
    full collection walks them all again, which cost half the run's time at 3 x 10^4 orders. Reference counting still
    frees what is dropped; the collector runs again (and takes any cycle) once the build is done."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def audit_frame(topology: Any, records: Iterable[TopicRecord]) -> pd.DataFrame:
    """:meth:`AppDebug.audit` from the input records alone (no run): the same rows."""
    topology.build()
    return pd.DataFrame(audit_records(topology, records), columns=list(AUDIT_COLUMNS))


class AppDebug:
    """One whole run's verdicts: :meth:`why` of any record, :meth:`explained_outputs` (one row per output and per
    input record that got nothing in an output topic), :meth:`summary` (their counts), :meth:`audit` (every record
    of a co-partitioned topic that is not in its key's partition), :meth:`drops` (every drop inside a node)."""

    def __init__(self, trace: TopologyTrace) -> None:
        self.trace = trace
        self.explainer = AppExplainer(trace)
        self._rows: list[dict[str, Any]] | None = None

    @classmethod
    def of_records(cls, topology: Any, records: Iterable[TopicRecord]) -> "AppDebug":
        """Run input records (at their own partitions and offsets) through ``topology`` and read the verdicts."""
        topology.build()
        with collector_paused():
            return cls(run_records(topology, numbered_events(topology, records), "stages"))

    @property
    def output_topics(self) -> list[str]:
        return sorted(t for t in self.trace.topology.graph.topics if self.trace._is_output(t))

    def why(self, topic: str, partition: int, offset: int) -> AppVerdict:
        """The verdicts of the record at ``topic[partition]@offset``: an output's way back to its input record with a
        verdict at every join and aggregate, or an input record's whole path (what it set off, or why nothing)."""
        return self.explainer.find(topic, partition, offset)

    def rows(self) -> list[dict[str, Any]]:
        if self._rows is None:
            with collector_paused():
                self._rows = explained_outputs(self.trace, self.explainer)
        return self._rows

    def explained_outputs(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows(), columns=list(EXPLAINED_COLUMNS))

    def summary(self) -> pd.DataFrame:
        """:meth:`explained_outputs` counted by topic, result (``output``/``none``), verdict and node."""
        return pd.DataFrame(summary(self.rows()), columns=list(SUMMARY_COLUMNS))

    def audit(self) -> pd.DataFrame:
        return pd.DataFrame(audit(self.trace), columns=list(AUDIT_COLUMNS))

    def drops(self) -> pd.DataFrame:
        """Every step in which a node dropped the record (:attr:`~kjoin.topology.trace.TopologyStep.dropped`)."""
        with collector_paused():
            rows = [
                (s.index, s.task, s.record.topic, s.record.partition, s.record.offset, s.record.key, s.fate.value,
                 s.dropped)
                for s in self.trace.steps
                if s.drops
            ]  # fmt: skip
        return pd.DataFrame(rows, columns=list(DROP_COLUMNS))


def app_debug(run: "TopologyRun") -> AppDebug:
    """The verdicts of a Spark topology run: :meth:`~kjoin.spark.topology.TopologyRun.debug`."""
    return run.debug()
