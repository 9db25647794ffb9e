"""The versioned pass's array forms place puts by the versioned store's one rule
(:func:`kjoin.stores.versioned.place_version`): its table over every case, and the bookkeeping of a batch placed in
rounds (every key's first put, then its second...) against the same puts placed one by one. Outside Spark, fast."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from kjoin.spark.passes import vectorised_versioned as vv
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


@pytest.mark.parametrize("seed", range(6))
def test_puts_placed_in_rounds_keep_the_bookkeeping_placed_one_by_one(seed):
    rng = random.Random(seed)
    keys = [f"k{i}" for i in range(rng.choice([1, 3, 20]))]
    tails = {key: _random_tail(rng) for key in keys if rng.random() < 0.7}
    tails = {key: tail for key, tail in tails.items() if tail is not vv._NO_TAIL}
    n = rng.randint(1, 200)
    batch_keys = [rng.choice(keys) for _ in range(n)]
    ts = np.array([rng.randint(0, 12) for _ in range(n)], dtype=np.int64)
    null = np.array([rng.random() < 0.25 for _ in range(n)], dtype=bool)
    accepted = np.array(sorted(rng.sample(range(n), rng.randint(1, n))), dtype=np.int64)
    column = pa.array(batch_keys)
    for no_trace in (False, True):
        in_rounds: dict = {}
        found = vv._place_side(column, accepted, ts, null, tails, no_trace, in_rounds)
        one_by_one: dict = {}
        names = [batch_keys[i] for i in accepted]
        distinct = list(dict.fromkeys(names))
        codes = np.array([distinct.index(name) for name in names], dtype=np.int64)
        want = vv._place_one_by_one(
            distinct, codes, accepted, ts[accepted], null[accepted], tails, no_trace, one_by_one
        )
        assert found == want
        if found is None:
            assert {**tails, **in_rounds} == {**tails, **one_by_one}


def test_a_hot_key_is_placed_one_by_one(monkeypatch):
    """More puts of one key than :data:`ROUND_LIMIT` in a batch: placed one by one, the same bookkeeping as in rounds
    (the tombstone at 3 ends the segments there; the value at 5 after it is the latest and leaves them so)."""
    ts = np.array([1, 2, 3, 2, 5], dtype=np.int64)
    null = np.array([False, False, True, False, False])
    results = []
    for limit in (2, vv.ROUND_LIMIT):
        monkeypatch.setattr(vv, "ROUND_LIMIT", limit)
        changes: dict = {}
        assert vv._place_side(pa.array(["a"] * 5), np.arange(5), ts, null, {}, True, changes) is None
        results.append(changes)
    assert results == [{"a": (5, False, 3)}] * 2
