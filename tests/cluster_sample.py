"""kjoin on a Spark standalone cluster: run by tests/test_spark_cluster.py in a process of its own (a process holds
one SparkContext; pytest's is local)::

    .venv/bin/python tests/cluster_sample.py --master spark://127.0.0.1:7077 --seed 7 --per-kind 6 \\
        --workdir /tmp/x [--kill-pgid 1234]

Against the master it is given (:func:`kjoin.spark.cluster_session`, executors in separate JVMs) it checks, each
against the reference engine:

1. ``per-kind`` random scenarios of every join type (foreign-key included) in one ``run_scenarios`` job, and the
   primary-key ones again on the vectorised path (tests/connect_sample.py's sample);
2. ``run_join`` over each kind of source once: a Kafka-source frame (a stream-table join and its drill-down
   traces), Parquet files without partition and offset, and a bare ``Topic`` (a table-table join on the processors
   path); a stream-stream join over Kafka-source data is step 3's live read (tests/connect_sample.py runs every
   join over Kafka-source frames on Connect);
3. with ``--bootstrap``: a live read of two topics on a real broker, joined (executors fetch the records);
4. ``why`` with its index written under ``workdir`` (a path both workers read) and answered from it;
5. ``run_join`` over a generated topic pair big enough to take several seconds (:func:`big_topics`): its outputs are
   written to ``workdir/big`` for the parent to compare with a ``local[2]`` run, byte for byte;
6. with ``--kill-pgid``: the same big join again while a thread SIGKILLs that worker's process group (its JVM, its
   executor and Python workers) once the job's tasks are running; Spark reruns the lost tasks on the other worker
   and the outputs must equal those of step 5.

Prints one JSON line ``{"ok": true, ...}`` last; any disagreement raises (exit status 1).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.connect_sample import KAFKA_FRAME_JOINS, check_run_join, check_scenarios, sample  # noqa: E402

BIG_RECORDS = 120_000
"""Records per side of the big join: about 10 s on a cluster of two 1-core workers, so a kill lands mid-job."""


def big_topics(spark, records: int = BIG_RECORDS):
    """An orders/customers pair built by Spark itself (nothing collected): 4 partitions, 500 keys, updates and
    tombstones on the table side, ties and out-of-order timestamps on both."""
    from pyspark.sql import functions as F

    from kjoin.spark import Topic

    def topic(prefix: str, tombstone_every: int):
        frame = spark.range(records).select(
            F.concat(F.lit("k"), (F.col("id") * 7919 % 500).cast("string")).alias("key"),
            F.when(F.col("id") % tombstone_every == 0, F.lit(None))
            .otherwise(F.concat(F.lit(prefix), F.col("id").cast("string")))
            .alias("value"),
            ((F.col("id") * 13) % (records // 3) + (F.col("id") % 5) * 1000).alias("ts"),
            (F.col("id") % 4).cast("int").alias("partition"),
            (F.col("id") / 4).cast("long").alias("offset"),
        )
        return Topic(frame.repartition(6), partitions=4)

    return topic("o", 10**9), topic("c", 11)


def digest(rows: list) -> str:
    return hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()


def big_rows(result) -> list:
    from tests.spark_compare import spark_rows

    return sorted(spark_rows(result.outputs), key=lambda row: json.dumps(row, default=str))


def run_big(spark):
    from kjoin.spark import run_join

    orders, customers = big_topics(spark)
    return run_join(orders, customers, "stream-table", "left")


def check_why(spark, workdir: Path) -> dict:
    """``why`` answered from an index written where both workers read it (``write_parquet(..., why_index=True)``)."""
    from kjoin.spark import Topic, run_join

    orders = spark.createDataFrame(
        [("a", "o1", 5, 0, 0), ("b", "o2", 9, 1, 0), ("a", "o3", 12, 0, 1), ("c", "o4", 3, 1, 1)],
        "key string, value string, ts long, partition int, offset long",
    )
    customers = spark.createDataFrame(
        [("a", "x", 1, 0, 0), ("b", "y", 10, 1, 0), ("a", None, 11, 0, 1)],
        "key string, value string, ts long, partition int, offset long",
    )
    result = run_join(Topic(orders, partitions=2), Topic(customers, partitions=2), "stream-table", "left")
    out = workdir / "why-run"
    result.write_parquet(str(out), why_index=True)
    assert (out / "why-index" / "by_key").is_dir(), "the index is written under the shared path"
    later = result.why(partition=1, offset=0)
    assert later.verdict == "partner-later" and "ts 10" in later.text, f"why of a later customer: {later.text}"
    joined = result.why(partition=0, offset=0)
    assert joined.verdict == "joined", joined.text
    deleted = result.why(partition=0, offset=1)
    assert deleted.verdict != "joined" and "offset 1" in deleted.text, deleted.text
    return {"why_checks": 3, "why_verdicts": [later.verdict, joined.verdict, deleted.verdict]}


def wait_for_executors(spark, count: int, timeout_s: float = 120) -> int:
    """The executors registered with the driver, once ``count`` have (or ``timeout_s`` passed)."""
    deadline = time.monotonic() + timeout_s
    while True:
        registered = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
        if registered >= count or time.monotonic() > deadline:
            return registered
        time.sleep(0.5)


def check_live(spark, bootstrap: str, produced: dict) -> dict:
    """A live read: executors on the workers fetch both topics from the broker through Spark's Kafka source
    (``cluster_session`` ships the connector's jars), and the join agrees with the reference engine."""
    from kjoin.records import Record, Side
    from kjoin.spark import from_kafka, run_join
    from tests.spark_compare import reference_outputs, spark_outputs

    window = {"before_ms": 5, "after_ms": 3, "grace_ms": 2}
    left, right = (from_kafka(spark, bootstrap_servers=bootstrap, topic=name) for name in ("clicks", "users"))
    result = run_join(left, right, "stream-stream", "outer", window=window)
    rows = {side: [Record(side, *row) for row in produced[side.value]] for side in (Side.LEFT, Side.RIGHT)}
    expected = reference_outputs(rows[Side.LEFT], rows[Side.RIGHT], "stream-stream", "outer", 3, window)
    assert expected and spark_outputs(result) == expected, "a live read on the cluster"
    return {"live_outputs": sum(len(rows) for rows in expected.values())}


def kill_when_running(spark, pgid: int, report: dict) -> threading.Thread:
    """A thread that SIGKILLs process group ``pgid`` once a job has tasks running (after its first stage is done)."""
    tracker = spark.sparkContext.statusTracker()

    def watch() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            for job in tracker.getActiveJobsIds():
                info = tracker.getJobInfo(job)
                stages = [tracker.getStageInfo(s) for s in (info.stageIds if info else [])]
                running = [s for s in stages if s is not None and s.numActiveTasks > 0]
                done = [s for s in stages if s is not None and s.numCompletedTasks > 0]
                if running and done:
                    os.killpg(pgid, signal.SIGKILL)
                    report.update(killed_job=job, killed_at=time.time(), job_status=str(info.status))
                    return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--master", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-kind", type=int, default=6)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--kill-pgid", type=int, default=0)
    parser.add_argument("--bootstrap", default="", help="a broker holding topics clicks and users (--produced)")
    parser.add_argument("--produced", default="", help="a JSON file: the rows written, per side")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    started = time.time()
    from kjoin.spark import cluster_session

    spark = cluster_session(args.master, **{"spark.executor.memory": "1g", "spark.task.maxFailures": "4"})
    assert spark.sparkContext.master == args.master, spark.sparkContext.master
    summary: dict = {"seed": args.seed, "master": args.master, "start_s": round(time.time() - started, 1)}
    summary["executors"] = wait_for_executors(spark, 2)
    timings = summary.setdefault("timings_s", {})

    def timed(name, call):
        begun = time.time()
        answer = call()
        timings[name] = round(time.time() - begun, 1)
        return answer

    summary.update(timed("scenarios", lambda: check_scenarios(spark, sample(args.seed, args.per_kind))))
    summary.update(timed("run_join", lambda: check_run_join(spark, workdir, KAFKA_FRAME_JOINS[:1])))
    summary.update(timed("why", lambda: check_why(spark, workdir)))
    if args.bootstrap:
        produced = json.loads(Path(args.produced).read_text())
        summary.update(timed("live", lambda: check_live(spark, args.bootstrap, produced)))
    rows = timed("big", lambda: big_rows(run_big(spark)))
    (workdir / "big.json").write_text(json.dumps(rows, default=str))
    summary.update(big_records=2 * BIG_RECORDS, big_outputs=len(rows), big_digest=digest(rows))
    if args.kill_pgid:
        report: dict = {}
        watcher = kill_when_running(spark, args.kill_pgid, report)
        again = timed("big_killed", lambda: big_rows(run_big(spark)))
        watcher.join(timeout=1)
        assert report, "the worker was never killed: the big job finished before any task ran"
        assert again == rows, "outputs after a lost worker differ from the uninterrupted run"
        summary.update(killed=report, after_kill_digest=digest(again))
    summary["total_s"] = round(time.time() - started, 1)
    print(json.dumps({"ok": True, **summary}), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
