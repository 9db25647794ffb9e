"""A whole app's run written down and reopened: ``TopologyRun.write_parquet(path)``, ``kjoin debug --out RUN`` write
it, :func:`open_topology_run` (and :func:`kjoin.spark.open_run`) and ``kjoin why RUN`` read it, with no Spark job and
no run again.

What is written (Parquet by pyarrow, plus ``topology-run.json``):

* ``why.parquet`` (``why_index=True``): one row per input record and per output record, sorted by ``topic,
  partition, offset``, with its cause (``verdict``, ``node``) and its story (``lines``: the verdict at every join
  and aggregate, the records behind each, the outputs), in small row groups: a lookup reads the one row group
  whose statistics hold the offset;
* ``explained.parquet``, ``summary.parquet``, ``audit.parquet``, ``drops.parquet``: the frames of
  :class:`~kjoin.spark.debug.topology_why.AppDebug`;
* ``outputs.parquet``: every output record (``topic, partition, offset, key, value, ts``, key and value as JSON text).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from ...records import render_value
from .topology_why import AppDebug, collector_paused

__all__ = ["MANIFEST", "write_topology_run", "open_topology_run", "OpenedTopologyRun", "is_topology_run"]

MANIFEST = "topology-run.json"
ROW_GROUP = 4096
"""Rows per row group of ``why.parquet``: a lookup decodes one group of stories (a few MB at most)."""


def is_topology_run(path: str) -> bool:
    return os.path.isfile(os.path.join(path, MANIFEST))


def write_topology_run(debug: AppDebug, path: str, why_index: bool = True) -> None:
    """Write ``debug``'s frames (and, with ``why_index``, every record's story) under ``path`` (a directory)."""
    with collector_paused():  # every story is a new long-lived string beside the trace: nothing to collect
        _write(debug, path, why_index)


def _write(debug: AppDebug, path: str, why_index: bool) -> None:
    os.makedirs(path, exist_ok=True)
    trace = debug.trace
    frames = {
        "explained": debug.explained_outputs(),
        "summary": debug.summary(),
        "audit": debug.audit().astype({"key": "string"}),
        "drops": debug.drops().astype({"key": "string"}),
    }
    for name, frame in frames.items():
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), os.path.join(path, f"{name}.parquet"))
    outputs = [(r.topic, r.partition, r.offset, _text(r.key), _text(r.value), r.ts) for r in trace.outputs()]
    pq.write_table(
        pa.Table.from_pandas(
            pd.DataFrame(outputs, columns=["topic", "partition", "offset", "key", "value", "ts"]), preserve_index=False
        ),
        os.path.join(path, "outputs.parquet"),
    )
    if why_index:
        rows = []
        explainer = debug.explainer
        for number, event in enumerate(trace.events):
            rows.append(_story(event, explainer.explain_event(number)))
        for output in trace.outputs():
            rows.append(_story(output, explainer.explain_output(output), f"{output.describe()} (output record):"))
        rows.sort(key=lambda row: (row[0], row[1], row[2]))
        table = pa.table(
            {
                "topic": pa.array([r[0] for r in rows], pa.string()),
                "partition": pa.array([r[1] for r in rows], pa.int32()),
                "offset": pa.array([r[2] for r in rows], pa.int64()),
                "verdict": pa.array([r[3] for r in rows], pa.string()),
                "node": pa.array([r[4] for r in rows], pa.string()),
                "lines": pa.array([r[5] for r in rows], pa.string()),
            }
        )
        pq.write_table(table, os.path.join(path, "why.parquet"), row_group_size=ROW_GROUP)
    manifest = {
        "kind": "topology-run",
        "output_topics": debug.output_topics,
        "topics": {name: topic.partitions for name, topic in sorted(trace.topology.graph.topics.items())},
        "records": len(trace.events),
        "steps": len(trace.steps),
        "why_index": why_index,
        "describe": trace.topology.describe(),
    }
    with open(os.path.join(path, MANIFEST), "w", encoding="utf-8") as file:
        json.dump(manifest, file, indent=1, ensure_ascii=False)


def _text(value: Any) -> str | None:
    return None if value is None else render_value(value)


def _story(record: Any, verdict: Any, head: str | None = None) -> tuple[str, int, int, str, str | None, str]:
    name, cause = verdict.decided(produced=bool(verdict.outputs))
    return (record.topic, record.partition, record.offset, name, None if cause is None else cause.node,
            "\n".join(([head] if head else []) + verdict.lines()))  # fmt: skip


class OpenedTopologyRun:
    """A topology run reopened from what :func:`write_topology_run` wrote: every frame, and :meth:`why` from the
    index (one row group read)."""

    def __init__(self, path: str) -> None:
        self.path = path
        with open(os.path.join(path, MANIFEST), encoding="utf-8") as file:
            self.manifest = json.load(file)
        self.output_topics: list[str] = self.manifest["output_topics"]

    def _frame(self, name: str) -> pd.DataFrame:
        return pq.read_table(os.path.join(self.path, f"{name}.parquet")).to_pandas()

    def explained_outputs(self) -> pd.DataFrame:
        return self._frame("explained")

    def summary(self) -> pd.DataFrame:
        return self._frame("summary")

    def audit(self) -> pd.DataFrame:
        return self._frame("audit")

    def drops(self) -> pd.DataFrame:
        return self._frame("drops")

    @property
    def outputs(self) -> pd.DataFrame:
        return self._frame("outputs")

    def why(self, topic: str, partition: int, offset: int) -> list[str]:
        """The story of the record at ``topic[partition]@offset`` (an input or an output record), as written."""
        if not self.manifest.get("why_index"):
            raise ValueError(f"{self.path}: written without the why index; write it with why_index=True")
        dataset = ds.dataset(os.path.join(self.path, "why.parquet"), format="parquet")
        found = dataset.to_table(
            columns=["lines"],
            filter=(ds.field("topic") == topic) & (ds.field("partition") == partition) & (ds.field("offset") == offset),
        )
        if found.num_rows == 0:
            topics = self.manifest["topics"]
            if topic not in topics:
                raise KeyError(f"{topic}: not a topic of this run; its topics are {', '.join(sorted(topics))}")
            raise KeyError(
                f"{topic}[{partition}]@{offset}: no input or output record there in this run (the index holds the "
                "input and output topics' records; a repartition topic's record is explained by its output's)"
            )
        return found.column("lines")[0].as_py().split("\n")


def open_topology_run(path: str) -> OpenedTopologyRun:
    """Reopen a topology run written by ``TopologyRun.write_parquet(path)`` or ``kjoin debug --out path``."""
    if not is_topology_run(path):
        raise FileNotFoundError(f"{path}: no {MANIFEST}; write the run with kjoin debug --out {path} first")
    return OpenedTopologyRun(path)
