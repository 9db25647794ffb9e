"""SparkRun.diff: the same topics joined again under other semantics, with the same differences and the same rules
charged as the reference engine's kjoin diff (the scenario read with arrival lags 0: Spark's processing order)."""

from __future__ import annotations

import pytest

from kjoin.diff import diff
from kjoin.spark import Topic, run_join, run_scenarios
from kjoin.spark.io.topic import SparkInputError

from .test_diff import _seed_004, ev

pytestmark = pytest.mark.spark

LATE = {
    "join": "stream-stream",
    "variant": "left",
    "window": {"before_ms": 2, "after_ms": 0, "grace_ms": 1},
    "events": [
        ev("left", "k", None, 16),
        ev("left", "k", "L4", 9),
        ev("left", None, "N", 17),
        ev("left", "k", "L5", 40),
        ev("right", "k", "R", 41),
    ],
}
"""3.6 to 3.7: the skipped null value @16 moves stream time (L4@9 is late at once), and the null key N is joined."""


def topic(spark, document: dict, side: str) -> Topic:
    events = [e for e in document["events"] if e["side"] == side]
    rows = [(e["key"], e["value"], e["ts"], 0, offset) for offset, e in enumerate(events)]
    return Topic(spark.createDataFrame(rows, "key string, value string, ts long, partition int, offset long"), 1)


def comparable(result) -> set:
    return {
        (d.change, d.input.side.value, d.input.offset, d.step, _text(d.before), _text(d.after), d.rules) for d in result
    }


def _text(output):
    return None if output is None else (output["key"], output["value"], output["ts"], output["tombstone"])


@pytest.mark.parametrize(
    ("document", "first", "second", "rules"),
    [
        (_seed_004("outerJoin"), "3.0", "3.1", {("spurious_result_fix",)}),
        (LATE, "3.6", "3.7", {("skipped_records_advance_stream_time",), ("relaxed_null_keys",)}),
    ],
)
def test_spark_diff_equals_the_reference_engines(spark, document, first, second, rules) -> None:
    result = run_join(
        topic(spark, document, "left"),
        topic(spark, document, "right"),
        document["join"],
        document["variant"],
        semantics=first,
        window=document["window"],
    )
    on_spark = result.diff(semantics=second)
    reference = diff({**document, "arrival": {"left": {"lag_ms": 0}}}, from_=first, to=second)
    assert len(reference) > 0 and {d.rules for d in reference} == rules
    assert comparable(on_spark) == comparable(reference)
    assert on_spark.switches == reference.switches


def test_spark_diff_needs_a_run_join_result(spark) -> None:
    from kjoin import Scenario

    scenario = Scenario.from_dict({**LATE, "semantics": "3.6"})
    with pytest.raises(SparkInputError, match="only a run_join result"):
        run_scenarios(spark, [scenario]).diff("3.7")


def test_a_diff_freed_by_unpersist_is_built_again_when_read(spark) -> None:
    """On a local master the diff's frames are local checkpoints (:mod:`kjoin.spark.keep`), which cannot be read
    once freed: ``unpersist`` frees their blocks, and the next read builds the differences anew."""
    from pyspark import StorageLevel

    from kjoin.spark.keep import kept_level, local_master

    document = _seed_004("outerJoin")
    result = run_join(
        topic(spark, document, "left"),
        topic(spark, document, "right"),
        document["join"],
        document["variant"],
        semantics="3.0",
        window=document["window"],
    )
    found = result.diff(semantics="3.1")
    before = sorted(map(tuple, found.differences.collect()))
    kept = list(found._kept)
    assert local_master(spark) and kept and all(kept_level(frame) == StorageLevel.DISK_ONLY for frame in kept)
    persistent = spark.sparkContext._jsc.sc().getPersistentRDDs().size()
    found.unpersist()
    assert spark.sparkContext._jsc.sc().getPersistentRDDs().size() == persistent - len(kept)
    with pytest.raises(Exception, match="CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND"):
        kept[0].collect()  # freed: what unpersist is for
    assert sorted(map(tuple, found.differences.collect())) == before
