"""``run_topology(...).steps`` names every drop inside a node, as the reference engine's steps do: its ``dropped``
column (``per-hour: expired-window``) holds each node's drop of the record and why, also on a step whose ``fate`` is
``joined`` because a join before that node emitted, for every way a stage runs (the processors, the chain pass, the
re-key as arrays)."""

from __future__ import annotations

import pytest

import kjoin
from kjoin.spark import run_topology
from kjoin.spark.passes.stage_task import STEP_ORDER
from kjoin.topology.document import TopologyScenario
from kjoin.topology.runtime import run
from tests.topology_spark_check import spark_topics

pytestmark = pytest.mark.spark

HOUR_MS = 3_600_000


def _app() -> kjoin.Topology:
    """Orders without test accounts, re-keyed by customer, left-joined with customers; the joined orders of big
    customers only to ``enriched`` (a filter after the join), and all of them counted per customer in 1-hour windows
    with no grace."""
    b = kjoin.Topology(partitions=2)
    customers = b.table("customers")
    joined = (
        b.stream("orders")
        .filter(lambda key, value: not value.get("test"), name="real-orders")
        .select_key(lambda key, value: value.get("customer"), name="by-customer")
        .left_join(customers, lambda order, customer: {**order, "name": customer}, name="customers-join")
    )
    joined.filter(lambda key, value: value["n"] > 1, name="big-orders").to("enriched")
    (
        joined.group_by_key()
        .windowed_by({"size_ms": HOUR_MS, "grace_ms": 0})
        .count(name="per-hour")
        .to_stream()
        .to("orders-per-hour")
    )
    return b


EVENTS = [
    {"topic": "customers", "key": "c1", "value": "Ann", "ts": 1},
    {"topic": "customers", "key": "c2", "value": "Bob", "ts": 2},
    {"topic": "customers", "key": None, "value": "nobody", "ts": 3},
    {"topic": "orders", "key": "o1", "value": {"customer": "c1", "n": 2}, "ts": 2 * HOUR_MS},
    {"topic": "orders", "key": "o2", "value": {"customer": "c2", "n": 1}, "ts": 2 * HOUR_MS + 5},
    {"topic": "orders", "key": "o3", "value": {"customer": "c1", "n": 3, "test": True}, "ts": 2 * HOUR_MS + 9},
    {"topic": "orders", "key": "o4", "value": {"customer": None, "n": 2}, "ts": 2 * HOUR_MS + 11},
    {"topic": "orders", "key": "o5", "value": {"customer": "c1", "n": 5}, "ts": 3 * HOUR_MS + 1},
    # late: an hour and more behind its task's stream time, so its window has closed (grace 0)
    {"topic": "orders", "key": "o6", "value": {"customer": "c1", "n": 4}, "ts": HOUR_MS + 7},
    {"topic": "orders", "key": "o7", "value": {"customer": "c2", "n": 1}, "ts": 1},
]


@pytest.fixture(scope="module")
def expected():
    trace = run(_app(), EVENTS, schedule="stages")
    return [
        (s.task, s.record.topic, s.record.offset, s.fate.value, None if s.reason is None else s.reason.value,
         s.dropped or None)
        for s in trace.steps
        if s.task != "global"
    ]  # fmt: skip


@pytest.mark.parametrize("method", ["auto", "processors"])
def test_every_drop_inside_a_node_has_its_node_and_reason_in_the_steps(spark, expected, method) -> None:
    topology = _app()
    topics = spark_topics(spark, TopologyScenario(topology, tuple(EVENTS), "stages"), with_partitions=False)
    result = run_topology(spark, topology, topics, method=method)

    got = [tuple(row) for row in result.steps.orderBy(*STEP_ORDER)
           .select("task", "topic", "offset", "fate", "reason", "dropped").collect()]  # fmt: skip
    assert got == expected
    dropped = {row[5] for row in got if row[5]}
    # the planted drops, each at its node: the test account; the null-key order, repartitioned and joined (KIP-962)
    # and skipped by the count; the late order at the windowed count (its step joined), also dropped by the filter
    # after the join when small; the null-key table update
    assert dropped == {
        "real-orders: filtered",
        "per-hour: null-key",
        "per-hour: expired-window",
        "big-orders: filtered",
        "big-orders: filtered; per-hour: expired-window",
        "customers: null-key",
    }
    late = [row for row in got if "per-hour: expired-window" in (row[5] or "")]
    assert late and all(row[3] == "joined" and row[4] is None for row in late)
