"""kjoin on a real Spark standalone cluster: a master and two workers on 127.0.0.1, each worker a JVM of its own with
its own executor, Python workers and local directory (:class:`kjoin.spark.io.cluster.StandaloneCluster`, started from
PySpark's ``spark-class`` and stopped here).

The driver runs in a subprocess (``tests/cluster_sample.py``: a process holds one SparkContext, and pytest's is the
shared local one). It checks the differential sample (every join type, foreign-key included), ``run_join`` over
Kafka- source frames and files, a live read of two topics on a real broker (``kafka_oracle/kafka_broker.py``), ``why``
from an index on a path both workers read, and a bigger join whose outputs this test compares, row for row, with the
same join on ``local[2]``. Then it runs that join again while one worker's whole process group is SIGKILLed mid-job:
Spark reruns the lost tasks on the other worker, and the outputs must not change.

Fails (never skips) when the cluster cannot start. The seed is fresh each run (printed; ``KJOIN_CLUSTER_SEED``
replays one).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kjoin.spark.io.cluster import StandaloneCluster
from tests.test_kafka_live import produce, random_rows

pytestmark = pytest.mark.spark

SCRIPT = Path(__file__).with_name("cluster_sample.py")
PER_KIND = 3
TIMEOUT_S = 900


def test_kjoin_on_a_standalone_cluster_agrees_with_local_and_survives_a_lost_worker(spark, broker, tmp_path):
    seed = int(os.environ.get("KJOIN_CLUSTER_SEED", random.SystemRandom().randrange(2**31)))
    print(f"cluster sample, seed {seed} (KJOIN_CLUSTER_SEED={seed} replays it)")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
    with StandaloneCluster(workers=2, cores=1, memory="2g", root=tmp_path / "cluster") as cluster:
        produced = {
            "left": produce(broker, "clicks", random_rows(seed, 60, 3), 3),
            "right": produce(broker, "users", random_rows(seed + 1, 50, 3), 3),
        }
        (tmp_path / "produced.json").write_text(json.dumps(produced))
        assert cluster.alive_workers() == 2
        worker = cluster.worker_pids()[1]
        done = subprocess.run(
            [sys.executable, str(SCRIPT), "--master", cluster.master_url, "--seed", str(seed), "--per-kind",
             str(PER_KIND), "--workdir", str(tmp_path), "--kill-pgid", str(worker),
             "--bootstrap", broker.bootstrap_servers, "--produced", str(tmp_path / "produced.json")],
            capture_output=True, text=True, timeout=TIMEOUT_S, cwd=str(SCRIPT.parent.parent), env=env,
        )  # fmt: skip
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        errors = "\n".join(
            line for line in done.stderr.splitlines() if not line.lstrip().startswith("at ") and " WARN " not in line
        )[-6000:]
        failed = f"the cluster run failed (exit {done.returncode}, seed {seed}):\n{errors}"
        assert done.returncode == 0 and lines, failed
        summary = json.loads(lines[-1])
        print(summary)
        state = cluster.state()
        alive = [w for w in state["workers"] if w["state"] == "ALIVE"]
        assert len(alive) == 1, f"the killed worker is gone from the master's view: {state['workers']}"
    assert summary["ok"] and summary["executors"] == 2, summary
    assert summary["scenarios"] > 0 and summary["outputs"] > 0 and summary["run_join_checks"] == 3
    assert summary["why_checks"] == 3 and summary["live_outputs"] > 0
    assert summary["killed"]["job_status"] == "RUNNING", summary["killed"]
    assert summary["after_kill_digest"] == summary["big_digest"]

    # The same big join on local[2] (pytest's shared session): the same rows, byte for byte.
    sys.path.insert(0, str(SCRIPT.parent))
    from tests.cluster_sample import big_rows, run_big

    local = big_rows(run_big(spark))
    cluster_rows = json.loads((tmp_path / "big.json").read_text())
    assert json.loads(json.dumps(local, default=str)) == cluster_rows
    assert len(local) == summary["big_outputs"] > 100_000
