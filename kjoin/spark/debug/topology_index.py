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
    frames = {  # each frame made, written and dropped in turn: a whole run's frames are never all held at once
        "explained": debug.explained_outputs,
        "summary": debug.summary,
        "audit": lambda: debug.audit().astype({"key": "string"}),
        "drops": lambda: debug.drops().astype({"key": "string"}),
        "outputs": lambda: _outputs_frame(trace),
    }
    for name, frame in frames.items():
        pq.write_table(pa.Table.from_pandas(frame(), preserve_index=False), os.path.join(path, f"{name}.parquet"))
    if why_index:
        _write_why(debug, os.path.join(path, "why.parquet"))
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


WHY_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("verdict", pa.string()),
        ("node", pa.string()),
        ("lines", pa.string()),
    ]
)


def _write_why(debug: AppDebug, path: str) -> None:
    """Every input and output record's story, in ``topic, partition, offset`` order, written one row group at a time
    and dropped: the stories of a whole run (a few KB per record) are never all held at once. A topic partition's
    records are listed as written (an input topic's in offset order), so walking the topics in name order and each
    partition by offset is the index's order."""
    trace, explainer = debug.trace, debug.explainer
    outputs = set(debug.output_topics)
    rows: list[tuple[str, int, int, str, str | None, str]] = []
    with pq.ParquetWriter(path, WHY_SCHEMA) as writer:
        for topic in sorted(trace.topics):
            for partition in sorted(trace.topics[topic]):
                told = []
                for record in trace.topics[topic][partition]:
                    if record.written_at is None:
                        assert record.event is not None
                        told.append(_story(record, explainer.explain_event(record.event)))
                    elif topic in outputs:
                        verdict = explainer.explain_output(record)
                        told.append(_story(record, verdict, f"{record.describe()} (output record):"))
                told.sort(key=lambda row: row[2])
                rows.extend(told)
                while len(rows) >= ROW_GROUP:
                    _write_rows(writer, rows[:ROW_GROUP])
                    del rows[:ROW_GROUP]
        if rows:
            _write_rows(writer, rows)


def _write_rows(writer: pq.ParquetWriter, rows: list[tuple[str, int, int, str, str | None, str]]) -> None:
    columns = list(zip(*rows))
    writer.write_table(
        pa.Table.from_arrays([pa.array(column, field.type) for column, field in zip(columns, WHY_SCHEMA)],
                             schema=WHY_SCHEMA),
        row_group_size=ROW_GROUP,
    )  # fmt: skip


def _outputs_frame(trace: Any) -> pd.DataFrame:
    """Every output record: ``topic, partition, offset, key, value, ts`` (key and value as JSON text)."""
    outputs = [(r.topic, r.partition, r.offset, _text(r.key), _text(r.value), r.ts) for r in trace.outputs()]
    return pd.DataFrame(outputs, columns=["topic", "partition", "offset", "key", "value", "ts"])


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
