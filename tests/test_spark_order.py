"""Processing order on Spark is Kafka's, and the drill-down agrees with the Spark run.

``run_join`` orders a task's records by ``(_order_ts, _tie, offset)`` (the running
max timestamp of the record's own partition, then the rank among ties, then offset: :mod:`kjoin.spark.ties`).
These tests check that this is exactly :func:`kjoin.ordering.merge_by_timestamp` (a Kafka task
picks the input partition whose head record has the lowest timestamp; on a tie the one it did not take its last
record from, :class:`kjoin.ordering.PartitionGroup`), over random inputs with ties and out-of-order timestamps, and that
:meth:`SparkRun.trace` of a partition gives the Spark run's outputs and fates for it.

One hypothesis example is one Spark job over many partitions: every partition is an
independent random task (its own left and right records), so a few examples check
hundreds of tasks.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kjoin.ordering import merge_by_timestamp
from kjoin.records import Record, Side
from kjoin.spark import Topic, run_join
from kjoin.spark.ties import PROCESSING_ORDER
from tests.spark_compare import reference_outputs

pytestmark = pytest.mark.spark

SETTINGS = settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
    database=None,
)

KEYS = st.sampled_from(["a", "b", "c", None])
VALUES = st.one_of(st.none(), st.sampled_from(["A", "B", "C"]))


@st.composite
def partition_logs(draw, max_ts: int, min_size: int = 0) -> tuple[list[tuple], list[tuple]]:
    """One task's two input partitions: (key, value, ts) in log (offset) order; timestamps
    from a small range, so ties between and within partitions are frequent and most
    partitions are out of order."""
    record = st.tuples(KEYS, VALUES, st.integers(0, max_ts))
    return draw(st.lists(record, min_size=min_size, max_size=12)), draw(
        st.lists(record, min_size=min_size, max_size=12)
    )


@st.composite
def tasks(
    draw, max_ts: int = 6, max_tasks: int = 60, min_tasks: int = 1, min_records: int = 0
) -> list[tuple[list[tuple], list[tuple]]]:
    return draw(st.lists(partition_logs(max_ts, min_records), min_size=min_tasks, max_size=max_tasks))


def topics(spark, cases) -> tuple[Topic, Topic, list[Record], list[Record]]:
    """Two co-partitioned topics: partition ``p`` holds case ``p``'s logs."""
    left, right = [], []
    for partition, (left_log, right_log) in enumerate(cases):
        left += [Record(Side.LEFT, k, v, ts, partition, offset) for offset, (k, v, ts) in enumerate(left_log)]
        right += [Record(Side.RIGHT, k, v, ts, partition, offset) for offset, (k, v, ts) in enumerate(right_log)]
    schema = "key string, value string, ts long, partition int, offset long"

    def topic(records):
        frame = spark.createDataFrame([(r.key, r.value, r.ts, r.partition, r.offset) for r in records], schema)
        return Topic(frame, partitions=len(cases))

    return topic(left), topic(right), left, right


def kafka_order(left: list[Record], right: list[Record], partition: int) -> list[tuple[str, int]]:
    merged = merge_by_timestamp(
        [r for r in left if r.partition == partition], [r for r in right if r.partition == partition]
    )
    return [(r.side.value, r.offset) for r in merged]


@SETTINGS
@given(cases=tasks())
def test_run_join_processes_each_task_in_kafkas_merge_order(spark, cases):
    """Each record's ``step`` (its rank in the task's processing order, read from the
    output and fate rows it produced) equals its position in ``merge_by_timestamp``; and
    the records frame sorted as run.py sorts it is the same order."""
    left_topic, right_topic, left, right = topics(spark, cases)
    result = run_join(left_topic, right_topic, "stream-table", "left")
    seen: dict[tuple[int, int], tuple[str, int]] = {}
    for row in result.results.select("partition", "step", "side", "offset").collect():  # outputs and fates, one job
        place, record = (row["partition"], row["step"]), (row["side"], row["offset"])
        assert seen.setdefault(place, record) == record, f"two records at step {place}"
    sorted_records: dict[int, list[tuple[str, int]]] = {}
    for row in result.records.orderBy("partition", *PROCESSING_ORDER).select("partition", "side", "offset").collect():
        sorted_records.setdefault(row["partition"], []).append((row["side"], row["offset"]))
    for partition in range(len(cases)):
        expected = kafka_order(left, right, partition)
        steps = sorted(step for p, step in seen if p == partition)
        assert steps == list(range(len(expected))), f"partition {partition}: every record has one step"
        assert [seen[(partition, step)] for step in steps] == expected, f"partition {partition}: {cases[partition]}"
        assert sorted_records.get(partition, []) == expected


def test_a_tie_goes_to_the_side_not_taken_last_and_a_late_record_waits_behind_its_partition():
    """The order being tested, on a hand example: the right partition's head (ts 1) goes
    first; at ts 5 against ts 5 the left wins (the right was taken last); the out-of-order left record (ts 2) is
    only reachable after the left head (ts 5) before it."""
    left = [Record(Side.LEFT, "k", "A", 5, 0, 0), Record(Side.LEFT, "k", "B", 2, 0, 1)]
    right = [Record(Side.RIGHT, "k", "a", 1, 0, 0), Record(Side.RIGHT, "k", "b", 5, 0, 1)]
    assert kafka_order(left, right, 0) == [("right", 0), ("left", 0), ("left", 1), ("right", 1)]


def spark_task_rows(result) -> dict[int, tuple[list[tuple], list[tuple]]]:
    """Per task: the Spark run's outputs and non-joined fates, in emission order (a stable
    sort by step: the native path's rows are unsorted, one per step). One Spark job."""
    tasks: dict[int, tuple[list[tuple], list[tuple]]] = {}
    for r in result.results.collect():
        outputs, steps = tasks.setdefault(r["partition"], ([], []))
        if r["row"] == "output":
            outputs.append((r["step"], r["key"], r["value"], r["ts"], r["tombstone"], r["origin_step"]))
        else:
            steps.append((r["step"], r["fate"], r["reason"], r["until_ms"]))
    return {p: (sorted(o, key=lambda row: row[0]), sorted(s)) for p, (o, s) in tasks.items()}


def trace_rows(trace):
    outputs = [(s.index, o.key, o.value, o.ts, o.tombstone, o.origin_step) for s in trace.steps for o in s.outputs]
    steps = [
        (s.index, s.fate.value, None if s.reason is None else s.reason.value, s.until_ms)
        for s in trace.steps
        if s.fate.value != "joined"
    ]
    return outputs, steps


VERSIONED = {"versioned": True, "history_retention_ms": 6}


@pytest.mark.parametrize(
    "join, variant, window, options",
    [
        ("stream-stream", "outer", {"before_ms": 2, "after_ms": 1, "grace_ms": 1}, None),
        ("stream-table", "left", None, None),
        ("table-table", "outer", None, None),
        ("stream-table", "left", None, {"right": VERSIONED, "grace_ms": 3}),
        ("stream-table", "inner", None, {"right": VERSIONED}),
        ("table-table", "outer", None, {"left": VERSIONED}),
        ("table-table", "inner", None, {"left": VERSIONED, "right": VERSIONED, "versioned_mode": "attempt2"}),
    ],
    ids=[
        "stream-stream",
        "stream-table",
        "table-table",
        "versioned-stream-table-grace",
        "versioned-stream-table",
        "versioned-left-table-table",
        "versioned-table-table-attempt2",
    ],
)
@settings(
    max_examples=2,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
    database=None,
)
@given(cases=tasks(max_ts=12, max_tasks=8, min_tasks=2, min_records=3), pick=st.randoms(use_true_random=False))
def test_the_drill_down_trace_of_a_partition_agrees_with_the_spark_run(
    spark, join, variant, window, options, cases, pick
):
    """The trace keeps every option of the run (versioned tables, grace, versioned mode):
    without them it would disagree with the Spark rows, which the reference engine checks."""
    left_topic, right_topic, left, right = topics(spark, cases)
    result = run_join(left_topic, right_topic, join, variant, window=window, options=options)
    spark_rows = spark_task_rows(result)
    expected = reference_outputs(left, right, join, variant, len(cases), window, options)
    assert {p: [row[:5] for row in outputs] for p, (outputs, _) in spark_rows.items() if outputs} == expected
    for partition in sorted(pick.sample(range(len(cases)), 2)):
        trace = result.trace(partition=partition)
        assert trace_rows(trace) == spark_rows.get(partition, ([], [])), f"partition {partition}: {cases[partition]}"


def test_a_topic_without_partition_and_offset_gets_kafkas_default_partitions(spark):
    """A Topic built directly (no reader) with long keys, nulls among them, and no partition
    or offset columns: run_join assigns murmur2 partitions over all 64 bits of the key and
    offsets in input order, as a Kafka producer would."""
    from kjoin.partitioner import default_partition

    keys = [2**62 + 1, None, -5, 2**53 + 1, 7, 2**53, 12345678901234]
    rows = [(k, f"V{i}", i) for i, k in enumerate(keys)]
    frame = spark.createDataFrame(rows, "key long, value string, ts long").coalesce(1)
    topic = Topic(frame, partitions=5)
    result = run_join(topic, topic, "table-table", "inner", method="processors")
    got = {
        (r["key"], r["offset"]): r["partition"]
        for r in result.records.filter("side = 'left'").select("key", "offset", "partition").collect()
    }
    offsets: dict[int, int] = {}
    expected = {}
    for k in keys:
        p = 0 if k is None else default_partition(k, 5)
        expected[(k, offsets.get(p, 0))] = p
        offsets[p] = offsets.get(p, 0) + 1
    assert got == expected
    # Through a float (a pandas UDF's view of a long column with nulls) the partition would differ.
    assert default_partition(2**53 + 1, 5) != default_partition(int(float(2**53 + 1)), 5)
