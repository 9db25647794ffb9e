"""Benchmark of the reference engine alone: every join kind at 10^5 and 10^6 events, through
:func:`kjoin.run` and through ``kjoin run`` (the CLI reading a JSON file and writing JSON lines).

    python -m benchmarks.bench_reference                       # 10^5 and 10^6, every kind
    python -m benchmarks.bench_reference --sizes 100000 --kinds fk,wtable-table --no-cli
    python -m benchmarks.bench_reference --no-api                  # the CLI only (the reference engine's CLI cost)

A script, never a timed test (``make bench-reference``). Its purpose is to show that no input
path is quadratic: the time per event stays flat from 10^5 to 10^6. The workload per
kind is seeded: 10^3 keys (``--keys``), timestamps rising with a little disorder, 1 partition
(``--partitions``); a foreign-key join's left values point at one of the right keys.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import tempfile
import time
from typing import Any, Callable

__all__ = ["KINDS", "document", "main"]

WINDOW = {"before_ms": 100, "after_ms": 100, "grace_ms": 10}
KINDS: dict[str, dict[str, Any]] = {
    "stream-stream inner": {"join": "stream-stream", "variant": "inner", "window": WINDOW},
    "stream-stream outer": {"join": "stream-stream", "variant": "outer", "window": WINDOW},
    "stream-stream arrival": {
        "join": "stream-stream",
        "variant": "left",
        "window": WINDOW,
        "arrival": {"right": {"lag_ms": 50}},
    },
    "stream-table left": {"join": "stream-table", "variant": "left"},
    "stream-table versioned": {
        "join": "stream-table",
        "variant": "inner",
        "right": {"versioned": True, "history_retention_ms": 1000},
        "grace_ms": 10,
    },
    "table-table outer": {"join": "table-table", "variant": "outer"},
    "fk left": {"join": "fk", "variant": "left", "foreign_key": "fk"},
    "window-aggregate": {"join": "window-aggregate", "window": {"size_ms": 1000, "advance_ms": 500}},
    "wtable-table": {"join": "wtable-table", "window": {"size_ms": 1000}},
    "wtable-wtable outer": {"join": "wtable-wtable", "variant": "outer", "window": {"size_ms": 1000}},
}


def document(kind: str, size: int, keys: int = 1000, partitions: int = 1, seed: int = 7) -> dict[str, Any]:
    """The scenario document of ``kind`` with ``size`` events."""
    rng = random.Random(seed)
    fk = kind.startswith("fk")
    events = []
    for index in range(size):
        side = "left" if rng.random() < 0.5 else "right"
        key = f"k{rng.randrange(keys)}"
        value: Any = f"{side[0]}{index}"
        if fk and side == "left":
            value = {"fk": f"k{rng.randrange(keys)}", "v": index}
        events.append({"side": side, "key": key, "value": value, "ts": index + rng.randrange(5)})
    return {**KINDS[kind], "partitions": partitions, "events": events}


def _timed(action: Callable[[], Any]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of ``action``: the engine runs in this one thread, so its CPU time is its cost
    whatever else the machine runs (the wall clock on a shared machine is not)."""
    wall, cpu = time.perf_counter(), time.process_time()
    action()
    return time.perf_counter() - wall, time.process_time() - cpu


def _cells(timing: tuple[float, float] | None, size: int) -> str:
    if timing is None:
        return f"{'':>8} {'':>8} {'':>9}"
    wall, cpu = timing
    return f"{wall:8.1f} {cpu:8.1f} {cpu / size * 1e6:9.1f}"


def _through_api(doc: dict[str, Any]) -> None:
    import kjoin
    from kjoin.scenario import AGGREGATE_JOINS, AggregateSpec

    scenario = AggregateSpec.from_dict(doc) if doc["join"] in AGGREGATE_JOINS else kjoin.Scenario.from_dict(doc)
    trace = kjoin.run(scenario)
    assert len(trace.steps) >= len(doc["events"])


def _through_cli(doc: dict[str, Any]) -> None:
    from kjoin.cli import main as cli

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "scenario.json")
        with open(path, "w", encoding="utf-8") as file:
            json.dump(doc, file)
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli(["run", path, "--format", "jsonl"]) == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated event counts")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated kinds: " + ", ".join(KINDS))
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--no-cli", action="store_true", help="time kjoin.run only")
    parser.add_argument("--no-api", action="store_true", help="time kjoin run (the CLI) only")
    args = parser.parse_args(argv)
    if args.no_cli and args.no_api:
        parser.error("--no-cli and --no-api leave nothing to time")
    sizes = [int(s) for s in args.sizes.split(",")]
    head = f"{'wall s':>8} {'cpu s':>8} {'cpu us/ev':>9}"
    print(f"{'':<24} {'':>9} {'kjoin.run':^27} {'kjoin run (CLI)':^27}")
    print(f"{'kind':<24} {'events':>9} {head} {head}")
    for kind in args.kinds.split(","):
        for size in sizes:
            doc = document(kind, size, args.keys, args.partitions)
            api = None if args.no_api else _timed(lambda: _through_api(doc))
            cli = None if args.no_cli else _timed(lambda: _through_cli(doc))
            print(f"{kind:<24} {size:>9} {_cells(api, size)} {_cells(cli, size)}", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
