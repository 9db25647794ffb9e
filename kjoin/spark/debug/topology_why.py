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
from ...topology.verdicts import (
    AppExplainer,
    AppVerdict,
    audit,
    EXPLAINED_FIELDS,
    audit_records,
    counted,
    debugging_step,
    explained_outputs,
    explained_rows,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..topology_run import TopologyRun

__all__ = ["AppDebug", "app_debug", "audit_frame", "numbered_events", "collector_paused"]

EXPLAINED_COLUMNS = EXPLAINED_FIELDS
SUMMARY_COLUMNS = ("topic", "result", "verdict", "node", "count")
AUDIT_COLUMNS = ("topic", "partition", "offset", "key", "expected_partition", "joins")
DROP_COLUMNS = ("step", "task", "topic", "partition", "offset", "key", "fate", "dropped")


def numbered_events(topology: Any, records: Iterable[TopicRecord]) -> list[TopicRecord]:
    """Input records in the order the reference engine lists a run's events (topic by topic as the topology
    declares them, each partition in offset order), each numbered by its place (its ``event``)."""
    rank = {name: number for number, name in enumerate(topology.graph.topics)}
    ordered = sorted(records, key=lambda r: (rank[r.topic], r.partition, r.offset))
    return [replace(record, event=number, written_at=None) for number, record in enumerate(ordered)]


_PAUSED = [0]
"""How many :func:`collector_paused` blocks are open (the outermost one collects, freezes and restores)."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """Build a whole app's trace and verdicts with Python's cyclic garbage collector paused, then keep what was built
    out of every later collection.

    A trace holds millions of long-lived objects (steps, visits, records, verdicts, stories) and frees none while it
    grows; each full collection walks them all again, which cost most of the run's, the summary's and the index's
    time at 10^5 orders (about 10 times these paused), and one last walk of 12.6 million objects (9 s) when the
    collector runs again after. So the outermost block collects what is garbage before it, pauses the collector, and
    at its end, unless the build failed, freezes every object (:func:`gc.freeze`: reference counting still frees
    them when the run is dropped; the collector no longer walks them). The build makes no cycle (``gc.collect()``
    after it finds nothing unreachable), so freezing it leaks nothing."""
    outermost = _PAUSED[0] == 0
    enabled = gc.isenabled()
    if outermost:
        gc.collect()  # what is garbage now is not frozen with the build
        gc.disable()
    _PAUSED[0] += 1
    built = False
    try:
        yield
        built = True
    finally:
        _PAUSED[0] -= 1
        if outermost:
            if built:  # a build that failed is garbage (its traceback's frames make cycles): left to the collector
                gc.freeze()
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
        self._frame: pd.DataFrame | None = None

    @classmethod
    def of_records(cls, topology: Any, records: Iterable[TopicRecord]) -> "AppDebug":
        """Run input records (at their own partitions and offsets) through ``topology`` and read the verdicts of
        every output and of every input record that got nothing (:meth:`explained_outputs`)."""
        topology.build()
        with collector_paused():
            # the verdicts read the steps and the topics, never the stores after a step: no state history; of each
            # step, the visits the verdicts read
            events = numbered_events(topology, records)
            del records  # the records as given, when nothing else holds them: the run keeps its own numbered copies
            debug = cls(run_records(topology, events, "stages", history=False, keep=debugging_step))
            debug._explained()  # every output's verdict, read once: the summary counts them
            return debug

    @property
    def output_topics(self) -> list[str]:
        return sorted(t for t in self.trace.topology.graph.topics if self.trace._is_output(t))

    def why(self, topic: str, partition: int, offset: int) -> AppVerdict:
        """The verdicts of the record at ``topic[partition]@offset``: an output's way back to its input record with a
        verdict at every join and aggregate, or an input record's whole path (what it set off, or why nothing)."""
        return self.explainer.find(topic, partition, offset)

    def rows(self) -> list[dict[str, Any]]:
        """:meth:`explained_outputs` as dicts (made again on each call: the run keeps them as columns)."""
        with collector_paused():
            return explained_outputs(self.trace, self.explainer)

    def _explained(self) -> pd.DataFrame:
        """The explained outputs, made once and kept as one column per field (a dict per row would cost more than the
        run's steps: two rows per order)."""
        if self._frame is None:
            columns: tuple[list[Any], ...] = tuple([] for _ in EXPLAINED_FIELDS)
            appends = [column.append for column in columns]
            with collector_paused():
                for row in explained_rows(self.trace, self.explainer):
                    for append, value in zip(appends, row):
                        append(value)
            self._frame = pd.DataFrame(dict(zip(EXPLAINED_COLUMNS, columns)), columns=list(EXPLAINED_COLUMNS))
        return self._frame

    def explained_outputs(self) -> pd.DataFrame:
        """One row per output record and per input record that got nothing in an output topic (the frame the run
        keeps: ``.copy()`` it to change it)."""
        return self._explained()

    def summary(self) -> pd.DataFrame:
        """:meth:`explained_outputs` counted by topic, result (``output``/``none``), verdict and node."""
        frame = self._explained()
        results = ("none" if missing else "output" for missing in frame["offset"].isna())  # nothing written
        keys = zip(frame["topic"], results, frame["verdict"], frame["node"])
        return pd.DataFrame(counted(keys), columns=list(SUMMARY_COLUMNS))

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
    """The verdicts of a Spark topology run: :meth:`~kjoin.spark.topology_run.TopologyRun.debug`."""
    return run.debug()
