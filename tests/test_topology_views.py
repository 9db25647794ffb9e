"""A table's ``filter`` and ``map_values`` (KTableFilter, KTableMapValues) and a stream's ``flat_map_values`` and
``flat_map`` in kjoin's topology builder; the real library judges them in tests/test_topology_oracle.py."""

from __future__ import annotations

import pytest

import kjoin
from kjoin.topology import TopologyError
from kjoin.topology.document import TopologyScenario
from kjoin.topology.functions import java_split

UPDATES = [
    {"topic": "customers", "key": "c2", "value": "A", "ts": 1},
    {"topic": "customers", "key": "c1", "value": "B", "ts": 2},
    {"topic": "customers", "key": "c1", "value": None, "ts": 3},
]


@pytest.mark.parametrize("semantics, spurious", [("2.6", True), ("2.7", False)])
def test_a_filtered_out_row_is_a_tombstone_and_since_2_7_only_for_a_row_the_table_held(semantics, spurious):
    b = kjoin.Topology(semantics=semantics)
    b.table("customers").filter(lambda key, value: key != "c2", name="kept").to("out")
    trace = b.run(UPDATES)
    expected = [("c1", "B"), ("c1", None)]
    assert [(r.key, r.value) for r in trace.outputs()] == ([("c2", None)] + expected if spurious else expected)
    first = next(v for v in trace[0].visits if v.node == "kept")
    assert ("tombstone" if spurious else "nothing to forward") in first.explain


def test_map_values_never_sees_a_deleted_row_and_a_join_reads_it_stored_or_not():
    calls = []

    def upper(value):
        calls.append(value)
        return value.upper()

    for materialized in (False, True):
        calls.clear()
        b = kjoin.Topology()
        names = b.table("customers").map_values(upper, name="upper", materialized=materialized)
        b.stream("orders").join(names, name="j").to("out")
        names.to_stream().to("changes")
        trace = b.run([*UPDATES, {"topic": "orders", "key": "c2", "value": "o", "ts": 4}])
        assert None not in calls
        assert [(r.topic, r.key, r.value) for r in trace.outputs()] == [
            ("changes", "c2", "A"), ("changes", "c1", "B"), ("changes", "c1", None), ("out", "c2", "o-A")
        ]  # fmt: skip
        stores = {store.name for store in trace.state_at(len(trace) - 1)}
        assert ("upper: view" in stores) is materialized


def test_a_view_of_a_versioned_table_is_refused_with_its_reason():
    b = kjoin.Topology()
    with pytest.raises(TopologyError, match="versioned table"):
        b.table("customers", history_retention_ms=10).filter(lambda k, v: True)


def test_java_split_drops_trailing_empty_words_only():
    assert java_split("a b", " ") == ["a", "b"]
    assert java_split(" a  b ", " ") == ["", "a", "", "b"]
    assert java_split("", " ") == [""]
    assert java_split("  ", " ") == []


def test_flat_map_values_and_flat_map_make_one_record_each():
    b = kjoin.Topology(partitions=2)
    lines = b.stream("lines")
    lines.flat_map_values({"split": " ", "lower": True}, name="words").to("words")
    by_word = lines.flat_map(lambda key, line: [(word, key) for word in (line or "").split()], name="by-word")
    by_word.group_by_key().count(name="counts").to("counts")
    trace = b.run([{"topic": "lines", "key": "l1", "value": "To be", "ts": 1},
                   {"topic": "lines", "key": "l2", "value": "be", "ts": 2},
                   {"topic": "lines", "key": "l3", "value": None, "ts": 3}])  # fmt: skip
    assert [(r.key, r.value) for r in trace.outputs() if r.topic == "words"] == [("l1", "to"), ("l1", "be"),
                                                                                  ("l2", "be")]  # fmt: skip
    assert sorted((r.key, r.value) for r in trace.outputs() if r.topic == "counts") == [("To", 1), ("be", 1), ("be", 2)]
    # flat_map re-keys: the count reads a repartition topic, named after its unnamed store, not after its Named.as
    repartition = [name for name, topic in b.graph.topics.items() if topic.internal and name.endswith("-repartition")]
    assert len(repartition) == 1 and "counts" not in repartition[0], repartition
    with pytest.raises(TopologyError, match="list of values"):
        bad = kjoin.Topology()
        bad.stream("lines").flat_map_values(lambda line: line).to("out")
        bad.run([{"topic": "lines", "key": "k", "value": "text", "ts": 1}])


def test_the_document_form_writes_and_reads_them_back():
    data = {
        "topology": [
            {"name": "lines", "stream": "lines"},
            {"name": "words", "flat_map": {"split": " "}, "input": "lines"},
            {"name": "g", "group_by_key": True, "input": "words"},
            {"name": "counts", "count": True, "input": "g"},
            {"name": "big", "filter": {"key_not_in": ["a"]}, "input": "counts", "materialized": True},
            {"name": "out", "to": "out", "input": "big"},
        ],
        "events": [{"topic": "lines", "key": None, "value": "a b a", "ts": 1}],
    }
    scenario = TopologyScenario.from_dict(data)
    written = scenario.topology.to_dict()["topology"]
    assert {"name": "big", "filter": {"key_not_in": ["a"]}, "input": "counts", "materialized": True} in written
    assert {"name": "words", "flat_map": {"split": " "}, "input": "lines"} in written
    again = TopologyScenario.from_dict({**scenario.topology.to_dict(), "events": data["events"]})
    assert [(r.key, r.value) for r in again.run().outputs()] == [("b", 1)]
    with pytest.raises(kjoin.ScenarioError, match="materialized"):
        TopologyScenario.from_dict({**data, "topology": [{"name": "lines", "stream": "lines"},
                                                         {"name": "f", "filter": {"key_in": ["a"]}, "input": "lines",
                                                          "materialized": True}]})  # fmt: skip


def test_the_graph_labels_a_view_as_a_table():
    from kjoin_viz.topology_view import _label

    b = kjoin.Topology()
    view = b.table("customers").filter(lambda k, v: True, name="kept", materialized=True)
    assert _label(view.node, b.graph) == ("filter · table · stored", "kept")


def test_why_follows_a_join_through_a_view_to_the_row_under_it():
    b = kjoin.Topology()
    names = b.table("customers").map_values(str.upper, name="upper")
    b.stream("orders").join(names, name="j").to("out")
    trace = b.run([{"topic": "customers", "key": "c1", "value": "ann", "ts": 1},
                   {"topic": "orders", "key": "c1", "value": "o", "ts": 2}])  # fmt: skip
    (out,) = trace.outputs()
    assert out.value == "o-ANN"
    assert any("written at step 0 by input event 0" in line for line in trace.why(out))
