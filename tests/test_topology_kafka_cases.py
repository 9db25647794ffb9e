"""Kafka's own foreign-key integration tests, run as kjoin topologies: a foreign-key chain over three
tables on 3, 5 and 7 partitions (KTableKTableForeignKeyInnerJoinMultiIntegrationTest), a foreign-key result joined
again with its left table by primary key (KTableKTableForeignKeyJoinScenarioTest), and a join whose tables and
internal topics use custom partitioners (KTableKTableForeignKeyInnerJoinCustomPartitionerIntegrationTest). The data,
the functions and the expected results are the tests' own; Kafka's run on a broker with three (or two) application
instances, which changes which machine runs a task, not what a task computes."""

from __future__ import annotations

import pytest

from kjoin import Topology


@pytest.mark.parametrize("schedule", ["test-driver", "timestamp"])
def test_foreign_key_chain_over_three_tables(schedule):
    """KTableKTableForeignKeyInnerJoinMultiIntegrationTest.shouldInnerJoinMultiPartitionQueryable."""
    b = Topology(key_serde="typed")  # the test's keys are Integers (IntegerSerde)
    table1 = b.table("table1", partitions=3)
    table2 = b.table("table2", partitions=5)
    table3 = b.table("table3", partitions=7)

    def table_one_key(value: float) -> str:
        return str(int(value))

    def joined_table_key(value: str) -> int:
        return 10 if "value2=10" in value else 0  # "hardwired to return the desired foreign key as a test shortcut"

    table1.join(table2, lambda v1, v2: f"value1={v1},value2={v2}", foreign_key=table_one_key).join(
        table3, lambda v1, v2: f"{v1},value3={v2}", foreign_key=joined_table_key
    ).to("output", partitions=11)
    events = [
        *(
            {"topic": "table1", "key": k, "value": v, "ts": 0}
            for k, v in [(1, 1.33), (2, 2.22), (3, -1.22), (4, -2.22)]
        ),
        *({"topic": "table2", "key": str(n), "value": 10 * n, "ts": 0} for n in range(10)),
        {"topic": "table3", "key": 10, "value": "waffle", "ts": 0},
    ]
    trace = b.run(events, schedule)
    assert {(o.key, o.value) for o in trace.outputs("output")} == {(1, "value1=1.33,value2=10,value3=waffle")}
    assert len(b.graph.subtopologies()) == 3


def test_foreign_key_result_joined_with_its_left_table_by_primary_key():
    """KTableKTableForeignKeyJoinScenarioTest.shouldWorkWithDefaultSerdes: aTable.join(aTable.join(bTable, fk))."""
    b = Topology(key_serde="typed")  # the test's keys are Integers (IntegerSerde)
    a_table, b_table = b.table("A"), b.table("B")
    fk_result = a_table.join(b_table, lambda a, b_: f"({a},{b_})", foreign_key=lambda value: int(value.split("-")[0]))
    a_table.join(fk_result, lambda a, fk: f"({a},{fk})").to("output")
    trace = b.run(
        [{"topic": "A", "key": 1, "value": "999-alpha", "ts": 0}, {"topic": "B", "key": 999, "value": "beta", "ts": 0}]
    )
    final = {o.key: o.value for o in trace.outputs("output")}  # readKeyValuesToMap
    assert final == {1: "(999-alpha,(999-alpha,beta))"}


def _java_hash(text: str) -> int:
    """Java's String.hashCode."""
    h = 0
    for char in text:
        h = (31 * h + ord(char)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _key_b(value: str) -> str:
    return value[: value.index("-")]


def test_custom_partitioners_keep_the_join_co_partitioned():
    """KTableKTableForeignKeyInnerJoinCustomPartitionerIntegrationTest.shouldInnerJoinMultiPartitionQueryable: both
    tables are written with custom partitioners (Repartitioned.withStreamPartitioner), and the join is told them
    (TableJoined.with(partitioner, otherPartitioner)), so that every subscription reaches the task that holds its
    foreign key."""
    left_partitioner = lambda key, n: abs(_java_hash(_key_b(key))) % n  # noqa: E731
    right_partitioner = lambda key, n: abs(_java_hash(key)) % n  # noqa: E731
    b = Topology(partitions=4)
    table1 = b.table("table1", partitioner=left_partitioner)
    table2 = b.table("table2", partitioner=right_partitioner)
    table1.join(
        table2,
        lambda v1, v2: f"value1={v1},value2={v2}",
        foreign_key=_key_b,
        partitioner=left_partitioner,
        other_partitioner=right_partitioner,
    ).to("output")
    events = [
        *({"topic": "table1", "key": f"ID123-{n}", "value": f"ID123-A{n}", "ts": 0} for n in range(1, 5)),
        {"topic": "table2", "key": "ID123", "value": "BBB", "ts": 0},
    ]
    trace = b.run(events)
    assert {(o.key, o.value) for o in trace.outputs("output")} == {
        (f"ID123-{n}", f"value1=ID123-A{n},value2=BBB") for n in range(1, 5)
    }
    home = abs(_java_hash("ID123")) % 4
    subscriptions = [s.record for s in trace if s.record.topic.endswith("subscription-registration-topic")]
    assert {r.partition for r in subscriptions} == {home}
    assert {s.task for s in trace if s.record.topic == "table2"} == {f"1_{home}"}


def test_without_the_other_partitioner_subscriptions_miss_the_foreign_keys_task():
    """The same join told nothing: murmur2 sends each subscription to another partition than the one the custom
    partitioner put ID123 on, where no right row is: no result (what TableJoined exists to prevent)."""
    right_partitioner = lambda key, n: abs(_java_hash(key)) % n  # noqa: E731
    from kjoin.partitioner import default_partition

    fk = next(f"ID{n}" for n in range(100, 200) if default_partition(f"ID{n}", 4) != right_partitioner(f"ID{n}", 4))
    b = Topology(partitions=4)
    table1 = b.table("table1")
    table2 = b.table("table2", partitioner=right_partitioner)
    table1.join(table2, foreign_key=_key_b).to("output")
    events = [
        {"topic": "table2", "key": fk, "value": "BBB", "ts": 0},
        {"topic": "table1", "key": f"{fk}-1", "value": f"{fk}-A1", "ts": 1},
    ]
    trace = b.run(events)
    assert trace.outputs() == []
    (subscription,) = [s for s in trace if s.record.topic.endswith("subscription-registration-topic")]
    assert subscription.record.partition == default_partition(fk, 4) != right_partitioner(fk, 4)


@pytest.mark.parametrize("schedule", ["test-driver", "timestamp"])
def test_a_foreign_key_join_spread_over_two_application_instances(schedule):
    """KTableKTableForeignKeyJoinDistributedTest.shouldBeInitializedWithDefaultSerde: two KafkaStreams clients
    share the foreign-key join's two tasks (each must run one, "RUNNING with active tasks"); the output is the
    tests' own expected set."""
    b = Topology()
    left, right = b.table("left_table"), b.table("right_table")
    left.join(right, lambda v1, v2: f"({v1},{v2})", foreign_key=lambda value: value.split("|")[1]).to(
        "output-topic", partitions=11
    )
    events = [
        *({"topic": "left_table", "key": f"lhsValue{n}", "value": f"lhsValue{n}|rhs{n}", "ts": 0} for n in range(1, 5)),
        *({"topic": "right_table", "key": f"rhs{n}", "value": f"rhsValue{n}", "ts": 0} for n in range(1, 4)),
    ]
    assert b.tasks() == ["0_0", "1_0"]
    trace = b.run(events, schedule, assignment={"0_0": 0, "1_0": 1})
    assert {(o.key, o.value) for o in trace.outputs("output-topic")} == {
        ("lhsValue1", "(lhsValue1|rhs1,rhsValue1)"),
        ("lhsValue2", "(lhsValue2|rhs2,rhsValue2)"),
        ("lhsValue3", "(lhsValue3|rhs3,rhsValue3)"),
    }
    assert {step.instance for step in trace} == {0, 1}  # both clients ran active tasks
    assert {(step.task, step.instance) for step in trace} == {("0_0", 0), ("1_0", 1)}
