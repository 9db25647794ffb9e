"""Cogrouped streams (Kafka's ``CogroupedKStream``, KIP-150): grouped streams aggregated into one table, each by its
own aggregator, in the reference engine."""

from __future__ import annotations

import json

import pytest

from kjoin import Topology
from kjoin.fates import Reason
from kjoin.scenario.fields import ScenarioError
from kjoin.topology import TopologyError
from kjoin.topology.document import TopologyScenario
from kafka_oracle import topology_oracle


def _outputs(trace, topic="out"):
    return [(o.key, o.value, o.ts) for o in trace.outputs(topic)]


def _clicks_and_views(partitions: int = 1) -> Topology:
    b = Topology(partitions=partitions)
    clicks, views = b.stream("clicks"), b.stream("views")
    table = (
        clicks.group_by_key()
        .cogroup(lambda key, value, agg: agg + value)
        .cogroup(views.group_by_key(), lambda key, value, agg: agg + 100 * value)
        .aggregate(lambda: 0)
    )
    table.to_stream().to("out")
    return b


def test_each_grouped_stream_adds_with_its_own_aggregator_into_one_store():
    trace = _clicks_and_views().run(
        [
            {"topic": "clicks", "key": "u", "value": 1, "ts": 5},
            {"topic": "views", "key": "u", "value": 2, "ts": 3},  # older: the aggregate keeps ts 5
            {"topic": "views", "key": "w", "value": 1, "ts": 7},
            {"topic": "clicks", "key": "u", "value": 4, "ts": 9},
        ]
    )
    assert _outputs(trace) == [("u", 1, 5), ("u", 201, 5), ("w", 100, 7), ("u", 205, 9)]


def test_a_null_key_or_value_is_skipped_by_its_streams_aggregate():
    trace = _clicks_and_views().run(
        [
            {"topic": "clicks", "key": None, "value": 1, "ts": 1},
            {"topic": "views", "key": "u", "value": None, "ts": 2},
            {"topic": "views", "key": "u", "value": 3, "ts": 3},
        ]
    )
    assert _outputs(trace) == [("u", 300, 3)]
    reasons = [step.reason for step in trace]
    assert Reason.NULL_KEY in reasons and Reason.NULL_VALUE in reasons


def test_a_rekeyed_grouped_stream_is_read_through_its_own_repartition_topic():
    b = Topology(partitions=2)
    orders, payments = b.stream("orders"), b.stream("payments")
    by_customer = orders.group_by(lambda key, value: value["c"], name="by-customer")
    table = payments.group_by_key().cogroup("concat").cogroup(by_customer, "concat").aggregate("concat", name="spend")
    table.to_stream().to("out")
    trace = b.run(
        [
            {"topic": "orders", "key": "o1", "value": {"c": "c1"}, "ts": 1},
            {"topic": "payments", "key": "c1", "value": "p", "ts": 2},
        ]
    )
    assert [o.value for o in trace.outputs("out")] == ['+{"c":"c1"}', '+{"c":"c1"}+p']
    internal = [name for name, topic in b.graph.topics.items() if topic.internal]
    assert internal == ["by-customer-repartition"]
    assert len(b.graph.subtopologies()) == 2


def test_a_cogroup_read_by_a_join_sends_its_current_aggregate():
    b = Topology()
    totals = (
        b.stream("clicks")
        .group_by_key()
        .cogroup(lambda key, value, agg: agg + value)
        .cogroup(b.stream("views").group_by_key(), lambda key, value, agg: agg - value)
        .aggregate(lambda: 0)
    )
    b.stream("asks").join(totals, lambda ask, total: f"{ask}:{total}").to("out")
    trace = b.run(
        [
            {"topic": "clicks", "key": "u", "value": 5, "ts": 1},
            {"topic": "views", "key": "u", "value": 2, "ts": 2},
            {"topic": "asks", "key": "u", "value": "q", "ts": 3},
        ]
    )
    assert [o.value for o in trace.outputs("out")] == ["q:3"]


def test_streams_of_different_partition_counts_are_refused_as_kafka_refuses_them():
    b = Topology()
    clicks, views = b.stream("clicks", partitions=2), b.stream("views", partitions=3)
    clicks.group_by_key().cogroup("concat").cogroup(views.group_by_key(), "concat").aggregate("concat").to_stream().to(
        "out"
    )
    with pytest.raises(TopologyError, match="not co-partitioned"):
        b.run([])


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda b: b.stream("a").group_by_key().cogroup(3), "expected concat or a Python aggregator"),
        (lambda b: b.stream("a").group_by_key().windowed_by({"size_ms": 5}).cogroup("concat"), "windowed grouped"),
        (lambda b: b.table("t").group_by(lambda k, v: (k, v)).cogroup("concat"), "a grouped table has no cogroup"),
        (
            lambda b: b.stream("a").group_by_key().cogroup("concat").windowed_by({"size_ms": 5}),
            "does not model a windowed cogroup",
        ),
        (lambda b: b.stream("a").group_by_key().cogroup("concat").count(), "has only cogroup, aggregate"),
        (
            lambda b: b.stream("a").group_by_key().cogroup("concat").cogroup(b.stream("c"), "concat"),
            "expected a grouped stream",
        ),
    ],
)
def test_what_kafka_has_no_cogroup_for_is_refused_with_kjoins_error(build, message):
    with pytest.raises(TopologyError, match=message):
        build(Topology())


# -- the topology document -----------------------------------------------------------------------------------------
_DOCUMENT = {
    "partitions": 2,
    "topology": [
        {"name": "clicks", "stream": "clicks"},
        {"name": "views", "stream": "views"},
        {"name": "clicks-grouped", "group_by_key": True, "input": "clicks"},
        {"name": "views-by-user", "group_by": {"field": "user"}, "input": "views"},
        {"name": "activity", "cogroup": ["clicks-grouped", "views-by-user"]},
        {"name": "out", "to": "out", "input": "activity"},
    ],
    "events": [
        {"topic": "clicks", "key": "u1", "value": "c", "ts": 1},
        {"topic": "views", "key": "v1", "value": {"user": "u1"}, "ts": 2},
        {"topic": "clicks", "key": "u2", "value": "d", "ts": 3},
    ],
}


def test_a_document_cogroups_its_grouped_streams_and_writes_itself_back():
    from kjoin.topology.document import TopologyScenario, topology_to_dict

    scenario = TopologyScenario.from_dict(_DOCUMENT)
    trace = scenario.run()
    assert [(o.key, o.value) for o in trace.outputs("out")] == [
        ("u1", "+c"),
        ("u1", '+c+{"user":"u1"}'),
        ("u2", "+d"),
    ]
    written = topology_to_dict(scenario.topology)
    (entry,) = [node for node in written["topology"] if "cogroup" in node]
    assert entry["name"] == "activity" and len(entry["cogroup"]) == 2
    again = TopologyScenario.from_dict({**_DOCUMENT, "topology": written["topology"]})
    assert [(o.key, o.value, o.ts) for o in again.run().outputs("out")] == [
        (o.key, o.value, o.ts) for o in trace.outputs("out")
    ]


@pytest.mark.parametrize(
    "node, message",
    [
        ({"name": "x", "cogroup": []}, r"cogroup: expected \[grouped, ...\]"),
        ({"name": "x", "cogroup": ["clicks"]}, r"cogroup\[0\]: clicks is a stream"),
        ({"name": "x", "cogroup": ["nope"]}, r"cogroup\[0\]: 'nope' names no node"),
    ],
)
def test_a_document_cogroup_of_what_is_not_a_grouped_stream_is_refused_at_its_field(node, message):
    from kjoin.topology.document import TopologyScenario

    data = {**_DOCUMENT, "topology": [*_DOCUMENT["topology"][:3], node]}
    with pytest.raises(ScenarioError, match=message):
        TopologyScenario.from_dict(data)


# -- judged by the real library ------------------------------------------------------------------------------------
def _judged_scenarios() -> list:
    """The document's cogroup (one grouped stream re-keyed) over a few shuffles of keys, null keys and values, and
    out-of-order timestamps, feeding a join that reads the aggregate."""
    import random

    from kjoin.topology.document import TopologyScenario

    topology = [
        *_DOCUMENT["topology"][:5],
        {"name": "asks", "stream": "asks"},
        {"name": "answered", "join": ["asks", "activity"]},
        {"name": "out", "to": "out", "input": "activity"},
        {"name": "answers", "to": "answers", "input": "answered"},
    ]
    scenarios = []
    for seed in range(6):
        rng = random.Random(seed)
        events = []
        for index in range(14):
            topic = rng.choice(["clicks", "views", "asks"])
            user = rng.choice(["u1", "u2", None])
            value: object = f"{topic[0]}{index}"
            if topic == "views":
                value = {"user": user}
                key = f"v{index}"
            else:
                key = user
            if rng.random() < 0.1:
                value = None
            events.append({"topic": topic, "key": key, "value": value, "ts": rng.randrange(0, 20)})
        scenarios.append(TopologyScenario.from_dict({**_DOCUMENT, "topology": topology, "events": events}))
    return scenarios


@pytest.mark.parametrize("version", ["4.4.0", "3.6.2"])
def test_a_cogroup_agrees_with_kafka(built, version):
    batch = _judged_scenarios()
    answers = topology_oracle.run_batch(version, batch)
    problems = [topology_oracle.difference(s, a, version) for s, a in zip(batch, answers)]
    assert problems == [None] * len(batch)
    rows = [row for answer in answers for event in answer["outputs"] for row in event]
    assert len([row for row in rows if row[0] == "out"]) > 20  # the cogroup forwarded
    assert any(row[0] == "answers" for row in rows)  # and a join read it


def test_kafka_before_2_5_has_no_cogroup():
    with pytest.raises(TopologyError, match="has no cogroup"):
        Topology(semantics="2.4").stream("a").group_by_key().cogroup("concat")


def test_the_trace_says_which_grouped_stream_and_aggregator_took_the_record():
    trace = _clicks_and_views().run(
        [{"topic": "clicks", "key": "u", "value": 1, "ts": 5}, {"topic": "views", "key": "u", "value": 2, "ts": 6}]
    )
    stories = [visit.explain for step in trace for visit in step.visits if visit.node.startswith("cogroup")]
    assert stories[0].startswith("From clicks (grouped stream 0, its own aggregator): group u: 0 (initializer)")
    assert stories[1].startswith("From views (grouped stream 1, its own aggregator): group u: 1 → aggregate → 201")


def test_from_describe_leaves_only_the_aggregators_and_initializer_to_fill_in():
    import json
    from pathlib import Path

    fixture = json.loads((Path(__file__).parent / "describe_fixtures" / "variant-cogroup.json").read_text())
    topology = Topology.from_describe(fixture["describe_text"])
    missing = {need.node: need.what for need in topology.described.missing}
    assert missing == {
        "KSTREAM-KEY-SELECT-0000000003": "key selector (key, value) -> new key",
        "COGROUPKSTREAM-AGGREGATE-0000000008": "aggregator (key, value, aggregate) -> aggregate",
        "COGROUPKSTREAM-AGGREGATE-0000000009": "aggregator (key, value, aggregate) -> aggregate",
        "COGROUPKSTREAM-MERGE-0000000010": "initializer () -> aggregate",
    }
    assert not topology.described.refused
    assert "COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition" in topology.graph.topics
    with pytest.raises(TopologyError, match="COGROUPKSTREAM-MERGE-0000000010 needs its initializer"):
        topology.run([{"topic": "payments", "key": "c1", "value": "5", "ts": 1}])


_READERS = {  # what reads the cogroup's table c, and the versions whose Kafka cannot build it (KAFKA-10417)
    "to_stream": ([{"name": "o", "to": "out", "input": "c"}], ()),
    "map_values": (
        [{"name": "m", "map_values": {"append": "!"}, "input": "c"}, {"name": "o", "to": "out", "input": "m"}],
        (),
    ),
    "filter": (
        [{"name": "f", "filter": {"key_in": ["k"]}, "input": "c"}, {"name": "o", "to": "out", "input": "f"}],
        ("2.7.1",),
    ),
    "join through map_values": (
        [
            {"name": "m", "map_values": {"append": "!"}, "input": "c"},
            {"name": "t", "table": "t"},
            {"name": "j", "join": ["m", "t"]},
            {"name": "o", "to": "out", "input": "j"},
        ],
        ("2.6.3", "2.7.1"),
    ),
    "stream-table join": (
        [{"name": "s", "stream": "s"}, {"name": "j", "join": ["s", "c"]}, {"name": "o", "to": "out", "input": "j"}],
        ("2.6.3", "2.7.1"),
    ),
    "suppress": (
        [
            {"name": "sp", "suppress": {"until": "time_limit", "time_limit_ms": 5}, "input": "c"},
            {"name": "o", "to": "out", "input": "sp"},
        ],
        ("2.6.3", "2.7.1"),
    ),
}


@pytest.mark.parametrize("version", ["2.6.3", "2.7.1", "2.8.2"], ids=lambda v: f"kafka-{v}")
def test_a_cogroup_table_is_refused_where_kafka_cannot_build_it(built, version):
    """Before 2.8 (KAFKA-10417) a cogroup's table is a PassThrough: Kafka throws ClassCastException building a
    topology that joins, suppresses or (from 2.7, KAFKA-10077) filters it, and kjoin refuses the same documents;
    what Kafka builds, kjoin runs as Kafka does."""
    base = [
        {"name": "a", "stream": "a"},
        {"name": "ga", "group_by_key": True, "input": "a"},
        {"name": "b", "stream": "b"},
        {"name": "gb", "group_by_key": True, "input": "b"},
        {"name": "c", "cogroup": ["ga", "gb"]},
    ]
    events = [{"topic": "a", "key": "k", "value": "A", "ts": 2}, {"topic": "b", "key": "k", "value": "B", "ts": 3}]
    lines, refused = [], {}
    for number, (name, (readers, unbuildable)) in enumerate(_READERS.items()):
        data = {"semantics": version, "topology": base + readers, "events": events}
        try:
            TopologyScenario.from_dict(data)
        except ScenarioError as error:
            refused[name] = str(error)
        built_as = TopologyScenario.from_dict({**data, "semantics": "2.8"})  # what the harness reads
        document = {**topology_oracle.document(built_as), "semantics": version, "id": number}
        lines.append(json.dumps(document, separators=(",", ":")))
        assert (name in refused) == (version in unbuildable), name
    answers = topology_oracle.harness(version, 1).answer(lines)
    for (name, (readers, unbuildable)), answer in zip(_READERS.items(), answers):
        if name in refused:
            assert "ClassCastException" in answer.get("error", ""), name
            assert "KAFKA-10417" in refused[name] and "to_stream()" in refused[name]
        else:
            assert "error" not in answer, (name, answer.get("error"))
            scenario = TopologyScenario.from_dict({"semantics": version, "topology": base + readers, "events": events})
            assert topology_oracle.difference(scenario, answer, version) is None, name
