"""The benchmark's memory: every measurement of ``python -m benchmarks.bench --history`` as one JSON line.

``benchmarks/history.jsonl`` (:data:`HISTORY`) holds one object per line, appended, never rewritten. Three kinds:

* ``"kind": "measurement"``: one join, variant, size and method of one bench run: the commit measured (the kjoin
  tree that ran, ``dirty`` when it had uncommitted changes), the UTC date, the run's id and command, its ``label``
  (``bench``: ``make bench``; ``compare``: a round of ``make bench-compare``), the machine (cores, memory in GiB,
  the 1-minute load average before and after the measurement), and the seconds and CPU seconds (the process tree:
  driver, JVM, Python workers) of kjoin, of the plain Spark equi-join and of Kafka Streams' replay (its seconds as
  the JVM times them, its CPU seconds the whole ``java`` process's, start included), the reference engine's
  records per second on its sample, kjoin's peak resident memory, and the seconds of building the run's ``why``
  index and of the first ``why`` after it (``why_index_s``, ``why_s``). A value not measured is ``null``.
* ``"kind": "comparison"``: one join of a ``make bench-compare`` (:mod:`benchmarks.compare`): the two commits, the
  best of each one's rounds, their ratios (current over baseline), and whether the cost rose more than the
  threshold.
* ``"kind": "app-debug"``: one operation of ``python -m benchmarks.bench_app_debug --history`` (a whole app's
  debugging over dumps): the ``operation``, its ``seconds``, the ``orders`` planted and ``records`` read, the
  process's peak memory (``peak_mb``), with the same run, commit, machine and load fields.

:func:`read` gives them back; :mod:`benchmarks.report` makes ``docs/benchmarks.md`` from them.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

__all__ = [
    "HISTORY", "MEASUREMENT_FIELDS", "append", "read", "measurements", "machine", "commit_of", "new_run_id", "command",
]  # fmt: skip

REPOSITORY = Path(__file__).resolve().parents[1]
HISTORY = REPOSITORY / "benchmarks" / "history.jsonl"
"""The history file of this repository."""

MEASUREMENT_FIELDS = (
    "kind", "run", "label", "command", "commit", "dirty", "date", "cores", "memory_gib", "load_before", "load_after",
    "join", "variant", "size", "method",
    "kjoin_s", "kjoin_cpu_s", "equi_s", "equi_cpu_s", "kafka_s", "kafka_cpu_s", "kafka_records",
    "reference_rate", "reference_records", "peak_mb", "why_index_s", "why_s",
)  # fmt: skip
"""A measurement's fields, in the order written."""


def new_run_id() -> str:
    """An id shared by the rows of one bench run."""
    return uuid.uuid4().hex[:12]


def command(program: str, words: list[str]) -> str:
    """The command line a row records: ``program`` and its ``words``, a path inside this repository (a word, or the
    value of ``--option=PATH``) written relative to it, so that the history reads the same on every machine and in
    every clone."""

    def portable(word: str) -> str:
        option, equals, value = word.rpartition("=") if word.startswith("--") else ("", "", word)
        if not os.path.isabs(value):
            return word
        try:
            relative = Path(value).resolve().relative_to(REPOSITORY)
        except ValueError:  # outside the repository: as given
            return word
        return f"{option}{equals}{relative.as_posix()}"

    return " ".join([program, *(portable(word) for word in words)])


def now() -> str:
    """The UTC date and time, to the second, ISO 8601."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def machine() -> dict[str, Any]:
    """The machine's cores and memory (GiB, one decimal)."""
    try:
        import psutil

        memory = psutil.virtual_memory().total
    except ImportError:  # pragma: no cover - psutil is a dependency of the dev environment
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"cores": os.cpu_count(), "memory_gib": round(memory / 2**30, 1)}


MEASURED_ELSEWHERE = ("benchmarks/history.jsonl", "docs/benchmarks.md")
"""The files the benchmarks themselves write: a change to them does not make the measured tree dirty (a run appends
to the history while another runs)."""


def commit_of(tree: str | Path, elsewhere: tuple[str, ...] = MEASURED_ELSEWHERE) -> tuple[str | None, bool]:
    """The commit checked out in ``tree`` (a git work tree) and whether its tracked files, beyond ``elsewhere`` (the
    files the measurement itself writes, :data:`MEASURED_ELSEWHERE` by default), differ from it; ``(None, False)``
    outside git."""
    try:
        head = subprocess.run(
            ["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            [
                "git",
                "-C",
                str(tree),
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                *(f":(exclude){path}" for path in elsewhere),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None, False
    return head, bool(status.strip())


def append(rows: Iterable[dict[str, Any]], path: str | Path = HISTORY) -> None:
    """Append ``rows`` to the history, one JSON line each (keys in the order given, nothing else rewritten)."""
    lines = [json.dumps(row, sort_keys=False, allow_nan=False) + "\n" for row in rows]
    if not lines:
        return
    with open(path, "a", encoding="utf-8") as history:
        history.writelines(lines)


def read(path: str | Path = HISTORY) -> list[dict[str, Any]]:
    """Every row of the history, in the order written (none when the file does not exist). A line that is not a
    JSON object is an error naming the file and the line."""
    if not os.path.exists(path):
        return []
    rows = []
    with open(path, encoding="utf-8") as history:
        for number, line in enumerate(history, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not a JSON line ({error.msg}); fix or delete the line") from None
            if not isinstance(row, dict) or "kind" not in row:
                raise ValueError(f"{path}:{number}: expected a JSON object with a 'kind'; fix or delete the line")
            rows.append(row)
    return rows


def measurements(rows: list[dict[str, Any]], label: str | None = None) -> list[dict[str, Any]]:
    """The measurement rows (of ``label`` only, when given)."""
    return [r for r in rows if r["kind"] == "measurement" and (label is None or r.get("label") == label)]


def last_commit(rows: list[dict[str, Any]], other_than: str | None = None) -> str | None:
    """The commit of the last measurement recorded (other than ``other_than``), or ``None``."""
    for row in reversed(measurements(rows)):
        if row.get("commit") and row["commit"] != other_than:
            return row["commit"]
    return None
