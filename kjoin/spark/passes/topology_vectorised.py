"""A topology's stage on Spark without the processors: the stateless re-keys and the chains of stream-table joins.

Which stages: an acyclic stage whose one sub-topology is a *chain* (:func:`stage_plan` says why a stage is one, or
why not, and :func:`kjoin.spark.run_topology` runs the others with the processors,
:mod:`kjoin.spark.passes.topology_task`):

* one stream source (an input topic or a repartition topic), then nodes of one child each: ``filter``,
  ``map_values``, ``select_key``, ``map``, stream-table joins (inner or left, over a source table of the same
  sub-topology that is not versioned, without grace), ending in a sink (``to`` or a repartition topic);
* the tables those joins read, read by nothing else;
* a Kafka release that does not drop idempotent table updates (KIP-557, 2.6.0 to 2.7.0: a table step's fate
  would need its previous value).

How a task runs (one ``applyInPandas`` group, as the processors' pass):

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
   (:data:`~kjoin.spark.passes.topology_task.STEP_ORDER`) and payloads as the processors' pass, so everything
   downstream (offsets, the next stage, ``steps``, ``topics``, ``trace``, ``why``) is unchanged.
   ``tests/test_spark_topology_vectorised.py`` compares both passes' rows on random chains.
"""

from __future__ import annotations

import gc
import json
import pickle
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from ...fates import Fate, Reason
from ...topology.graph import Node
from ...topology.stages import Stage
from .topology_task import ROW_SCHEMA, Decoding, shown

__all__ = ["Chain", "stage_plan", "chain_stage_function", "as_of", "processing_order", "CHAIN_OPS"]

CHAIN_OPS = ("filter", "map_values", "select_key", "map", "stream-table")
"""The nodes a chain may hold between its stream source and its sink."""

_COLUMNS = [column.split()[0] for column in ROW_SCHEMA.split(", ")]
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
    order = np.empty(starts[-1], dtype=np.int64)
    lengths = [len(ts) for ts in series]
    for index in range(len(order)):
        queue = poll()
        order[index] = starts[queue] + at[queue]
        at[queue] += 1
        if at[queue] < lengths[queue]:
            offer(queue)
    return order


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


def _decoded_columns(frame: pd.DataFrame, decoding: Decoding) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """The keys and values of a records frame (as :func:`~kjoin.spark.passes.topology_task.decode_records` reads
    them), and both as the trace shows them (:func:`~kjoin.spark.passes.topology_task.shown`), as four lists. A
    written record's texts came with it (its writer's row showed them); an input key's text is the key shown, and so
    is an input value's unless it is JSON (then only a JSON string shows as itself)."""
    keys: list[Any] = []
    values: list[Any] = []
    shown_keys: list[Any] = []
    shown_values: list[Any] = []
    for topic, key_text, value_text, payload in zip(
        frame["topic"], frame["key_text"], frame["value_text"], frame["payload"]
    ):
        if payload is not None:
            key, value, _, _ = pickle.loads(payload)
            shown_value = value_text
        else:
            long_keys, kind = decoding[topic]
            key = None if key_text is None else (int(key_text) if long_keys else key_text)
            shown_value = value_text
            if value_text is None:
                value = None
            elif kind == "json":
                value = json.loads(value_text)
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
        shown_keys.append(key_text)
        shown_values.append(shown_value)
    return keys, values, shown_keys, shown_values


def _partitioner(topic: Any) -> Callable[[Any], int]:
    """``topic.partition_of``, remembered per key for Kafka's default partitioner (murmur2 of the key's bytes)."""
    if topic.partitioner is not None:
        return topic.partition_of
    chosen: dict[Any, int] = {}

    def partition_of(key: Any) -> int:
        try:
            return chosen[key]
        except KeyError:
            found = chosen[key] = topic.partition_of(key)
            return found
        except TypeError:  # an unhashable key
            return topic.partition_of(key)

    return partition_of


def chain_stage_function(
    topology: Any, stage: int, chain: Chain, decoding: Decoding
) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """The ``applyInPandas`` function of a chain stage: a task's records in, its step and write rows out, the rows
    the processors' pass (:func:`~kjoin.spark.passes.topology_task.stage_function`) gives."""
    rank = {name: number for number, name in enumerate(topology.graph.topics)}
    sink = chain.nodes[-1] if chain.nodes else None
    partition_of = (lambda key: 0) if sink is None else _partitioner(topology.graph.topics[sink.topic])

    def run_group(frame: pd.DataFrame) -> pd.DataFrame:
        if frame.empty:
            return pd.DataFrame({column: [] for column in _COLUMNS})
        collecting = gc.isenabled()
        gc.disable()  # a task's decoded values are millions of young objects and no cycles: the collector's passes
        try:  # over them grew faster than the task (3x the records took 5x the time, 3x without it)
            return run_task(frame)
        finally:
            if collecting:
                gc.enable()

    def run_task(frame: pd.DataFrame) -> pd.DataFrame:
        sub, part = int(frame["_sub"].iloc[0]), int(frame["partition"].iloc[0])
        frame = _in_processing_order(frame, rank)
        taken = _decoded_columns(frame, decoding)
        walk = _Walk(topology, chain, frame["topic"].to_numpy(), taken[0], taken[1])
        walk.run()
        return _rows(f"{sub}_{part}", stage, sub, part, frame, frame["ts"].to_numpy(dtype=np.int64), taken,
                     walk, None if sink is None else sink.topic, partition_of)  # fmt: skip

    return run_group


def _in_processing_order(frame: pd.DataFrame, rank: Mapping[str, int]) -> pd.DataFrame:
    """A task's records as it takes them: added to its partition group topic by topic as the topology declares
    them, each partition in offset order (a task reads one partition of each topic), then :func:`processing_order`."""
    added = np.lexsort((frame["offset"].to_numpy(), frame["topic"].map(rank).to_numpy()))
    frame = frame.iloc[added].reset_index(drop=True)
    topics = frame["topic"].to_numpy()
    ts = frame["ts"].to_numpy(dtype=np.int64)
    bounds = np.r_[np.flatnonzero(np.r_[True, topics[1:] != topics[:-1]]), len(frame)]
    order = processing_order([ts[bounds[i] : bounds[i + 1]] for i in range(len(bounds) - 1)])
    return frame.iloc[order].reset_index(drop=True)


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
            else:
                self.fates[place], self.reasons[place] = _STORED, Reason.TABLE_UPDATE.value
                kept.append(place)
        return np.array(kept, dtype=np.int64), [keys[p] for p in kept], [values[p] for p in kept]

    def end(self, place: int, at: int, fate: Fate, reason: Reason) -> None:
        """The record at ``place`` goes no further than node ``at``; a record a join emitted has joined."""
        self.nodes[place] = self.passed[at]
        self.fates[place] = _JOINED if place in self.joined else fate.value
        self.reasons[place] = None if place in self.joined else reason.value

    def keep(self, kept: list[int], values: list[Any] | None = None) -> None:
        """Only the stream records at indices ``kept`` of :attr:`alive` go on (with new ``values``, if given)."""
        self.alive = [self.alive[i] for i in kept]
        self.keys = [self.keys[i] for i in kept]
        self.values = [self.values[i] for i in kept] if values is None else values

    def run(self) -> None:
        for at, node in enumerate(self.chain.nodes[1:], start=1):
            op = node.op
            if op == "filter":
                fn = node.params["fn"]
                keep = [bool(fn(k, v)) for k, v in zip(self.keys, self.values)]
                for place, ok in zip(self.alive, keep):
                    if not ok:
                        self.end(place, at, Fate.DROPPED, Reason.FILTERED)
                self.keep([i for i, ok in enumerate(keep) if ok])
            elif op == "map_values":
                fn = node.params["fn"]
                self.values = [fn(v) for v in self.values]
            elif op == "select_key":
                fn = node.params["fn"]
                self.keys = [fn(k, v) for k, v in zip(self.keys, self.values)]
            elif op == "map":
                fn = node.params["fn"]
                pairs = [fn(k, v) for k, v in zip(self.keys, self.values)]
                self.keys, self.values = [pair[0] for pair in pairs], [pair[1] for pair in pairs]
            elif op == "stream-table":
                self.join(at, node)
            else:
                self.sink(at, node)

    def join(self, at: int, node: Node) -> None:
        """A stream-table join: the skip rules (null key, KIP-962's left join of a null key, KIP-77's null value),
        the lookups as of each record's place, the joiner called (or an inner join's miss)."""
        left = node.params["variant"] == "left"
        joiner = node.params["joiner"].call
        looking: list[int] = []  # indices into alive
        result: dict[int, Any] = {}
        for index, (place, k, v) in enumerate(zip(self.alive, self.keys, self.values)):
            if k is None:
                if left and v is not None and self.semantics.relaxed_null_keys:
                    result[index] = joiner(v, None)
                else:
                    self.end(place, at, Fate.DROPPED, Reason.NULL_KEY)
            elif v is None and self.semantics.kip77:
                self.end(place, at, Fate.DROPPED, Reason.NULL_VALUE)
            else:
                looking.append(index)
        places = np.array([self.alive[i] for i in looking], dtype=np.int64)
        found, partners = as_of(*self.updates[node.params["table"].topic], places, [self.keys[i] for i in looking])
        for index, hit, partner in zip(looking, found.tolist(), partners):
            if hit or left:
                result[index] = joiner(self.values[index], partner)
            else:
                self.end(self.alive[index], at, Fate.NO_MATCH, Reason.NO_PARTNER)
        kept = sorted(result)
        self.keep(kept, [result[i] for i in kept])
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


def _rows(
    task: str,
    stage: int,
    sub: int,
    part: int,
    frame: pd.DataFrame,
    ts: np.ndarray,
    taken: tuple[list[Any], list[Any], list[Any], list[Any]],
    walk: _Walk,
    sink_topic: str | None,
    partition_of: Callable[[Any], int],
) -> pd.DataFrame:
    """The step rows (in processing order) and the write rows, as the processors' pass gives them; ``taken``: the
    records' keys, values, and both as shown."""
    keys, values, shown_keys, shown_values = taken
    writes = walk.writes
    count = len(frame)
    running = np.maximum.accumulate(ts)
    places = np.array(sorted(writes), dtype=np.int64)
    written = len(places)
    wkeys = [writes[p][0] for p in places.tolist()]
    wvalues = [writes[p][1] for p in places.tolist()]
    nothing = [None] * count
    columns: dict[str, Any] = {
        "kind": ["step"] * count + ["write"] * written,
        "task": [task] * (count + written),
        "stage": np.full(count + written, stage, dtype=np.int32),
        "o_ts": np.concatenate([running, running[places]]),
        "o_sub": np.full(count + written, sub, dtype=np.int32),
        "o_part": np.full(count + written, part, dtype=np.int32),
        "seq": np.concatenate([np.arange(count, dtype=np.int64), places]),
        "wseq": nothing + [0] * written,
        "topic": frame["topic"].tolist() + [sink_topic] * written,
        "partition": frame["partition"].tolist() + [partition_of(k) for k in wkeys],
        "offset": frame["offset"].tolist() + [None] * written,
        "ts": np.concatenate([ts, ts[places]]),
        "key": shown_keys + [shown_keys[p] if keys[p] is k else shown(k) for p, k in zip(places.tolist(), wkeys)],
        "value": shown_values
        + [shown_values[p] if values[p] is v else shown(v) for p, v in zip(places.tolist(), wvalues)],
        "payload": nothing + [pickle.dumps((k, v, None, False)) for k, v in zip(wkeys, wvalues)],
        "fate": walk.fates + [None] * written,
        "reason": walk.reasons + [None] * written,
        "nodes": walk.nodes + [None] * written,
    }
    return pd.DataFrame(columns)[_COLUMNS]
