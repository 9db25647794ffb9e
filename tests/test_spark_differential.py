"""The Spark engine agrees with the reference engine, record for record.

For every join type (stream-stream, stream-table, table-table, stream-table over a versioned
table with and without grace, table-table over versioned tables in every mode, foreign-key)
a hypothesis example is a *batch*: ``PER_COMBO`` random scenarios for every combination of
variant and era (and grace, versioned mode) of that type, with several partitions,
out-of-order timestamps, null keys and tombstones; foreign-key scenarios also draw their
delivery (immediate, explicit ``deliver`` events, seeded random) and versioned tables. A
batch runs as one Spark job, every scenario its own group(s); outputs and steps must equal
the reference engine's, in the same order within every Kafka task (for a foreign-key
scenario: within every partition of the whole scenario's trace).

Each run draws new seeds, so every CI run checks new scenarios. ``KJOIN_SPARK_PER_COMBO``
overrides the batch size (the default keeps the suite within about three minutes on a
2-core machine).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kjoin import Scenario
from kjoin.spark import run_scenarios
from tests.spark_compare import (
    KINDS,
    assert_same,
    combo_counts,
    combos,
    random_batch,
    small_arrow_batches,
    spark_results,
    spark_rows,
)

pytestmark = pytest.mark.spark

PER_COMBO = int(os.environ.get("KJOIN_SPARK_PER_COMBO", "200"))
"""Random scenarios per (join type, variant, era …) combination in each run."""
EXAMPLES = 2
"""Hypothesis examples per join type, each a batch of ``PER_COMBO / EXAMPLES`` scenarios per
combination. Hypothesis's first example is its simplest (seed 0: the same batch every
run, a fixed regression set); the others are fresh random seeds."""
METHODS = {
    "stream-stream": ("vectorised", "processors"),
    "stream-table": ("vectorised", "native", "processors"),
    "table-table": ("vectorised", "native", "processors"),
    "versioned-stream-table": ("vectorised", "processors"),
    "versioned-table-table": ("vectorised", "processors"),
}
"""Unversioned stream-table and table-table joins have three Spark paths: the vectorised
per-task pass (:mod:`kjoin.spark.passes.vectorised`, what ``auto`` picks; run here with Arrow batches
of 7 records, so tasks span batches), the native window-function plan
(:mod:`kjoin.spark.passes.native`) and kjoin's processors per task; all three are checked.
Stream-stream joins have two: the vectorised pass (:mod:`kjoin.spark.passes.vectorised_stream`, every
era from 0.10.2, so the batch's 0.10.0 scenarios are left out of that run) and the processors.
Joins over versioned tables have two: the per-task pass (:mod:`kjoin.spark.passes.vectorised_versioned`, every
variant, era, grace and versioned mode) and the processors. Foreign-key joins have only the processors
(``auto``)."""
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
    database=None,
)


@pytest.mark.parametrize("kind", KINDS)
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_joins_on_spark_equal_the_reference_engine(spark, kind, seed):
    from kjoin.spark.passes import vectorised_stream

    coalesce = vectorised_stream.COALESCE_ROWS
    vectorised_stream.COALESCE_ROWS = 1  # every Arrow batch of 7 records a pass of its own (no fixture: hypothesis)
    try:
        per_combo = max(1, PER_COMBO // EXAMPLES)
        batch = random_batch(seed, kind, per_combo)
        counts = combo_counts(batch)
        print(f"{kind}: {len(batch)} scenarios (seed {seed}), per variant × era: {dict(sorted(counts.items()))}")
        assert len(counts) == len(combos(kind)) and set(counts.values()) == {per_combo}
        for method in METHODS.get(kind, ("auto",)):
            scenarios = batch
            if method == "vectorised":
                scenarios = [s for s in batch if s.join != "stream-stream" or s.semantics.kip77]
                with small_arrow_batches(spark):
                    result = run_scenarios(spark, scenarios, method=method)
                    assert result.method == "vectorised"
                    outputs, steps = spark_results(result)
            else:
                outputs, steps = spark_results(run_scenarios(spark, batch, method=method))
            assert outputs and steps, "a batch this size must produce outputs and non-joined steps"
            assert_same(scenarios, outputs, steps)
    finally:
        vectorised_stream.COALESCE_ROWS = coalesce


def test_the_comparison_catches_a_wrong_output(spark):
    """The differential check is not vacuous: a tampered Spark row is reported."""
    scenario = Scenario.from_notation("stream-table", "left", left="2:A", right="1:a")
    result = run_scenarios(spark, [scenario])
    outputs = spark_rows(result.outputs)
    assert [row[8] for row in outputs] == ["A-a"]
    tampered = [outputs[0][:8] + ("A-b",) + outputs[0][9:]]
    with pytest.raises(AssertionError, match="outputs differ"):
        assert_same([scenario], tampered, spark_rows(result.steps))


def test_the_comparison_catches_a_wrong_order(spark):
    """Order within a task is compared, not only the set of rows."""
    scenario = Scenario.from_dict(
        {
            "join": "stream-stream",
            "variant": "inner",
            "window": {"before_ms": 10, "after_ms": 10, "grace_ms": 0},
            "events": [
                {"side": "left", "key": "k", "value": "A", "ts": 1},
                {"side": "left", "key": "k", "value": "B", "ts": 2},
                {"side": "right", "key": "k", "value": "a", "ts": 3},
            ],
        }
    )
    outputs, steps = spark_results(run_scenarios(spark, [scenario]))
    assert [row[8] for row in outputs] == ["A-a", "B-a"]
    with pytest.raises(AssertionError, match="outputs differ"):
        assert_same([scenario], outputs[::-1], steps)


def test_a_foreign_key_scenario_runs_whole_and_its_trace_is_the_scenarios(spark):
    """An FK scenario over three partitions: Spark's rows equal the reference engine's, and
    the drill-down trace (whole scenario) gives the same outputs."""
    scenario = Scenario.from_dict(
        {
            "join": "fk",
            "variant": "left",
            "foreign_key": "fk",
            "partitions": 3,
            "delivery": "explicit",
            "events": [
                {"side": "right", "key": "Y", "value": "y", "ts": 1},
                {"side": "left", "key": "A", "value": {"fk": "Y"}, "ts": 2},
                {"deliver": "subscription"},
                {"side": "left", "key": "B", "value": {"fk": "Z"}, "ts": 3},
                {"deliver": "all"},
                {"side": "right", "key": "Y", "value": None, "ts": 4},
            ],
        }
    )
    pk = Scenario.from_notation("stream-table", "left", left="2:A", right="1:a")
    result = run_scenarios(spark, [pk, scenario])
    outputs, steps = spark_results(result)
    assert_same([pk, scenario], outputs, steps)
    assert {row[0] for row in outputs} == {0, 1}
    trace = result.trace(partition=0, scenario=1)
    fk_rows = [row for row in outputs if row[0] == 1]
    assert sorted((s.index, o.value) for s in trace.steps for o in s.outputs) == sorted(
        (row[2], row[8]) for row in fk_rows
    )
    assert any(step.message is not None for step in trace.steps)
