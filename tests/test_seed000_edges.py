"""The rough edges met writing windowed-table scenarios by hand: each is an error that names the field and
the fix, or a documented rule (docs/concepts/aggregates.md, :mod:`kjoin.scenario.aggregate`)."""

from __future__ import annotations

import pytest
import yaml

import kjoin
from kjoin.cli import main
from kjoin.engine.aggregates import TimeWindows, hopping_join_counts, run_hopping_join, run_spec
from kjoin.fates import Fate, Reason
from kjoin.scenario import AggregateSpec, ScenarioError

TWO_INPUTS = {
    "wtable-wtable": {"window": {"size_ms": 10}},
    "wtable-table": {"window": {"size_ms": 10}},
    "stream-wtable": {"window": {"size_ms": 10}, "selector": "timestamp"},
    "table-wtable": {"window": {"size_ms": 10}, "selector": "timestamp"},
}
ONE_INPUT = {
    "window-aggregate": {"window": {"size_ms": 10}},
    "table-aggregate": {"group_by": "page"},
    "wtable-wtable": {"window": {"size_ms": 10}, "self_join": True, "window_shift_ms": -10},
}


# -- join: the names of both kinds of scenario --------------------------------------------------------------------
def test_an_unknown_join_of_a_seed_000_scenario_names_both_kinds_of_join():
    with pytest.raises(ScenarioError) as error:
        AggregateSpec.from_dict({"join": "wtable-wtabel"})
    message = str(error.value)
    assert message.startswith("join: 'wtable-wtabel' is not one of table-aggregate, window-aggregate, wtable-wtable")
    assert "(did you mean 'wtable-wtable'?)" in message
    assert "kjoin.Scenario's are stream-stream, stream-table, table-table, fk" in message


def test_a_primary_join_given_to_the_seed_000_specification_says_where_it_belongs():
    with pytest.raises(ScenarioError, match=r"^join: 'stream-table' is a join of kjoin.Scenario \(Scenario.from_dict"):
        AggregateSpec.from_dict({"join": "stream-table", "variant": "left", "events": []})


def test_a_seed_000_join_built_as_a_scenario_says_where_it_belongs():
    with pytest.raises(
        ScenarioError, match=r"^join: 'window-aggregate' is one of the windowed-table design's joins.*AggregateSpec"
    ):
        kjoin.Scenario(join="window-aggregate", variant="inner", events=())  # type: ignore[arg-type]


def test_an_unknown_join_in_a_file_lists_all_ten_joins(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump({"join": "window-agregate", "events": []}))
    with pytest.raises(ScenarioError) as error:
        kjoin.load_scenario(path)
    message = str(error.value)
    for join in ("stream-stream", "stream-table", "table-table", "fk", *kjoin.scenario.AGGREGATE_JOINS):
        assert join in message
    assert "did you mean 'window-aggregate'?" in message


# -- side: required with two inputs, left only with one -------------------------------------------------------------
@pytest.mark.parametrize("join", sorted(TWO_INPUTS))
def test_a_two_input_join_needs_every_event_to_name_its_side(join):
    data = {"join": join, **TWO_INPUTS[join], "events": [{"side": "left", "key": "k", "value": 1, "ts": 1}]}
    AggregateSpec.from_dict(data)  # with sides: valid
    data["events"].append({"key": "k", "value": 2, "ts": 2})
    with pytest.raises(
        ScenarioError, match=rf"^events\[1\]: missing field 'side': a {join} join has two inputs; write"
    ):
        AggregateSpec.from_dict(data)


@pytest.mark.parametrize("name", sorted(ONE_INPUT))
def test_a_one_input_join_needs_no_side(name):
    data = {"join": name, **ONE_INPUT[name]}
    unnamed = run_spec({**data, "events": [{"key": "k", "value": {"page": "p"}, "ts": 1}]})
    named = run_spec({**data, "events": [{"side": "left", "key": "k", "value": {"page": "p"}, "ts": 1}]})
    assert [s.to_dict() for s in unnamed.steps] == [s.to_dict() for s in named.steps] and unnamed.outputs


@pytest.mark.parametrize("name", ["window-aggregate", "table-aggregate"])
def test_an_aggregate_reads_an_event_of_either_side_as_a_record_of_its_one_input(name):
    """The documented rule: an aggregate has one input, so ``side`` does not matter there."""
    data = {"join": name, **ONE_INPUT[name]}
    left = run_spec({**data, "events": [{"side": "left", "key": "k", "value": {"page": "p"}, "ts": 1}]})
    right = run_spec({**data, "events": [{"side": "right", "key": "k", "value": {"page": "p"}, "ts": 1}]})
    assert [o.to_dict() for o in left.outputs] == [o.to_dict() for o in right.outputs] != []


def test_a_self_join_refuses_a_right_event_naming_the_self_join():
    data = {"join": "wtable-wtable", **ONE_INPUT["wtable-wtable"]}
    with pytest.raises(
        ScenarioError,
        match=r"^events\[0\]\.side: a WTable joined with itself \(self_join: true\) has one input, the left",
    ):
        AggregateSpec.from_dict({**data, "events": [{"side": "right", "key": "k", "value": 1, "ts": 1}]})


# -- window_shift_ms: a multiple of the right WTable's advance ------------------------------------------------------
def test_a_window_shift_that_lines_up_with_no_window_is_an_error_naming_the_advance_and_the_fix():
    data = {"join": "wtable-wtable", "window": {"size_ms": 10, "advance_ms": 5}, "window_shift_ms": -7, "events": []}
    with pytest.raises(ScenarioError, match=r"^window_shift_ms: -7 is not a multiple of the window's advance \(5 ms\)"):
        AggregateSpec.from_dict(data)
    with pytest.raises(ScenarioError, match=r"use a multiple of 5, such as -10 or -5$"):
        AggregateSpec.from_dict(data)
    shifted = {**data, "right_window": {"size_ms": 20, "advance_ms": 20}, "window_shift_ms": -10}
    with pytest.raises(ScenarioError, match=r"^window_shift_ms: -10 is not a multiple of the right_window's advance"):
        AggregateSpec.from_dict(shifted)


def test_a_window_shift_by_the_advance_finds_the_earlier_window():
    events = [{"key": "k", "value": 1, "ts": 2}, {"key": "k", "value": 1, "ts": 12}]
    data = {"join": "wtable-wtable", **ONE_INPUT["wtable-wtable"], "retention_ms": 30, "events": events}
    assert [o.render() for o in run_spec(data).outputs] == ["1-null", "1-1"]


# -- fields of values: null or missing is a rule, a value that is not a mapping is an error ---------------------------
def test_group_by_on_a_value_that_is_not_a_mapping_names_the_event_and_the_fix():
    data = {"join": "table-aggregate", "group_by": "page", "events": [{"key": "o1", "value": "home", "ts": 1}]}
    with pytest.raises(
        ScenarioError, match=r"^events\[0\] \(left home@1 \(key o1\)\): .*group_by: page reads the field"
    ):
        run_spec(data)
    with pytest.raises(ScenarioError, match=r"give the values as mappings such as \{page: \.\.\.\}$"):
        run_spec(data)


def test_group_by_on_a_mapping_without_the_field_gives_a_null_group_that_is_skipped():
    trace = run_spec({"join": "table-aggregate", "group_by": "page", "events": [{"key": "o1", "value": {}, "ts": 1}]})
    assert trace.outputs == [] and trace.steps[0].fate is not Fate.JOINED


def test_a_sum_adds_0_for_a_null_value_and_a_mapping_without_the_field_and_refuses_any_other_value():
    events = [
        {"key": "a", "value": {"m": 1}, "ts": 1},  # no field n: adds 0 (as the Kafka harness's aggregator)
        {"key": "a", "value": None, "ts": 2},  # a null value reaches a windowed aggregate: adds 0
        {"key": "a", "value": {"n": 4}, "ts": 3},
    ]
    data = {"join": "window-aggregate", "window": {"size_ms": 10}, "aggregate": {"sum": "n"}, "events": events}
    assert [o.render() for o in run_spec(data).outputs] == ["a@[0, 10)=0", "a@[0, 10)=0", "a@[0, 10)=4"]
    events.append({"key": "a", "value": "home", "ts": 4})
    with pytest.raises(ScenarioError, match=r"^events\[3\] .*\{sum: n\} reads the field 'n' of each value, and the"):
        run_spec(data)


def test_a_field_selector_on_a_value_that_is_not_a_mapping_or_a_time_that_is_not_a_number_is_an_error():
    data = {"join": "stream-wtable", "window": {"size_ms": 10}, "selector": {"field": "seen_at"}}

    def run(value):
        return run_spec({**data, "events": [{"side": "left", "key": "k", "value": value, "ts": 1}]})

    step = run({"n": 1}).steps[0]  # no field: no window selected, the left join's result has no partner
    assert step.outputs[0].right is None and "the selector picked no window" in step.explain
    with pytest.raises(ScenarioError, match=r"^events\[0\] .*selector: \{field: seen_at\} reads the field 'seen_at'"):
        run("home")
    with pytest.raises(ScenarioError, match=r"^events\[0\] .*it is x; give integer milliseconds there$"):
        run({"seen_at": "x"})


# -- the hopping join: from Python only --------------------------------------------------------------------------------
def test_kjoin_run_refuses_the_hopping_join_and_points_to_the_python_function(tmp_path, capsys):
    path = tmp_path / "hopping.yaml"
    path.write_text(yaml.safe_dump({"join": "hopping-join", "window": {"size_ms": 10, "advance_ms": 5}, "events": []}))
    assert main(["run", str(path)]) == 2
    error = capsys.readouterr().err
    assert "hopping-join" in error and "kjoin.engine.aggregates.run_hopping_join(events" in error
    with pytest.raises(ScenarioError, match="runs from Python only"):
        AggregateSpec.from_dict({"join": "hopping-join"})
    events = [{"side": "left", "key": "k", "value": "A", "ts": 6}, {"side": "right", "key": "k", "value": "a", "ts": 7}]
    assert [o.render() for o in run_hopping_join(events, TimeWindows(10, 5)).outputs] == ["A-a"]
    assert hopping_join_counts(events, TimeWindows(10, 5)) == {"per_pair": 1, "per_window": 2}


def test_a_dropped_null_key_still_has_its_reason():
    """Every record is accounted for: the side rule changes nothing about a null key's fate."""
    trace = run_spec(
        {"join": "window-aggregate", "window": {"size_ms": 10}, "events": [{"key": None, "value": 1, "ts": 1}]}
    )
    assert trace.steps[0].reason is Reason.NULL_KEY
