"""An application's topics with misrouted records among correctly routed ones (a customer, an update,
a tombstone or an order written to another partition than its key's, a customer written with a null key),
written as files. Every null result's reason is its planted cause, ``why`` names the misrouted record first,
and the co-partitioning audit finds every misrouted record with the results it spoiled."""

from __future__ import annotations

import os
import time

import pytest

from kjoin.spark import from_files, run_join
from kjoin.spark.debug.whycheck import APP_CAUSES, APP_VERDICTS, APP_WINDOW_MS, app_groups, planted_app, write_topic

pytestmark = pytest.mark.spark

PARTITIONS = 4
RECORDS = int(os.environ.get("KJOIN_WHY_AUDIT_RECORDS", "0"))
"""Records of both topics per join (about); 0, in CI: three groups of every cause. ``make why-audit-check`` runs the
module at 10^5 records."""


def groups(join: str) -> int:
    return app_groups(RECORDS, join, PARTITIONS) if RECORDS else 3 * len(APP_CAUSES[join])


GROUPS = {join: groups(join) for join in ("stream-table", "stream-stream")}
WINDOW = {"before_ms": APP_WINDOW_MS, "after_ms": APP_WINDOW_MS, "grace_ms": 0}


@pytest.fixture(scope="module", params=["stream-table", "stream-stream"])
def app(request, spark, tmp_path_factory):
    join = request.param
    planted = planted_app(GROUPS[join], PARTITIONS, join)
    where = tmp_path_factory.mktemp(join)
    left = from_files(spark, write_topic(where / "orders.parquet", planted["left"]))
    right = from_files(spark, write_topic(where / "customers.parquet", planted["right"]))
    result = run_join(left, right, join, "left", window=WINDOW if join == "stream-stream" else None)
    if RECORDS:  # make why-audit-check: the times of the three computations, each once per run
        for name, compute in (
            ("explained_outputs", lambda: result.explained_outputs.count()),
            ("summary", lambda: result.summary().count()),
            ("partitioning_audit", lambda: result.partitioning_audit().count()),
        ):
            started = time.perf_counter()
            compute()
            records = len(planted["left"]) + len(planted["right"])
            print(f"\n{join}: {records} records, {name} {time.perf_counter() - started:.1f} s")
    return join, planted, result


def expected_reason(cause):
    verdict = APP_VERDICTS.get(cause, cause)
    return "matched" if verdict == "joined" else verdict


def test_every_result_of_a_planted_order_has_its_planted_cause_as_reason(app):
    join, planted, result = app
    rows = result.explained_outputs.collect()
    orders = {(r[3], r[4]): r for r in planted["left"]}
    by_value = {}
    for row in rows:
        by_value.setdefault(row["left"], []).append(row)
    checked = set()
    for where, cause in sorted(planted["causes"].items()):
        key, value = orders[where][:2]
        if cause == "null-value":
            assert not any(r["side"] == "left" and (r["partition"], r["offset"]) == where for r in rows)
            continue
        mine = by_value[value]
        assert [r["reason"] for r in mine] == [expected_reason(cause)], (where, cause, mine)
        checked.add(cause)
    assert checked == set(APP_CAUSES[join]) - {"null-value"}
    nulls = [r for r in rows if r["kind"] in ("unmatched", "window-closed")]
    assert nulls and all(r["left"] in by_value and r["reason"] != "unexplained" for r in nulls)


def test_the_audit_finds_every_misrouted_record_and_the_results_it_spoiled(app):
    join, planted, result = app
    audit = result.partitioning_audit().collect()
    misrouted = {(r["side"], r["partition"], r["offset"]): r for r in audit if r["problem"] == "misrouted"}
    assert set(misrouted) == set(planted["misrouted"]), "every misrouted record and nothing else"
    for where, (home, effect) in planted["misrouted"].items():
        row = misrouted[where]
        assert row["expected_partition"] == home
        spoiled = {"nulls": row["nulls"], "stale_joins": row["stale_joins"], "missed_deletes": row["missed_deletes"]}
        assert spoiled == {name: int(name == effect) for name in spoiled}, (where, effect, row)
    null_keys = [r for r in audit if r["problem"] == "null-key"]
    customers = {(r[3], r[4]): r for r in planted["right"]}
    lost = sorted(w for w, r in customers.items() if r[0] is None)
    assert sorted((r["partition"], r["offset"]) for r in null_keys) == lost
    assert all(r["side"] == "right" and r["nulls"] == 1 for r in null_keys)
    assert (join == "stream-table") == bool(lost)


def test_why_names_the_misrouted_record_first(app):
    join, planted, result = app
    orders = {(r[3], r[4]): r for r in planted["left"]}
    first = {}
    for where, cause in sorted(planted["causes"].items()):
        first.setdefault(cause, where)
    for cause, (partition, offset) in sorted(first.items()):
        diagnosis = result.why(partition=partition, offset=offset)
        assert diagnosis.verdict == APP_VERDICTS.get(cause, cause), (cause, diagnosis)
        spoiler = [w for w, (_, effect) in planted["misrouted"].items() if effect and orders[(partition, offset)][0]]
        if diagnosis.cause is not None and diagnosis.cause.misrouted:
            named = (diagnosis.cause.side, diagnosis.cause.partition, diagnosis.cause.offset)
            assert named in planted["misrouted"], (cause, named)
            assert diagnosis.partners[0] == diagnosis.cause or diagnosis.cause.side == "left"
        if APP_VERDICTS.get(cause, cause) in ("partner-other-partition", "joined-stale", "joined-deleted"):
            assert diagnosis.cause is not None and diagnosis.cause.misrouted, (cause, diagnosis)
            assert diagnosis.text.startswith("Not co-partitioned: "), diagnosis.text
        if cause == "partner-null-key":
            assert diagnosis.cause.value.startswith('{"id": ') and diagnosis.cause.partition == partition
        if cause == "partner-processed-later":
            blocker = diagnosis.blocker
            assert blocker is not None and blocker.value.startswith("blocker-") and blocker.partition == partition
            assert f"offset {blocker.offset}" in diagnosis.text and "written 55 ms out of order" in diagnosis.text
            assert "max.task.idle.ms" not in diagnosis.text, "the cause is a record written out of order"
        if cause == "outside-and-elsewhere":
            assert "5 s outside it" in diagnosis.text, diagnosis.text
            assert diagnosis.text.startswith("Two reasons: ") and diagnosis.cause.misrouted
        del spoiler


def test_the_summary_equals_the_explained_outputs_in_every_total(app):
    from pyspark.sql import functions as F

    join, planted, result = app
    explained = {r["reason"]: r["count"] for r in result.explained_outputs.groupBy("reason").count().collect()}
    summary = result.summary()
    counted = [c for c in summary.columns if c not in ("scenario", "partition", "key")]
    totals = summary.agg(*(F.sum(F.col(f"`{c}`")).alias(c) for c in counted)).first().asDict()
    for reason, count in explained.items():
        assert totals["tombstones" if reason == "tombstone" else reason] == count, reason
    reasons = set(explained) | {"tombstone"}
    results = {"null-results", "misrouted"} | {"tombstones" if r == "tombstone" else r for r in reasons}
    assert all(totals[c] == 0 for c in counted if c not in results and not c.startswith(("left-", "right-"))), totals
    per_reason = [
        c for c in counted if c not in ("null-results", "misrouted") and not c.startswith(("left-", "right-"))
    ]
    assert sum(totals[c] for c in per_reason) == sum(explained.values()), "the reason columns count every result"
    nulls = sum(c for r, c in explained.items() if r not in ("matched", "joined-stale", "joined-deleted", "tombstone"))
    assert totals["null-results"] == nulls
    assert totals["misrouted"] == len(planted["misrouted"])
    null_key_orders = sum(1 for r in planted["left"] if r[0] is None)
    assert totals["null-key"] == null_key_orders and totals.get("left-null-key", 0) == 0
    if join == "stream-table":
        assert totals["right-null-key"] == sum(1 for r in planted["right"] if r[0] is None)
        assert totals["left-null-value"] == sum(1 for c in planted["causes"].values() if c == "null-value")


def test_the_explained_outputs_summary_and_audit_are_computed_once_per_run(app):
    from pyspark import StorageLevel

    from kjoin.spark.keep import kept_level

    join, planted, result = app
    assert result.explained_outputs is result.explained_outputs
    assert result.summary() is result.summary() and result.partitioning_audit() is result.partitioning_audit()
    for frame in (result.explained_outputs, result.summary(), result.partitioning_audit(), result.results):
        assert kept_level(frame) == StorageLevel.DISK_ONLY, "kept on disk, not recomputed"


REOPEN = """
import json, sys
from kjoin.spark import local_session, open_run
spark = local_session()
run = open_run(sys.argv[1])
causes = {tuple(map(int, k.split(":"))): v for k, v in json.loads(sys.argv[2]).items()}
verdicts = {f"{p}:{o}": run.why(partition=p, offset=o).verdict for (p, o) in causes}
drill = run.trace(partition=0, key=sys.argv[3])
print(json.dumps({
    "outputs": run.outputs.count(),
    "reasons": {r["reason"]: r["count"] for r in run.explained_outputs.groupBy("reason").count().collect()},
    "steps": run.steps.count(),
    "summary": run.summary().count(),
    "verdicts": verdicts,
    "drill": [s.record.offset for s in drill.key_steps()],
    "task": len(run.trace(partition=1)),
}))
spark.stop()
"""


def test_a_run_written_with_its_index_reopens_in_a_new_process_without_its_topics(spark, tmp_path):
    import json
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    planted = planted_app(len(APP_CAUSES["stream-table"]), PARTITIONS, "stream-table")
    topics = tmp_path / "topics"
    topics.mkdir()
    left = from_files(spark, write_topic(topics / "orders.parquet", planted["left"]))
    right = from_files(spark, write_topic(topics / "customers.parquet", planted["right"]))
    result = run_join(left, right, "stream-table", "left")
    result.write_parquet(str(tmp_path / "out"), why_index=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "outputs",
        "run.json",
        "steps",
        "summary",
        "why-index",
    ]
    wanted = {
        f"{p}:{o}": APP_VERDICTS.get(c, c)
        for (p, o), c in planted["causes"].items()
        if c in ("joined-stale", "partner-null-key", "misrouted-order", "partner-processed-later")
    }
    key = next(r[0] for r in planted["left"] if r[3] == 0 and r[0] is not None)
    expected = {
        "outputs": result.outputs.count(),
        "reasons": {r["reason"]: r["count"] for r in result.explained_outputs.groupBy("reason").count().collect()},
        "steps": result.steps.count(),
        "summary": result.summary().count(),
        "verdicts": wanted,
        "drill": [s.record.offset for s in result.trace(partition=0, key=key).key_steps()],
        "task": len(result.trace(partition=1)),
    }
    shutil.rmtree(topics)  # nothing may be computed again: the topics are gone
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", REOPEN, str(tmp_path / "out"), json.dumps(wanted), key],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == expected


def test_an_opened_run_answers_from_what_was_written_given_whole_to_its_constructor():
    from kjoin.spark.io.topic import SparkInputError
    from kjoin.spark.result import OpenedRun, Written

    outputs, steps, summary = object(), object(), object()
    run = OpenedRun(None, {}, False, False, "processors", Written("/runs/a", outputs, steps, summary))
    assert run.path == "/runs/a" and run.written.why_index is None
    assert run.steps is steps and run.summary() is summary and run.explained_outputs is outputs
    with pytest.raises(SparkInputError, match="/runs/a has none: write the run with"):
        run.why_index()
    with pytest.raises(Exception, match="cannot assign|frozen"):
        run.written.path = "/elsewhere"  # type: ignore[misc]
