"""A topology's stage on Spark without the processors: the stateless re-keys and the chains of stream-table joins.

Which stages: an acyclic stage whose one sub-topology is a *chain* (:func:`stage_plan` says why a stage is one, or
why not, and :func:`kjoin.spark.run_topology` runs the others with the processors,
:mod:`kjoin.spark.passes.stage_task`):

* one stream source (an input topic or a repartition topic), then nodes of one child each: ``filter``,
  ``map_values``, ``select_key``, ``map``, stream-table joins (inner or left, over a source table of the same
  sub-topology that is not versioned, without grace), ending in a sink (``to`` or a repartition topic);
* the tables those joins read, read by nothing else;
* a Kafka release that does not drop idempotent table updates (KIP-557, 2.6.0 to 2.7.0: a table step's fate
  would need its previous value).

How a task runs (its records, from a ``mapInArrow`` over Spark partitions that hold whole tasks: :func:`per_task`;
the processors' pass takes the same groups as pandas frames):

0. **Offsets**: the records earlier stages wrote are numbered in the order written (:func:`_numbered`).

1. **Processing order**: the task's records are added to its partition group as the ``stages`` schedule adds them
   (topic by topic as the topology declares them, each partition in offset order) and taken as Kafka's
   ``PartitionGroup`` hands them out: the partition whose head has the lowest timestamp, ties as
   ``java.util.PriorityQueue`` leaves them (:class:`kjoin.ordering.PartitionGroup`'s rules,
   over whole partitions; :func:`processing_order`). A task of one partition (a re-key) is in offset order.
2. **The chain, node by node over all the task's stream records at once**: the user's functions are called per
   record, in processing order (each record once per node, as the processors call them); a filter, a null key or
   value, an inner join's miss or a null key at a repartition topic end a record's way with the reason the
   processors give.
3. **Each join's lookups, as of the record's place**: a stream record sees its table's latest update taken before
   it (a null value deletes the key), found for all of them in one sort by (key, place) (:func:`as_of`), the
   method of the single stream-table join's vectorised pass (:mod:`kjoin.spark.passes.vectorised`).
4. **Rows**: one step row per record (its fate, reason and the nodes it passed, as :func:`kjoin.topology.runtime`
   sums them) and one write row per record written, with the same order keys
   (:data:`~kjoin.spark.passes.stage_task.STEP_ORDER`) and payloads as the processors' pass, so everything
   downstream (offsets, the next stage, ``steps``, ``topics``, ``trace``, ``why``) is unchanged.
   ``tests/test_spark_topology_vectorised.py`` compares both passes' rows on random chains.
"""

from __future__ import annotations

import gc
import pickle
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...fates import Fate, Reason
from ...partitioner import default_partitions
from ...records import load_json, render_value
from ...topology.graph import Node
from ...topology.runtime import stage_steps
from ...topology.plain import as_written
from ...topology.stages import Stage
from .memory import hold_freed_memory
from .stage_texts import FATES, REASONS, coded, shown_texts, text_partitions, texts_rows
from .stage_task import (
    JSON_PAYLOAD, NULL_KEY_PAYLOAD, ROW_SCHEMA, WRITE_ORDER, WRITE_ORDER_TYPES, Bases, Decoding, decode_records,
    load_payload, read_back, shown, written_offsets,
)  # fmt: skip

__all__ = [
    "Chain", "stage_plan", "chain_stage_function", "per_task", "as_of", "processing_order", "CHAIN_OPS",
    "RECORD_SCHEMA",
]  # fmt: skip

CHAIN_OPS = ("filter", "map_values", "select_key", "map", "stream-table")
"""The nodes a chain may hold between its stream source and its sink."""

_JOINED, _FORWARDED, _STORED, _DROPPED = Fate.JOINED.value, Fate.FORWARDED.value, Fate.STORED.value, Fate.DROPPED.value


@dataclass(frozen=True)
class Chain:
    """A chain stage: its sub-topology, its nodes from the stream source to the sink, and its tables by topic."""

    sub: int
    nodes: tuple[Node, ...]
    tables: Mapping[str, Node]

    def describe(self) -> str:
        return " → ".join(f"{node.name} ({node.op})" for node in self.nodes)


def stage_plan(topology: Any, stage: Stage) -> tuple[Chain | None, str]:
    """The chain of ``stage`` and why it is one, or ``None`` and why not (the reason the processors run it)."""
    if stage.cyclic or len(stage.subtopologies) != 1:
        return None, "its sub-topologies send records to each other (a foreign-key join, or a loop)"
    semantics = topology.semantics
    if topology.exception_handling.continues:  # a chain calls a function on a whole column: no record to drop
        return None, "its processing exception handler continues: a record whose function throws is dropped at its node"
    if semantics.drops_idempotent_table_updates:
        return None, f"Kafka {semantics} drops idempotent table updates (KIP-557): a table step needs its old value"
    graph = topology.graph
    sub = stage.subtopologies[0]
    members = [node for node in graph.subtopologies()[sub]]
    streams = [node for node in members if node.op in ("stream", "repartition-source")]
    tables: dict[str, Node] = {}
    if not streams and all(node.op == "table" and not node.children for node in members):
        # tables nothing reads (yet): each update is stored, or dropped for a null key
        if any(node.params.get("history_retention_ms") is not None for node in members):
            return None, "it holds a versioned table"
        plan = Chain(sub, (), {node.topic: node for node in members})
        return plan, f"tables only: {', '.join(node.name for node in members)}"
    if len(streams) != 1:
        return None, f"it reads {len(streams)} streams (a chain reads one)"
    chain = [streams[0]]
    node = streams[0]
    while node.op not in ("to", "repartition-sink"):
        if len(node.children) != 1:
            return None, f"{node.name} forwards to {len(node.children)} nodes (a chain forwards to one)"
        node = node.children[0][0]
        if node.op in ("to", "repartition-sink"):
            if node.params.get("carries_old"):
                return None, f"{node.name} writes a table's changes"
        elif node.op not in CHAIN_OPS:
            return None, f"{node.name} ({node.op}) is not a chain's node: {', '.join(CHAIN_OPS)}"
        elif node.op == "stream-table":
            table = node.params["table"]
            if node.params["variant"] not in ("inner", "left") or node.params.get("grace_ms") is not None:
                return None, f"{node.name} has a grace period"
            if getattr(node.params["joiner"], "keys", 0):
                return None, f"{node.name}'s joiner sees the key (a ValueJoinerWithKey)"
            if table.op != "table" or table.params.get("history_retention_ms") is not None:
                return None, f"{node.name} reads {table.name}, a {'versioned ' if table.op == 'table' else ''}" + (
                    "table" if table.op == "table" else table.op
                )
            if table.children:
                return None, f"table {table.name} forwards its changes to {table.children[0][0].name}"
            tables[table.topic] = table
        chain.append(node)
    if node.children:
        return None, f"{node.name} forwards to {node.children[0][0].name}"  # pragma: no cover - sinks do not
    if len(chain) + len(set(tables.values())) != len(members):
        rest = sorted({n.name for n in members} - {n.name for n in chain} - {t.name for t in tables.values()})
        return None, f"it holds nodes off the chain ({', '.join(rest)})"
    plan = Chain(sub, tuple(chain), tables)
    joins = sum(1 for n in chain if n.op == "stream-table")
    what = f"{joins} stream-table join(s)" if joins else "stateless"
    return plan, f"a chain ({what}): {plan.describe()}"


def processing_order(heads: list[np.ndarray]) -> np.ndarray:
    """The order a task takes the records of its partitions (``heads``: each partition's timestamps in offset
    order, in the order the partitions were added): indices into their concatenation. Kafka's ``PartitionGroup``:
    the partition whose head has the lowest timestamp goes first, ties as ``java.util.PriorityQueue``'s binary heap
    leaves them (:class:`~kjoin.ordering.PartitionGroup`, replayed here over partitions)."""
    starts = np.cumsum([0] + [len(ts) for ts in heads])
    if len(heads) == 1:
        return np.arange(starts[-1])
    series = [ts.tolist() for ts in heads]
    at = [0] * len(heads)
    heap: list[int] = []  # partition numbers; the key of one is its head's timestamp

    def offer(queue: int) -> None:  # siftUpUsingComparator
        heap.append(queue)
        k = len(heap) - 1
        key = series[queue][at[queue]]
        while k > 0:
            parent = (k - 1) >> 1
            other = heap[parent]
            if key >= series[other][at[other]]:
                break
            heap[k] = other
            k = parent
        heap[k] = queue

    def poll() -> int:  # siftDownUsingComparator
        result = heap[0]
        last = heap.pop()
        n = len(heap)
        if n:
            k, key, half = 0, series[last][at[last]], n >> 1
            while k < half:
                child = 2 * k + 1
                right = child + 1
                if right < n and series[heap[child]][at[heap[child]]] > series[heap[right]][at[heap[right]]]:
                    child = right
                if key <= series[heap[child]][at[heap[child]]]:
                    break
                heap[k] = heap[child]
                k = child
            heap[k] = last
        return result

    for queue in range(len(heads)):
        if series[queue]:
            offer(queue)
    order: list[int] = []
    lengths = [len(ts) for ts in series]
    while heap:
        queue = poll()
        ts, first, end = series[queue], int(starts[queue]), lengths[queue]
        place = at[queue]
        order.append(first + place)
        place += 1
        at[queue] = place
        if place == end:
            continue
        if not heap:  # the last partition with records: the rest in order
            order.extend(range(first + place, first + end))
            at[queue] = end
        elif ts[place] < series[heap[0]][at[heap[0]]]:
            # ahead of every other head: polled again. One cycle (offer, poll) as the queue does it; when that leaves
            # the others' heap as it was, every further cycle does too while the partition stays ahead of them
            others = heap[:]
            offer(queue)
            poll()
            order.append(first + place)
            place += 1
            if heap == others:
                bound = series[heap[0]][at[heap[0]]]
                while place < end and ts[place] < bound:
                    order.append(first + place)
                    place += 1
            at[queue] = place
            if place < end:
                offer(queue)
        else:
            offer(queue)
    return np.array(order, dtype=np.int64)


def as_of(
    update_places: np.ndarray, update_keys: list[Any], update_values: list[Any], places: np.ndarray, keys: list[Any]
) -> tuple[np.ndarray, list[Any]]:
    """For each lookup (its place in processing order and its key), the value of the latest table update taken
    before it with that key: ``(found, values)``; a null update deletes the key (not found). One stable sort by
    (key, place) and a running maximum: an update's index carried forward within its key."""
    total = len(update_keys) + len(keys)
    if not len(keys):
        return np.zeros(0, dtype=bool), []
    codes, _ = pd.factorize(pd.Series(update_keys + keys, dtype=object), use_na_sentinel=False)
    place = np.concatenate([update_places, places])
    is_update = np.zeros(total, dtype=bool)
    is_update[: len(update_keys)] = True
    order = np.lexsort((place, codes))
    indices = np.arange(total)
    latest = np.maximum.accumulate(np.where(is_update[order], indices, -1))
    sorted_codes = codes[order]
    first = np.maximum.accumulate(np.where(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]], indices, 0))
    valid = latest >= first
    update_of = np.full(total, -1)
    update_of[order] = np.where(valid, order[np.maximum(latest, 0)], -1)
    looked = update_of[len(update_keys) :]
    values = [None if u < 0 else update_values[u] for u in looked.tolist()]
    found = np.array([v is not None for v in values], dtype=bool)
    return found, values


def _decoded_columns(table: pa.Table, decoding: Decoding) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """The keys and values of a records table (as :func:`~kjoin.spark.passes.stage_task.decode_records` reads
    them), and both as the trace shows them (:func:`~kjoin.spark.passes.stage_task.shown`), as four lists. A
    written record's texts came with it (its writer's row showed them); an input key's text is the key shown, and so
    is an input value's unless it is JSON (then only a JSON string shows as itself). A task that reads one input
    topic (a re-key's) decodes it a column at a time (:func:`_decoded_inputs`)."""
    topics = table.column("topic")
    if (
        table.num_rows
        and table.column("payload").null_count == table.num_rows
        and pc.count_distinct(topics).as_py() == 1
    ):
        shown_keys = table.column("key_text").to_pylist()
        keys, values, shown_values = _decoded_inputs(
            shown_keys, table.column("value_text").to_pylist(), decoding[topics[0].as_py()]
        )
        return keys, values, shown_keys, shown_values
    keys: list[Any] = []
    values: list[Any] = []
    shown_values: list[Any] = []
    shown_keys = table.column("key_text").to_pylist()
    loads, unpickle = load_json, load_payload
    for topic, key_text, value_text, payload in zip(
        table.column("topic").to_pylist(), shown_keys, table.column("value_text").to_pylist(),
        table.column("payload").to_pylist(),
    ):  # fmt: skip
        if payload is not None:
            key, value, _, _ = unpickle(payload)
            shown_value = value_text
        else:
            long_keys, kind = decoding[topic]
            key = None if key_text is None else (int(key_text) if long_keys else key_text)
            shown_value = value_text
            if value_text is None:
                value = None
            elif kind == "json":
                value = loads(value_text)
                if type(value) is not str:
                    shown_value = shown(value)
                else:
                    shown_value = value
            elif kind == "long":
                value = int(value_text)
            elif kind == "double":
                value = float(value_text)
                shown_value = shown(value)
            else:
                value = value_text
        keys.append(key)
        values.append(value)
        shown_values.append(shown_value)
    return keys, values, shown_keys, shown_values


def _decoded_inputs(key_texts: list[Any], texts: list[Any], decoding: tuple[bool, str]) -> tuple[list[Any], ...]:
    """One input topic's keys, values and values as shown, from their texts."""
    long_keys, kind = decoding
    keys = [None if text is None else int(text) for text in key_texts] if long_keys else key_texts
    if kind == "json":
        loads, render = load_json, render_value
        values = [None if text is None else loads(text) for text in texts]
        return keys, values, [value if value is None or type(value) is str else render(value) for value in values]
    if kind == "long":
        return keys, [None if text is None else int(text) for text in texts], texts
    if kind == "double":
        values = [None if text is None else float(text) for text in texts]
        return keys, values, [shown(value) for value in values]
    return keys, texts, texts


def _partitioner(topic: Any) -> Callable[[list[Any]], Any]:
    """The partitions of a list of keys written to ``topic``: its partitioner's, or Kafka's default (murmur2 of the
    key's bytes) for the distinct keys at once (:func:`kjoin.partitioner.default_partitions`)."""
    if topic.partitioner is not None:
        return lambda keys: [topic.partition_of(key) for key in keys]
    return lambda keys: default_partitions(keys, topic.partitions)


def chain_stage_function(
    topology: Any,
    stage: int,
    chain: Chain,
    decoding: Decoding,
    bases: Bases | None = None,
    texts: bool = False,
    json_payloads: bool = False,
) -> Callable[[pa.Table], pa.Table]:
    """The function of one Kafka task of a chain stage (:func:`per_task` makes it ``mapInArrow``'s): its records
    in (:data:`RECORD_SCHEMA`'s columns and ``_sub``), its step and write rows out
    (:data:`~kjoin.spark.passes.stage_task.ROW_SCHEMA`), the rows the processors' pass
    (:func:`~kjoin.spark.passes.stage_task.stage_function`) gives. Arrow both ways: pandas frames in and out cost
    a quarter of the pass's Python CPU (building a frame of object columns from lists, then converting them back),
    for nothing the pass uses. ``texts``: the chain needs its values only as shown, and runs as arrays
    (:mod:`kjoin.spark.passes.stage_texts`).
    ``json_payloads``: the chain writes its input values unchanged under text keys (a declarative re-key,
    :func:`~kjoin.spark.passes.stage_expressions.declarative_plan`), so a written record carries its key and the
    value's own text (:data:`~kjoin.spark.passes.stage_task.JSON_PAYLOAD`) instead of a pickle of the decoded
    value."""
    rank = [name for name in topology.graph.topics]
    sink = chain.nodes[-1] if chain.nodes else None
    partitions_of = (lambda keys: [0] * len(keys)) if sink is None else _partitioner(topology.graph.topics[sink.topic])
    sink_read = sink is not None and sink.topic in read_back(topology)
    if texts:
        partitions = text_partitions(topology.graph.topics[sink.topic])

    def run_group(table: pa.Table) -> pa.Table:
        collecting = gc.isenabled()
        gc.disable()  # a task's decoded values are millions of young objects and no cycles: the collector's passes
        try:  # over them cost 10-20% of the pass at 200,000 records a task
            return run_task(table)
        except Exception as error:
            _raise_processing_error(topology, table, decoding, bases, error)
            raise
        finally:
            if collecting:
                gc.enable()

    def run_task(table: pa.Table) -> pa.Table:
        types = _row_types(table.schema.field("key_text").type, table.schema.field("payload").type)
        if table.num_rows == 0:
            return pa.table({name: pa.array([], type) for name, type in types.items()})
        sub, part = table.column("_sub")[0].as_py(), table.column("partition")[0].as_py()
        table = _in_processing_order(_numbered(table, bases), rank)
        if texts:  # as arrays: stage_texts
            shown_values = shown_texts(table, decoding)
            fate, reason, node, names, places, keys, values, parts, payloads, drops = texts_rows(
                topology, chain, table, shown_values, partitions, sink_read
            )
            if payloads is None:
                payloads = pa.nulls(len(places), types["payload"])
            return _assemble(
                f"{sub}_{part}", stage, sub, part, table, types, sink.topic, places,
                (table.column("key_text").combine_chunks(), keys), (shown_values, values), parts, payloads,
                coded(fate, FATES, types["fate"]), coded(reason, REASONS, types["reason"]),
                coded(node, names, types["nodes"]), drops,
            )  # fmt: skip
        taken = _decoded_columns(table, decoding)
        walk = _Walk(topology, chain, table.column("topic").to_numpy(zero_copy_only=False), taken[0], taken[1])
        walk.run()
        return _rows(f"{sub}_{part}", stage, sub, part, table, taken, walk, None if sink is None else sink.topic,
                     partitions_of, types, json_payloads, sink_read)  # fmt: skip

    return run_group


def _raise_processing_error(
    topology: Any, table: pa.Table, decoding: Decoding, bases: Bases | None, error: Exception
) -> None:
    """A chain pass that failed (a user function raised, or returned what the pass cannot carry) runs its task's
    records again through the reference processors, which raise kjoin's
    :class:`~kjoin.topology.runtime.ProcessingError` naming the node, the function and the record; the pass calls the
    user's functions on whole columns and knows no record. Returns when the processors do not fail (the caller
    raises ``error``)."""
    if table.num_rows == 0:
        return
    sub = table.column("_sub")[0].as_py()
    records = decode_records(table.to_pandas(), decoding, bases)
    for _ in stage_steps(topology, records, [sub]):
        pass


OUT_ROWS = 100_000
"""Rows per Arrow batch a task's rows go back to Spark in (a task's rows built as one table would otherwise go as one
batch: at 10^7 records a batch of 5 million rows, which the JVM holds whole while it reads it)."""


def per_task(
    function: Callable[[pa.Table], pa.Table],
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``function`` (one Kafka task's records in, its rows out) as a ``mapInArrow`` function over a Spark partition
    that holds whole Kafka tasks (:func:`kjoin.spark.placement.by_partition`): one task each when there are as many
    Spark partitions, several otherwise. Their records arrive in no order (the function orders them), so Spark need
    not sort them by task as ``applyInArrow`` does."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        hold_freed_memory()  # a task's arrays are large: their pages kept for the next ones (passes/memory.py)
        batches = list(batches)
        if not batches:
            return
        table = pa.Table.from_batches(batches)
        del batches
        if not table.num_rows:
            return
        task = table.column("_sub").to_numpy().astype(np.int64) << 32 | table.column("partition").to_numpy()
        if (task == task[0]).all():
            yield from function(table).to_batches(OUT_ROWS)
            return
        order = np.argsort(task, kind="stable")
        starts = np.flatnonzero(np.r_[True, task[order][1:] != task[order][:-1]])
        for start, end in zip(starts.tolist(), np.r_[starts[1:], len(order)].tolist()):
            yield from function(table.take(order[start:end])).to_batches(OUT_ROWS)

    return run


RECORD_SCHEMA = pa.schema(
    [("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()), ("ts", pa.int64()),
     ("key_text", pa.string()), ("value_text", pa.string()), ("payload", pa.binary())]
    + [(name, pa.int32() if kind == "int" else pa.int64()) for name, kind in WRITE_ORDER_TYPES.items()]
)  # fmt: skip
"""The columns of a stage's records as Arrow types (:data:`kjoin.spark.topology_run.RECORD_COLUMNS`); Spark may send the
texts and payloads as their large types (``spark.sql.execution.arrow.useLargeVarTypes``)."""


def _numbered(table: pa.Table, bases: Bases | None) -> pa.Table:
    """A task's records with the offsets of those an earlier stage wrote (:func:`written_offsets`: their rank in the
    order written, which they carry in the :data:`WRITE_ORDER` columns)."""
    if "stage" not in table.column_names:
        return table
    written = np.flatnonzero(pc.is_valid(table.column("stage")).to_numpy(zero_copy_only=False))
    if not len(written):
        return table
    rows = table.select(["topic", "partition", *WRITE_ORDER]).take(written)
    numbers = written_offsets(rows.column("topic").to_numpy(zero_copy_only=False), rows.column("partition").to_numpy(),
                              [rows.column(name).to_numpy() for name in WRITE_ORDER], bases)  # fmt: skip
    offsets = pc.fill_null(table.column("offset"), 0).to_numpy().astype(np.int64)
    offsets[written] = numbers
    return table.set_column(table.column_names.index("offset"), "offset", pa.array(offsets, pa.int64()))


def _row_types(text: pa.DataType, binary: pa.DataType) -> dict[str, pa.DataType]:
    """:data:`~kjoin.spark.passes.stage_task.ROW_SCHEMA` as Arrow types, its texts and payloads of the types the
    records came in (Spark checks the result's types against the ones it expects, without casting)."""
    kinds = {"string": text, "binary": binary, "int": pa.int32(), "long": pa.int64()}
    return {name: kinds[kind] for name, kind in (column.split() for column in ROW_SCHEMA.split(", "))}


def _in_processing_order(table: pa.Table, rank: list[str]) -> pa.Table:
    """A task's records as it takes them: added to its partition group topic by topic as the topology declares
    them (``rank``), each partition in offset order (a task reads one partition of each topic), then
    :func:`processing_order`."""
    ranks = pc.index_in(table.column("topic"), value_set=pa.array(rank, table.schema.field("topic").type))
    added = np.lexsort((table.column("offset").to_numpy(), ranks.to_numpy(zero_copy_only=False)))
    ranked = ranks.to_numpy(zero_copy_only=False)[added]
    ts = table.column("ts").to_numpy()[added]
    bounds = np.r_[np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]]), len(ranked)]
    order = processing_order([ts[bounds[i] : bounds[i + 1]] for i in range(len(bounds) - 1)])
    return table.take(added[order])


class _Walk:
    """A chain over one task's records in processing order: each record's fate, reason, the nodes it passed and
    what it wrote. The tables' updates first (stored, or dropped for a null key), then the stream records node by
    node: ``alive`` (their places) with their current keys and values, fewer after each node that drops some."""

    def __init__(self, topology: Any, chain: Chain, topics: np.ndarray, keys: list[Any], values: list[Any]) -> None:
        self.semantics = topology.semantics
        self.chain = chain
        names = [node.name for node in chain.nodes]
        self.passed = [" → ".join(names[: end + 1]) for end in range(len(names))]
        count = len(keys)
        self.fates: list[Any] = [None] * count
        self.reasons: list[Any] = [None] * count
        self.nodes: list[Any] = [None] * count
        self.dropped: list[Any] = [None] * count
        """Per record, the node that dropped it and why (``real-orders: filtered``), also after a join emitted it."""
        self.writes: dict[int, tuple[Any, Any]] = {}
        self.joined: set[int] = set()
        self.updates: dict[str, tuple[np.ndarray, list[Any], list[Any]]] = {}
        for topic, table in chain.tables.items():
            self.updates[topic] = self._take_table(table.name, np.flatnonzero(topics == topic).tolist(), keys, values)
        self.alive = np.flatnonzero(topics == chain.nodes[0].topic).tolist() if chain.nodes else []
        self.keys = [keys[p] for p in self.alive]
        self.values = [values[p] for p in self.alive]

    def _take_table(
        self, name: str, places: list[int], keys: list[Any], values: list[Any]
    ) -> tuple[np.ndarray, list[Any], list[Any]]:
        """A table's updates: their fates, and the stored ones (places, keys, values) for the joins' lookups."""
        kept = []
        for place in places:
            self.nodes[place] = name
            if keys[place] is None:
                self.fates[place], self.reasons[place] = _DROPPED, Reason.NULL_KEY.value
                self.dropped[place] = f"{name}: {Reason.NULL_KEY.value}"
            else:
                self.fates[place], self.reasons[place] = _STORED, Reason.TABLE_UPDATE.value
                kept.append(place)
        return np.array(kept, dtype=np.int64), [keys[p] for p in kept], [values[p] for p in kept]

    def end(self, place: int, at: int, fate: Fate, reason: Reason) -> None:
        """The record at ``place`` goes no further than node ``at``; a record a join emitted has joined."""
        self.nodes[place] = self.passed[at]
        if fate is Fate.DROPPED:
            self.dropped[place] = f"{self.chain.nodes[at].name}: {reason._value_}"
        if place in self.joined:
            self.fates[place], self.reasons[place] = _JOINED, None
        else:
            self.fates[place], self.reasons[place] = fate._value_, reason._value_  # value is a slow property

    def keep(self, kept: list[int], values: list[Any] | None = None) -> None:
        """Only the stream records at indices ``kept`` of :attr:`alive` go on (with new ``values``, if given)."""
        self.alive = [self.alive[i] for i in kept]
        self.keys = [self.keys[i] for i in kept]
        self.values = [self.values[i] for i in kept] if values is None else values

    def run(self) -> None:
        for at, node in enumerate(self.chain.nodes[1:], start=1):
            op = node.op
            if op == "filter":
                fn = _plain(node.params["fn"])
                keep = [bool(fn(k, v)) for k, v in zip(self.keys, self.values)]
                for place, ok in zip(self.alive, keep):
                    if not ok:
                        self.end(place, at, Fate.DROPPED, Reason.FILTERED)
                self.keep([i for i, ok in enumerate(keep) if ok])
            elif op == "map_values":
                fn = _plain(node.params["fn"])
                self.values = [fn(v) for v in self.values]
            elif op == "select_key":
                fn = _plain(node.params["fn"])
                self.keys = [fn(k, v) for k, v in zip(self.keys, self.values)]
            elif op == "map":
                fn = _plain(node.params["fn"])
                pairs = [fn(k, v) for k, v in zip(self.keys, self.values)]
                self.keys, self.values = [pair[0] for pair in pairs], [as_written(pair[1]) for pair in pairs]
            elif op == "stream-table":
                self.join(at, node)
            else:
                self.sink(at, node)

    def join(self, at: int, node: Node) -> None:
        """A stream-table join: the skip rules (null key, KIP-962's left join of a null key, KIP-77's null value),
        the lookups as of each record's place, the joiner called (or an inner join's miss)."""
        left = node.params["variant"] == "left"
        joiner = _plain(node.params["joiner"])
        result: dict[int, Any] = {}
        kip77 = self.semantics.kip77
        looking: range | list[int]  # indices into alive
        if not any(k is None for k in self.keys) and not (kip77 and any(v is None for v in self.values)):
            looking = range(len(self.alive))  # nothing to skip: every record looks up its key
        else:
            looking = []
            for index, (place, k, v) in enumerate(zip(self.alive, self.keys, self.values)):
                if k is None:
                    if left and v is not None and self.semantics.relaxed_null_keys:
                        result[index] = joiner(v, None)
                    else:
                        self.end(place, at, Fate.DROPPED, Reason.NULL_KEY)
                elif v is None and kip77:
                    self.end(place, at, Fate.DROPPED, Reason.NULL_VALUE)
                else:
                    looking.append(index)
        alive, values = self.alive, self.values
        if isinstance(looking, range):
            places, keys = np.array(alive, dtype=np.int64), self.keys
        else:
            places, keys = np.array([alive[i] for i in looking], dtype=np.int64), [self.keys[i] for i in looking]
        found, partners = as_of(*self.updates[node.params["table"].topic], places, keys)
        kept: list[int] = []
        joined: list[Any] = []
        for index, hit, partner in zip(looking, found.tolist(), partners):
            if hit or left:
                kept.append(index)
                joined.append(joiner(values[index], partner))
            else:
                self.end(alive[index], at, Fate.NO_MATCH, Reason.NO_PARTNER)
        if result:  # a left join's null keys, joined without a lookup: in their places among the others
            result.update(zip(kept, joined))
            kept = sorted(result)
            joined = [result[i] for i in kept]
        self.keep(kept, joined)
        self.joined.update(self.alive)

    def sink(self, at: int, node: Node) -> None:
        """``to`` or a repartition topic: write each record (a null key is dropped before a repartition topic, unless
        a join below takes null keys, KIP-962)."""
        drops_null_keys = node.op == "repartition-sink" and not node.params.get("keeps_null_keys")
        for place, k, v in zip(self.alive, self.keys, self.values):
            if k is None and drops_null_keys:
                self.end(place, at, Fate.DROPPED, Reason.NULL_KEY_NOT_REPARTITIONED)
            else:
                self.nodes[place] = self.passed[at]
                self.fates[place] = _JOINED if place in self.joined else _FORWARDED
                self.writes[place] = (k, v)


def _plain(function: Any) -> Callable[..., Any]:
    """A topology's :class:`~kjoin.topology.functions.Function` as the function it calls (one call fewer per
    record), unless it checks what it returns (a user's Python function: a key or a value no serde could write is
    refused as the reference engine refuses it, :func:`_raise_processing_error` naming the record)."""
    if getattr(function, "check", None) is not None:
        return function  # type: ignore[no-any-return]
    return getattr(function, "call", function)


def _rows(
    task: str,
    stage: int,
    sub: int,
    part: int,
    table: pa.Table,
    taken: tuple[list[Any], list[Any], list[Any], list[Any]],
    walk: _Walk,
    sink_topic: str | None,
    partitions_of: Callable[[list[Any]], Any],
    types: Mapping[str, pa.DataType],
    json_payloads: bool = False,
    read_back: bool = True,
) -> pa.Table:
    """The step rows (in processing order) and the write rows, as the processors' pass gives them; ``taken``: the
    records' keys, values, and both as shown; ``read_back``: a later stage reads the sink's topic (else its records
    carry no payload: :func:`~kjoin.spark.passes.stage_task.read_back`)."""
    keys, values, shown_keys, shown_values = taken
    writes = walk.writes
    places = np.array(sorted(writes), dtype=np.int64)
    at = places.tolist()
    wkeys = [writes[p][0] for p in at]
    wvalues = [writes[p][1] for p in at]
    if sink_topic is None or not read_back:
        payloads: Any = pa.nulls(len(at), types["payload"])
    elif json_payloads:
        payloads = _json_payloads(wkeys, table.column("value_text").take(places), types["payload"])
    else:
        payloads = [pickle.dumps((k, v, None, False)) for k, v in zip(wkeys, wvalues)]
    return _assemble(
        task, stage, sub, part, table, types, sink_topic, places,
        (shown_keys, [shown_keys[p] if keys[p] is k else k if type(k) is str else shown(k) for p, k in zip(at, wkeys)]),
        (shown_values, [shown_values[p] if values[p] is v else v if type(v) is str else shown(v)
                        for p, v in zip(at, wvalues)]),
        partitions_of(wkeys), payloads, walk.fates, walk.reasons, walk.nodes, walk.dropped,
    )  # fmt: skip


def _assemble(
    task: str,
    stage: int,
    sub: int,
    part: int,
    table: pa.Table,
    types: Mapping[str, pa.DataType],
    sink_topic: str | None,
    places: np.ndarray,
    keys: tuple[Any, Any],
    values: tuple[Any, Any],
    partitions: Any,
    payloads: Any,
    fates: Any,
    reasons: Any,
    nodes: Any,
    dropped: Any,
) -> pa.Table:
    """A task's rows: one step row per record of ``table`` (in processing order), one write row per record at
    ``places`` that the sink wrote. ``keys`` and ``values``: the steps' and the writes' as shown (lists or Arrow
    arrays); ``partitions`` and ``payloads``: the writes'; ``fates``, ``reasons``, ``nodes``, ``dropped``: the
    steps'."""
    count = table.num_rows
    written = len(places)
    both = count + written
    ts = table.column("ts").to_numpy()
    running = np.maximum.accumulate(ts)
    columns: dict[str, Any] = {
        "kind": pa.array(["step", "write"], types["kind"]).take(np.repeat(np.array([0, 1], np.int8), [count, written])),
        "task": pa.array([task], types["task"]).take(np.zeros(both, np.int8)),
        "stage": np.full(both, stage, dtype=np.int32),
        "o_ts": np.concatenate([running, running[places]]),
        "o_sub": np.full(both, sub, dtype=np.int32),
        "o_part": np.full(both, part, dtype=np.int32),
        "seq": np.concatenate([np.arange(count, dtype=np.int64), places]),
        "wseq": pa.concat_arrays([pa.nulls(count, pa.int32()), pa.array(np.zeros(written, np.int32))]),
        "topic": pa.concat_arrays([table.column("topic").combine_chunks().cast(types["topic"]),
                                   pa.array([sink_topic], types["topic"]).take(np.zeros(written, np.int8))]),
        "partition": pa.concat_arrays([table.column("partition").combine_chunks().cast(pa.int32()),
                                       pa.array(partitions, pa.int32())]),
        "offset": pa.concat_arrays([table.column("offset").combine_chunks().cast(pa.int64()),
                                    pa.nulls(written, pa.int64())]),
        "ts": np.concatenate([ts, ts[places]]),
        "key": _joined(*keys, types["key"]),
        "value": _joined(*values, types["value"]),
        "payload": _joined(pa.nulls(count, types["payload"]), payloads, types["payload"]),
        "fate": _joined(fates, pa.nulls(written, types["fate"]), types["fate"]),
        "reason": _joined(reasons, pa.nulls(written, types["reason"]), types["reason"]),
        "nodes": _joined(nodes, pa.nulls(written, types["nodes"]), types["nodes"]),
        "dropped": _joined(dropped, pa.nulls(written, types["dropped"]), types["dropped"]),
    }  # fmt: skip
    return pa.table({name: _array(columns[name], type) for name, type in types.items()})


def _joined(first: Any, second: Any, type: pa.DataType) -> pa.Array:
    """Two parts of a column (lists or Arrow arrays) as one Arrow array of ``type``."""
    return pa.concat_arrays([_array(first, type), _array(second, type)])


def _json_payloads(keys: list[Any], texts: Any, type: pa.DataType) -> pa.Array:
    """Written records' payloads in their JSON form (:func:`~kjoin.spark.passes.stage_task.load_payload`): each
    text key (or null) and the value's own JSON text (``null`` for a null value), joined by Arrow at once."""
    key = pa.array(keys, pa.string())
    text = pc.fill_null(texts.combine_chunks().cast(pa.string()), "null")
    marker = JSON_PAYLOAD.decode()
    keyed = pc.binary_join_element_wise(marker, key, marker, text, "")
    unkeyed = pc.binary_join_element_wise(NULL_KEY_PAYLOAD.decode(), text, "")
    return pc.if_else(pc.is_null(key), unkeyed, keyed).cast(type)


def _array(column: Any, type: pa.DataType) -> pa.Array:
    """A result column (a list, a numpy array or an Arrow array) as an Arrow array of ``type``."""
    if isinstance(column, pa.Array):
        return column if column.type == type else column.cast(type)
    return pa.array(column, type)
