"""The documented limit of kjoin's arrival model against a running application, without a broker.

``make broker-check LAGGING=1`` runs applications with ``max.task.idle.ms = 0`` and a lagging side, produced in
phases (``kafka_oracle.broker_check.arrival_phases``). What is deterministic there: each phase after the one before,
each partition in its offset order, a phase with one side in kjoin's order. What is not: when both sides reach the
broker at one moment, which the application's consumer fetches first. These tests pin the classification that tells one
from the other (``explain_lagging``, ``fetch_split``), on orders written by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

import kjoin
from kjoin.scenario import Arrival
from kafka_oracle.broker_check import (
    FETCH_BOUNDARY,
    Verdict,
    arrival_phases,
    explain_lagging,
    fetch_count,
    fetch_split,
    kjoin_order,
    outputs_in_order,
)


@dataclass(eq=False)
class R:
    side: str
    offset: int
    ts: int


LEFT = [R("left", 0, 5), R("left", 1, 9)]
RIGHT = [R("right", 0, 1), R("right", 1, 3)]


def test_one_fetch_of_both_sides_is_the_merge_by_timestamp():
    fetches = fetch_split(LEFT, RIGHT, [RIGHT[0], RIGHT[1], LEFT[0], LEFT[1]])
    assert fetches is not None and fetch_count(fetches) == 1


def test_the_left_fetched_first_needs_a_second_fetch():
    taken = [LEFT[0], RIGHT[0], RIGHT[1], LEFT[1]]  # o at ts 5 before the right's ts 1: the right was not there
    assert fetch_split(LEFT, RIGHT, taken) == [("left", 2), ("take", 1), ("right", 2), ("take", 3)]
    assert fetch_count(fetch_split(LEFT, RIGHT, taken)) == 2


def test_no_fetches_take_a_partition_out_of_its_offset_order_or_lose_a_record():
    assert fetch_split(LEFT, RIGHT, [LEFT[1], RIGHT[0], RIGHT[1], LEFT[0]]) is None
    assert fetch_split(LEFT, RIGHT, [RIGHT[0], RIGHT[1], LEFT[0]]) is None


def test_a_tie_on_one_fetch_goes_left_first_and_on_two_fetches_either_way():
    left, right = [R("left", 0, 5)], [R("right", 0, 5)]
    assert fetch_count(fetch_split(left, right, [left[0], right[0]])) == 1
    assert fetch_count(fetch_split(left, right, [right[0], left[0]])) == 2  # the right fetched first


# The order and its customer reach the broker at one moment (ts 3): the customer at ts 1 with a lag of 2.
SCENARIO = kjoin.Scenario.from_dict(
    {
        "join": "stream-table",
        "variant": "left",
        "events": [
            {"side": "left", "key": "k", "value": "o1", "ts": 3},
            {"side": "right", "key": "k", "value": "c", "ts": 1},
            {"side": "left", "key": "k", "value": "o2", "ts": 9},
        ],
    }
)
ARRIVAL = Arrival(0, 2)


def verdict(kafka: list[tuple[str, int, int]], outputs: dict | None = None) -> Verdict:
    records = {(r.side.value, r.partition, r.offset): r for r in SCENARIO.records()}
    ours = [(r.side.value, r.partition, r.offset) for r in kjoin_order(SCENARIO, ARRIVAL)]
    if outputs is None:
        outputs = outputs_in_order(SCENARIO, [records[s] for s in kafka])
    return Verdict(SCENARIO, {0: kafka}, {0: ours}, outputs, outputs_in_order(SCENARIO, [records[s] for s in ours]))


def test_kjoins_model_fetches_what_arrives_at_one_moment_together():
    assert arrival_phases(SCENARIO, ARRIVAL) == ([0, 0, 1], True)
    assert [(r.side.value, r.offset) for r in kjoin_order(SCENARIO, ARRIVAL)] == [
        ("right", 0),
        ("left", 0),
        ("left", 1),
    ]


def test_the_order_fetched_first_explains_a_null_result_kjoin_did_not_predict():
    fetched_left_first = verdict([("left", 0, 0), ("right", 0, 0), ("left", 0, 1)])
    assert fetched_left_first.order_differs and fetched_left_first.outputs_differ
    assert fetched_left_first.kafka_outputs[0][0][2] == "o1-null"
    explained, words = explain_lagging(fetched_left_first, ARRIVAL)
    assert explained and words.startswith(FETCH_BOUNDARY)
    assert "task 0, phase 0: left 1, take 1, right 1, take 1" in words  # o2 arrives later (phase 1)


def test_outputs_kjoin_cannot_give_in_kafkas_order_are_unexplained():
    order = [("left", 0, 0), ("right", 0, 0), ("left", 0, 1)]
    wrong = {0: [["left:0:0", "k", "o1-c", 3], ["left:0:1", "k", "o2-c", 9]]}
    assert explain_lagging(verdict(order, wrong), ARRIVAL) == (False, "kjoin run in Kafka's order gives other outputs")


def test_a_record_taken_before_the_phase_ahead_of_it_is_unexplained():
    early = verdict([("left", 0, 1), ("left", 0, 0), ("right", 0, 0)], outputs={})
    assert explain_lagging(early, ARRIVAL) == (False, "task 0 took a record before the phase ahead of it was processed")
