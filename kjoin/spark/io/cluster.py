"""A Spark standalone cluster on this machine, for trying kjoin where executors are separate JVMs.

``make cluster`` (``python -m kjoin.spark.io.cluster``) starts a master and two workers from PySpark's own
``spark-class`` (no Spark download: the jars ship inside the ``pyspark`` wheel), each worker a JVM of its own with its
own executor, its own Python workers and its own local directory (where Spark's shuffle files and kjoin's spilled
held records go), all listening on 127.0.0.1 on free ports, and prints the master's ``spark://`` URL::

    from kjoin.spark import cluster_session
    spark = cluster_session("spark://127.0.0.1:7077")

The test suite starts one the same way (:class:`StandaloneCluster`, ``tests/test_spark_cluster.py``) and stops it;
killing one worker's process group there stands for a lost machine.

What a cluster of your own needs (:func:`kjoin.spark.cluster_session` sets what it can):

- **kjoin and its Python dependencies on every executor** (pyarrow, numpy, pandas): install the same environment on
  the workers (``spark.pyspark.python`` names its interpreter) or ship it as an archive (``spark.archives``).
- **Arrow Java's checks off on the executors too** (:data:`kjoin.spark.ARROW_JAVA_OPTIONS` in
  ``spark.executor.extraJavaOptions``): executors run the feed into and out of the Python passes.
- **Spark's Kafka source** for live reads: ``spark.jars`` with the connector's jars (Spark ships them to executors).
- **A why-index path every executor can read** (``SparkRun.why_index(path)`` / ``write_parquet(..., why_index=True)``
  on shared storage): the default is a temporary directory on the driver's machine, which only executors on the same
  machine can read.
- **Retries left on**: on a cluster Spark keeps its order-independent shuffle checksum (kjoin turns it off only on
  ``local[...]`` masters, which never retry) and reruns a lost executor's tasks; every kjoin pass is deterministic
  given its input, so a retried task writes the same rows (the killed-worker test checks it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

__all__ = ["StandaloneCluster", "spark_class"]

START_TIMEOUT_S = 120.0
"""A cold JVM takes 5-20 s on a loaded 2-core machine; a master and two workers start side by side."""


def spark_class() -> Path:
    """PySpark's own ``bin/spark-class`` (the launcher of Spark's JVM programs)."""
    path = Path(pyspark.__file__).resolve().parent / "bin" / "spark-class"
    if not path.is_file():
        raise RuntimeError(f"PySpark has no {path}: reinstall pyspark (pip install pyspark)")
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class _Process:
    name: str
    process: subprocess.Popen
    log: Path


@dataclass
class StandaloneCluster:
    """A master and ``workers`` workers (``cores`` cores and ``memory`` each) on 127.0.0.1.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`. Every JVM runs in a process group of its own,
    so :meth:`kill_worker` takes a worker's executor and Python workers down with it, as a lost machine would.
    """

    workers: int = 2
    cores: int = 1
    memory: str = "2g"
    root: Path | None = None
    master_url: str = ""
    ui_url: str = ""
    processes: list[_Process] = field(default_factory=list)
    _own_root: bool = False

    def start(self) -> "StandaloneCluster":
        if self.root is None:
            self.root = Path(tempfile.mkdtemp(prefix="kjoin-cluster-"))
            self._own_root = True
        self.root.mkdir(parents=True, exist_ok=True)
        port, ui = free_port(), free_port()
        self.master_url, self.ui_url = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}"
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                    "--webui-port", str(ui))  # fmt: skip
        for index in range(self.workers):
            work = self.root / f"worker-{index}"
            (work / "local").mkdir(parents=True, exist_ok=True)
            self._spawn(
                f"worker-{index}",
                "org.apache.spark.deploy.worker.Worker",
                "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
                "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(work / "work"),
                self.master_url,
                env={"SPARK_LOCAL_DIRS": str(work / "local")},
            )  # fmt: skip
        try:
            self.wait_for_workers(self.workers)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, main: str, *args: str, env: dict[str, str] | None = None) -> None:
        assert self.root is not None
        log = self.root / f"{name}.log"
        environment = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1", **(env or {})}
        environment.pop("SPARK_REMOTE", None)
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [str(spark_class()), main, *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=environment,
                start_new_session=True,
            )
        self.processes.append(_Process(name, process, log))

    def state(self) -> dict:
        """The master's own view (its web UI's ``/json``): workers with their state, applications."""
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=5) as answer:
            return json.load(answer)

    def alive_workers(self) -> int:
        return sum(1 for worker in self.state().get("workers", []) if worker.get("state") == "ALIVE")

    def wait_for_workers(self, count: int, timeout_s: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            for entry in self.processes:
                if entry.process.poll() is not None and entry.name != "master" and "killed" not in entry.name:
                    raise RuntimeError(f"Spark {entry.name} exited at start: {entry.log.read_text()[-3000:]}")
            try:
                if self.alive_workers() >= count:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {e.name}\n{e.log.read_text()[-1500:]}" for e in self.processes)
                raise RuntimeError(f"the standalone cluster did not register {count} workers in {timeout_s} s:\n{logs}")
            time.sleep(0.5)

    def worker_pids(self) -> list[int]:
        return [entry.process.pid for entry in self.processes if entry.name.startswith("worker-")]

    def kill_worker(self, index: int) -> None:
        """SIGKILL worker ``index`` with its executor and Python workers (its whole process group)."""
        entry = next(e for e in self.processes if e.name == f"worker-{index}")
        _kill_group(entry.process)
        entry.name = f"killed-{entry.name}"

    def stop(self) -> None:
        for entry in reversed(self.processes):
            _kill_group(entry.process, signal.SIGTERM)
        for entry in self.processes:
            try:
                entry.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                _kill_group(entry.process)
                entry.process.wait(timeout=10)
        self.processes.clear()
        if self._own_root and self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _kill_group(process: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


def main() -> int:
    """``make cluster``: start a master and two workers, print the URL, run until interrupted."""
    parser = argparse.ArgumentParser(description="A Spark standalone cluster on 127.0.0.1 for kjoin")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--memory", default="2g")
    args = parser.parse_args()
    with StandaloneCluster(args.workers, args.cores, args.memory) as cluster:
        print(f"master: {cluster.master_url} (web UI {cluster.ui_url}), {args.workers} workers, logs in {cluster.root}")
        print(f'in Python: from kjoin.spark import cluster_session; spark = cluster_session("{cluster.master_url}")')
        print("Ctrl-C stops the cluster.", flush=True)
        try:
            while cluster.processes[0].process.poll() is None:  # as long as the master runs (a worker may die)
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
