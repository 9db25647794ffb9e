"""The differential suite, on a sample, through a local Spark Connect session.

pytest's process already holds a classic Spark session, and PySpark switches a process
between classic and Connect as a whole, so the Connect run is a subprocess:
``tests/connect_sample.py`` starts a local Connect server on an ephemeral port
(:func:`kjoin.spark.connect_session`; PySpark's own local mode always dials port 15002,
which hangs with any other port and collides with a second run) and compares 40 random
scenarios of every join type, ``run_join`` over Kafka-source frames and partition-less
files, and the drill-down, with the reference engine.

The test fails (never skips) when Connect cannot start or run. The seed is fresh each run
(printed; ``KJOIN_CONNECT_SEED`` replays one).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark_compare import KINDS

pytestmark = pytest.mark.spark

SCRIPT = Path(__file__).with_name("connect_sample.py")
PER_KIND = 40
TIMEOUT_S = 900
"""Generous: a cold Connect server takes 10–30 s to start on a loaded 2-core machine, the
sample about a minute."""


def test_a_sample_of_the_differential_suite_agrees_on_spark_connect():
    seed = int(os.environ.get("KJOIN_CONNECT_SEED", random.SystemRandom().randrange(2**31)))
    print(f"Spark Connect sample, seed {seed} (KJOIN_CONNECT_SEED={seed} replays it)")
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE")
    }
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--seed", str(seed), "--per-kind", str(PER_KIND)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=str(SCRIPT.parent.parent),
        env=env,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    errors = "\n".join(
        line for line in done.stderr.splitlines() if not line.lstrip().startswith("at ") and " WARN " not in line
    )[-6000:]
    assert done.returncode == 0 and lines, (
        f"the Spark Connect run failed (exit {done.returncode}, seed {seed}):\n{errors}"
    )
    summary = json.loads(lines[-1])
    print(summary)
    assert summary["ok"] and summary["session"].startswith("pyspark.sql.connect")
    properties = summary["jvm_properties"]  # the server's JVM runs with kjoin's options (kjoin.spark.io.session)
    assert properties["arrow.enable_unsafe_memory_access"] == "true", properties
    assert (properties["log4j2.configurationFile"] or "").startswith("file:"), properties
    assert summary["scenarios"] == len(KINDS) * PER_KIND and summary["outputs"] > 0 and summary["run_join_checks"] == 5


def test_a_local_connect_session_refuses_to_start_next_to_a_classic_one(spark):
    """In pytest's process (a classic session is active) the refusal says what to do."""
    from kjoin.spark import connect_session

    with pytest.raises(
        RuntimeError,
        match=r"already runs a classic Spark session; a local Spark Connect session needs a process of its own",
    ):
        connect_session()
    with pytest.raises(ValueError, match=r"remote: expected 'local\[N\]' .* or 'sc://host:port'"):
        connect_session("yarn")
