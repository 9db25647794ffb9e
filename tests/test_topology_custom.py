"""The stream half of Kafka 4.x's DSL in topologies: ``filter_not``, ``peek``, ``to_stream(key_mapper)``,
``process_values`` and ``process`` (KIP-820; kjoin/topology/custom.py), in the reference engine, the document and
the real library (the harness's Processors.java mirrors the document vocabulary)."""

from __future__ import annotations

import json

import pytest

import kjoin
from kjoin.fates import Fate, Reason
from kjoin.topology.document import TopologyScenario
from kjoin.topology.graph import TopologyError
from kjoin.topology.runtime import ProcessingError
from kafka_oracle import oracle_check, topology_oracle

EVENTS = [
    {"topic": "in", "key": key, "value": value, "ts": ts}
    for ts, (key, value) in enumerate([("a", "x"), ("b", "y"), ("a", "x"), ("a", "z"), (None, "n"), ("b", "y")])
]


def outputs(trace, topic):
    return [(r.key, r.value, r.ts) for records in trace.outputs_by_event() for r in records if r.topic == topic]


def test_filter_not_keeps_what_the_predicate_refuses_and_peek_passes_every_record_on():
    seen = []
    b = kjoin.Topology()
    b.stream("in").filter_not({"key_in": ["b"]}).peek(lambda key, value: seen.append(key)).to("out")
    trace = b.run(EVENTS)
    assert outputs(trace, "out") == [("a", "x", 0), ("a", "x", 2), ("a", "z", 3), (None, "n", 4)]
    assert seen == ["a", "a", "a", None]
    assert "filter" in b.describe() and "peek" in b.describe()


def test_to_stream_with_a_key_mapper_re_keys_each_change_and_a_join_below_repartitions():
    b = kjoin.Topology()
    changes = b.table("t").to_stream(lambda key, value: value)
    changes.to("out")
    assert changes.node.op == "select_key" and changes.node.parents[0].op == "to_stream"
    trace = b.run([{"topic": "t", "key": "k", "value": "v", "ts": 1}])
    assert outputs(trace, "out") == [("v", "v", 1)]


def test_process_values_counts_per_key_in_its_own_store_shown_in_the_trace():
    b = kjoin.Topology()
    b.stream("in").process_values({"count_per_key": True}, name="counter").to("out")
    trace = b.run(EVENTS)
    assert outputs(trace, "out") == [("a", "1", 0), ("b", "1", 1), ("a", "2", 2), ("a", "3", 3), ("b", "2", 5)]
    visits = [v for step in trace.steps for v in step.visits if v.node == "counter"]
    assert [v.reason for v in visits if v.fate is Fate.DROPPED] == [Reason.NOT_FORWARDED]  # the null key
    final = trace.state_at(len(trace) - 1)
    (store,) = [store for store in final if store.name == "counter: store counter-store"]
    assert (store.task, store.kind) == ("0_0", "processor-store")
    assert final[store] == {"a": "3", "b": "2"}


def test_a_python_processor_reads_its_record_and_store_and_forwards_any_number():
    def dedupe_and_echo(record, ctx):
        if ctx.store.get(record.key) == record.value:
            return
        ctx.store.put(record.key, record.value)
        ctx.forward(value=f"{record.value}@{ctx.timestamp}")
        ctx.forward(value=record.value, timestamp=record.timestamp + 100)

    b = kjoin.Topology()
    b.stream("in").filter({"value_not_null": True}).filter_not({"key_in": [None]}).process_values(
        dedupe_and_echo, store="last"
    ).to("out")
    trace = b.run(EVENTS[:3])
    assert outputs(trace, "out") == [("a", "x@0", 0), ("a", "x", 100), ("b", "y@1", 1), ("b", "y", 101)]


def test_process_values_refuses_a_forward_with_another_key_naming_process():
    b = kjoin.Topology()
    b.stream("in").process_values(lambda record, ctx: ctx.forward(key="other"), name="pv").to("out")
    with pytest.raises(ProcessingError, match=r"pv.*FixedKeyRecord has no withKey.*use process"):
        b.run(EVENTS[:1])


def test_punctuation_is_refused_with_kjoins_error():
    b = kjoin.Topology()
    b.stream("in").process_values(lambda record, ctx: ctx.schedule(1000, "STREAM_TIME", print), name="p").to("o")
    with pytest.raises(ProcessingError, match="models no punctuation"):
        b.run(EVENTS[:1])


def test_process_marks_repartition_required_and_process_values_does_not():
    b = kjoin.Topology()
    table = b.table("t")
    b.stream("in").process({"swap": True}, name="swapped").join(table).to("out")
    b.stream("in2").process_values({"dedupe": True}, name="deduped").join(table).to("out2")
    b.build()
    repartitions = sorted(t for t in b.graph.topics if t.endswith("-repartition"))
    assert repartitions == ["swapped-repartition"]


def test_process_values_and_split_era_refusals():
    with pytest.raises(TopologyError, match="KIP-820, 3.3"):
        kjoin.Topology(semantics="3.2").stream("in").process_values({"dedupe": True})
    with pytest.raises(Exception, match="swap changes the key: use process"):
        kjoin.Topology().stream("in").process_values({"swap": True})


def _scenario(nodes, events=EVENTS, semantics="4.4"):
    return TopologyScenario.from_dict({"semantics": semantics, "topology": nodes, "events": events})


CUSTOM_DOCUMENT = [
    {"name": "in", "stream": "in"},
    {"name": "t", "table": "t"},
    {"name": "not_b", "filter_not": {"key_in": ["b"]}, "input": "in"},
    {"name": "seen", "peek": True, "input": "not_b"},
    {"name": "counted", "process_values": {"count_per_key": True}, "input": "seen"},
    {"name": "out", "to": "out", "input": "counted"},
    {"name": "deduped", "process_values": {"dedupe": True}, "store": "last-values", "input": "in"},
    {"name": "out2", "to": "out2", "input": "deduped"},
    {"name": "swapped", "process": {"swap": True}, "input": "in"},
    {"name": "joined", "left_join": ["swapped", "t"]},
    {"name": "out3", "to": "out3", "input": "joined"},
    {"name": "rekeyed", "to_stream": {"value": True}, "input": "t"},
    {"name": "out4", "to": "out4", "input": "rekeyed"},
    {"name": "t-not-x", "filter_not": {"key_in": ["x"]}, "input": "t"},
    {"name": "out5", "to": "out5", "input": "t-not-x"},
    {"name": "t-not-y", "filter_not": {"key_in": ["y"]}, "materialized": True, "input": "t"},
    {"name": "joined2", "join": ["in", "t-not-y"]},
    {"name": "out6", "to": "out6", "input": "joined2"},
]
CUSTOM_EVENTS = [
    *EVENTS,
    {"topic": "t", "key": "x", "value": "X", "ts": 6},
    {"topic": "t", "key": "y", "value": "Y", "ts": 6},
    {"topic": "t", "key": "a", "value": "A", "ts": 6},
    {"topic": "in", "key": "a", "value": "x", "ts": 7},
    {"topic": "t", "key": "a", "value": None, "ts": 7},
    {"topic": "in", "key": "c", "value": "x", "ts": 7},
    {"topic": "in", "key": "c", "value": "x", "ts": 8},
]


def test_the_document_round_trips_every_new_operation():
    scenario = _scenario(CUSTOM_DOCUMENT, CUSTOM_EVENTS)
    written = scenario.topology.to_dict()["topology"]
    again = _scenario(written, CUSTOM_EVENTS)
    assert topology_oracle.kjoin_outputs(again) == topology_oracle.kjoin_outputs(scenario)
    assert any(entry.get("filter_not") for entry in written)
    assert any(entry.get("store") == "last-values" for entry in written)


@pytest.mark.parametrize("version", ["4.4.0", "3.6.2"])
def test_the_real_library_agrees_on_the_new_stream_operations(version):
    oracle_check.build()
    scenario = _scenario(CUSTOM_DOCUMENT, CUSTOM_EVENTS, semantics=version.rsplit(".", 1)[0])
    (answer,) = topology_oracle.run_batch(version, [scenario])
    assert topology_oracle.difference(scenario, answer, version) is None
    outs = [row for rows in answer["outputs"] for row in rows if row[0] == "out"]
    assert ["out", "a", "3", 3] in outs  # Kafka's count per key reached 3 for a


def test_split_sends_each_record_to_the_first_branch_whose_predicate_holds_else_the_default():
    b = kjoin.Topology()
    branches = (
        b.stream("in")
        .split(name="s-")
        .branch({"key_in": ["a"]}, name="a")
        .branch(lambda key, value: value == "y")
        .default_branch()
    )
    assert list(branches) == ["s-a", "s-2", "s-0"]  # BranchedKStreamImpl: prefix + name, or its position
    for name, stream in branches.items():
        stream.to(f"out{name}")
    trace = b.run(EVENTS)
    assert [[(r.topic, r.key) for r in records] for records in trace.outputs_by_event()] == [
        [("outs-a", "a")],
        [("outs-2", "b")],
        [("outs-a", "a")],
        [("outs-a", "a")],
        [("outs-0", None)],
        [("outs-2", "b")],
    ]


def test_a_split_without_default_drops_what_no_branch_takes_with_a_reason():
    b = kjoin.Topology()
    b.stream("in").split(name="s").branch({"key_in": ["a"]}).no_default_branch()["s1"].to("out")
    trace = b.run(EVENTS[:2])
    (visit,) = [v for v in trace[1].visits if v.node == "s"]
    assert (visit.fate, visit.reason) == (Fate.DROPPED, Reason.NOT_FORWARDED)


def test_the_legacy_branch_runs_before_4_0_and_is_refused_from_4_0_naming_its_removal():
    parts = kjoin.Topology(semantics="3.9").stream("in").branch({"key_in": ["a"]}, {"key_in": ["b"]}, name="p")
    assert [part.name for part in parts] == ["p-predicate-0", "p-predicate-1"]
    with pytest.raises(TopologyError, match="Kafka 4.0 removed it; write split"):
        kjoin.Topology(semantics="4.0").stream("in").branch({"key_in": ["a"]})
    with pytest.raises(TopologyError, match="KIP-418, 2.8"):
        kjoin.Topology(semantics="2.7").stream("in").split()


SPLIT_DOCUMENT = [
    {"name": "in", "stream": "in"},
    {"name": "s-", "split": [{"name": "a", "filter": {"key_in": ["a"]}}, {"name": "rest", "default": True}],
     "input": "in"},
    {"name": "out1", "to": "out1", "input": "s-a"},
    {"name": "counted", "process_values": {"count_per_key": True}, "input": "s-rest"},
    {"name": "out2", "to": "out2", "input": "counted"},
]  # fmt: skip
LEGACY_DOCUMENT = [
    {"name": "in", "stream": "in"},
    {"name": "p", "branch": [{"key_in": ["a"]}, {"value_not_null": True}], "input": "in"},
    {"name": "out1", "to": "out1", "input": "p-predicate-0"},
    {"name": "out2", "to": "out2", "input": "p-predicate-1"},
]


@pytest.mark.parametrize(
    "nodes, version", [(SPLIT_DOCUMENT, "4.4.0"), (SPLIT_DOCUMENT, "3.6.2"), (LEGACY_DOCUMENT, "3.6.2")]
)
def test_the_real_library_splits_as_kjoin_does(nodes, version):
    oracle_check.build()
    scenario = _scenario(nodes, semantics=version.rsplit(".", 1)[0])
    again = _scenario(scenario.topology.to_dict()["topology"], semantics=version.rsplit(".", 1)[0])
    assert topology_oracle.kjoin_outputs(again) == topology_oracle.kjoin_outputs(scenario)
    (answer,) = topology_oracle.run_batch(version, [scenario])
    assert topology_oracle.difference(scenario, answer, version) is None
    assert any(rows for rows in answer["outputs"][1:2])


def _kafka4_app_text() -> str:
    path = oracle_check.HARNESS.parent / "tests" / "describe_fixtures" / "kafka_examples.json"
    return json.loads(path.read_text())["examples"]["kafka4-process-values-split"]


def test_from_describe_imports_a_kafka_4_app_leaving_only_the_users_functions():
    """DescribeExamples.java's 4.4 app: filterNot, peek, processValues with its store, split into named branches."""
    text = _kafka4_app_text()
    bare = kjoin.Topology.from_describe(text).described
    assert not bare.refused
    assert sorted(need.node for need in bare.needs if not need.given) == [
        "KSTREAM-FILTER-0000000001",
        "KSTREAM-PROCESSVALUES-0000000003",
        "route-",
    ]

    def dedupe(record, ctx):
        if ctx.store.get(record.key) != record.value:
            ctx.store.put(record.key, record.value)
            ctx.forward()

    topology = kjoin.Topology.from_describe(
        text,
        {
            "KSTREAM-FILTER-0000000001": {"op": "filter_not", "fn": lambda key, value: value is None},
            "KSTREAM-PROCESSVALUES-0000000003": dedupe,
            "route-": {"route-paid": lambda key, value: value.startswith("paid"), "route-other": "default"},
        },
    )
    assert all(need.given for need in topology.described.needs)
    pv = topology.graph.nodes["KSTREAM-PROCESSVALUES-0000000003"]
    assert (pv.op, pv.params["store"]) == ("process_values", "last-status")
    events = [
        {"topic": "orders", "key": key, "value": value, "ts": ts}
        for ts, (key, value) in enumerate([("o1", "new"), ("o1", "new"), ("o1", "paid"), ("o2", None), ("o2", "paid")])
    ]
    trace = topology.run(events)
    assert [[(r.topic, r.key, r.value) for r in records] for records in trace.outputs_by_event()] == [
        [("other-orders", "o1", "new")],
        [],
        [("paid-orders", "o1", "paid")],
        [],
        [("paid-orders", "o2", "paid")],
    ]


def test_the_stepper_graph_labels_the_new_nodes():
    from kjoin_viz.topology_view import _label

    b = kjoin.Topology()
    stream = b.stream("in").filter_not({"key_in": ["b"]}, name="nb")
    counted = stream.process_values({"count_per_key": True}, name="c")
    branches = counted.split(name="s-").branch({"key_in": ["a"]}, name="a").no_default_branch()
    branches["s-a"].to("out")
    labels = {name: _label(node, b.graph)[0] for name, node in b.graph.nodes.items()}
    assert labels["nb"] == "filter not"
    assert labels["c"] == "process values · store c-store"
    assert (labels["s-"], labels["s-a"]) == ("split", "branch")


def test_a_stream_joiner_with_three_parameters_sees_the_key_even_for_a_buffered_outer_record():
    b = kjoin.Topology()
    left, right = b.stream("in"), b.stream("in2")
    window = {"before_ms": 1, "after_ms": 1, "grace_ms": 0}
    left.outer_join(right, lambda key, mine, theirs: f"{key}|{mine}|{theirs}", window=window).to("out")
    trace = b.run(
        [
            {"topic": "in", "key": "a", "value": "x", "ts": 1},
            {"topic": "in2", "key": "b", "value": "y", "ts": 2},
            {"topic": "in2", "key": "c", "value": "z", "ts": 10},
        ]
    )
    assert [(r.key, r.value) for r in trace.outputs()] == [("a", "a|x|None"), ("b", "b|None|y")]


def test_keyed_joiners_are_refused_where_kafka_has_none():
    with pytest.raises(TopologyError, match="KIP-149, 3.0"):
        old = kjoin.Topology(semantics="2.8")
        old.stream("in").join(old.table("t"), lambda key, left, right: left)
    with pytest.raises(TopologyError, match="KTable joins take a ValueJoiner"):
        b = kjoin.Topology()
        b.table("t").join(b.table("u"), lambda key, left, right: left)
    with pytest.raises(TopologyError, match="KIP-1340, 4.4"):
        b = kjoin.Topology(semantics="4.3")
        b.stream("in").join(b.global_table("g"), lambda stream_key, mapped_key, left, right: left)
    with pytest.raises(TopologyError, match="belongs to a join with a global table"):
        b = kjoin.Topology()
        b.stream("in").join(b.table("t"), lambda stream_key, mapped_key, left, right: left)


KEYED_DOCUMENT = [
    {"name": "in", "stream": "in"},
    {"name": "in2", "stream": "in2"},
    {"name": "t", "table": "t"},
    {"name": "g", "global_table": "g"},
    {"name": "st", "left_join": ["in", "t"], "joiner": "keyed_concat"},
    {"name": "out1", "to": "out1", "input": "st"},
    {"name": "ss", "outer_join": ["in", "in2"], "window": {"before_ms": 2, "after_ms": 2, "grace_ms": 0},
     "joiner": "keyed_concat"},
    {"name": "out2", "to": "out2", "input": "ss"},
    {"name": "sg", "left_join": ["in2", "g"], "key_selector": {"value": True}, "joiner": "keyed_concat"},
    {"name": "out3", "to": "out3", "input": "sg"},
]  # fmt: skip
KEYED_EVENTS = [
    {"topic": "t", "key": "a", "value": "T", "ts": 0},
    {"topic": "g", "key": "x", "value": "G", "ts": 0},
    {"topic": "in", "key": "a", "value": "x", "ts": 1},
    {"topic": "in2", "key": "a", "value": "x", "ts": 2},
    {"topic": "in2", "key": "b", "value": "y", "ts": 3},
    {"topic": "in", "key": "c", "value": "z", "ts": 12},
]


@pytest.mark.parametrize("version, both_keys", [("4.4.0", True), ("4.4.0", False), ("3.6.2", False)])
def test_the_real_library_agrees_on_joiners_that_see_the_keys(version, both_keys):
    oracle_check.build()
    nodes = [dict(node) for node in KEYED_DOCUMENT]
    if both_keys:
        nodes[-2]["joiner"] = "keys_concat"
    scenario = _scenario(nodes, KEYED_EVENTS, semantics=version.rsplit(".", 1)[0])
    (answer,) = topology_oracle.run_batch(version, [scenario])
    assert topology_oracle.difference(scenario, answer, version) is None
    rows = [row for rows in answer["outputs"] for row in rows]
    assert ["out1", "a", "a/x-T", 1] in rows
    assert (["out3", "a", "a/x/x-G", 2] if both_keys else ["out3", "a", "a/x-G", 2]) in rows


FK_WITH_KEY_DOCUMENT = [
    {"name": "orders", "table": "orders"},
    {"name": "customers", "table": "customers"},
    {"name": "joined", "left_join": ["orders", "customers"], "foreign_key": {"key_or_field": "c"}},
    {"name": "out", "to": "out", "input": "joined"},
]
FK_WITH_KEY_EVENTS = [
    {"topic": "customers", "key": "c1", "value": "Ann", "ts": 1},
    {"topic": "customers", "key": "c2", "value": "Bo", "ts": 2},
    {"topic": "orders", "key": "c2", "value": {"item": "pen"}, "ts": 3},
    {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 4},
    {"topic": "orders", "key": "o1", "value": {"item": "ink"}, "ts": 5},
    {"topic": "customers", "key": "c2", "value": "Bob", "ts": 6},
]


def test_a_foreign_key_extractor_of_key_and_value_is_kafka_4s_and_judged():
    """KIP-1104's BiFunction: {key_or_field: c} reads the field, else the left row's own key."""
    with pytest.raises(Exception, match="KIP-1104, 4.0"):
        _scenario(FK_WITH_KEY_DOCUMENT, FK_WITH_KEY_EVENTS, semantics="3.9")
    b = kjoin.Topology()
    b.table("orders").join(b.table("customers"), foreign_key=lambda key, value: key.upper()).to("out")
    trace = b.run([{"topic": "customers", "key": "O1", "value": "Ann", "ts": 1},
                   {"topic": "orders", "key": "o1", "value": "x", "ts": 2}])  # fmt: skip
    assert [(r.key, r.value) for r in trace.outputs()] == [("o1", "x-Ann")]
    oracle_check.build()
    scenario = _scenario(FK_WITH_KEY_DOCUMENT, FK_WITH_KEY_EVENTS)
    assert scenario.topology.to_dict()["topology"][2]["foreign_key"] == {"key_or_field": "c"}
    (answer,) = topology_oracle.run_batch("4.4.0", [scenario])
    assert topology_oracle.difference(scenario, answer, "4.4.0") is None
    assert answer["outputs"][2] == [["out", "c2", '{"item":"pen"}-Bo', 3]]
