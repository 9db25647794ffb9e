"""The state after every step is cheap: changes plus checkpoints, never a replay.

A 100,000-record trace is built once; reading the state after any step must equal the
state of a run stopped right after that step (a fresh replay, the slow and obvious way).
"""

from __future__ import annotations

import random

import pytest

from kjoin import Scenario, run
from kjoin.state import DELETED

N = 100_000


def _events(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    events, ts = [], 0
    for _ in range(n):
        ts += rng.randint(0, 3)
        late = rng.random() < 0.1
        events.append(
            {
                "side": rng.choice(["left", "right"]),
                "key": f"k{rng.randint(0, 300)}",
                "value": None if rng.random() < 0.05 else f"v{rng.randint(0, 99)}",
                "ts": max(0, ts - rng.randint(0, 40)) if late else ts,
            }
        )
    return events


@pytest.fixture(scope="module")
def big():
    data = {
        "join": "stream-stream",
        "variant": "outer",
        "window": {"before_ms": 20, "after_ms": 30, "grace_ms": 10},
        "partitions": 4,
        "events": _events(N, 7),
    }
    return data, run(Scenario.from_dict(data))


def _replay_state(data: dict, step: int):
    prefix = dict(data, events=data["events"][: step + 1])
    return run(Scenario.from_dict(prefix)).state_at(step)


def test_a_100k_record_trace_keeps_one_step_per_record(big):
    _, trace = big
    assert len(trace) == N
    assert sum(len(s.outputs) for s in trace) > N // 4


@pytest.mark.parametrize("step", [0, 1, 257, 20_011])
def test_the_state_at_any_step_equals_a_fresh_replay_up_to_it(big, step):
    data, trace = big
    assert trace.state_at(step).stores == _replay_state(data, step).stores


def test_the_state_at_any_step_equals_every_change_applied_from_the_start(big):
    """The checkpoints are a shortcut: applying all changes from the empty state gives the
    same stores at every step (checked every 9,973 steps and at the last)."""
    _, trace = big
    stores = {store: dict(entries) for store, entries in trace.initial_state().stores.items()}
    checked = 0
    for step in range(len(trace)):
        for store, entry_key, row in trace._history.changes(step):
            entries = stores.setdefault(store, {})
            if row is DELETED:
                del entries[entry_key]
            else:
                entries[entry_key] = row
        if step % 9_973 == 0 or step == len(trace) - 1:
            assert trace.state_at(step).stores == stores, f"step {step}"
            checked += 1
    assert checked == 12


def test_checkpoints_bound_the_work_of_reading_any_step(big):
    """A checkpoint is taken once the changes since the last one reach max(256, live
    entries): so reading any step applies fewer changes than that (plus one step's), and
    all checkpoints together hold no more entries than the changes they summarize."""
    _, trace = big
    history = trace._history
    steps = history._checkpoint_steps
    assert len(steps) > 10
    for index in range(1, len(steps)):
        previous, following = steps[index - 1], steps[index]
        changes = sum(len(history.changes(i)) for i in range(previous + 1, following + 1))
        live = sum(len(entries) for entries in history._checkpoints[index].values())
        threshold = max(history.MIN_CHECKPOINT_GAP, live)
        assert changes >= threshold
        assert changes - len(history.changes(following)) < threshold
    total_changes = sum(len(history.changes(i)) for i in range(len(history)))
    checkpointed = sum(sum(len(e) for e in cp.values()) for cp in history._checkpoints)
    assert checkpointed <= total_changes


def test_a_log_without_changes_keeps_live_stores_and_their_size():
    """``StateLog(keep_changes=False)`` (the Spark tasks' log) counts live entries like a
    full log but records nothing to replay."""
    from kjoin.state import StateLog, StoreId

    full, lean = StateLog(), StateLog(keep_changes=False)
    store = StoreId(0, "left window")
    for log in (full, lean):
        log.put(store, "a", 1)
        log.put(store, "b", 2)
        log.put(store, "a", 3)
        log.delete(store, "b")
        log.delete(store, "missing")
    assert lean.live == full.live == {store: {"a": 3}}
    assert lean.size() == full.size() == 1
    assert lean.take_changes() == ()
    assert len(full.take_changes()) == 4
