"""Benchmark: debugging a written run at scale, on the planted application of
``tests/test_spark_why_audit.py``.

    python -m benchmarks.bench_debug                      # 10^7 records, stream-table (make bench-debug)
    python -m benchmarks.bench_debug --records 100000 --join stream-stream

A script, never a timed test. It plants an application's topics (:func:`kjoin.spark.debug.whycheck.planted_app`:
orders and customers, or orders and payments, with misrouted records among correctly routed ones, null keys,
late and deleted partners) and writes them as Parquet files (not timed), then times, in one process:

1. ``run_join`` and ``write_parquet(out, why_index=True)``: outputs, steps, summary and the ``why`` index written;
2. ``why`` of one planted order (a customer written to another partition: ``partner-other-partition``);
3. ``summary()``, ``partitioning_audit()`` and ``explained_outputs``, each counted (a Spark action): the run keeps
   what it computed once (:meth:`kjoin.spark.SparkRun._keep`), so these read it instead of joining again;

and in a new Python process (a new Spark session, as a user reopening the run the next day; the session's start and
its first action are not timed): ``open_run(out)``, then ``why`` of the same order, which reads the written index.

Prints a markdown table: operation, seconds, records (of both topics). Only ratios taken in one run compare; the
README reports the 10^7 numbers ("Debug your own topics").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

__all__ = ["main", "bench_debug", "reopen", "COLUMNS"]

COLUMNS = ["operation", "seconds", "records"]
PARTITIONS = 4
ASKED = "partner-other-partition"
"""The planted cause of the order ``why`` is asked about."""
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = action()
    return time.perf_counter() - started, value


def plant(join: str, records: int, workdir: str, partitions: int = PARTITIONS) -> tuple[str, str, int, tuple[int, int]]:
    """The planted topics written under ``workdir``: the orders' and the other side's paths, how many records they
    hold, and the ``(partition, offset)`` of an order whose planted cause is :data:`ASKED`."""
    from kjoin.spark.debug.whycheck import app_groups, planted_app, write_topic

    planted = planted_app(app_groups(records, join, partitions), partitions, join)
    asked = min(where for where, cause in planted["causes"].items() if cause == ASKED)
    count = len(planted["left"]) + len(planted["right"])
    left = write_topic(os.path.join(workdir, "orders.parquet"), planted.pop("left"))
    right = write_topic(os.path.join(workdir, "other.parquet"), planted.pop("right"))
    return left, right, count, asked


def bench_debug(
    spark: Any,
    join: str,
    records: int,
    workdir: str,
    out: Any = sys.stderr,
    before_reopen: Callable[[], None] | None = None,
) -> list[tuple[str, float, int]]:
    """The table's rows ``(operation, seconds, records)``. ``before_reopen``: called before the new process starts
    (the command stops its own Spark session there, so that two JVMs never hold the memory of 10^7 records)."""
    from kjoin.spark import from_files, run_join
    from kjoin.spark.debug.whycheck import APP_WINDOW_MS

    print(f"[bench-debug] planting about {records:,} {join} records ...", file=out, flush=True)
    left_path, right_path, count, (partition, offset) = plant(join, records, workdir)
    window = {"before_ms": APP_WINDOW_MS, "after_ms": APP_WINDOW_MS, "grace_ms": 0} if join == "stream-stream" else None
    target = os.path.join(workdir, "run")
    rows: list[tuple[str, float, int]] = []

    def row(operation: str, seconds: float) -> None:
        rows.append((operation, seconds, count))
        print(f"[bench-debug] {operation}: {seconds:.2f} s", file=out, flush=True)

    def written() -> Any:
        result = run_join(from_files(spark, left_path), from_files(spark, right_path), join, "left", window=window)
        result.write_parquet(target, why_index=True)
        return result

    seconds, result = timed(written)
    row("run_join + write_parquet(why_index=True)", seconds)
    seconds, answer = timed(lambda: result.why(partition, offset))
    _check(answer, "why")
    row(f"why of one order ({ASKED})", seconds)
    row("summary()", timed(lambda: result.summary().count())[0])
    row("partitioning_audit()", timed(lambda: result.partitioning_audit().count())[0])
    row("explained_outputs", timed(lambda: result.explained_outputs.count())[0])
    if before_reopen is not None:
        before_reopen()
    print("[bench-debug] open_run in a new process ...", file=out, flush=True)
    command = [sys.executable, "-m", "benchmarks.bench_debug", "--reopen", target, "--ask", f"{partition},{offset}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"open_run in a new process failed:\n{done.stderr[-3000:]}")
    reopened = json.loads(done.stdout.strip().splitlines()[-1])
    if reopened["verdict"] != ASKED:
        raise RuntimeError(f"the reopened run's why says {reopened['verdict']!r}, expected {ASKED!r}")
    row("open_run (new process)", reopened["open_run"])
    row(f"why of the same order in the reopened run ({ASKED})", reopened["why"])
    return rows


def _check(answer: Any, where: str) -> None:
    if answer.verdict != ASKED:
        raise RuntimeError(f"{where}: the verdict is {answer.verdict!r}, expected the planted {ASKED!r}")


def reopen(path: str, partition: int, offset: int) -> dict[str, Any]:
    """In this (new) process: a Spark session (not timed), then ``open_run(path)`` and ``why`` timed."""
    from kjoin.spark import local_session, open_run

    spark = local_session()
    try:
        spark.range(1).count()  # the session's first action loads the JVM's classes: not open_run's cost
        open_s, run = timed(lambda: open_run(path, spark=spark))
        why_s, answer = timed(lambda: run.why(partition, offset))
        return {"open_run": open_s, "why": why_s, "verdict": answer.verdict}
    finally:
        spark.stop()


def format_table(rows: list[tuple[str, float, int]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---|---:|---:|"]
    lines += [f"| {operation} | {seconds:.2f} | {records:,} |" for operation, seconds, records in rows]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_debug",
        description="Time why, summary(), partitioning_audit(), explained_outputs and open_run on a written run of "
        "the planted application.",
    )
    parser.add_argument("--records", type=int, default=10_000_000, help="records of both topics (default 10^7)")
    parser.add_argument("--join", choices=("stream-table", "stream-stream"), default="stream-table")
    parser.add_argument("--reopen", help=argparse.SUPPRESS)  # the new process: open_run(path), then why
    parser.add_argument("--ask", help=argparse.SUPPRESS)  # with --reopen: partition,offset
    return parser


def main(argv: list[str] | None = None, spark: Any = None) -> int:
    """The command; ``spark``: a session to use (and leave running), else one of its own, stopped before the new
    process starts."""
    args = _parser().parse_args(argv)
    if args.reopen:
        partition, offset = (int(part) for part in args.ask.split(","))
        print(json.dumps(reopen(args.reopen, partition, offset)))
        return 0
    if args.records <= 0:
        _parser().error("--records: expected a positive number")
    from kjoin.spark import local_session

    own = spark is None
    spark = spark or local_session()
    load_before = os.getloadavg()
    workdir = tempfile.mkdtemp(prefix="kjoin-bench-debug-")
    try:
        rows = bench_debug(spark, args.join, args.records, workdir, before_reopen=spark.stop if own else None)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    load = ", ".join(f"{a:.1f}/{b:.1f}" for a, b in zip(load_before, os.getloadavg()))
    print(
        f"kjoin bench-debug: {args.join} left, the planted application, {PARTITIONS} Kafka partitions, "
        f"{os.cpu_count()} cores; load average (1/5/15 min) before/after: {load}\n"
    )
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
