"""Cogrouped streams on Spark: :func:`kjoin.spark.run_topology` writes and takes what the reference engine does,
record for record (the judged scenarios of tests/test_topology_cogroup.py, a few of them)."""

from __future__ import annotations

import pytest

from tests.test_topology_cogroup import _judged_scenarios
from tests.topology_spark_check import difference

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("index", [0, 3])
def test_a_cogroup_read_by_a_join_runs_on_spark_as_in_the_reference_engine(spark, index):
    assert difference(spark, _judged_scenarios()[index]) is None
