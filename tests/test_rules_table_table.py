"""KTable-KTable primary-key joins: each rule of docs/semantics.md §3.1–3.4 and §6.

Versioned tables (§3.5) are tested with the versioned-table joins. Record caches (§3.6)
are not modelled: kjoin shows every update, as Kafka does with
``cache.max.bytes.buffering=0`` (which the seeds ask for).
"""

from __future__ import annotations

import pytest

from kjoin import Fate, Reason
from tests.rules import ev, outs, run_events


def tt(variant, events, *, semantics=None, partitions=1):
    return run_events("table-table", variant, events, semantics=semantics, partitions=partitions)


@pytest.mark.parametrize("variant", ["inner", "left", "outer"])
def test_null_keys_are_dropped_by_the_source(variant):
    trace = tt(variant, [ev("L", None, "A", 1), ev("R", None, "a", 2)])
    assert [(s.fate, s.reason) for s in trace] == [(Fate.DROPPED, Reason.NULL_KEY)] * 2


@pytest.mark.parametrize(
    ("variant", "left_old", "right_old"), [("inner", False, False), ("left", True, False), ("outer", True, True)]
)
def test_which_tables_send_old_values(variant, left_old, right_old):
    """A left join makes the left table send old values, an outer join both tables."""
    trace = tt(variant, [ev("L", "k", "A", 1), ev("L", "k", "A2", 2), ev("R", "k", "a", 3), ev("R", "k", "a2", 4)])
    state = trace.state_at(-1)
    assert state.table("left")[0]["old_value"] == ("A" if left_old else None)
    assert state.table("right")[0]["old_value"] == ("a" if right_old else None)


def test_inner_join_emits_nothing_while_the_other_side_is_missing_not_even_for_deletes():
    trace = tt("inner", [ev("L", "k", "A", 1), ev("L", "k", None, 2), ev("R", "j", "x", 3)])
    assert [outs(s) for s in trace] == [[], [], []]
    assert trace[1].reason is Reason.NO_PARTNER


def test_inner_join_results_and_tombstones_carry_the_max_timestamp():
    trace = tt("inner", [ev("R", "k", "a", 9), ev("L", "k", "A", 4), ev("L", "k", None, 5)])
    assert outs(trace[1]) == [("k", "A-a", 9)]
    assert outs(trace[2]) == [("k", "null", 9)]
    assert trace[2].outputs[0].tombstone


def test_left_join_left_update_without_partner_emits_with_null_at_its_own_ts():
    trace = tt("left", [ev("L", "k", "A", 4), ev("L", "k", None, 6), ev("L", "k", None, 7)])
    assert [outs(s) for s in trace] == [[("k", "A-null", 4)], [("k", "null", 6)], []]
    assert trace[2].reason is Reason.NOTHING_TO_DELETE


def test_left_join_right_delete_emits_left_with_null_not_a_tombstone():
    trace = tt("left", [ev("L", "k", "C", 1), ev("R", "k", "c", 2), ev("R", "k", None, 3), ev("R", "j", "x", 4)])
    assert outs(trace[2]) == [("k", "C-null", 3)]
    assert not trace[2].outputs[0].tombstone
    assert trace[3].reason is Reason.NO_PARTNER


def test_outer_join_emits_while_either_side_has_a_value_then_one_tombstone():
    events = [
        ev("R", "k", "b", 1),
        ev("L", "k", "B", 2),
        ev("L", "k", None, 3),
        ev("R", "k", None, 4),
        ev("R", "k", None, 5),
    ]
    trace = tt("outer", events)
    assert [outs(s) for s in trace] == [
        [("k", "null-b", 1)],
        [("k", "B-b", 2)],
        [("k", "null-b", 3)],
        [("k", "null", 4)],
        [],
    ]


def test_keys_and_tasks_are_independent():
    events = [ev("L", "a", "A", 1, partition=0), ev("R", "a", "x", 2, partition=1), ev("R", "a", "y", 3, partition=0)]
    trace = tt("inner", events, partitions=2)
    assert [outs(s) for s in trace] == [[], [], [("a", "A-y", 3)]]


def test_before_2_3_results_carry_the_updates_timestamp():
    """KIP-258 (2.3) gave tables timestamps; before, a result carried the update's ts."""
    events = [ev("R", "k", "a", 9), ev("L", "k", "A", 4)]
    assert outs(tt("inner", events, semantics="2.2")[1]) == [("k", "A-a", 4)]
    assert outs(tt("inner", events, semantics="2.3")[1]) == [("k", "A-a", 9)]


def test_old_semantics_send_a_tombstone_for_every_update_without_a_result():
    trace = tt("inner", [ev("L", "k", "A", 1), ev("R", "j", None, 2)], semantics="0.10.0")
    assert [outs(s) for s in trace] == [[("k", "null", 1)], [("j", "null", 2)]]
