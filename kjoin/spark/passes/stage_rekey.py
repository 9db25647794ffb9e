"""A declarative re-key stage's Kafka task on Arrow arrays: the chain pass's rows with no Python call per record.

Which stage: one the chain pass runs with ``json_payloads``
(:func:`~kjoin.spark.passes.stage_expressions.declarative_plan` chose it): an input stream of JSON values,
``select_key({"field": path})``, a repartition topic partitioned by murmur2 (:func:`rekey_plan` checks that shape
again; any other chain stays with the chain pass). Its task reads one input partition, so its processing order is
offset order, and each record's way is one of two: its new key is null and the repartition topic drops it (unless a
join below takes null keys, KIP-962), or it is written.

How: the values as shown and the new keys come from :func:`kjoin.spark.json_arrow.decoded` (RE2 and Arrow kernels
over the texts); the rows it does not mark exact (escapes, fractions, nesting, text that is not JSON: few) are
decoded by the chain pass's rules in Python (``load_json``, ``render_value``, the key selector's own function), in
processing order, so a text that is not JSON fails as it fails there. The fates, reasons and nodes are ``take``\\ s
from two-entry arrays, the written records' partitions Kafka's default (murmur2 of the distinct keys' UTF-8 bytes as
Arrow holds them, :func:`kjoin.partitioner.murmur2_packed`), their payloads the key and the value's own text
(:func:`~kjoin.spark.passes.stage_chain._json_payloads`). The rows are the chain pass's
(:func:`~kjoin.spark.passes.stage_chain._rows`), column by column: ``tests/test_spark_topology_rekey.py``
compares both on texts within and outside the grammar.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...fates import Fate, Reason
from ...partitioner import murmur2_packed
from ...records import load_json, render_value
from ..json_arrow import decoded
from .stage_task import Bases, Decoding
from .stage_chain import Chain, _assemble, _in_processing_order, _json_payloads, _numbered, _row_types

__all__ = ["Rekey", "rekey_plan", "rekey_stage_function"]


@dataclass(frozen=True)
class Rekey:
    """A re-key stage: its chain (stream, key selector, repartition sink), the selector's field path, and its sink's
    topic, partitions and whether it keeps null keys."""

    chain: Chain
    path: str
    sink_topic: str
    partitions: int
    keeps_null_keys: bool


def rekey_plan(topology: Any, chain: Chain, decoding: Decoding) -> Rekey | None:
    """``chain`` as a re-key stage this module runs, or ``None`` (the chain pass runs it)."""
    if len(chain.nodes) != 3 or chain.tables:
        return None
    source, selector, sink = chain.nodes
    if (source.op, selector.op, sink.op) != ("stream", "select_key", "repartition-sink"):
        return None
    if decoding.get(source.topic, (False, ""))[1] != "json":
        return None
    spec = getattr(selector.params["fn"], "spec", None)
    if not (isinstance(spec, dict) and set(spec) == {"field"} and isinstance(spec["field"], str)):
        return None
    topic = topology.graph.topics[sink.topic]
    if topic.partitioner is not None:
        return None
    return Rekey(chain, spec["field"], sink.topic, topic.partitions, bool(sink.params.get("keeps_null_keys")))


def rekey_stage_function(
    topology: Any,
    stage: int,
    plan: Rekey,
    decoding: Decoding,
    bases: Bases | None,
    chain_pass: Callable[[pa.Table], pa.Table],
) -> Callable[[pa.Table], pa.Table]:
    """The function of one Kafka task of the re-key stage ``plan`` (records in, rows out, as
    :func:`~kjoin.spark.passes.stage_chain.chain_stage_function`'s); ``chain_pass`` runs a task that is not
    one input topic's records (none is, in a stage ``declarative_plan`` chose) and an empty one."""
    rank = list(topology.graph.topics)
    source, selector, sink = plan.chain.nodes
    long_keys = decoding[source.topic][0]
    select = getattr(selector.params["fn"], "call", selector.params["fn"])
    passed = " → ".join(node.name for node in plan.chain.nodes)

    def run_task(table: pa.Table) -> pa.Table:
        if (
            not table.num_rows
            or table.column("payload").null_count != table.num_rows
            or pc.count_distinct(table.column("topic")).as_py() != 1
        ):
            return chain_pass(table)
        types = _row_types(table.schema.field("key_text").type, table.schema.field("payload").type)
        sub, part = table.column("_sub")[0].as_py(), table.column("partition")[0].as_py()
        table = _in_processing_order(_numbered(table, bases), rank)
        texts = table.column("value_text")
        values = decoded(texts, plan.path)
        shown, keys = values.shown.cast(pa.string()), values.key.cast(pa.string())
        inexact = np.flatnonzero(~values.exact)
        if len(inexact):
            shown, keys = _by_python(table, inexact, shown, keys, select, long_keys)
        return _rows(f"{sub}_{part}", stage, sub, part, table, shown, keys, plan, passed, types)

    return run_task


def _by_python(
    table: pa.Table, rows: np.ndarray, shown: pa.Array, keys: pa.Array, select: Callable[..., Any], long_keys: bool
) -> tuple[pa.Array, pa.Array]:
    """``shown`` and ``keys`` with the rows at ``rows`` (in processing order) computed by the chain pass's rules:
    the value decoded and shown (:func:`~kjoin.spark.passes.stage_chain._decoded_inputs`), the key selector
    called with the record's key and value."""
    old_keys = table.column("key_text").take(rows).to_pylist()
    new_shown: list[Any] = []
    new_keys: list[Any] = []
    for key_text, text in zip(old_keys, table.column("value_text").take(rows).to_pylist()):
        value = None if text is None else load_json(text)
        new_shown.append(value if value is None or type(value) is str else render_value(value))
        key = None if key_text is None else (int(key_text) if long_keys else key_text)
        new_keys.append(select(key, value))
    index = np.arange(len(shown))
    index[rows] = len(shown) + np.arange(len(rows))
    shown = pa.concat_arrays([shown, pa.array(new_shown, pa.string())]).take(index)
    keys = pa.concat_arrays([keys, pa.array(new_keys, pa.string())]).take(index)
    return shown, keys


def _partitions(keys: pa.Array, partitions: int) -> np.ndarray:
    """Kafka's default partition of each text key (:func:`kjoin.partitioner.default_partitions`: murmur2 of its
    UTF-8 bytes; 0 for a null key), each distinct key hashed once, from its bytes as Arrow holds them."""
    chosen = np.zeros(len(keys), dtype=np.int32)
    if partitions == 1 or not len(keys):
        return chosen
    encoded = pc.dictionary_encode(keys)
    distinct = encoded.dictionary.cast(pa.large_string())
    _, offsets, data = distinct.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int64)[distinct.offset : distinct.offset + len(distinct) + 1]
    hashes = murmur2_packed(np.frombuffer(data, dtype=np.uint8), offsets).astype(np.int64)
    of_distinct = ((hashes & 0x7FFFFFFF) % partitions).astype(np.int32)
    valid = pc.is_valid(encoded.indices).to_numpy(zero_copy_only=False)
    chosen[valid] = of_distinct[pc.drop_null(encoded.indices).to_numpy()]
    return chosen


_FATES = pa.array([Fate.FORWARDED.value, Fate.DROPPED.value], pa.string())
_REASONS = pa.array([None, Reason.NULL_KEY_NOT_REPARTITIONED.value], pa.string())


def _rows(
    task: str,
    stage: int,
    sub: int,
    part: int,
    table: pa.Table,
    shown: pa.Array,
    keys: pa.Array,
    plan: Rekey,
    passed: str,
    types: dict[str, pa.DataType],
) -> pa.Table:
    """The step rows (in processing order: forwarded, or dropped for a null key before the repartition topic) and
    the write rows (one per record forwarded), as the chain pass gives them."""
    count = table.num_rows
    dropped = pc.is_null(keys).to_numpy(zero_copy_only=False) & (not plan.keeps_null_keys)
    places = np.flatnonzero(~dropped)
    written_keys = keys.take(places)
    text = types["key"]
    return _assemble(
        task, stage, sub, part, table, types, plan.sink_topic, places,
        (table.column("key_text").combine_chunks().cast(text), written_keys.cast(text)),
        (shown.cast(text), shown.take(places).cast(text)),
        _partitions(written_keys, plan.partitions),
        _json_payloads(written_keys, table.column("value_text").take(places), types["payload"]),
        _FATES.take(dropped.view(np.int8)), _REASONS.take(dropped.view(np.int8)),
        pa.array([passed], pa.string()).take(np.zeros(count, np.int8)),
        pa.array([None, f"{passed.rsplit(' → ', 1)[-1]}: {_REASONS[1]}"], pa.string()).take(dropped.view(np.int8)),
    )  # fmt: skip
