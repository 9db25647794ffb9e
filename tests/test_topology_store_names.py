"""Stores and repartition topics the application names (``Materialized.as``, ``StreamJoined.withStoreName``,
``Grouped.as``, ``Repartitioned.as``): kjoin's ``describe()`` lists the names the real library's ``describe()``
lists (tests/describe_fixtures/variant-named-stores.json, printed by Kafka 4.4 through tests/describe_cases.py), and
the outputs stay what Kafka emitted."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

import kjoin
from kjoin.topology.describe import parse_describe
from kjoin.topology.document import TopologyScenario
from kafka_oracle import oracle_check, topology_oracle

FIXTURE = json.loads((Path(__file__).parent / "describe_fixtures" / "variant-named-stores.json").read_text())
GENERATED = re.compile(r"\d{10}")
"""A name Kafka generated (its counter): kjoin does not reproduce those, only the application's."""


def _kafka_names(text: str) -> tuple[set[str], set[str]]:
    nodes = parse_describe(text).values()
    stores = {store for node in nodes for store in node.stores if not GENERATED.search(store)}
    stores -= {f"{topic}-store" for node in nodes for topic in node.topics}  # the harness's table stores
    topics = {t for node in nodes for t in node.topics if t.endswith("-repartition") and not GENERATED.search(t)}
    return stores, topics


def _kjoin_names(text: str) -> tuple[set[str], set[str]]:
    stores = {s for found in re.findall(r"\(stores: \[([^\]]*)\]\)", text) for s in found.split(", ")}
    topics = {t for t in re.findall(r"\(topics?: \[?([^\],)]+)", text) if t.endswith("-repartition")}
    return stores, topics


def test_describe_lists_the_store_and_topic_names_kafka_derives_from_the_applications():
    scenario = TopologyScenario.from_dict({"semantics": "4.4", **FIXTURE["document"]})
    kafka_stores, kafka_topics = _kafka_names(FIXTURE["describe_text"])
    assert {"paid-this-join-store", "paid-outer-other-join-store", "paid-left-shared-join-store"} <= kafka_stores
    assert _kjoin_names(scenario.topology.describe()) == (kafka_stores, kafka_topics)
    assert len(scenario.topology.graph.subtopologies()) == FIXTURE["describe_text"].count("Sub-topology:")


def test_named_stores_change_no_outputs():
    scenario = TopologyScenario.from_dict({"semantics": "4.4", **FIXTURE["document"]})
    rows = [[[r.topic, r.key, r.value, r.ts] for r in records] for records in scenario.run().outputs_by_event()]
    unnamed = json.loads(json.dumps(FIXTURE["document"]).replace('"store":', '"_store":').replace('"as":', '"_as":'))
    for node in unnamed["topology"]:
        node.pop("_store", None), node.pop("_as", None)
    plain = TopologyScenario.from_dict({"semantics": "4.4", **unnamed})
    assert [[[r.topic, r.key, r.value, r.ts] for r in records] for records in plain.run().outputs_by_event()] == rows
    assert "store" in json.dumps(scenario.topology.to_dict())  # and the document keeps the names


@pytest.mark.parametrize(
    "variant, stores",
    [
        ("inner", ["s-this-join-store", "s-other-join-store"]),
        ("left", ["s-this-join-store", "s-outer-other-join-store", "s-left-shared-join-store"]),
        ("outer", ["s-outer-this-join-store", "s-outer-other-join-store", "s-outer-shared-join-store"]),
    ],
)
def test_a_stream_stream_joins_store_name_names_its_window_stores_and_outer_buffer(variant, stores):
    b = kjoin.Topology(semantics="4.4")
    left, right = b.stream("a"), b.stream("b")
    getattr(left, {"inner": "join", "left": "left_join", "outer": "outer_join"}[variant])(
        right, window={"before_ms": 5, "after_ms": 5, "grace_ms": 0}, store="s"
    ).to("out")
    assert f"(stores: [{', '.join(stores)}])" in b.describe()


def test_before_3_1_an_outer_join_keeps_no_shared_store():
    b = kjoin.Topology(semantics="3.0")
    b.stream("a").outer_join(b.stream("b"), window={"before_ms": 5, "after_ms": 5, "grace_ms": 0}, store="s").to("o")
    assert "(stores: [s-outer-this-join-store, s-outer-other-join-store])" in b.describe()


def test_an_unnamed_groupings_repartition_topic_is_named_after_the_store():
    b = kjoin.Topology()
    b.stream("orders").group_by(lambda k, v: v).count(store="counts").to_stream().to("out")
    assert "counts-repartition" in b.graph.topics


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda b: b.table("t", store="bad name"), "is illegal"),
        (lambda b: b.stream("s").join(b.table("t"), store="x"), "only a stream-stream join keeps stores"),
        (lambda b: b.stream("s").group_by_key().count(store=3), "non-empty text"),
    ],
)
def test_a_store_name_kafka_would_refuse_is_kjoins_error(make, message):
    with pytest.raises(kjoin.TopologyError, match=message):
        make(kjoin.Topology())


def test_from_describe_keeps_the_named_stores_and_topics():
    from tests.test_topology_describe import fill_for

    text = FIXTURE["describe_text"]
    topology = kjoin.Topology.from_describe(text, fill_for(FIXTURE["document"], text), semantics="4.4")
    assert not topology.described.refused
    ours_stores, ours_topics = _kjoin_names(topology.describe())
    kafka_stores, kafka_topics = _kafka_names(text)
    assert kafka_stores <= ours_stores | {s for s in topology.described.stores}
    assert kafka_topics <= ours_topics


NAMED_GROUPING_TWICE = [
    {"name": "orders", "stream": "orders"},
    {"name": "payments", "stream": "payments"},
    {"name": "by-c", "as": "by-c", "group_by": {"field": "c"}, "input": "orders"},
    {"name": "paid", "group_by_key": True, "input": "payments"},
    {"name": "lists", "aggregate": "concat", "input": "by-c"},
    {"name": "both", "cogroup": ["by-c", "paid"]},
    {"name": "out", "to": "out", "input": "both"},
]


@pytest.mark.parametrize("order", [1, -1])
def test_a_named_grouping_read_by_a_cogroup_and_an_aggregate_is_refused_as_kafka_refuses_it(order):
    nodes = NAMED_GROUPING_TWICE[:4] + NAMED_GROUPING_TWICE[4:6][::order] + NAMED_GROUPING_TWICE[6:]
    with pytest.raises(kjoin.ScenarioError, match="by-c-repartition-filter is already added"):
        TopologyScenario.from_dict({"topology": nodes, "events": []})


@pytest.mark.oracle
def test_the_real_library_refuses_a_named_grouping_read_by_a_cogroup_and_an_aggregate():
    oracle_check.build()
    unnamed = [{k: v for k, v in node.items() if k != "as"} for node in NAMED_GROUPING_TWICE]
    case = TopologyScenario.from_dict({"topology": unnamed, "events": []})  # kjoin builds it without the name
    named = dict(topology_oracle.document(case), topology=NAMED_GROUPING_TWICE)
    answer = topology_oracle.run_batch("4.4.0", [case])[0]
    assert "error" not in answer
    done = subprocess.run(
        ["java", "-cp", oracle_check.classpath("4.4.0"), "kjoin.oracle.TopologyOracle"],
        input=json.dumps({**named, "id": 0}) + "\n", capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "Processor by-c-repartition-filter is already added" in json.loads(done.stdout)["error"]


def test_a_stream_stream_joins_store_name_needs_kafka_2_4():
    b = kjoin.Topology(semantics="2.3")
    with pytest.raises(kjoin.TopologyError, match="no StreamJoined.withStoreName"):
        b.stream("a").join(b.stream("b"), window={"before_ms": 5, "after_ms": 5, "grace_ms": 0}, store="s")


def fk_view_filter(store: str | None, semantics: str = "4.4") -> TopologyScenario:
    """A left foreign-key join (its result named or not), a mapValues of it and a filter of that: a left row whose
    foreign key is null joins nothing (a left result from 3.7, KIP-962), and its mapped value fails the filter."""
    join = {"name": "j", "left_join": ["orders", "customers"], "foreign_key": "c"} | ({"store": store} if store else {})
    nodes = [
        {"name": "orders", "table": "orders"},
        {"name": "customers", "table": "customers"},
        join,
        {"name": "v", "map_values": {"field": "f"}, "input": "j"},
        {"name": "kept", "filter": {"value_not_null": True}, "input": "v"},
        {"name": "out", "to": "out", "input": "kept"},
    ]
    events = [{"topic": "orders", "key": "o1", "value": "no-customer", "ts": 0}]
    return TopologyScenario.from_dict({"semantics": semantics, "topology": nodes, "events": events})


def test_a_named_foreign_key_result_gives_a_filter_below_its_old_values():
    """``Materialized.as`` gives the foreign-key join's ``KTableSource`` a queryable name: asked for old values
    without being forced (``KTableFilter``, KAFKA-10077), it says yes, and the filter forwards no tombstone for a
    row it never held; unnamed, it says no and the filter forwards one."""
    assert [(r.key, r.value) for r in fk_view_filter(None).run().outputs("out")] == [("o1", None)]
    assert fk_view_filter("j-store").run().outputs("out") == []


@pytest.mark.oracle
@pytest.mark.parametrize("version", ["4.4.0", "3.7.2"])
def test_the_real_library_drops_the_named_foreign_key_results_tombstone_as_kjoin_does(version):
    oracle_check.build()
    cases = [fk_view_filter(store, version) for store in (None, "j-store")]
    answers = topology_oracle.run_batch(version, cases)
    assert [answer["outputs"] for answer in answers] == [[[["out", "o1", None, 0]]], [[]]]
    for case, answer in zip(cases, answers):
        assert topology_oracle.difference(case, answer, version) is None


def named_join_read_early(store: str | None) -> TopologyScenario:
    """``t``'s map_values (its first child) and its outer join with ``u`` (named or not), joined with each other: an
    update of ``t`` reaches the map_values first, whose join below looks the outer join's result up before the outer
    join has seen the update."""
    join = {"name": "j", "outer_join": ["t", "u"]} | ({"store": store} if store else {})
    nodes = [
        {"name": "t", "table": "t"},
        {"name": "v", "map_values": {"field": "f"}, "input": "t"},
        {"name": "u", "table": "u"},
        join,
        {"name": "k", "join": ["j", "v"]},
        {"name": "out", "to": "out", "input": "k"},
    ]
    events = [{"topic": "t", "key": "k1", "value": {"f": "x"}, "ts": 1}]
    return TopologyScenario.from_dict({"semantics": "4.4", "topology": nodes, "events": events})


def test_a_named_table_join_is_read_through_its_store():
    """``KTableKTableJoinMerger.view()``: unnamed, the join's rows are its parents' joined on the fly, so the early
    lookup already finds the new result; named, its store, which the merger fills only when the update reaches it."""
    unnamed = [r.value for r in named_join_read_early(None).run().outputs("out")]
    named = [r.value for r in named_join_read_early("j-store").run().outputs("out")]
    assert unnamed == ['{"f":"x"}-null-x', '{"f":"x"}-null-x'] and named == ['{"f":"x"}-null-x']


@pytest.mark.oracle
def test_the_real_library_reads_a_named_table_join_through_its_store():
    oracle_check.build()
    cases = [named_join_read_early(store) for store in (None, "j-store")]
    answers = topology_oracle.run_batch("4.4.0", cases)
    assert [len(answer["outputs"][0]) for answer in answers] == [2, 1]
    for case, answer in zip(cases, answers):
        assert topology_oracle.difference(case, answer, "4.4.0") is None


AGGREGATE_NAMES_JAVA = """package kjoin.oracle;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.state.KeyValueStore;

public class AggregateNames {
    static String describe(Consumer<StreamsBuilder> build) {
        StreamsBuilder builder = new StreamsBuilder();
        build.accept(builder);
        return builder.build().describe().toString();
    }

    static Materialized<String, Long, KeyValueStore<Bytes, byte[]>> store(String name) {
        return Materialized.as(name);
    }

    public static void main(String[] args) {
        List<Object> texts = new ArrayList<>();
        texts.add(describe(b -> b.<String, String>stream("orders").groupBy((k, v) -> v).count(Named.as("counts"))));
        texts.add(describe(b -> b.<String, String>stream("orders").groupBy((k, v) -> v)
            .count(Named.as("counts"), store("order-counts"))));
        texts.add(describe(b -> b.<String, String>table("customers").groupBy((k, v) -> KeyValue.pair(v, v))
            .count(Named.as("counts"))));
        texts.add(describe(b -> b.<String, String>table("customers").groupBy((k, v) -> KeyValue.pair(v, v))
            .count(Named.as("counts"), store("region-counts"))));
        System.out.println(Json.write(texts));
    }
}
"""
"""Kafka 4.4's ``count(Named.as("counts")[, Materialized.as(store)])`` of a re-keyed stream and of a table's group-by,
each ``describe()``d."""


def _kjoin_aggregate_topology(table: bool, store: str | None) -> kjoin.Topology:
    b = kjoin.Topology(semantics="4.4")
    if table:
        b.table("customers").group_by(lambda k, v: (v, v)).count(name="counts", store=store)
    else:
        b.stream("orders").group_by(lambda k, v: v).count(name="counts", store=store)
    return b


def _repartition_topics(topics: Any) -> list[str]:
    return sorted({t for t in topics if t.endswith("-repartition")})


@pytest.mark.oracle
def test_an_aggregates_name_names_no_repartition_topic_as_in_kafkas_describe(tmp_path):
    """Named.as names the aggregate's processor; its repartition topic is named after the store
    (GroupedStreamAggregateBuilder.build, KGroupedTableImpl.doAggregate): ``<store>-repartition``, or a generated name
    for an unnamed store. The real library's describe() judges kjoin's topic for each case (the harness built by
    ``make kafka-oracle``: ``oracle_check.classpath`` says so when it is not)."""
    source = tmp_path / "kjoin" / "oracle" / "AggregateNames.java"
    source.parent.mkdir(parents=True)
    source.write_text(AGGREGATE_NAMES_JAVA)
    classpath = oracle_check.classpath("4.4.0")
    subprocess.run(["javac", "-nowarn", "-d", str(tmp_path), "-cp", classpath, str(source)], check=True)
    done = subprocess.run(
        ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{tmp_path}:{classpath}", "kjoin.oracle.AggregateNames"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    texts = json.loads(done.stdout.strip().splitlines()[-1])
    cases = [(False, None), (False, "order-counts"), (True, None), (True, "region-counts")]
    for (table, store), text in zip(cases, texts, strict=True):
        (kafka_topic,) = _repartition_topics(t for node in parse_describe(text).values() for t in node.topics)
        topology = _kjoin_aggregate_topology(table, store)
        (ours,) = _repartition_topics(name for name, topic in topology.graph.topics.items() if topic.internal)
        assert "counts-repartition" not in (kafka_topic, ours), (kafka_topic, ours)
        if store is None:  # generated by both, each with its own counter
            assert GENERATED.search(kafka_topic) and GENERATED.search(ours), (kafka_topic, ours)
        else:
            assert ours == kafka_topic == f"{store}-repartition"


def _internal(topology: kjoin.Topology) -> tuple[set[str], set[str]]:
    """kjoin's repartition topics, and those it claims Kafka names as it does (the others Kafka names by its
    counter)."""
    topology.build()
    topics = {name for name, topic in topology.graph.topics.items() if topic.internal and name.endswith("-repartition")}
    return topics, topics & topology.kafka_named_topics


def test_a_joins_name_names_its_repartition_topic_as_kafkas_joined_as_does():
    """The course's app with each operation named (``named-whole-app``, printed by Kafka 4.4's describe()):
    ``join(..., name="with-name")`` is ``Joined.as``, whose topic Kafka names ``with-name-repartition``;
    ``node=`` names kjoin's node only."""
    text = json.loads((Path(__file__).parent / "describe_fixtures" / "kafka_examples.json").read_text())["examples"]
    kafka_topics = {t for node in parse_describe(text["named-whole-app"]).values() for t in node.topics}
    for keyword, claimed in (("name", {"with-name-repartition"}), ("node", set())):
        b = kjoin.Topology(semantics="4.4")
        orders = b.stream("orders").select_key(lambda k, v: v, name="by-customer")
        orders.join(b.table("customers"), **{keyword: "with-name"}).to("enriched-orders")
        topics, named = _internal(b)
        assert named == claimed and named <= kafka_topics
        assert topics == ({"with-name-repartition"} if claimed else {"by-customer-repartition"})
        assert "with-name" in b.graph.nodes


NAMED_AND_UNNAMED = {
    "repartition": [{"name": "r", "repartition": True, "input": "s"}],
    "repartition-as": [{"name": "r", "repartition": True, "as": "moved", "input": "s"}],
    "stream-table": [{"name": "k", "select_key": {"field": "c"}, "input": "s"},
                     {"name": "j", "join": ["k", "t"]}],
    "stream-stream": [{"name": "k", "select_key": {"field": "c"}, "input": "s"},
                      {"name": "j", "left_join": ["k", "u"], "window": {"before_ms": 5, "after_ms": 5, "grace_ms": 0}}],
    "to-table": [{"name": "k", "select_key": {"field": "c"}, "input": "s"}, {"name": "j", "to_table": True,
                                                                             "input": "k"}],
    "grouping": [{"name": "g", "group_by": {"field": "c"}, "input": "s"}, {"name": "j", "count": True, "input": "g"}],
    "grouping-as": [{"name": "g", "group_by": {"field": "c"}, "as": "by-c", "input": "s"},
                    {"name": "j", "count": True, "input": "g"}],
    "store": [{"name": "g", "group_by": {"field": "c"}, "input": "s"},
              {"name": "j", "count": True, "store": "counts", "input": "g"}],
}  # fmt: skip
"""Each internal topic a document names or leaves to Kafka: a repartition (``as``: ``Repartitioned.as``), a re-keyed
stream-table and stream-stream join and ``to_table`` (the harness names no join: Kafka's counter), a grouping
(``as``: ``Grouped.as``) and an aggregate's store (``store``: ``<store>-repartition``)."""


def _named_case(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    last = nodes[-1]["name"]
    topology = [{"name": "s", "stream": "s"}, {"name": "t", "table": "t"}, {"name": "u", "stream": "u"}, *nodes]
    if "count" in nodes[-1] or "to_table" in nodes[-1]:
        topology.append({"name": "c", "to_stream": True, "input": last})
        last = "c"
    topology.append({"name": "out", "to": "out", "input": last})
    return {"topology": topology, "events": [{"topic": "s", "key": "k", "value": {"c": "x"}, "ts": 1}]}


@pytest.mark.oracle
@pytest.mark.parametrize("version", ["4.4.0", "3.3.2", "2.8.2"])
def test_named_and_unnamed_internal_topics_come_out_as_the_real_librarys_describe_names_them(version):
    """Every repartition topic kjoin claims is named so in the real library's describe(), and every one Kafka names
    after the application is claimed; the rest Kafka names with its counter (one JVM per version)."""
    semantics = str(kjoin.parse_semantics(version))
    cases = {name: _named_case(nodes) for name, nodes in NAMED_AND_UNNAMED.items()}
    documents = [
        {"id": i, "partitions": 1, "semantics": semantics, **case, "outputs": ["out"], "describe_text": True}
        for i, case in enumerate(cases.values())
    ]
    done = subprocess.run(
        ["nice", "-n", "15", "java", "-XX:TieredStopAtLevel=1", "-cp", oracle_check.classpath(version),
         "kjoin.oracle.TopologyOracle"],
        input="\n".join(json.dumps(d) for d in documents) + "\n", capture_output=True, text=True, check=True,
    )  # fmt: skip
    for (name, case), line in zip(cases.items(), done.stdout.splitlines(), strict=True):
        answer = json.loads(line)
        assert "error" not in answer, (name, answer)
        kafka = {t for node in parse_describe(answer["describe_text"]).values() for t in node.topics}
        kafka = {t for t in kafka if t.endswith("-repartition")}
        topics, claimed = _internal(TopologyScenario.from_dict({"semantics": semantics, **case}).topology)
        assert claimed == {t for t in kafka if not GENERATED.search(t)}, (name, claimed, kafka)
        assert len(topics) == len(kafka), (name, topics, kafka)
