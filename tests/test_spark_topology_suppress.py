"""Suppressions, emit-final aggregates and joins of windowed tables on Spark: :func:`kjoin.spark.run_topology`
writes and takes what the reference engine does, record for record (the judged scenarios of
tests/test_topology_suppress.py and tests/test_topology_windowed_tables.py, a few of each)."""

from __future__ import annotations

import random

import pytest

from tests.test_topology_suppressed_lookup import _random
from tests.test_topology_suppress import SUPPRESSIONS, WINDOWS, final_results_join, plain_time_limit, windowed
from tests.test_topology_windowed_tables import WINDOWS as WINDOWED_JOIN_WINDOWS
from tests.test_topology_windowed_tables import windowed_join
from tests.topology_spark_check import difference

pytestmark = pytest.mark.spark

CASES = {
    "window-closes-session": windowed(WINDOWS[2], 1, suppress=SUPPRESSIONS[0]),
    "window-closes-hopping-bounded": windowed(WINDOWS[1], 2, suppress=SUPPRESSIONS[1]),
    "time-limit-emit-early": windowed(WINDOWS[0], 1, suppress=SUPPRESSIONS[4]),
    "time-limit-plain": plain_time_limit(SUPPRESSIONS[3], 5),
    "emit-final-sliding": windowed(WINDOWS[3], 3, emit=True),
    "emit-final-tumbling": windowed(WINDOWS[0], 4, emit=True),
    "final-results-join": final_results_join(2),
    "windowed-tables-outer-join": windowed_join(WINDOWED_JOIN_WINDOWS["session"], "outer_join", 1),
}


@pytest.mark.parametrize("name", CASES)
def test_suppressions_and_windowed_joins_run_on_spark_as_in_the_reference_engine(spark, name):
    assert difference(spark, CASES[name]) is None


def test_a_stream_join_of_a_time_limit_suppression_runs_on_spark_as_in_the_reference_engine(spark):
    rng = random.Random(44)
    for case in [_random(rng) for _ in range(3)]:
        assert difference(spark, case) is None
