"""The ``stages`` schedule (the Spark engine's): sub-topologies in dependency order, a foreign-key join's two
sides as one cyclic stage, and where it agrees with the ``timestamp`` schedule."""

from __future__ import annotations

import random

import kjoin
from kjoin.topology.runtime import run
from kjoin.topology.stages import Stage, stages_of
from kafka_oracle.topology_oracle import random_scenario


def _rekey_app() -> kjoin.Topology:
    b = kjoin.Topology(partitions=2)
    customers = b.table("customers")
    b.stream("orders").select_key({"field": "c"}).join(customers).to("out")
    return b.build()


def test_a_rekey_makes_two_stages_the_writer_first():
    b = _rekey_app()  # sub-topology 0 holds customers and the join (declared first), 1 the orders and the re-key
    assert stages_of(b.graph) == [Stage(0, (1,), False), Stage(1, (0,), False)]


def test_a_foreign_key_joins_two_sides_are_one_cyclic_stage():
    b = kjoin.Topology(partitions=2)
    b.table("customers").join(b.table("regions"), foreign_key="r").to_stream().to("out")
    b.build()
    (stage,) = stages_of(b.graph)
    assert stage.cyclic and stage.subtopologies == (0, 1)


def test_a_rekeyed_record_is_taken_once_its_whole_stage_upstream_ran():
    """The re-keying task runs first, whatever the timestamps (``timestamp`` takes the customer of ts 3 first); the
    joining task then takes its records by timestamp: the order of ts 4 between the customer updates of 3 and 6."""
    events = [
        {"topic": "customers", "key": "c1", "value": "Ann", "ts": 3},
        {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 4},
        {"topic": "customers", "key": "c1", "value": "Bob", "ts": 6},
    ]
    stages = run(_rekey_app(), events, schedule="stages")
    assert [(step.task, step.record.topic, step.record.ts) for step in stages.steps] == [
        ("1_1", "orders", 4),
        ("0_1", "customers", 3),
        ("0_1", "select_key-0000000002-repartition", 4),
        ("0_1", "customers", 6),
    ]
    assert [r.describe() for r in stages.outputs()] == ['out[1]@0 c1:{"c":"c1"}-Ann@4']
    timestamp = run(_rekey_app(), events, schedule="timestamp")
    assert [step.record.topic for step in timestamp.steps][:2] == ["customers", "orders"]


def test_with_increasing_timestamps_stages_and_timestamp_agree_without_stream_stream_joins():
    """The two schedules differ only where an upstream task writes a record older than one a downstream task took
    already: with timestamps that only increase, that needs a stream-stream join's late results (their timestamp is
    the older record's) or a window's final result (a suppression's or an emit-final aggregate's, at the window's
    time, written once stream time passed it), so without them the outputs are the same."""
    rng = random.Random(5)
    compared = 0
    while compared < 25:
        scenario = random_scenario(rng, "latest", versioned=True, failing=False)
        nodes = scenario.topology.build().graph.nodes.values()
        if any(node.op in ("stream-stream", "suppress") or node.params.get("emit") == "final" for node in nodes):
            continue
        events = [dict(event, ts=index) for index, event in enumerate(sorted(scenario.events, key=lambda e: e["ts"]))]
        stages = run(scenario.topology, events, schedule="stages")
        timestamp = run(scenario.topology, events, schedule="timestamp")
        assert [r.describe() for r in stages.outputs()] == [r.describe() for r in timestamp.outputs()]
        compared += 1
