"""Topologies at kjoin's boundary: whatever a topology document, a builder program or a user function holds, kjoin
refuses it in its own words (naming the node, the field or the function, the record and the fix) or runs it with
every record accounted for, within a time bound. The harness is :mod:`tests.topology_fuzz` (``make fuzz-inputs``
runs it at a real N and prints the counts); here a sample and every probe."""

from __future__ import annotations

import random
import time
import tracemalloc

import kjoin
import kjoin.joins.window_aggregate
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kjoin.topology.document import TopologyScenario
from kjoin.topology.runtime import ProcessingError

from tests import input_fuzz, test_input_fuzz, topology_fuzz

SECONDS = 10.0


@pytest.mark.parametrize("name, call, expect", topology_fuzz.PROBES, ids=[p[0] for p in topology_fuzz.PROBES])
def test_each_listed_example_is_refused_in_kjoins_words_or_runs(name, call, expect):
    assert topology_fuzz.probe(call, expect)[0] == "ok"


@pytest.mark.parametrize("seed", range(3))
def test_a_sample_of_perturbed_topologies_has_no_crash_hang_or_silent_acceptance(seed):
    found = {}
    for label, call, must in topology_fuzz.cases(100, seed):
        outcome, detail = topology_fuzz.run_case(call, must, SECONDS)
        if outcome not in ("refused", "ran"):
            found[label] = f"{outcome}: {detail}"
    assert not found


def _rekeyed(selector):
    b = kjoin.Topology(partitions=2)
    b.stream("orders").select_key(selector, name="by-customer").join(b.table("customers"), name="joined").to("out")
    return b


EVENTS = [
    {"topic": "customers", "key": "c1", "value": "Alice", "ts": 1},
    {"topic": "orders", "key": "o1", "value": {"customer": "c1"}, "ts": 2},
]


def test_a_user_function_that_raises_is_named_with_its_node_and_record_and_chained():
    def by_customer(key, value):
        raise KeyError("customer")

    with pytest.raises(ProcessingError) as raised:
        _rekeyed(by_customer).run(EVENTS)
    text = str(raised.value)
    assert text.startswith("node by-customer (select_key): the select_key function (by_customer) raised KeyError")
    assert "on the record orders partition " in text and 'offset 0, key o1, value {"customer":"c1"}, ts 2' in text
    assert isinstance(raised.value.__cause__, KeyError)
    assert isinstance(raised.value, kjoin.ScenarioError)  # kjoin's error: `kjoin run` prints it in one line


@pytest.mark.parametrize(
    "returned, said",
    [
        ({1}, "a set"),
        (["c1"], "a list"),
        ({"a": 1}, "a dict"),
        (2**70, "71-bit integer"),
        (float("nan"), "nan"),
        ("c\udcff", "lone surrogate, which no UTF-8 serializer can write"),
    ],
)
def test_a_key_no_serde_can_write_is_refused_at_the_node_that_made_it(returned, said):
    with pytest.raises(ProcessingError, match=rf"node by-customer \(select_key\): .*returned .*{said}.*offset 0"):
        _rekeyed(lambda key, value: returned).run(EVENTS)


@pytest.mark.parametrize("returned", ["\udcff", ["ok", "\udcff"], {"\udcff": 1}, {"a": "x\udcff"}])
@pytest.mark.parametrize("partitions", [1, 2])
def test_a_value_with_a_lone_surrogate_is_refused_at_the_node_that_made_it(returned, partitions):
    b = kjoin.Topology(partitions=partitions)
    b.stream("orders").map_values(lambda value: returned, name="bad").to("out")
    with pytest.raises(ProcessingError, match=r"node bad \(map_values\): .*lone surrogate.*offset 0"):
        b.run(EVENTS[1:])


def test_a_key_with_a_lone_surrogate_is_refused_on_two_partitions_at_group_by_and_fk():
    b = kjoin.Topology(partitions=2)
    b.stream("orders").group_by(lambda key, value: "\udcff", name="grouped").count(name="n").to_stream().to("out")
    with pytest.raises(ProcessingError, match=r"node group_by-\d+ \(group_by\): .*lone surrogate"):
        b.run(EVENTS[1:])
    b = kjoin.Topology(partitions=2)
    b.table("orders").join(b.table("customers"), foreign_key=lambda value: "\udcff", name="fk").to_stream().to("out")
    with pytest.raises(ProcessingError, match=r"node fk.*lone surrogate"):
        b.run(EVENTS[::-1])


def test_a_joiner_returning_what_json_cannot_carry_is_refused_at_the_join_with_the_record():
    b = kjoin.Topology()
    b.stream("orders").join(b.table("customers"), lambda left, right: {1, 2}, name="joined").to("out")
    with pytest.raises(
        ProcessingError,
        match=r"node joined \(stream-table\): the lambda at test_topology_fuzz\.py:\d+ returned \{1, 2\} \(a set\)",
    ):
        b.run([{"topic": "customers", "key": "o1", "value": "A", "ts": 1}, EVENTS[1]])


def test_an_aggregator_that_raises_is_named_and_chained():
    def adder(key, value, agg):
        raise RuntimeError("no")

    b = kjoin.Topology()
    b.stream("s").group_by_key().aggregate(lambda: 0, adder, name="total").to("out")
    with pytest.raises(ProcessingError, match=r"node total \(aggregate\): the aggregate adder \(adder\) raised") as e:
        b.run([{"topic": "s", "key": "k", "value": 1, "ts": 1}])
    assert isinstance(e.value.__cause__, RuntimeError)


@pytest.mark.parametrize("schedule", ["test-driver", "timestamp", "stages"])
def test_two_to_the_31_minus_1_partitions_cost_the_records_not_the_partitions(schedule):
    b = kjoin.Topology(partitions=2**31 - 1)
    b.stream("orders").select_key({"field": "customer"}).join(b.table("customers")).to("out")
    tracemalloc.start()
    started = time.monotonic()
    trace = b.run(EVENTS, schedule, instances=3)
    elapsed = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [(r.key, r.value) for r in trace.outputs()] == [("c1", '{"customer":"c1"}-Alice')]
    assert elapsed < 5.0 and peak < 50 * 2**20


def test_an_event_addressed_to_an_internal_topic_is_refused_with_the_reason():
    b = _rekeyed({"field": "customer"})
    with pytest.raises(kjoin.ScenarioError, match=r"events\[0\]\.topic: joined-repartition is an internal topic"):
        b.run([{"topic": "joined-repartition", "key": "c1", "value": "x", "ts": 1}])


@pytest.mark.parametrize(
    "build, said",
    [
        (lambda b: b.stream("a").join(b.stream("b"), window={"before_ms": 2**63, "after_ms": 1}), "window.before_ms"),
        (lambda b: b.stream("a").group_by_key().windowed_by({"size_ms": 2**63}), "windowed_by.size_ms"),
        (lambda b: b.table("t", history_retention_ms=-1), "history_retention_ms"),
        (lambda b: b.stream("a").to("o", partitions=2**31), r"to\(o\): partitions"),
        (lambda b: b.stream("a", partitions="2"), "topic a: partitions"),
        (lambda b: b.stream("a").join(b.stream("b"), window=kjoin.JoinWindows(2**63, 1)), "window.before_ms"),
        (
            lambda b: (
                b.stream("a").group_by_key().windowed_by(kjoin.joins.window_aggregate.TimeWindows(10, None, 2**64))
            ),
            "windowed_by.grace_ms",
        ),
    ],
)
def test_the_builders_numbers_follow_the_documents_64_bit_rules(build, said):
    with pytest.raises(kjoin.ScenarioError, match=said):
        build(kjoin.Topology())


@pytest.mark.parametrize("before, after", [(2**63 - 1, 1), (2**62, 2**62), (-10, 5)])
def test_a_join_window_whose_span_is_not_a_long_from_0_is_refused_in_kjoins_words(before, after):
    said = r"window: before_ms \+ after_ms is -?\d+, which (is negative|exceeds \d+ \(Kafka's long\))"
    with pytest.raises(kjoin.ScenarioError, match=said):
        b = kjoin.Topology()
        b.stream("a").join(b.stream("b"), window=kjoin.JoinWindows(before, after, 0))
    if before < 0:
        return  # a negative before is the builder's alone: documents and scenarios take milliseconds from 0
    with pytest.raises(kjoin.ScenarioError, match=said):
        b = kjoin.Topology()
        b.stream("a").join(b.stream("b"), window={"before_ms": before, "after_ms": after})
    window = {"before_ms": before, "after_ms": after, "grace_ms": 0}
    doc = {
        "topology": [{"name": "a", "stream": "a"}, {"name": "b", "stream": "b"}, {"name": "j", "join": ["a", "b"]}],
        "events": [],
    }
    doc["topology"][2]["window"] = window
    with pytest.raises(kjoin.ScenarioError, match=r"topology\[2\] \(j\)\.?.*" + said.removeprefix("window: ")):
        TopologyScenario.from_dict(doc)
    with pytest.raises(kjoin.ScenarioError, match=said):
        kjoin.Scenario.from_dict({"join": "stream-stream", "variant": "inner", "window": window, "events": []})


def test_the_largest_long_is_a_window_the_builder_takes():
    kjoin.Topology().stream("a").group_by_key().windowed_by({"size_ms": 2**63 - 1})


def test_a_misspelled_argument_gets_a_did_you_mean_in_the_builder_and_the_document():
    with pytest.raises(kjoin.ScenarioError, match=r"KStream\.to: 'partiton' is not an argument of it \(did you mean"):
        kjoin.Topology().stream("s").to("o", partiton=2)
    with pytest.raises(kjoin.ScenarioError, match=r"left_join: widow: not an option of left_join \(did you mean"):
        b = kjoin.Topology()
        b.stream("s").left_join(b.stream("t"), widow={})
    doc = {
        "topology": [{"name": "s", "stream": "s"}, {"name": "o", "to": "o", "input": "s", "partiton": 2}],
        "events": [],
    }
    with pytest.raises(kjoin.ScenarioError, match=r"topology\[1\] \(o\)\.partiton: .*did you mean 'partitions'"):
        TopologyScenario.from_dict(doc)


@pytest.mark.parametrize("op", ["filter", "map_values", "select_key", "to"])
@pytest.mark.parametrize("given_input", [["s"], {"s": 1}])
def test_an_input_that_is_not_a_node_name_is_refused_the_same_way_at_every_node(op, given_input):
    body = "out" if op == "to" else {"value_not_null": True} if op == "filter" else {"field": "a"}
    doc = {"topology": [{"name": "s", "stream": "s"}, {"name": "f", op: body, "input": given_input}], "events": []}
    with pytest.raises(kjoin.ScenarioError, match=r"topology\[1\] \(f\)\.input: .* names no node built before this"):
        TopologyScenario.from_dict(doc)


def test_the_topology_constructor_refuses_an_argument_it_does_not_take_in_kjoins_words():
    with pytest.raises(kjoin.ScenarioError, match=r"Topology: 'foo' is not an argument of it; it takes partitions"):
        kjoin.Topology(foo=1)
    with pytest.raises(kjoin.ScenarioError, match=r"Topology: 'partiton' is not an argument of it \(did you mean"):
        kjoin.Topology(partiton=2)
    with pytest.raises(kjoin.ScenarioError, match=r"Topology: too many positional arguments; it takes partitions"):
        kjoin.Topology(1, "4.4", "string", 5)


@pytest.mark.parametrize("text", ["", " ", "4.4 ", " latest"])
def test_blank_or_space_padded_semantics_is_refused_not_read_as_a_version(text):
    with pytest.raises(kjoin.ScenarioError, match=r"Topology\(semantics=...\): semantics .* is not a Kafka version"):
        kjoin.Topology(semantics=text)
    doc = {"semantics": text, "topology": [{"name": "s", "stream": "s"}], "events": []}
    with pytest.raises(kjoin.ScenarioError, match=r"^semantics: semantics .* with no space around it"):
        TopologyScenario.from_dict(doc)
    with pytest.raises(kjoin.ScenarioError, match=r"semantics: semantics .* is not a Kafka version"):
        kjoin.Scenario.from_dict({"join": "stream-table", "variant": "inner", "semantics": text, "events": []})


def test_through_declares_its_topic_once_with_its_partitions_and_partitioner():
    b = kjoin.Topology(partitions=2)
    b.stream("s").through("mid", partitions=4, partitioner=lambda key, partitions: 3).to("out")
    assert (b.graph.topics["mid"].partitions, b.graph.topics["mid"].partitioner(b"k", 4)) == (4, 3)
    assert [(r.key, r.value) for r in b.run([{"topic": "s", "key": "k", "value": "v", "ts": 1}]).outputs()] == [
        ("k", "v")
    ]
    for through in ({"partitions": 4}, {"partitioner": {"map": {"k": 1}}}):
        doc = {
            "partitions": 2,
            "topology": [{"name": "s", "stream": "s"}, {"name": "m", "through": "mid", "input": "s", **through}],
            "events": [{"topic": "s", "key": "k", "value": "v", "ts": 1}],
        }
        doc["topology"].append({"name": "o", "to": "out", "input": "m"})
        TopologyScenario.from_dict(doc)


def test_semantics_is_a_version_string_only():
    with pytest.raises(kjoin.ScenarioError, match=r'Topology\(semantics=...\): a Kafka version as text, e.g. "3.1"'):
        kjoin.Topology(semantics=3.1)
    with pytest.raises(kjoin.ScenarioError, match=r"Topology\(semantics=...\): semantics 'banana' is not a Kafka"):
        kjoin.Topology(semantics="banana")


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    seed=st.integers(0, 2**32),
    base=st.integers(0, 7),
    path=st.integers(0, 1000),
    value=test_input_fuzz.ANY_VALUE,
    action=st.integers(0, 3),
)
def test_any_one_change_to_a_valid_topology_document_is_refused_or_runs(seed, base, path, value, action):
    doc = topology_fuzz.base_documents(random.Random(seed))[base]
    paths = [p for p in input_fuzz._paths(doc) if p]
    chosen = paths[path % len(paths)]
    parent = doc
    for part in chosen[:-1]:
        parent = parent[part]
    last = chosen[-1]
    if action == 0 or not isinstance(parent, dict):
        parent[last] = value
    elif action == 1:
        del parent[last]
    elif action == 2 and isinstance(last, str):
        parent[last + "s"] = parent.pop(last)
    else:
        parent[value if isinstance(value, (str, int)) else "extra"] = value
    outcome, detail = topology_fuzz.run_case(input_fuzz.through_api(doc), lambda: False, SECONDS)
    assert outcome in ("refused", "ran"), f"{outcome}: {detail}"
