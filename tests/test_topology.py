"""Topologies (first slice): several joins, re-keys and repartition topics in the
reference engine (kjoin/topology/). The real library judges them in tests/test_topology_oracle.py;
here: Kafka's own integration tests' outputs as topologies, the join processors wired into a
topology against the same joins run alone, and the rules of the topology itself (sub-topologies,
repartition topics, co-partitioning, the two schedules, the document form)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

import kjoin
from kjoin.records import key_identity
from kjoin import Fate, Reason, Scenario, Topology, TopologyError
from kjoin.scenario import ScenarioError
from kjoin.topology.document import TopologyScenario

CASES = yaml.safe_load((Path(__file__).parent / "kafka_cases" / "topologies.yaml").read_text())


def _rendered(records) -> str:
    return ", ".join(f"{'null' if r.value is None else kjoin.records.render_value(r.value)}@{r.ts}" for r in records)


def _case_topology(scenario: dict) -> Topology:
    """A case of tests/kafka_cases/topologies.yaml built as a topology."""
    b = Topology(semantics=scenario.get("semantics"))
    variants = [scenario["variant"], *(chained["variant"] for chained in scenario.get("then", []))]
    if scenario["join"] == "stream-stream":
        left = b.stream("left")
        right = left if scenario.get("self_join") else b.stream("right")
        result = left
        for variant in variants:
            result = getattr(result, {"inner": "join", "left": "left_join", "outer": "outer_join"}[variant])(
                right, window=scenario["window"]
            )
    else:
        left, right = b.table("left"), b.table("right")
        result = left
        for variant in variants:
            result = getattr(result, {"inner": "join", "left": "left_join", "outer": "outer_join"}[variant])(right)
    result.to("output")
    return b


RUNNABLE = [case for case in CASES["cases"] if "expect" in case and not case["scenario"].get("optimize")]


@pytest.mark.parametrize("case", RUNNABLE, ids=[case["name"] for case in RUNNABLE])
def test_kafka_integration_test_outputs_as_topologies(case):
    """Kafka's StreamStreamJoinIntegrationTest and TableTableJoinIntegrationTest, chains (KAFKA-6443's
    doubled results) and the self-join included, built with kjoin.Topology."""
    events = [
        {"topic": side, "key": None if flags == ["null-key"] else 0, "value": value, "ts": ts}
        for side, value, ts, *flags in CASES["inputs"][case["input"]]
    ]
    if case["scenario"].get("self_join"):
        events = [{**event, "topic": "left"} for event in events]
    trace = _case_topology(case["scenario"]).run(events)
    assert [_rendered(records) for records in trace.outputs_by_event()] == case["expect"]


# -- a join alone, as a topology, equals the engine's join ----------------------------------------
def _random_events(rng: random.Random, count: int, json_left: bool = False) -> list[dict]:
    events = []
    for _ in range(count):
        side = rng.choice(["left", "right"])
        key = rng.choice(["k1", "k2", "k3", None] if rng.random() < 0.1 else ["k1", "k2", "k3"])
        if side == "left" and json_left:
            value = rng.choice([None, {"fk": rng.choice(["f1", "f2", None])}, {"fk": "f1"}])
        else:
            value = rng.choice([None, f"{side[0].upper()}{rng.randint(0, 9)}", f"{side[0]}{rng.randint(0, 9)}"])
        events.append({"side": side, "key": key, "value": value, "ts": rng.randint(0, 40)})
    return events


def _as_topology(scenario: Scenario) -> Topology:
    b = Topology(semantics=scenario.semantics)
    if scenario.join == "stream-stream":
        w = scenario.window
        window = {"before_ms": w.before_ms, "after_ms": w.after_ms, "grace_ms": w.grace_ms}
        result = getattr(b.stream("left"), _method(scenario.variant))(b.stream("right"), window=window)
    elif scenario.join == "stream-table":
        table = b.table("right", history_retention_ms=scenario.right.history_retention_ms)
        result = getattr(b.stream("left"), _method(scenario.variant))(table, grace_ms=scenario.grace_ms)
    else:
        left = b.table("left", history_retention_ms=scenario.left.history_retention_ms)
        right = b.table("right", history_retention_ms=scenario.right.history_retention_ms)
        options = {} if scenario.join == "table-table" else {"foreign_key": scenario.foreign_key}
        result = getattr(left, _method(scenario.variant))(right, **options)
    result.to("out")
    return b


def _method(variant: str) -> str:
    return {"inner": "join", "left": "left_join", "outer": "outer_join"}[variant]


def _engine_outputs(scenario: Scenario) -> list[list[tuple]]:
    per_event: list[list[tuple]] = []
    for step in kjoin.run(scenario).steps:
        if step.message is None:
            per_event.append([])
        per_event[-1].extend((o.key, None if o.tombstone else o.value, o.ts) for o in step.outputs)
    return per_event


@pytest.mark.parametrize(
    "join, variants, semantics",
    [
        ("stream-stream", ("inner", "left", "outer"), ("4.4", "3.6", "2.8")),
        ("stream-table", ("inner", "left"), ("4.4", "3.6")),
        ("table-table", ("inner", "left", "outer"), ("4.4", "2.8")),
        ("fk", ("inner", "left"), ("4.4", "3.9.0", "3.6")),
    ],
)
def test_a_join_alone_as_a_topology_equals_the_engines_join(join, variants, semantics):
    """The topology wires kjoin's own join processors; alone, they must give the engine's outputs, event
    by event, for every variant and era (120 random scenarios each)."""
    rng = random.Random(f"{join}-30")
    for number in range(120):
        variant, era = rng.choice(variants), rng.choice(semantics)
        data = {"join": join, "variant": variant, "semantics": era, "events": _random_events(rng, 14, join == "fk")}
        if join == "stream-stream":
            data["window"] = {
                "before_ms": rng.randint(0, 8),
                "after_ms": rng.randint(0, 8),
                "grace_ms": rng.randint(0, 6),
            }
        if join == "fk":
            data["foreign_key"] = "fk"
            data["events"] = [e for e in data["events"] if e["key"] is not None]
        if join in ("table-table", "fk") and number % 2 and era != "2.8":  # versioned tables (KIP-914)
            for side in rng.sample(["left", "right"], rng.randint(1, 2)):
                data[side] = {"versioned": True, "history_retention_ms": rng.randint(0, 12)}
        if join == "stream-table" and number % 2:  # a versioned table, with a grace period now and then (KIP-923)
            retention = rng.randint(0, 12)
            data["right"] = {"versioned": True, "history_retention_ms": retention}
            if rng.random() < 0.6:
                data["grace_ms"] = rng.randint(0, retention)
                data["events"] = [e for e in data["events"] if e["key"] is not None or e["side"] == "right"]
        scenario = Scenario.from_dict(data)
        events = [{"topic": e["side"], "key": e["key"], "value": e["value"], "ts": e["ts"]} for e in data["events"]]
        trace = _as_topology(scenario).run(events)
        ours = [[(r.key, r.value, r.ts) for r in records] for records in trace.outputs_by_event()]
        assert ours == _engine_outputs(scenario), f"scenario {number}: {data}"


# -- re-keys and repartition topics ----------------------------------------------------------------
def _orders_app(partitions: int = 2, **options) -> Topology:
    b = Topology(partitions=partitions)
    orders = b.stream("orders")
    customers = b.table("customers")
    addresses = b.table("addresses")
    orders.select_key({"field": "customer"}, name="by-customer", **options).join(
        customers, name="with-customer"
    ).left_join(addresses, name="with-address").to("out")
    return b


ORDERS = [
    {"topic": "customers", "key": "c1", "value": "Alice", "ts": 1},
    {"topic": "customers", "key": "c2", "value": "Bob", "ts": 1},
    {"topic": "addresses", "key": "c1", "value": "Paris", "ts": 1},
    {"topic": "orders", "key": "o1", "value": {"customer": "c1"}, "ts": 2},
    {"topic": "orders", "key": "o2", "value": {"customer": "c2"}, "ts": 3},
    {"topic": "orders", "key": "o3", "value": {"customer": "c9"}, "ts": 4},
]


def test_a_re_key_before_a_join_writes_a_repartition_topic_read_by_a_sub_topology_of_its_own():
    b = _orders_app()
    trace = b.run(ORDERS)
    assert "Sub-topology: 1" in b.describe() and "with-customer-repartition" in b.describe()
    repartition = trace.records("with-customer-repartition")
    assert [r.key for r in repartition] == ["c1", "c2", "c9"]
    for record in repartition:  # murmur2 of the new key, offsets counting up in each partition
        assert record.partition == kjoin.partitioner.default_partition(record.key, 2)
        earlier = [r for r in repartition if r.partition == record.partition and r.written_at < record.written_at]
        assert record.offset == len(earlier)
    # each order: one step in sub-topology 0 (the re-key) and, at once (test-driver), one in sub-topology 1
    order_steps = [s for s in trace if s.record.topic in ("orders", "with-customer-repartition")]
    assert [s.task.split("_")[0] for s in order_steps] == ["0", "1"] * 3
    assert [(o.key, o.value) for o in trace.outputs("out")] == [
        ("c1", '{"customer":"c1"}-Alice-Paris'),
        ("c2", '{"customer":"c2"}-Bob-null'),
    ]
    last = trace[-1]
    assert last.fate is Fate.NO_MATCH and last.reason is Reason.NO_PARTNER
    assert [v.node for v in last.visits] == ["with-customer-repartition-source", "with-customer"]


def test_the_repartition_topic_is_named_after_the_join_and_without_a_name_after_the_stream():
    b = Topology()
    b.stream("orders").select_key({"field": "c"}, name="rekey").join(b.table("customers")).to("out")
    assert "rekey-repartition" in b.build().graph.topics


@pytest.mark.parametrize("semantics, refused", [("2.5", True), ("2.6", False)])
def test_a_re_keyed_stream_joined_twice_shares_one_repartition_topic_since_kafka_2_6(semantics, refused):
    """KAFKA-9298: before 2.6 the second join made a second repartition topic of the same name, and Kafka refused
    the topology (2.4.1 is judged so in tests/test_topology_oracle.py)."""
    b = Topology(semantics=semantics)
    rekeyed = b.stream("orders").select_key({"field": "c"})
    if refused:
        with pytest.raises(TopologyError, match="KAFKA-9298"):
            rekeyed.join(rekeyed, window={"before_ms": 1, "after_ms": 1, "grace_ms": 0})
        return
    rekeyed.join(rekeyed, window={"before_ms": 1, "after_ms": 1, "grace_ms": 0}).to("out")
    assert sum(topic.internal for topic in b.build().graph.topics.values()) == 1


def test_a_re_key_that_no_join_follows_writes_no_repartition_topic():
    b = Topology(partitions=3)
    b.stream("orders").select_key({"field": "customer"}).to("out")
    b.build()
    assert not any(topic.internal for topic in b.graph.topics.values())
    assert len(b.graph.subtopologies()) == 1


@pytest.mark.parametrize(
    "second, semantics, kept",
    [("join", "4.4", False), ("left_join", "4.4", True), ("left_join", "3.6", False)],
)
def test_a_null_key_after_a_re_key_reaches_the_repartition_topic_only_above_a_join_that_takes_it(
    second, semantics, kept
):
    """Kafka filters null keys out before a repartition topic, unless (3.7+, KIP-962) a left stream-table or a
    left/outer stream-stream join is anywhere below it (NodesWithRelaxedNullKeyJoinDownstream)."""
    b = Topology(semantics=semantics)
    rekeyed = b.stream("orders").select_key({"field": "customer"})
    getattr(rekeyed.join(b.table("customers")), second)(b.table("addresses")).to("out")
    trace = b.run([{"topic": "orders", "key": "o1", "value": {"other": 1}, "ts": 2}])
    first = trace.steps[0]
    if kept:
        assert [r.key for r in trace.records(first.wrote[0].topic)] == [None]
        assert trace.steps[1].fate is Fate.DROPPED and trace.steps[1].reason is Reason.NULL_KEY
    else:
        assert len(trace) == 1 and first.fate is Fate.DROPPED
        assert first.visits[-1].reason is Reason.NULL_KEY_NOT_REPARTITIONED


def test_a_custom_partitioner_places_the_repartitioned_records():
    b = _orders_app(partitioner=lambda key, partitions: 1)
    trace = b.run(ORDERS)
    assert {r.partition for r in trace.records("with-customer-repartition")} == {1}


def test_a_partitioner_that_returns_no_partition_is_refused_with_the_topic_and_key():
    b = _orders_app(partitioner=lambda key, partitions: 7)
    with pytest.raises(TopologyError, match=r"with-customer-repartition: the partitioner .* returned 7 for key 'c1'"):
        b.run(ORDERS)


@pytest.mark.parametrize(
    "retention, grace, message",
    [(None, 5, "needs a versioned table"), (3, 5, "History retention must be at least grace period")],
)
def test_a_grace_period_needs_a_versioned_table_that_keeps_enough_history(retention, grace, message):
    b = Topology()
    with pytest.raises(TopologyError, match=message):
        b.stream("orders").join(b.table("customers", history_retention_ms=retention), grace_ms=grace)


def test_joined_topics_of_different_partition_counts_are_refused_as_kafka_refuses_them():
    b = Topology(partitions=2)
    b.stream("orders").join(b.table("customers", partitions=3)).to("out")
    with pytest.raises(TopologyError, match=r"topics not co-partitioned: \[customers,orders\]"):
        b.build()


def test_a_repartition_topic_takes_the_partition_count_of_the_table_it_is_joined_with():
    b = Topology(partitions=2)
    b.stream("orders", partitions=5).select_key({"field": "customer"}).join(b.table("customers", partitions=3)).to(
        "out"
    )
    b.build()
    (internal,) = [topic for topic in b.graph.topics.values() if topic.internal]
    assert internal.partitions == 3


def test_each_task_keeps_its_own_stores_named_after_their_node():
    b = _orders_app()
    trace = b.run(ORDERS)
    state = trace.state_at(-1)
    names = {(store.task, store.name) for store, entries in state.items() if entries}
    partition = kjoin.partitioner.default_partition("c1", 2)
    assert (f"1_{partition}", "customers: table") in names
    assert (f"1_{partition}", "task") in names
    assert trace.store(-1, f"1_{partition}", "customers: table")[0]["value"] == "Alice"
    frame = trace.state_frame(-1)
    assert set(frame.store) >= {"customers: table", "addresses: table", "task"}
    assert set(frame.task) == {store.task for store, entries in state.items() if entries}


def test_why_follows_an_output_back_through_the_repartition_topic_to_its_event():
    trace = _orders_app().run(ORDERS)
    lines = trace.why(trace.outputs("out")[0])
    assert lines[-1].endswith("is input event 3.") and "with-customer-repartition" in lines[-2]
    assert lines[1:3] == [
        "  with-customer looked up the row c1:Alice@1, written at step 0 by input event 0.",
        "  with-address looked up the row c1:Paris@1, written at step 2 by input event 2.",
    ]


# -- the schedules ---------------------------------------------------------------------------------
def test_a_running_app_takes_a_repartitioned_record_when_its_timestamp_comes():
    """The order (ts 5) is piped before the customer's update (ts 3): TopologyTestDriver has nothing else queued
    when the re-keyed order arrives and joins it with the old customer; an application that finds all three
    records in its topics takes them by timestamp, so the update (ts 3) goes first, then the order from the
    repartition topic."""
    events = [
        {"topic": "customers", "key": "c1", "value": "old", "ts": 1},
        {"topic": "orders", "key": "o1", "value": {"customer": "c1"}, "ts": 5},
        {"topic": "customers", "key": "c1", "value": "new", "ts": 3},
    ]
    outputs = {}
    for schedule in ("test-driver", "timestamp"):
        b = Topology()
        b.stream("orders").select_key({"field": "customer"}).join(b.table("customers")).to("out")
        trace = b.run(events, schedule)
        outputs[schedule] = [o.value for o in trace.outputs()]
    assert outputs == {"test-driver": ['{"customer":"c1"}-old'], "timestamp": ['{"customer":"c1"}-new']}
    assert [s.record.topic for s in trace][-1].endswith("-repartition")


def test_a_running_apps_tasks_take_turns_by_timestamp_each_with_its_own_stream_time():
    """Two partitions, a stream-stream left join: under the timestamp schedule the next step is the task whose next
    record is oldest, whatever order the events were written in; each task's join keeps its own stream time, so a
    record of partition 0 closes no window of partition 1."""
    b = Topology(partitions=2)
    b.stream("left").left_join(b.stream("right"), window={"before_ms": 0, "after_ms": 0, "grace_ms": 0}).to("out")
    p0 = next(k for k in ("k1", "k2", "k3", "k4") if kjoin.partitioner.default_partition(k, 2) == 0)
    p1 = next(k for k in ("k1", "k2", "k3", "k4") if kjoin.partitioner.default_partition(k, 2) == 1)
    events = [
        {"topic": "left", "key": p1, "value": "B", "ts": 5},
        {"topic": "left", "key": p0, "value": "A", "ts": 1},
        {"topic": "left", "key": p0, "value": "C", "ts": 9},
    ]
    trace = b.run(events, "timestamp")
    assert [s.record.ts for s in trace] == [1, 5, 9]
    assert [s.task for s in trace] == ["0_0", "0_1", "0_0"]
    # ts 9 closes A's window in task 0_0 only: B (task 0_1, stream time 5) still waits
    assert [(o.key, o.value) for o in trace.outputs()] == [(p0, "A-null")]
    assert trace.outputs()[0].written_at == 2  # written by C's step, though C itself waits
    assert [s.fate for s in trace] == [Fate.BUFFERED] * 3


FK_CHAIN_CHANGE = [
    {"topic": "zones", "key": "z1", "value": "Z1", "ts": 1},
    {"topic": "zones", "key": "z2", "value": "Z2", "ts": 1},
    {"topic": "regions", "key": "r1", "value": {"z": "z1"}, "ts": 28},
    {"topic": "regions", "key": "r2", "value": {"z": "z2"}, "ts": 2},
    {"topic": "customers", "key": "c3", "value": {"r": "r1"}, "ts": 15},
    {"topic": "customers", "key": "c3", "value": {"r": "r2"}, "ts": 24},
]


def fk_chain_of_left_joins(semantics: str) -> Topology:
    b = Topology(semantics=semantics)
    customers, regions, zones = b.table("customers"), b.table("regions"), b.table("zones")
    customers.left_join(regions, "object", foreign_key="r").left_join(zones, foreign_key="right.z").to("out")
    return b


def test_the_test_driver_takes_internal_records_by_timestamp_not_depth_first():
    """KAFKA-9503 (2.4.1+): TopologyTestDriver enqueues what a record writes to internal topics and takes the
    queued record with the smallest timestamp next. A 3.9.0 left foreign-key join answers a changed row twice
    (KAFKA-16394): first with null (ts 28, the old region's), then with the new region (ts 24). The second answer
    overtakes the subscriptions the first one set off in the next join (ts 28), so those come back stale: only the
    new region's result reaches the output. Depth-first, the null result would have gone through as well."""
    trace = fk_chain_of_left_joins("3.9.0").run(FK_CHAIN_CHANGE)
    assert [(o.key, o.value, o.ts) for o in trace.outputs_by_event()[5]] == [
        ("c3", '{"left":{"r":"r2"},"right":{"z":"z2"}}-Z2', 24)
    ]
    last_event = [s for s in trace if trace.event_of(s.index) == 5]
    assert [s.reason for s in last_event].count(Reason.STALE_RESPONSE) == 2
    response_ts = [s.record.ts for s in last_event if s.record.topic.endswith("response-topic")]
    assert response_ts[:2] == [28, 24]  # the first join's answers: the null one first, in its partition's order


# -- foreign keys ----------------------------------------------------------------------------------
def _fk_chain() -> Topology:
    b = Topology(partitions=2)
    a, bt, c = b.table("A"), b.table("B"), b.table("C")
    a.join(bt, "object", foreign_key="b").join(c, "object", foreign_key="right.c").to("out")
    return b


def test_a_foreign_key_chain_over_three_tables():
    """Kafka's KTableKTableForeignKeyJoinIntegrationTest-style chain: A -fk-> B, the result -fk-> C."""
    events = [
        {"topic": "C", "key": "c1", "value": "C1", "ts": 1},
        {"topic": "B", "key": "b1", "value": {"c": "c1"}, "ts": 2},
        {"topic": "A", "key": "a1", "value": {"b": "b1"}, "ts": 3},
        {"topic": "C", "key": "c1", "value": "C2", "ts": 5},
        {"topic": "B", "key": "b1", "value": None, "ts": 6},
    ]
    trace = _fk_chain().run(events)
    rows = [(o.key, None if o.value is None else o.value["right"], o.ts) for o in trace.outputs()]
    assert rows == [("a1", "C1", 3), ("a1", "C2", 5), ("a1", None, 6)]
    topics = {t for s in trace for t in [s.record.topic]}
    assert sum(t.endswith("subscription-registration-topic") for t in topics) == 2
    assert len(_fk_chain().graph.subtopologies()) == 3


def test_a_foreign_key_result_re_joined_with_its_left_table_by_primary_key():
    b = Topology()
    orders, products = b.table("orders"), b.table("products")
    enriched = orders.join(products, foreign_key="product")
    enriched.join(orders).to("out")
    events = [
        {"topic": "products", "key": "p1", "value": "Pen", "ts": 1},
        {"topic": "orders", "key": "o1", "value": {"product": "p1"}, "ts": 2},
        {"topic": "products", "key": "p1", "value": "Ink", "ts": 3},
    ]
    trace = b.run(events)
    assert [(o.key, o.value, o.ts) for o in trace.outputs()] == [
        ("o1", '{"product":"p1"}-Pen-{"product":"p1"}', 2),
        ("o1", '{"product":"p1"}-Ink-{"product":"p1"}', 3),
    ]


# -- the document form -----------------------------------------------------------------------------
APP = {
    "partitions": 2,
    "topology": [
        {"name": "orders", "stream": "orders"},
        {"name": "customers", "table": "customers"},
        {"name": "addresses", "table": "addresses"},
        {"name": "by-customer", "select_key": {"field": "customer"}, "input": "orders"},
        {"name": "with-customer", "join": ["by-customer", "customers"]},
        {"name": "with-address", "left_join": ["with-customer", "addresses"]},
        {"name": "out", "to": "out", "input": "with-address"},
    ],
    "events": ORDERS,
}


def test_a_document_runs_as_the_python_topology_does(tmp_path):
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump(APP))
    loaded = kjoin.load_scenario(path)
    assert isinstance(loaded, TopologyScenario)
    ours = [(o.key, o.value, o.partition) for o in kjoin.run(loaded).outputs()]
    assert ours == [(o.key, o.value, o.partition) for o in _orders_app().run(ORDERS).outputs()]
    again = TopologyScenario.from_dict({**loaded.topology.to_dict(), "events": ORDERS})
    assert [o.value for o in again.run().outputs()] == [o.value for o in loaded.run().outputs()]


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda d: d["topology"][3].update(input="order"),
            r"topology\[3\] \(by-customer\)\.input: 'order' names no node built before this one \(did you mean",
        ),
        (
            lambda d: d["topology"][4].update(join=["by-customer"]),
            r"topology\[4\] \(with-customer\)\.join: expected \[left, right\]",
        ),
        (
            lambda d: d["topology"][1].update(tabel="x"),
            r"topology\[1\] \(customers\)\.tabel: not a field of a table node",
        ),
        (
            lambda d: d["topology"][3].update(select_key={"feild": "customer"}),
            r"select_key: expected one of \{field: \.\.\.\}, \{map: \.\.\.\}",
        ),
        (
            lambda d: d["events"][0].update(topic="customer"),
            r"events\[0\]\.topic: 'customer' is not a topic the topology reads \(did you mean 'customers'\?\)",
        ),
        (lambda d: d["events"][1].update(partition=2), r"events\[1\]\.partition: topic customers has 2 partition\(s\)"),
        (lambda d: d.update(schedule="ttd"), r"schedule: expected test-driver \| timestamp"),
        (
            lambda d: d["topology"][4].update(window={"before_ms": 1, "after_ms": 1}),
            r"with-customer.*a stream-table join has no window",
        ),
    ],
)
def test_a_bad_document_is_refused_naming_the_node_or_event_and_the_fix(change, message):
    data = yaml.safe_load(yaml.safe_dump(APP))
    change(data)
    with pytest.raises(ScenarioError, match=message):
        TopologyScenario.from_dict(data)


def test_kjoin_run_prints_a_topologys_steps(tmp_path, capsys):
    from kjoin.cli import main

    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump(APP))
    assert main(["run", str(path)]) == 0
    table = capsys.readouterr().out
    # the harness names no join, so the topic is named after the re-keyed stream, as Kafka's counter name is
    assert "by-customer-repartition-source → with-customer → with-address → out" in table
    assert main(["run", str(path), "--format", "jsonl"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(kjoin.load_scenario(path).run()) and '"fate": "joined"' in lines[4]


def test_a_tombstone_at_the_latest_versions_timestamp_erases_a_key_without_older_versions():
    """Kafka's RocksDBVersionedStore keeps no tombstone there (judged in tests/test_topology_oracle.py); with an
    older version, that version's validity still ends at the tombstone."""
    from kjoin.records import Side
    from kjoin.state import StateLog
    from kjoin.stores import PutResult, VersionedStore

    store = VersionedStore(StateLog(), 0, Side.LEFT, 20, sends_old_values=False)
    store.put("k", "A", 24)
    assert store.put("k", None, 24)[0] is PutResult.LATEST and store.versions("k") == []
    assert store.put("k", "B", 15)[0] is PutResult.LATEST
    store.put("j", "A", 10)
    store.put("j", "B", 24)
    store.put("j", None, 24)
    assert store.put("j", "C", 15)[0] is PutResult.OUT_OF_ORDER


@pytest.mark.parametrize(
    "key_serde, counted",
    [
        ("string", [(("string", "1"), 1), (("string", "1"), 2), (("string", "true"), 1)]),
        ("typed", [(("long", "1"), 1), (("string", "1"), 1), (("boolean", "true"), 1)]),
    ],
)
def test_keys_are_one_key_when_their_serialized_bytes_are(key_serde, counted):
    """The String serde (a document's, the harness's) makes 1 and "1" one key; typed keys (an application with Integer
    keys) keep them apart; true is never 1, in a table join or a count."""
    joined = kjoin.Topology(key_serde=key_serde)
    joined.table("a").join(joined.table("b")).to("out")
    trace = joined.run(
        [{"topic": "a", "key": True, "value": "A", "ts": 1}, {"topic": "b", "key": 1, "value": "B", "ts": 2}]
    )
    assert trace.outputs("out") == []
    counts = kjoin.Topology(key_serde=key_serde)
    counts.stream("orders").group_by_key().count().to_stream().to("out")
    trace = counts.run(
        [{"topic": "orders", "key": key, "value": "x", "ts": ts} for ts, key in enumerate([1, "1", True])]
    )
    assert [(key_identity(o.key), o.value) for o in trace.outputs("out")] == counted
    written = counts.to_dict()
    assert written.get("key_serde") == (None if key_serde == "string" else "typed")
