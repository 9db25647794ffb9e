"""A topology's declarative stages: a re-key by a field of a JSON value as Spark
expressions (``method="expressions"``), and the joins after it on their values as shown (``auto`` too), giving the
rows the chain pass (:mod:`kjoin.spark.passes.stage_chain`) gives.

Why: on the bench's app (orders re-keyed by their customer, joined with customers, left-joined with addresses) the
JVM side of a run is level with the joins one by one; the gap is the chain pass's Python (the user's functions
called per record, every JSON value decoded and shown again, the values pickled across the repartition topic),
which the joins one by one do not pay: ``run_join``'s vectorised pass treats the values as text. A function given as
a document (:mod:`kjoin.topology.functions`) says what it does, so Spark can do it; a Python function cannot be
looked into and stays in Python.

**Declarative** (:func:`declarative_plan` says why a stage is, or why not):

* a key selector ``{"field": path}`` (``select_key({"field": "customer"})``), the path's parts nameable in a
  ``VARIANT`` path (:func:`kjoin.spark.json_text.field_path`);
* over a stream read from an input topic of JSON values (``json_values=True``), not written by the topology;
* to a repartition topic partitioned by murmur2 (no custom partitioner); its null keys dropped, or written to
  partition 0 when a join below takes them (KIP-962, 3.7+).

That is the re-key stage of the bench's app and of the topology example (``orders.select_key(customerId)``, the field
as a document). Its task is one input partition, so its processing order is offset order and every row is a
window over the partition (the step's place ``seq``, the running maximum of the timestamps ``o_ts``) and
expressions per record: the value shown and the new key by ``kjoin.records``' rules
(:mod:`kjoin.spark.json_text`), the fate (forwarded, or dropped for a null key before the repartition topic), the
written record's partition (murmur2 of the key's UTF-8 bytes, 0 for a null key; a Python UDF over the keys, as
``run_join``'s inputs are partitioned) and its payload, the key and the value's own JSON text
(:data:`~kjoin.spark.passes.stage_task.JSON_PAYLOAD`: Spark cannot pickle; the next stage decodes the text to the
value the chain pass would have pickled). A record whose text is outside :func:`~kjoin.spark.json_text.exact`
(fractions, exponents, huge integers, characters outside ASCII, repeated field names, text that is not JSON) is
computed by the chain pass's own rules in Python (:func:`_python_rows`), a few records, in the same rows.

**Measured, and why ``auto`` does not run the re-key as expressions** (2026-11-27, ``bench --topology`` at 10^6,
2 cores at load 27-60): the re-key as expressions cost the run 21.4 s of CPU where the chain pass cost 14.8 s in
the same run. Spark's JSON is not cheap: over the bench's 800,000 orders, reading them cost 0.6 s of CPU, and on top
of that the window 2.2 s, ``try_parse_json`` + ``to_json`` 2.2 s, ``get_json_object`` alone 2.3 s, the value shown
and the key 4.9 s, :func:`~kjoin.spark.json_text.exact` 2.1 s, the murmur2 UDF over the keys 2.1 s (one run each,
noisy); the chain pass's whole re-key (decode, key, render, pickle) is about 2.2 s of Python. So ``auto`` runs the
re-key with the chain pass (writing each record's key and its value's own text instead of a pickle:
``chain_stage_function(json_payloads=True)``) and the joins after it on values as shown: 13.5 s against 14.3-15.5 s
for the chain pass alone, the joins one by one 9.7-9.9 s. Since then both stages run in Python on Arrow arrays, with
no Python call per record: the re-key by :mod:`kjoin.spark.passes.stage_rekey` (RE2 and Arrow kernels over the
texts, :mod:`kjoin.spark.json_arrow`; Python's rules for the few texts outside its grammar), the joins by
:mod:`kjoin.spark.passes.stage_texts`; at 10^6, 9.5 s of CPU against the joins one by one's 9.5 s
(docs/benchmarks.md).

**Falls back to the chain pass** (and to the processors where that does not fit): a Python function anywhere (a
``lambda`` key selector, a joiner, a value mapper, a filter), ``{"map": ...}`` and ``{"value": true}`` key
selectors, filters and value mappers of every kind, a custom partitioner, values decoded as text, longs or
doubles, a stream read from a repartition topic, and every stage with a join.

**The join stage after it** (:func:`shown_values_plan`): a chain that reads what a declarative stage wrote and
joins it with the default joiner only needs no decoded value: the default joiner renders both sides, and a value
renders as its text as shown, which the written record carries (and a table's JSON value is shown as decoded). The
chain pass runs it on those texts as Arrow arrays (:mod:`kjoin.spark.passes.stage_texts`: the lookups as of each
record's place, the joiner's text as ``pyarrow.compute`` concatenation, no Python call per record), its payloads not
read; only ``PartitionGroup``'s order over the task's partitions stays a replay in Python
(:func:`~kjoin.spark.passes.stage_chain.processing_order`).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any, Collection, Iterator, Mapping

from ...fates import Fate, Reason
from ...partitioner import default_partitions
from ...records import load_json
from ..json_text import FieldPathError, exact, field, field_path, parsed, shown
from .stage_task import JSON_PAYLOAD, NULL_KEY_PAYLOAD, ROW_SCHEMA, Decoding
from .stage_task import shown as shown_value
from .stage_chain import Chain

__all__ = ["Declarative", "declarative_plan", "expression_rows", "shown_values_plan"]


@dataclass(frozen=True)
class Declarative:
    """A declarative stage: its chain, the field its key selector reads, its sink's topic and partitions."""

    chain: Chain
    path: str
    sink_topic: str
    partitions: int
    keeps_null_keys: bool


def declarative_plan(
    topology: Any, chain: Chain, decoding: Decoding, written: Collection[str]
) -> tuple[Declarative | None, str]:
    """``chain`` (a chain stage, :func:`~kjoin.spark.passes.stage_chain.stage_plan`) as a declarative stage
    and why it is one, or ``None`` and why not (the chain pass runs it). ``written``: the topics the topology writes."""
    nodes = chain.nodes
    shape = " → ".join(node.op for node in nodes) or "tables only"
    if len(nodes) != 3 or nodes[1].op != "select_key" or chain.tables:
        return None, f"not a re-key of an input stream to a repartition topic ({shape})"
    source, selector, sink = nodes
    if source.op != "stream" or source.topic in written:
        return None, f"{source.name} reads {source.topic}, which the topology writes"
    if decoding.get(source.topic, (False, ""))[1] != "json":
        return None, f"{source.name} reads {source.topic}, whose values are not JSON (json_values=True)"
    spec = getattr(selector.params["fn"], "spec", None)
    if not (isinstance(spec, Mapping) and set(spec) == {"field"}):
        what = "a Python function" if spec is None else f"{spec!r:.60}"
        return None, f"{selector.name}'s key selector is {what}, not {{'field': path}}"
    try:
        field_path(spec["field"])
    except FieldPathError as error:
        return None, f"{selector.name}: {error}"
    if sink.op != "repartition-sink":
        return None, f"{sink.name} is not a repartition topic"
    topic = topology.graph.topics[sink.topic]
    if topic.partitioner is not None:
        return None, f"{sink.topic} has a custom partitioner"
    plan = Declarative(chain, spec["field"], sink.topic, topic.partitions, bool(sink.params.get("keeps_null_keys")))
    return plan, f"declarative: {source.topic}'s {spec['field']} as the key, to {sink.topic}"


def shown_values_plan(chain: Chain, decoding: Decoding, carried: Collection[str]) -> tuple[bool, str]:
    """Whether the chain pass may run ``chain`` on its values as shown instead of decoded (and why, or why not): the
    chain reads a repartition topic a declarative stage wrote (``carried``: its keys are text, its values came as
    the JSON text Python would show), joins it with tables of text keys by the default joiner only, and writes the
    result. The default joiner renders each side (:func:`kjoin.records.render_value`), and a value's rendering is
    the rendering of its text as shown, so the results, fates and rows are the same without decoding a value."""
    nodes = chain.nodes
    if not nodes or nodes[0].op != "repartition-source" or nodes[0].topic not in carried:
        return False, "it does not read a repartition topic a declarative stage wrote"
    joins = nodes[1:-1]
    if not joins or any(node.op != "stream-table" for node in joins):
        return False, "not stream-table joins only"
    for node in joins:
        if getattr(node.params["joiner"], "spec", None) != "concat":
            return False, f"{node.name}'s joiner is not the default one"
    for topic in chain.tables:
        long_keys, values = decoding.get(topic, (True, ""))
        if long_keys or values not in ("json", "string"):
            return False, f"table {topic}'s keys or values are not text or JSON"
    return True, f"values as shown (declarative joins): {chain.describe()}"


_DROPPED, _FORWARDED = Fate.DROPPED.value, Fate.FORWARDED.value
_NULL_KEY = Reason.NULL_KEY_NOT_REPARTITIONED.value
_COLUMNS = [column.split()[0] for column in ROW_SCHEMA.split(", ")]


def expression_rows(records: Any, stage: int, plan: Declarative) -> Any:
    """The step and write rows (:data:`~kjoin.spark.passes.stage_task.ROW_SCHEMA`) of a declarative stage over its
    records (``run_topology``'s: :data:`~kjoin.spark.topology_run.RECORD_COLUMNS` and ``_sub``), the chain pass's rows
    (the payloads in their JSON form)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from ..io.topic import default_partition_column
    from ..keep import kept

    nodes = " → ".join(node.name for node in plan.chain.nodes)
    drop = f"{plan.chain.nodes[-1].name}: {_NULL_KEY}"  # a null key's drop, at the repartition topic's sink
    in_partition = Window.partitionBy("partition").orderBy("offset")
    value = parsed(F.col("value_text"))
    base = kept(
        records.select(
            "_sub",
            "topic",
            "partition",
            "offset",
            "ts",
            "key_text",
            "value_text",
            (F.row_number().over(in_partition) - 1).cast("long").alias("seq"),
            F.max("ts").over(in_partition.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias("o_ts"),
            exact("value_text", value).alias("_exact"),
            shown(value).alias("_shown"),
            field(value, plan.path).alias("_key"),
        )  # fmt: skip
        # the written records' partitions, once (kept with the rest: every read of the rows would call it again)
        .withColumn("_part", default_partition_column(F.col("_key"), plan.partitions, "string"))
    )
    task = F.concat_ws("_", F.col("_sub").cast("string"), F.col("partition").cast("string"))
    order = [F.lit(stage).alias("stage"), "o_ts", F.col("_sub").alias("o_sub"), F.col("partition").alias("o_part"),
             "seq"]  # fmt: skip
    text, binary, integer = F.lit(None).cast("string"), F.lit(None).cast("binary"), F.lit(None).cast("int")
    dropped = F.col("_key").isNull() & F.lit(not plan.keeps_null_keys)
    done = base.where("_exact")
    steps = done.select(
        F.lit("step").alias("kind"), task.alias("task"), *order, integer.alias("wseq"), "topic", "partition",
        "offset", "ts", F.col("key_text").alias("key"), F.col("_shown").alias("value"), binary.alias("payload"),
        F.when(dropped, F.lit(_DROPPED)).otherwise(F.lit(_FORWARDED)).alias("fate"),
        F.when(dropped, F.lit(_NULL_KEY)).otherwise(text).alias("reason"), F.lit(nodes).alias("nodes"),
        F.when(dropped, F.lit(drop)).otherwise(text).alias("dropped"),
    )  # fmt: skip
    value_json = F.encode(F.coalesce("value_text", F.lit("null")), "utf-8")
    payload = F.when(F.col("_key").isNull(), F.concat(F.lit(NULL_KEY_PAYLOAD), value_json)).otherwise(
        F.concat(F.lit(JSON_PAYLOAD), F.encode("_key", "utf-8"), F.lit(JSON_PAYLOAD), value_json)
    )
    writes = done.where(~dropped).select(
        F.lit("write").alias("kind"), task.alias("task"), *order, F.lit(0).alias("wseq"),
        F.lit(plan.sink_topic).alias("topic"),
        F.col("_part").alias("partition"),
        F.lit(None).cast("long").alias("offset"), "ts", F.col("_key").alias("key"), F.col("_shown").alias("value"),
        payload.alias("payload"), text.alias("fate"), text.alias("reason"), text.alias("nodes"),
        text.alias("dropped"),
    )  # fmt: skip
    rest = base.where(~F.col("_exact")).mapInPandas(_python_rows(stage, plan, nodes), ROW_SCHEMA)
    return steps.unionByName(writes).unionByName(rest)


def _python_rows(stage: int, plan: Declarative, nodes: str) -> Any:
    """The rows of the records whose texts Spark's ``VARIANT`` would not show as Python does (few): the chain pass's
    rules (the key selector's own function), per record."""
    selector = plan.chain.nodes[1].params["fn"].call
    drop = f"{plan.chain.nodes[-1].name}: {_NULL_KEY}"

    def rows(frames: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        for frame in frames:
            out: list[tuple[Any, ...]] = []
            names = ("_sub", "topic", "partition", "offset", "ts", "key_text", "value_text", "seq", "o_ts")
            columns = [frame[name].tolist() for name in names]
            written: list[tuple[Any, ...]] = []
            for sub, topic, partition, offset, ts, key_text, text, seq, o_ts in zip(*columns):
                value = None if text is None else load_json(text)
                key = selector(None, value)
                order = (f"{sub}_{partition}", stage, o_ts, sub, partition, seq)
                dropped = key is None and not plan.keeps_null_keys
                fate, reason = (_DROPPED, _NULL_KEY) if dropped else (_FORWARDED, None)
                value_shown = value if type(value) is str else shown_value(value)
                out.append(("step", *order, None, topic, partition, offset, ts, key_text, value_shown, None, fate,
                            reason, nodes, drop if dropped else None))  # fmt: skip
                if not dropped:
                    written.append((order, ts, key, value, value_shown))
            parts = default_partitions([key for _, _, key, _, _ in written], plan.partitions)
            for (order, ts, key, value, value_shown), part in zip(written, list(parts)):
                out.append(("write", *order, 0, plan.sink_topic, int(part), None, ts, key, value_shown,
                            pickle.dumps((key, value, None, False)), None, None, None, None))  # fmt: skip
            yield pd.DataFrame(out, columns=_COLUMNS)

    return rows
