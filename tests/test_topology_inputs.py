"""A topology's inputs answered in kjoin's words: the foreign-key join's partitioners, node names, values a user
function returns, documents that are not YAML or misspell ``topology``, handles of two topologies, a bounded
``flat_map_values``, and a topic written and read by the same application."""

from __future__ import annotations

import pytest

import kjoin

from kjoin.partitioner import default_partition
from kjoin.topology.builder import Topology, TopologyError
from kjoin.topology.document import TopologyScenario
from kjoin.topology.runtime import ProcessingError


def _fk_document(**partitioners):
    return {
        "partitions": 2,
        "topology": [
            {"name": "t", "table": "t"},
            {"name": "t2", "table": "t2"},
            {"name": "j", "join": ["t", "t2"], "foreign_key": "c", **partitioners},
            {"name": "o", "to": "out", "input": "j"},
        ],
        "events": [
            {"topic": "t2", "key": "k", "value": "R", "ts": 1},
            {"topic": "t", "key": "x", "value": {"c": "k"}, "ts": 2},
        ],
    }


@pytest.mark.parametrize(
    ("argument", "key", "partition", "topic"),
    [
        ("other_partitioner", "k", 7, "j-subscription-registration-topic"),
        ("other_partitioner", "k", -1, "j-subscription-registration-topic"),
        ("partitioner", "x", 2, "j-subscription-response-topic"),
    ],
)
def test_a_foreign_key_partitioner_out_of_range_stops_the_run(argument, key, partition, topic):
    """Kafka's producer refuses a partition the topic does not have: the message is never lost in silence."""
    scenario = TopologyScenario.from_dict(_fk_document(**{argument: {"map": {key: partition}}}))
    with pytest.raises(ProcessingError) as error:
        scenario.run()
    message = str(error.value)
    assert f"node j (fk): the {argument} (a partition per key) of {topic} returned {partition}" in message
    assert "a number from 0 to 1" in message


def test_the_partitioner_routes_each_response_by_its_primary_key():
    """TableJoined.with(partitioner, ...): the response goes to the partition the partitioner names for the primary
    key, not to the one its subscription came from; a response reaching a task that does not hold its left row is
    stale there (the hashes differ), and dropped."""
    home = default_partition("x", 2)
    routed = TopologyScenario.from_dict(_fk_document(partitioner={"map": {"x": home}})).run()
    assert [(r.key, r.value) for r in routed.outputs()] == [("x", '{"c":"k"}-R')]
    away = TopologyScenario.from_dict(_fk_document(partitioner={"map": {"x": 1 - home}})).run()
    responses = [s for s in away if s.record.topic == "j-subscription-response-topic"]
    assert [s.record.partition for s in responses] == [1 - home]
    assert away.outputs() == []
    assert [str(s.reason.value) for s in responses] == ["stale-response"]


@pytest.mark.parametrize("argument", ["partitioner", "other_partitioner"])
def test_a_foreign_key_partitioner_that_raises_is_named(argument):
    def boom(key, partitions):
        raise KeyError("boom")

    b = Topology(2)
    b.table("t").join(b.table("t2"), foreign_key="c", **{argument: boom}).to("out")
    with pytest.raises(ProcessingError, match=rf"the {argument} \(boom\) of .* raised KeyError: 'boom'") as error:
        b.run(
            [
                {"topic": "t2", "key": "k", "value": "R", "ts": 1},
                {"topic": "t", "key": "x", "value": {"c": "k"}, "ts": 2},
            ]
        )
    assert isinstance(error.value.__cause__, KeyError)


_ONE = [{"topic": "s", "key": "k", "value": "v", "ts": 1}]


@pytest.mark.parametrize(
    ("label", "build", "value"),
    [
        ("map_values", lambda b: b.stream("s").map_values(lambda v: (1, (2, "a"))), [1, [2, "a"]]),
        ("map", lambda b: b.stream("s").map(lambda k, v: (k, {"pair": (v, v)})), {"pair": ["v", "v"]}),
        ("flat_map_values", lambda b: b.stream("s").flat_map_values(lambda v: [(v,)]), ["v"]),
        ("flat_map", lambda b: b.stream("s").flat_map(lambda k, v: [(k, (v, 1))]), ["v", 1]),
        ("aggregate", lambda b: b.stream("s").group_by_key().aggregate(lambda: (), lambda k, v, a: (*a, v)), ["v"]),
        (
            "joiner",
            lambda b: b.stream("s").join(b.stream("s2"), lambda x, y: (x, y), window={"before_ms": 5, "after_ms": 5}),
            ["v", "w"],
        ),
    ],
)
def test_a_tuple_a_function_returns_is_written_as_a_json_array(label, build, value):
    """JSON writes a tuple as an array, and a consumer reads a list back: kjoin makes it the list where the function
    returns it, so the output, a store and a comparison hold what Kafka's topic holds."""
    b = Topology()
    build(b).to("out")
    events = [*_ONE, {"topic": "s2", "key": "k", "value": "w", "ts": 2}] if label == "joiner" else _ONE
    (output,) = b.run(events).outputs()
    assert output.value == value
    assert "tuple" not in repr(output.value) and "(" not in repr(output.value)


def test_a_tuple_key_is_refused_at_its_node():
    b = Topology()
    b.stream("s").select_key(lambda k, v: (k, v), name="by-pair").to("out")
    with pytest.raises(ProcessingError, match=r"node by-pair \(select_key\): .*\('k', 'v'\) \(a tuple\)"):
        b.run(_ONE)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("a b", "it contains ' '"),
        ("r/x", "it contains '/'"),
        ("é", "it contains 'é'"),
        ("..", 'cannot be "." or ".."'),
        ("x" * 250, "it has 250 characters, and Kafka's Named takes at most 249"),
    ],
)
@pytest.mark.parametrize("call", ["filter", "group_by", "repartition", "to"])
def test_a_node_name_is_held_to_kafkas_named_rule(name, reason, call):
    """Named.validate: ASCII letters, digits, '.', '_' and '-', not '.' or '..', at most 249 characters (a
    TopologyException in Kafka)."""
    stream = Topology().stream("s")
    calls = {
        "filter": lambda: stream.filter(lambda k, v: True, name=name),
        "group_by": lambda: stream.group_by(lambda k, v: v, name=name),
        "repartition": lambda: stream.repartition(name=name),
        "to": lambda: stream.to("out", name=name),
    }
    with pytest.raises(TopologyError, match="is illegal: ") as error:
        calls[call]()
    assert reason in str(error.value)


def test_a_legal_name_of_249_characters_is_taken_and_its_derived_names_too():
    b = Topology()
    name = "a." + "x" * 245 + "_-"
    b.stream("s").group_by(lambda k, v: v, name=name).count().to("out")
    assert [(r.key, r.value) for r in b.run(_ONE).outputs()] == [("v", 1)]
    assert f"{name}-repartition" in b.graph.topics


def _run_cli(path, capsys):
    from kjoin.cli import main

    code = main(["run", str(path)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("topology: [\n", "line 2, column 1"),
        ("topology:\n- {name: s, stream: s}\nevents:\n- {topic: s, key: '\\udcff'}\n", "line 4"),
        ('topology:\n- {name: s, stream: "s}\n', "line 3, column 1"),
        ("a: b: c\n", "line 1, column 5"),
    ],
)
def test_kjoin_run_on_malformed_yaml_answers_in_one_paragraph(tmp_path, capsys, text, where):
    path = tmp_path / "app.yaml"
    path.write_text(text.replace("'\\udcff'", '"\\udcff"'))
    code, err = _run_cli(path, capsys)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"kjoin: {path}: not valid YAML at {where}")
    assert "fix the text there" in err


@pytest.mark.parametrize("field", ["topolgy", "Topology", "topologie"])
def test_a_misspelled_topology_field_gets_a_did_you_mean(tmp_path, capsys, field):
    path = tmp_path / "app.yaml"
    path.write_text(f"partitions: 2\nevents: []\n{field}:\n- {{name: s, stream: s}}\n")
    code, err = _run_cli(path, capsys)
    assert code == 2
    assert f"unknown field '{field}' (did you mean 'topology'?); a topology document has the fields" in err


def test_a_join_scenario_with_an_unknown_field_is_still_a_join_scenario(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("join: stream-stream\ntopolgy: 1\n")
    code, err = _run_cli(path, capsys)
    assert code == 2
    assert "unknown field 'topolgy'; the fields are" in err and "join," in err


def test_handles_of_two_topologies_are_named_when_mixed():
    a, b = Topology(), Topology()
    left = a.stream("s", name="orders")
    with pytest.raises(TopologyError) as error:
        left.join(b.table("t", name="customers"))
    message = str(error.value)
    assert "node customers (table) belongs to another kjoin.Topology than node orders (stream)" in message
    assert "0x" not in message
    with pytest.raises(TopologyError, match="node more .* another kjoin.Topology than node orders"):
        left.merge(b.stream("s2", name="more"))


def test_a_join_with_what_is_no_handle_names_its_type_not_its_address():
    class Thing:
        pass

    with pytest.raises(TopologyError, match="got an object of type Thing$"):
        Topology().stream("s").join(Thing())


def _endless(value):
    while True:
        yield value


@pytest.mark.parametrize("op", ["flat_map_values", "flat_map"])
def test_an_endless_iterator_stops_the_run_at_its_node_with_the_record(op):
    from kjoin.topology.processors import MAX_RECORDS_PER_RECORD

    b = Topology()
    stream = b.stream("s")
    if op == "flat_map_values":
        stream.flat_map_values(_endless, name="words").to("out")
    else:
        stream.flat_map(lambda k, v: ((k, v) for _ in iter(int, 1)), name="words").to("out")
    with pytest.raises(ProcessingError) as error:
        b.run(_ONE)
    message = str(error.value)
    assert message.startswith(f"node words ({op}): the {op} function")
    assert f"more than {MAX_RECORDS_PER_RECORD:,}" in message
    assert "on the record s partition 0 offset 0, key k, value v, ts 1" in message


def test_an_iterator_that_raises_while_read_is_named_with_its_cause():
    def half(value):
        yield value
        raise ValueError("no more")

    b = Topology()
    b.stream("s").flat_map_values(half, name="words").to("out")
    with pytest.raises(ProcessingError, match="returned an iterator that raised ValueError: no more") as error:
        b.run(_ONE)
    assert isinstance(error.value.__cause__, ValueError)


def test_as_many_records_as_the_bound_are_taken():
    from kjoin.topology.processors import MAX_RECORDS_PER_RECORD

    b = Topology()
    b.stream("s").flat_map_values(lambda v: range(MAX_RECORDS_PER_RECORD)).to("out")
    (step,) = b.run(_ONE)
    assert len(step.wrote) == MAX_RECORDS_PER_RECORD


def _partition_one(key, partitions):
    return 1


@pytest.mark.parametrize(
    ("written", "read", "partition"),
    [
        ({}, {}, default_partition("k", 2)),
        ({"partitioner": _partition_one}, {"partitioner": _partition_one}, 1),
        ({"partitioner": {"map": {"k": 1}}}, {"partitioner": {"map": {"k": 1}}}, 1),
        ({"partitioner": _partition_one}, {}, 1),
        ({"partitions": 4}, {}, default_partition("k", 4)),
        ({"partitions": 4, "partitioner": {"map": {"k": 3}}}, {"partitions": 4}, 3),
    ],
)
def test_a_topic_written_with_to_is_read_back_with_stream(written, read, partition):
    """Kafka takes `to("mid")` and `stream("mid")` in one application (the records go round through the broker); the
    stream reads them from the partition the sink chose."""
    b = Topology(2)
    b.stream("s").to("mid", **written)
    b.stream("mid", **read).to("out")
    trace = b.run(_ONE)
    assert [(s.record.partition, s.task) for s in trace if s.record.topic == "mid"] == [(partition, f"1_{partition}")]
    assert [(r.key, r.value) for r in trace.outputs("out")] == [("k", "v")]


@pytest.mark.parametrize(
    ("written", "read", "differ"),
    [
        ({"partitions": 4}, {"partitions": 3}, "4 and 3 partitions"),
        ({"partitioner": {"map": {"k": 1}}}, {"partitioner": {"map": {"k": 0}}}, "the partitioners"),
        (
            {"partitioner": _partition_one},
            {"partitioner": lambda k, n: 1},
            "'_partition_one' and 'the lambda at test_topology_inputs",
        ),
    ],
)
def test_a_topic_declared_twice_differently_is_refused_saying_how(written, read, differ):
    b = Topology(2)
    b.stream("s").to("mid", **written)
    with pytest.raises(TopologyError, match="topic mid is declared twice, differently") as error:
        b.stream("mid", **read)
    assert differ in str(error.value)


@pytest.mark.parametrize("topic", ["a b", "a\nb", "é", "..", "t" * 250])
@pytest.mark.parametrize("call", ["stream", "table", "to", "through"])
def test_a_topic_name_a_broker_refuses_is_refused(topic, call):
    """Topic.validate: the characters and the length of Named (InvalidTopicException from the broker)."""
    b = Topology()
    calls = {
        "stream": lambda: b.stream(topic),
        "table": lambda: b.table(topic),
        "to": lambda: b.stream("s").to(topic),
        "through": lambda: b.stream("s").through(topic),
    }
    with pytest.raises(TopologyError, match=r"the topic .* is illegal: .*InvalidTopicException") as error:
        calls[call]()
    assert "\n" not in str(error.value)


def test_a_document_node_name_with_a_line_break_is_refused_on_one_line(tmp_path, capsys):
    path = tmp_path / "app.yaml"
    path.write_text('topology:\n- {name: s, stream: s}\n- {name: "a\\nb", to: out, input: s}\nevents: []\n')
    code, err = _run_cli(path, capsys)
    assert code == 2
    assert err.count("\n") == 1
    assert "topology[1].name: the name 'a\\nb' is illegal: it contains '\\n'" in err


def test_the_chain_pass_on_spark_writes_a_map_functions_tuple_as_the_reference_engine_does():
    """The Spark chain pass calls `map` itself: its tuple value is the list there too, as the next stage reads it
    (without Spark)."""
    from kjoin.topology.document import TopologyScenario as Scenario
    from tests.topology_spark_check import local_difference

    b = Topology(partitions=2)
    b.stream("s").map(lambda k, v: (v, (k, 1))).repartition().map_values(lambda v: type(v).__name__).to("out")
    events = tuple({"topic": "s", "key": f"k{i}", "value": f"v{i % 2}", "ts": i} for i in range(4))
    scenario = Scenario(b, events, "stages")
    assert {r.value for r in scenario.run().outputs()} == {"list"}
    assert local_difference(scenario) is None


@pytest.mark.parametrize("argument", ["partitioner", "other_partitioner"])
def test_a_foreign_key_partitioner_needs_kafka_3_1(argument):
    """KIP-775 (3.1) added TableJoined: before it, a foreign-key join takes no partitioner."""
    for semantics, takes in (("3.0", False), ("3.1", True)):
        b = Topology(partitions=2, semantics=semantics)
        join = lambda: b.table("t").join(b.table("t2"), foreign_key="c", **{argument: _partition_one})  # noqa: E731
        if takes:
            join()
        else:
            with pytest.raises(TopologyError, match=r"Kafka 3.0 has no TableJoined \(KIP-775, 3.1\)"):
                join()
    assert Topology(semantics="3.1").semantics.foreign_key_partitioners


def test_to_table_needs_kafka_2_5_and_repartition_kafka_2_6():
    """KIP-523 (2.5) added KStream.toTable, KIP-221 (2.6) KStream.repartition: before, Kafka has no such method (the
    harness's 2.4.1 throws NoSuchMethodError building a toTable), so kjoin refuses them, in a document too."""
    for op, first, before, kip in (("to_table", "2.5", "2.4", "KIP-523"), ("repartition", "2.6", "2.5", "KIP-221")):
        getattr(Topology(semantics=first).stream("s"), op)()
        with pytest.raises(TopologyError, match=rf"{op}: Kafka {before} has no KStream\.\w+ \({kip}, {first}\)"):
            getattr(Topology(semantics=before).stream("s"), op)()
        document = {
            "semantics": before,
            "topology": [{"name": "s", "stream": "s"}, {"name": "x", op: True, "input": "s"}],
            "events": [],
        }
        with pytest.raises(kjoin.ScenarioError, match=kip):
            TopologyScenario.from_dict(document)
    assert not Topology(semantics="2.4.1").semantics.stream_to_table
    assert Topology(semantics="2.6.3").semantics.stream_repartition


@pytest.mark.parametrize("windows", [{"size_ms": 10}, {"inactivity_gap_ms": 5}, {"time_difference_ms": 5}])
@pytest.mark.parametrize("side", ["stream", "left", "right"])
def test_a_windowed_table_is_not_joined_by_key(windows, side):
    """A windowed aggregate's keys are Windowed<K>: Kafka joins no K-keyed stream or table to it."""
    b = Topology()
    windowed = b.stream("s").group_by_key().windowed_by(windows).count(name="per-window")
    joins = {
        "stream": lambda: b.stream("a").join(windowed),
        "left": lambda: windowed.join(b.table("t")),
        "right": lambda: b.table("t").left_join(windowed),
    }
    with pytest.raises(TopologyError, match="per-window is keyed by window"):
        joins[side]()
