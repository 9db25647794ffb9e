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
   ``java.util.PriorityQueue`` leaves them (:class:`kjoin.topology.partition_group.JavaPriorityQueue`'s rules,
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
    leaves them (:class:`~kjoin.topology.partition_group.JavaPriorityQueue`, replayed here over partitions)."""
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
    graph = topology.graph
    semantics = topology.semantics
    rank = {name: number for number, name in enumerate(graph.topics)}
    names = [node.name for node in chain.nodes]
    passed = [" → ".join(names[: end + 1]) for end in range(len(names))]
    sink = chain.nodes[-1] if chain.nodes else None
    sink_name = None if sink is None else sink.topic
    partition_of = (lambda key: 0) if sink is None else _partitioner(graph.topics[sink.topic])
    drops_null_keys = sink is not None and sink.op == "repartition-sink" and not sink.params.get("keeps_null_keys")
    table_passed = {topic: node.name for topic, node in chain.tables.items()}

    def run_group(frame: pd.DataFrame) -> pd.DataFrame:
        if frame.empty:
            return pd.DataFrame({column: [] for column in _COLUMNS})
        sub, part = int(frame["_sub"].iloc[0]), int(frame["partition"].iloc[0])
        task = f"{sub}_{part}"
        topic_rank = frame["topic"].map(rank).to_numpy()
        added = np.lexsort((frame["offset"].to_numpy(), frame["partition"].to_numpy(), topic_rank))
        frame = frame.iloc[added].reset_index(drop=True)
        topics = frame["topic"].to_numpy()
        runs = np.flatnonzero(np.r_[True, topics[1:] != topics[:-1]])  # one partition per topic in a task
        ts_all = frame["ts"].to_numpy(dtype=np.int64)
        bounds = list(runs) + [len(frame)]
        order = processing_order([ts_all[bounds[i] : bounds[i + 1]] for i in range(len(runs))])
        frame = frame.iloc[order].reset_index(drop=True)
        keys, values, shown_keys, shown_values = _decoded_columns(frame, decoding)
        topics = frame["topic"].to_numpy()
        ts = frame["ts"].to_numpy(dtype=np.int64)
        count = len(frame)
        fates: list[Any] = [None] * count
        reasons: list[Any] = [None] * count
        nodes: list[Any] = [None] * count
        writes: dict[int, tuple[Any, Any]] = {}
        # the tables' updates: stored, or dropped for a null key; each table's updates as of their places
        updates: dict[str, tuple[np.ndarray, list[Any], list[Any]]] = {}
        for topic, name in table_passed.items():
            places = np.flatnonzero(topics == topic)
            kept = []
            for place in places.tolist():
                nodes[place] = name
                if keys[place] is None:
                    fates[place], reasons[place] = _DROPPED, Reason.NULL_KEY.value
                else:
                    fates[place], reasons[place] = _STORED, Reason.TABLE_UPDATE.value
                    kept.append(place)
            updates[topic] = (np.array(kept, dtype=np.int64), [keys[p] for p in kept], [values[p] for p in kept])
        # the stream records, node by node
        alive = np.flatnonzero(topics == chain.nodes[0].topic).tolist() if chain.nodes else []
        cur_keys = [keys[p] for p in alive]
        cur_values = [values[p] for p in alive]
        joined: set[int] = set()

        def end(place: int, at: int, fate: Fate, reason: Reason) -> None:
            nodes[place] = passed[at]
            fates[place] = _JOINED if place in joined else fate.value
            reasons[place] = None if place in joined else reason.value

        for at, node in enumerate(chain.nodes[1:], start=1):
            op = node.op
            if op == "filter":
                fn = node.params["fn"]
                keep = [bool(fn(k, v)) for k, v in zip(cur_keys, cur_values)]
                for place, ok in zip(alive, keep):
                    if not ok:
                        end(place, at, Fate.DROPPED, Reason.FILTERED)
                alive = [p for p, ok in zip(alive, keep) if ok]
                cur_keys = [k for k, ok in zip(cur_keys, keep) if ok]
                cur_values = [v for v, ok in zip(cur_values, keep) if ok]
            elif op == "map_values":
                fn = node.params["fn"]
                cur_values = [fn(v) for v in cur_values]
            elif op == "select_key":
                fn = node.params["fn"]
                cur_keys = [fn(k, v) for k, v in zip(cur_keys, cur_values)]
            elif op == "map":
                fn = node.params["fn"]
                pairs = [fn(k, v) for k, v in zip(cur_keys, cur_values)]
                cur_keys = [pair[0] for pair in pairs]
                cur_values = [pair[1] for pair in pairs]
            elif op == "stream-table":
                left = node.params["variant"] == "left"
                joiner = node.params["joiner"].call
                looking: list[int] = []  # indices into alive
                null_joins: list[int] = []
                for index, (place, k, v) in enumerate(zip(alive, cur_keys, cur_values)):
                    if k is None:
                        if left and v is not None and semantics.relaxed_null_keys:
                            null_joins.append(index)
                        else:
                            end(place, at, Fate.DROPPED, Reason.NULL_KEY)
                    elif v is None and semantics.kip77:
                        end(place, at, Fate.DROPPED, Reason.NULL_VALUE)
                    else:
                        looking.append(index)
                table_places, table_keys, table_values = updates[node.params["table"].topic]
                found, partners = as_of(
                    table_places,
                    table_keys,
                    table_values,
                    np.array([alive[i] for i in looking], dtype=np.int64),
                    [cur_keys[i] for i in looking],
                )
                result: dict[int, Any] = {i: joiner(cur_values[i], None) for i in null_joins}
                for index, hit, partner in zip(looking, found.tolist(), partners):
                    if hit or left:
                        result[index] = joiner(cur_values[index], partner)
                    else:
                        end(alive[index], at, Fate.NO_MATCH, Reason.NO_PARTNER)
                kept = sorted(result)
                alive = [alive[i] for i in kept]
                cur_keys = [cur_keys[i] for i in kept]
                cur_values = [result[i] for i in kept]
                joined.update(alive)
            else:  # the sink
                for place, k, v in zip(alive, cur_keys, cur_values):
                    if k is None and drops_null_keys:
                        end(place, at, Fate.DROPPED, Reason.NULL_KEY_NOT_REPARTITIONED)
                    else:
                        nodes[place] = passed[at]
                        fates[place] = _JOINED if place in joined else _FORWARDED
                        writes[place] = (k, v)
        return _rows(task, stage, sub, part, frame, ts, (keys, values, shown_keys, shown_values), fates, reasons,
                     nodes, writes, sink_name, partition_of)  # fmt: skip

    return run_group


def _rows(
    task: str,
    stage: int,
    sub: int,
    part: int,
    frame: pd.DataFrame,
    ts: np.ndarray,
    taken: tuple[list[Any], list[Any], list[Any], list[Any]],
    fates: list[Any],
    reasons: list[Any],
    nodes: list[Any],
    writes: Mapping[int, tuple[Any, Any]],
    sink_topic: str | None,
    partition_of: Callable[[Any], int],
) -> pd.DataFrame:
    """The step rows (in processing order) and the write rows, as the processors' pass gives them; ``taken``: the
    records' keys, values, and both as shown."""
    keys, values, shown_keys, shown_values = taken
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
        "fate": fates + [None] * written,
        "reason": reasons + [None] * written,
        "nodes": nodes + [None] * written,
    }
    return pd.DataFrame(columns)[_COLUMNS]
