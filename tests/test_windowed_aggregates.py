"""Session and sliding windowed aggregates, ``suppress(untilWindowCloses)`` and emit-final.

Hand-computed outputs for each mechanism (session merging, sliding windows' left and right windows, the suppression
buffer, emit-final), each also run through the real library (``kafka_oracle/oracle_check.py``'s harness), and the era
boundaries on both sides against the Kafka versions that show them. The random comparison runs in
``tests/test_kafka_oracle.py`` (seed 000's sample) and ``make kafka-check``. Without Java, Maven or the jars these
tests fail, they never skip.
"""

from __future__ import annotations

import pytest

import kjoin

from kjoin.scenario import AggregateSpec
from kjoin.fates import Fate, Reason
from kafka_oracle.oracle_check import Harness, kjoin_outputs


def ev(key, value, ts):
    return {"side": "left", "key": key, "value": value, "ts": ts}


SESSIONS = {
    "join": "window-aggregate",
    "window": {"inactivity_gap_ms": 5, "grace_ms": 2},
    "events": [ev("a", "x", 1), ev("a", "y", 4), ev("a", "z", 20), ev("a", "w", 12), ev(None, "n", 21)],
}
SLIDING = {
    "join": "window-aggregate",
    "window": {"time_difference_ms": 5, "grace_ms": 10},
    "events": [ev("a", "x", 10), ev("a", "y", 12), ev("a", "z", 20), ev("a", None, 21), ev("a", "e", 3)],
}


def outputs(data: dict, **changes) -> list[list[str]]:
    spec = AggregateSpec.from_dict({**data, **changes})
    return [
        [f"{o.key}@[{o.window[0]},{o.window[1]}]={'null' if o.tombstone else o.value}@{o.ts}" for o in step.outputs]
        for step in kjoin.run(spec).steps
    ]


def test_a_session_merges_with_the_sessions_its_record_reaches_and_tombstones_them() -> None:
    assert outputs(SESSIONS) == [
        ["a@[1,1]=1@1"],
        ["a@[1,1]=null@1", "a@[1,4]=2@4"],  # merged: the old session's tombstone at its end, then the new session
        ["a@[20,20]=1@20"],
        [],  # [12, 12] ends before 20 - 2 - 5 = 13: late
        [],
    ]
    steps = kjoin.run(AggregateSpec.from_dict(SESSIONS)).steps
    assert (steps[3].fate, steps[3].reason) == (Fate.DROPPED, Reason.EXPIRED_WINDOW)
    assert (steps[4].fate, steps[4].reason) == (Fate.DROPPED, Reason.NULL_KEY)


def test_before_3_0_a_session_closes_at_stream_time_minus_grace() -> None:
    """KAFKA-12718: b@7 opens a session at stream time 10 from 3.0 (close time 10 - 0 - 5), not before (10 - 0)."""
    data = {
        "join": "window-aggregate",
        "window": {"inactivity_gap_ms": 5},
        "events": [ev("a", "x", 10), ev("b", "y", 7)],
    }
    assert outputs(data, semantics="3.0") == [["a@[10,10]=1@10"], ["b@[7,7]=1@7"]]
    assert outputs(data, semantics="2.8") == [["a@[10,10]=1@10"], []]


def test_a_sliding_window_aggregate_creates_left_and_right_windows() -> None:
    assert outputs(SLIDING) == [
        ["a@[5,10]=1@10"],  # a@10's left window
        ["a@[11,16]=1@12", "a@[7,12]=2@12"],  # a@10's right window (it now holds a@12), then a@12's left window
        ["a@[15,20]=1@20"],  # nothing within 5 before it: a fresh left window
        [],  # a null value: skipped
        [],  # [3, 8] ended before 21 - 10: late
    ]
    early = {**SLIDING, "events": [ev("a", "x", 3), ev("a", "y", 1)]}
    assert outputs(early) == [
        ["a@[0,5]=1@3"],  # early records (ts < 5) share [0, 5] instead of a left window starting below 0
        ["a@[2,7]=1@3", "a@[0,5]=2@3"],  # a@1's right window holds a@3; then [0, 5] takes a@1
    ]


def test_before_the_fix_a_sliding_window_ending_at_the_close_time_is_closed() -> None:
    data = {"join": "window-aggregate", "window": {"time_difference_ms": 5}, "events": [ev("a", "x", 10)]}
    assert outputs(data, semantics="3.1.1") == [["a@[5,10]=1@10"]]
    assert outputs(data, semantics="3.1.0") == [[]]


SUPPRESS_VS_FINAL = {
    "join": "window-aggregate",
    "window": {"inactivity_gap_ms": 5},
    "events": [ev("a", "x", 0), ev("b", "y", 5), ev("b", "z", 6), ev("a", "w", 12)],
}


def test_suppress_and_emit_final_forward_each_session_once_at_different_moments() -> None:
    """The suppression buffer forwards a session when its end <= stream time - grace - gap; emit-final when its end
    < stream time - grace - gap: a[0, 0] leaves the buffer at b@5, but emit-final waits for b@6."""
    assert outputs(SUPPRESS_VS_FINAL, suppress="until-window-closes") == [
        [],
        ["a@[0,0]=1@0"],
        [],
        ["b@[5,6]=2@6"],  # 6 <= 12 - 5; the tombstone of b[5, 5] was replaced in the buffer by b[5, 6]
    ]
    assert outputs(SUPPRESS_VS_FINAL, emit="final") == [[], [], ["a@[0,0]=1@0"], ["b@[5,6]=2@6"]]
    steps = kjoin.run(AggregateSpec.from_dict({**SUPPRESS_VS_FINAL, "emit": "final"})).steps
    assert (steps[0].fate, steps[0].reason) == (Fate.BUFFERED, Reason.WINDOW_OPEN)


def test_emit_final_over_tumbling_windows_forwards_closed_windows_by_start_then_key() -> None:
    data = {
        "join": "window-aggregate",
        "window": {"size_ms": 10},
        "emit": "final",
        "events": [ev("b", "x", 1), ev("a", "y", 2), ev("a", "z", 15), ev("c", "w", 31)],
    }
    # c@31 closes [10, 20) too, but it starts before the time-ordered store's observed 30 - retention 10: since 3.4
    # the range read no longer finds it, and a[10, 20) is never forwarded (Kafka 4.4.0 agrees, below).
    assert outputs(data) == [[], [], ["a@[0,10]=1@2", "b@[0,10]=1@1"], []]
    assert outputs(data, semantics="3.3") == [[], [], ["a@[0,10]=1@2", "b@[0,10]=1@1"], ["a@[10,20]=1@15"]]


def test_an_emit_final_window_is_emitted_by_the_step_that_closes_it_and_credited_to_the_records_that_built_it():
    """The closing step's outputs hold the final result, but its ``origin_step`` is the last record the window took
    (as a suppressed window's, whose latest update that record made), and the closing step's explanation names the
    window and every record that built it: for tumbling windows, sessions (the records of the merged sessions too)
    and sliding windows."""
    tumbling = {
        "join": "window-aggregate",
        "window": {"size_ms": 10},
        "emit": "final",
        "events": [ev("b", "x", 1), ev("a", "y", 2), ev("a", "q", 4), ev("a", "z", 15)],
    }
    steps = kjoin.run(AggregateSpec.from_dict(tumbling)).steps
    assert [(o.render(), o.origin_step) for o in steps[3].outputs] == [("a@[0, 10)=2", 2), ("b@[0, 10)=1", 0)]
    assert all(o.origin_step != 3 for o in steps[3].outputs)  # z@15 closed them; they are not its results
    assert (steps[3].fate, steps[3].reason) == (Fate.BUFFERED, Reason.WINDOW_OPEN)  # its own window waits
    assert "window a@[0, 10) closed (close time 15): 2@4 forwarded, built by 2 records: y@2 (step 1), q@4 (step 2)" in (
        steps[3].explain
    )
    assert "window b@[0, 10) closed (close time 15): 1@1 forwarded, built by 1 record: x@1 (step 0)" in steps[3].explain
    # a session merged from two: credited to both records, emitted by the record that closes it
    steps = kjoin.run(AggregateSpec.from_dict({**SUPPRESS_VS_FINAL, "emit": "final"})).steps
    assert [(o.render(), o.origin_step) for o in steps[3].outputs] == [("b@[5, 6]=2", 2)]
    assert "session b@[5, 6] closed (close time 7): 2 forwarded, built by 2 records: y@5 (step 1), z@6 (step 2)" in (
        steps[3].explain
    )
    # sliding windows: y@12 is in a@[7, 12] and in x@10's right window a@[11, 16]; x@10 only in the first
    sliding = {
        "join": "window-aggregate",
        "window": {"time_difference_ms": 5},
        "emit": "final",
        "events": [ev("a", "x", 10), ev("a", "y", 12), ev("a", "z", 20)],
    }
    steps = kjoin.run(AggregateSpec.from_dict(sliding)).steps
    assert [(o.render(), o.origin_step) for o in steps[2].outputs] == [("a@[7, 12]=2", 1), ("a@[11, 16]=1", 1)]
    assert "a@[7, 12] closed (close time 20): 2@12 forwarded, built by 2 records: x@10 (step 0), y@12 (step 1)" in (
        steps[2].explain
    )
    assert "a@[11, 16] closed (close time 20): 1@12 forwarded, built by 1 record: y@12 (step 1)" in steps[2].explain


def test_an_emit_final_window_of_many_records_names_the_first_and_counts_the_rest():
    many = {
        "join": "window-aggregate",
        "window": {"size_ms": 100},
        "emit": "final",
        "events": [ev("a", f"v{i}", i) for i in range(9)] + [ev("a", "next", 150)],
    }
    last = kjoin.run(AggregateSpec.from_dict(many)).steps[-1]
    assert [(o.render(), o.origin_step) for o in last.outputs] == [("a@[0, 100)=9", 8)]
    assert "built by 9 records: v0@0 (step 0), v1@1 (step 1)" in last.explain and "v5@5 (step 5) and 3 more" in (
        last.explain
    )


@pytest.mark.parametrize(
    "data, message",
    [
        ({**SLIDING, "semantics": "2.6"}, "sliding windows exist since Kafka 2.7 (KIP-450)"),
        ({**SESSIONS, "emit": "final", "semantics": "3.2"}, "exists since Kafka 3.3 (KIP-825)"),
        ({**SESSIONS, "emit": "last"}, "emit: one of updates | final"),
        ({**SESSIONS, "suppress": "until-window-close"}, "did you mean 'until-window-closes'"),
        ({**SESSIONS, "emit": "final", "suppress": "until-window-closes"}, "choose one way"),
        ({**SESSIONS, "retention_ms": 100}, "retention_ms: kjoin models session windows with Kafka's default"),
        ({**SESSIONS, "window": {"inactivity_gap_ms": 5, "size_ms": 3}}, "window.size_ms"),
        (
            {"join": "wtable-wtable", "window": {"inactivity_gap_ms": 5}, "events": []},
            "session windows exist here for window-aggregate only",
        ),
    ],
)
def test_bad_windowed_scenarios_are_refused_naming_the_field(data, message) -> None:
    import re

    from kjoin.scenario import ScenarioError

    with pytest.raises(ScenarioError, match=re.escape(message)):
        AggregateSpec.from_dict(data)


# -- the real library -------------------------------------------------------------------------------------------
FIXED = {
    "sessions": SESSIONS,
    "sliding": SLIDING,
    "suppressed sessions": {**SUPPRESS_VS_FINAL, "suppress": "until-window-closes"},
    "emit-final sessions": {**SUPPRESS_VS_FINAL, "emit": "final"},
    "suppressed sliding": {**SLIDING, "suppress": "until-window-closes"},
    "emit-final sliding": {**SLIDING, "emit": "final", "events": [*SLIDING["events"], ev("b", "q", 40)]},
    "early sliding": {**SLIDING, "events": [ev("a", "x", 3), ev("a", "y", 1)]},
    # notebook 07's sessions (Part 3 and Part 5), as the course shows them
    **{
        f"notebook 07 sessions, {name}": {
            "join": "window-aggregate",
            "window": {"inactivity_gap_ms": 5, "grace_ms": 4},
            **extra,
            "events": [
                ev(key, "view", ts)
                for key, ts in (("home", 1), ("home", 4), ("cart", 5), ("home", 12), ("home", 8), ("home", 30))
                + (("home", 15), ("about", 39), ("about", 40))
            ],
        }
        for name, extra in (
            ("updates", {}),
            ("suppressed", {"suppress": "until-window-closes"}),
            ("emit-final", {"emit": "final"}),
        )
    },
    "emit-final tumbling": {
        "join": "window-aggregate",
        "window": {"size_ms": 10},
        "emit": "final",
        "events": [ev("b", "x", 1), ev("a", "y", 2), ev("a", "z", 15), ev("c", "w", 31)],
    },
    "suppressed hopping": {
        "join": "window-aggregate",
        "window": {"size_ms": 10, "advance_ms": 5, "grace_ms": 1},
        "suppress": "until-window-closes",
        "events": [ev("b", "x", 1), ev("a", "y", 7), ev("a", "z", 16), ev("b", "w", 3), ev("c", "v", 40)],
    },
}


def test_kafka_4_4_agrees_with_the_fixed_scenarios(built) -> None:
    with Harness("4.4.0") as harness:
        for name, data in FIXED.items():
            spec = AggregateSpec.from_dict({**data, "semantics": "4.4.0"})
            kafka = harness.run(spec)
            assert kafka == kjoin_outputs(spec), name
            assert any(kafka), name  # the harness printed something


@pytest.mark.parametrize(
    "version, data",
    [
        ("2.8.2", {"window": {"inactivity_gap_ms": 5}, "events": [ev("a", "x", 10), ev("b", "y", 7)]}),
        ("3.0.2", {"window": {"inactivity_gap_ms": 5}, "events": [ev("a", "x", 10), ev("b", "y", 7)]}),
        ("3.1.0", {"window": {"time_difference_ms": 5}, "events": [ev("a", "x", 10), ev("a", "y", 12)]}),
        ("3.1.1", {"window": {"time_difference_ms": 5}, "events": [ev("a", "x", 10), ev("a", "y", 12)]}),
        ("3.0.1", {"window": {"time_difference_ms": 5}, "events": [ev("a", "x", 10), ev("a", "y", 12)]}),
        ("3.0.2", {"window": {"time_difference_ms": 5}, "events": [ev("a", "x", 10), ev("a", "y", 12)]}),
    ],
)
def test_kafka_agrees_on_each_side_of_the_window_boundaries(built, version, data) -> None:
    spec = AggregateSpec.from_dict({"join": "window-aggregate", **data, "semantics": version})
    with Harness(version) as harness:
        kafka = harness.run(spec)
    assert kafka == kjoin_outputs(spec)
    semantics = spec.semantics()
    if "inactivity_gap_ms" in data["window"]:
        assert bool(kafka[1]) is semantics.session_close_includes_gap
    else:
        assert bool(kafka[0]) is semantics.sliding_window_open_at_close_time


def test_emit_final_loses_a_window_behind_the_retention_from_3_4_and_not_before(built) -> None:
    """``window_store_hides_expired`` (KAFKA-12960) in an emit-final aggregate: a jump of stream time past the
    store's retention hides a closed window from the range read, so it is never forwarded (3.4.1); 3.3.2's store
    still finds and forwards it."""
    data = FIXED["emit-final tumbling"]
    for version, forwarded in (("3.3.2", True), ("3.4.1", False)):
        spec = AggregateSpec.from_dict({**data, "semantics": version})
        with Harness(version) as harness:
            kafka = harness.run(spec)
        assert kafka == kjoin_outputs(spec), version
        assert bool(kafka[3]) is forwarded, version


def test_an_emit_final_session_at_the_retention_edge_is_kept_but_not_found_by_the_next_record(built) -> None:
    """The time-ordered session store of an emit-final aggregate keeps a session that ends exactly at observed -
    retention (it is forwarded when it closes), but its findSessions starts one millisecond later, as every 3.4+
    session store reads: so a record within the gap of it starts a session of its own (found by the oracle's 10,000
    sweep on 4.0.0; kjoin merged the two). Gap 9, no grace: a@25 makes the observed time 25, b@16 is stored, b@23
    does not see it."""
    data = {
        "join": "window-aggregate",
        "window": {"inactivity_gap_ms": 9},
        "emit": "final",
        "events": [ev("a", "x", 25), ev("b", "y", 16), ev("b", "z", 23), ev("b", "w", 35)],
    }
    for version in ("3.4.1", "4.4.0"):
        spec = AggregateSpec.from_dict({**data, "semantics": version})
        with Harness(version) as harness:
            kafka = harness.run(spec)
        assert kafka == kjoin_outputs(spec), version
        windows = [(record[0], record[1], record[3]["start_ms"], record[3]["end_ms"]) for record in kafka[3]]
        assert ("b", "1", 16, 16) in windows and ("b", "1", 23, 23) in windows, version
