"""kjoin's processing order against a running Kafka Streams application, a CI sample.

One KRaft broker (``kafka_oracle/kafka_broker.py``) on free ports of 127.0.0.1 and one ``BrokerHarness`` JVM serve the
module, and are stopped by its fixture. Every scenario's records are on the broker before the application starts;
each task's processing order (from the record context) and its outputs (each with the input record that wrote it)
must be kjoin's. ``make broker-check`` runs the full sweep. Without Java, Maven, the harness or the broker's jars
these tests fail, they never skip (``make kafka-oracle kafka-live`` sets them up).
"""

from __future__ import annotations

import pytest

import kjoin
from kafka_oracle.broker_check import BROKER_JUDGES, BrokerOracle, arrival_phases, generate, judge
from kafka_oracle.oracle_check import KafkaVersion, build, scenario_yaml

SAMPLE = int(__import__("os").environ.get("KJOIN_BROKER_EXAMPLES", "4"))
"""Random scenarios per run (a few seconds each: an application starts, runs and is closed for each)."""


@pytest.fixture(scope="module")
def oracle(broker):
    build()
    with BrokerOracle(BROKER_JUDGES[0], broker) as running:
        yield running


def scenario(join, events, partitions=1, **options):
    return kjoin.Scenario.from_dict(
        {"join": join, "variant": "left", "partitions": partitions, "events": events, **options}
    )


def test_a_task_takes_the_lowest_head_timestamp_and_keeps_each_partitions_order(oracle):
    """Listed (produced) right first, but the left partition's head is earlier: the task takes it first; the late
    left record (ts 1 after ts 9) stays behind its predecessor."""
    events = [
        {"side": "right", "key": "k", "value": "a", "ts": 5},
        {"side": "left", "key": "k", "value": "A", "ts": 3},
        {"side": "left", "key": "k", "value": "B", "ts": 9},
        {"side": "left", "key": "k", "value": "C", "ts": 1},
    ]
    verdict = judge(oracle, scenario("stream-table", events))
    assert verdict.kafka_order == {0: [("left", 0, 0), ("right", 0, 0), ("left", 0, 1), ("left", 0, 2)]}
    assert verdict.kafka_outputs == {
        0: [["left:0:0", "k", "A-null", 3], ["left:0:1", "k", "B-a", 9], ["left:0:2", "k", "C-a", 1]]
    }
    assert not verdict.order_differs and not verdict.outputs_differ, verdict.describe()


def test_random_multi_partition_scenarios_agree_with_the_running_application(oracle):
    version = KafkaVersion(oracle.version)
    batch = generate(version, SAMPLE)  # every join kind the wide generator draws, foreign-key joins replayed
    assert len(batch) == SAMPLE
    compared = []
    for number, drawn in enumerate(batch):
        verdict = judge(oracle, drawn)
        compared.append(sum(len(records) for records in verdict.kafka_order.values()))
        assert not (verdict.order_differs or verdict.outputs_differ), (
            f"scenario {number} differs from the running Kafka {oracle.version} application: {verdict.describe()}\n"
            f"{scenario_yaml(drawn)}"
        )
    assert sum(compared) == sum(len(s.records()) for s in batch), "every input record must be in the order log"


def test_a_foreign_key_join_replayed_in_the_applications_order_gives_its_outputs(oracle):
    """A foreign-key join's tasks talk through the broker: when a subscription reaches the customers' task depends
    on fetch timing. kjoin replays the order the application logged (records and messages, one thread) with explicit
    delivery and must give the same results, each attributed to the input record that set its chain off."""
    events = [
        {"side": "right", "key": "X", "value": "x1", "ts": 1},
        {"side": "left", "key": "A", "value": {"fk": "X", "v": 1}, "ts": 2},
        {"side": "right", "key": "X", "value": "x2", "ts": 3},
        {"side": "left", "key": "B", "value": {"fk": "X", "v": 2}, "ts": 4},
        {"side": "left", "key": "A", "value": {"fk": "Y", "v": 3}, "ts": 5},
    ]
    verdict = judge(oracle, scenario("fk", events, foreign_key="fk"))
    assert verdict.kafka_outputs["B"] == [["left:0:1", "B", '{"fk":"X","v":2}-x2', 4]]
    assert verdict.kafka_outputs["A"][-1] == ["left:0:2", "A", '{"fk":"Y","v":3}-null', 5]
    assert not verdict.order_differs and not verdict.outputs_differ, verdict.describe()


TIE_KEYS = ("k3", "k0", "k8", "k14")
"""A key of each of four partitions (Kafka's default partitioner)."""


def test_on_equal_head_timestamps_a_task_takes_the_partition_it_did_not_take_from_last(oracle):
    """Kafka's PartitionGroup keeps the non-empty partitions in a java.util.PriorityQueue by head timestamp: the
    partition it has just taken a record from goes back in behind one with an equal head, so ties alternate.
    Every task starts on a tie (the left first: the partitions of one poll are offered in the order of the
    consumer's HashMap, which for these topic names puts left before right)."""
    events = []
    for key in TIE_KEYS:
        events += [
            {"side": "left", "key": key, "value": "A", "ts": 5},
            {"side": "left", "key": key, "value": "B", "ts": 5},
            {"side": "left", "key": key, "value": "C", "ts": 7},
            {"side": "right", "key": key, "value": "a", "ts": 5},
            {"side": "right", "key": key, "value": "b", "ts": 7},
        ]
    verdict = judge(oracle, scenario("stream-table", events, partitions=4))
    for partition, key in enumerate(TIE_KEYS):
        left, right = (lambda offset: ("left", partition, offset)), (lambda offset: ("right", partition, offset))
        assert verdict.kafka_order[partition] == [left(0), right(0), left(1), right(1), left(2)]
        assert [output[1:3] for output in verdict.kafka_outputs[partition]] == [
            [key, "A-null"],
            [key, "B-a"],
            [key, "C-b"],
        ]
    assert not verdict.order_differs and not verdict.outputs_differ, verdict.describe()


def test_which_partition_a_task_takes_first_on_a_tie_follows_the_topic_names_hashes(oracle):
    """The partitions of one poll reach their tasks in the order of the consumer's HashMap of topic-partitions: with
    topic names that put every right partition first there, every task starts on the right. kjoin cannot know the
    hashes of a user's topics and offers the left first (so its oracle runs choose names that do the same)."""
    events = []
    for key in TIE_KEYS:
        events += [
            {"side": "left", "key": key, "value": "A", "ts": 5},
            {"side": "right", "key": key, "value": "a", "ts": 5},
        ]
    verdict = judge(oracle, scenario("stream-table", events, partitions=4), left_first=False)
    for partition, key in enumerate(TIE_KEYS):
        assert verdict.kafka_order[partition] == [("right", partition, 0), ("left", partition, 0)]
        assert [output[1:3] for output in verdict.kafka_outputs[partition]] == [[key, "A-a"]]
    assert verdict.order_differs, "kjoin offers the left partition first"


def test_a_lagging_customers_partition_leaves_early_orders_without_their_customer(oracle):
    """``arrival: {right: {lag_ms: 5000}}`` with ``max.task.idle.ms = 0``: the customers reach the task 5 s after
    their timestamps. Replayed as phases of production (each side's next records produced once the application has
    processed what came before), the running application takes the orders first and joins them with null, as kjoin
    says."""
    from tests.test_arrival import ORDERS_AND_CUSTOMERS

    drawn = kjoin.Scenario.from_dict(ORDERS_AND_CUSTOMERS)
    arrival = kjoin.scenario.Arrival(0, 5000)
    assert arrival_phases(drawn, arrival) == ([1, 0, 1, 0, 2], False)
    verdict = judge(oracle, drawn, arrival=arrival)
    assert verdict.kafka_order[0] == [("left", 0, 0), ("left", 0, 1), ("right", 0, 0), ("right", 0, 1), ("left", 0, 2)]
    assert [output[2] for output in verdict.kafka_outputs[0]] == ["o1-null", "o2-null", "o3-Ann"]
    assert not verdict.order_differs and not verdict.outputs_differ, verdict.describe()


def test_the_harness_reads_every_output_of_an_application_that_sends_them_late(oracle):
    """The application's producer holds each output 400 ms (``send_delay_ms``, a producer interceptor) and the
    harness's quiet time is 1 ms: it must still read every output, because it waits until the application has
    committed every partition it reads (Kafka Streams flushes its producer before it commits). Before, a quiet time
    of 700 ms ended the read, and on a loaded machine sweep scenario 309 lost its last output so."""
    events = [
        {"side": "left", "key": "k", "value": "A", "ts": 1},
        {"side": "right", "key": "k", "value": "a", "ts": 2},
        {"side": "left", "key": "k", "value": "B", "ts": 3},
    ]
    drawn = scenario("stream-stream", events, window={"before_ms": 5, "after_ms": 5, "grace_ms": 0})
    verdict = judge(oracle, drawn, harness_options={"quiet_ms": 1, "send_delay_ms": 400})
    assert verdict.kafka_outputs == {0: [["right:0:0", "k", "A-a", 2], ["left:0:1", "k", "B-a", 3]]}
    assert not verdict.order_differs and not verdict.outputs_differ, verdict.describe()
