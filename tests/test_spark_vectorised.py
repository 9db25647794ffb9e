"""The array pieces of the vectorised stream-table and table-table pass (:mod:`kjoin.spark.passes.vectorised`), against
plain Python models of what they promise. The pass as a whole is checked against the reference engine by the
differential suite (``tests/test_spark_differential.py``, batches of 7 records, so the carried tables matter)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from kjoin.spark.passes.vectorised import _Tables, joiner_text, keep_where, key_groups, stable_order


@pytest.mark.parametrize("offset", [0, 70_000, 2**40], ids=["radix (16-bit)", "packed int64", "lexsort"])
def test_key_groups_is_the_stable_sort_by_code_in_each_of_its_three_ways(offset):
    rng = np.random.default_rng(offset)
    for size in (1, 2, 5, 100, 1000):
        for _ in range(50):
            codes = rng.integers(-1, max(1, size // 3), size)
            codes = np.where(codes >= 0, codes + offset, -1)  # -1 (a null key) stays
            order, first, group_start = key_groups(codes)
            expected = sorted(range(size), key=lambda i: (codes[i], i))
            assert order.tolist() == expected
            sorted_codes = codes[order]
            assert first.tolist() == [i == 0 or sorted_codes[i] != sorted_codes[i - 1] for i in range(size)]
            starts = [max(j for j in range(i + 1) if first[j]) for i in range(size)]
            assert group_start.tolist() == starts


@pytest.mark.parametrize("offset", [0, 2**40, 2**62], ids=["packed", "packed far from 0", "lexsort (no fit)"])
def test_stable_order_is_lexsort(offset):
    rng = np.random.default_rng(offset % 1000)
    for size in (1, 3, 50, 500):
        for count in (1, 2, 3):
            for _ in range(30):
                keys = [rng.integers(-5, 20, size) + (offset if k == 0 else 0) for k in range(count)]
                assert stable_order(*keys).tolist() == np.lexsort(keys).tolist()


def test_the_carried_tables_give_each_key_its_latest_value_across_batches():
    """Batches of random puts and tombstones on both sides: the state each record sees (the key's last update before
    it, from the batch or carried from earlier batches) is a dict model's, and the table holds each key once."""
    rng = np.random.default_rng(5)
    tables = _Tables()
    model: list[dict] = [{}, {}]
    for batch in range(40):
        n = int(rng.integers(1, 30))
        keys = [None if rng.random() < 0.05 else f"k{rng.integers(0, 12)}" for _ in range(n)]
        values = [None if rng.random() < 0.2 else f"v{batch}.{i}" for i in range(n)]
        sides = rng.integers(0, 2, n)
        ts = pa.array(rng.integers(0, 1000, n), pa.int64())
        key, value = pa.array(keys, pa.string()), pa.array(values, pa.string())
        ids = tables.ids(key)
        assert [i < 0 for i in ids] == [k is None for k in keys]
        order, _, group_start = key_groups(ids)
        has_key = ids >= 0
        for side in (0, 1):
            updates = has_key & (sides == side)
            # the last update of the record's key earlier in the batch (the pass's forward fill)
            last = np.full(n, -1, dtype=np.int64)
            for i in range(n):
                earlier = [j for j in range(i) if updates[j] and keys[j] == keys[i]]
                last[i] = earlier[-1] if earlier else -1
            found, found_ts = tables.state(side, value, ts, ids, last, has_key)
            expected, expected_ts = [], []
            seen = dict(model[side])
            for i in range(n):
                entry = seen.get(keys[i]) if keys[i] is not None else None
                expected.append(entry[0] if entry else None)
                expected_ts.append(entry[1] if entry and entry[0] is not None else None)
                if updates[i]:
                    seen[keys[i]] = (values[i], ts[i].as_py())
            assert found.to_pylist() == expected
            # the ts is the update's, kept for a tombstone too: compare where a value was found
            assert [t if v is not None else None for t, v in zip(found_ts.to_pylist(), expected)] == expected_ts
            tables.update(side, ids, value, ts, updates)
            model[side] = seen
    assert len(tables.keys) == len(set(tables.keys.to_pylist())) <= 12
    for side in (0, 1):
        latest = dict(zip(tables.keys.to_pylist(), tables.values[side].to_pylist()))
        assert {k: v for k, v in latest.items() if v is not None} == {
            k: v for k, (v, _) in model[side].items() if v is not None
        }


@pytest.mark.parametrize(
    "array",
    [
        pa.array(["a", None, "ccc", "", "dd", None, "e", "f", "g"]),
        pa.array([1, 2, None, 4, 5, 6, 7, 8, 9], pa.int64()),
        pa.array(["x", "y", "z", "w", "v", "u", "t", "s", "r", "q"]).slice(1),  # an offset: the if_else way
        pa.array([True, None, False, True, False, True, True, False, None]),  # bits: the if_else way
    ],
    ids=["strings", "longs", "sliced", "booleans"],
)
def test_keep_where_nulls_exactly_the_rows_not_kept(array):
    rng = np.random.default_rng(len(array))
    for _ in range(20):
        keep = rng.random(len(array)) < 0.6
        kept = keep_where(array, keep)
        assert kept.type == array.type and kept.validate(full=True) is None
        assert kept.to_pylist() == [v if k else None for v, k in zip(array.to_pylist(), keep)]
        assert kept.null_count == sum(1 for v, k in zip(array.to_pylist(), keep) if v is None or not k)


def test_joiner_text_renders_nulls_as_null_and_decodes_json_strings():
    left = pa.array(["a", None, "b", None])
    right = pa.array(["x", "y", None, None])
    assert joiner_text(left, right, False).to_pylist() == ["a-x", "null-y", "b-null", "null-null"]
    longs = pa.array([1, None], pa.int64())
    assert joiner_text(longs, pa.array([None, 7], pa.int64()), False).to_pylist() == ["1-null", "null-7"]
    json_left = pa.array(['"name"', "3", None])
    json_right = pa.array(['{"a":1}', '"b"', '"c"'])
    assert joiner_text(json_left, json_right, True).to_pylist() == ['name-{"a":1}', "3-b", "null-c"]
