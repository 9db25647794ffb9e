"""Benchmark: debugging a whole app's run over its topics' dumps (``kjoin debug``, ``kjoin why``), on the planted app
of ``tests/app_planted.py`` (re-key by customer, stream-table join, GlobalKTable join, windowed count; 4 partitions).

    python -m benchmarks.bench_app_debug                      # 10^5 orders (make app-debug-check)
    python -m benchmarks.bench_app_debug --records 1000000

A script, never a timed test. It plants the topics and writes them as kcat dumps (not timed), then times, in one
process: reading the dumps and the whole run's verdicts (the reference engine's ``stages`` schedule over every
record: :class:`kjoin.spark.debug.topology_why.AppDebug`), ``summary()``, ``audit()``, writing the run with its why
index; then in a new process ``kjoin why`` of one planted order (the process's start included: what a user waits
for), and the lookups themselves: the first on the reopened run and the later ones.

The planting runs in a child process, so the ``peak_mb`` of ``--history`` (this process's peak resident memory) is
the debugging's: reading the dumps, the run, the frames, the index and the lookups.

It checks what ``tests/test_app_debug.py`` checks at 10^3: every planted cause named at its node, the summary equal
to the explained outputs, the audit equal to the misrouted records (``--no-check`` skips it). Prints a markdown table:
operation, seconds, records. ``--history`` appends one ``"kind": "app-debug"`` row per operation to
``benchmarks/history.jsonl`` (the commit measured, the machine, the load, the process's peak memory).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

__all__ = ["main", "bench_app_debug"]


def _timed(rows: list[tuple[str, float, int]], name: str, records: int, action: Any) -> Any:
    """Time ``action`` as the row ``name``, and say on stderr that it is done (a run at 10^6 orders takes minutes per
    operation: what it has measured so far, and the peak memory so far, are known before it ends)."""
    import resource

    start = time.perf_counter()
    result = action()
    rows.append((name, time.perf_counter() - start, records))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"{name}: {rows[-1][1]:.2f} s (peak so far {peak} MB)", file=sys.stderr, flush=True)
    return result


def _plant(orders: int, directory: str) -> tuple[Any, dict[str, str], int]:
    """Plant the topics and write their dumps (in a child process: the planting's memory is not the debugging's,
    and the parent's peak memory is the debugging's alone). Returns the planted causes and misrouted records (no
    events), the dumps' paths, and how many records they hold."""
    from tests.app_planted import planted, write_dumps

    topics = planted(orders)
    paths = write_dumps(topics, directory)
    records = len(topics.events)
    topics.events = []
    return topics, paths, records


def bench_app_debug(orders: int, check: bool = True, keep: str | None = None) -> list[tuple[str, float, int]]:
    from kjoin.spark.debug.topology_index import open_topology_run, write_topology_run
    from kjoin.spark.debug.topology_why import AppDebug
    from kjoin.topology.debug_cli import _placed, read_topic
    from tests.app_planted import app, check_debug

    directory = keep or tempfile.mkdtemp(prefix="kjoin-app-debug-")
    os.makedirs(directory, exist_ok=True)
    try:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as planting:
            topics, paths, records = planting.submit(_plant, orders, directory).result()
        rows: list[tuple[str, float, int]] = []
        topology = app().build()

        def run() -> AppDebug:
            # the rows read are placed, then freed before the run (nothing holds them): as kjoin debug does
            return AppDebug.of_records(
                topology, _placed(topology, {name: read_topic(name, path) for name, path in paths.items()}, None)
            )

        debug = _timed(rows, "read the dumps, run, verdicts ready", records, run)
        _timed(rows, "explained_outputs + summary()", records, debug.summary)
        _timed(rows, "audit()", records, debug.audit)
        out = os.path.join(directory, "RUN")
        _timed(rows, "write the run with its why index", records, lambda: write_topology_run(debug, out))
        key = next(key for key, cause in topics.causes.items() if cause == "misrouted-creation")
        event = next(r for r in debug.trace.events if r.topic == "orders" and r.key == key)
        asked = ["--topic", "orders", "--partition", str(event.partition), "--offset", str(event.offset)]
        script = os.path.join(os.path.dirname(sys.executable), "kjoin")
        done = _timed(
            rows,
            "kjoin why RUN (a new process, its start included)",
            records,
            lambda: subprocess.run([script, "why", out, *asked], capture_output=True, text=True, check=False),
        )
        if done.returncode != 0 or "partner-other-partition" not in done.stdout:
            raise SystemExit(f"kjoin why failed: {done.stderr or done.stdout}")
        opened = _timed(rows, "open_run (reopen the written run)", records, lambda: open_topology_run(out))
        _timed(rows, "first why on the reopened run", records, lambda: opened.why("orders", event.partition,
                                                                                   event.offset))  # fmt: skip
        later = [r for r in debug.trace.events if r.topic == "orders"][:: max(1, orders // 10)][:10]
        start = time.perf_counter()
        for record in later:
            opened.why("orders", record.partition, record.offset)
        rows.append(("later why (mean of 10)", (time.perf_counter() - start) / len(later), records))
        if check:
            failures = check_debug(topics, debug)
            if failures:
                raise SystemExit("the verdicts missed planted causes:\n" + "\n".join(failures[:20]))
            rows.append(("check: every planted cause named, summary = explained, audit exact", 0.0, records))
        return rows
    finally:
        if keep is None:
            shutil.rmtree(directory, ignore_errors=True)


def _record(rows: list[tuple[str, float, int]], args: Any, load_before: float, words: list[str]) -> None:
    """Append ``rows`` to the history (:mod:`benchmarks.history`), one ``app-debug`` row per operation."""
    import resource

    import kjoin

    from .history import append, command, commit_of, machine, new_run_id, now

    commit, dirty = commit_of(os.path.dirname(os.path.dirname(os.path.abspath(kjoin.__file__))))
    run = {
        "kind": "app-debug",
        "run": new_run_id(),
        "label": args.label,
        "command": command("python -m benchmarks.bench_app_debug", words),
        "commit": commit,
        "dirty": dirty,
        "date": now(),
        **machine(),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "orders": args.records,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }
    append([{**run, "operation": name, "seconds": round(seconds, 3), "records": records} for name, seconds, records
            in rows])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000, help="orders to plant (default 10^5)")
    parser.add_argument("--no-check", action="store_true", help="time only; do not check the verdicts")
    parser.add_argument("--keep", help="write the dumps and the run here and keep them")
    parser.add_argument("--history", action="store_true", help="append the rows to benchmarks/history.jsonl")
    parser.add_argument("--label", default=None, help="a label for the rows --history appends")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    rows = bench_app_debug(args.records, check=not args.no_check, keep=args.keep)
    if args.history:
        _record(rows, args, load_before, sys.argv[1:] if argv is None else argv)
    print("| operation | seconds | records |")
    print("|---|---:|---:|")
    for name, seconds, records in rows:
        print(f"| {name} | {seconds:.2f} | {records} |")
    print(json.dumps({"bench": "app_debug", "orders": args.records, "rows": rows}))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
