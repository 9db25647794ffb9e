"""What the seed-000 judge draws (``kafka_oracle.oracle_check.aggregate_specs``): near scenarios (up to 16 events
within 120 ms over 1-10 ms windows) keep their share beside jumping ones, whose timelines go past a window's grace,
its store's retention (size + grace from 3.0, a day before), a segment interval and a day, with late records behind
stream time after a jump, ties, and long scenarios. No JVM: the judge itself runs in ``test_kafka_oracle.py``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from kafka_oracle.oracle_check import DAY_MS, VERSIONS, aggregate_specs, kjoin_outputs
from kjoin.scenario import AggregateSpec

DRAWS = 300
SEED = 20261129
"""One hypothesis seed, so the draws (and so these tests) are the same every run."""


def _draw(version: str) -> list[AggregateSpec]:
    (judge,) = [v for v in VERSIONS if v.version == version]
    found: list[AggregateSpec] = []

    @settings(max_examples=DRAWS, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @seed(SEED)
    @given(aggregate_specs(judge))
    def collect(spec: AggregateSpec) -> None:
        found.append(spec)

    collect()
    return found


def _stamps(spec: AggregateSpec) -> list[int]:
    return [event["ts"] for event in spec.data["events"]]


def _reach(spec: AggregateSpec) -> int:
    """How far past a window's size + grace (its retention from 3.0) the scenario's stream time jumps at once."""
    window: dict[str, Any] = spec.data.get("window", {})
    size = window.get("size_ms") or window.get("inactivity_gap_ms") or window.get("time_difference_ms") or 0
    stamps = _stamps(spec)
    jumps = [later - max(stamps[: index + 1]) for index, later in enumerate(stamps[1:])]
    return max(jumps, default=0) - size - (window.get("grace_ms") or 0)


def _late_after_a_jump(spec: AggregateSpec, distance: int) -> bool:
    """Does a record arrive more than ``distance`` ms behind stream time after stream time jumped that far?"""
    stamps = _stamps(spec)
    time = None
    jumped = False
    for ts in stamps:
        if time is not None and ts - time > distance:
            jumped = True
        elif jumped and time is not None and time - ts > distance:
            return True
        time = ts if time is None else max(time, ts)
    return False


@pytest.mark.parametrize("version", ["4.4.0", "2.8.2"])
def test_the_seed_000_judge_draws_near_and_jumping_scenarios(version: str) -> None:
    specs = _draw(version)
    assert len(specs) >= DRAWS * 0.95
    assert {spec.join for spec in specs} == {"window-aggregate", "wtable-wtable", "table-aggregate"}
    near = [s for s in specs if all(ts <= 120 for ts in _stamps(s)) and len(s.data["events"]) <= 16]
    assert len(near) >= DRAWS // 5, "the near draws keep their share"
    windowed = [s for s in specs if s.join != "table-aggregate"]
    assert sum(1 for s in windowed if _reach(s) > 0) >= 20, "stream time jumps past a window's retention"
    assert any(max(_stamps(s), default=0) - min(_stamps(s), default=0) > DAY_MS for s in windowed), "past a day"
    assert any(_late_after_a_jump(s, 60_000) for s in windowed), "late by a segment interval after a jump"
    assert any(len(set(_stamps(s))) < len(_stamps(s)) for s in windowed if len(_stamps(s)) > 16), "ties"
    lengths = [len(s.data["events"]) for s in specs]
    assert max(lengths) > 150 and sum(1 for n in lengths if n > 16) >= DRAWS // 8, "long scenarios"
    assert any((s.data["window"].get("grace_ms") or 0) >= 60_000 for s in windowed), "graces of a minute or more"


def test_the_jumping_draws_tell_a_day_of_retention_from_size_and_grace() -> None:
    """Before 3.0 a windowed count's store keeps a day (``Windows.maintainMs``), from 3.0 size + grace (KAFKA-7106):
    some drawn wtable-wtable joins give other outputs under the two rules, so the judge on 2.8.2 sees which holds.
    The near draws (everything within 120 ms) cannot."""
    told = [
        spec
        for spec in _draw("2.8.2")
        if spec.join == "wtable-wtable"
        and kjoin_outputs(spec) != kjoin_outputs(AggregateSpec.from_dict({**spec.data, "semantics": "3.0"}))
    ]
    assert told, "no drawn wtable-wtable join depends on the store's retention"
    assert all(max(_stamps(spec)) > 120 for spec in told)
