"""A chain of default stream-table joins on its values as shown, as Arrow arrays: no Python call per record.

Which chains: those :func:`~kjoin.spark.passes.stage_expressions.shown_values_plan` accepts (a repartition topic a
declarative re-key wrote, text keys, stream-table joins with the default joiner, a sink): the default joiner renders
both sides (:func:`kjoin.joins.context.default_joiner`: ``render(left)-render(right)``), and a value's rendering is
its text as shown, so a join's result is the concatenation of two texts and no value is decoded. The chain pass
(:mod:`kjoin.spark.passes.stage_chain`) runs the same chains record by record in Python; this module gives its
rows as array work (``tests/test_spark_topology_expressions.py`` runs random declarative topologies both ways against
the reference engine: texts within and outside the rules, null keys and values, tables of JSON strings, objects and
numbers, a chain whose topic a later stage reads back):

1. the task's records in processing order (the chain pass's :func:`~.topology_vectorised._numbered` and
   :func:`~.topology_vectorised._in_processing_order`), their values as shown (:func:`shown_texts`);
2. the tables' updates: stored, or dropped for a null key;
3. per join, over the stream records still on their way: the skip rules (a null key, KIP-962's left join of a null
   key without a lookup, KIP-77's null value), the lookups as of each record's place (:func:`as_of_arrays`: one
   stable sort by (key id, place) and a running maximum, as
   :func:`~kjoin.spark.passes.stage_chain.as_of` does over lists), an inner join's miss, and the joiner's
   text (``pyarrow.compute`` concatenation);
4. the sink: each record written (a null key dropped before a repartition topic unless a join below takes it);
5. the rows: each record's fate, reason and the nodes it passed as codes into small tables, taken at once.

Measured outside Spark on one join task of ``benchmarks/bench_topology.py`` at 10^6 (257,738 records, the same rows):
the chain pass record by record 0.71 s of CPU, these arrays 0.26 s (of which the processing order's replay of
``PartitionGroup`` 0.09 s).
"""

from __future__ import annotations

import pickle
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...fates import Fate, Reason
from ...partitioner import murmur2_many
from ...records import load_json, render_value
from ..json_arrow import decoded as json_decoded
from .stage_task import Decoding

__all__ = ["texts_rows", "shown_texts", "as_of_arrays", "text_partitions", "coded", "FATES", "REASONS"]

FATES = [Fate.JOINED.value, Fate.FORWARDED.value, Fate.STORED.value, Fate.DROPPED.value, Fate.NO_MATCH.value]
_JOINED, _FORWARDED, _STORED, _DROPPED, _NO_MATCH = range(len(FATES))
REASONS = [
    Reason.TABLE_UPDATE.value, Reason.NULL_KEY.value, Reason.NULL_VALUE.value, Reason.NO_PARTNER.value,
    Reason.NULL_KEY_NOT_REPARTITIONED.value,
]  # fmt: skip
_TABLE_UPDATE, _NULL_KEY, _NULL_VALUE, _NO_PARTNER, _NOT_REPARTITIONED = range(len(REASONS))


def shown_texts(table: pa.Table, decoding: Decoding) -> pa.Array:
    """The records' values as shown (as the trace shows them): a written record's value text as it came (its writer
    showed it; its payload is not read, and ``run_topology`` does not send it), an input record's text decoded and
    shown where its topic's values are JSON (``"C5"`` shows as ``C5``, ``{"b":1, "a":2}`` as ``{"a":2,"b":1}``)."""
    texts = table.column("value_text").combine_chunks()
    json_topics = [topic for topic, (_, kind) in decoding.items() if kind == "json"]
    if not json_topics:
        return texts
    topic_type = table.schema.field("topic").type
    written = table.column("stage") if "stage" in table.column_names else table.column("payload")
    decoded = pc.and_(
        pc.is_null(written).combine_chunks(),  # an input record (a written one carries its place in the order written)
        pc.is_in(table.column("topic"), value_set=pa.array(json_topics, topic_type)).combine_chunks(),
    )
    at = np.flatnonzero(pc.and_(decoded, pc.is_valid(texts)).to_numpy(zero_copy_only=False))
    if not len(at):
        return texts
    arrays = json_decoded(texts.take(at))  # the texts of kjoin.spark.json_arrow's grammar; the others in Python
    shown = arrays.shown
    rest = np.flatnonzero(~arrays.exact)
    if len(rest):
        loads, render = load_json, render_value
        values = [loads(text) for text in texts.take(at[rest]).to_pylist()]
        python = [value if value is None or type(value) is str else render(value) for value in values]
        shown = _placed(pa.array(python, texts.type), rest, len(at), texts.type, shown)
    return _placed(shown, at, len(texts), texts.type, texts)


def as_of_arrays(
    update_places: np.ndarray, update_keys: pa.Array, update_values: pa.Array, places: np.ndarray, keys: pa.Array
) -> tuple[np.ndarray, pa.Array]:
    """For each lookup (its place in processing order and its key, not null), the value of the latest table update
    taken before it with that key (null when none, or when that update deleted the key): ``(found, values)``."""
    if not len(keys):
        return np.zeros(0, dtype=bool), pa.nulls(0, update_values.type)
    both = pa.concat_arrays([update_keys.cast(keys.type), keys])
    codes = both.dictionary_encode().indices.to_numpy(zero_copy_only=False)
    total = len(both)
    place = np.concatenate([update_places, places])
    updates = len(update_keys)
    order = np.lexsort((place, codes))
    indices = np.arange(total)
    is_update = order < updates
    latest = np.maximum.accumulate(np.where(is_update, indices, -1))
    sorted_codes = codes[order]
    first = np.maximum.accumulate(np.where(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]], indices, 0))
    update_of = np.full(total, -1)
    update_of[order] = np.where(latest >= first, order[np.maximum(latest, 0)], -1)
    looked = update_of[updates:]
    values = update_values.take(pa.array(looked, mask=looked < 0))
    return pc.is_valid(values).to_numpy(zero_copy_only=False), values


def texts_rows(
    topology: Any,
    chain: Any,
    table: pa.Table,
    shown: pa.Array,
    partitions_of: Callable[[pa.Array], Any],
    read_back: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], np.ndarray, pa.Array, pa.Array, Any, Any, np.ndarray]:
    """One task of ``chain`` over ``table`` (its records in processing order, ``shown`` their values as shown):
    each record's fate, reason and node codes (into :data:`FATES`, :data:`REASONS` and the returned node names), the
    places of the records written, their keys, values, partitions (``partitions_of`` the keys) and payloads (only
    when ``read_back``: a later stage reads the sink's topic; else ``None``), and each record's drop as text (``node:
    reason``, or ``None``: :attr:`kjoin.topology.trace.TopologyStep.dropped`)."""
    semantics = topology.semantics
    nodes = chain.nodes
    names = [node.name for node in nodes]
    passed = [" → ".join(names[: end + 1]) for end in range(len(names))]
    tables = {topic: node.name for topic, node in chain.tables.items()}
    node_names = passed + sorted(set(tables.values()))
    count = table.num_rows
    topics = table.column("topic").combine_chunks()
    keys = table.column("key_text").combine_chunks()
    fate = np.full(count, -1, dtype=np.int8)
    reason = np.full(count, -1, dtype=np.int8)
    node = np.full(count, -1, dtype=np.int16)
    drop = np.full(count, -1, dtype=np.int8)  # the reason a node dropped the record, also after a join emitted it
    null_key = pc.is_null(keys).to_numpy(zero_copy_only=False)

    # the tables' updates: stored (the joins look them up), or dropped for a null key
    updates: dict[str, tuple[np.ndarray, pa.Array, pa.Array]] = {}
    for topic, name in tables.items():
        mine = pc.equal(topics, pa.scalar(topic, topics.type)).to_numpy(zero_copy_only=False)
        node[mine] = node_names.index(name)
        dropped = mine & null_key
        fate[dropped], reason[dropped], drop[dropped] = _DROPPED, _NULL_KEY, _NULL_KEY
        stored = np.flatnonzero(mine & ~null_key)
        fate[stored], reason[stored] = _STORED, _TABLE_UPDATE
        updates[topic] = (stored, keys.take(stored), shown.take(stored))

    # the stream records on their way: their places, current keys and values
    alive = np.flatnonzero(pc.equal(topics, pa.scalar(nodes[0].topic, topics.type)).to_numpy(zero_copy_only=False))
    key, value = keys.take(alive), shown.take(alive)
    joined = np.zeros(count, dtype=bool)

    def end(places: np.ndarray, at: int, fate_code: int, reason_code: int) -> None:
        """These records go no further than node ``at``; one a join emitted has joined."""
        node[places] = at
        if fate_code == _DROPPED:
            drop[places] = reason_code
        emitted = joined[places]
        fate[places] = np.where(emitted, _JOINED, fate_code)
        reason[places] = np.where(emitted, -1, reason_code)

    for at, join in enumerate(nodes[1:-1], start=1):
        left = join.params["variant"] == "left"
        no_key = pc.is_null(key).to_numpy(zero_copy_only=False)
        no_value = pc.is_null(value).to_numpy(zero_copy_only=False)
        unlooked = no_key & ~no_value & (left and semantics.relaxed_null_keys)  # KIP-962: joined with null
        end(alive[no_key & ~unlooked], at, _DROPPED, _NULL_KEY)
        looking = ~no_key
        if semantics.kip77:
            end(alive[looking & no_value], at, _DROPPED, _NULL_VALUE)
            looking &= ~no_value
        look = np.flatnonzero(looking)
        found, partners = as_of_arrays(*updates[join.params["table"].topic], alive[look], key.take(look))
        if not left:
            end(alive[look[~found]], at, _NO_MATCH, _NO_PARTNER)
        kept = unlooked.copy()
        kept[look] = found | left
        partner = _placed(partners, look, len(alive), shown.type)
        text = pc.binary_join_element_wise(pc.fill_null(value, "null"), pc.fill_null(partner, "null"), "-")
        where = np.flatnonzero(kept)
        alive, key, value = alive[where], key.take(where), text.take(where)
        joined[alive] = True

    # the sink: each record written; a null key is dropped before a repartition topic unless a join below takes it
    sink, at = nodes[-1], len(nodes) - 1
    if sink.op == "repartition-sink" and not sink.params.get("keeps_null_keys"):
        no_key = pc.is_null(key).to_numpy(zero_copy_only=False)
        end(alive[no_key], at, _DROPPED, _NOT_REPARTITIONED)
        where = np.flatnonzero(~no_key)
        alive, key, value = alive[where], key.take(where), value.take(where)
    node[alive] = at
    fate[alive] = np.where(joined[alive], _JOINED, _FORWARDED)
    payloads = None
    if read_back:
        payloads = [pickle.dumps((k, v, None, False)) for k, v in zip(key.to_pylist(), value.to_pylist())]
    drops = np.full(count, None, dtype=object)
    for place in np.flatnonzero(drop >= 0).tolist():  # few: a drop's node is the last it reached
        drops[place] = f"{node_names[node[place]].rsplit(' → ', 1)[-1]}: {REASONS[drop[place]]}"
    return fate, reason, node, node_names, alive, key, value, partitions_of(key), payloads, drops


def text_partitions(topic: Any) -> Callable[[pa.Array], np.ndarray]:
    """The partitions of an Arrow array of text keys written to ``topic``: its partitioner's, or Kafka's default
    (murmur2 of each distinct key's UTF-8 bytes, 0 for a null key, as a topology writes it)."""
    if topic.partitioner is not None:
        return lambda keys: np.array([topic.partition_of(key) for key in keys.to_pylist()], dtype=np.int32)
    partitions = topic.partitions

    def default(keys: pa.Array) -> np.ndarray:
        chosen = np.zeros(len(keys), dtype=np.int32)
        if partitions == 1 or not len(keys):
            return chosen
        encoded = keys.dictionary_encode()
        hashes = murmur2_many([text.encode("utf-8") for text in encoded.dictionary.to_pylist()])
        parts = ((hashes.astype(np.int64) & 0x7FFFFFFF) % partitions).astype(np.int32)
        if not len(parts):  # every key null
            return chosen
        valid = pc.is_valid(encoded.indices).to_numpy(zero_copy_only=False)
        chosen[valid] = parts[pc.fill_null(encoded.indices, 0).to_numpy()[valid]]
        return chosen

    return default


def _placed(
    values: pa.Array, at: np.ndarray, size: int, type: pa.DataType, elsewhere: pa.Array | None = None
) -> pa.Array:
    """``values`` at positions ``at`` of an array of ``size``, ``elsewhere``'s values (or nulls) at the others."""
    index = np.full(size, -1, dtype=np.int64)
    index[at] = np.arange(len(at))
    placed = values.cast(type).take(pa.array(index, mask=index < 0))
    return placed if elsewhere is None else pc.if_else(pc.is_valid(pa.array(index, mask=index < 0)), placed, elsewhere)


def coded(codes: np.ndarray, names: list[str], type: pa.DataType) -> pa.Array:
    """Codes into ``names`` as a text array of ``type`` (``-1``: null)."""
    return pa.array(names, type).take(pa.array(codes.astype(np.int32), mask=codes < 0))
