"""The scenario package: its public edge, Literal values refused with a clear error, and the
edges found by fuzzing (64-bit timestamps)."""

import pytest

import kjoin
from kjoin.scenario import JOINS, MAX_TIMESTAMP_MS, VARIANTS, Event, Scenario, ScenarioError, load_scenario
from kjoin.records import Side

WINDOW = {"before_ms": 5, "after_ms": 5, "grace_ms": 0}


def test_the_package_keeps_the_public_names():
    assert kjoin.Scenario is Scenario
    assert JOINS == ("stream-stream", "stream-table", "table-table", "fk", "stream-globaltable")
    assert VARIANTS["stream-table"] == ("inner", "left")
    assert callable(load_scenario)


def test_a_scenario_built_in_code_refuses_an_unknown_join():
    expected = (
        r"^join: expected one of stream-stream \| stream-table \| table-table \| fk \| stream-globaltable, got "
        r"'stream-stram' "
        r"\(did you mean 'stream-stream'\?\)$"
    )
    with pytest.raises(ScenarioError, match=expected):
        Scenario(join="stream-stram", variant="inner", events=())  # type: ignore[arg-type]


def test_a_scenario_built_in_code_refuses_a_variant_its_join_lacks():
    with pytest.raises(ScenarioError, match=r"^variant: expected one of inner \| left, got 'outer'$"):
        Scenario(join="stream-table", variant="outer", events=())  # type: ignore[arg-type]


def test_with_variant_refuses_a_bad_variant():
    scenario = Scenario.from_records("table-table", "inner", [{"side": "left", "key": "k", "value": "A", "ts": 1}])
    with pytest.raises(ScenarioError, match="variant: expected one of inner | left | outer, got 'full'"):
        scenario.with_variant("full")  # type: ignore[arg-type]


def test_the_document_round_trips_through_to_dict():
    scenario = Scenario.from_dict(
        {
            "join": "table-table",
            "variant": "left",
            "materialized": True,
            "caching": ["result"],
            "commit_every": 2,
            "then": [{"variant": "inner"}],
            "events": [{"side": "left", "key": "k", "value": "A", "ts": 1}],
        }
    )
    assert Scenario.from_dict(scenario.to_dict()) == scenario


def test_an_unknown_top_level_field_lists_the_declared_fields():
    with pytest.raises(ScenarioError) as error:
        Scenario.from_dict({"join": "fk", "variant": "inner", "events": [], "joiner": "x"})
    assert "unknown field 'joiner'" in str(error.value)
    assert "commit_every, delivery, description, events, foreign_key" in str(error.value)


@pytest.mark.parametrize("ts", [2**63, 2**64 + 5])
def test_a_timestamp_beyond_kafkas_64_bit_long_is_refused_naming_the_event(ts):
    events = [
        {"side": "left", "key": "k", "value": "A", "ts": 1},
        {"side": "right", "key": "k", "value": "a", "ts": ts},
    ]
    with pytest.raises(ScenarioError) as error:
        Scenario.from_records("stream-stream", "inner", events, window=WINDOW)
    message = str(error.value)
    assert message.startswith(f"events[1].ts: {ts} does not fit Kafka's 64-bit signed timestamp")
    assert str(MAX_TIMESTAMP_MS) in message


def test_a_timestamp_below_minus_2_to_the_63_is_refused_naming_the_event():
    with pytest.raises(ScenarioError, match=r"^events\[0\]\.ts: -9223372036854775809 does not fit Kafka's 64-bit"):
        Scenario.from_records("stream-table", "left", [{"side": "left", "key": "k", "value": "A", "ts": -(2**63) - 1}])


def test_the_largest_kafka_timestamp_still_runs():
    events = [
        {"side": "right", "key": "k", "value": "a", "ts": 0},
        {"side": "left", "key": "k", "value": "A", "ts": MAX_TIMESTAMP_MS},
    ]
    trace = kjoin.run(Scenario.from_records("stream-table", "inner", events))
    assert [(o.render(), o.ts) for o in trace.outputs] == [("A-a", MAX_TIMESTAMP_MS)]
    scenario = Scenario.from_records("stream-table", "inner", events)
    assert scenario.events[1] == Event(Side.LEFT, "k", "A", MAX_TIMESTAMP_MS)
