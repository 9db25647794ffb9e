"""The versioned pass's array forms place puts by the versioned store's one rule
(:func:`kjoin.stores.versioned.place_version`): its table over every case, and the bookkeeping of a batch placed in
rounds (every key's first put, then its second...) against the same puts placed one by one. Outside Spark, fast."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kjoin.spark.passes import versioned_common as vv
from kjoin.stores.versioned import place_version


def _random_tail(rng: random.Random) -> tuple:
    """A key's bookkeeping as the array forms keep it: no version, or (last ts, is it a tombstone, end)."""
    if rng.random() < 0.2:
        return vv._NO_TAIL
    last = rng.randint(0, 6)
    return (last, rng.random() < 0.4, rng.choice([None, None, rng.randint(0, last)]))


@pytest.mark.parametrize("no_trace", [False, True])
def test_the_placement_table_is_the_rule_on_every_case(no_trace):
    placements, sources = vv._PLACEMENT_TABLES[no_trace]
    rng = random.Random(3)
    seen = set()
    for _ in range(5000):
        last, last_null, end = _random_tail(rng)
        if rng.random() < 0.2:  # an end after the last version: not in the array forms' model, still the rule's
            end = rng.randint(0, 9)
        ts, null = rng.randint(0, 9), rng.random() < 0.3
        case = int(
            vv._placement_cases(
                np.array([ts]), np.array([vv._NONE if last is None else last]), np.array([last is not None]),
                np.array([last_null]), np.array([vv._NONE if end is None else end]), np.array([end is not None]),
                np.array([null]),
            )[0]
        )  # fmt: skip
        seen.add(case)
        want_placement, want_end = place_version(last, last_null, end, ts, null, no_trace)
        source = int(sources[case])
        got_end = [None, ts, end, last][source]
        assert vv._PLACEMENTS[placements[case]] is want_placement, (last, last_null, end, ts, null)
        assert got_end == want_end, (last, last_null, end, ts, null)
    assert len(seen) > 40


def _placed(tails: list, codes, ts, null, no_trace: bool, limit: int, monkeypatch, in_order: bool = True) -> tuple:
    """The bookkeeping after placing the puts (``limit`` 0 and ``in_order`` off: every put one by one, by the rule)."""
    monkeypatch.setattr(vv, "ROUND_LIMIT", limit)
    monkeypatch.setattr(vv, "IN_ORDER_KEYS", in_order)
    book = vv._Bookkeeping.of(tails)
    found = vv._place_rounds(book, codes, np.arange(len(codes)) * 2 + 1, ts, null, no_trace)
    return found, list(book.tails())


def _rounds_against_one_by_one(seed: int, monkeypatch, in_order_share: float = 0.0) -> int:
    """Rounds (every key's first put, then its second...), with and without the in-order keys placed at once,
    against the rule called put by put on a random batch: the same bookkeeping, or the same first put deleting its
    key's latest value; returns how many of the two eras' placements met such a put. ``in_order_share``: that share
    of the keys get their puts in rising ts after their last version and end (the in-order keys)."""
    rng = random.Random(seed)
    keys = rng.choice([1, 3, 20])
    tails = [_random_tail(rng) for _ in range(keys)]
    n = rng.randint(1, 200)
    codes = np.array([rng.randrange(keys) for _ in range(n)], dtype=np.int64)
    ts = np.array([rng.randint(0, 12) for _ in range(n)], dtype=np.int64)
    for key in range(keys):
        if rng.random() < in_order_share:
            puts = np.flatnonzero(codes == key)
            ts[puts] = 7 + np.cumsum([rng.randint(0 if i else 1, 3) for i in range(len(puts))])
    null = np.array([rng.random() < 0.25 for _ in range(n)], dtype=bool)
    deleting = 0
    for no_trace in (False, True):
        want_found, want_book = _placed(tails, codes, ts, null, no_trace, 0, monkeypatch, in_order=False)
        for in_order in (False, True):
            found, book = _placed(tails, codes, ts, null, no_trace, vv.ROUND_LIMIT, monkeypatch, in_order)
            assert found == want_found, (seed, no_trace, in_order)
            if found is None:
                assert book == want_book, (seed, no_trace, in_order)
        deleting += want_found is not None
    return deleting


def test_puts_placed_in_rounds_keep_the_bookkeeping_placed_one_by_one(monkeypatch):
    """Both outcomes are met: batches with a tombstone deleting its key's latest value, and batches without."""
    deleting = [_rounds_against_one_by_one(seed, monkeypatch) for seed in range(40)]
    assert 0 < sum(deleting) < 80, deleting


def test_keys_whose_puts_come_in_order_are_placed_at_once_as_put_by_put(monkeypatch):
    """Most keys' puts in rising ts after everything the key has (some with equal ts, which is not in order: the
    rounds take those keys), the rest at random: the bookkeeping the rule leaves put by put."""
    deleting = [_rounds_against_one_by_one(seed, monkeypatch, in_order_share=0.8) for seed in range(40)]
    assert sum(deleting) < 80, deleting


def test_a_hot_key_is_placed_one_by_one(monkeypatch):
    """More puts of one key than :data:`ROUND_LIMIT` in a batch: placed one by one, the same bookkeeping as in rounds
    (the tombstone at 3 ends the segments there; the value at 5 after it is the latest and leaves them so)."""
    ts = np.array([1, 2, 3, 2, 5], dtype=np.int64)
    null = np.array([False, False, True, False, False])
    codes = np.zeros(5, dtype=np.int64)
    results = [_placed([vv._NO_TAIL], codes, ts, null, True, limit, monkeypatch) for limit in (2, vv.ROUND_LIMIT)]
    assert results == [(None, [(5, False, 3)])] * 2


def _placed_through(tails: list, codes, ts, null, no_trace: bool, limit: int, monkeypatch, in_order: bool) -> tuple:
    """The bookkeeping after placing every put, the deleting ones deleting (``deletions`` given), and the deletions."""
    monkeypatch.setattr(vv, "ROUND_LIMIT", limit)
    monkeypatch.setattr(vv, "IN_ORDER_KEYS", in_order)
    book = vv._Bookkeeping.of(tails)
    deletions: list = []
    found = vv._place_rounds(book, codes, np.arange(len(codes)) * 2 + 1, ts, null, no_trace, deletions)
    return found, sorted(deletions), list(book.tails())


def test_puts_placed_through_their_deletions_in_rounds_as_one_by_one(monkeypatch):
    """With a deletions list, every put is placed, a tombstone deleting its key's latest value leaving the key as the
    loop's store does: rounds (with and without the in-order keys at once) give the bookkeeping and the deletions
    (batch index, key, where its segments end) that the rule put by put gives, and the first deletion is the one
    placing without the list reports; batches with several deletions are met."""
    several = 0
    for seed in range(60):
        rng = random.Random(seed)
        keys = rng.choice([1, 3, 20])
        tails = [_random_tail(rng) for _ in range(keys)]
        n = rng.randint(1, 200)
        codes = np.array([rng.randrange(keys) for _ in range(n)], dtype=np.int64)
        ts = np.array([rng.randint(0, 12) for _ in range(n)], dtype=np.int64)
        null = np.array([rng.random() < 0.25 for _ in range(n)], dtype=bool)
        for no_trace in (False, True):
            want = _placed_through(tails, codes, ts, null, no_trace, 0, monkeypatch, in_order=False)
            first, _ = _placed(tails, codes, ts, null, no_trace, 0, monkeypatch, in_order=False)
            assert want[0] == first == (want[1][0][0] if want[1] else None), (seed, no_trace)
            several += len(want[1]) > 1
            for in_order in (False, True):
                got = _placed_through(tails, codes, ts, null, no_trace, vv.ROUND_LIMIT, monkeypatch, in_order)
                assert got == want, (seed, no_trace, in_order)
    assert several > 0
