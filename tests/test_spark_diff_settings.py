"""SparkRun.diff of configuration settings: for each setting run_join takes, alone and with a change of
semantics, the Spark diff finds the same differences, charged to the same switches, as the reference engine's
``kjoin diff --set`` on the same records. The topics are small and seeded, over two partitions, with records out
of order and tombstones; left records have even timestamps and right ones odd, so no two heads tie (Spark breaks a
tie left first, the reference engine as Kafka does)."""

from __future__ import annotations

import os
import random

import pytest

from kjoin.diff import diff
from kjoin.scenario.builders import records_document
from kjoin.spark import Topic, run_join
from kjoin.spark.io.topic import SparkInputError

pytestmark = pytest.mark.spark

PARTITIONS = 2


def records(join: str, seed: int, count: int = 48) -> list[dict]:
    """Seeded records of ``join`` over 4 keys (key ``k<i>`` in partition ``i % 2``), some late, some null values."""
    draw = random.Random(seed)
    found, offsets = [], {}
    for index in range(count):
        side = "right" if draw.random() < (0.3 if join == "stream-table" else 0.5) else "left"
        number = draw.randrange(4)
        ts = 2 * (index * 3 + draw.randrange(-8, 3)) + 20 + (side == "right")
        value = None if draw.random() < 0.12 else f"{side[0].upper()}{index}"
        partition = number % PARTITIONS
        offset = offsets.get((side, partition), 0)
        offsets[(side, partition)] = offset + 1
        found.append(
            {
                "side": side,
                "key": f"k{number}",
                "value": value,
                "ts": ts,
                "partition": partition,
                "offset": offset,
            }
        )
    return found


def topic(spark, rows: list[dict], side: str) -> Topic:
    data = [(r["key"], r["value"], r["ts"], r["partition"], r["offset"]) for r in rows if r["side"] == side]
    frame = spark.createDataFrame(data, "key string, value string, ts long, partition int, offset long")
    return Topic(frame, PARTITIONS)


def comparable(found) -> set:
    return {
        (d.change, d.input.side.value, d.input.partition, d.input.offset, _text(d.before), _text(d.after), d.rules,
         d.with_rules, d.together)
        for d in found
    }  # fmt: skip


def _text(output):
    return None if output is None else (output["key"], output["value"], output["ts"], output["tombstone"])


MERGED = {"arrival": {"left": {"lag_ms": 0}}}
"""The reference engine merges the two topics by timestamp, as Spark does (a scenario's events are otherwise
processed in the order listed)."""

CASES = [
    # (join, variant, semantics, window, options, diff's arguments, reference --set, other semantics)
    pytest.param(
        "stream-stream", "left", "3.3", {"before_ms": 10, "after_ms": 10, "grace_ms": 12}, None,
        {"window": {"grace_ms": 0}}, {"window.grace_ms": 0}, None, id="window.grace_ms",
    ),
    pytest.param(
        "stream-stream", "outer", "3.3", {"before_ms": 10, "after_ms": 10, "grace_ms": 6}, None,
        {"window": {"before_ms": 4, "after_ms": 20}}, {"window.before_ms": 4, "window.after_ms": 20}, None,
        id="window.before_ms+after_ms",
    ),
    pytest.param(
        "stream-table", "left", "3.9", None, None,
        {"right_versioned": True, "right_history_retention_ms": 30},
        {"right.versioned": True, "right.history_retention_ms": 30}, None, id="right.versioned",
    ),
    pytest.param(
        "stream-table", "left", "3.9", None, {"right": {"versioned": True, "history_retention_ms": 60}},
        {"grace_ms": 8}, {"grace_ms": 8}, None, id="grace_ms",
    ),
    pytest.param(
        "table-table", "outer", "3.9", None, None,
        {"set": {"left.versioned": True, "left.history_retention_ms": 40}},
        {"left.versioned": True, "left.history_retention_ms": 40}, None, id="left.versioned",
    ),
    pytest.param(
        "stream-stream", "left", "3.0", {"before_ms": 10, "after_ms": 10, "grace_ms": 12}, None,
        {"window": {"grace_ms": 0}}, {"window.grace_ms": 0}, "3.1", id="3.0->3.1+window.grace_ms",
    ),
]  # fmt: skip


CI = ("window.grace_ms", "right.versioned", "3.0->3.1+window.grace_ms")
"""The cases CI runs (a Spark diff costs seconds); ``make diff-check`` (``KJOIN_DIFF_CHECK=all``) runs every one."""


@pytest.mark.parametrize(
    ("join", "variant", "first", "window", "options", "arguments", "settings", "second"),
    CASES if os.environ.get("KJOIN_DIFF_CHECK") == "all" else [case for case in CASES if case.id in CI],
)
def test_spark_settings_diff_equals_the_reference_engines(
    spark, join, variant, first, window, options, arguments, settings, second
) -> None:
    rows = records(join, seed=len(str(arguments)) + len(join))
    result = run_join(
        topic(spark, rows, "left"), topic(spark, rows, "right"), join, variant,
        semantics=first, window=window, options=options,
    )  # fmt: skip
    on_spark = result.diff(second, **arguments)
    document = {**records_document(join, variant, rows, first, window, PARTITIONS), **(options or {}), **MERGED}
    reference = diff(document, from_=first, to=second or first, set=settings)
    assert len(reference) > 0, "the planted records must change some output"
    assert {d.change for d in reference} <= {"added", "removed", "changed"}
    assert comparable(on_spark) == comparable(reference)
    assert on_spark.fallbacks is not None  # the paired pass compared them, in arrays or in Python
    assert on_spark.switches == reference.switches
    if second is not None:  # both switches are charged, each with what it alone changes
        assert {rule for d in reference for rule in d.rules} == set(reference.switches)
    counts = on_spark.counts()
    assert counts == {name: len(found) for name, found in reference.by_rule().items()}
    by_partition = {(r["partition"], r["change"]): r["count"] for r in on_spark.by_partition().collect()}
    expected: dict = {}
    for d in reference:
        expected[(d.input.partition, d.change)] = expected.get((d.input.partition, d.change), 0) + 1
    assert by_partition == expected


def test_the_settings_diff_writes_parquet_and_explains_both_sides(spark, tmp_path) -> None:
    rows = records("stream-stream", seed=3)
    window = {"before_ms": 10, "after_ms": 10, "grace_ms": 12}
    result = run_join(
        topic(spark, rows, "left"), topic(spark, rows, "right"), "stream-stream", "left", semantics="3.3", window=window
    )
    found = result.diff(window={"grace_ms": 0})
    found.write_parquet(str(tmp_path / "diff"))
    written = spark.read.parquet(str(tmp_path / "diff" / "differences"))
    assert written.count() == len(found) > 0
    assert {r["rule"] for r in spark.read.parquet(str(tmp_path / "diff" / "by_rule")).collect()} == {"window.grace_ms"}
    keys = {r["key"]: r["differences"] for r in spark.read.parquet(str(tmp_path / "diff" / "by_key")).collect()}
    assert sum(keys.values()) == len(found)
    (example,) = found.examples("window.grace_ms", n=1)
    assert example == found.collect()[0]
    why = found.why(example)
    assert why.before.record == why.after.record == example.input
    assert "3.3 window.grace_ms=0" in why.text and why.before.verdict and why.after.verdict


def test_the_settings_diff_names_what_it_cannot_compare(spark) -> None:
    rows = records("stream-stream", seed=3)
    result = run_join(
        topic(spark, rows, "left"), topic(spark, rows, "right"), "stream-stream", "left", semantics="3.3", window=5
    )
    with pytest.raises(SparkInputError, match="did you mean window.grace_ms"):
        result.diff(set={"window.grace": 3})
    with pytest.raises(SparkInputError, match="does not compare a lagging side on Spark yet"):
        result.diff(arrival={"right": {"lag_ms": 2000}})
    with pytest.raises(SparkInputError, match="not a setting diff compares"):
        result.diff(grace=3)
    with pytest.raises(SparkInputError, match="nothing to compare"):
        result.diff()


@pytest.mark.parametrize("chunk_rows", [1, 5])
def test_the_paired_pass_compares_chunk_by_chunk_as_the_joins_go(spark, chunk_rows) -> None:
    """The paired pass streams (:mod:`kjoin.spark.passes.paired`): with Arrow batches of 3 records and chunks of a
    few outputs, each task's records are compared in many chunks as both joins go on, and the differences are the
    reference engine's all the same (3.0 -> 3.1 and a shorter grace: held results move across chunks)."""
    from kjoin.spark.passes.paired import CHUNK_CONF

    rows = records("stream-stream", seed=11, count=90)
    window = {"before_ms": 10, "after_ms": 10, "grace_ms": 12}
    batch = "spark.sql.execution.arrow.maxRecordsPerBatch"
    previous = spark.conf.get(batch)
    spark.conf.set(batch, "3")
    spark.conf.set(CHUNK_CONF, str(chunk_rows))
    try:
        result = run_join(
            topic(spark, rows, "left"), topic(spark, rows, "right"), "stream-stream", "left", semantics="3.0",
            window=window,
        )  # fmt: skip
        on_spark = result.diff("3.1", window={"grace_ms": 0})
        found = comparable(on_spark)
    finally:
        spark.conf.set(batch, previous)
        spark.conf.unset(CHUNK_CONF)
    document = {**records_document("stream-stream", "left", rows, "3.0", window, PARTITIONS), **MERGED}
    reference = diff(document, from_="3.0", to="3.1", set={"window.grace_ms": 0})
    assert len(reference) > 20
    assert found == comparable(reference)
    assert on_spark.fallbacks is not None


def test_a_bad_chunk_setting_is_named(spark) -> None:
    from kjoin.spark.passes.paired import CHUNK_CONF

    rows = records("stream-stream", seed=3)
    result = run_join(topic(spark, rows, "left"), topic(spark, rows, "right"), "stream-stream", "left", window=5)
    spark.conf.set(CHUNK_CONF, "many")
    try:
        with pytest.raises(SparkInputError, match="spark.kjoin.diff.chunkRows='many'"):
            result.diff(window={"grace_ms": 2})
    finally:
        spark.conf.unset(CHUNK_CONF)


def test_a_lagging_run_is_diffed_by_joining_twice(spark) -> None:
    """A run with an arrival lag orders each task its own way, so it has no paired pass: the diff joins the topics
    again and compares both runs' outputs grouped per input record (the other path of
    :mod:`kjoin.spark.debug.diff`), with the same differences, charged to the same switches."""
    rows = records("stream-stream", seed=5, count=60)
    window = {"before_ms": 10, "after_ms": 10, "grace_ms": 12}
    arrival = {"right": {"lag_ms": 7}}
    result = run_join(
        topic(spark, rows, "left"), topic(spark, rows, "right"), "stream-stream", "left", semantics="3.0",
        window=window, arrival=arrival,
    )  # fmt: skip
    on_spark = result.diff("3.1", window={"grace_ms": 0})
    assert on_spark.fallbacks is None  # not the paired pass
    document = {**records_document("stream-stream", "left", rows, "3.0", window, PARTITIONS), "arrival": arrival}
    reference = diff(document, from_="3.0", to="3.1", set={"window.grace_ms": 0})
    assert len(reference) > 0 and len({d.rules for d in reference}) > 1
    assert comparable(on_spark) == comparable(reference)
