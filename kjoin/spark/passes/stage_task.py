"""A topology's stage on Spark, one Kafka task (or, for a stage that feeds itself, the whole stage) per group.

How it works: the records of a stage arrive grouped by Kafka task (sub-topology, partition): the task's input
partitions and the records earlier stages wrote to its repartition partitions (numbered here: :func:`numbered`). The
group function decodes them, takes the global tables' records first (as every task does: the global stores are
restored before any task runs), then runs the reference engine's processors over the task's records in the
``stages`` schedule (:func:`kjoin.topology.runtime.stage_steps`: the task's partition group, Kafka's
``PartitionGroup`` over any number of partitions), so each record's fate, reason and writes are the reference
engine's by construction. It returns one row per step and one per record the step wrote, with the key that puts
the step in the stage's processing order (:data:`STEP_ORDER`):

* an acyclic stage's tasks interleave by timestamp (the task whose next record has the smallest timestamp;
  ties: sub-topology, then partition). With all of each task's records known, that greedy merge is a sort by
  ``(running max of the timestamps the task has taken, sub-topology, partition, step within the task)``: a task's
  step waits only for the steps of other tasks whose running max is lower. So the stage's steps, and the records
  they write to one topic partition (their offsets), are ordered without running the tasks together.
* a cyclic stage runs whole in one group; its steps are ordered by their number in that run.

Written records travel between stages as ``payload`` (the pickled key, value and a table group-by's old value:
windowed keys and JSON objects stay Python values; or, from a stage run as Spark expressions, the text key and the
JSON text of the value: :func:`load_payload`); an input record as its key and value text, decoded per topic.
"""

from __future__ import annotations

import pickle
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ...records import load_json, render_value
from ...topology.runtime import stage_steps
from ...topology.stages import topic_readers
from ...topology.trace import TopicRecord

__all__ = [
    "ROW_SCHEMA", "STEP_ORDER", "WRITE_ORDER", "WRITE_ORDER_TYPES", "stage_function", "decode_records", "Decoding",
    "Bases", "shown", "written_offsets", "read_back", "load_payload", "JSON_PAYLOAD", "NULL_KEY_PAYLOAD",
]  # fmt: skip

STEP_ORDER = ("stage", "o_ts", "o_sub", "o_part", "seq")
"""The columns that sort the steps of a run into the ``stages`` schedule's order."""
WRITE_ORDER = (*STEP_ORDER, "wseq")
"""...and the records they wrote into the order written (a topic partition's offsets)."""

ROW_SCHEMA = (
    "kind string, task string, stage int, o_ts long, o_sub int, o_part int, seq long, wseq int, "
    "topic string, partition int, offset long, ts long, key string, value string, payload binary, "
    "fate string, reason string, nodes string, dropped string"
)
"""One row per step (``kind = 'step'``: the record it took, its fate, reason, the nodes it passed and each node's drop
of it, as :attr:`kjoin.topology.trace.TopologyStep.dropped` says them) and per record a step wrote (``'write'``:
topic, partition, the pickled payload; its offset is assigned afterwards)."""

WRITE_ORDER_TYPES = {"stage": "int", "o_ts": "long", "o_sub": "int", "o_part": "int", "seq": "long", "wseq": "int"}
""":data:`WRITE_ORDER`'s columns and their types, as in :data:`ROW_SCHEMA`: a written record travels to the stage that
reads it with them (null for an input record), and that stage numbers it (:func:`written_offsets`)."""

Decoding = Mapping[str, tuple[bool, str]]
"""Topic -> (its keys are longs, how its values are carried: ``json``, ``string``, ``long`` or ``double``)."""


Bases = Mapping[tuple[str, int], int]
"""(topic, partition) -> the offset of the run's first write there: after a ``through`` topic's own records."""


JSON_PAYLOAD, NULL_KEY_PAYLOAD = b"\x00", b"\x01"
"""The first byte of a payload written by Spark expressions (:mod:`kjoin.spark.passes.stage_expressions`), which
cannot pickle: ``JSON_PAYLOAD + key + JSON_PAYLOAD + the value's JSON text``, or for a null key (KIP-962's
repartition topics keep them) ``NULL_KEY_PAYLOAD + the value's JSON text`` (UTF-8; the key is text without NUL, the
value the record's own text, ``null`` for a null value, so it decodes to the value the chain pass would have
pickled, its fields in the same order). A pickle never starts with either."""


def load_payload(payload: bytes) -> tuple[Any, Any, Any, bool]:
    """A written record's ``(key, value, old value, has an old value)`` from its payload, any form."""
    first = payload[:1]
    if first == JSON_PAYLOAD:
        key, text = payload[1:].decode("utf-8").split("\x00", 1)
        return key, load_json(text), None, False
    if first == NULL_KEY_PAYLOAD:
        return None, load_json(payload[1:].decode("utf-8")), None, False
    return pickle.loads(payload)


def shown(value: Any) -> str | None:
    """A key or value as the trace writes it (:func:`kjoin.records.render_value`), ``None`` for null."""
    return None if value is None else render_value(value)


def written_offsets(topics: Any, partitions: Any, order: Sequence[Any], bases: Bases | None = None) -> np.ndarray:
    """The offsets of written records (one entry each in ``topics``, ``partitions`` and the :data:`WRITE_ORDER`
    columns ``order``): each one's rank in its topic partition in the order written, after ``bases``. The stage that
    reads a topic partition gets all its records in one task, so it numbers them itself (a window over every
    written record would cost a shuffle and a sort of its own)."""
    count = len(topics)
    if not count:
        return np.zeros(0, dtype=np.int64)
    codes, names = pd.factorize(np.asarray(topics, dtype=object))
    partitions = np.asarray(partitions, dtype=np.int64)
    by = np.lexsort((*[np.asarray(column, dtype=np.int64) for column in reversed(order)], partitions, codes))
    code, partition = codes[by], partitions[by]
    starts = np.flatnonzero(np.r_[True, (code[1:] != code[:-1]) | (partition[1:] != partition[:-1])])
    sizes = np.diff(np.r_[starts, count])
    ranks = np.arange(count, dtype=np.int64) - np.repeat(starts, sizes)
    if bases:
        first = [bases.get((names[code[at]], int(partition[at])), 0) for at in starts.tolist()]
        ranks += np.repeat(np.array(first, dtype=np.int64), sizes)
    offsets = np.empty(count, dtype=np.int64)
    offsets[by] = ranks
    return offsets


def numbered(frame: pd.DataFrame, bases: Bases | None = None) -> pd.DataFrame:
    """A records frame with its written records' offsets (:func:`written_offsets`); a frame without the
    :data:`WRITE_ORDER` columns (only input records, or writes already numbered) as it is."""
    if "stage" not in frame.columns:
        return frame
    written = frame["stage"].notna().to_numpy()
    if not written.any():
        return frame
    rows = frame[written]
    offsets = written_offsets(rows["topic"].to_numpy(), rows["partition"].to_numpy(),
                              [rows[column].to_numpy() for column in WRITE_ORDER], bases)  # fmt: skip
    frame = frame.copy()
    column = frame["offset"].to_numpy(dtype=object, na_value=None).copy()
    column[written] = offsets
    frame["offset"] = column
    return frame


def decode_records(frame: pd.DataFrame, decoding: Decoding, bases: Bases | None = None) -> list[TopicRecord]:
    """The rows of a records frame (``topic, partition, offset, ts, key_text, value_text, payload`` and the
    :data:`WRITE_ORDER` of a written record) as the reference engine's records: a written record from its payload,
    numbered (:func:`numbered`), an input record decoded as its topic says."""
    frame = numbered(frame, bases)
    records = []
    for topic, partition, offset, ts, key_text, value_text, payload in zip(
        frame["topic"], frame["partition"], frame["offset"], frame["ts"], frame["key_text"], frame["value_text"],
        frame["payload"],
    ):  # fmt: skip
        if payload is not None:
            key, value, old, has_old = load_payload(payload)
        else:
            long_keys, values = decoding[topic]
            key = None if key_text is None else (int(key_text) if long_keys else key_text)
            value = _decoded(value_text, values)
            old, has_old = None, False
        records.append(TopicRecord(topic, int(partition), int(offset), key, value, int(ts), None, None, None, old,
                                   has_old))  # fmt: skip
    return records


def _decoded(text: Any, kind: str) -> Any:
    if text is None:
        return None
    if kind == "json":
        return load_json(text)
    if kind == "long":
        return int(text)
    if kind == "double":
        return float(text)
    return text


def read_back(topology: Any) -> frozenset[str]:
    """The topics a sub-topology of ``topology`` reads (its sources, repartition and ``through`` topics): only the
    records written to these carry a payload, which the reading stage decodes; an output topic's written records
    are shown by their key and value texts and carry none (nothing reads it: pickling them cost the join stage of
    ``benchmarks/bench_topology.py`` a tenth of its Python CPU)."""
    return frozenset(topic_readers(topology.graph))


def stage_function(
    topology: Any,
    stage: int,
    subtopologies: tuple[int, ...],
    cyclic: bool,
    decoding: Decoding,
    global_records: list[TopicRecord],
    bases: Bases | None = None,
) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """The ``applyInPandas`` function of one stage: a group's records in, its step and write rows out."""

    read = read_back(topology)

    def run_group(frame: pd.DataFrame) -> pd.DataFrame:
        records = decode_records(frame, decoding, bases)
        rows: list[tuple[Any, ...]] = []
        running: dict[str, int] = {}
        steps = stage_steps(topology, records, subtopologies, global_records)
        for seq, step in enumerate(steps):
            sub, part = (int(n) for n in step.task.split("_"))
            if cyclic:
                order = (stage, 0, 0, 0, seq)
            else:
                running[step.task] = max(running.get(step.task, step.record.ts), step.record.ts)
                order = (stage, running[step.task], sub, part, seq)
            record = step.record
            rows.append(("step", step.task, *order, None, record.topic, record.partition, record.offset, record.ts,
                         shown(record.key), _shown_written(record), None, step.fate.value,
                         None if step.reason is None else step.reason.value,
                         " → ".join(visit.node for visit in step.visits), step.dropped or None))  # fmt: skip
            for wseq, written in enumerate(step.wrote):
                payload = None
                if written.topic in read:
                    payload = pickle.dumps((written.key, written.value, written.old, written.has_old))
                rows.append(("write", step.task, *order, wseq, written.topic, written.partition, None, written.ts,
                             shown(written.key), _shown_written(written), payload, None, None, None, None))  # fmt: skip
        return pd.DataFrame(rows, columns=[column.split()[0] for column in ROW_SCHEMA.split(", ")])

    return run_group


def _shown_written(record: TopicRecord) -> str | None:
    """A record's value as shown: a foreign-key join's message as it describes itself."""
    if record.message is not None:
        return record.message.describe()
    return shown(record.value)
