"""`why` and the per-key drill-down of foreign-key joins on Spark: random scenarios over two
partitions, every left key against the whole scenario's reference trace, and planted causes."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

import kjoin
from kjoin import Scenario
from kjoin.fates import Reason
from kjoin.joins.fk_protocol import SUBSCRIPTION, extract_foreign_key, fk_bytes
from kjoin.records import OutputKind, Side
from kjoin.scenario import Event
from kjoin.spark import SparkInputError, run_scenarios
from kjoin.spark.debug.why import VERDICTS
from kjoin.spark.debug.fk import FkKeyTrace

pytestmark = pytest.mark.spark

FKS = ["X", "Y", "Z", "W"]
# (variant, semantics, delivery, right table options): both variants, the eras of the null-foreign-key and
# foreign-key-change rules (3.6; 3.8: KIP-962 with KAFKA-16394's doubled result; the latest), random delivery
# (stale responses) and a versioned right table.
KINDS = [
    ("left", "4.3", "immediate", None),
    ("inner", "4.3", "immediate", None),
    ("left", "3.8", "immediate", None),
    ("inner", "3.8", {"mode": "random", "seed": 3}, None),
    ("left", "3.6", {"mode": "random", "seed": 5}, None),
    ("left", "4.3", "immediate", {"versioned": True, "history_retention_ms": 15}),
]


def random_fk_scenario(rng: random.Random, variant: str, semantics: str, delivery, right) -> Scenario:
    events = []
    for _ in range(32):
        if rng.random() < 0.55:
            draw = rng.random()
            value = None if draw < 0.12 else {"fk": None if draw < 0.25 else rng.choice(FKS), "v": rng.randrange(4)}
            key = None if rng.random() < 0.04 else rng.choice("abcde")
            events.append({"side": "left", "key": key, "value": value, "ts": rng.randrange(60)})
        else:
            draw = rng.random()  # now and then a customer whose value is "": zero bytes, read back as null
            value = None if draw < 0.2 else "" if draw < 0.27 else f"c{rng.randrange(9)}"
            events.append({"side": "right", "key": rng.choice(FKS), "value": value, "ts": rng.randrange(60)})
    data = {
        "join": "fk",
        "variant": variant,
        "semantics": semantics,
        "foreign_key": "fk",
        "partitions": 2,
        "delivery": delivery,
        "events": events,
    }
    if right:
        data["right"] = right
    return Scenario.from_dict(data)


@pytest.fixture(scope="module")
def random_run(spark):
    rng = random.Random(12)
    scenarios = [random_fk_scenario(rng, *kind) for kind in KINDS for _ in range(2)]
    return run_scenarios(spark, scenarios), scenarios


def _fk(value):
    return None if value is None else extract_foreign_key("fk", value)


def expected_restriction(full, key, partition):
    """The steps of ``full`` that concern left key ``key`` of ``partition``, found by following its
    messages (not by reading the messages' keys): its left records, the right records of its
    foreign keys, the subscriptions its records sent, the responses to them and the responses
    right updates sent to it; and the ids of every message of that chain."""
    own = [
        s for s in full.steps if s.message is None and s.record.side is Side.LEFT and s.record.partition == partition
    ]
    own = [s.index for s in own if s.record.key == key]
    fks = {fk_bytes(_fk(full[i].record.value)) for i in own if _fk(full[i].record.value) is not None}
    rights = {
        s.index
        for s in full.steps
        if s.message is None
        and s.record.side is Side.RIGHT
        and s.record.key is not None
        and fk_bytes(s.record.key) in fks
    }
    senders = set(own)
    chain = set()
    for s in full.steps:  # every message is delivered after the step that sent it
        m = s.message
        if m is None:
            continue
        from_right = m.sent_step in rights and m.topic != SUBSCRIPTION and m.key == key and m.partition == partition
        if m.sent_step in senders or from_right:
            chain.add(s.index)
            senders.add(s.index)
    emitting = {s.index for s in full.steps if any(o.key == key and o.partition == partition for o in s.outputs)}
    return sorted(set(own) | rights | chain | emitting), senders, fks


def view(step, mapping):
    r = step.record
    outputs = [
        (o.key, o.left, o.right, o.value, o.ts, o.tombstone, o.kind.value, mapping.get(o.origin_step, o.origin_step))
        for o in step.outputs
    ]
    return (
        type(step).__name__,
        r.side.value,
        r.key,
        r.value,
        r.ts,
        r.partition,
        r.offset,
        step.fate,
        step.reason,
        outputs,
    )


def test_the_fk_drill_down_equals_the_whole_trace_restricted_to_the_left_key(random_run):
    result, scenarios = random_run
    checked = 0
    for scenario_id, scenario in enumerate(scenarios):
        full = result.trace(0, scenario=scenario_id)
        assert [s.to_dict() for s in full.steps] == [s.to_dict() for s in kjoin.run(scenario).steps]
        lefts = {
            (s.record.partition, s.record.key)
            for s in full.steps
            if s.message is None and s.record.side is Side.LEFT and s.record.key is not None
        }
        for partition, key in sorted(lefts):
            drill = result.trace(partition, scenario=scenario_id, key=key)
            assert isinstance(drill, FkKeyTrace) and drill.exact
            indexes, senders, fks = expected_restriction(full, key, partition)
            assert drill.task_steps == indexes, (scenario_id, partition, key)
            mapping = {full_index: i for i, full_index in enumerate(indexes)}
            wanted = []
            for i in indexes:
                step = full[i]
                mine = replace(
                    step, outputs=tuple(o for o in step.outputs if o.key == key and o.partition == partition)
                )
                wanted.append(view(mine, mapping))
            assert [view(s, {}) for s in drill.steps] == wanted, (scenario_id, partition, key)
            assert [drill.task_steps[s.index] for s in drill.key_steps()] == [
                i for i in indexes if full[i].message is None and full[i].record.side is Side.LEFT
            ]
            for j, i in enumerate(indexes):
                mine, whole = drill.state_at(j), full.state_at(i)
                assert mine.table("left", partition) == [r for r in whole.table("left", partition) if r["key"] == key]
                assert mine.versions("right", 0) + mine.versions("right", 1) == [
                    r for t in (0, 1) for r in whole.versions("right", t) if fk_bytes(r["key"]) in fks
                ]
                assert mine.table("right", 0) + mine.table("right", 1) == [
                    r for t in (0, 1) for r in whole.table("right", t) if fk_bytes(r["key"]) in fks
                ]
                assert mine.subscriptions(0) + mine.subscriptions(1) == [
                    r for t in (0, 1) for r in whole.subscriptions(t) if r["pk"] == key
                ]
                assert [m.id for m in mine.in_flight()] == [
                    m.id
                    for m in whole.in_flight()
                    if m.sent_step in senders or (m.topic != SUBSCRIPTION and m.key == key and m.partition == partition)
                ]
            checked += 1
    assert checked >= 40


def test_with_immediate_delivery_the_drill_down_is_what_the_keys_own_records_give(random_run):
    """Independence: with every message delivered at once and plain tables, nothing about one left
    key depends on the others; running only its left records and the right records of its foreign
    keys gives the drill-down's results and fates."""
    result, scenarios = random_run
    compared = 0
    for scenario_id, scenario in enumerate(scenarios):
        if scenario.delivery.mode != "immediate" or scenario.right.versioned:
            continue
        full = result.trace(0, scenario=scenario_id)
        lefts = {
            (s.record.partition, s.record.key)
            for s in full.steps
            if s.message is None and s.record.side is Side.LEFT and s.record.key is not None
        }
        for partition, key in sorted(lefts):
            drill = result.trace(partition, scenario=scenario_id, key=key)
            inputs = [s.record for s in drill.steps if s.message is None]
            alone = kjoin.run(
                replace(
                    scenario, events=tuple(Event(r.side, r.key, r.value, r.ts, r.partition, r.offset) for r in inputs)
                )
            )
            outputs = lambda trace: [  # noqa: E731
                (o.key, o.left, o.right, o.value, o.ts, o.kind.value) for o in trace.outputs if o.key == key
            ]
            fates = lambda trace: [  # noqa: E731
                (s.record.offset, s.fate, s.reason)
                for s in trace.steps
                if s.message is None and s.record.side is Side.LEFT
            ]
            assert outputs(alone) == outputs(drill), (scenario_id, key)
            assert fates(alone) == fates(drill), (scenario_id, key)
            compared += 1
    assert compared >= 15


def test_every_fk_result_has_a_reason_and_null_results_agree_with_why(random_run):
    result, scenarios = random_run
    rows = result.explained_outputs.collect()
    assert rows and all(r["reason"] is not None and r["reason"] != "unexplained" for r in rows)
    seen = set()
    for r in rows:
        scenario = scenarios[r["scenario"]]
        full = result.trace(0, scenario=r["scenario"])
        if r["kind"] == OutputKind.JOINED.value:
            assert r["reason"] == "matched"
        elif r["tombstone"]:
            assert r["reason"] == "tombstone"
        else:
            assert scenario.variant == "left" and r["right"] is None
            origin = full[r["origin_step"]]
            seen.add(r["reason"])
            if r["reason"] == "empty-foreign-value":  # a right value of zero bytes: the response reads it as null
                assert origin.message is None and full[r["step"]].message.value.foreign_value == ""
                if origin.record.side is Side.LEFT:
                    why = result.why(origin.record.partition, origin.record.offset, side="left", scenario=r["scenario"])
                    assert why.verdict == "empty-foreign-value" and "zero bytes" in why.text, why
            elif origin.record.side is Side.RIGHT:
                assert r["reason"] == "partner-deleted" and origin.record.value is None
            elif r["reason"] == "foreign-key-changed":
                assert scenario.semantics.relaxed_null_keys and not scenario.semantics.fk_change_only_unsubscribes
            else:
                why = result.why(
                    origin.record.partition, origin.record.offset, side="left", scenario=r["scenario"]
                ).verdict
                assert why == r["reason"], (r, why)
    verdicts = {"null-foreign-key", "partner-later", "partner-deleted", "foreign-key-changed", "empty-foreign-value"}
    assert verdicts <= seen, seen


# -- why: planted causes ---------------------------------------------------------------------------
def L(key, fk, ts, **more):
    return {"side": "left", "key": key, "value": {"fk": fk, **more}, "ts": ts}


def R(key, value, ts):
    return {"side": "right", "key": key, "value": value, "ts": ts}


PLANTED = [
    R("X", "x1", 1),
    L("a", "X", 2),  # joined
    L("b", "Y", 10),  # partner-later: Y comes 30 ms later
    L("c", "P", 50),  # partner-processed-later: P's ts is 20, but it is processed after c
    R("Y", "y1", 40),
    R("P", "p1", 20),
    L("d", "Q", 30),  # partner-never
    R("D", "d1", 31),
    R("D", None, 32),
    L("e", "D", 33),  # partner-deleted
    L("g", None, 36),  # null-foreign-key
    R("X", "x2", 37),  # answers a
]
CAUSES = {"a": "joined", "b": "partner-later", "c": "partner-processed-later", "d": "partner-never"}
CAUSES.update({"e": "partner-deleted", "g": "null-foreign-key"})
RACE = [R("Y", "bar", 1), L("A", "Y", 2, v=1), L("A", "Y", 3, v=2)]
RACE += [{"deliver": "subscription"}, {"deliver": "response"}, {"deliver": "all"}]


def fk_scenario(events, variant="left", **more):
    return Scenario.from_dict({"join": "fk", "variant": variant, "foreign_key": "fk", "events": events, **more})


@pytest.fixture(scope="module")
def planted_run(spark):
    scenarios = [
        fk_scenario(PLANTED, partitions=2),
        fk_scenario(PLANTED, "inner", partitions=2),
        fk_scenario(RACE, delivery="explicit"),
        fk_scenario(PLANTED, "inner", partitions=2, semantics="3.8"),
        fk_scenario([R("X", "x", 1), L("h", "X", 2), L("h", None, 3)], "inner"),
        fk_scenario([R("X", "x", 1), L("h", "X", 2), L("h", None, 3)], "inner", semantics="3.8"),
    ]
    return run_scenarios(spark, scenarios)


def left_offset(scenario_events, key):
    lefts = [e for e in scenario_events if e.get("side") == "left"]
    return lefts, next(i for i, e in enumerate(lefts) if e["key"] == key)


@pytest.mark.parametrize("scenario_id", [0, 1, 3])
def test_why_names_each_planted_cause_of_a_foreign_key_join(planted_run, scenario_id):
    result = planted_run
    full = result.trace(0, scenario=scenario_id)
    for key, cause in CAUSES.items():
        step = next(s for s in full.steps if s.message is None and s.record.side is Side.LEFT and s.record.key == key)
        d = result.why(step.record.partition, step.record.offset, side="left", scenario=scenario_id)
        assert d.verdict == cause, (scenario_id, key, d)
        assert d.verdict in VERDICTS and d.step == step.index and d.record == step.record
        assert f"partition {step.record.partition}, offset {step.record.offset}" in d.text
        assert isinstance(d.trace, FkKeyTrace) and d.trace.find(offset=step.record.offset, side="left") is not None
        rights = [s for s in full.steps if s.message is None and s.record.side is Side.RIGHT]
        fk = step.record.value["fk"]
        if cause == "joined":
            assert [(p.side, p.offset, p.value) for p in d.partners] == [("right", 0, "x1")]
        elif cause in ("partner-later", "partner-processed-later"):
            partner = next(s for s in rights if s.record.key == fk)
            assert [(p.side, p.partition, p.offset, p.ts) for p in d.partners] == [
                ("right", partner.record.partition, partner.record.offset, partner.record.ts)
            ]
            assert d.delay_ms == partner.record.ts - step.record.ts == (30 if cause == "partner-later" else -30)
            between = [s for s in full.steps[step.index + 1 : partner.index] if s.message is None]
            assert d.records_between == len(between)
            assert f"ts {partner.record.ts}" in d.text
        elif cause == "partner-deleted":
            assert [p.value for p in d.partners] == [None]
            assert "tombstone" in d.text
        elif cause == "partner-never":
            assert not d.partners and not any(s.record.key == fk for s in rights)
        elif cause == "null-foreign-key":
            inner_drops = scenario_id in (1, 3)
            assert ("drops" in d.text) == inner_drops and ("null right value" in d.text) != inner_drops
            assert step.reason is (Reason.NULL_FOREIGN_KEY if inner_drops else Reason.SUBSCRIPTION_SENT)
        if cause.startswith("partner-") and scenario_id != 0:
            assert "An inner join emits nothing" in d.text


def test_why_of_a_right_record_names_the_left_keys_it_answered(planted_run):
    full = planted_run.trace(0, scenario=0)
    update = next(s for s in full.steps if s.message is None and s.record.key == "X" and s.record.value == "x2")
    d = planted_run.why(update.record.partition, update.record.offset, side="right", scenario=0)
    assert d.verdict == "joined" and [(p.side, p.value) for p in d.partners] == [("left", {"fk": "X"})]
    assert "set the right row X to x2" in d.text and '{"fk":"X"}-x2' in d.text
    first = next(s for s in full.steps if s.message is None and s.record.key == "Y")
    d = planted_run.why(first.record.partition, first.record.offset, side="right", scenario=0)
    assert d.verdict == "joined" and "b (step" in d.text, "Y answered b's subscription"


def test_why_finds_the_stale_response_and_the_change_that_made_it_stale(planted_run):
    d = planted_run.why(0, 0, side="left", scenario=2)
    assert d.verdict == "stale-response"
    assert [(p.side, p.offset, p.value) for p in d.partners] == [("left", 1, {"fk": "Y", "v": 2})]
    assert "dropped it as stale" in d.text and "m3" in d.text
    assert planted_run.why(0, 1, side="left", scenario=2).verdict == "joined"


def test_why_explains_an_inner_joins_null_foreign_key_in_both_eras(planted_run):
    d = planted_run.why(0, 1, side="left", scenario=4)
    assert d.verdict == "null-foreign-key"
    assert "unsubscribes the row from its old foreign key" in d.text and "tombstone" in d.text
    assert [o.tombstone for o in d.trace.outputs] == [False, True]
    before = planted_run.why(0, 1, side="left", scenario=5)
    assert before.verdict == "null-foreign-key" and "an inner join drops it" in before.text
    assert "a result the row had stays in place" in before.text and "KAFKA-16407" in before.text
    assert [o.tombstone for o in before.trace.outputs] == [False], "3.8 keeps the old result"


def test_fk_drill_down_and_why_refuse_what_does_not_exist(planted_run):
    with pytest.raises(SparkInputError, match=r"partition=5: the topics have 2 partitions"):
        planted_run.trace(5, scenario=0, key="a")
    with pytest.raises(SparkInputError, match=r"partition=2: the topics have 2 partitions"):
        planted_run.why(2, 0, scenario=0)
    with pytest.raises(SparkInputError, match=r"no left record at partition 0, offset 99"):
        planted_run.why(0, 99, scenario=0)
    with pytest.raises(SparkInputError, match=r"key=None"):
        planted_run.trace(0, scenario=0, key=None)


def test_the_fk_summary_has_only_the_columns_a_foreign_key_join_can_fill(spark):
    left = run_scenarios(spark, [fk_scenario(PLANTED, partitions=2)])
    summary = left.summary()
    columns = summary.columns
    assert {"partner-later", "partner-never", "partner-deleted", "null-foreign-key"} <= set(columns)
    assert {"subscription-sent", "response-sent", "no-subscriber"} <= set(columns)
    for absent in ("partner-outside-window", "partner-other-partition", "window-open", "stale-response"):
        assert absent not in columns, absent
    assert "foreign-key-changed" not in columns, "the latest left join only unsubscribes (KAFKA-16394)"
    totals = summary.groupBy().sum(*columns[3:]).first()
    reasons = [r["reason"] for r in left.explained_outputs.collect()]
    for verdict in ("partner-later", "partner-processed-later", "partner-deleted", "partner-never", "null-foreign-key"):
        assert totals[f"sum({verdict})"] == reasons.count(verdict) == 1, verdict
    assert totals["sum(matched)"] == reasons.count("matched") >= 3
    old = run_scenarios(spark, [fk_scenario(RACE, semantics="3.8", delivery="explicit")]).summary().columns
    assert "foreign-key-changed" in old and "stale-response" in old
    inner = run_scenarios(spark, [fk_scenario(PLANTED, "inner", semantics="3.8")]).summary().columns
    assert "partner-later" not in inner and "null-foreign-key" in inner, "a step reason: the update is dropped"


def test_a_run_of_foreign_key_and_primary_key_scenarios_explains_both(spark):
    table = Scenario.from_dict(
        {"join": "stream-table", "variant": "left", "events": [L("a", "X", 5), R("a", "x", 6), L("a", "Y", 7)]}
    )
    mixed = run_scenarios(spark, [table, fk_scenario(PLANTED, partitions=2)])
    rows = mixed.explained_outputs.collect()
    by_scenario = {i: sorted(r["reason"] for r in rows if r["scenario"] == i) for i in (0, 1)}
    assert by_scenario[0] == ["matched", "partner-later"]
    alone = run_scenarios(spark, [fk_scenario(PLANTED, partitions=2)]).explained_outputs.collect()
    assert by_scenario[1] == sorted(r["reason"] for r in alone)
    assert mixed.why(0, 0, scenario=0).verdict == "partner-later"
    assert mixed.why(0, 0, scenario=1).verdict == "joined"


def test_the_summary_explorer_opens_an_fk_left_key_at_its_null_result(spark):
    from kjoin_viz.summary_explorer import SummaryExplorer

    run = run_scenarios(spark, [fk_scenario(PLANTED, partitions=2)])
    explorer = SummaryExplorer(run)
    rows = explorer.sort_by("partner-later")
    assert run.decode_key(rows[0]["key"]) == "b" and rows[0]["partner-later"] == 1, "keys travel as JSON text"
    stepper = explorer.select(0)
    step = stepper.trace[stepper.step]
    assert step.message is not None and step.outputs[0].key == "b" and step.outputs[0].right is None
    assert run.decode_key(explorer.sort_by("response-sent")[0]["key"]) in ("X", "Y", "P", "D", "Q"), (
        "a foreign key's row: its subscriptions were delivered there"
    )
    assert explorer.select(0) is None and "follows a left key" in explorer.detail.children[1].value
    with pytest.raises(SparkInputError, match=r"partition 0 has no left record with this key"):
        run.trace(0, key="nobody")
