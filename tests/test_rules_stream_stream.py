"""KStream-KStream joins: each rule of docs/semantics.md §1 and §6, pinned by a focused test.

Section numbers refer to ``docs/semantics.md``. The single-store self-join optimization
(§1.9) and chained joins (§1.10) are pinned in ``test_topologies.py``.
"""

from __future__ import annotations

import pytest

from kjoin import Fate, JoinWindows, Reason
from tests.rules import ev, outs, run_events, window


def ss(variant, events, *, w=window(10, 10, 0), semantics=None, partitions=1):
    return run_events("stream-stream", variant, events, semantics=semantics, window=w, partitions=partitions)


# -- §1.1 topology: a record is joined before it is stored --------------------------------
def test_a_record_never_meets_itself_and_is_stored_after_its_lookup():
    trace = ss("inner", [ev("L", "k", "A", 5), ev("L", "k", "B", 5), ev("R", "k", "a", 5)])
    assert [outs(s) for s in trace] == [[], [], [("k", "A-a", 5), ("k", "B-a", 5)]]
    assert [row["value"] for row in trace.state_at(1).window("left")] == ["A", "B"]
    assert trace.state_at(1).window("right") == []


# -- §1.2 window bounds ------------------------------------------------------------------------
def test_left_record_matches_right_records_in_ts_minus_before_to_ts_plus_after_inclusive():
    rights = [ev("R", "k", f"r{t}", t) for t in (7, 8, 15, 16)]
    trace = ss("inner", rights + [ev("L", "k", "L", 10)], w=window(2, 5, 100))
    assert outs(trace[-1]) == [("k", "L-r8", 10), ("k", "L-r15", 15)]
    assert "[8, 15]" in trace[-1].explain


def test_right_record_matches_left_records_in_ts_minus_after_to_ts_plus_before_inclusive():
    lefts = [ev("L", "k", f"l{t}", t) for t in (4, 5, 12, 13)]
    trace = ss("inner", lefts + [ev("R", "k", "r", 10)], w=window(2, 5, 100))
    assert outs(trace[-1]) == [("k", "l5-r", 10), ("k", "l12-r", 12)]


def test_window_bounds_are_clamped_at_zero():
    trace = ss("inner", [ev("R", "k", "r0", 0), ev("L", "k", "L", 1)], w=window(5, 5, 0))
    assert outs(trace[-1]) == [("k", "L-r0", 1)]
    assert "[0, 6]" in trace[-1].explain


# -- §1.3 output ------------------------------------------------------------------------------
def test_several_matches_come_out_in_the_other_stores_ts_then_arrival_order_with_max_ts():
    events = [
        ev("R", "k", "r2", 7),
        ev("R", "k", "r1", 3),
        ev("R", "k", "r3", 7),
        ev("R", "other", "x", 5),
        ev("L", "k", "L", 5),
    ]
    trace = ss("inner", events)
    assert outs(trace[-1]) == [("k", "L-r1", 5), ("k", "L-r2", 7), ("k", "L-r3", 7)]


def test_the_right_side_calls_the_joiner_with_left_first():
    trace = ss("inner", [ev("L", "k", "L", 9), ev("R", "k", "r", 4)], w=window(10, 10, 0))
    (output,) = trace[-1].outputs
    assert (output.left, output.right, output.value, output.ts) == ("L", "r", "L-r", 9)


def test_before_2_0_a_result_carries_the_processed_records_timestamp():
    """KIP-251 (2.0) made results carry max(left ts, right ts); before, the current record's."""
    events = [ev("L", "k", "L", 9), ev("R", "k", "r", 4)]
    assert outs(ss("inner", events, semantics="1.1")[-1]) == [("k", "L-r", 4)]
    assert outs(ss("inner", events, semantics="2.0")[-1]) == [("k", "L-r", 9)]


# -- §1.4 retention ------------------------------------------------------------------------------
def test_a_fetch_hides_records_older_than_the_stores_max_ts_minus_retention():
    """Retention = before + after + grace = 200; after B@1300 the left store shows ts >= 1101."""
    events = [ev("L", "k", "A", 1000), ev("L", "k", "B", 1300), ev("R", "k", "r", 1000)]
    trace = ss("inner", events, w=window(100, 100, 0))
    assert outs(trace[-1]) == []
    assert trace[-1].fate is Fate.NO_MATCH
    assert [row["value"] for row in trace.state_at(-1).window("left")] == ["B"]


def test_a_record_too_old_for_its_own_store_still_joins_on_arrival_but_is_never_stored():
    """Kafka's testWindowing: a late record joins the other store, then is invisible in its own."""
    events = [ev("L", "k", "A", 1000), ev("R", "k", "x", 1201), ev("R", "k", "h", 900), ev("L", "k", "C", 950)]
    trace = ss("inner", events, w=window(100, 100, 0))
    assert outs(trace[2]) == [("k", "A-h", 1000)]
    assert "not stored" in trace[2].explain
    assert [row["value"] for row in trace.state_at(2).window("right")] == ["x"]
    assert outs(trace[3]) == []


def test_before_3_4_a_record_older_than_the_retention_is_found_until_its_segment_drops():
    """Retention 2, segments of 60 s. B@60001 puts A@59990 behind the retention, but segment 0 lives
    ((60001 - 2) // 60000 = 0): a@59990 finds A before 3.4, not from 3.4. C@60002 drops segment 0 whole:
    b@59990 finds nothing in either era, and D@59000 is refused (its segment is gone)."""
    events = [
        ev("L", "k", "A", 59990),
        ev("L", "k", "B", 60001),
        ev("R", "k", "a", 59990),
        ev("L", "k", "C", 60002),
        ev("R", "k", "b", 59990),
        ev("L", "k", "D", 59000),
    ]
    old = ss("inner", events, w=window(1, 1, 0), semantics="3.3")
    new = ss("inner", events, w=window(1, 1, 0), semantics="3.4")
    assert outs(old[2]) == [("k", "A-a", 59990)] and outs(new[2]) == []
    assert "its segment still lives" in old[2].explain
    assert [row["value"] for row in old.state_at(2).window("left")] == ["A", "B"]
    assert [row["value"] for row in new.state_at(2).window("left")] == ["B"]
    assert [row["value"] for row in old.state_at(3).window("left")] == ["B", "C"]
    assert outs(old[4]) == outs(new[4]) == []
    assert (old[5].fate, old[5].reason) == (Fate.NO_MATCH, Reason.EXPIRED)
    assert "segment 0" in old[5].explain and "already dropped" in old[5].explain


# -- §1.5 null keys and values -------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["inner", "left", "outer"])
def test_null_values_are_dropped_with_a_reason_and_never_stored(variant):
    trace = ss(variant, [ev("L", "k", None, 1), ev("R", "k", None, 2)])
    assert [(s.fate, s.reason) for s in trace] == [(Fate.DROPPED, Reason.NULL_VALUE)] * 2
    assert trace.state_at(-1).window("left") == trace.state_at(-1).window("right") == []


def test_null_keys_on_an_outer_side_are_joined_with_null_at_once_since_kip_962():
    w = window(10, 10, 5)
    left = ss("left", [ev("L", None, "A", 5), ev("R", None, "r", 6)], w=w, semantics="3.7")
    assert outs(left[0]) == [(None, "A-null", 5)]
    assert (left[1].fate, left[1].reason) == (Fate.DROPPED, Reason.NULL_KEY)
    outer = ss("outer", [ev("R", None, "r", 6)], w=w, semantics="3.7")
    assert outs(outer[0]) == [(None, "null-r", 6)]
    inner = ss("inner", [ev("L", None, "A", 5)], w=w, semantics="3.7")
    assert (inner[0].fate, inner[0].reason) == (Fate.DROPPED, Reason.NULL_KEY)
    assert left.state_at(-1).window("left") == [] and left.state_at(-1).outer_buffer() == []


def test_before_kip_962_null_keys_are_dropped_on_every_side():
    trace = ss("outer", [ev("L", None, "A", 5)], w=window(10, 10, 5), semantics="3.6")
    assert (trace[0].fate, trace[0].reason, trace[0].outputs) == (Fate.DROPPED, Reason.NULL_KEY, ())


# -- §1.6 stream time ----------------------------------------------------------------------------
def test_stream_time_is_one_per_task_shared_by_both_sides_and_advanced_by_dropped_records():
    events = [
        ev("L", "a", "A", 5, partition=0),
        ev("R", "b", "x", 9, partition=0),
        ev("R", "c", None, 12, partition=0),
        ev("L", "d", "D", 3, partition=1),
    ]
    trace = ss("inner", events, partitions=2)
    state = trace.state_at(-1)
    assert (state.stream_time(0), state.stream_time(1)) == (12, 3)
    assert trace.state_at(1).stream_time(0) == 9


def test_before_3_7_a_skipped_record_leaves_stream_time_alone():
    """3.1 to 3.6 check for null keys and values before advancing stream time (KIP-962 swapped them in 3.7): after
    the skipped null@16, L4@9's window [7, 9] has not passed stream time 0, so L4 waits in the buffer; from 3.7
    stream time is 16 and L4-null comes out at once."""
    events = [ev("L", "k", None, 16), ev("L", "k", "L4", 9), ev("L", "k", "L5", 40)]
    for semantics, time, late in (("3.6", None, False), ("3.7", 16, True)):
        trace = ss("left", events, w=window(2, 0, 1), semantics=semantics)
        assert trace.state_at(0).stream_time(0) == time
        assert (trace[1].fate is Fate.JOINED) == late
        assert outs(trace[1] if late else trace[2])[0] == ("k", "L4-null", 9)
    assert "stream time unchanged" in ss("left", events[:1], w=window(2, 0, 1), semantics="3.6")[0].explain


def test_one_keys_record_releases_another_keys_left_join_result_in_the_same_task_only():
    """A@0 (key a) closes at 0 + 10 + 5 = 15. Stream time 16 from a record of key b releases
    it in task 0; the same record in task 1 does not."""
    w = window(10, 10, 5)
    same = ss(
        "left",
        [ev("L", "a", "A", 0, partition=0), ev("L", "b", "X", 15, partition=0), ev("L", "b", "Y", 16, partition=0)],
        w=w,
        partitions=2,
    )
    assert [outs(s) for s in same] == [[], [], [("a", "A-null", 0)]]
    assert same[2].outputs[0].origin_step == 0
    other = ss(
        "left",
        [ev("L", "a", "A", 0, partition=0), ev("L", "b", "X", 15, partition=1), ev("L", "b", "Y", 16, partition=1)],
        w=w,
        partitions=2,
    )
    assert [outs(s) for s in other] == [[], [], []]
    assert [row["value"] for row in other.state_at(-1).outer_buffer(0)] == ["A"]


# -- §1.7 the outer-join buffer (3.1+) ------------------------------------------------------------
def test_an_unmatched_left_record_waits_until_stream_time_is_strictly_past_close_plus_grace():
    w = window(10, 10, 5)
    trace = ss("left", [ev("L", "a", "A", 0), ev("L", "b", "X", 15), ev("L", "b", "Y", 16)], w=w)
    assert (trace[0].fate, trace[0].reason, trace[0].until_ms) == (Fate.BUFFERED, Reason.WINDOW_OPEN, 15)
    assert trace.state_at(0).outer_buffer() == [
        {"ts": 0, "side": "left", "key": "a", "value": "A", "closes_at_ms": 15, "origin_step": 0}
    ]
    assert outs(trace[1]) == []
    assert outs(trace[2]) == [("a", "A-null", 0)]


def test_a_right_record_closes_at_ts_plus_before_plus_grace():
    trace = ss("outer", [ev("R", "a", "r", 0), ev("R", "b", "x", 3), ev("R", "b", "y", 4)], w=window(3, 50, 0))
    assert trace[0].until_ms == 3
    assert outs(trace[1]) == [] and outs(trace[2]) == [("a", "null-r", 0)]


def test_a_later_partner_takes_the_record_out_of_the_buffer():
    trace = ss("left", [ev("L", "k", "A", 0), ev("R", "k", "a", 4), ev("L", "z", "Z", 100)], w=window(10, 10, 0))
    assert outs(trace[1]) == [("k", "A-a", 4)]
    assert trace.state_at(1).outer_buffer() == []
    assert [o.render() for o in trace[2].outputs] == []


def test_a_record_whose_window_ended_before_stream_time_is_emitted_at_once_without_grace():
    """B@30's window ends at 30 + 10 = 40 < stream time 50: emitted at once, although
    30 + 10 + grace 20 = 60 is still ahead (the immediate check does not add grace)."""
    trace = ss("left", [ev("L", "a", "A", 50), ev("L", "b", "B", 30)], w=window(10, 10, 20))
    assert outs(trace[1]) == [("b", "B-null", 30)]
    assert trace[1].fate is Fate.JOINED


def test_expired_results_come_out_before_the_current_records_own_results():
    events = [ev("L", "k1", "A", 0), ev("L", "k2", "B", 5), ev("R", "k2", "b", 11)]
    trace = ss("left", events, w=window(10, 10, 0))
    assert outs(trace[2]) == [("k1", "A-null", 0), ("k2", "B-b", 11)]


def test_the_sweep_is_gated_by_the_processing_sides_after_and_skipped_for_out_of_order_records():
    """Window before 0, after 20. y@5 (right) closes at 5 + 0 + 0 = 5.

    * X@10 (left) moves stream time to 10, but the left side's gate asks whether
      min time 5 + after 20 < 10: no, so no sweep, although y has closed.
    * w@8 (right) is out of order (8 < stream time 10): no sweep either; its own window
      ended at 8 < 10, so it is emitted at once.
    * v@10 (right, ts == stream time): the right side's gate 5 + before 0 < 10 passes;
      y comes out before v's own result.
    """
    w = {"before_ms": 0, "after_ms": 20, "grace_ms": 0}
    events = [ev("R", "y", "y", 5), ev("L", "x", "X", 10), ev("R", "w", "w", 8), ev("R", "x", "v", 10)]
    trace = ss("outer", events, w=w)
    assert [outs(s) for s in trace] == [[], [], [("w", "null-w", 8)], [("y", "null-y", 5), ("x", "X-v", 10)]]
    assert [row["value"] for row in trace.state_at(2).outer_buffer()] == ["y", "X"]


def test_before_3_8_the_sweep_gates_by_the_look_back_and_closes_every_entry_by_the_processing_sides_after():
    """3.1.1 to 3.7 (KAFKA-13721 to KAFKA-15417): the gate is min time + the processing side's look-back (before
    for a left record) + grace, and every entry closes at ts + the processing side's after + grace, the walk stopping
    at the first open one. 3.1.0 gated with the after, as 3.8+ do."""
    gate = [ev("L", "k2", "L0", 7), ev("L", "k1", "L1", 12), ev("L", "k1", "L2", 14)]
    released_at = {
        semantics: next(
            i for i, step in enumerate(ss("left", gate, w=window(4, 2, 2), semantics=semantics)) if outs(step)
        )
        for semantics in ("3.1.0", "3.1.1", "3.7", "3.8")
    }
    assert released_at == {"3.1.0": 1, "3.1.1": 2, "3.7": 2, "3.8": 1}
    walk = [ev("R", "k2", "R0", 3), ev("L", "k1", "L0", 4), ev("R", "k3", "R1", 9)]
    old = ss("outer", walk, w=window(5, 1, 0), semantics="3.7")
    new = ss("outer", walk, w=window(5, 1, 0), semantics="3.8")
    assert outs(old[2]) == [("k2", "null-R0", 3)]
    assert outs(new[2]) == [("k2", "null-R0", 3), ("k1", "L0-null", 4)]


def test_entries_come_out_by_ts_then_right_before_left_then_key_bytes():
    """At one ts, right entries (side byte 0) before left (1); keys by serialized bytes,
    unsigned: the long 5 (00..05) before the long -1 (ff..ff), and "a" before "b"."""
    events = [
        ev("L", "b", "Lb", 10),
        ev("L", "a", "La", 10),
        ev("R", -1, "Rm", 10),
        ev("R", 5, "R5", 10),
        ev("L", "z", "Z", 40),
    ]
    trace = ss("outer", events, w=window(5, 5, 0))
    assert [o.render() for o in trace[-1].outputs] == ["null-R5", "null-Rm", "La-null", "Lb-null"]
    assert {o.ts for o in trace[-1].outputs} == {10}


def test_a_sweep_stops_once_both_sides_have_an_open_entry():
    """After X@20 and y@21 (both open at stream time 30), the later closed-looking entry is not
    reached: the sweep stops at the first entry after both sides were found open."""
    w = {"before_ms": 0, "after_ms": 20, "grace_ms": 0}
    events = [ev("L", "x", "X", 20), ev("R", "y", "y", 21), ev("R", "q", "q", 30)]
    trace = ss("outer", events, w=w)
    assert [s.until_ms for s in trace] == [40, 21, 30]
    # At q@30: X@20 (left, closes 40) is open; y@21 (right, closes 21) is closed and emitted.
    assert outs(trace[2]) == [("y", "null-y", 21)]


def test_a_left_join_never_holds_or_emits_unmatched_right_records():
    trace = ss("left", [ev("R", "k", "r", 0), ev("L", "z", "Z", 100)], w=window(10, 10, 0))
    assert (trace[0].fate, trace[0].reason) == (Fate.NO_MATCH, Reason.NO_PARTNER)
    assert trace.state_at(0).outer_buffer() == []


def test_a_right_record_can_release_expired_left_records():
    trace = ss("left", [ev("L", "a", "A", 0), ev("R", "b", "r", 50)], w=window(10, 10, 0))
    assert outs(trace[1]) == [("a", "A-null", 0)]


# -- §1.8 eager results: before 3.1, and the deprecated API ----------------------------------------
@pytest.mark.parametrize(("semantics", "grace"), [("2.8", 0), ("3.0", 5), ("3.1", None), ("latest", None)])
def test_eager_left_join_emits_null_at_once_and_the_later_match_too(semantics, grace):
    trace = ss("left", [ev("L", "k", "A", 1), ev("R", "k", "a", 2)], w=window(10, 10, grace), semantics=semantics)
    assert [outs(s) for s in trace] == [[("k", "A-null", 1)], [("k", "A-a", 2)]]
    assert trace.state_at(-1).outer_buffer() == []


def test_the_deprecated_api_keeps_a_default_grace_of_a_day_minus_the_window():
    assert JoinWindows(10, 10, None).effective_grace_ms == 24 * 3600 * 1000 - 20
    assert JoinWindows(13 * 3600 * 1000, 13 * 3600 * 1000, None).effective_grace_ms == 0
    assert JoinWindows(10, 10, None).retention_ms == 24 * 3600 * 1000


def test_since_3_1_a_window_with_grace_holds_the_unmatched_record_instead():
    trace = ss("left", [ev("L", "k", "A", 1), ev("R", "k", "a", 2)], w=window(10, 10, 0), semantics="3.1")
    assert [outs(s) for s in trace] == [[], [("k", "A-a", 2)]]


# -- §6 timestamps ---------------------------------------------------------------------------------
def test_timestamps_of_every_kind_of_stream_stream_output():
    events = [
        ev("L", "m", "M", 20),
        ev("R", "m", "m", 12),
        ev("L", "u", "U", 30),
        ev("L", None, "N", 31),
        ev("L", "z", "Z", 90),
    ]
    trace = ss("left", events, w=window(10, 10, 0), semantics="3.7")
    # matched: max(20, 12); null key: its own ts; non-joined from the buffer: the entry's own ts
    assert [(o.render(), o.ts, o.kind.value) for o in trace.outputs] == [
        ("M-m", 20, "joined"),
        ("N-null", 31, "null-key"),
        ("U-null", 30, "window-closed"),
    ]
