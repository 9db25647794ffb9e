"""Foreign-key KTable-KTable joins: the seeds' tables, the race of seed 001, every rule of
docs/semantics.md §4, and the SQL property for any delivery order."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kjoin import Fate, Reason, Scenario, run
from kjoin.joins.fk_protocol import SUBSCRIPTION, Instruction, Message, SubscriptionWrapper, value_hash
from kjoin.joins.foreign_key import Subscription, subscription_instructions
from kjoin.records import render_value
from kjoin.semantics import parse_semantics

TABLES = sorted((Path(__file__).parent / "seed_tables_fk").glob("fk_*.yaml"))


def fk_joiner(left, right):
    return {"left": left, "right": right}


def render(output) -> str:
    """The seeds' notation: ``(k,1,foo)`` = (key, extracted fk, right value); ``(k,null)`` a tombstone."""
    if output.tombstone:
        return f"({render_value(output.key)},null)"
    return f"({render_value(output.key)},{render_value(output.left['fk'])},{render_value(output.right)})"


def fk_scenario(events, variant="inner", semantics=None, **options) -> Scenario:
    data = {"join": "fk", "variant": variant, "foreign_key": "fk", "events": events, **options}
    if semantics is not None:
        data["semantics"] = semantics
    return Scenario.from_dict(data)


def L(key, fk, ts, **more):
    """A left event whose value is ``{fk: ..., **more}`` (``fk=DELETE`` for a tombstone)."""
    return {"side": "left", "key": key, "value": None if fk is DELETE else {"fk": fk, **more}, "ts": ts}


def R(key, value, ts):
    return {"side": "right", "key": key, "value": value, "ts": ts}


DELETE = object()


def input_steps(trace):
    return [step for step in trace.steps if step.message is None]


def outputs_by_input(trace) -> list[list[str]]:
    """For every input record, the outputs its chain of messages produced, in order."""
    by_origin: dict[int, list[str]] = {step.index: [] for step in input_steps(trace)}
    for output in trace.outputs:
        by_origin[output.origin_step].append(render(output))
    return list(by_origin.values())


def materialize(trace) -> dict:
    result = {}
    for output in trace.outputs:
        if output.tombstone:
            result.pop(output.key, None)
        else:
            result[output.key] = output.value
    return result


# -- the seeds' tables ------------------------------------------------------------------
def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def table_events(table: dict) -> list[dict]:
    events = list(table["setup"])
    for row in table["rows"]:
        side = "left" if "left" in row else "right"
        events.append({"side": side, "key": row[side]["key"], "value": row[side]["value"], "ts": row["ts"]})
    return events


CASES = [
    pytest.param(path, column, partitions, id=f"{path.stem}[{column}, {partitions}p]")
    for path in TABLES
    for column in load(path)["columns"]
    for partitions in (1, 2)
]


def test_both_foreign_key_tables_are_present():
    assert [path.name for path in TABLES] == ["fk_001_workflow.yaml", "fk_004_foreign_key_join.yaml"]


@pytest.mark.parametrize(("path", "column", "partitions"), CASES)
def test_seed_foreign_key_table(path, column, partitions):
    table = load(path)
    spec = table["columns"][column]
    scenario = fk_scenario(table_events(table), spec["variant"], spec["semantics"], partitions=partitions)
    trace = run(scenario, fk_joiner)
    actual = outputs_by_input(trace)[len(table["setup"]) :]
    expected = [row.get(column, []) for row in table["rows"]]
    assert actual == expected
    # Delivered as TopologyTestDriver does: every output comes before the next input.
    inputs = [step.index for step in input_steps(trace)]
    for output_step in (step for step in trace.steps if step.outputs):
        origin = output_step.outputs[0].origin_step
        later_inputs = [i for i in inputs if i > origin]
        assert not later_inputs or output_step.index < later_inputs[0]


def test_seed_001_workflow_instructions():
    """The last column of seed 001's workflow table: each left event's subscriptions (inner join)."""
    table = load(next(p for p in TABLES if p.name.startswith("fk_001")))
    trace = run(fk_scenario(table_events(table), "inner", "2.4", partitions=2), fk_joiner)
    inputs = input_steps(trace)[len(table["setup"]) :]
    for row, step in zip(table["rows"], inputs, strict=True):
        sent = [
            s.message
            for s in trace.steps
            if s.message is not None and s.message.topic == SUBSCRIPTION and s.message.sent_step == step.index
        ]
        assert [[m.value.instruction.value, m.key] for m in sent] == row["instructions"], row


# -- the race of seed 001 ---------------------------------------------------------------------
RACE = [
    R("Y", "bar", 1),  # 1- RHS is updated to Y|bar
    L("A", "Y", 2, v=1),  # 2- LHS is updated to A|Y,1 -> sends a subscription
    L("A", "Y", 3, v=2),  # 3- LHS is updated to A|Y,2 -> sends a subscription
    {"deliver": "subscription"},  # 4- RHS processes the first subscription, sends A|Y,bar back
    {"deliver": "response"},  # 5- LHS processes that response
    {"deliver": "all"},  # 7, 8- the second subscription and its response
]


@pytest.mark.parametrize("variant", ["inner", "left"])
def test_race_with_the_hash_check_drops_the_stale_response(variant):
    trace = run(fk_scenario(RACE, variant, delivery="explicit"), fk_joiner)
    after_both_updates = trace.state_at(2)
    assert [(m.id, m.key, m.value.hash) for m in after_both_updates.in_flight()] == [
        ("m1", "Y", value_hash({"fk": "Y", "v": 1})),
        ("m2", "Y", value_hash({"fk": "Y", "v": 2})),
    ]
    stale = trace[4]
    assert stale.message.id == "m3" and stale.message.value.hash == value_hash({"fk": "Y", "v": 1})
    assert (stale.fate, stale.reason, stale.outputs) == (Fate.DROPPED, Reason.STALE_RESPONSE, ())
    assert [(o.left, o.right) for o in trace.outputs] == [({"fk": "Y", "v": 2}, "bar")]
    assert trace.state_at(-1).in_flight() == []


@pytest.mark.parametrize("variant", ["inner", "left"])
def test_race_without_the_hash_check_joins_the_stale_response(variant):
    """Seed 001: "the first result record, that should have been A|Y,1,bar, is now A|Y,2,bar.
    Furthermore, we update result table from A|Y,2,bar to A|Y,2,bar"."""
    trace = run(fk_scenario(RACE, variant, delivery="explicit", hash_check=False), fk_joiner)
    assert [(step.index, o.left, o.right) for step in trace.steps for o in step.outputs] == [
        (4, {"fk": "Y", "v": 2}, "bar"),
        (6, {"fk": "Y", "v": 2}, "bar"),
    ]
    assert "hash check off" in trace[4].explain


def test_the_trace_shows_a_subscription_travel():
    trace = run(fk_scenario([R("Y", "bar", 1), L("A", "Y", 2)], partitions=2), fk_joiner)
    send, receive, respond = trace[1], trace[2], trace[3]
    assert (send.reason, receive.message.topic, respond.message.topic) == (
        Reason.SUBSCRIPTION_SENT,
        "subscription",
        "response",
    )
    y_task = trace[0].task
    assert [m.id for m in trace.state_at(1).in_flight(y_task)] == ["m1"]
    assert trace.state_at(2).subscriptions(y_task) == [
        {
            "fk": "Y",
            "pk": "A",
            "hash": value_hash({"fk": "Y"}),
            "instruction": "PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE",
            "ts": 2,
        }
    ]
    assert [m.id for m in trace.state_at(2).in_flight()] == ["m2"]
    assert trace.state_at(3).in_flight() == []
    assert trace.state_at(3).table("left", trace[1].task)[0]["value"] == {"fk": "Y"}
    frame = trace.state_at(1).frame()
    assert "in flight" in set(frame["store"])


def test_explicit_delivery_refuses_to_overtake_within_a_partition():
    from kjoin import ScenarioError

    events = [L("A", "Y", 1), L("A", "Y", 2), {"deliver": "m2"}]
    with pytest.raises(ScenarioError, match=r"events\[2\].deliver: m2 waits behind an earlier message"):
        run(fk_scenario(events, delivery="explicit"))


# -- §4.1 send subscription ------------------------------------------------------------------
def fk(value):
    return value["fk"]


INNER_24 = parse_semantics("2.4")
INNER_38 = parse_semantics("3.8")
BEFORE_391, FIX_391 = parse_semantics("3.9.0"), parse_semantics("3.9.1")
BEFORE_401, FIX_401 = parse_semantics("4.0.0"), parse_semantics("4.0.1")  # 4.0.0 came out before the fix
LATEST = parse_semantics(None)
KIP962_FIRST = parse_semantics("3.7.0")
P_ONLY, P_NULL = Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE
D_NO, D_AND = Instruction.DELETE_KEY_NO_PROPAGATE, Instruction.DELETE_KEY_AND_PROPAGATE
MOVE_PROPAGATING = [Subscription("X", D_AND), Subscription("Y", P_NULL)]
MOVE_UNSUBSCRIBING = [Subscription("X", D_NO), Subscription("Y", P_NULL)]


@pytest.mark.parametrize(
    ("old", "new", "variant", "semantics", "expected"),
    [
        # inner join, 2.4 to 3.9.0 and 4.0.0: a null foreign key, old or new, skips the update
        (None, {"fk": "X"}, "inner", INNER_38, [Subscription("X", P_ONLY)]),
        (None, {"fk": None}, "inner", INNER_38, None),
        ({"fk": "X"}, None, "inner", INNER_38, [Subscription("X", D_AND)]),
        ({"fk": None}, None, "inner", INNER_38, None),
        ({"fk": "X"}, {"fk": "Y"}, "inner", INNER_38, [Subscription("X", D_NO), Subscription("Y", P_NULL)]),
        ({"fk": "X", "v": 1}, {"fk": "X", "v": 2}, "inner", INNER_38, [Subscription("X", P_NULL)]),
        ({"fk": None}, {"fk": "Y"}, "inner", INNER_38, None),
        ({"fk": "X"}, {"fk": None}, "inner", INNER_38, None),
        (None, None, "inner", INNER_38, []),
        # inner join since 3.9.1 and 4.0.1 (KAFKA-16407, KAFKA-16434): null foreign keys are followed, and a kept
        # foreign key asks only for an existing result
        (None, {"fk": "X"}, "inner", LATEST, [Subscription("X", P_ONLY)]),
        (None, {"fk": None}, "inner", LATEST, None),
        ({"fk": "X"}, None, "inner", LATEST, [Subscription("X", D_AND)]),
        ({"fk": None}, None, "inner", LATEST, []),
        ({"fk": "X"}, {"fk": "Y"}, "inner", LATEST, [Subscription("X", D_NO), Subscription("Y", P_NULL)]),
        ({"fk": "X", "v": 1}, {"fk": "X", "v": 2}, "inner", LATEST, [Subscription("X", P_ONLY)]),
        ({"fk": None}, {"fk": "Y"}, "inner", LATEST, [Subscription("Y", P_ONLY)]),
        ({"fk": "X"}, {"fk": None}, "inner", LATEST, [Subscription("X", D_AND)]),
        ({"fk": None}, {"fk": None}, "inner", LATEST, None),
        (None, None, "inner", LATEST, []),
        ({"fk": "X", "v": 1}, {"fk": "X", "v": 2}, "inner", FIX_391, [Subscription("X", P_ONLY)]),
        ({"fk": "X", "v": 1}, {"fk": "X", "v": 2}, "inner", FIX_401, [Subscription("X", P_ONLY)]),
        ({"fk": "X", "v": 1}, {"fk": "X", "v": 2}, "inner", BEFORE_391, [Subscription("X", P_NULL)]),
        ({"fk": "X", "v": 1}, {"fk": "X", "v": 2}, "inner", BEFORE_401, [Subscription("X", P_NULL)]),
        # left join since 3.7 (KIP-962)
        (None, {"fk": "X"}, "left", LATEST, [Subscription("X", P_NULL)]),
        (None, {"fk": None}, "left", LATEST, [Subscription(None, P_NULL)]),
        ({"fk": "X"}, None, "left", LATEST, [Subscription("X", D_NO), Subscription(None, P_NULL)]),
        ({"fk": None}, None, "left", LATEST, [Subscription(None, P_NULL)]),
        ({"fk": "X"}, {"fk": "Y"}, "left", LATEST, [Subscription("X", D_NO), Subscription("Y", P_NULL)]),
        ({"fk": "X", "v": 1}, {"fk": "X", "v": 2}, "left", LATEST, [Subscription("X", P_NULL)]),
        ({"fk": None}, {"fk": "Y"}, "left", LATEST, [Subscription("Y", P_NULL)]),
        ({"fk": "X"}, {"fk": None}, "left", LATEST, [Subscription("X", D_NO), Subscription(None, P_NULL)]),
        # 3.7.0 to 3.9.0 and 4.0.0, before KAFKA-16394: a changed or deleted foreign key also propagated from
        # the old one (the harness on 3.7.1, 3.8.1, 3.9.0 and 4.0.0; 3.9.1 and 4.0.1 only unsubscribe)
        ({"fk": "X"}, {"fk": "Y"}, "left", parse_semantics("3.7.1"), MOVE_PROPAGATING),
        ({"fk": "X"}, {"fk": "Y"}, "left", BEFORE_391, MOVE_PROPAGATING),
        ({"fk": "X"}, {"fk": "Y"}, "left", BEFORE_401, MOVE_PROPAGATING),
        ({"fk": "X"}, {"fk": "Y"}, "left", FIX_391, MOVE_UNSUBSCRIBING),
        ({"fk": "X"}, {"fk": "Y"}, "left", FIX_401, MOVE_UNSUBSCRIBING),
        ({"fk": "X"}, None, "left", KIP962_FIRST, [Subscription("X", D_AND), Subscription(None, P_NULL)]),
        ({"fk": "X"}, {"fk": "Y"}, "left", KIP962_FIRST, [Subscription("X", D_AND), Subscription("Y", P_NULL)]),
        ({"fk": "X"}, {"fk": None}, "left", KIP962_FIRST, [Subscription("X", D_AND), Subscription(None, P_NULL)]),
        (None, None, "left", LATEST, []),
        # left join before 3.7: the inner join's rules, but new rows always get an answer
        (None, {"fk": "X"}, "left", INNER_24, [Subscription("X", P_NULL)]),
        (None, {"fk": None}, "left", INNER_24, None),
        ({"fk": "X"}, None, "left", INNER_24, [Subscription("X", D_AND)]),
        ({"fk": "X"}, {"fk": "Y"}, "left", INNER_24, [Subscription("X", D_NO), Subscription("Y", P_NULL)]),
    ],
)
def test_send_subscription_instructions(old, new, variant, semantics, expected):
    assert subscription_instructions(old, new, fk, variant, semantics) == expected


def test_foreign_keys_are_compared_by_bytes():
    """1 (a long) and "1" (a string) serialize differently: a change of foreign key."""
    assert subscription_instructions({"fk": 1}, {"fk": "1"}, fk, "inner", LATEST) == [
        Subscription(1, D_NO),
        Subscription("1", P_NULL),
    ]


def test_null_foreign_key_is_dropped_and_counted():
    trace = run(fk_scenario([R("Y", "y", 1), L("A", None, 2)]), fk_joiner)
    assert (trace[1].fate, trace[1].reason) == (Fate.DROPPED, Reason.NULL_FOREIGN_KEY)
    assert trace.state_at(-1).table("left") == [{"key": "A", "value": {"fk": None}, "ts": 2, "old_value": None}]


def test_hash_of_a_delete_is_null():
    trace = run(fk_scenario([R("Y", "y", 1), L("A", "Y", 2), L("A", DELETE, 3)], delivery="explicit"), fk_joiner)
    assert [m.value.hash for m in trace.state_at(-1).in_flight()] == [value_hash({"fk": "Y"}), None]


# -- §4.2 receive subscription and join --------------------------------------------------------
def test_subscription_store_is_keyed_by_combined_key_and_delete_removes():
    events = [L("b", "X", 1), L("a", "X", 2), L("c", "Y", 3), L("b", "Y", 4)]
    trace = run(fk_scenario(events), fk_joiner)
    rows = [(row["fk"], row["pk"], row["instruction"]) for row in trace.state_at(-1).subscriptions()]
    assert rows == [
        ("X", "a", "PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE"),
        ("Y", "b", "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE"),
        ("Y", "c", "PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE"),
    ]


@pytest.mark.parametrize(
    ("instruction", "right_present", "responds", "foreign_value"),
    [
        (D_AND, True, True, None),
        (D_AND, False, True, None),
        (P_NULL, True, True, "y"),
        (P_NULL, False, True, None),
        (P_ONLY, True, True, "y"),
        (P_ONLY, False, False, None),
        (D_NO, True, False, None),
    ],
)
def test_subscription_join_responds_as_the_instruction_says(instruction, right_present, responds, foreign_value):
    events = [R("Y", "y", 5)] if right_present else []
    scenario = fk_scenario(events + [L("A", "Y", 3)], delivery="explicit")
    trace_join = _deliver_by_hand(
        scenario, Message("m90", SUBSCRIPTION, 0, "Y", SubscriptionWrapper("h", instruction, "A", 0), 3, 0, 0)
    )
    sent = [m for m in trace_join if m.topic == "response"]
    assert bool(sent) == responds
    if responds:
        (response,) = sent
        assert (response.key, response.value.hash, response.value.foreign_value) == ("A", "h", foreign_value)
        assert response.ts == (5 if right_present else 3)  # max(left ts, right ts), or the left ts


def test_null_foreign_key_subscription_is_dropped_unless_propagate_null():
    scenario = fk_scenario([], delivery="explicit")
    for instruction, kept in ((D_AND, False), (D_NO, False), (P_ONLY, False), (P_NULL, True)):
        sent = _deliver_by_hand(
            scenario, Message("m90", SUBSCRIPTION, 0, None, SubscriptionWrapper("h", instruction, "A", 0), 3, 0, 0)
        )
        assert bool(sent) == kept, instruction


def _deliver_by_hand(scenario: Scenario, message: Message) -> list[Message]:
    """Run the scenario's inputs, then deliver ``message`` at its task; return what it sent."""
    from kjoin.joins import StepContext
    from kjoin.engine import foreign_key_options
    from kjoin.joins.foreign_key import ForeignKeyJoin
    from kjoin.records import Record, Side
    from kjoin.state import StateLog

    join = ForeignKeyJoin(StateLog(), foreign_key_options(scenario), scenario.partitions)
    for index, record in enumerate(scenario.records()):
        join.process(record, StepContext(index, record, fk_joiner))
    while join.in_flight.pending():
        pending = join.in_flight.heads()[0]
        join.deliver(pending, StepContext(50, Record(Side.LEFT, pending.key, "m", pending.ts), fk_joiner))
    before = {m.id for m in join.in_flight.pending()}
    join.in_flight.send(message)
    ctx = StepContext(99, Record(Side.RIGHT, message.key, "m", message.ts), fk_joiner)
    join.deliver(message, ctx)
    assert ctx.fate is not None
    return [m for m in join.in_flight.pending() if m.id not in before]


# -- §4.3 right-side change: prefix scan ---------------------------------------------------------
def test_right_update_scans_exactly_its_foreign_key_in_primary_key_byte_order():
    events = [L("c", "ab", 1), L("a", "ab", 2), L("b", "ab", 3), L("d", "a", 4), L("e", "abc", 5), R("ab", "v", 9)]
    trace = run(fk_scenario(events, "left"), fk_joiner)
    scan = input_steps(trace)[-1]
    assert scan.reason is Reason.RESPONSE_SENT
    responses = [step for step in trace.steps if step.index > scan.index]
    assert [(s.message.key, s.message.ts) for s in responses] == [("a", 9), ("b", 9), ("c", 9)]
    assert [o.key for s in responses for o in s.outputs] == ["a", "b", "c"]


def test_right_update_without_subscribers_sends_nothing():
    trace = run(fk_scenario([L("A", "X", 1), R("Y", "y", 2)]), fk_joiner)
    assert (trace[-1].fate, trace[-1].reason, trace[-1].outputs) == (Fate.STORED, Reason.NO_SUBSCRIBER, ())


def test_right_null_key_is_dropped():
    trace = run(fk_scenario([R(None, "y", 2)]), fk_joiner)
    assert (trace[0].fate, trace[0].reason) == (Fate.DROPPED, Reason.NULL_KEY)


# -- §4.4 response join --------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["inner", "left"])
def test_response_join_tombstone_rules(variant):
    # a right delete answers with null: inner → tombstone; left (row still there) → joiner(l, null)
    trace = run(fk_scenario([R("Y", "y", 1), L("A", "Y", 2), R("Y", None, 3)], variant), fk_joiner)
    last = trace.outputs[-1]
    if variant == "inner":
        assert last.tombstone and last.ts == 3
    else:
        assert (last.tombstone, last.left, last.right, last.ts) == (False, {"fk": "Y"}, None, 3)


def test_response_ts_is_max_of_left_and_right_for_left_triggered_and_right_ts_for_right_triggered():
    trace = run(fk_scenario([R("Y", "y", 10), L("A", "Y", 2), R("Y", "y2", 4)]), fk_joiner)
    assert [o.ts for o in trace.outputs] == [10, 4]


# -- §4.5 consequences ------------------------------------------------------------------------------
def test_inner_join_unnecessary_tombstone_then_nothing_on_second_delete():
    trace = run(fk_scenario([L("A", "X", 1), L("A", DELETE, 2), L("A", DELETE, 3)]), fk_joiner)
    assert outputs_by_input(trace) == [[], ["(A,null)"], []]
    assert trace.steps[-1].reason is Reason.NOTHING_TO_DELETE


def test_inner_join_moving_between_missing_foreign_keys_sends_a_tombstone():
    trace = run(fk_scenario([L("A", "X", 1), L("A", "Z", 2)]), fk_joiner)
    assert outputs_by_input(trace) == [[], ["(A,null)"]]


@pytest.mark.parametrize(
    ("variant", "expected"), [("inner", ["(a,null)", "(b,null)"]), ("left", ["(a,Y,null)", "(b,Y,null)"])]
)
def test_deleting_a_right_row_updates_every_subscriber(variant, expected):
    trace = run(fk_scenario([R("Y", "y", 1), L("a", "Y", 2), L("b", "Y", 3), R("Y", None, 4)], variant), fk_joiner)
    assert outputs_by_input(trace)[-1] == expected


def test_update_to_an_unreferenced_foreign_key_emits_nothing():
    trace = run(fk_scenario([R("Y", "y", 1), L("A", "Y", 2), R("Z", "z", 3)], "left"), fk_joiner)
    assert outputs_by_input(trace)[-1] == []


def test_left_join_with_a_null_foreign_key_emits_left_with_null():
    trace = run(fk_scenario([L("A", None, 1)], "left"), fk_joiner)
    assert [(o.key, o.left, o.right, o.tombstone) for o in trace.outputs] == [("A", {"fk": None}, None, False)]


@pytest.mark.parametrize("side", ["left", "right"])
def test_out_of_order_updates_of_a_versioned_table_produce_nothing(side):
    events = [R("Y", "y5", 5), L("A", "Y", 6), R("Y", "y1", 1) if side == "right" else L("A", "Y", 1, v="old")]
    options = {side: {"versioned": True, "history_retention_ms": 100}}
    trace = run(fk_scenario(events, "left", **options), fk_joiner)
    late = input_steps(trace)[-1]
    assert (late.fate, late.reason) == (Fate.DROPPED, Reason.OUT_OF_ORDER_VERSION)
    assert outputs_by_input(trace)[-1] == []
    assert len(trace.state_at(-1).versions(side)) == 2


@pytest.mark.parametrize("side", ["left", "right"])
def test_out_of_order_updates_of_an_unversioned_table_overwrite_and_rejoin(side):
    events = [R("Y", "y5", 5), L("A", "Y", 6), R("Y", "y1", 1) if side == "right" else L("A", "Y", 1, v="old")]
    trace = run(fk_scenario(events, "left"), fk_joiner)
    assert len(outputs_by_input(trace)[-1]) == 1


def test_versioned_table_refuses_an_expired_put():
    events = [R("Y", "y", 50), R("Z", "z", 1)]
    trace = run(fk_scenario(events, right={"versioned": True, "history_retention_ms": 10}), fk_joiner)
    assert (trace[-1].fate, trace[-1].reason) == (Fate.DROPPED, Reason.EXPIRED_PUT)


# -- §4.6 the left join's change of foreign key ---------------------------------------------------
def test_left_join_fk_change_first_emits_left_with_null_then_the_result():
    """3.7.0 to 3.9.0 (KIP-962 before KAFKA-16394): the old foreign key's answer is the left value with null."""
    trace = run(fk_scenario([R("Y", "y", 1), L("A", "X", 2), L("A", "Y", 3)], "left", semantics="3.7.0"), fk_joiner)
    assert outputs_by_input(trace)[-1] == ["(A,Y,null)", "(A,Y,y)"]


def test_left_join_fk_change_emits_only_the_new_result_since_3_9_1():
    """KAFKA-16394 (3.9.1, 4.0.1): the old foreign key is only unsubscribed; Kafka 4.3.1's TopologyTestDriver
    agrees (and 3.9.1's and 4.0.1's; 3.7.1, 3.8.1, 3.9.0 and 4.0.0 still emit (A,Y,null) first)."""
    trace = run(fk_scenario([R("Y", "y", 1), L("A", "X", 2), L("A", "Y", 3)], "left"), fk_joiner)
    assert outputs_by_input(trace)[-1] == ["(A,Y,y)"]


def test_left_join_fk_change_is_right_only_if_responses_come_in_order():
    """With two partitions the two subscriptions of a change travel in different queues; if
    the new key's answer overtakes the old key's, the final result is wrong (§4.6)."""
    from kjoin.partitioner import default_partition

    old_fk = next(k for k in ("X", "Z", "W", "V") if default_partition(k, 2) != default_partition("Y", 2))
    events = [R("Y", "y", 1), L("A", old_fk, 2), {"deliver": "all"}, L("A", "Y", 3)]
    # m3: DELETE_KEY_AND_PROPAGATE to the old key; m4: PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE to Y.
    events += [{"deliver": "m4"}, {"deliver": "response"}, {"deliver": "m3"}, {"deliver": "response"}]
    trace = run(fk_scenario(events, "left", semantics="3.7.0", delivery="explicit", partitions=2), fk_joiner)
    assert [m.value.instruction for m in trace.state_at(4).in_flight()] == [D_AND, P_NULL]
    assert [render(o) for o in trace.outputs] == [f"(A,{old_fk},null)", "(A,Y,y)", "(A,Y,null)"]
    assert materialize(trace) != sql_fk_join(
        fk_scenario([e for e in events if "deliver" not in e], "left", semantics="3.7.0"), "left"
    )


# -- the property --------------------------------------------------------------------------------
PKS = st.sampled_from(["a", "b", "c", 1])
FKS = st.sampled_from(["X", "Y", "Z", 7])


@st.composite
def fk_events(draw, null_fks: bool):
    events = []
    for ts in range(draw(st.integers(0, 25))):
        if draw(st.booleans()):
            fk_value = draw(st.one_of(st.none(), FKS) if null_fks else FKS)
            value = None if draw(st.integers(0, 4)) == 0 else {"fk": fk_value, "v": draw(st.integers(0, 2))}
            events.append({"side": "left", "key": draw(PKS), "value": value, "ts": draw(st.integers(0, 30))})
        else:
            value = None if draw(st.integers(0, 4)) == 0 else f"r{draw(st.integers(0, 3))}"
            events.append({"side": "right", "key": draw(FKS), "value": value, "ts": draw(st.integers(0, 30))})
    return events


def sql_fk_join(scenario: Scenario, variant: str) -> dict:
    """The SQL foreign-key join of the materialized inputs (latest by offset)."""
    left, right = {}, {}
    for record in scenario.records():
        table = left if record.side.value == "left" else right
        if record.value is None:
            table.pop(record.key, None)
        else:
            table[record.key] = record.value
    result = {}
    for pk, value in left.items():
        partner = None if value["fk"] is None else right.get(value["fk"])
        if partner is not None or variant == "left":
            result[pk] = fk_joiner(value, partner)
    return result


@settings(max_examples=120, deadline=None)
@given(
    events=fk_events(null_fks=False),
    variant=st.sampled_from(["inner", "left"]),
    semantics=st.sampled_from(["2.4", "3.6", "latest"]),
    partitions=st.integers(1, 3),
    seed=st.integers(0, 10_000),
)
def test_any_delivery_order_drains_to_the_sql_fk_join(events, variant, semantics, partitions, seed):
    """For any delivery order that keeps each partition in order, once every message is
    delivered the result table is the SQL foreign-key join of the final input tables, as
    long as no row changes while messages about it are still travelling (``wait_for_row``:
    a left row's subscriptions and responses, the subscriptions to a right row; the three
    ways it fails otherwise are pinned below, the third against Kafka 4.4 in
    tests/test_kafka_oracle.py).

    Left joins since 3.7 are the exception across partitions (§4.6, pinned above): there the
    property holds with one partition, where both responses of a change share a queue."""
    if variant == "left" and semantics == "latest":
        partitions = 1
    scenario = fk_scenario(
        events,
        variant,
        semantics,
        partitions=partitions,
        delivery={"mode": "random", "seed": seed, "wait_for_row": True},
    )
    trace = run(scenario, fk_joiner)
    assert not trace.steps or trace.state_at(-1).in_flight() == []
    assert materialize(trace) == sql_fk_join(scenario, variant)


@settings(max_examples=60, deadline=None)
@given(events=fk_events(null_fks=True), seed=st.integers(0, 10_000))
def test_left_join_with_null_foreign_keys_drains_to_the_sql_left_join(events, seed):
    scenario = fk_scenario(
        events, "left", partitions=1, delivery={"mode": "random", "seed": seed, "wait_for_row": True}
    )
    assert materialize(run(scenario, fk_joiner)) == sql_fk_join(scenario, "left")


def test_a_row_that_gets_back_an_identical_value_accepts_a_stale_response():
    """The hash is of the left value only: when a row is deleted and re-inserted with the same
    value while an old response is still in flight, that response passes the hash check and
    its stale right value becomes the final result (found by the property above; Kafka's
    protocol has the same blind spot, since the left task reads its input and the response
    topic in any interleaving)."""
    events = [
        L("a", "X", 1, v=0),  # m1: PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE to X
        R("X", "r0", 2),
        {"deliver": "m1"},  # the subscription finds r0: response m2 (hash of {fk: X, v: 0}, r0) waits
        L("a", DELETE, 3),  # m3: DELETE_KEY_AND_PROPAGATE
        {"deliver": "m3"},  # subscription removed; response m4 (null hash, null) waits behind m2
        R("X", None, 4),  # no subscriber any more: nothing is sent
        L("a", "X", 5, v=0),  # the same value again: m5, the same hash as m1
        {"deliver": "all"},
    ]
    trace = run(fk_scenario(events, delivery="explicit"), fk_joiner)
    stale = next(step for step in trace.steps if step.message is not None and step.message.id == "m2")
    assert stale.fate is Fate.JOINED and [(o.left, o.right) for o in stale.outputs] == [({"fk": "X", "v": 0}, "r0")]
    scenario = fk_scenario([e for e in events if "deliver" not in e])
    assert materialize(trace) == {"a": fk_joiner({"fk": "X", "v": 0}, "r0")} != sql_fk_join(scenario, "inner") == {}


def test_a_reinsert_that_overtakes_the_delete_keeps_a_stale_result():
    """Inner join: the delete's answer (null hash) arrives after the row is back, so it is
    stale and dropped; the new row's PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE finds no right value
    and sends nothing. The old result stays (found by the property above without
    ``wait_for_row``)."""
    events = [
        R("X", "r0", 1),
        L("b", "X", 2, v=3),
        {"deliver": "all"},  # (b, v3-r0)
        L("b", DELETE, 3),  # m3: DELETE_KEY_AND_PROPAGATE
        R("X", None, 4),  # the subscription still stands: m4 (hash of v3, null) goes back
        {"deliver": "m3"},  # subscription removed; its answer m5 (null hash) waits behind m4
        L("b", "X", 5, v=18),  # a new row for b: m6 PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE
        {"deliver": "all"},
    ]
    trace = run(fk_scenario(events, delivery="explicit"), fk_joiner)
    dropped = [step.message.id for step in trace.steps if step.reason is Reason.STALE_RESPONSE]
    assert dropped == ["m4", "m5"]
    assert materialize(trace) == {"b": fk_joiner({"fk": "X", "v": 3}, "r0")}
    assert sql_fk_join(fk_scenario([e for e in events if "deliver" not in e]), "inner") == {}


RIGHT_DELETE_RACE = [
    R("X", "r0", 1),
    L("b", "X", 2, v=0),
    {"deliver": "all"},  # (b, v0-r0)
    L("b", "X", 10, v=1),  # keeps X: m3 PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE (since 3.9.1)
    R("X", None, 5),  # the subscription store still holds v0's: m4 (hash of v0, null) goes back
    {"deliver": "response"},  # m4: b is v1 now, the hash differs, dropped as stale
    {"deliver": "subscription"},  # m3: X has no value and it asks only for one: no answer
    {"deliver": "all"},  # (before 3.9.1 m3 asks for null then: m5 deletes the result)
]
"""The order a right task takes when the right delete reaches it before the update's subscription
(``tests/test_kafka_oracle.py`` runs it through Kafka 4.4, 3.9.1 and 3.9.0 in that order)."""


@pytest.mark.parametrize(
    ("semantics", "final"),
    [
        ("3.9.0", {}),
        ("3.9.1", {"b": fk_joiner({"fk": "X", "v": 0}, "r0")}),
        ("latest", {"b": fk_joiner({"fk": "X", "v": 0}, "r0")}),
    ],
)
def test_a_right_delete_that_overtakes_a_same_key_update_keeps_a_stale_result_since_3_9_1(semantics, final):
    """KAFKA-16407's change (3.9.1, 4.0.1) made an inner join's update that keeps its foreign key ask for an answer
    only if the right row exists (no join now, so none before). That misses a right delete that overtakes the
    subscription: the delete answers with the old subscription's hash, which the updated row drops, and the new
    subscription finds nothing and says nothing, so b keeps the deleted r0 joined with its old value. Before,
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE answered with null and the result was deleted, as SQL says."""
    trace = run(fk_scenario(RIGHT_DELETE_RACE, semantics=semantics, delivery="explicit"), fk_joiner)
    stale = [step.message.id for step in trace.steps if step.reason is Reason.STALE_RESPONSE]
    assert stale == ["m4"]
    assert materialize(trace) == final
    assert sql_fk_join(fk_scenario([e for e in RIGHT_DELETE_RACE if "deliver" not in e]), "inner") == {}


def test_wait_for_row_holds_a_right_row_until_the_subscriptions_to_it_arrive():
    """The example hypothesis found (seed 3): with only left rows held, X's delete overtook b's second
    subscription and b kept r0. Now the delete waits for that subscription, and the join drains to SQL."""
    events = [
        L("b", "X", 0, v=0),
        R("X", "r0", 0),
        L("b", "X", 0, v=1),
        *[R(key, None, 0) for key in ("Y", "X", "Y", "X", "X", "Y")],
    ]
    scenario = fk_scenario(events, partitions=1, delivery={"mode": "random", "seed": 3, "wait_for_row": True})
    trace = run(scenario, fk_joiner)
    subscriptions = [s.index for s in trace.steps if s.message is not None and s.message.topic == SUBSCRIPTION]
    delete = next(s.index for s in input_steps(trace) if s.record.key == "X" and s.record.value is None)
    assert len(subscriptions) == 2 and subscriptions[1] < delete
    assert materialize(trace) == sql_fk_join(scenario, "inner") == {}


def test_wait_for_row_only_with_random_delivery():
    from kjoin import ScenarioError

    with pytest.raises(ScenarioError, match="delivery.wait_for_row: only random delivery"):
        fk_scenario([], delivery={"mode": "explicit", "wait_for_row": True})


def test_inner_join_null_foreign_key_divergence_from_sql_before_3_9_1():
    """§4.1: before 3.9.1 an inner join skips an update whose old *or* new foreign key is null, so a row that
    gets its first foreign key later never subscribes: not the SQL join (Kafka's behaviour then)."""
    events = [R("Y", "y", 1), L("A", None, 2), L("A", "Y", 3)]
    scenario = fk_scenario(events, semantics="3.8")
    trace = run(scenario, fk_joiner)
    assert materialize(trace) == {} != sql_fk_join(scenario, "inner")
    assert trace.steps[-1].reason is Reason.NULL_FOREIGN_KEY


def test_inner_join_row_getting_its_first_foreign_key_subscribes_since_3_9_1():
    """KAFKA-16407: the update from a null foreign key to Y is an insert, so the row joins y."""
    scenario = fk_scenario([R("Y", "y", 1), L("A", None, 2), L("A", "Y", 3)])
    trace = run(scenario, fk_joiner)
    assert [(s.fate, s.reason) for s in input_steps(trace)] == [
        (Fate.STORED, Reason.NO_SUBSCRIBER),
        (Fate.DROPPED, Reason.NULL_FOREIGN_KEY),
        (Fate.STORED, Reason.SUBSCRIPTION_SENT),
    ]
    assert trace.state_at(-1).in_flight() == [] and outputs_by_input(trace) == [[], [], ["(A,Y,y)"]]
    assert materialize(trace) == sql_fk_join(scenario, "inner")


@pytest.mark.parametrize(
    ("semantics", "expected"), [("3.8", [["(A,Y,y)"], []]), ("latest", [["(A,Y,y)"], ["(A,null)"]])]
)
def test_inner_join_row_losing_its_foreign_key_deletes_its_result_since_3_9_1(semantics, expected):
    """KAFKA-16434: a foreign key that becomes null unsubscribes from the old one with DELETE_KEY_AND_PROPAGATE and
    the result is deleted; before, the update was skipped and the result (A, y) stayed. Either way the left table
    keeps the new value."""
    trace = run(fk_scenario([R("Y", "y", 1), L("A", "Y", 2), L("A", None, 3)], semantics=semantics), fk_joiner)
    assert outputs_by_input(trace)[1:] == expected
    last = input_steps(trace)[-1]
    if semantics == "3.8":
        assert (last.fate, last.reason) == (Fate.DROPPED, Reason.NULL_FOREIGN_KEY)
    else:
        assert (last.fate, last.reason) == (Fate.STORED, Reason.NULL_FOREIGN_KEY_UNSUBSCRIBED)
        assert "unsubscribes from its old foreign key Y" in last.explain
        assert trace.state_at(-1).subscriptions() == []
    assert trace.state_at(-1).table("left")[0]["value"] == {"fk": None}


@pytest.mark.parametrize(("semantics", "reason"), [("3.8", Reason.NULL_FOREIGN_KEY), ("4.3", Reason.NOTHING_TO_DELETE)])
def test_deleting_a_row_with_a_null_foreign_key_sends_nothing(semantics, reason):
    """Before 3.9.1 Kafka skips the delete with a warning; since, it is a plain delete of a row that subscribed
    nowhere: nothing to remove, no result to delete."""
    trace = run(fk_scenario([L("A", None, 1), L("A", DELETE, 2)], semantics=semantics), fk_joiner)
    assert list(trace.outputs) == []
    assert input_steps(trace)[-1].reason is reason


@pytest.mark.parametrize(
    ("semantics", "expected"),
    [
        ("3.8", ["(A,null)"]),
        ("3.9.0", ["(A,null)"]),
        ("4.0.0", ["(A,null)"]),
        ("3.9.1", []),
        ("4.0.1", []),
        ("latest", []),
    ],
)
def test_inner_join_update_keeping_its_foreign_key_sends_no_tombstone_since_3_9_1(semantics, expected):
    """A never joined (no X). An update that keeps X asks only for an existing result since 3.9.1 and 4.0.1: X
    has none, so nothing comes back; before, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE sent a tombstone nobody needed."""
    trace = run(fk_scenario([L("A", "X", 4, v=7), L("A", "X", 9, v=8)], semantics=semantics), fk_joiner)
    assert outputs_by_input(trace) == [[], expected]
    if not expected:
        answer = trace.steps[-1]
        assert answer.message is not None and (answer.fate, answer.reason) == (Fate.STORED, Reason.NO_PROPAGATE)
        assert "PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE: no response" in answer.explain


@settings(max_examples=80, deadline=None)
@given(events=fk_events(null_fks=True), partitions=st.integers(1, 3), seed=st.integers(0, 10_000))
def test_inner_join_with_null_foreign_keys_drains_to_the_sql_inner_join_since_3_9_1(events, partitions, seed):
    """Since 3.9.1 an inner join follows a row to and from a null foreign key, so, as for non-null foreign keys,
    any delivery order drains to the SQL join as long as no row, left or right, changes while messages about it
    travel (``wait_for_row``). Holding the right rows too is needed since 3.9.1: a right row deleted while an
    update keeping its foreign key subscribes leaves a stale result, in Kafka too (found here with a scheduler
    that held only left rows; pinned above, ``RIGHT_DELETE_RACE``, and against the real library)."""
    scenario = fk_scenario(
        events, partitions=partitions, delivery={"mode": "random", "seed": seed, "wait_for_row": True}
    )
    trace = run(scenario, fk_joiner)
    assert not trace.steps or trace.state_at(-1).in_flight() == []
    assert materialize(trace) == sql_fk_join(scenario, "inner")


# -- the scenario format --------------------------------------------------------------------------
def test_fk_scenario_round_trips_through_to_dict():
    scenario = fk_scenario(
        RACE,
        "left",
        delivery="explicit",
        hash_check=False,
        partitions=2,
        left={"versioned": True, "history_retention_ms": 50},
    )
    assert Scenario.from_dict(scenario.to_dict()) == scenario
    random_delivery = fk_scenario(RACE[:3], delivery={"mode": "random", "seed": 3})
    assert Scenario.from_dict(random_delivery.to_dict()) == random_delivery


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"foreign_key": None}, "foreign_key: a fk join needs the field path"),
        ({"semantics": "2.3"}, "foreign-key joins exist since Kafka 2.4"),
        (
            {"events": [{"side": "left", "key": "A", "value": "plain", "ts": 1}]},
            r"events\[0\].value: the foreign key 'fk' is not a field",
        ),
        (
            {"events": [{"side": "left", "key": "A", "value": {"v": 1}, "ts": 1}]},
            r"events\[0\].value: the foreign key 'fk' is not a field",
        ),
        (
            {"events": [{"side": "left", "key": "A", "value": {"fk": [1]}, "ts": 1}]},
            r"events\[0\].value: the foreign key 'fk' is \[1\]",
        ),
        (
            {"events": [{"deliver": "next"}]},
            r"events\[0\].deliver: deliver events need join: fk and delivery: explicit",
        ),
        ({"delivery": "explicit", "events": [{"deliver": "later"}]}, r"events\[0\].deliver: expected one of next"),
        ({"delivery": {"mode": "random", "seed": "x"}}, "delivery.seed: expected an integer"),
        ({"delivery": "sometimes"}, "delivery.mode: expected one of immediate | explicit | random"),
        ({"hash_check": "no"}, "hash_check: expected true or false"),
        ({"left": {"versioned": True}}, "left.history_retention_ms: a versioned table needs a history retention"),
        (
            {"partitions": 2, "events": [{"side": "right", "key": "Y", "value": "y", "ts": 1, "partition": 0}]},
            r"events\[0\].partition: a fk join's right record must sit on its key's partition \(1\)",
        ),
    ],
)
def test_fk_scenario_errors_name_the_field(change, message):
    from kjoin import ScenarioError

    data = {"join": "fk", "variant": "inner", "foreign_key": "fk", "events": [], **change}
    data = {k: v for k, v in data.items() if v is not None}
    with pytest.raises(ScenarioError, match=message):
        Scenario.from_dict(data)


def test_other_joins_refuse_fk_fields():
    from kjoin import ScenarioError

    with pytest.raises(
        ScenarioError, match=r"foreign_key: only a fk join \(its foreign key\) and a stream-globaltable"
    ):
        Scenario.from_dict({"join": "table-table", "variant": "inner", "foreign_key": "fk", "events": []})
    with pytest.raises(ScenarioError, match="delivery, hash_check: only a fk join"):
        Scenario.from_dict({"join": "table-table", "variant": "inner", "hash_check": False, "events": []})


def test_foreign_key_path_nests():
    events = [R("Y", "y", 1), {"side": "left", "key": "A", "value": {"customer": {"id": "Y"}}, "ts": 2}]
    trace = run(
        Scenario.from_dict({"join": "fk", "variant": "inner", "foreign_key": "customer.id", "events": events}),
        fk_joiner,
    )
    assert [(o.key, o.right) for o in trace.outputs] == [("A", "y")]


def test_random_delivery_really_holds_messages_across_inputs():
    """The property above is not vacuous: some seeds deliver a message after a later input."""
    events = [R("Y", "y", 1)] + [L("A", "Y", ts, v=ts) for ts in range(2, 7)]
    held = 0
    for seed in range(10):
        trace = run(fk_scenario(events, delivery={"mode": "random", "seed": seed}, partitions=2), fk_joiner)
        inputs = [step.index for step in input_steps(trace)]
        deliveries = [step for step in trace.steps if step.message is not None]
        held += any(d.message.origin_step < i < d.index for d in deliveries for i in inputs)
        assert [o.left for o in trace.outputs][-1] == {"fk": "Y", "v": 6}
    assert held > 0


def test_kjoin_run_prints_an_fk_trace(tmp_path, capsys):
    from kjoin.cli import main

    path = tmp_path / "race.yaml"
    path.write_text(
        yaml.safe_dump({"join": "fk", "variant": "inner", "foreign_key": "fk", "delivery": "explicit", "events": RACE}),
        encoding="utf-8",
    )
    assert main(["run", str(path)]) == 0
    text = capsys.readouterr().out
    # the update that keeps foreign key Y asks only for an existing result (3.9.1+), and Y has bar
    assert "dropped (stale-response)" in text and text.count("PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE") >= 2


# -- a right value of zero bytes -------------------------------------------
EMPTY_CUSTOMER = [
    {"side": "right", "key": "c", "value": "", "ts": 1},  # a customer whose value is "" (String serde: zero bytes)
    {"side": "left", "key": "o", "value": {"fk": "c"}, "ts": 2},
    {"side": "right", "key": "c", "value": "Ann", "ts": 3},
    {"side": "right", "key": "c", "value": "", "ts": 4},
]


def test_the_serde_model_says_which_values_serialize_to_zero_bytes():
    from kjoin.serde import serialize_value, serializes_to_nothing, through_response

    assert serialize_value("") == b"" and serialize_value(None) is None
    assert serialize_value({"b": 1, "a": "é"}) == b'{"a":"\\u00e9","b":1}'  # kjoin's JSON, as the harness sends it
    assert [serializes_to_nothing(v) for v in ("", " ", 0, 0.0, False, {}, [], None)] == [True] + [False] * 7
    assert through_response("") is None and through_response({}) == {} and through_response(0) == 0


@pytest.mark.parametrize("variant", ["left", "inner"])
def test_a_customer_whose_value_is_empty_reaches_the_joiner_as_null(variant):
    """Kafka's subscription response writes a missing right value as zero bytes, so a right value that serializes
    to zero bytes is read back as null: the left join emits ``order-null``, the inner join a tombstone, both when
    the order subscribes and when the customer's update reaches it by the prefix scan."""
    trace = run(Scenario.from_dict({"join": "fk", "variant": variant, "foreign_key": "fk", "events": EMPTY_CUSTOMER}))
    empty = '{"fk":"c"}-null' if variant == "left" else None
    assert [(o.render() if not o.tombstone else None, o.ts) for o in trace.outputs] == [
        (empty, 2),
        ('{"fk":"c"}-Ann', 3),
        (empty, 4),
    ]
    joined = [step for step in trace.steps if step.outputs]
    assert all(o.right is None for o in joined[0].outputs + joined[2].outputs)
    for step in (joined[0], joined[2]):
        assert 'the right value "" serializes to zero bytes' in step.explain
        assert "reads it as null" in step.explain
    assert "zero bytes" not in joined[1].explain
    sent = trace.steps[joined[0].index - 1]  # the subscription's delivery, which found "" and answered
    assert 'sent m2 ("") back' in sent.explain and "will read it as null" in sent.explain


def test_the_left_value_hash_is_of_its_serialized_bytes():
    """Kafka hashes the serialized left value (Murmur3.hash128 of the serde's bytes): equal bytes, equal hashes."""
    from kjoin.serde import serialize_value

    assert value_hash({"fk": "c", "v": 1}) == value_hash({"v": 1, "fk": "c"})  # one JSON text: keys sorted
    assert value_hash({"fk": "c", "v": 1}) != value_hash({"fk": "c", "v": "1"})
    assert serialize_value({"fk": "c", "v": 1}) != serialize_value({"fk": "c", "v": "1"})
    assert value_hash(None) is None


@pytest.mark.parametrize(
    ("foreign_key", "partitions", "joins"),
    [(1, 1, True), (1.0, 1, False), (True, 1, False), ("1", 1, False), (1, 3, True), (1.0, 3, False), (True, 3, False)],
)
def test_foreign_keys_compare_by_their_bytes_as_kafka_compares_them(foreign_key, partitions, joins):
    """Kafka compares a foreign key with the right table's keys by their serialized bytes, so an order
    whose foreign key is ``1.0`` or ``true`` never finds the customer ``1`` (Python's ``1 == 1.0 == True`` must not
    leak into a lookup), with one partition or many."""
    scenario = Scenario.from_dict(
        {
            "join": "fk",
            "variant": "left",
            "foreign_key": "c",
            "partitions": partitions,
            "events": [
                {"side": "right", "key": 1, "value": "R", "ts": 1},
                {"side": "left", "key": "o1", "value": {"c": foreign_key}, "ts": 2},
                {"side": "right", "key": 1, "value": "R2", "ts": 3},
            ],
        }
    )
    values = [output.value for step in run(scenario).steps for output in step.outputs]
    shown = render_value({"c": foreign_key})
    if joins:
        assert values == [f"{shown}-R", f"{shown}-R2"]
    else:
        assert values == [f"{shown}-null"]
