"""The topology stepper: the graph, the record's path lit, each node's state beside it."""

from __future__ import annotations

import json
import re

import pytest

from kjoin.topology.document import TopologyScenario
from kjoin_viz.topology_view import WIDTH, TopologyStepper, node_state, step_text, topology_layout, topology_svg
from tests.describe_cases import FIXTURES


@pytest.fixture(scope="module")
def trace():
    fixture = json.loads((FIXTURES / "course-12-whole-app.json").read_text())
    return TopologyScenario.from_dict({"partitions": 2, "semantics": "4.4", **fixture["document"]}).run()


def _lit(svg: str) -> set[str]:
    return set(re.findall(r'class="kjoin-node kjoin-lit" data-node="([^"]+)"', svg))


def test_layout_puts_every_node_in_view_and_none_on_another(trace):
    layout = topology_layout(trace.topology)
    assert set(layout.boxes) == set(trace.topology.graph.nodes)
    spots = list(layout.boxes.values())
    assert len(set(spots)) == len(spots)
    assert all(0 <= x and x + layout.box_width <= WIDTH for x, _ in spots)
    sink, source = layout.boxes["by-customer-repartition-sink"], layout.boxes["by-customer-repartition-source"]
    assert source[0] == sink[0] and source[1] > sink[1]  # under it, in the next sub-topology's block


def test_the_lit_path_is_the_nodes_the_record_passed(trace):
    for step in trace:
        assert _lit(topology_svg(trace, step.index)) == {visit.node for visit in step.visits}


def test_the_repartition_topic_is_marked_when_written_and_when_taken(trace):
    wrote = next(s for s in trace if any(w.topic == "by-customer-repartition" for w in s.wrote))
    took = next(s for s in trace if s.record.topic == "by-customer-repartition")
    assert "written: taken later" in topology_svg(trace, wrote.index)
    assert "taken now" in topology_svg(trace, took.index) and "written: taken later" not in topology_svg(
        trace, took.index
    )


def test_each_node_shows_its_state_after_the_step(trace):
    last_customer = max(s.index for s in trace if s.record.topic == "customers")
    step = trace[last_customer]
    state = node_state(trace, last_customer)
    record = step.record
    assert f"{record.key}: {record.value}@{record.ts}" in state["customers"]
    assert f"{record.key}: {record.value}@{record.ts}" in topology_svg(trace, last_customer)
    assert f"state of customers (task {step.task})" in step_text(trace, last_customer)


def test_the_stepper_moves_and_says_what_the_step_did(trace):
    stepper = TopologyStepper(trace)
    assert stepper.step == 0 and "step 0 of" in stepper.text()
    target = stepper.press("next output")
    assert any(w.topic == "enriched-orders" for w in trace[target].wrote)
    assert "wrote enriched-orders" in stepper.text() and "kjoin-lit" in stepper.graph.value
    assert stepper.press("previous") == target - 1
    with pytest.raises(IndexError):
        stepper.step = len(trace)
    with pytest.raises(ValueError):
        TopologyStepper(object())  # type: ignore[arg-type]
