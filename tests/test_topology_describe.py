"""``Topology.from_describe`` on texts the real library printed (tests/describe_fixtures/, made by
``python -m tests.describe_cases``): kjoin's topology rebuilt from the text alone, run, emits what the real app
emitted; Kafka's example applications are built or refused with their reasons."""

from __future__ import annotations

import json
from typing import Any

import pytest

import kjoin
from kjoin.records import render_value
from kjoin.topology import TopologyError
from kjoin.topology.describe import OPERATIONS, parse_describe, role
from tests import describe_cases

FIXTURES = describe_cases.FIXTURES
CASES = sorted(p.name for p in FIXTURES.glob("*.json") if p.name != "kafka_examples.json")
JOIN_RESULTS = ("KSTREAM-JOIN-", "KSTREAM-LEFTJOIN-", "KSTREAM-MERGE-", "KTABLE-MERGE-", "KTABLE-FK-JOIN-OUTPUT-")


def _load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def fill_for(document: dict[str, Any], text: str) -> dict[str, Any]:
    """What a user fills in: each function of the document, given to the processor Kafka built for it. Kafka numbers
    processors in the order the application builds them, so the n-th key selector of the document is the n-th
    KSTREAM-KEY-SELECT, the n-th join the n-th join result (the harness builds the nodes in document order)."""
    parsed = parse_describe(text)
    nodes = sorted(parsed.values(), key=lambda n: n.number)

    def kafka(*prefixes: str) -> list[Any]:
        return [n for n in nodes if n.name.startswith(prefixes)]

    internal = {t for n in nodes if n.kind == "Source" for t in n.topics}
    user_filters = [
        n for n in kafka("KSTREAM-FILTER-")
        if not any(c.startswith("KSTREAM-SINK") and parse_describe(text)[c].topics[0] in internal for c in n.children)
    ]  # fmt: skip
    joins = [
        n
        for n in kafka(*JOIN_RESULTS)  # a KStream.merge is no join's result
        if not n.name.startswith("KSTREAM-MERGE-") or any(role(parsed[p]) for p in n.parents)
    ]
    # a stream's group_by is a KSTREAM-KEY-SELECT, a table's a KTABLE-SELECT; the harness writes a windowed
    # aggregate's key ([key@start/end], which kjoin's windowed keys already are) as text with a KSTREAM-MAP, and a
    # count's Long as text with a KTABLE-MAPVALUES (String.valueOf: kjoin's str of its count)
    queues = {"select_key": kafka("KSTREAM-KEY-SELECT-"), "map_values": kafka("KSTREAM-MAPVALUES-"),
              "filter": user_filters, "join": joins, "table_group_by": kafka("KTABLE-SELECT-"),
              "aggregate": kafka("KSTREAM-AGGREGATE-", "KSTREAM-REDUCE-", "KTABLE-AGGREGATE-", "KTABLE-REDUCE-"),
              "windowed_key": kafka("KSTREAM-MAP-"), "table_filter": kafka("KTABLE-FILTER-"),
              "table_map_values": kafka("KTABLE-MAPVALUES-"), "flat_map_values": kafka("KSTREAM-FLATMAPVALUES-"),
              "flat_map": kafka("KSTREAM-FLATMAP-"), "suppress": kafka("KTABLE-SUPPRESS-"),
              "cogroup": kafka("COGROUPKSTREAM-MERGE-"),
              "cogroup_aggregate": kafka("COGROUPKSTREAM-AGGREGATE-0"),
              "process_values": kafka("KSTREAM-PROCESSVALUES-")}  # fmt: skip
    by_name = {node["name"]: node for node in document["topology"]}
    tables: set[str] = set()  # the document's nodes that are tables
    fill: dict[str, Any] = {}
    for node in document["topology"]:
        op = next((k for k in ("select_key", "map_values", "filter", "filter_not", "group_by", "flat_map_values",
                               "flat_map") if k in node), None)  # fmt: skip
        variant = next((v for v in ("join", "left_join", "outer_join") if v in node), None)
        kind = next((k for k in ("count", "reduce", "aggregate") if k in node), None)
        reads_table = node.get("input") in tables or (variant is not None and node[variant][0] in tables)
        view = reads_table and op in ("filter", "filter_not", "map_values")
        if "table" in node or "to_table" in node or kind is not None or view or "cogroup" in node or "suppress" in node:
            tables.add(node["name"])
        elif variant is not None and reads_table and "key_selector" not in node:
            tables.add(node["name"])
        if op == "group_by" and "as" in node and node["input"] not in tables:  # Grouped.as names its key select
            fill[node["as"]] = {"op": "select_key", "fn": node[op]}
        elif op == "group_by":
            table = node["input"] in tables
            fill[queues["table_group_by" if table else "select_key"].pop(0).name] = node[op]
        elif op == "filter_not":  # a KSTREAM-FILTER or KTABLE-FILTER like filter's: the fill says it is negated
            fill[queues["table_filter" if reads_table else "filter"].pop(0).name] = {"op": op, "fn": node[op]}
        elif op in ("filter", "map_values") and reads_table:
            fill[queues[f"table_{op}"].pop(0).name] = node[op]
        elif op is not None:
            fill[queues[op].pop(0).name] = node[op]
        elif kind is not None:
            spec = {kind: node[kind]}
            grouping = by_name[node["input"]]
            if "windowed_by" in grouping:
                spec["windows"] = grouping["windowed_by"]
                if "emit_strategy" in grouping:
                    spec["emit_strategy"] = grouping["emit_strategy"]
            fill[queues["aggregate"].pop(0).name] = spec
            if kind == "count":
                fill[queues["table_map_values"].pop(0).name] = str
        elif "process_values" in node:
            fill[queues["process_values"].pop(0).name] = node["process_values"]
        elif "split" in node:  # split(Named.as(name)): the branches <name><branch name>, predicates in order
            fill[node["name"]] = {
                node["name"] + branch["name"]: "default" if branch.get("default") else branch["filter"]
                for branch in node["split"]
            }
        elif "suppress" in node:
            fill[queues["suppress"].pop(0).name] = node["suppress"]
        elif "cogroup" in node:
            fill[queues["cogroup"].pop(0).name] = "concat"
            for _ in node["cogroup"]:
                fill[queues["cogroup_aggregate"].pop(0).name] = "concat"
        elif variant is not None:
            target = queues["join"].pop(0)
            spec = {key: node[key] for key in ("joiner", "window", "foreign_key", "grace_ms", "key_selector")
                    if key in node}  # fmt: skip
            if target.name.startswith(("KTABLE-MERGE-", "KTABLE-FK-JOIN-OUTPUT-")) or "key_selector" in node:
                spec["variant"] = {"join": "inner", "left_join": "left", "outer_join": "outer"}[variant]
            fill[target.name] = spec
    for windowed_key in queues.pop("windowed_key"):  # one before each sink of a windowed key
        fill[windowed_key.name] = lambda key, value: (key, value)
    assert not any(queues.values()), f"processors left without a function: {queues}"
    return fill


def rows(records: list[Any]) -> list[list[Any]]:
    rows = [[r.topic, None if r.key is None else render_value(r.key), None if r.value is None else
             render_value(r.value), r.ts] for r in records]  # fmt: skip
    return sorted(rows, key=lambda row: row[0])


@pytest.mark.parametrize("case", CASES)
def test_rebuilt_from_describe_emits_what_kafka_emitted(case: str) -> None:
    fixture = _load(case)
    text, document = fixture["describe_text"], fixture["document"]
    topology = kjoin.Topology.from_describe(text, fill_for(document, text), semantics=describe_cases.SEMANTICS)
    described = topology.described
    assert described.refused == [] and described.missing == [], described.report()
    trace = topology.run(document["events"])
    ours = [rows(records) for records in trace.outputs_by_event()]
    assert ours == fixture["outputs"], f"{case}: kjoin from describe() differs from Kafka {fixture['kafka']}"
    # the internal topics are Kafka's own: the repartition topics keep their names
    theirs = {
        t for n in parse_describe(text).values() if n.kind == "Source" for t in n.topics if t.endswith("-repartition")
    }
    mine = {t.name for t in topology.graph.topics.values() if t.internal and t.name.endswith("-repartition")}
    assert mine == theirs
    # a global table's sub-topology makes no tasks (Kafka: "for global store (will not generate tasks)"), kjoin's none
    tasks = {n.subtopology for n in parse_describe(text).values() if not n.subtopology.endswith("(global)")}
    assert len(topology.graph.subtopologies()) == len(tasks)


@pytest.mark.oracle
def test_fixtures_are_what_the_real_library_prints() -> None:
    """The committed texts and outputs are regenerated by the harness (Java and `make kafka-oracle` needed)."""
    fresh = describe_cases.generate()
    assert sorted(fresh) == sorted(p.name for p in FIXTURES.glob("*.json"))
    for name, data in fresh.items():
        assert describe_cases.dump(data) == (FIXTURES / name).read_text(), (
            f"{name} is stale: python -m tests.describe_cases"
        )


def _example(name: str) -> Any:
    return kjoin.Topology.from_describe(_load("kafka_examples.json")["examples"][name])


def _refused(topology: Any) -> dict[str, str]:
    return {r.node: r.reason for r in topology.described.refused}


def test_kafka_pipe_example_runs() -> None:
    topology = _example("kafka-pipe")
    assert topology.described.refused == []
    trace = topology.run([{"topic": "streams-plaintext-input", "key": "k", "value": "hello", "ts": 1}])
    assert [(r.topic, r.value) for r in trace.outputs()] == [("streams-pipe-output", "hello")]


def test_a_custom_processor_is_refused_with_its_reason() -> None:
    """WordCountProcessorDemo (Topology.addProcessor with a store): the one Kafka example kjoin cannot build."""
    processor = _refused(_example("kafka-word-count-processor"))
    assert "custom processor" in processor["Process"] and "Counts" in processor["Process"]
    assert "punctuations" in processor["Process"]
    assert "downstream of Process" in processor["Sink"]


def test_kafka_word_count_example_counts_as_kafka_counted() -> None:
    """WordCountDemo's own describe() text (flatMapValues, groupBy, count, toStream), filled in, emits what Kafka's
    WordCountDemo emitted for the same lines (the fixture kafka-word-count: the same application, its counts as
    text). Its flatMapValues is {split: " ", lower: true}, Java's String.split (trailing empty words dropped)."""
    text = _load("kafka_examples.json")["examples"]["kafka-word-count"]
    bare = kjoin.Topology.from_describe(text).described
    assert {need.node for need in bare.missing} == {"KSTREAM-FLATMAPVALUES-0000000001", "KSTREAM-KEY-SELECT-0000000002",
                                                     "KSTREAM-AGGREGATE-0000000004"}  # fmt: skip
    # describe() names a count and an aggregate alike: refused until told which, the rest built
    assert [r.node for r in bare.refused if "downstream" not in r.reason] == ["KSTREAM-AGGREGATE-0000000004"]
    fill = {
        "KSTREAM-FLATMAPVALUES-0000000001": {"split": " ", "lower": True},
        "KSTREAM-KEY-SELECT-0000000002": lambda key, word: word,
        "KSTREAM-AGGREGATE-0000000004": {"count": True},
    }
    topology = kjoin.Topology.from_describe(text, fill, semantics=describe_cases.SEMANTICS)
    assert topology.described.refused == [] and topology.described.missing == [], topology.described.report()
    assert "KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition" in topology.graph.topics
    judged = _load("kafka-word-count.json")
    ours = [rows(records) for records in topology.run(judged["document"]["events"]).outputs_by_event()]
    assert ours == judged["outputs"]
    assert any(row[1] == "kafka" and row[2] == "3" for event in ours for row in event)  # counted across lines


def test_kafka_line_split_and_page_view_examples_run_once_filled_in() -> None:
    """LineSplit (flatMapValues) and PageViewUntypedDemo (a table's mapValues looked up by a stream-table left join,
    a re-key, hopping windows counted): describe() lists only the store under the mapValues, and the view nothing
    reads as a stream is the table the join looks up (the report says so)."""
    import re

    examples = _load("kafka_examples.json")["examples"]
    split = kjoin.Topology.from_describe(
        examples["kafka-line-split"], {"KSTREAM-FLATMAPVALUES-0000000001": lambda line: re.split(r"\W+", line)}
    )
    trace = split.run([{"topic": "streams-plaintext-input", "key": "l", "value": "Hello, Kafka streams", "ts": 1}])
    assert [r.value for r in trace.outputs()] == ["Hello", "Kafka", "streams"]
    fill = {
        "KTABLE-MAPVALUES-0000000004": lambda profile: profile.split(",")[0],
        "KSTREAM-LEFTJOIN-0000000005": lambda view, region: f"{view}@{region or 'UNKNOWN'}",
        "KSTREAM-MAP-0000000006": lambda user, view_region: (view_region.split("@")[1], view_region),
        "KSTREAM-AGGREGATE-0000000008": {"count": True,
                                         "windows": {"size_ms": 7000, "advance_ms": 1000, "grace_ms": 1000}},
        "KSTREAM-MAP-0000000013": lambda key, count: (key.key, str(count)),
    }  # fmt: skip
    page_view = kjoin.Topology.from_describe(examples["kafka-page-view-untyped"], fill)
    described = page_view.described
    assert described.refused == [] and described.missing == [], described.report()
    assert page_view.graph.nodes["KSTREAM-LEFTJOIN-0000000005"].params["table"].name == "KTABLE-MAPVALUES-0000000004"
    assert any(need.default == "KTABLE-MAPVALUES-0000000004" for need in described.needs)
    trace = page_view.run([
        {"topic": "streams-userprofile-input", "key": "alice", "value": "europe,30", "ts": 1000},
        {"topic": "streams-pageview-input", "key": "alice", "value": "p1", "ts": 2000},
        {"topic": "streams-pageview-input", "key": "bob", "value": "p2", "ts": 3000},
    ])  # fmt: skip
    # each view in the windows [1000, 8000) and [2000, 9000) (resp. up to [3000, 10000)) of its region
    assert [(r.key, r.value) for r in trace.outputs()] == [("europe", "1"), ("europe", "1"), ("europe", "1"),
                                                          ("UNKNOWN", "1"), ("UNKNOWN", "1"), ("UNKNOWN", "1"),
                                                          ("UNKNOWN", "1")]  # fmt: skip


def test_kafka_temperature_example_runs_once_its_functions_are_filled_in() -> None:
    """TemperatureDemo: selectKey, groupByKey, 5 s tumbling windows (grace 1 s), reduce to the maximum, toStream,
    filter > 20. The text names the reduce, not its reducer nor its windows: the report asks, and filled in it runs."""
    text = _load("kafka_examples.json")["examples"]["kafka-temperature"]
    bare = kjoin.Topology.from_describe(text).described
    assert {need.node for need in bare.missing} == {"KSTREAM-KEY-SELECT-0000000001", "KSTREAM-REDUCE-0000000003",
                                                     "KSTREAM-FILTER-0000000008"}  # fmt: skip
    assert any("windows" in need.what and need.default == "not windowed" for need in bare.needs)
    fill = {
        "KSTREAM-KEY-SELECT-0000000001": lambda key, value: "temp",
        "KSTREAM-REDUCE-0000000003": {"reduce": lambda a, b: a if int(a) > int(b) else b,
                                      "windows": {"size_ms": 5000, "grace_ms": 1000}},
        "KSTREAM-FILTER-0000000008": lambda key, value: int(value) > 20,
    }  # fmt: skip
    topology = kjoin.Topology.from_describe(text, fill)
    assert topology.described.refused == [] and topology.described.missing == [], topology.described.report()
    assert "KSTREAM-REDUCE-STATE-STORE-0000000002-repartition" in topology.graph.topics
    events = [{"topic": "iot-temperature", "key": "s1", "value": v, "ts": ts}
              for v, ts in (("18", 1000), ("25", 2000), ("22", 3000), ("30", 6000), ("19", 4000))]  # fmt: skip
    trace = topology.run(events)
    # 18 is the maximum but not above 20; 19 at 4000 comes when stream time 6000 has closed [0, 5000) (+1 s grace)
    assert [(r.key, r.value) for r in trace.outputs()] == [
        ("[temp@0/5000]", "25"), ("[temp@0/5000]", "25"), ("[temp@5000/10000]", "30")
    ]  # fmt: skip


def test_kafka_global_table_join_example_runs() -> None:
    """A stream joined with a GlobalKTable: Kafka names the inner join KSTREAM-LEFTJOIN and prints no lookup key, so
    both are filled in (the report says what it assumed without them)."""
    text = _load("kafka_examples.json")["examples"]["kafka-global-table-join"]
    bare = kjoin.Topology.from_describe(text)
    assert bare.described.refused == []
    assumed = {need.what.split(" ")[0]: need.default for need in bare.described.needs if not need.given}
    assert assumed["variant"] == "left" and assumed["key_selector"] == "the stream's key"
    fill = {"KSTREAM-LEFTJOIN-0000000004": {"variant": "inner", "key_selector": lambda key, value: value.split(",")[0],
                                            "joiner": lambda order, product: f"{order}/{product}"}}  # fmt: skip
    topology = kjoin.Topology.from_describe(text, fill)
    assert topology.graph.nodes["KTABLE-SOURCE-0000000003"].op == "global-table"
    trace = topology.run([
        {"topic": "orders", "key": "o1", "value": "p1,2", "ts": 1},  # no product p1 yet: an inner join drops it
        {"topic": "products", "key": "p1", "value": "book", "ts": 2},
        {"topic": "orders", "key": "o2", "value": "p1,1", "ts": 3},
    ])  # fmt: skip
    assert [(r.topic, r.key, r.value) for r in trace.outputs()] == [("enriched-orders", "o2", "p1,1/book")]


def test_aggregates_are_one_table_entry() -> None:
    """Every aggregate processor, a table's group-by and toTable are built by one entry each of the table."""
    prefixes = {op.prefix: op for op in OPERATIONS}
    for prefix in ("KSTREAM-AGGREGATE", "KSTREAM-REDUCE", "KTABLE-AGGREGATE", "KTABLE-REDUCE", "KTABLE-SELECT",
                   "KSTREAM-TOTABLE"):  # fmt: skip
        assert prefixes[prefix].build is not None and prefixes[prefix].refuse is None


def test_a_missing_function_is_named_when_reached() -> None:
    fixture = _load("course-12-whole-app.json")
    topology = kjoin.Topology.from_describe(fixture["describe_text"])
    missing = [need.node for need in topology.described.missing]
    assert missing == ["KSTREAM-KEY-SELECT-0000000005"]
    assert "MISSING" in topology.described.report()
    with pytest.raises(TopologyError, match="KSTREAM-KEY-SELECT-0000000005 needs its key selector"):
        topology.run(fixture["document"]["events"])


def test_a_join_without_its_window_or_foreign_key_is_refused_with_the_fix() -> None:
    clicks = kjoin.Topology.from_describe(_load("course-08-clicks-views.json")["describe_text"])
    assert "window" in " ".join(_refused(clicks).values())
    chain = kjoin.Topology.from_describe(_load("course-12-fk-chain.json")["describe_text"])
    assert "foreign_key" in " ".join(_refused(chain).values())


def test_bad_text_and_bad_names_are_errors_that_say_where() -> None:
    with pytest.raises(TopologyError, match="line 2"):
        kjoin.Topology.from_describe("Topologies:\n  this is not describe()\n")
    with pytest.raises(TopologyError, match="paste"):
        kjoin.Topology.from_describe("")
    text = _load("kafka-pipe.json")["describe_text"]
    with pytest.raises(TopologyError, match="KSTREAM-NOPE"):
        kjoin.Topology.from_describe(text, {"KSTREAM-NOPE": str})


def test_stores_keep_their_names() -> None:
    topology = kjoin.Topology.from_describe(_load("course-12-whole-app.json")["describe_text"])
    assert set(topology.described.stores) == {"customers-store", "addresses-store"}
    table = topology.graph.nodes[topology.described.stores["customers-store"]]
    assert table.op == "table" and table.params["store"] == "customers-store"


def test_notebook_12_imports_what_kafka_printed() -> None:
    """The texts notebook 12 pastes are the real library's (the fixtures), not hand-written."""
    import re

    import nbformat

    notebook = nbformat.read(FIXTURES.parent.parent / "notebooks" / "12_your_whole_app.ipynb", 4)
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    texts = dict(re.findall(r'^(\w+) = """\n(.*?)\n"""', code, flags=re.M | re.S))
    assert texts["KAFKA_DESCRIBE"] == _load("course-12-whole-app.json")["describe_text"].rstrip("\n")
    assert texts["WORD_COUNT"] == _load("kafka_examples.json")["examples"]["kafka-word-count"].rstrip("\n")


@pytest.mark.parametrize(
    "case", ["course-12-whole-app.json", "shape-fk-chain.json", "shape-rekey-self-join-table.json"]
)
def test_several_partitions_run_as_the_topology_built_in_python(case: str) -> None:
    """On 3 partitions (which the driver cannot judge) the topology from describe() runs as the one built from the
    document does, whose multi-partition runs kafka_oracle/topology_oracle.py judges against Kafka."""
    from kjoin.topology.document import TopologyScenario

    fixture = _load(case)
    text, document = fixture["describe_text"], fixture["document"]
    semantics = describe_cases.SEMANTICS
    built = TopologyScenario.from_dict({"partitions": 3, "semantics": semantics, **document}).run()
    imported = kjoin.Topology.from_describe(text, fill_for(document, text), partitions=3, semantics=semantics)
    ours = imported.run(document["events"])
    assert [rows(r) for r in ours.outputs_by_event()] == [rows(r) for r in built.outputs_by_event()]
    assert [step.task for step in ours] == [step.task for step in built]


def test_a_renamed_processor_is_named_by_its_operation() -> None:
    """A processor the application named (Named.as("by-customer")) is not recognised by its name: the report says how
    to declare it, and declared it runs as Kafka ran it."""
    fixture = _load("course-12-whole-app.json")
    text = fixture["describe_text"].replace("KSTREAM-KEY-SELECT-0000000005", "by-customer")
    refused = _refused(kjoin.Topology.from_describe(text))
    assert "'op': 'map_values'" in refused["by-customer"] and "Named.as" in refused["by-customer"]
    fill = fill_for(fixture["document"], fixture["describe_text"])
    fill["by-customer"] = {"op": "select_key", "fn": fill.pop("KSTREAM-KEY-SELECT-0000000005")}
    topology = kjoin.Topology.from_describe(text, fill, semantics=describe_cases.SEMANTICS)
    assert topology.described.refused == []
    assert "by-customer-repartition" in topology.graph.topics
    outputs = [rows(records) for records in topology.run(fixture["document"]["events"]).outputs_by_event()]
    assert outputs == fixture["outputs"]


def test_joins_the_application_named_are_recognised_by_kafkas_suffixes() -> None:
    """StreamJoined.withName("paid"), Named.as("profiles"), TableJoined.as("located"), Joined.as(...): Kafka names
    the join's processors after the name (paid-this-windowed, profiles-join-this, located-result, ...). What the name
    hides (a renamed key selector, a stream-table join's kind, toStream) is declared with 'op'."""
    text = _load("kafka_examples.json")["examples"]["named-whole-app"]
    bare = _refused(kjoin.Topology.from_describe(text))
    assert set(bare) >= {"by-customer", "with-name", "located-changes"}  # named ops: the report asks for 'op'
    assert "window" in bare["paid-merge"] and "foreign_key" in bare["located-result"]
    fill = {
        "by-customer": {"op": "select_key", "fn": lambda key, value: value.split(",")[0]},
        "with-name": {"op": "join", "fn": lambda order, name: f"{order}/{name}"},
        "with-city": {"op": "left_join"},
        "paid-merge": {"window": {"before_ms": 10, "after_ms": 10, "grace_ms": 0}},
        "profiles": {"variant": "left"},
        "located-result": {"foreign_key": lambda value: value.split(",")[0]},
        "located-changes": {"op": "to_stream"},
    }
    topology = kjoin.Topology.from_describe(text, fill)
    assert topology.described.refused == [], topology.described.report()
    nodes = topology.graph.nodes
    assert (nodes["paid-merge"].op, nodes["paid-merge"].params["variant"]) == ("stream-stream", "outer")
    assert (nodes["profiles"].op, nodes["profiles"].params["variant"]) == ("table-table", "left")
    assert (nodes["located-result"].op, nodes["located-result"].params["variant"]) == ("fk", "inner")
    assert [nodes[n].params["variant"] for n in ("with-name", "with-city")] == ["inner", "left"]
    assert "with-name-repartition" in topology.graph.topics  # Kafka's name for the re-key's topic
    left, right = nodes["located-result"].parents
    assert (left.name, right.name) == ("profiles", "KTABLE-SOURCE-0000000010")  # regions
    trace = topology.run(
        [
            {"topic": "customers", "key": "c1", "value": "r1,Ann", "ts": 1},
            {"topic": "regions", "key": "r1", "value": "North", "ts": 2},
            {"topic": "orders", "key": "o1", "value": "c1,book", "ts": 3},
            {"topic": "payments", "key": "o1", "value": "paid", "ts": 4},
        ]
    )
    assert [(r.topic, r.key, r.value) for r in trace.outputs()] == [
        ("located-customers", "c1", "r1,Ann-null-North"),
        ("enriched-orders", "c1", "c1,book/r1,Ann-null"),
        ("paid-orders", "o1", "c1,book-paid"),  # the outer join holds o1 alone until its window closes
    ]


def test_a_kafka_4_app_with_suppress_process_values_split_and_cogroup_leaves_only_the_users_functions() -> None:
    """variant-kafka4-app.json (the real library's describe() and outputs): imported bare, nothing is refused that
    the user's functions would not build, and every need is a function (or the count's kind and windows) of the
    application's; filled in, it emits what Kafka emitted (``test_rebuilt_from_describe_emits_what_kafka_emitted``)."""
    fixture = _load("variant-kafka4-app.json")
    text = fixture["describe_text"]
    bare = kjoin.Topology.from_describe(text, semantics=describe_cases.SEMANTICS).described
    assert all(refusal.fillable for refusal in bare.refused), bare.report()
    open_needs = {need.node for need in bare.needs if not need.given and need.default is None}
    kinds = {name.rsplit("-", 1)[0] for name in open_needs}
    assert kinds == {"KSTREAM-PROCESSVALUES", "route", "COGROUPKSTREAM-AGGREGATE", "COGROUPKSTREAM-MERGE",
                     "KSTREAM-AGGREGATE"}  # fmt: skip
    filled = kjoin.Topology.from_describe(text, fill_for(fixture["document"], text), semantics=describe_cases.SEMANTICS)
    assert not filled.described.refused
    assert {"KTABLE-SUPPRESS", "COGROUPKSTREAM-MERGE", "KSTREAM-PROCESSVALUES", "route"} <= {
        name.rsplit("-", 1)[0] for name in filled.described.built
    }


def test_a_byte_bounded_suppression_needs_the_application_id_kafka_counts() -> None:
    """describe() prints neither the buffer config nor the application.id; a ``max_bytes`` buffer counts each entry's
    topic by its full name (``<application.id>-KSTREAM-REDUCE-STATE-STORE-<n>-repartition`` here, a counter name the
    text gives). Kafka ran the fixture under the harness's application.id: kjoin agrees under it, given or by default,
    and evicts otherwise under a shorter or longer one."""
    fixture = _load("variant-suppress-max-bytes.json")
    text, document = fixture["describe_text"], fixture["document"]
    fill = fill_for(document, text)
    (suppress,) = [name for name in fill if name.startswith("KTABLE-SUPPRESS-")]
    assert fill[suppress]["max_bytes"] == describe_cases.MAX_BYTES_CASE

    def run(application_id: str | None) -> tuple[Any, list[Any]]:
        topology = kjoin.Topology.from_describe(text, fill, semantics=describe_cases.SEMANTICS,
                                                application_id=application_id)  # fmt: skip
        return topology.described, [rows(records) for records in topology.run(document["events"]).outputs_by_event()]

    described, ours = run(None)
    (need,) = [n for n in described.needs if "application.id" in n.what]
    assert not need.given and "kjoin-topology-oracle" in need.default and described.missing == []
    assert "application_id=" in described.report() and "buffer config" in described.report()
    assert ours == fixture["outputs"]
    described, ours = run("kjoin-topology-oracle")
    assert [n.given for n in described.needs if "application.id" in n.what] == [True] and ours == fixture["outputs"]
    assert run("shop")[1] != fixture["outputs"] != run("kjoin-topology-oracle-of-the-shop")[1]
    fill[suppress] = {**fill[suppress], "max_bytes": None, "max_records": 2}
    unbounded = kjoin.Topology.from_describe(text, fill, semantics=describe_cases.SEMANTICS).described
    assert not [n for n in unbounded.needs if "application.id" in n.what]  # a record bound counts no topic names


def test_from_describe_refuses_an_application_id_kafka_would_refuse() -> None:
    text = _load("variant-suppress-max-bytes.json")["describe_text"]
    with pytest.raises(kjoin.TopologyError, match="application_id"):
        kjoin.Topology.from_describe(text, {}, application_id="my app")
