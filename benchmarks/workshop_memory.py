"""How much memory one learner's kernel takes running notebook 09, with and without the workshop session.

    python -m benchmarks.workshop_memory             # both settings, one after the other
    python -m benchmarks.workshop_memory --workshop  # only the workshop's
    make workshop-memory

A script, never a timed test. For each setting it runs notebook 09 (``notebooks/09_debug_your_own_topics.ipynb``)
top to bottom in a fresh Jupyter kernel, as Voila does for a learner (nbclient), with ``KJOIN_WORKSHOP`` set for
the workshop setting (:data:`kjoin.spark.io.session.WORKSHOP_CONFIG`, what ``make workshop`` gives every kernel)
or unset (the default :func:`kjoin.spark.local_session`). Every 0.2 s it reads the memory of the kernel and every
process below it (the Spark JVM, PySpark's Python daemon and workers):

* **RSS**: the sum of the processes' resident sets (pages two processes share are counted twice);
* **PSS**: the sum of their proportional sets (a shared page counted once, split between its users): what the
  processes add to the server's memory, so what 20 learners need is about 20 times the peak PSS.

It prints the peaks and the run time per setting. The kernel's own imports (pandas, ipywidgets, kjoin) are in the
numbers: they are the learner's too.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path
from typing import Any

import nbformat
import psutil
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "09_debug_your_own_topics.ipynb"
LEARNERS = 20


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _kind(process: psutil.Process, root: psutil.Process) -> str:
    """``kernel``, ``jvm`` or ``python worker`` (PySpark's daemon and its workers)."""
    if process.pid == root.pid:
        return "kernel"
    return "jvm" if "java" in process.name() else "python worker"


def _memory(processes: list[psutil.Process]) -> tuple[int, int, dict[str, int]]:
    """(RSS, PSS, PSS per kind of process) in bytes, summed over the processes still alive."""
    rss = pss = 0
    kinds: dict[str, int] = {}
    for process in processes:
        try:
            info = process.memory_full_info()
            kind = _kind(process, processes[0])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        rss += info.rss
        pss += getattr(info, "pss", info.rss)
        kinds[kind] = kinds.get(kind, 0) + getattr(info, "pss", info.rss)
    return rss, pss, kinds


class Sampler(threading.Thread):
    """Samples the memory of the process tree below the kernel ``pid()`` returns, until stopped."""

    def __init__(self, pid: Any) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_rss = self.peak_pss = 0
        self.peak_processes = 0
        self.peak_kinds: dict[str, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            pid = self.pid()
            if pid is not None:
                processes = _tree(pid)
                rss, pss, kinds = _memory(processes)
                self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)
                for kind, size in kinds.items():
                    self.peak_kinds[kind] = max(self.peak_kinds.get(kind, 0), size)
                self.peak_processes = max(self.peak_processes, len(processes))
            self.done.wait(0.2)


def measure(workshop: bool) -> dict[str, Any]:
    """Run notebook 09 in a fresh kernel; its peak memory and run time."""
    if workshop:
        os.environ["KJOIN_WORKSHOP"] = "1"
    else:
        os.environ.pop("KJOIN_WORKSHOP", None)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}})

    def kernel_pid() -> int | None:
        manager = client.km
        provisioner = getattr(manager, "provisioner", None) if manager is not None else None
        process = getattr(provisioner, "process", None)
        return getattr(process, "pid", None)

    sampler = Sampler(kernel_pid)
    sampler.start()
    started = time.perf_counter()
    try:
        client.execute()
    finally:
        sampler.done.set()
        sampler.join()
    return {
        "setting": "workshop" if workshop else "default",
        "seconds": time.perf_counter() - started,
        "peak_rss_mb": sampler.peak_rss / 2**20,
        "peak_pss_mb": sampler.peak_pss / 2**20,
        "processes": sampler.peak_processes,
        "peak_pss_by_kind_mb": {kind: size / 2**20 for kind, size in sorted(sampler.peak_kinds.items())},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workshop", action="store_true", help="only the workshop's setting")
    args = parser.parse_args(argv)
    settings = [True] if args.workshop else [False, True]
    print(f"notebook 09, one kernel per setting (Run All, as a learner's page): {NOTEBOOK.name}")
    for workshop in settings:
        result = measure(workshop)
        print(
            f"{result['setting']:>9}: peak RSS {result['peak_rss_mb']:.0f} MB, peak PSS {result['peak_pss_mb']:.0f} MB "
            f"({result['processes']} processes), {result['seconds']:.0f} s; {LEARNERS} learners: about "
            f"{LEARNERS * result['peak_pss_mb'] / 1024:.1f} GB",
            flush=True,
        )
        kinds = ", ".join(f"{kind} {size:.0f} MB" for kind, size in result["peak_pss_by_kind_mb"].items())
        print(f"{'':>11}peak PSS per kind of process: {kinds}", flush=True)


if __name__ == "__main__":
    main()
