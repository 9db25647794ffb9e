"""KStream-KTable joins: each rule of docs/semantics.md §2.1–2.3 and §6, pinned by a test.

The left input is the stream, the right input the table. Versioned tables and the grace
buffer (§2.3 versioned lookups, §2.4) are tested with the versioned-table joins.
"""

from __future__ import annotations

import pytest

from kjoin import Fate, Reason, Scenario, ScenarioError
from tests.rules import ev, outs, run_events


def st(variant, events, *, semantics=None, partitions=1):
    return run_events("stream-table", variant, events, semantics=semantics, partitions=partitions)


@pytest.mark.parametrize("variant", ["inner", "left"])
def test_table_updates_change_state_only(variant):
    trace = st(variant, [ev("L", "k", "A", 1), ev("R", "k", "a", 2), ev("R", "k", None, 3)])
    assert [(s.fate, s.reason) for s in trace[1:]] == [(Fate.STORED, Reason.TABLE_UPDATE)] * 2
    assert all(not s.outputs for s in trace[1:])
    assert trace.state_at(1).table("right") == [{"key": "k", "value": "a", "ts": 2, "old_value": None}]
    assert trace.state_at(2).table("right") == []


def test_a_stream_record_looks_up_the_latest_table_value_whatever_the_timestamps():
    """The table value written last wins, even when it is older (an unversioned table
    overwrites out-of-order updates); the result carries the stream record's ts."""
    events = [ev("R", "k", "b", 10), ev("R", "k", "c", 5), ev("R", "j", "x", 50), ev("L", "k", "A", 1)]
    trace = st("inner", events)
    assert outs(trace[-1]) == [("k", "A-c", 1)]


def test_keys_meet_only_within_their_task():
    """Records of key k in partition 1 do not see the table of partition 0."""
    events = [ev("R", "k", "a", 1, partition=0), ev("L", "k", "A", 2, partition=1), ev("L", "k", "B", 3, partition=0)]
    trace = st("left", events, partitions=2)
    assert [outs(s) for s in trace[1:]] == [[("k", "A-null", 2)], [("k", "B-a", 3)]]


def test_inner_join_emits_only_when_the_table_has_a_value():
    trace = st(
        "inner",
        [ev("L", "k", "A", 1), ev("R", "k", "a", 2), ev("L", "k", "B", 3), ev("R", "k", None, 4), ev("L", "k", "C", 5)],
    )
    assert [outs(s) for s in trace] == [[], [], [("k", "B-a", 3)], [], []]
    assert (trace[0].fate, trace[0].reason) == (Fate.NO_MATCH, Reason.NO_PARTNER)


def test_left_join_always_emits_with_null_when_nothing_is_found():
    trace = st("left", [ev("L", "k", "A", 1)])
    assert outs(trace[0]) == [("k", "A-null", 1)]


@pytest.mark.parametrize("variant", ["inner", "left"])
def test_a_null_value_stream_record_is_dropped_since_kip_77(variant):
    trace = st(variant, [ev("R", "k", "a", 1), ev("L", "k", None, 2)])
    assert (trace[1].fate, trace[1].reason, trace[1].outputs) == (Fate.DROPPED, Reason.NULL_VALUE, ())


def test_before_kip_77_a_null_value_stream_record_triggers_the_lookup():
    trace = st("left", [ev("R", "k", "a", 1), ev("L", "k", None, 2)], semantics="0.10.1")
    assert outs(trace[1]) == [("k", "null-a", 2)]


def test_null_keys_are_dropped_by_inner_joins_and_by_the_table():
    trace = st("inner", [ev("L", None, "A", 1), ev("R", None, "a", 2)], semantics="3.7")
    assert [(s.fate, s.reason) for s in trace] == [(Fate.DROPPED, Reason.NULL_KEY)] * 2


def test_a_left_join_joins_a_null_key_with_null_without_a_lookup_since_kip_962():
    events = [ev("R", None, "a", 1), ev("L", None, "A", 2)]
    assert outs(st("left", events, semantics="3.7")[1]) == [(None, "A-null", 2)]
    assert st("left", events, semantics="3.6")[1].reason is Reason.NULL_KEY


def test_the_inner_join_does_not_exist_before_0_10_2():
    with pytest.raises(ScenarioError, match="variant: the KStream-KTable inner join exists only since 0.10.2"):
        Scenario.from_dict({"join": "stream-table", "variant": "inner", "semantics": "0.10.1", "events": []})
