"""A whole app with lagging input partitions (:func:`kjoin.topology.arrival.lagged_run`): with no lag it is the
``stages`` schedule record for record; a lag longer than the run's span has the partition's records taken after every
other record of their task; a lag of part of the span lets in the rows that arrive before the lookups."""

from __future__ import annotations

import pytest

from kjoin.spark.debug.topology_why import numbered_events
from kjoin.topology.arrival import lagged_run, partition_lags
from kjoin.topology.events import input_records
from kjoin.topology.graph import TopologyError
from kjoin.topology.runtime import run_records
from tests.app_planted import HOUR_MS, app, planted


@pytest.fixture(scope="module")
def records():
    topology = app().build()
    return topology, numbered_events(topology, input_records(topology.graph, planted(200).events))


def _outputs(trace):
    return [(r.topic, r.partition, r.offset, r.key, repr(r.value), r.ts) for r in trace.outputs()]


def _names(trace, partition):
    """Per order of ``enriched-orders`` partition ``partition`` (its customer, timestamp and product): the customer
    name it was joined with."""
    return {
        (r.key, r.ts, r.value["product"]): r.value["name"]
        for r in trace.outputs("enriched-orders")
        if r.partition == partition
    }


def test_no_lag_is_the_stages_schedule(records) -> None:
    topology, inputs = records
    base = run_records(topology, inputs, "stages")
    lagged = lagged_run(topology, inputs, {})
    assert _outputs(lagged) == _outputs(base)
    assert [(s.task, s.record.topic, s.record.offset, s.fate) for s in lagged.steps] == [
        (s.task, s.record.topic, s.record.offset, s.fate) for s in base.steps
    ]


def test_a_lag_past_the_span_has_the_partitions_rows_found_by_no_lookup(records) -> None:
    topology, inputs = records
    base = _names(run_records(topology, inputs, "stages"), 1)
    lagged = _names(lagged_run(topology, inputs, {"customers": {"partitions": {1: 2**40}}}), 1)
    assert set(lagged) == set(base) and any(base.values())
    assert not any(lagged.values())  # no customer of partition 1 had arrived at any lookup
    other = lagged_run(topology, inputs, {"customers": {"partitions": {1: 2**40}}})
    assert _names(other, 0) == _names(run_records(topology, inputs, "stages"), 0)  # other tasks unchanged


def test_a_shorter_lag_lets_in_the_rows_that_arrive_before_the_lookups(records) -> None:
    topology, inputs = records
    base = _names(run_records(topology, inputs, "stages"), 1)
    lagged = _names(lagged_run(topology, inputs, {"customers": {"partitions": {1: 4 * HOUR_MS + 30 * 60_000}}}), 1)
    found = {key for key, name in lagged.items() if name is not None}
    assert found and found < {key for key, name in base.items() if name is not None}


@pytest.mark.parametrize(
    "arrival, message",
    [
        (
            {"payments": {"lag_ms": 5}},
            "'payments' is not a topic the app reads; it reads customers, customers-join-repartition, orders",
        ),
        ({"products": {"lag_ms": 5}}, "arrival.products: a global table's topic cannot lag"),
        ({"customers": {"partitions": {9: 5}}}, "arrival.customers.partitions: 9 is not a partition of customers"),
        ({"customers": {"lag_ms": -1}}, "arrival.customers: a lag is milliseconds >= 0, got -1"),
        ({"customers": {"lag": 5}}, "arrival.customers: expected {'lag_ms': N}"),
    ],
)
def test_a_bad_arrival_is_named_with_the_fix(records, arrival, message) -> None:
    topology, _ = records
    with pytest.raises(TopologyError, match=message.replace("{", r"\{").replace("[", r"\[")):
        partition_lags(topology, arrival)
