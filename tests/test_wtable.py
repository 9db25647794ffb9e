"""Seed 000's WTable joins, each rule pinned with several keys and windows; one output per pair
over hopping windows; and the consistency of table joins (eventual) against stream-table joins (not).

Expected outputs are written by hand: ``(key, value, ts)`` per step, with the default joiner
rendering ``left-right``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kjoin import Scenario, run
from kjoin.engine.aggregates import (
    DAY_MS,
    RESULT_TYPES,
    TimeWindows,
    Window,
    Windowed,
    consistency_marks,
    hopping_join_counts,
    materialize,
    output_to_dict,
    run_hopping_join,
    run_wtable_join,
    select_by_field,
    select_by_timestamp,
    shift_by,
)
from kjoin.fates import Fate
from tests.strategies import events as table_events

W10 = TimeWindows(10, grace_ms=1_000)  # tumbling, and nothing closes in these examples


def ev(side, key, ts, value="x"):
    return {"side": side, "key": key, "value": value, "ts": ts}


def outs(trace):
    return [[(str(o.key), None if o.tombstone else o.value, o.ts) for o in step.outputs] for step in trace]


def fates(trace):
    return [(s.fate.value, None if s.reason is None else s.reason.value) for s in trace]


# -- wtable-wtable on the same window ------------------------------------------------------------
SAME_WINDOW = [
    ev("left", "a", 1),
    ev("right", "a", 3),
    ev("right", "b", 12),
    ev("left", "a", 15),
    ev("left", "b", 18),
    ev("left", "a", 7),
    ev("right", "a", 25),
]


def test_wtable_wtable_inner_join_on_the_same_window():
    trace = run_wtable_join(SAME_WINDOW, "wtable-wtable", W10, "inner")
    assert outs(trace) == [
        [],
        [("a@[0, 10)", "1-1", 3)],
        [],
        [],
        [("b@[10, 20)", "1-1", 18)],
        [("a@[0, 10)", "2-1", 7)],
        [],
    ]
    assert fates(trace)[0] == ("no-match", "no-partner")


def test_wtable_wtable_left_join_on_the_same_window():
    trace = run_wtable_join(SAME_WINDOW, "wtable-wtable", W10, "left")
    assert outs(trace) == [
        [("a@[0, 10)", "1-null", 1)],
        [("a@[0, 10)", "1-1", 3)],
        [],
        [("a@[10, 20)", "1-null", 15)],
        [("b@[10, 20)", "1-1", 18)],
        [("a@[0, 10)", "2-1", 7)],
        [],
    ]
    assert fates(trace)[2] == ("no-match", "no-partner")


def test_wtable_wtable_outer_join_on_the_same_window():
    trace = run_wtable_join(SAME_WINDOW, "wtable-wtable", W10, "outer")
    assert outs(trace) == [
        [("a@[0, 10)", "1-null", 1)],
        [("a@[0, 10)", "1-1", 3)],
        [("b@[10, 20)", "null-1", 12)],
        [("a@[10, 20)", "1-null", 15)],
        [("b@[10, 20)", "1-1", 18)],
        [("a@[0, 10)", "2-1", 7)],
        [("a@[20, 30)", "null-1", 25)],
    ]
    assert all(isinstance(o.key, Windowed) for o in trace.outputs)
    assert output_to_dict(trace[0].outputs[0])["window"] == {"start_ms": 0, "end_ms": 10}


def test_wtable_wtable_left_join_with_a_shifter_looks_up_the_shifted_window_from_both_sides():
    events = [ev("left", "a", 15), ev("right", "a", 5), ev("right", "a", 15), ev("left", "a", 25), ev("right", "b", 5)]
    trace = run_wtable_join(events, "wtable-wtable", W10, "left", shifter=shift_by(-10))
    assert outs(trace) == [
        [("a@[10, 20)", "1-null", 15)],
        [("a@[10, 20)", "1-1", 15)],  # right [0, 10) is what left [10, 20) looks at
        [],  # right [10, 20) is looked at by left [20, 30), which does not exist yet
        [("a@[20, 30)", "1-1", 25)],
        [],
    ]
    assert fates(trace)[2] == ("no-match", "no-partner")
    with pytest.raises(ValueError, match="only for the left join"):
        run_wtable_join(events, "wtable-wtable", W10, "inner", shifter=shift_by(-10))
    with pytest.raises(ValueError, match="same windows on both sides"):
        run_wtable_join(events, "wtable-wtable", W10, "left", right_windows=TimeWindows(20, grace_ms=1_000))


def test_a_self_join_with_a_shifter_joins_a_late_update_of_last_weeks_window_into_this_weeks_result():
    events = [ev("left", "a", 12), ev("left", "a", 3), ev("left", "a", 14)]
    trace = run_wtable_join(events, "wtable-wtable", W10, self_join=True, shifter=shift_by(-10))
    assert outs(trace) == [
        [("a@[10, 20)", "1-null", 12)],
        [("a@[0, 10)", "1-null", 3), ("a@[10, 20)", "1-1", 12)],  # as left of [0, 10), then as right of [10, 20)
        [("a@[10, 20)", "2-1", 14)],
    ]


# -- wtable-table, stream-wtable, table-wtable --------------------------------------------------
def test_wtable_table_left_join_rejoins_every_window_of_the_key_on_a_table_update():
    events = [
        ev("left", "a", 1),
        ev("right", "a", 2, "x"),
        ev("left", "a", 12),
        ev("right", "a", 13, "y"),
        ev("right", "a", 14, None),
        ev("right", "b", 3, "z"),
        ev("right", None, 4, "z"),
    ]
    trace = run_wtable_join(events, "wtable-table", W10)
    assert outs(trace) == [
        [("a@[0, 10)", "1-null", 1)],
        [("a@[0, 10)", "1-x", 2)],
        [("a@[10, 20)", "1-x", 12)],
        [("a@[0, 10)", "1-y", 13), ("a@[10, 20)", "1-y", 13)],
        [("a@[0, 10)", "1-null", 14), ("a@[10, 20)", "1-null", 14)],  # a left join: a right delete is not a tombstone
        [],
        [],
    ]
    assert fates(trace)[5:] == [("no-match", "no-partner"), ("dropped", "null-key")]
    assert not any(o.tombstone for o in trace.outputs)


def test_stream_wtable_left_join_looks_up_the_window_the_selector_picks():
    events = [
        ev("right", "a", 3),
        ev("left", "a", 5, "A"),
        ev("left", "a", 15, "B"),
        ev("right", "a", 12),
        ev("left", "a", 16, "C"),
        ev("left", "a", 17, None),
        ev("left", "b", 4, "D"),
    ]
    trace = run_wtable_join(events, "stream-wtable", W10, selector=select_by_timestamp(W10))
    assert outs(trace) == [
        [],
        [("a", "A-1", 5)],
        [("a", "B-null", 15)],
        [],
        [("a", "C-1", 16)],
        [],
        [("b", "D-null", 4)],
    ]
    assert fates(trace)[0] == ("stored", "table-update") and fates(trace)[5] == ("dropped", "null-value")
    by_field = run_wtable_join(
        [ev("right", "a", 3), ev("left", "a", 100, {"seen_at": 4}), ev("left", "a", 101, {"seen_at": None})],
        "stream-wtable",
        W10,
        selector=select_by_field(W10, "seen_at"),
        joiner=lambda left, right: right,
    )
    assert [o.value for o in by_field.outputs] == [1, None]
    assert "picked no window" in by_field[2].explain


BEHIND_RETENTION = {
    "join": "wtable-wtable",
    "variant": "left",
    "window": {"size_ms": 5},
    "events": [
        {"side": "left", "key": "k3", "value": "L1", "ts": 14},
        {"side": "left", "key": "k1", "value": "L0", "ts": 36},
        {"side": "right", "key": "k3", "value": "R8", "ts": 12},
    ],
}
"""The left store sees window start 35 and keeps 5 ms (size + grace): R8@12's lookup of the left window [10, 15) is
behind the retention (Kafka 3.4+ hides it from reads, though its segment lives; earlier versions find it)."""

ADS = [ev("right", "home", 1), ev("right", "home", 3), ev("right", "home", 12), ev("left", "home", 13, {"seen_at": 4})]
"""Views of home at 1 and 3 fill [0, 10); the view at 12 opens [10, 20), so the store observed window start 10 and,
with the default retention of 10 ms (size + grace), [0, 10) starts at or before 10 - 10: behind the retention."""


def test_since_kafka_3_4_a_lookup_finds_nothing_in_a_window_behind_the_retention_and_says_why():
    w = TimeWindows(10)
    select = select_by_field(w, "seen_at")
    hidden = run_wtable_join(ADS, "stream-wtable", w, selector=select)
    assert outs(hidden)[3] == [("home", '{"seen_at":4}-null', 13)]
    assert "still holds window [0, 10) (segment 0)" in hidden[3].explain
    assert "observed 10 - retention 10 = 0: behind the retention" in hidden[3].explain
    for found in (
        run_wtable_join(ADS, "stream-wtable", w, selector=select, semantics="3.3"),  # before KAFKA-12960
        run_wtable_join(ADS, "stream-wtable", w, selector=select, retention_ms=11),  # 0 > 10 - 11: kept
    ):
        assert outs(found)[3] == [("home", '{"seen_at":4}-2', 13)] and "found 2@3" in found[3].explain
    # a table-wtable row looks up the same way; a wtable-table update re-joins only the windows a read still sees
    table = run_wtable_join([*ADS[:3], {**ADS[3], "value": {"seen_at": 4}}], "table-wtable", w, selector=select)
    assert table.outputs[-1].right is None and "behind the retention" in table[3].explain
    rejoin = [ev("left", "a", 1), ev("left", "a", 12), ev("right", "a", 13, "t")]
    assert outs(run_wtable_join(rejoin, "wtable-table", w))[2] == [("a@[10, 20)", "1-t", 13)]
    assert outs(run_wtable_join(rejoin, "wtable-table", w, semantics="3.3"))[2] == [
        ("a@[0, 10)", "1-t", 13),
        ("a@[10, 20)", "1-t", 13),
    ]


def test_a_wtable_wtable_update_that_finds_its_partner_behind_the_retention_has_the_reason_behind_retention():
    events = [ev("left", "k", 14), ev("left", "j", 36), ev("right", "k", 12)]  # left observed 35, retention 5
    for variant, expected, fate in (
        ("left", [], ("no-match", "behind-retention")),
        ("inner", [], ("no-match", "behind-retention")),
        ("outer", [("k@[10, 15)", "null-1", 12)], ("joined", None)),
    ):
        trace = run_wtable_join(events, "wtable-wtable", TimeWindows(5), variant)
        assert outs(trace)[2] == expected and fates(trace)[2] == fate, variant
        assert "behind the retention" in trace[2].explain
    older = run_wtable_join(events, "wtable-wtable", TimeWindows(5), "left", semantics="2.8")
    assert outs(older)[2] == [("k@[10, 15)", "1-1", 14)] and fates(older)[2] == ("joined", None)


def test_table_wtable_left_join_emits_for_a_wtable_update_only_in_the_window_the_row_selects():
    at = select_by_field(W10, "at")
    events = [
        ev("right", "a", 3),
        ev("left", "a", 50, {"at": 5}),
        ev("right", "a", 7),
        ev("right", "a", 14),
        ev("left", "a", 60, {"at": 15}),
        ev("left", "a", 70, None),
        ev("left", "a", 71, None),
        ev("left", "b", 72, {"at": None}),
    ]
    trace = run_wtable_join(events, "table-wtable", W10, selector=at, joiner=lambda left, right: (left["at"], right))
    assert outs(trace) == [
        [],
        [("a", (5, 1), 50)],
        [("a", (5, 2), 50)],
        [],  # [10, 20) changed, but the row selects [0, 10)
        [("a", (15, 1), 60)],
        [("a", None, 70)],  # a delete of an existing row: tombstone
        [],
        [("b", (None, None), 72)],
    ]
    assert trace[5].outputs[0].tombstone
    assert fates(trace)[3] == ("no-match", "no-partner") and fates(trace)[6] == ("stored", "nothing-to-delete")


def test_result_types_follow_the_seeds_table():
    assert RESULT_TYPES == {
        "wtable-wtable": "WTable",
        "wtable-table": "WTable",
        "stream-wtable": "KStream",
        "table-wtable": "KTable",
    }
    left = run_wtable_join([ev("left", "a", 1)], "wtable-table", W10)
    assert left.wtable().materialize() == {Windowed("a", Window(0, 10)): "1-null"}
    stream = run_wtable_join([ev("left", "a", 1, "A")], "stream-wtable", W10, selector=select_by_timestamp(W10))
    with pytest.raises(TypeError, match="KStream, not a WTable"):
        stream.wtable()


def test_wtable_join_arguments_are_checked():
    with pytest.raises(ValueError, match="needs a window selector"):
        run_wtable_join([], "stream-wtable", W10)
    with pytest.raises(ValueError, match="only as a left join"):
        run_wtable_join([], "wtable-table", W10, "inner")
    with pytest.raises(ValueError, match="join must be one of"):
        run_wtable_join([], "wtable-stream", W10)


# -- hopping windows: one output per pair, not per shared window ---------------------------------
def test_a_hopping_window_join_emits_one_output_per_matching_pair_not_per_shared_window():
    windows = TimeWindows(10, advance_ms=5)
    events = [
        ev("left", "a", 12, "L"),
        ev("right", "a", 14, "r1"),
        ev("right", "a", 17, "r2"),
        ev("right", "a", 21, "r3"),
    ]
    per_pair = run_hopping_join(events, windows, "pair")
    per_window = run_hopping_join(events, windows, "window")
    # L@12 is in [5, 15) and [10, 20); r1@14 shares both, r2@17 shares [10, 20), r3@21 shares none
    assert [[o.value for o in s.outputs] for s in per_pair] == [[], ["L-r1"], ["L-r2"], []]
    assert [[o.value for o in s.outputs] for s in per_window] == [[], ["L-r1", "L-r1"], ["L-r2"], []]
    assert hopping_join_counts(events, windows) == {"per_pair": 2, "per_window": 3}
    assert "shares 2 window(s)" in per_pair[1].explain
    assert per_pair[3].fate is Fate.NO_MATCH


# -- consistency: table joins converge to the join of their materialized inputs -------------------
def sql_left_join(left: dict, right: dict, lookup=lambda key: key) -> dict:
    return {key: (value, right.get(lookup(key))) for key, value in left.items()}


WINDOW_EVENTS = st.lists(
    st.builds(
        lambda side, key, ts: ev(side, key, ts),
        st.sampled_from(["left", "right"]),
        st.sampled_from(["a", "b", "c"]),
        st.integers(0, 40),
    ),
    max_size=25,
)


def windowed_counts(events, side) -> dict:
    counts: dict = {}
    for e in events:
        if e["side"] == side:
            for window in W10.windows_for(e["ts"]):
                counts[Windowed(e["key"], window)] = counts.get(Windowed(e["key"], window), 0) + 1
    return counts


def sql_join(variant: str, left: dict, right: dict) -> dict:
    keys = {"inner": left.keys() & right.keys(), "left": set(left), "outer": left.keys() | right.keys()}[variant]
    return {key: (left.get(key), right.get(key)) for key in keys}


@pytest.mark.parametrize("variant", ["inner", "left", "outer"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=WINDOW_EVENTS)
def test_a_wtable_wtable_join_materializes_to_the_join_of_the_materialized_wtables_after_every_step(variant, events):
    trace = run_wtable_join(events, "wtable-wtable", W10, variant, joiner=lambda left, right: (left, right))
    for step in trace:
        seen = events[: step.index + 1]
        expected = sql_join(variant, windowed_counts(seen, "left"), windowed_counts(seen, "right"))
        assert materialize(o for s in trace[: step.index + 1] for o in s.outputs) == expected
    assert all(consistency_marks(trace))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(
        st.builds(
            lambda side, key, ts, value: ev(side, key, ts, value if side == "right" else "x"),
            st.sampled_from(["left", "right"]),
            st.sampled_from(["a", "b"]),
            st.integers(0, 40),
            st.one_of(st.none(), st.sampled_from(["p", "q"])),
        ),
        max_size=25,
    )
)
def test_a_wtable_table_join_is_eventually_consistent(events):
    trace = run_wtable_join(events, "wtable-table", W10, joiner=lambda left, right: (left, right))
    table: dict = {}
    for e in events:
        if e["side"] == "right":
            table.pop(e["key"], None) if e["value"] is None else table.__setitem__(e["key"], e["value"])
    expected = sql_left_join(windowed_counts(events, "left"), table, lambda windowed: windowed.key)
    assert materialize(trace.outputs) == expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(
        st.builds(
            lambda side, key, ts, at: ev(
                side, key, ts, ({"at": at} if at != "delete" else None) if side == "left" else "x"
            ),
            st.sampled_from(["left", "right"]),
            st.sampled_from(["a", "b"]),
            st.integers(0, 40),
            st.one_of(st.none(), st.integers(0, 40), st.just("delete")),
        ),
        max_size=25,
    )
)
def test_a_table_wtable_join_with_a_selector_is_eventually_consistent(events):
    select = select_by_field(W10, "at")
    trace = run_wtable_join(events, "table-wtable", W10, selector=select, joiner=lambda left, right: (left, right))
    table: dict = {}
    for e in events:
        if e["side"] == "left":
            table.pop(e["key"], None) if e["value"] is None else table.__setitem__(e["key"], e["value"])
    counts = windowed_counts(events, "right")
    expected = {key: (value, counts.get(Windowed(key, select(key, value, 0)))) for key, value in table.items()}
    assert materialize(trace.outputs) == expected


def test_a_stream_table_join_is_not_eventually_consistent():
    """The counter-example: a table row that arrives after the stream record never updates the result."""
    scenario = Scenario.from_dict(
        {
            "join": "stream-table",
            "variant": "left",
            "events": [
                {"side": "left", "key": "k", "value": "A", "ts": 1},
                {"side": "right", "key": "k", "value": "a", "ts": 2},
            ],
        }
    )
    trace = run(scenario, joiner=lambda left, right: (left, right))
    assert [o.value for o in trace.outputs] == [("A", None)]
    # the join of the materialized inputs (the stream's records, the table's rows) is A-a, and stays so
    assert sql_left_join({"k": "A"}, {"k": "a"}) == {"k": ("A", "a")}
    assert materialize(trace.outputs) != sql_left_join({"k": "A"}, {"k": "a"})


def test_a_stream_wtable_join_is_not_eventually_consistent_either():
    events = [ev("left", "a", 5, "A"), ev("right", "a", 3)]
    trace = run_wtable_join(events, "stream-wtable", W10, selector=select_by_timestamp(W10), joiner=lambda a, b: (a, b))
    assert [o.value for o in trace.outputs] == [("A", None)]  # the window's count 1 arrives after: no update


# -- the consistency marks a trace view shows ------------------------------------------------------
@pytest.mark.parametrize("variant", ["inner", "left", "outer"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs=table_events(), partitions=st.integers(1, 3))
def test_a_table_table_trace_is_marked_consistent_after_every_step(variant, inputs, partitions):
    scenario = Scenario.from_dict(
        {"join": "table-table", "variant": variant, "partitions": partitions, "events": inputs}
    )
    assert all(consistency_marks(run(scenario)))


def test_consistency_marks_turn_false_once_a_window_behind_the_retention_is_dropped():
    from tests.test_aggregates import page_views_against_last_week

    assert consistency_marks(page_views_against_last_week(retention_ms=8 * DAY_MS)) == [True] * 8
    # with one day of retention, step 3 drops day 0's windows: results for them stay, the inputs do not
    assert consistency_marks(page_views_against_last_week(retention_ms=None)) == [True] * 3 + [False] * 5


def test_consistency_marks_refuse_stream_joins():
    scenario = Scenario.from_dict({"join": "stream-table", "variant": "left", "events": []})
    with pytest.raises(ValueError, match="a stream has no materialization"):
        consistency_marks(run(scenario))


# -- the declarative form the scenario format will route to ---------------------------------------
def test_a_declarative_wtable_scenario_runs_as_the_python_api_does_and_writes_windows_in_jsonl():
    import json

    import yaml

    from kjoin.engine.aggregates import run_spec
    from kjoin.render import spec_jsonl

    text = """
    join: wtable-wtable
    variant: left
    window: {size_ms: 10, grace_ms: 1000}
    window_shift_ms: -10
    events:
      - {side: left, key: a, value: x, ts: 15}
      - {side: right, key: a, value: x, ts: 5}
    """
    trace = run_spec(yaml.safe_load(text), "shift.yaml")
    python = run_wtable_join([ev("left", "a", 15), ev("right", "a", 5)], "wtable-wtable", W10, shifter=shift_by(-10))
    assert outs(trace) == outs(python) == [[("a@[10, 20)", "1-null", 15)], [("a@[10, 20)", "1-1", 15)]]
    lines = [json.loads(line) for line in spec_jsonl(trace)]
    assert lines[1]["outputs"] == [
        {
            "key": "a",
            "left": 1,
            "right": 1,
            "value": "1-1",
            "ts": 15,
            "tombstone": False,
            "kind": "joined",
            "partition": 0,
            "origin_step": 1,
            "window": {"start_ms": 10, "end_ms": 20},
        }
    ]
    assert lines[0]["fate"] == "joined" and "looks up right @[0, 10)" in lines[0]["explain"]


@pytest.mark.parametrize(
    "data, message",
    [
        ({"join": "wtable-wtable"}, "window: a wtable-wtable scenario needs it"),
        ({"join": "stream-wtable", "window": {"size_ms": 10}}, "selector: a stream-wtable scenario needs it"),
        ({"join": "window-aggregate", "window": {"size_ms": 10, "advance_ms": 20}}, r"window: advance_ms must lie"),
        ({"join": "window-aggregate", "window": {"size_ms": "10"}}, "window.size_ms: integer milliseconds"),
        ({"join": "window-aggregate", "window": {"size_ms": 10}, "selector": "timestamp"}, "selector: not a field"),
        ({"join": "table-aggregate", "group_by": "page", "aggregate": "max"}, r"aggregate: count or \{sum: field\}"),
        (
            {"join": "wtable-wtable", "window": {"size_ms": 10}, "variant": "outer", "window_shift_ms": -10},
            "window_shift_ms: .* only for the left",
        ),
        (
            {"join": "wtable-wtable", "window": {"size_ms": 10}, "self_join": True},
            "self_join: .* needs window_shift_ms",
        ),
        ({"join": "stream-wtable", "window": {"size_ms": 10}, "selector": {"column": "x"}}, "selector: timestamp or"),
        (
            {"join": "wtable-table", "window": {"size_ms": 10}, "variant": "inner"},
            "variant: 'inner' is not one of left",
        ),
        ({"join": "window-aggregate", "window": {"size_ms": 10}, "retention_ms": 5}, "retention_ms 5 is smaller"),
        ({"join": "sessions"}, "join: 'sessions' is not one of"),
        ({"join": "window-aggregate", "window": {"size_ms": 10}, "semantics": "0.9"}, "semantics '0.9': Kafka"),
    ],
)
def test_declarative_errors_name_the_field_and_the_fix(data, message):
    from kjoin.engine.aggregates import run_spec
    from kjoin.scenario import ScenarioError

    with pytest.raises(ScenarioError, match=f"^bad.yaml: {message}"):
        run_spec(data, "bad.yaml")
