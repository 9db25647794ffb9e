"""The Spark engine agrees with the reference engine, record for record.

Each hypothesis example is a *batch* of random scenarios (any variant and era, several
partitions, out-of-order timestamps, null keys, tombstones) run as one Spark job, each
scenario its own group; outputs and steps must equal the reference engine's, in the same
order within every Kafka task.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kjoin import Scenario
from kjoin.spark import run_scenarios
from tests.spark_compare import assert_same, random_batch, spark_rows

pytestmark = pytest.mark.spark

BATCH = 120
SETTINGS = settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate], database=None)




def _check(spark, batch: list[Scenario]) -> None:
    result = run_scenarios(spark, batch)
    assert_same(batch, spark_rows(result.outputs), spark_rows(result.steps))


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_stream_stream_joins_on_spark_equal_the_reference_engine(spark, seed):
    _check(spark, random_batch(seed, "stream-stream", BATCH))


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_stream_table_joins_on_spark_equal_the_reference_engine(spark, seed):
    _check(spark, random_batch(seed, "stream-table", BATCH))


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_table_table_joins_on_spark_equal_the_reference_engine(spark, seed):
    _check(spark, random_batch(seed, "table-table", BATCH))


def test_the_comparison_catches_a_wrong_output(spark):
    """The differential check is not vacuous: a tampered Spark row is reported."""
    scenario = Scenario.from_notation("stream-table", "left", left="2:A", right="1:a")
    result = run_scenarios(spark, [scenario])
    outputs = spark_rows(result.outputs)
    assert [row[8] for row in outputs] == ["A-a"]
    tampered = [outputs[0][:8] + ("A-b",) + outputs[0][9:]]
    with pytest.raises(AssertionError, match="outputs differ"):
        assert_same([scenario], tampered, spark_rows(result.steps))
