"""The topology judges' memory: both generators run on chosen Kafka versions, one history row per run, summed toward
a goal per version.

``kafka_oracle/judging-history.jsonl`` (:data:`HISTORY`) holds one JSON object per line, appended, never rewritten:
one run (``"kind": "topology-run"``) of one generator (``oracle``: ``kafka_oracle/topology_oracle.py``'s shapes;
``walk``: ``kafka_oracle/topology_walk.py``'s random walk) on one Kafka version: the commit judged (``dirty`` when its
tracked files, beyond this history and its page, differed from it), the UTC date, the generator, the version, the
seed, how many topologies were judged, how many mismatched, the seconds the run took and the machine's load average
(1 minute) at its end (the machine is shared: seconds measured under load are not comparable), and the first
difference of each mismatch (``differences``). The commit is read when the sweep starts: the code it loaded.

A run's topologies are those its generator draws from its seed, ``seed`` for the shapes and ``"{seed}-{version}"``
for the walk: a run takes the next seed after the highest one the history records for its generator and version, so
the sessions of a long sweep add new topologies rather than judging the same ones again.

``python -m kafka_oracle.topology_sweep --toward 10000 --versions 4.4.0,3.3.2`` (``make topology-sweep``) judges,
round by round, a chunk of each generator on each version until each has 10,000 topologies in the history, or until
``--until HH:MM`` (UTC); ``--more N`` (``make topology-check``) judges N new topologies of each instead. Each run's
row is appended as soon as it ends, and ``docs/judging.md`` (:data:`PAGE`) is made again from the history
(``--page`` alone makes it). Every mismatch is shrunk (``kafka_oracle.topology_walk.shrink``; three of each class a
change of keys, values or joiners names for the walk, as ``--sample-classes`` does there) and written under
``topology-walk-mismatches/``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from benchmarks.history import append, commit_of, read
from kafka_oracle.oracle_check import HarnessError, KafkaVersion, build
from kafka_oracle.topology_oracle import JUDGES

__all__ = ["HISTORY", "PAGE", "GENERATORS", "Run", "next_seed", "judged", "plan", "page", "main"]

ROOT = Path(__file__).resolve().parents[1]
HISTORY = ROOT / "kafka_oracle" / "judging-history.jsonl"
"""The history of this repository's topology judging."""

PAGE = ROOT / "docs" / "judging.md"
"""The page made from :data:`HISTORY`."""

OUT = ROOT / "topology-walk-mismatches"
"""Where shrunk mismatches are written (YAML, Kafka's outputs beside kjoin's)."""

GOAL = 10_000
"""Topologies per generator and version the page counts toward."""

ROW_FIELDS = ("kind", "commit", "dirty", "date", "generator", "version", "seed", "topologies", "mismatches",
              "seconds", "load", "differences")  # fmt: skip
"""A row's fields, in the order written."""

Run = tuple[int, int, float, list[str]]
"""What one run of a generator gives: topologies judged, mismatches, seconds, the first difference of each mismatch."""


def _judge_shapes(version: KafkaVersion, count: int, seed: int) -> Run:
    """``count`` topologies of ``kafka_oracle/topology_oracle.py``'s shapes from ``seed``; each mismatch shrunk."""
    from kafka_oracle.topology_oracle import check, document
    from kafka_oracle.topology_walk import Verdict, _report, _signature, shrink

    started = time.monotonic()
    batch, mismatches = check(version.version, count, seed)
    seconds = time.monotonic() - started
    for number, (scenario, text) in enumerate(mismatches, 1):
        whole = {key: value for key, value in document(scenario).items() if key != "outputs"}
        kind = "describe" if text.startswith("Topology.describe()") else "outputs"
        small, verdict = shrink(version.version, whole, _signature(Verdict(kind, text)), seconds=120.0)
        path = _report(OUT, version.version, number, small, verdict, f"shapes-seed-{seed}")
        path.rename(path.with_name(f"kafka-{version.version}-shapes-{seed}-{number}.yaml"))
        print(f"  {text}\n    {json.dumps(small, ensure_ascii=False, default=str)}", file=sys.stderr, flush=True)
    return len(batch), len(mismatches), seconds, [text for _, text in mismatches]


def _judge_walks(version: KafkaVersion, count: int, seed: int) -> Run:
    """``count`` walks of ``kafka_oracle/topology_walk.py`` from ``seed``; three mismatches of each named class
    shrunk, and every other."""
    from kafka_oracle.topology_walk import sweep

    texts: list[str] = []
    drawn, found, seconds = sweep(version, count, seed, OUT, shrink_all=False, differences=texts)
    return drawn, found, seconds, texts


GENERATORS: dict[str, Callable[[KafkaVersion, int, int], Run]] = {"oracle": _judge_shapes, "walk": _judge_walks}
"""The generators by the name a row gives them."""


def next_seed(rows: Iterable[dict[str, Any]], generator: str, version: str) -> int:
    """The seed of the next run of ``generator`` on ``version``: one past the highest recorded (1 at first)."""
    return 1 + max((row["seed"] for row in rows if (row["generator"], row["version"]) == (generator, version)),
                   default=0)  # fmt: skip


def judged(rows: Iterable[dict[str, Any]], generator: str, version: str) -> int:
    """Topologies of ``generator`` judged on ``version`` so far."""
    return sum(row["topologies"] for row in rows if (row["generator"], row["version"]) == (generator, version))


def plan(
    rows: list[dict[str, Any]], versions: list[str], generators: list[str], chunk: int, toward: int | None, more: int
) -> list[tuple[str, str, int]]:
    """The next round's runs, ``(generator, version, count)``: with ``toward``, a chunk of each pair still short of
    it (at most what is missing), the pairs with the fewest topologies judged first (a sweep cut short by its
    deadline leaves the coverage even, and the next session starts where it is thinnest); else ``more`` of each
    pair, in the order given."""
    runs = []
    for version in versions:
        for generator in generators:
            missing = more if toward is None else toward - judged(rows, generator, version)
            if missing > 0:
                runs.append((generator, version, min(chunk, missing)))
    if toward is not None:
        runs.sort(key=lambda run: judged(rows, run[0], run[1]))  # stable: ties keep the order given
    return runs


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


@functools.cache
def _judged_commit() -> tuple[str | None, bool]:
    """The commit this process runs (read once, when its first row is written: the code it loaded then, not edits
    made to the work tree while it runs), and whether its tracked files differed from it."""
    return commit_of(ROOT, elsewhere=(_relative(HISTORY), _relative(PAGE)))


def _row(generator: str, version: str, seed: int, run: Run) -> dict[str, Any]:
    commit, dirty = _judged_commit()
    topologies, mismatches, seconds, differences = run
    values = {
        "kind": "topology-run", "commit": commit, "dirty": dirty, "date": _now(), "generator": generator,
        "version": version, "seed": seed,
        "topologies": topologies, "mismatches": mismatches, "seconds": round(seconds, 1),
        "load": round(os.getloadavg()[0], 1), "differences": [text[:500] for text in differences],
    }  # fmt: skip
    return {name: values[name] for name in ROW_FIELDS}


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# -- the page ------------------------------------------------------------------------------------------------------
def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def page(rows: list[dict[str, Any]], goal: int = GOAL) -> str:
    """The page's Markdown from the history's rows: per version and generator, topologies (toward ``goal``),
    mismatches, seconds, runs, seeds and dates; then every run that mismatched, with its first differences."""
    out = [
        "# Topology judging",
        "",
        "Generated by `python -m kafka_oracle.topology_sweep --page` from `kafka_oracle/judging-history.jsonl`; do "
        "not edit by hand. Two generators written apart judge kjoin's topologies against the real Kafka Streams "
        "library (TopologyTestDriver, one JVM per version): `kafka_oracle/topology_oracle.py` draws from fixed shapes"
        " (two or three joins, re-keys, foreign-key joins, aggregates, 1-4 partitions) and "
        "`kafka_oracle/topology_walk.py` takes a random walk over the whole DSL (see [Fidelity](fidelity.md)). Each "
        "row below sums the runs of `make topology-sweep` and `make topology-check` on one version, each run on seeds"
        f" of its own, so the topologies add up; the goal is {goal:,} per generator and version with no mismatch: "
        "*clean since* counts the topologies of the runs after the last one that mismatched (the runs since the fix)."
        " Seconds are wall-clock seconds on a shared machine (each run records its load average).",
        "",
    ]
    pairs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        pairs.setdefault((row["version"], row["generator"]), []).append(row)
    if not pairs:
        return "\n".join(out + ["No run recorded yet.", ""])
    table = [
        "| Kafka version | generator | topologies | toward goal | mismatches | clean since | seconds | runs | seeds | "
        "first run | last run | last commit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (version, generator), runs in sorted(pairs.items(), key=lambda item: (_version_key(item[0][0]), item[0][1]),
                                             reverse=True):  # fmt: skip
        topologies = sum(run["topologies"] for run in runs)
        seeds = sorted(run["seed"] for run in runs)
        last = runs[-1]
        clean = 0
        for run in reversed(runs):
            if run["mismatches"]:
                break
            clean += run["topologies"]
        table.append(
            f"| {version} | {generator} | {topologies:,} | {min(100.0, 100 * topologies / goal):.1f}% | "
            f"{sum(run['mismatches'] for run in runs)} | {clean:,} | {sum(run['seconds'] for run in runs):,.0f} | "
            f"{len(runs)} | "
            f"{seeds[0]}-{seeds[-1]} | {runs[0]['date'][:16]} | {last['date'][:16]} | "
            f"{(last['commit'] or 'unknown')[:7]}{' (dirty)' if last['dirty'] else ''} |"
        )
    out += table + [""]
    total = sum(row["topologies"] for row in rows)
    out += [f"In all: {total:,} topologies judged, {sum(row['mismatches'] for row in rows)} mismatches.", ""]
    mismatched = [row for row in rows if row["mismatches"]]
    if mismatched:
        out += ["## Runs that mismatched", ""]
        for row in mismatched:
            out.append(
                f"- {row['date'][:16]}, Kafka {row['version']}, {row['generator']} seed {row['seed']}, commit "
                f"{(row['commit'] or 'unknown')[:7]}: {row['mismatches']} of {row['topologies']:,}"
            )
            for text in row["differences"][:3]:
                out.append("  - `" + _printable(text[:300]).replace("`", "'") + "`")
        out.append("")
    return "\n".join(out)


def _printable(text: str) -> str:
    """``text`` with its control characters (a Change's flag bytes) escaped as Python writes them."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def write_page(rows: list[dict[str, Any]]) -> None:
    PAGE.write_text(page(rows), encoding="utf-8")


# -- the sweep -----------------------------------------------------------------------------------------------------
def _deadline(until: str | None, minutes: float | None) -> float | None:
    """The wall-clock time (``time.time()``) after which no run starts: ``until`` as the next HH:MM UTC (tomorrow's
    when today's has passed: a sweep started at 23:00 with ``--until 01:30`` runs past midnight), or ``minutes`` from
    now."""
    if minutes is not None:
        return time.time() + 60 * minutes
    if until is None:
        return None
    hours, _, mins = until.partition(":")
    now = datetime.now(timezone.utc)
    then = now.replace(hour=int(hours), minute=int(mins or 0), second=0, microsecond=0)
    return (then if then > now else then + timedelta(days=1)).timestamp()


def sweep(
    versions: list[str],
    generators: list[str],
    chunk: int,
    toward: int | None,
    more: int,
    deadline: float | None,
    history: Path = HISTORY,
    judges: dict[str, Callable[[KafkaVersion, int, int], Run]] | None = None,
) -> int:
    """Round after round of :func:`plan`'s runs, each row appended when it ends and the page made again; a run is
    not started when the last run of its generator and version would not end before ``deadline``. The mismatches."""
    judges = judges or GENERATORS
    by_name = {version.version: version for version in JUDGES}
    took: dict[tuple[str, str], float] = {}  # seconds per topology of the last run of each pair
    failed = 0
    once = toward is None
    while True:
        rows = read(history)
        runs = plan(rows, versions, generators, chunk, toward, more)
        started_any = False
        for generator, version, count in runs:
            estimate = took.get((generator, version), 0.0) * count
            if deadline is not None and time.time() + estimate > deadline:
                continue
            seed = next_seed(read(history), generator, version)
            run = judges[generator](by_name[version], count, seed)
            took[(generator, version)] = run[2] / max(run[0], 1)
            append([_row(generator, version, seed, run)], history)
            if history == HISTORY:
                write_page(read(history))
            failed += run[1]
            started_any = True
            print(
                f"{generator} kafka-streams {version}: {run[0]} topologies, {run[1]} mismatches, {run[2]:.0f} s "
                f"(seed {seed})",
                flush=True,
            )
        if once or not started_any or not runs:
            return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafka_oracle.topology_sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--versions",
        default=os.environ.get("KJOIN_ORACLE_VERSIONS", ""),
        help="Kafka versions, comma-separated (default: KJOIN_ORACLE_VERSIONS, else every judge)",
    )
    parser.add_argument("--generators", default="oracle,walk", help="oracle, walk or both (default)")
    parser.add_argument("--toward", type=int, default=None, help="judge until each pair has this many topologies")
    parser.add_argument("--more", type=int, default=None, help="judge this many new topologies of each pair, once")
    parser.add_argument("--chunk", type=int, default=500, help="topologies per run with --toward (default 500)")
    parser.add_argument("--until", default=None, help="start no run that would end after HH:MM UTC")
    parser.add_argument("--minutes", type=float, default=None, help="start no run that would end after M minutes")
    parser.add_argument("--page", action="store_true", help="only make docs/judging.md from the history")
    args = parser.parse_args(argv)
    if args.page:
        write_page(read(HISTORY))
        return 0
    known = [version.version for version in JUDGES]
    versions = [name.strip() for name in args.versions.split(",") if name.strip() and name.strip() != "all"] or known
    unknown = [name for name in versions if name not in known]
    generators = [name.strip() for name in args.generators.split(",") if name.strip()]
    generators = list(GENERATORS) if generators == ["both"] else generators
    if unknown or not set(generators) <= set(GENERATORS) or not generators:
        parser.error(
            f"--versions: the judges of topologies are {', '.join(known)}; --generators: oracle, walk or both "
            f"(got {', '.join(unknown + [g for g in generators if g not in GENERATORS])})"
        )
    if (args.toward is None) == (args.more is None):
        parser.error("give --toward N (judge until N per version) or --more N (N new ones per version)")
    _judged_commit()
    build()
    try:
        failed = sweep(versions, generators, args.chunk, args.toward, args.more or 0,
                       _deadline(args.until, args.minutes))  # fmt: skip
    except HarnessError as error:
        print(error, file=sys.stderr)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
