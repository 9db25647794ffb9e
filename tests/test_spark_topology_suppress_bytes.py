"""Suppressions bounded by bytes on Spark: :func:`kjoin.spark.run_topology` evicts early and stops on a full buffer
where the reference engine does (the judged documents of tests/test_topology_suppress_bytes.py), the application id
that names the repartition topic carried to the executors."""

from __future__ import annotations

import pytest

from kjoin.topology.document import TopologyScenario
from tests.test_topology_suppress_bytes import counts, sizes
from tests.topology_spark_check import difference

pytestmark = pytest.mark.spark

TOTAL = sizes("kjoin-topology-oracle-bycust-repartition")[-1]
CASES = {
    "emit-early-over": counts({"max_bytes": sizes("orders")[-1] - 1}),
    "repartitioned-application-id": counts({"max_bytes": sizes("app-bycust-repartition")[-1] - 1}, grouped="bycust",
                                           app="app"),
    "shut-down-over": counts({"max_bytes": TOTAL - 1, "when_full": "shut_down"}, grouped="bycust"),
}  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_a_byte_bound_runs_on_spark_as_in_the_reference_engine(spark, name):
    assert difference(spark, TopologyScenario.from_dict(CASES[name])) is None
