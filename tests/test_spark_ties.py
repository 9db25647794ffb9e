"""Kafka's tie rule as arrays and as Spark columns (:mod:`kjoin.spark.ties`), against the reference engine's
:class:`kjoin.ordering.PartitionGroup` (:func:`kjoin.ordering.merge_by_timestamp`): tasks with many equal
timestamps across the two sides, out-of-order records, and runs cut anywhere (the state carried between them)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kjoin.ordering import merge_by_timestamp
from kjoin.records import Record, Side
from kjoin.spark.ties import LEFT, tie_order

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
LOGS = st.lists(st.integers(0, 4), max_size=14)


def reference(left: list[int], right: list[int]) -> list[tuple[str, int]]:
    logs = [
        [Record(side, "k", "v", ts, 0, offset) for offset, ts in enumerate(log)]
        for side, log in ((Side.LEFT, left), (Side.RIGHT, right))
    ]
    return [(r.side.value, r.offset) for r in merge_by_timestamp(*logs)]


def running(log: list[int]) -> np.ndarray:
    return np.maximum.accumulate(np.array(log, dtype=np.int64)) if log else np.zeros(0, dtype=np.int64)


def arrays(left: list[int], right: list[int], cut: int | None = None, start: int = LEFT) -> list[tuple[str, int]]:
    """The array rule's order, given whole (``cut=None``) or in two pieces cut at a running max ts."""
    lo, ro = running(left), running(right)
    lt, rt = np.array(left, dtype=np.int64), np.array(right, dtype=np.int64)
    pieces = [(0, len(left), 0, len(right))]
    if cut is not None:
        lc, rc = int(np.searchsorted(lo, cut)), int(np.searchsorted(ro, cut))
        pieces = [(0, lc, 0, rc), (lc, len(left), rc, len(right))]
    out = []
    for l0, l1, r0, r1 in pieces:
        take, start = tie_order(lo[l0:l1], lt[l0:l1], ro[r0:r1], rt[r0:r1], start)
        names = [("left", o) for o in range(l0, l1)] + [("right", o) for o in range(r0, r1)]
        out += [names[i] for i in take]
    return out


def test_a_hand_example_alternates_on_ties_and_keeps_followers_behind_their_leader():
    # left 5 then 1 (late), right 5: the left first (the start), its late 1 right after (lower than the right's
    # head), then the right's 5
    assert arrays([5, 1], [5]) == reference([5, 1], [5]) == [("left", 0), ("left", 1), ("right", 0)]
    # 2, 2, 2 against 2, 2: alternate from the left; then 3 against 3: the right's 2s ran out first, so the
    # left was taken last and the right's 3 goes first
    assert arrays([2, 2, 2, 3], [2, 2, 3]) == reference([2, 2, 2, 3], [2, 2, 3])
    assert arrays([2, 2, 2, 3], [2, 2, 3])[-2:] == [("right", 2), ("left", 3)]


@SETTINGS
@given(left=LOGS, right=LOGS)
def test_the_array_rule_is_the_partition_groups_order(left, right):
    assert arrays(left, right) == reference(left, right)


@SETTINGS
@given(left=LOGS, right=LOGS, cut=st.integers(0, 5))
def test_runs_given_in_pieces_carry_the_side_taken_last(left, right, cut):
    assert arrays(left, right, cut) == reference(left, right)
