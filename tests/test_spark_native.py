"""The native Spark SQL path (:mod:`kjoin.spark.passes.native`) and the vectorised per-task pass
(:mod:`kjoin.spark.passes.vectorised`) agree with the reference engine.

Hundreds of random scenarios per join (every variant, the eras of every rule boundary:
0.10.0, 0.10.2, 2.0, 2.3, 3.1, 3.7, latest; several partitions, null keys, tombstones, and
values of every JSON kind, including strings that need escaping) run with
``method="native"`` through :func:`run_scenarios` and must equal the reference engine,
output for output and step for step, within every Kafka task.

The native frames are compared after an explicit ``orderBy("scenario", "partition",
"step")``: in these joins every input record gives exactly one result row (an output or a
step), so ``step`` orders a task's rows as the processors emit them. (``run_scenarios``
also sorts each Spark partition by step, which the ``auto`` test relies on.)
"""

from __future__ import annotations

import random
import re

import pytest

from kjoin import Scenario
from kjoin.spark import SparkInputError, Topic, run_join, run_scenarios
from kjoin.spark.passes.vectorised_versioned import is_versioned
from tests.spark_compare import assert_same, combos, random_batch, small_arrow_batches, spark_rows

pytestmark = pytest.mark.spark

ERAS = ["0.10.0", "0.10.2", "2.0", "2.3", "3.1", "3.7", "latest"]
VALUES = ["A", 'q"uote', "back\\slash", "caf\u00e9 \U0001f600", "", 7, -2.5, True, {"b": 1, "a": [1, "x"]}, [None, 2]]


def _varied(seed: int, join: str, size: int) -> list[Scenario]:
    """About ``size`` ``random_batch`` scenarios, re-drawn over more eras, with odd values in some."""
    rng = random.Random(seed)
    batch = []
    for scenario in random_batch(seed, join, max(1, size // len(combos(join)))):
        data = scenario.to_dict()
        era = rng.choice(ERAS)
        if join == "stream-table" and data["variant"] == "inner" and era == "0.10.0":
            era = "0.10.2"
        data["semantics"] = era
        if rng.random() < 0.3:
            for event in data["events"]:
                if event["value"] is not None:
                    event["value"] = rng.choice(VALUES)
        batch.append(Scenario.from_dict(data))
    return batch


def _native_rows(result) -> tuple[list[tuple], list[tuple]]:
    order = ("scenario", "partition", "step")
    return spark_rows(result.outputs.orderBy(*order)), spark_rows(result.steps.orderBy(*order))


@pytest.mark.parametrize("join", ["stream-table", "table-table"])
def test_native_joins_equal_the_reference_engine(spark, join):
    batch = _varied(20260 + len(join), join, 300)
    assert {s.variant for s in batch} == set(
        ("inner", "left") if join == "stream-table" else ("inner", "left", "outer")
    )
    result = run_scenarios(spark, batch, method="native")
    outputs, steps = _native_rows(result)
    assert outputs and steps
    assert_same(batch, outputs, steps)


@pytest.mark.parametrize("join", ["stream-table", "table-table"])
@pytest.mark.parametrize("rows", [3, 10_000])
def test_vectorised_joins_equal_the_reference_engine(spark, join, rows):
    """The vectorised pass (:mod:`kjoin.spark.passes.vectorised`) on the same varied batches, with Arrow batches of 3
    records (every task spans batches: its stores and step count carry over) and of 10^4 (many tasks per batch)."""
    batch = _varied(20270 + len(join), join, 300)
    with small_arrow_batches(spark, rows):
        result = run_scenarios(spark, batch, method="vectorised")
        assert result.method == "vectorised"
        outputs, steps = spark_rows(result.outputs), spark_rows(result.steps)  # emission order, no sort
    assert outputs and steps
    assert_same(batch, outputs, steps)


def test_every_path_has_the_same_schema_and_auto_runs_small_tasks_on_the_processors(spark):
    batch = _varied(5, "table-table", 15)
    native = run_scenarios(spark, batch, method="native")
    processors = run_scenarios(spark, batch, method="processors")
    assert native.method == "native" and processors.method == "processors"
    assert native.results.schema.simpleString() == processors.results.schema.simpleString()
    vectorised = run_scenarios(spark, batch, method="vectorised")  # rows in emission order per task, unsorted
    assert vectorised.results.schema.simpleString() == processors.results.schema.simpleString()
    assert_same(batch, spark_rows(vectorised.outputs), spark_rows(vectorised.steps))
    assert run_scenarios(spark, batch).method == "processors"  # auto: tasks of a few records, the processors win


def test_auto_picks_the_vectorised_pass_for_large_tasks(spark):
    """Tasks of 300 records or more (AUTO_MIN_RECORDS_PER_TASK is 200): ``auto`` runs the vectorised pass."""
    events = [
        {"side": "right" if i % 3 == 0 else "left", "key": f"k{i % 17}", "value": f"v{i}", "ts": i} for i in range(300)
    ]
    scenario = Scenario.from_dict({"join": "stream-table", "variant": "left", "events": events})
    auto = run_scenarios(spark, [scenario])
    assert auto.method == "vectorised"
    assert_same([scenario], spark_rows(auto.outputs), spark_rows(auto.steps))


def test_processors_still_equal_the_reference_engine_on_native_joins(spark):
    """``auto`` now runs these joins natively: keep the processor path checked on them too."""
    batch = _varied(11, "stream-table", 20) + _varied(12, "table-table", 20)
    result = run_scenarios(spark, batch, method="processors")
    assert_same(batch, spark_rows(result.outputs), spark_rows(result.steps))


@pytest.mark.parametrize(
    "scenario, joiner, named",
    [
        (
            Scenario.from_notation(
                "stream-stream",
                "left",
                left="1:A",
                right="2:a",
                window={"before_ms": 5, "after_ms": 5, "grace_ms": 0},
                semantics="0.10.0",
            ),
            None,
            "stream-stream join",
        ),
        (
            Scenario.from_dict(
                {
                    "join": "stream-table",
                    "variant": "left",
                    "right": {"versioned": True, "history_retention_ms": 10},
                    "events": [{"side": "left", "key": "k", "value": "A", "ts": 1}],
                }
            ),
            None,
            "versioned table",
        ),
        (
            Scenario.from_notation("table-table", "outer", left="1:A", right="2:a"),
            lambda left, right: f"{left}+{right}",
            "custom joiner",
        ),
        (
            Scenario.from_dict(
                {
                    "join": "table-table",
                    "variant": "inner",
                    "events": [{"side": "left", "key": 1.5, "value": "A", "ts": 1}],
                }
            ),
            None,
            "events[0].key",
        ),
    ],
)
def test_native_refuses_what_it_cannot_run_exactly_and_auto_falls_back(spark, scenario, joiner, named):
    with pytest.raises(SparkInputError, match=re.escape(named)):
        run_scenarios(spark, [scenario], joiner=joiner, method="native")
    if is_versioned(scenario):  # the versioned pass runs it (tests/test_spark_vectorised_versioned.py)
        assert run_scenarios(spark, [scenario], joiner=joiner, method="vectorised").method == "vectorised"
    else:
        with pytest.raises(SparkInputError, match=re.escape(named)):
            run_scenarios(spark, [scenario], joiner=joiner, method="vectorised")
    auto = run_scenarios(spark, [scenario], joiner=joiner)
    assert auto.method == "processors"
    expected = [row for row in spark_rows(run_scenarios(spark, [scenario], joiner=joiner, method="processors").outputs)]
    assert spark_rows(auto.outputs) == expected


def test_kip_557s_releases_run_on_the_processors_which_drop_idempotent_table_updates(spark):
    """Kafka 2.6.0, 2.6.1 and 2.7.0 drop a source table's idempotent update (KIP-557): the native plan and the
    vectorised pass refuse them, and auto runs the processors, which equal the reference engine step for step."""
    events = [("left", "k", "A", 1), ("left", "k", "A", 5), ("right", "k", "a", 3), ("right", "j", None, 4)]
    batch = [
        Scenario.from_dict(
            {
                "join": join,
                "variant": "left",
                "semantics": "2.6.1",
                "events": [{"side": side, "key": key, "value": value, "ts": ts} for side, key, value, ts in events],
            }
        )
        for join in ("table-table", "stream-table")
    ]
    for method in ("native", "vectorised"):
        with pytest.raises(SparkInputError, match=re.escape("drop idempotent updates (KIP-557")):
            run_scenarios(spark, batch, method=method)
    auto = run_scenarios(spark, batch)
    assert auto.method == "processors"
    outputs, steps = _native_rows(auto)
    assert_same(batch, outputs, steps)
    assert sum("idempotent-update" in row for row in steps) >= 3  # A@5 twice (both joins), j's absent delete


def test_an_unknown_method_is_refused_and_no_scenarios_give_empty_frames(spark):
    with pytest.raises(
        SparkInputError, match=re.escape("method: expected one of auto | vectorised | native | processors")
    ):
        run_scenarios(spark, [], method="fast")
    empty = run_scenarios(spark, [], method="native")
    assert empty.results.count() == 0
    assert (
        empty.results.schema.simpleString()
        == run_scenarios(spark, [], method="processors").results.schema.simpleString()
    )


@pytest.mark.parametrize(
    "join, variant, value_type", [("stream-table", "left", "string"), ("table-table", "outer", "bigint")]
)
def test_run_join_native_equals_processors_on_topics(spark, join, variant, value_type):
    """Topics (no ``position``): the native path numbers steps with ``row_number`` in Kafka's
    processing order (running max ts, left first on ties, offsets); it must match the
    processors row for row, on out-of-order timestamps over three partitions."""
    rng = random.Random(len(join) + len(variant))
    topics = []
    for side in ("left", "right"):
        rows = []
        for partition in range(3):
            for offset in range(rng.randint(150, 250)):
                key = None if rng.random() < 0.03 else f"k{rng.randint(0, 15)}"
                value = (
                    None
                    if rng.random() < 0.15
                    else (rng.randint(0, 99) if value_type == "bigint" else f"{side[0]}{rng.randint(0, 99)}")
                )
                rows.append((key, value, rng.randint(0, 400), partition, offset))
        frame = spark.createDataFrame(rows, f"key string, value {value_type}, ts long, partition int, offset long")
        topics.append(Topic(frame, partitions=3))
    order = ("partition", "step")
    native = run_join(*topics, join, variant, method="native").results.orderBy(*order).collect()
    processors = run_join(*topics, join, variant, method="processors").results.orderBy(*order).collect()
    assert len(native) == sum(t.frame.count() for t in topics)
    assert native == processors
    with small_arrow_batches(spark, 13):  # every task spans many Arrow batches: the stores carry over
        vectorised = run_join(*topics, join, variant, method="vectorised")
        assert vectorised.method == "vectorised"
        assert vectorised.results.orderBy(*order).collect() == processors
