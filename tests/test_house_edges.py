"""Reasons and edges the fuzzing and the topology review found: a cached result replaced by
an earlier record's result, and state built only for the tasks that have records."""

import ast
import inspect

import pytest

import kjoin
from kjoin import engine, fates
from kjoin.joins import StepContext, default_joiner
from kjoin.joins.fk_delivery import ExplicitDelivery, NoSuchMessage
from kjoin.joins.foreign_key import ForeignKeyJoin
from kjoin.joins.options import ForeignKeyOptions
from kjoin.records import Record, Side
from kjoin.semantics import parse_semantics
from kjoin.state import StateLog
from kjoin.trace import DeliveryStep
from kjoin.fates import Fate, Reason
from kjoin.partitioner import default_partition


def _replaced_scenario() -> kjoin.Scenario:
    # step 0's left update waits in the left cache; step 1 joins B-B (into the result cache);
    # the commit after step 1 flushes step 0's update, whose B-B replaces step 1's in the result cache.
    return kjoin.Scenario.from_dict(
        {
            "join": "table-table",
            "variant": "outer",
            "materialized": True,
            "caching": ["left", "result"],
            "commit_every": 2,
            "events": [
                {"side": "left", "key": "j", "value": "B", "ts": 0},
                {"side": "right", "key": "j", "value": "B", "ts": 1},
                {"side": "right", "key": "k", "value": "B", "ts": 2},
            ],
        }
    )


def test_a_result_replaced_in_the_result_cache_by_an_earlier_records_result_says_so():
    trace = kjoin.run(_replaced_scenario())
    step = trace.steps[1]
    assert [(o.render(), o.origin_step) for o in step.outputs] == [("B-B", 0)]
    assert (step.fate, step.reason) == (Fate.STORED, Reason.REPLACED_IN_CACHE)
    assert "(the newest of 2 results)" in step.explain


def test_a_tombstone_the_result_cache_drops_is_still_nothing_to_delete():
    scenario = kjoin.Scenario.from_dict(
        {
            "join": "table-table",
            "variant": "inner",
            "materialized": True,
            "caching": ["result"],
            "commit_every": 2,
            "events": [
                {"side": "left", "key": "k", "value": "A", "ts": 4},
                {"side": "right", "key": "k", "value": None, "ts": 5},
            ],
        }
    )
    step = kjoin.run(scenario).steps[1]
    assert (step.fate, step.reason, step.outputs) == (Fate.STORED, Reason.NOTHING_TO_DELETE, ())
    assert "drops the tombstone for k: the result never had a value" in step.explain


def test_every_reason_has_a_docstring():
    tree = ast.parse(inspect.getsource(fates))
    reason = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Reason")
    documented = {}
    for assign, after in zip(reason.body, reason.body[1:]):
        if isinstance(assign, ast.Assign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            documented[assign.targets[0].id] = after.value.value
    assert set(documented) == {member.name for member in Reason}
    assert "replaced there by a later result for the same key" in documented["REPLACED_IN_CACHE"]


def test_a_million_partitions_build_state_only_for_the_tasks_that_have_records(monkeypatch):
    built = []
    real = engine.new_join
    monkeypatch.setattr(engine, "new_join", lambda scenario, log, task: built.append(task) or real(scenario, log, task))
    scenario = kjoin.Scenario.from_dict(
        {
            "join": "stream-stream",
            "variant": "inner",
            "partitions": 1_000_000,
            "window": {"before_ms": 5, "after_ms": 5, "grace_ms": 0},
            "events": [
                {"side": "left", "key": "k", "value": "A", "ts": 1},
                {"side": "right", "key": "k", "value": "a", "ts": 2},
                {"side": "left", "key": "j", "value": "B", "ts": 3},
            ],
        }
    )
    trace = kjoin.run(scenario)
    first, _, other = [record.partition for record in scenario.records()]
    assert first != other and built == [first, other]  # two tasks of a million, in the order they are met
    assert [o.render() for o in trace.outputs] == ["A-a"]
    # the first record's task is built before the first step: its stores are there from the start, empty
    assert trace.initial_state().tasks() == [first]
    assert len(trace.initial_state().stores) == 3  # its clock and its two window stores
    # a task built later shows the stores written so far: the other task's right window stays out
    assert trace.state_at(1).tasks() == [first]
    stores = trace.state_at(-1).stores
    assert {store.task for store in stores} == {first, other}
    assert len(stores) == 3 + 2


def test_a_foreign_key_join_over_a_million_partitions_builds_the_tasks_of_its_records_and_foreign_keys():
    scenario = kjoin.Scenario.from_dict(
        {
            "join": "fk",
            "variant": "inner",
            "foreign_key": "fk",
            "partitions": 1_000_000,
            "events": [
                {"side": "right", "key": "Y", "value": "y", "ts": 1},
                {"side": "left", "key": "A", "value": {"fk": "Y"}, "ts": 2},
                {"side": "left", "key": "B", "value": {"fk": "Z"}, "ts": 3},
            ],
        }
    )
    trace = kjoin.run(scenario)
    assert [(o.key, o.right) for o in trace.outputs] == [("A", "y")]
    right, left_a, left_b = (record.partition for record in scenario.records())
    busy = {right, left_a, left_b, default_partition("Z", 1_000_000)}  # Y's subscriptions go to the right's task
    assert {store.task for store in trace.initial_state().stores} == busy  # built before the first step
    assert len(trace.initial_state().stores) == 4 * len(busy)  # left, right, subscriptions, in flight
    assert {store.task for store in trace.state_at(-1).stores} == busy


def test_a_delivery_step_says_so_in_its_type_and_carries_its_message():
    scenario = kjoin.Scenario.from_dict(
        {
            "join": "fk",
            "variant": "inner",
            "foreign_key": "fk",
            "events": [
                {"side": "right", "key": "Y", "value": "y", "ts": 1},
                {"side": "left", "key": "A", "value": {"fk": "Y"}, "ts": 2},
            ],
        }
    )
    trace = kjoin.run(scenario)
    assert [type(step).__name__ for step in trace.steps] == ["Step", "Step", "DeliveryStep", "DeliveryStep"]
    subscription, response = trace.steps[2], trace.steps[3]
    assert isinstance(subscription, DeliveryStep) and subscription.message is subscription.delivered
    assert (subscription.delivered.topic, response.delivered.topic) == ("subscription", "response")
    assert [step.message for step in trace.steps[:2]] == [None, None]
    # the steps table reads a delivery as a row: the side it arrives at, its text as the value
    assert (response.record.side, response.record.value) == (Side.LEFT, response.delivered.describe())
    values = trace.steps_frame()["value"].tolist()
    assert values[2:] == [subscription.delivered.describe(), response.delivered.describe()]


def test_explicit_delivery_names_what_it_cannot_deliver():
    join = ForeignKeyJoin(StateLog(), ForeignKeyOptions("inner", parse_semantics(None), "fk"))
    left = Record(Side.LEFT, "A", {"fk": "Y"}, 2)
    join.process(left, StepContext(0, left, default_joiner))
    scheduler = ExplicitDelivery(join.in_flight)
    with pytest.raises(NoSuchMessage, match=r"^no message m9 is in flight \(in flight: m1\)$"):
        scheduler.on_instruction("m9", lambda message: None)
    with pytest.raises(NoSuchMessage, match=r"^no response message is in flight$"):
        scheduler.on_instruction("response", lambda message: None)
    delivered = []
    scheduler.on_instruction("next", delivered.append)
    assert [m.id for m in delivered] == ["m1"]
