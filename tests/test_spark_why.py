"""One key's drill-down and the diagnosis of one record, against the reference engine's trace
of the whole task: random topics, every key, every record."""

from __future__ import annotations

import random

import pytest

from kjoin.fates import Fate
from kjoin.records import OutputKind, Side
from kjoin.spark import Topic, run_join
from kjoin.spark.debug import VERDICTS, KeyTrace, _restrict

pytestmark = pytest.mark.spark

WINDOW = {"before_ms": 5, "after_ms": 3, "grace_ms": 2}
JOINS = [("stream-table", "left", None), ("table-table", "outer", None), ("stream-stream", "inner", WINDOW)]


def random_rows(rng: random.Random, partitions: int, count: int, keys: str, tombstones: float) -> list[tuple]:
    offsets = [0] * partitions
    rows = []
    for _ in range(count):
        partition = rng.randrange(partitions)
        key = None if rng.random() < 0.05 else rng.choice(keys)
        value = None if rng.random() < tombstones else f"v{rng.randrange(100)}"
        rows.append((key, value, rng.randrange(60), partition, offsets[partition]))
        offsets[partition] += 1
    return rows


def topic(spark, rows, partitions):
    return Topic(spark.createDataFrame(rows, "key string, value string, ts long, partition int, offset long"), partitions)


def key_view(trace, key, steps):
    """The key's steps of ``trace`` (indexes ``steps``): record, fate, reason; and the key's
    outputs in order."""
    mine = [s for s in steps if s.record.key == key]
    records = [(s.record.side.value, s.record.offset, s.record.ts, s.record.value, s.fate.value, None if s.reason is None else s.reason.value) for s in mine]
    outputs = [(o.key, o.left, o.right, o.value, o.ts, o.tombstone, o.kind.value) for s in steps for o in s.outputs if o.key == key]
    return records, outputs


def comparable(stores):
    """Stores with a window store's arrival counter (a sequence number over all keys, internal to
    the store) replaced by the order it gives each (key, ts)."""
    out = {}
    for store, entries in stores.items():
        if store.name.endswith("window"):
            grouped = {}
            for (key, ts, seq), value in sorted(entries.items(), key=lambda item: item[0][2]):
                grouped.setdefault((key, ts), []).append(value)
            out[store] = grouped
        else:
            out[store] = entries
    return out


@pytest.mark.parametrize("join, variant, window", JOINS)
@pytest.mark.parametrize("seed", [1, 2])
def test_the_key_drill_down_equals_the_partitions_trace_restricted_to_the_key(spark, join, variant, window, seed):
    rng = random.Random(seed * 31 + len(join))
    partitions = 2
    left = random_rows(rng, partitions, 40, "abcde", 0.1)
    right = random_rows(rng, partitions, 30, "abcdef", 0.2)
    result = run_join(topic(spark, left, partitions), topic(spark, right, partitions), join, variant, window=window)
    checked = 0
    for partition in range(partitions):
        full = result.trace(partition=partition)
        keys = sorted({s.record.key for s in full.steps if s.record.key is not None})
        for key in keys:
            drill = result.trace(partition=partition, key=key)
            assert isinstance(drill, KeyTrace)
            assert key_view(drill, key, drill.steps) == key_view(full, key, full.steps), (partition, key)
            full_steps = [s.index for s in full.steps if s.record.key == key]
            own = drill.key_steps()
            assert [drill.task_steps[s.index] for s in own] == full_steps
            for s, index in zip(own, full_steps):
                assert comparable(drill.state_at(s.index).stores) == comparable(_restrict(full.state_at(index).stores, key)), (partition, key, index)
            checked += len(own)
    assert checked > 40


def test_find_locates_a_step_by_offset_or_predicate(spark):
    rows = [("a", "A", 5, 0, 0), ("b", "B", 6, 0, 1)]
    result = run_join(topic(spark, rows, 1), topic(spark, [("a", "x", 1, 0, 0)], 1), "stream-table", "left")
    trace = result.trace(partition=0)
    assert trace.find(offset=1, side="left").record.key == "b"
    assert trace.find(lambda s: s.fate is Fate.JOINED and s.outputs and s.outputs[0].right == "x").record.key == "a"
    assert trace.find(offset=9) is None
    drill = result.trace(partition=0, key="a")
    assert drill.find(offset=0, side="right").record.value == "x"
