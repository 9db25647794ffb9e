"""The chain pass of a topology on Spark (:mod:`kjoin.spark.passes.stage_chain`): the stages that
re-key or run chains of stream-table joins, without the processors.

* Without Spark (fast): random topologies of chains (:func:`tests.topology_spark_check.chain_scenario`) through
  both per-task functions, grouped and ranked as ``run_topology`` does (:func:`~tests.topology_spark_check.local_rows`):
  the chain pass forced, then the processors forced, each against the reference engine's ``stages`` schedule, and
  their rows against each other; its two halves (the processing order, the as-of lookup) against the reference's.
* On Spark: one random topology of chains with each method forced, and the course's app, whose ``steps``, ``trace``
  and ``why`` must be the processors'.

``make topology-spark-check`` runs more chains on Spark (its last line).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import kjoin
from kjoin.spark.passes.stage_chain import as_of, processing_order, stage_plan
from kjoin.ordering import PartitionGroup
from kjoin.topology.stages import stages_of
from kjoin.topology.trace import TopicRecord
from tests.topology_spark_check import chain_difference, chain_scenario, local_difference

SAMPLE = 12


@pytest.mark.parametrize("seed", range(SAMPLE))
def test_random_chains_agree_with_the_processors_and_the_reference_engine(seed):
    assert local_difference(chain_scenario(random.Random(seed))) is None


def test_the_processing_order_is_the_partition_groups():
    rng = random.Random(5)
    for draw in range(600):
        spread, most = (6, 8) if draw % 2 else (40, 30)  # ties, or runs of one partition ahead of the others
        heads = [
            np.array(sorted(rng.randint(0, spread) for _ in range(rng.randint(0, most))))
            for _ in range(rng.randint(1, 5))
        ]
        for ts in heads:  # out of order within a partition too
            if len(ts) > 2 and rng.random() < 0.5:
                ts[0], ts[-1] = ts[-1], ts[0]
        group = PartitionGroup()
        for number, ts in enumerate(heads):
            for offset, value in enumerate(ts.tolist()):
                group.add((f"t{number}", 0), [TopicRecord(f"t{number}", 0, offset, None, None, value)])
        starts = np.cumsum([0] + [len(ts) for ts in heads])
        expected = []
        while group.buffered:
            record = group.next_record()
            expected.append(starts[int(record.topic[1:])] + record.offset)
        assert processing_order(heads).tolist() == expected


def test_the_as_of_lookup_is_the_tables_value_when_the_record_is_taken():
    rng = random.Random(7)
    for _ in range(200):
        places = list(range(rng.randint(0, 30)))
        rng.shuffle(places)
        split = rng.randint(0, len(places))
        updates, lookups = sorted(places[:split]), sorted(places[split:])
        update_keys = [rng.choice(["a", "b", 3]) for _ in updates]
        update_values = [rng.choice([None, "x", "y", {"z": 1}]) for _ in updates]
        keys = [rng.choice(["a", "b", 3, "c"]) for _ in lookups]
        found, values = as_of(np.array(updates, dtype=np.int64), update_keys, update_values, np.array(lookups), keys)
        table, expected = {}, {}
        events = [(p, "u", k, v) for p, k, v in zip(updates, update_keys, update_values)]
        events += [(p, "l", k, None) for p, k in zip(lookups, keys)]
        for place, kind, key, value in sorted(events, key=lambda e: e[0]):
            if kind == "u":
                table[key] = value
            else:
                expected[place] = table.get(key)
        assert values == [expected[p] for p in lookups]
        assert found.tolist() == [expected[p] is not None for p in lookups]


def test_each_stage_says_why_it_is_a_chain_or_not():
    b = kjoin.Topology(partitions=2)
    customers = b.table("customers")
    b.stream("orders").select_key({"field": "c"}).join(customers, name="with-customer").to("out")
    b.stream("clicks").group_by({"field": "c"}).count(name="counts").to_stream().to("counted")
    b.build()
    whys = [stage_plan(b, stage) for stage in stages_of(b.graph)]
    chains = [why for chain, why in whys if chain is not None]
    others = [why for chain, why in whys if chain is None]
    assert any(why.startswith("a chain (stateless): orders (stream) → ") for why in chains)
    assert any(why.startswith("a chain (1 stream-table join(s)): ") and "with-customer (stream-table)" in why
               for why in chains)  # fmt: skip
    assert sorted(why.split(" is ")[0].split(" ")[-1] for why in others) == ["(aggregate)", "(group_by)"]
    old = kjoin.Topology(partitions=1, semantics="2.7.0")
    old.stream("orders").join(old.table("customers")).to("out")
    old.build()
    ((chain, why),) = [stage_plan(old, stage) for stage in stages_of(old.graph)]
    assert chain is None and "KIP-557" in why


@pytest.mark.spark
def test_random_chains_on_spark_with_each_method_forced(spark):
    assert chain_difference(spark, chain_scenario(random.Random(101)), with_partitions=False) is None


@pytest.mark.spark
def test_the_apps_steps_trace_and_why_are_the_processors(spark):
    from kjoin.spark import SparkInputError, run_topology
    from tests.test_spark_topology import _app, _topics
    from tests.topology_spark_check import rows_of

    topology = _app()
    topics = _topics(spark, topology)
    chains = run_topology(spark, topology, topics)
    processors = run_topology(spark, _app(), topics, method="processors")
    assert chains.method == "vectorised" and processors.method == "processors"
    assert [why.split(":")[0] for _, why in chains.methods.values()] == [
        "a chain (stateless)",
        "a chain (2 stream-table join(s))",
    ]
    assert rows_of(chains) == rows_of(processors)
    # both Kafka tasks of a stage in one Spark partition: the chain pass splits them itself
    assert rows_of(run_topology(spark, _app(), topics, spark_partitions=1)) == rows_of(chains)
    output = chains.outputs.where("value = 'D+Anna@Oslo'").first()  # through both joins and the repartition topic
    place = (output["topic"], output["partition"], output["offset"])
    assert chains.why(*place) == processors.why(*place)
    assert [step.fate for step in chains.trace("1_0").steps] == [step.fate for step in processors.trace("1_0").steps]
    b = kjoin.Topology(partitions=2)
    b.stream("orders").group_by({"field": "c"}).count(name="counts").to_stream().to("out")
    with pytest.raises(SparkInputError, match=r"method='vectorised': stage 0 .*\(group_by\) is not a chain's node"):
        run_topology(spark, b, {"orders": topics["orders"]}, method="vectorised")


def test_the_as_of_lookup_over_arrays_is_the_one_over_lists():
    import pyarrow as pa

    from kjoin.spark.passes.stage_texts import as_of_arrays

    rng = random.Random(8)
    for _ in range(200):
        places = list(range(rng.randint(0, 30)))
        rng.shuffle(places)
        split = rng.randint(0, len(places))
        updates, lookups = sorted(places[:split]), sorted(places[split:])
        update_keys = [rng.choice(["a", "b", "", "é"]) for _ in updates]
        update_values = [rng.choice([None, "x", "y", "", '{"z":1}']) for _ in updates]
        keys = [rng.choice(["a", "b", "", "é", "c"]) for _ in lookups]
        expected = as_of(np.array(updates, dtype=np.int64), update_keys, update_values, np.array(lookups), keys)
        string = rng.choice([pa.string(), pa.large_string()])
        found, values = as_of_arrays(
            np.array(updates, dtype=np.int64), pa.array(update_keys, string), pa.array(update_values, string),
            np.array(lookups, dtype=np.int64), pa.array(keys, string),
        )  # fmt: skip
        assert values.to_pylist() == expected[1] and found.tolist() == expected[0].tolist()


def test_a_tasks_rows_go_back_in_batches_of_at_most_out_rows(monkeypatch):
    import pyarrow as pa

    from kjoin.spark.passes import stage_chain

    monkeypatch.setattr(stage_chain, "OUT_ROWS", 7)
    table = pa.table({"_sub": pa.array([0] * 5 + [1] * 4, pa.int32()), "partition": pa.array([0] * 9, pa.int32())})
    tripled = stage_chain.per_task(lambda task: pa.concat_tables([task, task, task]).combine_chunks())
    sizes = [batch.num_rows for batch in tripled(iter(table.to_batches(max_chunksize=4)))]
    assert sum(sizes) == 27 and max(sizes) <= 7 and len(sizes) == 5  # 15 rows of task 0_0, 12 of 1_0


def test_a_worker_keeps_its_freed_memory_for_its_next_arrays():
    """In a fresh process (it changes the process's allocators): glibc takes the settings and Arrow allocates from
    the system allocator after, once per process."""
    import subprocess
    import sys

    code = (
        "import pyarrow as pa; from kjoin.spark.passes.memory import hold_freed_memory; "
        "before = pa.default_memory_pool().backend_name; "
        "print(before, hold_freed_memory(), hold_freed_memory(), pa.default_memory_pool().backend_name)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[1:] == ["True", "True", "system"] and out[0] != "system"
