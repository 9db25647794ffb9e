"""Small builders for the rule tests: scenarios in a line, outputs as comparable tuples."""

from __future__ import annotations

from typing import Any

from kjoin import Scenario, Trace, run


def ev(side: str, key: Any, value: Any, ts: int, partition: int | None = None) -> dict:
    """One event; ``L``/``R`` are accepted for the side."""
    side = {"L": "left", "R": "right"}.get(side, side)
    event = {"side": side, "key": key, "value": value, "ts": ts}
    if partition is not None:
        event["partition"] = partition
    return event


def run_events(
    join: str,
    variant: str,
    events: list[dict],
    *,
    semantics: str | None = None,
    window: dict | None = None,
    partitions: int = 1,
) -> Trace:
    data = {"join": join, "variant": variant, "semantics": semantics, "partitions": partitions, "events": events}
    if window is not None:
        data["window"] = window
    return run(Scenario.from_dict(data))


def outs(step) -> list[tuple[Any, str, int]]:
    """A step's outputs as ``(key, rendered value, ts)``."""
    return [(o.key, o.render(), o.ts) for o in step.outputs]


def window(before: int, after: int, grace: int | None) -> dict:
    return {"before_ms": before, "after_ms": after, "grace_ms": grace}
