"""How long the stepper takes to move to a step of a long trace.

``python -m kjoin_viz.bench [records]`` runs a stream-stream left join over ``records``
(default 100,000) records on 50 keys, then times :func:`kjoin_viz.stepper.seek` for a spread
of steps and prints the median and the worst. The budget is 50 ms per step; no test times
this (timings depend on the machine), the benchmark reports it.
"""

from __future__ import annotations

import random
import statistics
import sys
import time

import kjoin

from .step_view import StepView
from .stepper import time_seeks

__all__ = ["long_scenario", "measure", "BUDGET_MS"]

BUDGET_MS = 50.0


def long_scenario(records: int = 100_000, keys: int = 50, seed: int = 5) -> kjoin.Scenario:
    """A left join of ``records`` records, some late and some with null values."""
    rng = random.Random(seed)
    events = []
    for i in range(records):
        ts = i * 2 - (rng.randrange(40) if rng.random() < 0.05 else 0)
        value = None if rng.random() < 0.03 else f"v{i}"
        events.append(
            {
                "side": "left" if rng.random() < 0.5 else "right",
                "key": f"k{rng.randrange(keys)}",
                "value": value,
                "ts": max(ts, 0),
            }
        )
    return kjoin.Scenario.from_records(
        "stream-stream", "left", events, semantics="3.1", window={"before_ms": 100, "after_ms": 100, "grace_ms": 20}
    )


def measure(records: int = 100_000, samples: int = 200) -> dict[str, float]:
    """Run the long scenario and time moving to ``samples`` steps spread over it (in ms)."""
    start = time.perf_counter()
    trace = kjoin.run(long_scenario(records))
    run_s = time.perf_counter() - start
    start = time.perf_counter()
    view = StepView(trace)
    index_s = time.perf_counter() - start
    rng = random.Random(1)
    steps = [rng.randrange(len(trace.steps)) for _ in range(samples)] + [0, len(trace.steps) - 1]
    timings = [t * 1000 for t in time_seeks(view, steps)]
    return {
        "records": records,
        "run_s": run_s,
        "index_s": index_s,
        "median_ms": statistics.median(timings),
        "max_ms": max(timings),
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    result = measure(int(args[0]) if args else 100_000)
    print(
        f"{result['records']} records: engine {result['run_s']:.1f} s, stepper index {result['index_s']:.2f} s; "
        f"move to a step: median {result['median_ms']:.1f} ms, worst {result['max_ms']:.1f} ms "
        f"(budget {BUDGET_MS:.0f} ms)"
    )
    return 0 if result["max_ms"] < BUDGET_MS else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
