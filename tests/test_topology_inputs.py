"""A topology's inputs answered in kjoin's words: the foreign-key join's partitioners, node names, values a user
function returns, documents that are not YAML or misspell ``topology``, handles of two topologies, a bounded
``flat_map_values``, and a topic written and read by the same application."""

from __future__ import annotations

import pytest

from kjoin.partitioner import default_partition
from kjoin.topology.builder import Topology
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
