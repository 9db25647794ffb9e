"""A user function that throws, under the processing exception handler (KIP-1033, 3.9), its dead-letter queue
(KIP-1034, 4.2) and its global switch (KIP-1270, 4.3): :mod:`kjoin.topology.handlers`. The judged tests run the same
documents through the real library (``kafka_oracle/``, TopologyOracle.java) on 4.4.0, 3.9.1 and every release with a
dead-letter queue (4.2.0 to 4.3.1, ``oracle_check.HANDLER_JUDGES``)."""

from __future__ import annotations

import pytest

import kjoin
from kjoin.fates import Fate, Reason
from kjoin.partitioner import default_partition
from kjoin.topology.document import TopologyScenario
from kjoin.scenario.fields import ScenarioError
from kjoin.topology.graph import TopologyError
from kjoin.topology.handlers import DLQ_HEADERS
from kjoin.topology.runtime import ProcessingError
from kafka_oracle import oracle_check, topology_oracle

EVENTS = [
    {"topic": "in", "key": "k1", "value": "a", "ts": 1},
    {"topic": "in", "key": "k2", "value": "bad", "ts": 2},
    {"topic": "in", "key": "k3", "value": "c", "ts": 3},
]


def two_branches(handler: str, dead_letter_queue: str | None = "errors", semantics: str = "4.4") -> kjoin.Topology:
    """``in`` -> a mapper that throws on ``bad`` -> ``out``; ``in`` -> ``!`` appended -> ``out2``."""
    b = kjoin.Topology(semantics=semantics, processing_exception_handler=handler, dead_letter_queue=dead_letter_queue)
    source = b.stream("in")
    source.map_values({"fail_on": "bad"}, name="checked").to("out")
    source.map_values({"append": "!"}, name="shout").to("out2")
    return b


def test_continue_drops_the_record_at_the_failing_node_and_its_sibling_branch_still_gets_it():
    trace = two_branches("continue").run(EVENTS)
    step = trace[1]
    failed = [visit for visit in step.visits if visit.node == "checked"][0]
    assert (failed.fate, failed.reason) == (Fate.DROPPED, Reason.PROCESSING_EXCEPTION)
    assert "fail_on: the value bad contains bad" in failed.explain
    assert [(r.topic, r.key, r.value) for r in trace.outputs_by_event()[1]] == [
        ("errors", "k2", "bad"),
        ("out2", "k2", "bad!"),
    ]
    assert [(r.key, r.value) for r in trace.outputs("out")] == [("k1", "a"), ("k3", "c")]
    assert trace.dropped_records() == {("checked", "processing-exception"): 1}


def test_the_dead_letter_record_carries_kafkas_headers_for_the_source_record():
    trace = two_branches("continue").run(EVENTS)
    (dead,) = trace.outputs("errors")
    assert (dead.key, dead.value, dead.ts) == ("k2", "bad", 2)
    assert dict(dead.headers) == {
        "__streams.errors.exception": "java.lang.IllegalArgumentException",
        "__streams.errors.message": "fail_on: the value bad contains bad",
        "__streams.errors.stacktrace": "java.lang.IllegalArgumentException: fail_on: the value bad contains bad",
        "__streams.errors.topic": "in",
        "__streams.errors.partition": "0",
        "__streams.errors.offset": "1",
    }
    assert [name for name, _ in dead.headers] == list(DLQ_HEADERS)


def test_a_dropped_record_whose_only_write_is_a_dead_letter_is_dropped_with_the_reason():
    b = kjoin.Topology(semantics="4.4", processing_exception_handler="continue", dead_letter_queue="errors")
    b.stream("in").map_values({"fail_on": "bad"}).to("out")
    step = b.run(EVENTS)[1]
    assert (step.fate, step.reason) == (Fate.DROPPED, Reason.PROCESSING_EXCEPTION)


def test_fail_stops_the_run_naming_node_function_record_and_the_dead_letter_queue():
    with pytest.raises(ProcessingError) as raised:
        two_branches("fail").run(EVENTS)
    text = str(raised.value)
    assert "node checked (map_values)" in text
    assert "in partition 0 offset 1, key k2, value bad" in text
    assert "dead-letter queue errors" in text
    assert "processing_exception_handler continue" in text


def test_a_python_function_names_its_python_exception_in_the_headers():
    def no_bad(value):
        if value == "bad":
            raise KeyError("bad")
        return value

    b = kjoin.Topology(semantics="4.4", processing_exception_handler="continue", dead_letter_queue="errors")
    b.stream("in").map_values(no_bad).to("out")
    (dead,) = b.run(EVENTS).outputs("errors")
    assert dict(dead.headers)["__streams.errors.exception"] == "KeyError"
    assert dict(dead.headers)["__streams.errors.message"] == "'bad'"


def test_a_sinks_partitioner_that_throws_is_handled_by_the_node_that_forwarded_to_it():
    def partitioner(key, partitions):
        if key == "k2":
            raise RuntimeError("no partition for k2")
        return 0

    b = kjoin.Topology(semantics="4.4", processing_exception_handler="continue")
    b.stream("in").map_values({"append": "!"}, name="shout").to("out", partitioner=partitioner)
    trace = b.run(EVENTS)
    dropped = [visit for visit in trace[1].visits if visit.fate is Fate.DROPPED]
    assert [visit.node for visit in dropped] == ["shout"]
    assert [r.key for r in trace.outputs("out")] == ["k1", "k3"]


def test_a_source_node_catches_nothing_so_even_continue_stops_the_run():
    def partitioner(key, partitions):
        raise RuntimeError("no partition")

    b = kjoin.Topology(semantics="4.4", processing_exception_handler="continue")
    b.stream("in").to("out", partitioner=partitioner)
    with pytest.raises(ProcessingError, match="reaches no processing exception handler"):
        b.run(EVENTS)


@pytest.mark.parametrize(
    "semantics, settings, refused",
    [
        ("3.8", {"processing_exception_handler": "continue"}, "KIP-1033, 3.9"),
        ("4.1", {"processing_exception_handler": "continue", "dead_letter_queue": "e"}, "KIP-1034, 4.2"),
        ("4.2", {"global_processing_exception_handler": True}, "KIP-1270, 4.3"),
        ("4.4", {"processing_exception_handler": "skip"}, "expected fail or continue"),
        ("4.4", {"dead_letter_queue": ""}, "a topic's name"),
    ],
)
def test_a_setting_is_refused_on_versions_without_it(semantics, settings, refused):
    with pytest.raises(TopologyError, match=refused):
        kjoin.Topology(semantics=semantics, **settings)
    document = {
        "semantics": semantics,
        **settings,
        "topology": [{"name": "in", "stream": "in"}, {"name": "out", "to": "out", "input": "in"}],
        "events": [],
    }
    with pytest.raises(ScenarioError, match=refused):
        TopologyScenario.from_dict(document)


def test_a_dead_letter_queue_that_the_topology_reads_is_refused():
    b = kjoin.Topology(semantics="4.4", processing_exception_handler="continue", dead_letter_queue="in")
    b.stream("in").to("out")
    with pytest.raises(TopologyError, match="a topic the topology reads"):
        b.build()


def test_the_document_carries_the_settings_there_and_back():
    data = two_branches("continue").to_dict()
    assert (data["processing_exception_handler"], data["dead_letter_queue"]) == ("continue", "errors")
    again = TopologyScenario.from_dict({**data, "events": EVENTS})
    assert [r.value for r in again.run().outputs("errors")] == ["bad"]


def test_a_documents_topics_give_the_dead_letter_queue_its_partitions():
    data = {**two_branches("continue").to_dict(), "topics": {"errors": {"partitions": 3}}, "events": EVENTS}
    (dead,) = TopologyScenario.from_dict(data).run().outputs("errors")
    assert dead.partition == default_partition("k2", 3)
    again = TopologyScenario.from_dict({**TopologyScenario.from_dict(data).topology.to_dict(), "events": EVENTS})
    assert again.topology.graph.topics["errors"].partitions == 3
    with pytest.raises(ScenarioError, match="topics.errors.partitions"):
        TopologyScenario.from_dict({**data, "topics": {"errors": {"partitions": 0}}})


def test_the_global_switch_changes_nothing_as_no_global_table_runs_a_user_function():
    b = kjoin.Topology(
        semantics="4.3", processing_exception_handler="continue", global_processing_exception_handler=True
    )
    b.stream("in").map_values({"append": "!"}).to("out")
    assert [r.value for r in b.run(EVENTS).outputs("out")] == ["a!", "bad!", "c!"]


def grace_join(handler: str) -> TopologyScenario:
    """A left join of a stream with a versioned table, with a grace period: a null-key stream record reaches the
    grace buffer, where Kafka 3.7+ throws a NullPointerException."""
    document = {
        "semantics": "4.4",
        "processing_exception_handler": handler,
        "dead_letter_queue": "errors",
        "topology": [
            {"name": "s", "stream": "s"},
            {"name": "t", "table": "t", "history_retention_ms": 10},
            {"name": "j", "left_join": ["s", "t"], "grace_ms": 5},
            {"name": "out", "to": "out", "input": "j"},
        ],
        "events": [
            {"topic": "t", "key": "k", "value": "T", "ts": 1},
            {"topic": "s", "key": None, "value": "A", "ts": 2},
            {"topic": "s", "key": "k", "value": "B", "ts": 9},
        ],
    }
    return TopologyScenario.from_dict(document)


def test_kafkas_own_null_key_exception_in_a_grace_buffer_goes_to_the_handler_too():
    step = grace_join("continue").run()[1]
    assert (step.fate, step.reason) == (Fate.DROPPED, Reason.PROCESSING_EXCEPTION)
    (dead,) = step.wrote
    assert dict(dead.headers)["__streams.errors.exception"] == "java.lang.NullPointerException"
    assert dict(dead.headers)["__streams.errors.message"] == "key cannot be null"
    with pytest.raises(ProcessingError, match=r"node j \(stream-table\): Kafka's stream-table processor throws "
                       r"java.lang.NullPointerException: key cannot be null"):  # fmt: skip
        grace_join("fail").run()  # the task fails at that record, as under fail for any processing exception


# -- judged by the real library ------------------------------------------------------------------------------------
def _judged(version: str, topology: kjoin.Topology) -> tuple[TopologyScenario, dict]:
    scenario = TopologyScenario.from_dict({**topology.to_dict(), "events": EVENTS})
    (answer,) = topology_oracle.run_batch(version, [scenario], threads=1)
    return scenario, answer


@pytest.mark.parametrize(
    "version, semantics, dead_letter_queue",
    [("4.4.0", "4.4", "errors"), *((v, v, "errors") for v in oracle_check.HANDLER_JUDGES), ("3.9.1", "3.9", None)],
)
def test_kafka_drops_and_dead_letters_the_same_records_as_kjoin(built, version, semantics, dead_letter_queue):
    scenario, answer = _judged(version, two_branches("continue", dead_letter_queue, semantics))
    assert topology_oracle.difference(scenario, answer, version) is None
    assert any(row[0] == "out2" and row[2] == "bad!" for row in answer["outputs"][1])
    if dead_letter_queue:
        (dead,) = [row for row in answer["outputs"][1] if row[0] == dead_letter_queue]
        assert [name for name, _ in dead[4]] == list(DLQ_HEADERS)


def test_kafka_fails_the_task_on_the_event_where_kjoin_stops(built):
    scenario, answer = _judged("4.4.0", two_branches("fail", None))
    assert "IllegalArgumentException" in answer["error"] and answer["failed_at"] == 1
    with pytest.raises(ProcessingError):
        kjoin.Topology.run(scenario.topology, EVENTS[:2])
    assert len(kjoin.Topology.run(scenario.topology, EVENTS[:1]).outputs()) == 2


def global_switch(semantics: str) -> kjoin.Topology:
    """A stream joined with a global table, a mapper that throws on ``bad`` after it, the global switch on."""
    b = kjoin.Topology(
        semantics=semantics,
        processing_exception_handler="continue",
        dead_letter_queue="errors",
        global_processing_exception_handler=True,
    )
    names = b.global_table("names")
    b.stream("in").left_join(names).map_values({"fail_on": "bad"}).to("out")
    return b


@pytest.mark.parametrize(
    "version",
    [
        "4.4.0",
        *(v for v in oracle_check.HANDLER_JUDGES if kjoin.parse_semantics(v).global_processing_exception_handler),
    ],
)
def test_kafka_with_the_global_switch_drops_and_dead_letters_as_kjoin_does(built, version):
    events = [{"topic": "names", "key": "k1", "value": "A", "ts": 0}, *EVENTS]
    scenario = TopologyScenario.from_dict({**global_switch(version).to_dict(), "events": events})
    (answer,) = topology_oracle.run_batch(version, [scenario], threads=1)
    assert topology_oracle.difference(scenario, answer, version) is None
    assert [row[0] for row in answer["outputs"][2]] == ["errors"]  # bad: dead-lettered, not joined


# -- Spark ---------------------------------------------------------------------------------------------------------
def test_spark_drops_and_dead_letters_the_records_the_reference_engine_does(spark):
    from tests.topology_spark_check import difference

    branches = TopologyScenario(two_branches("continue"), tuple(EVENTS), "stages")
    assert difference(spark, branches, with_partitions=False) is None
    b = kjoin.Topology(2, semantics="4.4", processing_exception_handler="continue", dead_letter_queue="errors")
    b.stream("in").map_values({"fail_on": "bad"}).map_values({"append": "!"}).to("out")  # a chain
    chain = TopologyScenario(b, tuple(EVENTS), "stages")
    assert difference(spark, chain) is None


def test_kafka_dead_letters_a_null_key_in_a_grace_buffer_as_kjoin_does(built):
    scenario = grace_join("continue")
    (answer,) = topology_oracle.run_batch("4.4.0", [scenario], threads=1)
    assert topology_oracle.difference(scenario, answer, "4.4.0") is None
    assert [row[0] for row in answer["outputs"][1]] == ["errors"]
