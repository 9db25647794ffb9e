"""A whole app's run on Spark debugs like a join run: its verdicts, summary and audit are the reference engine's,
and ``write_parquet`` writes a run ``open_run`` reopens and answers ``why`` from without Spark."""

from __future__ import annotations

import pytest

from kjoin.spark import from_files, from_kcat, open_run, run_topology
from tests.app_planted import PARTITIONS, VERDICT_OF, app, planted, write_dumps

ORDERS = 200


@pytest.fixture(scope="module")
def spark_run(spark, tmp_path_factory):
    topics = planted(ORDERS)
    paths = write_dumps(topics, tmp_path_factory.mktemp("dumps"))
    frames = {
        "orders": from_kcat(spark, paths["orders"], value="json", partitions=PARTITIONS),
        "customers": from_kcat(spark, paths["customers"], value="json", partitions=PARTITIONS),
        "products": from_files(spark, paths["products"], partitions=PARTITIONS),
    }
    return topics, run_topology(spark, app(), frames)


def test_the_audit_needs_no_whole_app_run(spark_run) -> None:
    run = spark_run[1]
    audited = run.audit()  # first: read from the co-partitioned input topics alone
    assert run._app_debug is None, "the audit ran the whole app through the reference engine"
    assert audited.equals(run.debug().audit())


def test_the_verdicts_are_those_of_the_run_spark_computed(spark_run) -> None:
    topics, run = spark_run
    debug = run.debug()
    spark_outputs = sorted(tuple(row) for row in run.collect("outputs"))
    traced = sorted(
        (r.topic, r.partition, r.offset, _shown(r.key), _shown(r.value), r.ts) for r in debug.trace.outputs()
    )
    assert spark_outputs == traced
    explained = run.explained_outputs()
    assert run.summary()["count"].sum() == len(explained)
    for cause, (node, verdict) in VERDICT_OF.items():
        key = next(key for key, planted_cause in topics.causes.items() if planted_cause == cause)
        event = next(r for r in debug.trace.events if r.topic == "orders" and r.key == key)
        story = run.explain("orders", event.partition, event.offset)
        assert story.cause is not None and (story.cause.node, story.cause.verdict) == (node, verdict), str(story)
    late = {key for key, cause in topics.causes.items() if cause == "late-in-window"}
    drops = run.drops()
    named = drops[drops["dropped"] == "per-hour: expired-window"]
    assert len(named) == len(late) and set(named["fate"]) == {"joined"}
    audited = run.audit()
    assert set(zip(audited["topic"], audited["partition"], audited["offset"])) == topics.misrouted


def test_write_parquet_then_open_run_answers_why_without_running_again(spark_run, tmp_path) -> None:
    topics, run = spark_run
    run.write_parquet(str(tmp_path / "run"))
    opened = open_run(str(tmp_path / "run"))
    assert opened.summary().equals(run.summary())
    key = next(key for key, cause in topics.causes.items() if cause == "tombstone")
    event = next(r for r in run.debug().trace.events if r.topic == "orders" and r.key == key)
    lines = opened.why("orders", event.partition, event.offset)
    assert lines == run.explain("orders", event.partition, event.offset).lines()
    assert any("partner-deleted" in line for line in lines)


def _shown(value):
    from kjoin.records import render_value

    return None if value is None else render_value(value)
