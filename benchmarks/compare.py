"""Two commits' kjoin side by side: ``make bench-compare`` (``python -m benchmarks.compare``).

    python -m benchmarks.compare                          # this tree against the last commit in the history
    python -m benchmarks.compare --against 5440eb9 --sizes 1000000 --joins versioned-table-table --repeat 3

The baseline is ``--against`` or the last commit :mod:`benchmarks.history` recorded other than this tree's. It is
checked out in a temporary git worktree, and the two run in turns, ``--repeat`` rounds (the order reversed every
other round, so that neither always runs second on a machine whose load drifts): each turn is this tree's
``benchmarks.bench`` (the same workload, the same timing) with one or the other commit's ``kjoin`` first on the
path, in a process of its own (a Python process and its Spark workers import one ``kjoin``), without the Kafka
Streams and reference engine baselines. Every turn's rows go to the history (label ``compare:<id>``); then per join
the best round of each commit (fewest seconds, fewest CPU seconds, each on its own) and their ratios, current over
baseline, also appended (``kind: comparison``). The CPU seconds are the process tree's (driver, JVM, Python
workers), which a loaded machine stretches less than the seconds: a join whose CPU ratio exceeds ``1 +
--threshold`` (default 15%) is named, and the command exits with 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

from .history import HISTORY, REPOSITORY, append, commit_of, last_commit, machine, measurements, new_run_id, now, read

__all__ = ["main", "best_of", "compare", "format_comparison", "THRESHOLD"]

THRESHOLD = 0.15
"""A cost that rose more than this (CPU seconds, current over baseline, minus one) is named."""

_COSTS = ("kjoin_s", "kjoin_cpu_s", "equi_s", "equi_cpu_s")


def best_of(rows: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """Per ``(join, variant, size)``: the fewest of each cost over ``rows`` (one commit's rounds), the method that
    ran and how many rounds there were."""
    best: dict[tuple, dict[str, Any]] = {}
    for row in rows:
        key = (row["join"], row["variant"], row["size"])
        found = best.setdefault(key, {"method": row["method"], "rounds": 0, **{cost: None for cost in _COSTS}})
        found["rounds"] += 1
        for cost in _COSTS:
            value = row.get(cost)
            if value is not None and (found[cost] is None or value < found[cost]):
                found[cost] = value
    return best


def _ratio(current: float | None, baseline: float | None) -> float | None:
    return None if current is None or not baseline else round(current / baseline, 3)


def compare(
    current: list[dict[str, Any]], baseline: list[dict[str, Any]], threshold: float = THRESHOLD
) -> list[dict[str, Any]]:
    """One row per join both commits ran: each one's best (:func:`best_of`), the ratios current over baseline of
    kjoin's seconds and CPU seconds and of the equi-join's (the same work on both sides: how much the machine
    drifted between turns), and ``rose``: kjoin's CPU ratio above ``1 + threshold``."""
    mine, theirs = best_of(current), best_of(baseline)
    rows = []
    for key in [k for k in mine if k in theirs]:
        a, b = mine[key], theirs[key]
        cpu_ratio = _ratio(a["kjoin_cpu_s"], b["kjoin_cpu_s"])
        rows.append(
            {
                "join": key[0],
                "variant": key[1],
                "size": key[2],
                "method": a["method"],
                "baseline_method": b["method"],
                "rounds": min(a["rounds"], b["rounds"]),
                **{cost: a[cost] for cost in _COSTS},
                **{f"baseline_{cost}": b[cost] for cost in _COSTS},
                "kjoin_s_ratio": _ratio(a["kjoin_s"], b["kjoin_s"]),
                "kjoin_cpu_ratio": cpu_ratio,
                "equi_s_ratio": _ratio(a["equi_s"], b["equi_s"]),
                "equi_cpu_ratio": _ratio(a["equi_cpu_s"], b["equi_cpu_s"]),
                "rose": cpu_ratio is not None and cpu_ratio > 1 + threshold,
            }
        )
    return rows


COMPARISON_COLUMNS = [
    "join", "variant", "records", "kjoin s", "baseline s", "s ratio", "kjoin CPU s", "baseline CPU s", "CPU ratio",
    "equi CPU ratio", "rose",
]  # fmt: skip


def comparison_cells(row: dict[str, Any]) -> list[str]:
    def number(value: float | None, digits: int = 2) -> str:
        return "" if value is None else f"{value:.{digits}f}"

    return [
        row["join"],
        row["variant"],
        f"{row['size']:,}",
        number(row["kjoin_s"]),
        number(row["baseline_kjoin_s"]),
        number(row["kjoin_s_ratio"]),
        number(row["kjoin_cpu_s"]),
        number(row["baseline_kjoin_cpu_s"]),
        number(row["kjoin_cpu_ratio"]),
        number(row["equi_cpu_ratio"]),
        "ROSE" if row["rose"] else "",
    ]


def format_comparison(rows: list[dict[str, Any]]) -> str:
    """The comparison as a text table (the bench's layout)."""
    cells = [COMPARISON_COLUMNS] + [comparison_cells(row) for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COMPARISON_COLUMNS))]
    lines = [
        " | ".join(c.rjust(widths[i]) if i >= 2 else c.ljust(widths[i]) for i, c in enumerate(line)) for line in cells
    ]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def verdict(rows: list[dict[str, Any]], threshold: float = THRESHOLD) -> str:
    """One sentence: the joins whose CPU seconds rose more than ``threshold``, or that none did."""
    rose = [f"{r['join']} {r['variant']} {r['size']:,} (x{r['kjoin_cpu_ratio']:.2f})" for r in rows if r["rose"]]
    if not rose:
        return f"no join's CPU seconds rose more than {threshold:.0%}"
    return f"CPU seconds rose more than {threshold:.0%}: " + ", ".join(rose)


def _turn(tree: str, links: str, arguments: list[str], label: str, history: str) -> None:
    """One commit's turn: this tree's bench with ``tree``'s kjoin (``links`` holds only a link to this tree's
    ``benchmarks``, so that neither the current directory nor the other tree supplies it)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([links, tree])}
    command = [sys.executable, "-m", "benchmarks.bench", *arguments, "--no-baselines", "--history", history]
    done = subprocess.run([*command, "--label", label], cwd=links, env=env)
    if done.returncode != 0:
        raise SystemExit(f"bench-compare: the bench failed on {tree} ({' '.join(command)})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="the baseline commit (default: the last one the history recorded)")
    parser.add_argument("--sizes", default="1000000", help="as the bench's (default 1000000)")
    parser.add_argument("--joins", default=None, help="as the bench's (default: all)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds of both commits (default 2)")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="default 0.15")
    parser.add_argument("--history", default=str(HISTORY), help="the history file (default benchmarks/history.jsonl)")
    args = parser.parse_args(argv)
    if args.repeat <= 0:
        parser.error("--repeat: expected a positive integer")
    current, dirty = commit_of(REPOSITORY)
    if current is None:
        parser.error(f"{REPOSITORY} is not a git work tree: bench-compare checks the baseline out with git")
    baseline = args.against or last_commit(read(args.history), other_than=current)
    if baseline is None:
        parser.error(f"no other commit in {args.history} yet: run `make bench` first, or give --against COMMIT")
    resolved = subprocess.run(
        ["git", "-C", str(REPOSITORY), "rev-parse", "--verify", f"{baseline}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if resolved.returncode != 0:
        parser.error(f"--against {baseline}: not a commit of {REPOSITORY}")
    baseline = resolved.stdout.strip()
    arguments = ["--sizes", args.sizes, *(["--joins", args.joins] if args.joins else [])]
    comparison_id = new_run_id()
    label = f"compare:{comparison_id}"
    scratch = tempfile.mkdtemp(prefix="kjoin-bench-compare-")
    old_tree, links = os.path.join(scratch, "baseline"), os.path.join(scratch, "links")
    os.mkdir(links)
    os.symlink(REPOSITORY / "benchmarks", os.path.join(links, "benchmarks"))
    subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "add", "--detach", old_tree, baseline], check=True)
    try:
        trees = [str(REPOSITORY), old_tree]
        for round_ in range(args.repeat):
            for tree in trees if round_ % 2 == 0 else trees[::-1]:
                print(f"[bench-compare] round {round_ + 1}/{args.repeat}: {tree}", file=sys.stderr, flush=True)
                _turn(tree, links, arguments, label, args.history)
    finally:
        subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "remove", "--force", old_tree])
        shutil.rmtree(scratch, ignore_errors=True)
    rows = measurements(read(args.history), label)
    # this tree's turns by "not the baseline": a commit made in this tree during the rounds moves its HEAD
    result = compare(
        [r for r in rows if r["commit"] != baseline], [r for r in rows if r["commit"] == baseline], args.threshold
    )
    append(
        [
            {"kind": "comparison", "run": comparison_id, "date": now(), "commit": current, "dirty": dirty,
             "baseline": baseline, "threshold": args.threshold, **machine(), **row}
            for row in result
        ],
        args.history,
    )  # fmt: skip
    print(
        f"kjoin bench-compare: {current[:7]}{' (uncommitted changes)' if dirty else ''} against {baseline[:7]}, "
        f"{args.repeat} rounds each in turns, the best of each; {machine()['cores']} cores"
    )
    print(format_comparison(result))
    print(verdict(result, args.threshold))
    return 1 if any(row["rose"] for row in result) else 0


if __name__ == "__main__":
    raise SystemExit(main())
