"""The course's tables and partition helpers read traces exactly as the engine wrote them."""

import pandas as pd
import pytest

import kjoin
from kjoin.partitioner import default_partition
from kjoin_viz import versioned_mode_traces
from kjoin_viz.course import (
    Table,
    as_of,
    as_of_table,
    messages_table,
    partitions_table,
    side_by_side,
    steps_table,
    stores_table,
    versions_table,
    workflow_table,
)
from kjoin_viz.partitioning import repartition, round_robin


def _event(side, key, value, ts):
    return {"side": side, "key": key, "value": value, "ts": ts}


def fk_scenario(**extra):
    events = [
        _event("right", "C1", "Alice", 1),
        _event("left", "o1", {"fk": "C1"}, 2),
        _event("left", "o2", {"fk": "C1"}, 3),
        _event("right", "C1", "Alicia", 4),
        _event("right", "C1", None, 5),
    ]
    return kjoin.Scenario.from_dict({"join": "fk", "variant": "inner", "foreign_key": "fk", "events": events, **extra})


def test_table_plain_text_never_wraps_and_marks_its_row():
    long = "x" * 300
    table = Table(pd.DataFrame([{"a": 1, "b": long}, {"a": 2, "b": None}]), mark=1)
    lines = repr(table).splitlines()
    assert len(lines) == 3
    assert lines[1].startswith("   1") and lines[1].endswith(long)
    assert lines[2].startswith(">> 2")
    html = table._repr_html_()
    assert html.count("white-space: nowrap") == 2 + 3  # headers and short cells never wrap ...
    assert html.count("white-space: normal") == 1  # ... a long cell wraps at its spaces
    assert 'class="mark"' in html and html.count("<tr") == 3


def test_steps_table_has_one_row_per_step_with_outputs_and_fates():
    trace = kjoin.run(fk_scenario())
    frame = steps_table(trace).frame
    assert list(frame["step"]) == list(range(len(trace.steps)))
    joined = frame[frame["outputs"] != ""]
    assert list(joined["outputs"]) == [
        "{fk: C1}-Alice@2",  # values shown as values (kjoin_viz.values), not JSON strings
        "{fk: C1}-Alice@3",
        "{fk: C1}-Alicia@4",
        "{fk: C1}-Alicia@4",
        "null@5",
        "null@5",
    ]
    assert frame.loc[0, "fate"] == "stored: no left row subscribes to this key"
    assert frame.loc[len(frame) - 1, "fate"] == "tombstone: the join result is deleted"
    assert steps_table(trace, steps=[3], mark=3).mark == 0
    assert "task" not in frame.columns  # one partition: every step ran on task 0
    assert frame.loc[2, "value"] == "m1 subscription: (C1, o1) PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE"
    assert frame.loc[3, "value"] == "m2 response: o1 ← Alice"
    two = steps_table(kjoin.run(fk_scenario(partitions=2))).frame
    assert list(two.columns)[:2] == ["step", "task"]


def test_workflow_table_lists_subscriptions_and_results_per_input():
    scenario = fk_scenario()
    frame = workflow_table({"inner": kjoin.run(scenario), "left": kjoin.run(scenario.with_variant("left"))}).frame
    assert len(frame) == 5
    assert frame.iloc[1]["subscriptions sent (inner)"] == "PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE → C1 (task 0)"
    assert frame.iloc[4]["inner"] == "null, null"
    assert frame.iloc[4]["left"] == "{fk: C1}-null, {fk: C1}-null"


def test_messages_and_stores_tables_follow_one_message():
    trace = kjoin.run(fk_scenario())
    sent = messages_table(trace, 1).frame
    assert list(sent["now"]) == ["sent"]
    assert sent.loc[0, "carries"] == "(C1, o1) PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE"
    delivered = messages_table(trace, 2).frame
    assert list(delivered["now"]) == ["delivered", "sent"]
    stores = stores_table(trace, 2, ["subscription store", "left table"])
    captions = [caption for caption, _ in stores.tables]
    assert captions == ["task 0: subscription store", "task 0: left table"]
    subscriptions = stores.tables[0][1].frame
    assert list(subscriptions.iloc[0])[:3] == ["*", "C1", "o1"]
    assert "(empty)" not in repr(stores)


def test_versions_table_gives_each_version_its_interval():
    events = [_event("right", "k", "b", 5), _event("right", "k", "d", 7), _event("left", "k", "D", 6)]
    right = {"versioned": True, "history_retention_ms": 100}
    scenario = kjoin.Scenario.from_dict({"join": "stream-table", "variant": "inner", "right": right, "events": events})
    frame = versions_table(kjoin.run(scenario), 2, "right").frame
    assert frame.values.tolist() == [["k", 5, 7, "b"], ["k", 7, "latest", "d"]]


def test_as_of_table_compares_each_design_with_the_truth():
    events = [
        _event("left", "k", "a0", 0),
        _event("right", "k", "b0", 0),
        _event("left", "k", "a4", 4),
        _event("right", "k", "b3", 3),
        _event("right", "k", "b2", 2),
        _event("left", "k", "a1", 1),
    ]
    history = {"versioned": True, "history_retention_ms": 1000}
    scenario = kjoin.Scenario.from_dict(
        {"join": "table-table", "variant": "inner", "left": history, "right": history, "events": events}
    )
    traces = versioned_mode_traces(scenario, unversioned=True)
    frame = as_of_table(traces, range(6)).frame
    assert list(frame["truth"])[:6] == ["a0-b0", "a1-b0", "a1-b2", "a1-b3", "a4-b3", "a4-b3"]
    assert list(frame["attempt2"])[:6] == list(frame["truth"])[:6]
    assert list(frame["attempt1"])[2:4] == ["a0-b2", "a0-b2"]
    assert frame.iloc[-1].tolist() == ["outputs", "", "5", "3", "5", "8"]
    assert as_of(traces["final"].outputs, -1) == ""


def test_side_by_side_needs_the_same_steps():
    one = kjoin.run(kjoin.Scenario.from_notation("stream-table", "left", left="3:A", right="1:a"))
    two = kjoin.run(kjoin.Scenario.from_notation("stream-table", "left", left="3:A, 4:B", right="1:a"))
    assert side_by_side({"a": one}).frame.values.tolist()[1] == [1, 3, "A", "", "A-a"]
    with pytest.raises(ValueError):
        side_by_side({"a": one, "b": two})


def test_partitions_table_uses_the_default_partitioner():
    frame = partitions_table(["alice", "bob", 7], [2, 3]).frame
    assert list(frame["key"]) == ["alice", "bob", "7"]
    assert list(frame["2 partitions"]) == [default_partition(k, 2) for k in ("alice", "bob", 7)]
    assert list(frame["3 partitions"]) == [default_partition(k, 3) for k in ("alice", "bob", 7)]
    assert frame.loc[0, "2 partitions"] != frame.loc[0, "3 partitions"]  # alice moves with the partition count


def _clicks_and_views():
    window = {"before_ms": 10, "after_ms": 10, "grace_ms": 0}
    events = [
        _event("left", "alice", "A", 1),
        _event("left", "bob", "B", 2),
        _event("right", "alice", "a", 3),
        _event("right", "bob", "b", 4),
    ]
    return kjoin.Scenario.from_dict(
        {"join": "stream-stream", "variant": "inner", "window": window, "partitions": 2, "events": events}
    )


def test_round_robin_breaks_co_partitioning_and_repartition_restores_it():
    scenario = _clicks_and_views()
    assert {default_partition("alice", 2), default_partition("bob", 2)} == {0, 1}
    spread = round_robin(scenario, "right")
    assert [r.partition for r in spread.records() if r.side.value == "right"] == [0, 1]
    lefts = [r for r in spread.records() if r.side.value == "left"]
    assert lefts == [r for r in scenario.records() if r.side.value == "left"]
    assert [len(s.outputs) for s in kjoin.run(scenario)] == [0, 0, 1, 1]
    assert kjoin.run(spread).outputs == []  # alice's view sits on bob's partition and the other way round
    fixed = repartition(spread, "right")
    assert fixed.records() == scenario.records()
    assert [o.render() for o in kjoin.run(fixed).outputs] == ["A-a", "B-b"]
