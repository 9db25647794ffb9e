"""Helpers for the Spark differential tests: scenario strategies, and both engines' results
as comparable rows, per (scenario, partition), in emission order."""

from __future__ import annotations

import json
from typing import Any, Iterable

from kjoin import Fate, Scenario, run
from kjoin.scenario import VARIANTS
from tests.strategies import EVERY_ERA


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"))


def reference_rows(scenario_id: int, scenario: Scenario) -> tuple[list[tuple], list[tuple]]:
    """The reference engine's outputs and non-joined steps, in the Spark frames' columns."""
    outputs, steps = [], []
    for step in run(scenario).steps:
        r = step.record
        for o in step.outputs:
            outputs.append((scenario_id, r.partition, step.index, r.side.value, r.offset, _json(o.key), _json(o.left), _json(o.right), o.value, o.ts, o.tombstone, o.kind.value, o.origin_step))
        if step.fate is not Fate.JOINED:
            steps.append((scenario_id, r.partition, step.index, r.side.value, r.offset, _json(r.key), r.ts, step.fate.value, None if step.reason is None else step.reason.value, step.until_ms))
    return outputs, steps


def by_task(rows: Iterable[tuple]) -> dict[tuple[int, int], list[tuple]]:
    """Rows grouped by (scenario, partition), keeping their order."""
    grouped: dict[tuple[int, int], list[tuple]] = {}
    for row in rows:
        grouped.setdefault((row[0], row[1]), []).append(tuple(row))
    return grouped


def spark_rows(frame: Any) -> list[tuple]:
    """Collect a small result frame in its emission order (no sort: order is what is tested)."""
    return [tuple(None if (isinstance(c, float) and c != c) else c for c in row) for row in frame.collect()]


def assert_same(scenarios: list[Scenario], spark_outputs: list[tuple], spark_steps: list[tuple]) -> None:
    expected_outputs, expected_steps = [], []
    for scenario_id, scenario in enumerate(scenarios):
        outputs, steps = reference_rows(scenario_id, scenario)
        expected_outputs += outputs
        expected_steps += steps
    got_o, want_o = by_task(spark_outputs), by_task(expected_outputs)
    got_s, want_s = by_task(spark_steps), by_task(expected_steps)
    for task in sorted(set(got_o) | set(want_o)):
        assert got_o.get(task, []) == want_o.get(task, []), f"outputs differ for (scenario, partition) {task}: {scenarios[task[0]].to_dict()}"
    for task in sorted(set(got_s) | set(want_s)):
        assert got_s.get(task, []) == want_s.get(task, []), f"steps differ for (scenario, partition) {task}: {scenarios[task[0]].to_dict()}"


def random_batch(seed: int, join: str, size: int, max_events: int = 30) -> list[Scenario]:
    """``size`` random scenarios of ``join`` from one seed (hypothesis draws the seed: a
    whole batch is too large for one hypothesis example's buffer)."""
    import random

    rng = random.Random(seed)
    keys = ["k1", "k2", "k3", "k4", "k5", 7, None]
    batch = []
    for _ in range(size):
        era = rng.choice(EVERY_ERA)
        variants = [v for v in VARIANTS[join] if not (join == "stream-table" and v == "inner" and era == "0.10.0")]
        events_ = []
        for _ in range(rng.randint(0, max_events)):
            side = rng.choice(["left", "right"])
            value = None if rng.random() < 0.2 else f"{side[0].upper()}{rng.randint(0, 9)}"
            events_.append({"side": side, "key": rng.choice(keys), "value": value, "ts": rng.randint(0, 80)})
        data: dict[str, Any] = {"join": join, "variant": rng.choice(variants), "semantics": era, "partitions": rng.randint(1, 3), "events": events_}
        if join == "stream-stream":
            data["window"] = {"before_ms": rng.randint(0, 12), "after_ms": rng.randint(0, 12), "grace_ms": None if rng.random() < 0.25 else rng.randint(0, 10)}
        batch.append(Scenario.from_dict(data))
    return batch
