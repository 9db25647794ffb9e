"""The Python-side merge into processing order (:mod:`kjoin.spark.passes.merge`), outside Spark.

The per-task passes of ``run_join`` get each task's records sorted by input partition (held side
first, then by offset) and merge them into Kafka's processing order themselves. These tests feed
:func:`merged_batches` random tasks cut into random Arrow batches, with tiny spill thresholds (so the
held side goes through the local Arrow file) and tiny output batches, and compare the result with
:func:`kjoin.ordering.merge_by_timestamp` per task (Kafka's ``PartitionGroup``, ties included; a null timestamp
as the lowest). ``tests/test_spark_order.py`` checks the same order end to end through Spark.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kjoin.ordering import merge_by_timestamp
from kjoin.records import Record, Side
from kjoin.spark.passes.merge import COLUMNS, merged_batches

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)

TS = st.integers(0, 6)


@st.composite
def workloads(draw, nulls: bool = False):
    """Tasks (scenario, partition) with their two input logs of (key, ts), the batch cuts, the held side, the
    spill threshold and the output batch size."""
    ts = st.one_of(st.none(), TS) if nulls else TS
    task_ids = draw(
        st.lists(
            st.tuples(st.integers(0, draw(st.sampled_from([0, 2]))), st.integers(0, 3)),
            min_size=1,
            max_size=6,
            unique=True,
        ).map(sorted)
    )
    tasks = {task: (draw(st.lists(ts, max_size=15)), draw(st.lists(ts, max_size=15))) for task in task_ids}
    return (
        tasks,
        draw(st.integers(1, 40)),
        draw(st.sampled_from([0, 1])),
        draw(st.integers(0, 6)),
        draw(st.integers(1, 20)),
    )


def sorted_input(tasks, held_rank: int) -> list[tuple]:
    """The rows as Spark's one sort gives them: by task, held side first, then offset."""
    rows = []
    for (scenario, partition), logs in tasks.items():
        for rank in (held_rank, 1 - held_rank):
            for offset, ts in enumerate(logs[rank]):
                rows.append((scenario, partition, rank, f"k{offset % 3}", f"{rank}:{offset}", ts, offset))
    return rows


def batches_of(rows: list[tuple], size: int, scenario: bool = True) -> list[pa.RecordBatch]:
    """Arrow batches of ``size`` rows; without the ``scenario`` column (as ``run_join`` sends them, with a byte
    side rank) when ``scenario`` is false."""
    names = ["scenario", "partition", "_side_rank", "key", "value", "ts", "offset"]
    types = [pa.int64(), pa.int32(), pa.int32() if scenario else pa.int8(), pa.string(), pa.string(), pa.int64()]
    types.append(pa.int64())
    schema = pa.schema(list(zip(names, types)))
    batches = [
        pa.RecordBatch.from_arrays([pa.array(column, t) for column, t in zip(zip(*chunk), types)], schema=schema)
        for chunk in (rows[i : i + size] for i in range(0, len(rows), size))
    ]
    return batches if scenario else [batch.drop_columns(["scenario"]) for batch in batches]


def merged_order(tasks, batch_rows, held_rank, spill_rows, target_rows) -> list[tuple]:
    out = []
    for batch in merged_batches(
        iter(batches_of(sorted_input(tasks, held_rank), batch_rows)), held_rank, spill_rows, target_rows
    ):
        assert batch.schema.names == list(COLUMNS)
        assert batch.column("position").null_count == batch.num_rows
        rows = batch.to_pydict()
        out += list(zip(rows["scenario"], rows["partition"], rows["side"], rows["offset"]))
    return out


def reference_order(tasks) -> list[tuple]:
    """The reference engine's order per task (:func:`kjoin.ordering.merge_by_timestamp`, Kafka's
    ``PartitionGroup``), a null timestamp as one lower than every other (as Spark sorts nulls first)."""
    expected = []
    for (scenario, partition), (left, right) in tasks.items():
        records = [
            [Record(side, "k", "v", -1 if ts is None else ts, partition, offset) for offset, ts in enumerate(log)]
            for side, log in ((Side.LEFT, left), (Side.RIGHT, right))
        ]
        expected += [(scenario, partition, r.side.value, r.offset) for r in merge_by_timestamp(*records)]
    return expected


@SETTINGS
@given(workload=workloads())
def test_the_merge_is_kafkas_processing_order_per_task(workload, tmp_path_factory):
    tasks, batch_rows, held_rank, spill_rows, target_rows = workload
    spill_dir = tmp_path_factory.mktemp("spill")
    os.environ["SPARK_LOCAL_DIRS"] = str(spill_dir)
    try:
        got = merged_order(tasks, batch_rows, held_rank, spill_rows, target_rows)
    finally:
        del os.environ["SPARK_LOCAL_DIRS"]
    expected = reference_order(tasks)
    assert got == expected
    assert os.listdir(spill_dir) == [], "the spill files are removed"


@SETTINGS
@given(workload=workloads(nulls=True))
def test_null_timestamps_count_as_the_lowest(workload):
    tasks, batch_rows, held_rank, spill_rows, target_rows = workload
    assert merged_order(tasks, batch_rows, held_rank, spill_rows, target_rows) == reference_order(tasks)


def test_a_hand_example_with_the_table_held_and_spilled():
    """Right (the table) held and spilled after one record; on the tie at 5 the left goes first (the right was
    taken last); the late left record (ts 2) waits behind the left head (ts 5)."""
    tasks = {(0, 0): ([5, 2, 7], [1, 5, 6])}
    got = merged_order(tasks, batch_rows=2, held_rank=1, spill_rows=1, target_rows=1)
    assert [(side, offset) for _, _, side, offset in got] == [
        ("right", 0),
        ("left", 0),
        ("left", 1),
        ("right", 1),
        ("right", 2),
        ("left", 2),
    ]


def test_the_held_rows_setting_is_read_and_bad_values_are_refused_with_the_setting_named():
    from kjoin.spark import SparkInputError
    from kjoin.spark.passes.merge import HELD_ROWS_CONF, SPILL_ROWS, held_rows

    assert held_rows(None) == SPILL_ROWS and held_rows("1000") == 1000 and held_rows("0") == 0
    for bad in ("lots", "-1"):
        with pytest.raises(SparkInputError, match=HELD_ROWS_CONF):
            held_rows(bad)


@pytest.mark.spark
@pytest.mark.parametrize(
    "join, variant, window",
    [
        ("stream-table", "left", None),
        ("table-table", "outer", None),
        ("stream-stream", "outer", {"before_ms": 3, "after_ms": 3, "grace_ms": 0}),
    ],
)
def test_run_join_spills_the_held_side_and_still_equals_the_reference_engine(spark, join, variant, window):
    """Through Spark: one held record in memory (the rest in the spill file), Arrow batches of 5 records."""
    import random

    from kjoin.spark import Topic, run_join
    from kjoin.spark.passes.merge import HELD_ROWS_CONF
    from tests.spark_compare import reference_outputs, small_arrow_batches, spark_outputs

    rng = random.Random(join)
    records = {Side.LEFT: [], Side.RIGHT: []}
    for partition in range(3):
        for side in records:
            for offset in range(rng.randint(10, 40)):
                key, value = rng.choice(["a", "b", "c", None]), rng.choice(["x", "y", None])
                records[side].append(Record(side, key, value, rng.randint(0, 30), partition, offset))
    schema = "key string, value string, ts long, partition int, offset long"

    def topic(side: Side) -> Topic:
        rows = [(r.key, r.value, r.ts, r.partition, r.offset) for r in records[side]]
        return Topic(spark.createDataFrame(rows, schema), partitions=3)

    spark.conf.set(HELD_ROWS_CONF, "1")
    try:
        with small_arrow_batches(spark, 5):
            result = run_join(topic(Side.LEFT), topic(Side.RIGHT), join, variant, window=window)
            got = spark_outputs(result)
    finally:
        spark.conf.unset(HELD_ROWS_CONF)
    expected = reference_outputs(records[Side.LEFT], records[Side.RIGHT], join, variant, 3, window)
    assert got == expected and sum(len(rows) for rows in expected.values()) > 20
