"""Topologies that group and aggregate, merge, read a stream as a table, join a global table and run on several
application instances, and the Semantics switches a topology honours. The behaviours pinned by the real
library are judged here through the topology harness (kafka_oracle/topology_oracle.py); the random sweep is
``make topology-check``. Without Java or the jars the judged tests fail, they never skip."""

from __future__ import annotations

import pytest

from kjoin import Topology
from kjoin.fates import Reason
from kjoin.topology import TopologyError, WindowedKey
from kjoin.topology.document import TopologyScenario
from kafka_oracle import topology_oracle


def _outputs(trace, topic="out"):
    return [(o.key, o.value, o.ts) for o in trace.outputs(topic)]


def _judged(data: dict, version: str) -> list:
    """Kafka's outputs for the document ``data`` (asserting kjoin agrees with them)."""
    scenario = TopologyScenario.from_dict(data)
    (answer,) = topology_oracle.run_batch(version, [scenario])
    assert topology_oracle.difference(scenario, answer, version) is None
    return answer["outputs"]


# -- stream aggregates ---------------------------------------------------------------------------------------------
def test_a_stream_aggregate_skips_null_keys_and_values_and_keeps_the_newest_timestamp():
    b = Topology()
    b.stream("orders").group_by(lambda key, value: None if value is None else value["c"]).count().to("out")
    trace = b.run(
        [
            {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 5},
            {"topic": "orders", "key": "o2", "value": None, "ts": 6},  # null value: skipped
            {"topic": "orders", "key": "o3", "value": {"c": "c1"}, "ts": 2},  # older: the aggregate keeps ts 5
            {"topic": "orders", "key": "o4", "value": {"c": "c2"}, "ts": 7},
        ]
    )
    assert _outputs(trace) == [("c1", 1, 5), ("c1", 2, 5), ("c2", 1, 7)]
    reasons = [step.reason for step in trace]
    assert Reason.NULL_KEY_NOT_REPARTITIONED in reasons  # the null group key never reaches the repartition topic
    assert len(b.graph.subtopologies()) == 2  # the group-by's repartition topic cuts the topology


def test_group_by_key_of_an_unchanged_key_needs_no_repartition_topic():
    b = Topology(partitions=2)
    b.stream("orders").group_by_key().reduce(lambda agg, value: agg + value).to("out")
    trace = b.run([{"topic": "orders", "key": "k", "value": v, "ts": i} for i, v in enumerate("abc")])
    assert _outputs(trace) == [("k", "a", 0), ("k", "ab", 1), ("k", "abc", 2)]
    assert len(b.graph.subtopologies()) == 1
    assert not any(topic.internal for topic in b.graph.topics.values())


def test_a_windowed_count_drops_a_record_whose_windows_have_closed():
    b = Topology()
    b.stream("clicks").group_by_key().windowed_by({"size_ms": 10, "grace_ms": 0}).count().to("out")
    trace = b.run(
        [
            {"topic": "clicks", "key": "u", "value": "a", "ts": 3},
            {"topic": "clicks", "key": "u", "value": "b", "ts": 12},  # stream time 12: [0, 10) has closed
            {"topic": "clicks", "key": "u", "value": "c", "ts": 4},
        ]
    )
    assert _outputs(trace) == [("[u@0/10]", 1, 3), ("[u@10/20]", 1, 12)]
    key = trace.outputs("out")[0].key
    assert isinstance(key, WindowedKey) and (key.key, key.start_ms, key.end_ms) == ("u", 0, 10)
    assert trace[2].reason is Reason.EXPIRED_WINDOW


def test_windowed_and_stream_aggregates_agree_with_kafka(built):
    data = {
        "topology": [
            {"name": "orders", "stream": "orders"},
            {"name": "by-c", "group_by": {"field": "c"}, "input": "orders"},
            {"name": "windows", "windowed_by": {"size_ms": 6, "advance_ms": 2, "grace_ms": 1}, "input": "by-c"},
            {"name": "agg", "aggregate": "concat", "input": "windows"},
            {"name": "out", "to": "out", "input": "agg"},
            {"name": "counts", "count": True, "input": "by-c"},
            {"name": "out2", "to": "counts", "input": "counts"},
        ],
        "events": [
            {"topic": "orders", "key": "o1", "value": {"c": "c1", "v": "A"}, "ts": 5},
            {"topic": "orders", "key": "o2", "value": {"c": "c1", "v": "B"}, "ts": 9},
            {"topic": "orders", "key": "o3", "value": {"c": "c1", "v": "C"}, "ts": 1},  # late for every window
            {"topic": "orders", "key": "o4", "value": None, "ts": 9},
        ],
    }
    outputs = _judged(data, "4.4.0")
    assert ["out", "[c1@0/6]", '+{"c":"c1","v":"A"}', 5] in outputs[0]
    assert outputs[2] == [["counts", "c1", "3", 9]]  # late for its window, still counted (no window)


@pytest.mark.parametrize(
    "window",
    [{"inactivity_gap_ms": 3, "grace_ms": 1}, {"time_difference_ms": 4, "grace_ms": 2}],
    ids=["session", "sliding"],
)
def test_session_and_sliding_windows_agree_with_kafka(built, window):
    data = {
        "topology": [
            {"name": "clicks", "stream": "clicks"},
            {"name": "g", "group_by_key": True, "input": "clicks"},
            {"name": "w", "windowed_by": window, "input": "g"},
            {"name": "agg", "aggregate": "concat", "input": "w"},
            {"name": "out", "to": "out", "input": "agg"},
        ],
        "events": [
            {"topic": "clicks", "key": "u", "value": v, "ts": ts}
            for v, ts in [("a", 1), ("b", 6), ("c", 3), ("d", 20), ("e", 2), ("f", 19)]
        ],
    }
    outputs = _judged(data, "4.4.0")
    if "inactivity_gap_ms" in window:  # c at 3 joins [6, 6] (deleted: a tombstone); [1, 1] has closed (close 2)
        assert outputs[2] == [["out", "[u@6/6]", None, 6], ["out", "[u@3/6]", "+b+c", 6]]
    assert sum(len(rows) for rows in outputs) > len(outputs)


@pytest.mark.parametrize(
    "window", [{"size_ms": 10, "grace_ms": 20}, {"inactivity_gap_ms": 3, "grace_ms": 20}], ids=["tumbling", "session"]
)
def test_a_windowed_reduce_deletes_a_null_aggregate_and_merges_sessions_with_its_reducer(built, window):
    """A windowed reduce whose first value is null stores null, which Kafka's window and session stores read as a
    delete (the next value starts afresh, at its own timestamp); a session reduce merges sessions with the reducer
    (``mergerForAggregator``), not by concatenation."""
    data = {
        "topology": [
            {"name": "s", "stream": "s"},
            {"name": "g", "group_by_key": True, "input": "s"},
            {"name": "w", "windowed_by": window, "input": "g"},
            {"name": "r", "reduce": "concat", "input": "w"},
            {"name": "out", "to": "out", "input": "r"},
        ],
        "events": [
            {"topic": "s", "key": "k", "value": None, "ts": 5},
            {"topic": "s", "key": "k", "value": "a", "ts": 3},
            {"topic": "s", "key": "k", "value": "b", "ts": 7},
            {"topic": "s", "key": "k", "value": "c", "ts": 5},
        ],
    }
    outputs = _judged(data, "4.4.0")
    if "size_ms" in window:
        assert outputs[1] == [["out", "[k@0/10]", "a", 3]]  # not 5: the null aggregate was deleted
    else:
        assert outputs[3][-1] == ["out", "[k@3/7]", "a+b+c", 7]  # [3, 3] and [7, 7] merged by the reducer, then c


# -- table aggregates ----------------------------------------------------------------------------------------------
TABLE_AGGREGATE = {
    "topology": [
        {"name": "customers", "table": "customers"},
        {"name": "by-region", "group_by": {"field": "r"}, "input": "customers"},
        {"name": "agg", "reduce": "concat", "input": "by-region"},
        {"name": "out", "to": "out", "input": "agg"},
    ],
    "events": [
        {"topic": "customers", "key": "c1", "value": {"r": "r1", "v": "A"}, "ts": 1},
        {"topic": "customers", "key": "c1", "value": {"r": "r1", "v": "B"}, "ts": 2},  # same group
        {"topic": "customers", "key": "c1", "value": {"r": "r2", "v": "C"}, "ts": 3},  # moves group
        {"topic": "customers", "key": "c1", "value": None, "ts": 4},  # leaves
    ],
}


@pytest.mark.parametrize("version", ["3.4.1", "4.4.0"])
def test_a_table_aggregate_subtracts_then_adds_as_kafka_does(built, version):
    """KIP-904 (3.5): an update that keeps its group is one repartition record (subtract then add: one output);
    before, two records (two outputs, the subtraction first)."""
    outputs = _judged({**TABLE_AGGREGATE, "semantics": version[:3]}, version)
    a, b = '{"r":"r1","v":"A"}', '{"r":"r1","v":"B"}'
    if version == "4.4.0":
        assert outputs[1] == [["out", "r1", f"{a}-{a}+{b}", 2]]
    else:
        assert outputs[1] == [["out", "r1", f"{a}-{a}", 2], ["out", "r1", f"{a}-{a}+{b}", 2]]
    assert [row[1] for row in outputs[2]] == ["r1", "r2"]  # the old group first


def test_a_join_result_grouped_sends_its_old_values_to_the_aggregate(built):
    """A table-table join's result grouped and counted: the join must send Change(new, old) so that a row that
    moves group leaves the old one (Kafka enables old values upstream of a table group-by)."""
    data = {
        "topology": [
            {"name": "customers", "table": "customers"},
            {"name": "addresses", "table": "addresses"},
            {"name": "j", "join": ["customers", "addresses"], "joiner": "object"},
            {"name": "by-r", "group_by": {"field": "left.r"}, "input": "j"},
            {"name": "n", "count": True, "input": "by-r"},
            {"name": "out", "to": "out", "input": "n"},
        ],
        "events": [
            {"topic": "customers", "key": "c1", "value": {"r": "r1"}, "ts": 1},
            {"topic": "addresses", "key": "c1", "value": "A1", "ts": 2},
            {"topic": "addresses", "key": "c1", "value": "A2", "ts": 3},
            {"topic": "customers", "key": "c1", "value": {"r": "r2"}, "ts": 4},
            {"topic": "addresses", "key": "c1", "value": None, "ts": 5},
        ],
    }
    outputs = _judged(data, "4.4.0")
    assert outputs[3] == [["out", "r1", "0", 4], ["out", "r2", "1", 4]]
    assert outputs[4] == [["out", "r2", "0", 5]]


def test_a_table_group_by_takes_latest_versions_only(built):
    """KTableRepartitionMap skips an out-of-order version of a versioned table (KIP-914), judged by Kafka."""
    data = {
        "topology": [
            {"name": "customers", "table": "customers", "history_retention_ms": 100},
            {"name": "by-r", "group_by": {"field": "r"}, "input": "customers"},
            {"name": "n", "count": True, "input": "by-r"},
            {"name": "out", "to": "out", "input": "n"},
        ],
        "events": [
            {"topic": "customers", "key": "c1", "value": {"r": "r1"}, "ts": 5},
            {"topic": "customers", "key": "c1", "value": {"r": "r2"}, "ts": 3},  # an older version: not aggregated
            {"topic": "customers", "key": "c1", "value": {"r": "r2"}, "ts": 6},
        ],
    }
    outputs = _judged(data, "4.4.0")
    assert outputs == [[["out", "r1", "1", 5]], [], [["out", "r1", "0", 6], ["out", "r2", "1", 6]]]
    trace = TopologyScenario.from_dict(data).run()
    assert trace[2].record.event == 1
    assert [v.reason for v in trace[2].visits if v.op == "table-group-by"] == [Reason.OUT_OF_ORDER_VERSION]


def test_a_stream_joined_with_an_aggregate_reads_its_current_value():
    b = Topology()
    counts = b.stream("orders").group_by(lambda key, value: value).count()
    b.stream("payments").select_key(lambda key, value: value).left_join(counts).to("out")
    trace = b.run(
        [
            {"topic": "payments", "key": "p0", "value": "c1", "ts": 0},
            {"topic": "orders", "key": "o1", "value": "c1", "ts": 1},
            {"topic": "orders", "key": "o2", "value": "c1", "ts": 2},
            {"topic": "payments", "key": "p1", "value": "c1", "ts": 3},
        ]
    )
    assert _outputs(trace) == [("c1", "c1-null", 0), ("c1", "c1-2", 3)]


# -- merge, to_table, repartition, global tables -------------------------------------------------------------------
def test_merge_then_re_key_then_join_agrees_with_kafka(built):
    data = {
        "topology": [
            {"name": "orders", "stream": "orders"},
            {"name": "payments", "stream": "payments"},
            {"name": "customers", "table": "customers"},
            {"name": "both", "merge": ["orders", "payments"]},
            {"name": "by-c", "select_key": {"field": "c"}, "input": "both"},
            {"name": "j", "join": ["by-c", "customers"]},
            {"name": "out", "to": "out", "input": "j"},
        ],
        "events": [
            {"topic": "customers", "key": "c1", "value": "Alice", "ts": 0},
            {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 1},
            {"topic": "payments", "key": "p1", "value": {"c": "c1"}, "ts": 2},
        ],
    }
    outputs = _judged(data, "4.4.0")
    assert [len(rows) for rows in outputs] == [0, 1, 1]


def test_to_table_joined_with_a_table_agrees_with_kafka(built):
    data = {
        "topology": [
            {"name": "orders", "stream": "orders"},
            {"name": "customers", "table": "customers"},
            {"name": "by-c", "select_key": {"field": "c"}, "input": "orders"},
            {"name": "latest", "to_table": True, "input": "by-c"},
            {"name": "j", "outer_join": ["latest", "customers"]},
            {"name": "out", "to": "out", "input": "j"},
        ],
        "events": [
            {"topic": "orders", "key": "o1", "value": {"c": "c1", "v": 1}, "ts": 1},
            {"topic": "customers", "key": "c1", "value": "Alice", "ts": 2},
            {"topic": "orders", "key": "o2", "value": {"c": "c1", "v": 2}, "ts": 3},
        ],
    }
    outputs = _judged(data, "4.4.0")
    assert outputs[0] == [["out", "c1", '{"c":"c1","v":1}-null', 1]]


def test_through_writes_a_users_topic_and_reads_it_back(built):
    """``through`` (Kafka's to + stream): the re-keyed stream is read back from the user's topic, so the join
    needs no repartition topic; judged by Kafka on one partition (through is gone from 4.0's API, the harness
    writes it as to and stream)."""
    data = {
        "topology": [
            {"name": "orders", "stream": "orders"},
            {"name": "customers", "table": "customers"},
            {"name": "by-c", "select_key": {"field": "c"}, "input": "orders"},
            {"name": "by-customer", "through": "orders-by-customer", "input": "by-c"},
            {"name": "j", "left_join": ["by-customer", "customers"]},
            {"name": "out", "to": "out", "input": "j"},
        ],
        "events": [
            {"topic": "customers", "key": "c1", "value": "Alice", "ts": 0},
            {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 1},
            {"topic": "orders", "key": "o2", "value": None, "ts": 2},
        ],
    }
    outputs = _judged(data, "4.4.0")
    assert outputs[1] == [["out", "c1", '{"c":"c1"}-Alice', 1]]
    scenario = TopologyScenario.from_dict(data)
    trace = scenario.run()
    assert [r.key for r in trace.records("orders-by-customer")] == ["c1", None]  # a plain sink keeps null keys
    assert not any(topic.internal for topic in scenario.topology.graph.topics.values())
    assert len(scenario.topology.graph.subtopologies()) == 2
    again = TopologyScenario.from_dict({**scenario.topology.to_dict(), "events": data["events"]})
    assert _outputs(again.run()) == _outputs(trace)


def test_repartition_cuts_the_topology_with_its_own_partitions(built):
    b = Topology(partitions=2)
    b.stream("orders").repartition(name="spread", partitions=5).to("out")
    assert b.graph.topics["spread-repartition"].partitions == 5
    assert len(b.graph.subtopologies()) == 2
    events = [
        {"topic": "orders", "key": "k", "value": "v", "ts": 1},
        {"topic": "orders", "key": None, "value": "w", "ts": 2},
    ]
    assert _outputs(b.run(events)) == [("k", "v", 1)]  # a repartition topic takes no null key (no join below)
    data = {**b.to_dict(), "events": events}
    # name= is Repartitioned.as: the document keeps it as the topic's name
    assert data["topology"][1] == {"name": "spread", "repartition": True, "as": "spread", "input": "orders",
                                   "partitions": 5}  # fmt: skip
    assert _judged(data, "4.4.0") == [[["out", "k", "v", 1]], []]


def test_a_global_table_is_looked_up_by_a_key_selector_and_joined_without_co_partitioning(built):
    data = {
        "partitions": 3,
        "topics": {"customers": {"partitions": 1}},
        "topology": [
            {"name": "orders", "stream": "orders"},
            {"name": "customers", "global_table": "customers"},
            {"name": "j", "left_join": ["orders", "customers"], "key_selector": {"field": "c"}},
            {"name": "out", "to": "out", "input": "j"},
        ],
        "events": [
            {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 5},
            {"topic": "customers", "key": "c1", "value": "Alice", "ts": 9},
            {"topic": "orders", "key": "o2", "value": {"c": "c1"}, "ts": 1},
        ],
    }
    outputs = _judged(data, "4.4.0")
    assert outputs[0][0][2].endswith("-null") and outputs[2][0][2].endswith("-Alice")
    scenario = TopologyScenario.from_dict(data)
    assert len(scenario.topology.graph.subtopologies()) == 1  # the global table belongs to none
    # a running application restores its global store before any task runs: both orders find Alice
    trace = scenario.topology.run(scenario.events, "timestamp")
    assert trace[0].task == "global"
    assert [o.value for o in trace.outputs("out")] == ['{"c":"c1"}-Alice', '{"c":"c1"}-Alice']


# -- several instances -----------------------------------------------------------------------------------------------
def _rekey_join(partitions: int = 2) -> Topology:
    b = Topology(partitions=partitions)
    customers = b.table("customers")
    b.stream("orders").select_key(lambda key, value: value["c"]).join(customers).group_by_key().count().to("out")
    return b


EVENTS = [{"topic": "customers", "key": c, "value": c.upper(), "ts": i} for i, c in enumerate(["c1", "c2", "c3"])] + [
    {"topic": "orders", "key": f"o{i}", "value": {"c": f"c{i % 3 + 1}"}, "ts": 10 + i} for i in range(8)
]


@pytest.mark.parametrize("schedule", ["test-driver", "timestamp"])
def test_tasks_spread_over_instances_compute_the_same_outputs(schedule):
    one = _rekey_join().run(EVENTS, schedule)
    b = _rekey_join()
    two = b.run(EVENTS, schedule, instances=2)
    assert _outputs(two) == _outputs(one)
    assert b.tasks() == ["0_0", "0_1", "1_0", "1_1"]
    assert {step.instance for step in two} == {0, 1}
    assert all(step.instance == int(step.task.split("_")[1]) % 2 for step in two)
    assert "(instance " in two[0].explain() and one[0].instance is None
    chosen = {"0_0": 1, "0_1": 1, "1_0": 0, "1_1": 1}
    three = _rekey_join().run(EVENTS, schedule, assignment=chosen)
    assert _outputs(three) == _outputs(one)
    assert all(step.instance == chosen[step.task] for step in three)


def test_an_assignment_names_every_task_of_the_topology():
    with pytest.raises(TopologyError, match="1_1 has none"):
        _rekey_join().run(EVENTS, assignment={"0_0": 0, "0_1": 1, "1_0": 0})
    with pytest.raises(TopologyError, match="not a task"):
        _rekey_join().run(EVENTS, assignment={"9_0": 0})


# -- the document form ------------------------------------------------------------------------------------------------
def test_every_topology_operation_is_written_and_read_back():
    data = {
        "topology": [
            {"name": "orders", "stream": "orders"},
            {"name": "payments", "stream": "payments"},
            {"name": "customers", "table": "customers"},
            {"name": "zones", "global_table": "zones"},
            {"name": "both", "merge": ["orders", "payments"]},
            {"name": "g", "left_join": ["both", "zones"], "key_selector": {"field": "z"}},
            {"name": "by-c", "group_by": {"field": "c"}, "input": "g"},
            {"name": "w", "windowed_by": {"size_ms": 5, "advance_ms": 5, "grace_ms": 0}, "input": "by-c"},
            {"name": "wc", "count": True, "input": "w"},
            {"name": "out", "to": "out", "input": "wc"},
            {"name": "by-r", "group_by": {"field": "r"}, "input": "customers"},
            {"name": "ra", "aggregate": "concat", "input": "by-r"},
            {"name": "out2", "to": "out2", "input": "ra"},
            {"name": "t", "to_table": True, "input": "payments"},
            {"name": "out3", "to": "out3", "input": "t"},
        ],
        "events": [
            {"topic": "zones", "key": "z1", "value": "Z", "ts": 0},
            {"topic": "orders", "key": "o1", "value": {"c": "c1", "z": "z1"}, "ts": 1},
            {"topic": "customers", "key": "c1", "value": {"r": "r1"}, "ts": 2},
            {"topic": "payments", "key": "p1", "value": {"c": "c2"}, "ts": 3},
        ],
    }
    scenario = TopologyScenario.from_dict(data)
    again = TopologyScenario.from_dict({**scenario.topology.to_dict(), "events": data["events"]})
    assert _outputs(again.run(), "out") == _outputs(scenario.run(), "out")
    assert _outputs(again.run(), "out2") == [("r1", '+{"r":"r1"}', 2)]
    assert len(again.topology.graph.subtopologies()) == len(scenario.topology.graph.subtopologies())
    with pytest.raises(Exception, match="grouped stream"):
        TopologyScenario.from_dict(
            {"topology": [{"name": "s", "stream": "s"}, {"name": "c", "count": True, "input": "s"}], "events": []}
        )


# -- Semantics switches ------------------------------------------------------------------------------------------------
SAME_TS_TOMBSTONE = [
    {"topic": "customers", "key": "c1", "value": "R0", "ts": 3},
    {"topic": "customers", "key": "c1", "value": None, "ts": 3},
    {"topic": "customers", "key": "c1", "value": "R1", "ts": 2},
    {"topic": "orders", "key": "c1", "value": "L", "ts": 5},
]


def _versioned_join(semantics: str) -> Topology:
    b = Topology(semantics=semantics)
    b.stream("orders").left_join(b.table("customers", history_retention_ms=100)).to("out")
    return b


def test_a_topology_honours_the_same_timestamp_tombstone_switch(built):
    """A versioned table's tombstone at its latest value's timestamp leaves no trace (the rule on, as Kafka): the
    older R1 becomes the latest and joins. Switched off, the tombstone is a version and R1 sits behind it."""
    on = _versioned_join("4.4").run(SAME_TS_TOMBSTONE)
    off = _versioned_join("4.4-versioned_same_ts_tombstone_leaves_no_trace").run(SAME_TS_TOMBSTONE)
    assert [o.value for o in on.outputs("out")] == ["L-R1"]
    assert [o.value for o in off.outputs("out")] == ["L-null"]
    scenario = TopologyScenario.from_dict({**_versioned_join("4.4").to_dict(), "events": SAME_TS_TOMBSTONE})
    (answer,) = topology_oracle.run_batch("4.4.0", [scenario])
    assert answer["outputs"][3] == [["out", "c1", "L-R1", 5]]


def test_a_topology_honours_the_kip_904_switch():
    def outputs(semantics: str) -> list:
        return _outputs(TopologyScenario.from_dict({**TABLE_AGGREGATE, "semantics": semantics}).run())

    assert len(outputs("4.4")) == 5
    assert len(outputs("4.4-table_aggregate_single_update")) == 6  # the same-group update as two records


def test_why_follows_an_output_to_the_aggregate_and_the_global_row_it_looked_up():
    b = Topology(partitions=2)
    zones = b.global_table("zones")
    counts = b.stream("orders").group_by(lambda key, value: value["c"]).count()
    joined = b.stream("payments").select_key(lambda key, value: value["c"]).join(counts)
    joined.left_join(zones, key_selector=lambda key, value: "z1").to("out")
    events = [
        {"topic": "zones", "key": "z1", "value": "Z", "ts": 0},
        {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 1},
        {"topic": "payments", "key": "p1", "value": {"c": "c1"}, "ts": 2},
    ]
    trace = b.run(events, "timestamp")
    (output,) = trace.outputs("out")
    assert output.value == '{"c":"c1"}-1-Z'
    lines = trace.why(output)
    assert any("looked up the row" in line and "by input event 1" in line for line in lines)  # the count's order
    assert any("looked up the row z1:Z@0" in line and "by input event 0" in line for line in lines)
    assert lines[-1].endswith("is input event 2.")
