"""kjoin's model of a Kafka task's choice between its input partitions (``kjoin.ordering.PartitionGroup``), pinned
against a running application in ``tests/test_broker_oracle.py``; these tests pin the model itself."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kjoin import Record, Side, merge_by_timestamp
from kjoin.ordering import PartitionGroup


def records(side, *stamps, partition=0):
    return [Record(side, "k", f"{side.value[0]}{i}", ts, partition, i) for i, ts in enumerate(stamps)]


def taken(order):
    return [(r.side.value[0], r.offset) for r in order]


def test_on_a_tie_the_task_takes_the_partition_it_did_not_take_from_last():
    left, right = records(Side.LEFT, 5, 5, 7), records(Side.RIGHT, 5, 7)
    assert taken(merge_by_timestamp(left, right)) == [("l", 0), ("r", 0), ("l", 1), ("r", 1), ("l", 2)]


def test_coming_to_a_tie_from_a_lower_timestamp_the_other_partition_goes_first():
    left, right = records(Side.LEFT, 3, 5), records(Side.RIGHT, 5)
    assert taken(merge_by_timestamp(left, right)) == [("l", 0), ("r", 0), ("l", 1)]
    left, right = records(Side.LEFT, 5), records(Side.RIGHT, 3, 5)
    assert taken(merge_by_timestamp(left, right)) == [("r", 0), ("l", 0), ("r", 1)]


def test_a_partition_that_had_nothing_buffered_joins_behind_an_equal_head():
    group = PartitionGroup()
    group.add("right", records(Side.RIGHT, 5, 5))
    assert group.next_record().offset == 0
    group.add("left", records(Side.LEFT, 5))  # arrives now: behind the right's equal head
    assert [(r.side.value[0], r.offset) for r in (group.next_record(), group.next_record())] == [("r", 1), ("l", 0)]
    assert group.peek() is None


class JavaPriorityQueue:
    """java.util.PriorityQueue's array heap written from its source a second way (sift as a loop of swaps), to check
    PartitionGroup's heap on many queues: it never meets more than two in a join, but aggregates and joins of
    several topics do."""

    def __init__(self, key):
        self.key, self.items = key, []

    def offer(self, item):
        self.items.append(item)
        k = len(self.items) - 1
        while k > 0 and self.key(item) < self.key(self.items[(k - 1) // 2]):
            self.items[k], self.items[(k - 1) // 2] = self.items[(k - 1) // 2], item
            k = (k - 1) // 2

    def poll(self):
        top, last = self.items[0], self.items.pop()
        if self.items:
            self.items[0], k, n = last, 0, len(self.items)
            while 2 * k + 1 < n:
                c = 2 * k + 1
                if c + 1 < n and self.key(self.items[c]) > self.key(self.items[c + 1]):
                    c += 1
                if self.key(last) <= self.key(self.items[c]):
                    break
                self.items[k], self.items[c] = self.items[c], last
                k = c
        return top


@pytest.mark.parametrize("seed", range(50))
def test_the_heap_is_javas_on_many_partitions(seed):
    rng = random.Random(seed)
    logs = {name: [rng.randrange(6) for _ in range(rng.randrange(1, 8))] for name in range(rng.randrange(2, 7))}
    group, heads = PartitionGroup(), {name: 0 for name in logs}
    queue = JavaPriorityQueue(lambda name: logs[name][heads[name]])
    for name, stamps in logs.items():
        group.add(name, [Record(Side.LEFT, "k", name, ts, 0, i) for i, ts in enumerate(stamps)])
        queue.offer(name)
    while queue.items:
        name = queue.poll()
        record = group.next_record()
        assert (record.value, record.offset) == (name, heads[name])
        heads[name] += 1
        if heads[name] < len(logs[name]):
            queue.offer(name)
    assert group.peek() is None


# -- why: a verdict that turned on a tie, or on arrival --------------------------------------------------
def _explains(events: list[dict], **fields) -> list[str | None]:
    import kjoin

    scenario = kjoin.Scenario.from_dict({"join": "stream-table", "variant": "left", "events": events, **fields})
    return [step.explain for step in kjoin.run(scenario).steps]


def order(key: str, value: str, ts: int) -> dict:
    return {"side": "left", "key": key, "value": value, "ts": ts}


def customer(key: str, value: str, ts: int) -> dict:
    return {"side": "right", "key": key, "value": value, "ts": ts}


def test_a_null_result_says_its_partner_tied_and_went_behind_because_the_task_had_just_taken_its_side():
    explains = _explains([customer("c9", "Bob", 1), order("c1", "o1", 5), customer("c1", "Ann", 5)])
    text = explains[1]
    assert "The right partition's next record (this record's partner: offset 1, key 'c1', ts 5) had the same " in text
    assert "Kafka's PartitionGroup took this one first: on equal timestamps it takes the partition it did not " in text
    assert "it had just taken the right record at offset 0. So the partner was processed after this record." in text
    assert (
        explains[2].startswith("Table update") and "same timestamp" not in explains[2]
    )  # a table update looks nothing up


def test_a_tie_at_the_start_of_a_task_says_kjoin_takes_the_left_and_kafka_the_hash_order():
    from kjoin.ordering import TIE_AT_START

    explains = _explains([order("c1", "o1", 5), customer("c1", "Ann", 5)])
    assert f"took this one first: {TIE_AT_START}. So the partner" in explains[0]
    assert "HashMap of topic-partitions" in TIE_AT_START


def test_a_partner_behind_a_tying_record_is_named_too():
    explains = _explains(
        [customer("c9", "Bob", 1), order("c1", "o1", 5), customer("c2", "Cy", 5), customer("c1", "Ann", 4)]
    )
    assert "(its next record: offset 1, key 'c2', ts 5)" in explains[1]
    assert "this record's partner (offset 2, ts 4) was behind it" in explains[1]


def test_a_tie_the_lagging_side_lost_says_its_partition_had_not_been_fetched():
    explains = _explains(
        [order("c9", "o0", 1), order("c1", "o1", 5), customer("c1", "Ann", 5)], arrival={"right": {"lag_ms": 3}}
    )
    text = explains[1]
    assert "had the same timestamp as this one, and Kafka's PartitionGroup took this one first: the right " in text
    assert "partition lagged 3 ms (arrival: {right: {lag_ms: 3}}), so it had not been fetched yet (its record " in text
    assert "arrives at ts 8); with " in text
    assert "max.task.idle.ms = 0 the task does not wait for records not produced yet" in text


def test_no_tie_is_mentioned_when_the_record_joined_or_no_partner_tied():
    explains = _explains([customer("c1", "Old", 1), order("c1", "o1", 5), customer("c1", "Ann", 5)])
    assert "same timestamp" not in explains[1]  # it joined Old: its verdict does not turn on the tie
    explains = _explains([customer("c9", "Bob", 1), order("c1", "o1", 5), customer("c2", "Cy", 5)])
    assert "same timestamp" not in explains[1]  # the record tying with it has another key
    explains = _explains([customer("c9", "Bob", 1), order("c1", "o1", 5), customer("c1", "Ann", 6)])
    assert "same timestamp" not in explains[1]  # the partner is later in time: no tie


def test_a_scenario_listing_a_tie_against_kafkas_order_is_told_so():
    explains = _explains([order("c9", "o0", 1), order("c1", "o1", 5), customer("c1", "Ann", 5)])
    assert (
        "the scenario lists this one first; with both partitions buffered Kafka's PartitionGroup would take the "
        in (explains[1])
    )
    assert "right one first here (the task had just taken from this record's partition)" in explains[1]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 60), st.integers(-5, 25)), max_size=40),
    st.integers(0, 70),
    st.integers(-7, 27),
)
def test_key_positions_find_the_first_record_at_or_after_a_position_no_later_than_a_timestamp(entries, start, ts):
    """KeyPositions (the segment tree that keeps arrival_order and ties_taken_first linear) answers what a scan of
    the key's later records answers."""
    from kjoin.ordering import KeyPositions

    entries = sorted(dict(entries).items())  # one record per position, in queue order
    found = KeyPositions()
    for position, stamp in entries:
        found.append(position, stamp)
    found.freeze()
    scanned = next((position for position, stamp in entries if position >= start and stamp <= ts), None)
    assert found.first_no_later(start, ts) == scanned
