"""A declarative re-key stage on Arrow arrays (:mod:`kjoin.spark.passes.stage_rekey`), without Spark: on random
JSON texts within and outside :mod:`kjoin.spark.json_arrow`'s grammar (null values, null and missing fields, nested
and repeated fields, whitespace, escapes, fractions), its rows are the chain pass's (the Python rules: every column,
payloads decoded), and its steps and written records are the reference engine's. ``run_topology``'s ``auto`` runs it
on Spark (``tests/test_spark_topology_expressions.py`` compares that with the reference engine too)."""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import kjoin
from kjoin.records import load_json, render_value
from kjoin.spark.passes import stage_rekey
from kjoin.spark.passes.stage_task import WRITE_ORDER, load_payload
from kjoin.spark.passes.stage_chain import RECORD_SCHEMA, chain_stage_function, stage_plan
from kjoin.topology.runtime import run
from kjoin.topology.stages import stages_of, topic_readers

CUSTOMERS = ("c0", "c1", "c2", "c3")


def _order_text(rng: random.Random, path: str) -> str | None:
    """An order's value as text: mostly compact objects with sorted names (the grammar), now and then not."""
    roll = rng.random()
    if roll < 0.08:
        return None
    if roll < 0.14:
        return rng.choice(['"c1"', "7", "true", "null", "[1,2]", '"é"', "-0", "2.5"])
    customer = rng.choice([*CUSTOMERS, None, 7, -3, True, "", "é", 'a"b', {"n": 1}, 2.5, [1], 2**62])
    value: dict[str, Any] = {"c": customer, "v": rng.choice(["O1", 5, None, "ü", 1.5, "x,y}"])}
    if rng.random() < 0.1:
        del value["c"]
    if path == "a.c" and rng.random() < 0.7:
        value = {"a": value, "z": True}
    text = json.dumps(value, sort_keys=rng.random() < 0.85, ensure_ascii=rng.random() < 0.8,
                      separators=(",", ":") if rng.random() < 0.9 else None)  # fmt: skip
    if rng.random() < 0.05 and text.startswith('{"'):  # a repeated name: the last one counts
        text = '{"c":"c9",' + text[1:]
    return text


def _scenario(rng: random.Random, path: str, long_keys: bool) -> tuple[Any, list[dict[str, Any]], list[Any]]:
    """A re-key by ``path`` joined with a table (a left join now and then: KIP-962 keeps null keys then, from 3.7),
    its events, and the orders' texts (by event)."""
    b = kjoin.Topology(partitions=rng.randint(1, 4), semantics=rng.choice(["2.8", "3.6", "latest"]))
    customers = b.table("customers")
    rekeyed = b.stream("orders").select_key({"field": path}, name="by-c")
    (rekeyed.left_join if rng.random() < 0.5 else rekeyed.join)(customers, None, name="j").to("out")
    b.build()
    events, texts = [], []
    for _ in range(rng.randint(40, 120)):
        key: Any = None if rng.random() < 0.1 else (rng.randint(0, 5) if long_keys else rng.choice(CUSTOMERS))
        text = _order_text(rng, path)
        texts.append(text)
        value = None if text is None else load_json(text)
        events.append({"topic": "orders", "key": key, "value": value, "ts": rng.randint(0, 30)})
    return b, events, texts


def _records(topology: Any, events: list[dict[str, Any]], texts: list[Any], rng: random.Random) -> pa.Table:
    """The orders as the re-key stage's records (``run_topology``'s columns and ``_sub``), in no order."""
    from kjoin.topology.events import input_records

    records = input_records(topology.graph, events)
    rows = [(r.topic, r.partition, r.offset, r.ts, None if r.key is None else str(r.key), text, None)
            for r, text in zip(records, texts)]  # fmt: skip
    rng.shuffle(rows)
    columns = list(zip(*rows))
    names = ["topic", "partition", "offset", "ts", "key_text", "value_text", "payload"]
    data = {name: pa.array(column, RECORD_SCHEMA.field(name).type) for name, column in zip(names, columns)}
    data.update({name: pa.nulls(len(rows), RECORD_SCHEMA.field(name).type) for name in WRITE_ORDER})
    data["_sub"] = pa.array([topic_readers(topology.graph)["orders"]] * len(rows), pa.int32())
    return pa.table(data)


def _rekey_stage(topology: Any) -> Any:
    sub = topic_readers(topology.graph)["orders"]
    return next(stage for stage in stages_of(topology.graph) if sub in stage.subtopologies)


def _decoded_rows(table: pa.Table) -> list[dict[str, Any]]:
    rows = table.to_pylist()
    for row in rows:
        row["payload"] = None if row["payload"] is None else load_payload(row["payload"])
    return rows


SAMPLE = 8


@pytest.mark.parametrize("seed", range(SAMPLE))
def test_a_re_key_on_arrow_is_the_chain_pass_and_the_reference_engine(seed: int) -> None:
    rng = random.Random(seed)
    path = ["c", "c", "a.c"][seed % 3]
    long_keys = seed % 4 == 3
    topology, events, texts = _scenario(rng, path, long_keys)
    stage = _rekey_stage(topology)
    chain, _ = stage_plan(topology, stage)
    decoding = {"orders": (long_keys, "json"), "customers": (False, "json")}
    plan = stage_rekey.rekey_plan(topology, chain, decoding)
    assert plan is not None
    arrow = _arrays(topology, stage, chain, decoding, plan)
    python = chain_stage_function(topology, stage.number, chain, decoding, {}, json_payloads=False)  # the rules
    records = _records(topology, events, texts, rng)
    partition = records.column("partition").to_numpy()
    rows = []
    for part in sorted(set(partition.tolist())):
        task = records.take(np.flatnonzero(partition == part))
        for kind in (pa.string(), pa.large_string()):  # Spark may send the texts as large strings
            task = task.cast(pa.schema([f.with_type(kind) if f.type == pa.string() else f for f in task.schema]))
            found = arrow(task)
            assert found.schema == python(task).schema
            assert _decoded_rows(found) == _decoded_rows(python(task))
        rows.extend(found.to_pylist())

    trace = run(topology, events, schedule="stages")
    expected_steps = sorted(
        (s.task, s.record.partition, s.record.offset, s.fate.value, None if s.reason is None else s.reason.value,
         " → ".join(v.node for v in s.visits))
        for s in trace.steps if s.record.topic == "orders"
    )  # fmt: skip
    steps = sorted((r["task"], r["partition"], r["offset"], r["fate"], r["reason"], r["nodes"])
                   for r in rows if r["kind"] == "step")  # fmt: skip
    assert steps == expected_steps
    sink = chain.nodes[-1].topic
    written = sorted((r["partition"], r["o_ts"], r["o_sub"], r["o_part"], r["seq"], r["key"], r["value"], r["ts"])
                     for r in rows if r["kind"] == "write")  # fmt: skip
    expected_written = [
        (partition, None if r.key is None else r.key, None if r.value is None else render_value(r.value), r.ts)
        for partition, records in sorted(trace.topics[sink].items())
        for r in sorted(records, key=lambda r: r.offset)
    ]
    assert [(p, k, v, ts) for p, *_, k, v, ts in written] == expected_written
    assert any(not exact for exact in _exact(texts, path)), "no text outside the grammar"


def test_the_sample_reaches_null_keys_kept_and_dropped_and_one_to_four_partitions() -> None:
    built = [_scenario(random.Random(seed), "c", False)[0] for seed in range(SAMPLE)]
    sinks = [next(n for n in b.graph.nodes.values() if n.op == "repartition-sink") for b in built]
    assert {sink.params["keeps_null_keys"] for sink in sinks} == {True, False}
    assert {b.graph.topics[sink.topic].partitions for b, sink in zip(built, sinks)} == {1, 2, 3, 4}


def _arrays(topology: Any, stage: Any, chain: Any, decoding: Any, plan: Any) -> Any:
    """The re-key on Arrow arrays, as ``run_topology`` builds it (the chain pass for the tasks it does not take)."""
    chain_pass = chain_stage_function(topology, stage.number, chain, decoding, {}, json_payloads=True)
    return stage_rekey.rekey_stage_function(topology, stage.number, plan, decoding, {}, chain_pass)


def _exact(texts: list[Any], path: str) -> list[bool]:
    from kjoin.spark.json_arrow import decoded

    return decoded(pa.array(texts, pa.string()), path).exact.tolist()


def test_a_text_that_is_not_json_fails_as_in_the_chain_pass() -> None:
    rng = random.Random(1)
    topology, events, texts = _scenario(rng, "c", False)
    texts[3] = '{"c":"c1",'
    stage = _rekey_stage(topology)
    chain, _ = stage_plan(topology, stage)
    decoding = {"orders": (False, "json"), "customers": (False, "json")}
    records = _records(topology, events, texts, rng)
    plan = stage_rekey.rekey_plan(topology, chain, decoding)
    for function in (_arrays(topology, stage, chain, decoding, plan), chain_stage_function(
        topology, stage.number, chain, decoding, {}, json_payloads=False
    )):  # fmt: skip
        partition = records.column("partition").to_numpy()
        with pytest.raises(json.JSONDecodeError):
            for part in set(partition.tolist()):
                function(records.take(np.flatnonzero(partition == part)))
