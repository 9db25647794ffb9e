"""The key split's task clock (:mod:`kjoin.spark.passes.clock`), outside Spark.

Random tasks (ties, null timestamps, gaps in the offsets) go through the clock pass as Spark hands it a task's
narrow rows: read in offset order or shuffled, cut into random Arrow batches, packed a row per batch, task and side
(``pack_function``, where the topics are read), the packed rows sorted by held side first, then first offset (rows
that overlap when the records were not read in offset order); and their records through
random key buckets as the buckets get them (their task's clock rows first, then their own records by side and
offset). Each bucket's records must come out in ascending step, and every record's step must be its place in the
whole task's processing order as :func:`kjoin.spark.passes.merge.merged_batches` merges it (itself tested against
Kafka's ``PartitionGroup`` in ``tests/test_spark_merge.py``), with the held side spilled and the side sequence cut
into tiny chunks.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kjoin.spark import SparkInputError
from kjoin.spark.passes import clock
from kjoin.spark.passes.clock import clock_function, clock_rank, pack_function, stepped_batches
from kjoin.spark.passes.merge import merged_batches

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), database=None)

NARROW = pa.schema([("scenario", pa.int64()), ("partition", pa.int32()), ("_side_rank", pa.int8())])


@st.composite
def workloads(draw):
    """Tasks with each side's (offset, ts, bucket) log, the held side, batch sizes and the spill threshold."""
    ts = st.one_of(st.none(), st.integers(0, 6))
    tasks = {}
    for partition in sorted(draw(st.sets(st.integers(0, 3), min_size=1, max_size=3))):
        logs = []
        for _ in range(2):
            n = draw(st.integers(0, 14))
            gaps = draw(st.lists(st.sampled_from([1, 1, 1, 2, 5]), min_size=n, max_size=n))
            first = draw(st.integers(0, 3))
            offsets = [first + sum(gaps[:i]) for i in range(n)]
            logs.append([(offset, draw(ts), draw(st.integers(0, 2))) for offset in offsets])
        tasks[(0, partition)] = logs
    return (
        tasks,
        draw(st.sampled_from([0, 1])),
        draw(st.integers(1, 9)),
        draw(st.integers(1, 9)),
        draw(st.integers(0, 5)),
        draw(st.one_of(st.none(), st.randoms(use_true_random=False))),
    )


def _batches(columns: dict, types: dict, size: int) -> list:
    n = len(next(iter(columns.values())))
    table = pa.table({name: pa.array(values, types[name]) for name, values in columns.items()})
    return table.to_batches(max_chunksize=size) if n else []


def _narrow(tasks, held_rank: int, size: int) -> list:
    rows = [
        (scenario, partition, rank, ts, offset)
        for (scenario, partition), logs in tasks.items()
        for rank in (held_rank, 1 - held_rank)
        for offset, ts, _ in logs[rank]
    ]
    names = ["scenario", "partition", "_side_rank", "ts", "offset"]
    types = dict(zip(names, [pa.int64(), pa.int32(), pa.int8(), pa.int64(), pa.int64()]))
    return _batches(dict(zip(names, zip(*rows))) if rows else {name: [] for name in names}, types, size)


def _packed(tasks, held_rank: int, size: int, shuffle=None) -> list:
    """The clock pass's input: the narrow rows as read (in offset order, or shuffled), packed a row per Arrow batch,
    task and side, sorted as Spark sorts them (task, held side first, first offset), in batches of ``size``."""
    narrow = _narrow(tasks, held_rank, 10**6)
    table = pa.Table.from_batches(narrow, schema=narrow[0].schema) if narrow else None
    if table is None:
        return []
    if shuffle is not None:
        order = list(range(table.num_rows))
        shuffle.shuffle(order)
        table = table.take(order)
    rows = [row for batch in pack_function()(iter(table.to_batches(max_chunksize=size))) for row in batch.to_pylist()]
    rows.sort(key=lambda row: (row["scenario"], row["partition"], row["_side_rank"] != held_rank, row["offset"]))
    types = {"scenario": pa.int64(), "partition": pa.int32(), "_side_rank": pa.int8(), "offset": pa.int64()}
    types["_clock"] = pa.binary()
    return _batches({name: [row[name] for row in rows] for name in types}, types, size)


def _whole_order(tasks, held_rank: int) -> dict:
    """Each record's step as the whole task's merge gives it: ``(partition, side, offset) -> step``."""
    batches = []
    for batch in _narrow(tasks, held_rank, 1000):
        n = batch.num_rows
        batches.append(
            pa.RecordBatch.from_arrays(
                [*batch.columns, pa.nulls(n), pa.nulls(n)], names=[*batch.schema.names, "key", "value"]
            )
        )
    steps, counts = {}, {}
    for merged in merged_batches(iter(batches), held_rank):
        for partition, side, offset in zip(*(merged.column(c).to_pylist() for c in ("partition", "side", "offset"))):
            steps[(partition, side, offset)] = counts.get(partition, 0)
            counts[partition] = counts.get(partition, 0) + 1
    return steps


def _bucket_input(tasks, clock_rows: list, bucket: int, held_rank: int, size: int) -> list:
    """One bucket's rows as its Spark partition holds them: per task, the clock rows, then its own records."""
    marker = clock_rank(held_rank)
    columns = {name: [] for name in ("scenario", "partition", "_side_rank", "key", "value", "ts", "offset", "_clock")}

    def add(partition, rank, key, value, ts, offset, payload):
        for name, item in zip(columns, (bucket, partition, rank, key, value, ts, offset, payload)):
            columns[name].append(item)

    for (_, partition), logs in tasks.items():
        for sequence, payload in clock_rows[partition]:
            add(partition, marker, None, None, None, sequence, payload)
        for rank in (held_rank, 1 - held_rank):
            for offset, ts, owner in logs[rank]:
                if owner == bucket:
                    add(partition, rank, f"k{offset}", f"{rank}:{offset}", ts, offset, None)
    types = dict(zip(columns, [pa.int64(), pa.int32(), pa.int8(), pa.string(), pa.string(), pa.int64(), pa.int64()]))
    types["_clock"] = pa.binary()
    return _batches(columns, types, size)


@SETTINGS
@given(workload=workloads())
def test_every_bucket_gets_its_records_steps_in_the_whole_tasks_order(monkeypatch, workload):
    tasks, held_rank, narrow_size, bucket_size, spill_rows, shuffle = workload
    monkeypatch.setattr(clock, "CHUNK_STEPS", 3)  # the side sequence in many chunks
    clock_rows: dict[int, list] = {partition: [] for _, partition in tasks}
    for batch in clock_function(held_rank, spill_rows)(iter(_packed(tasks, held_rank, narrow_size, shuffle))):
        for partition, sequence, payload in zip(
            *(batch.column(c).to_pylist() for c in ("partition", "offset", "_clock"))
        ):
            clock_rows[partition].append((sequence, payload))
    whole = _whole_order(tasks, held_rank)
    seen = {}
    for bucket in range(3):
        out = stepped_batches(
            iter(_bucket_input(tasks, clock_rows, bucket, held_rank, bucket_size)), held_rank, spill_rows, 4
        )
        got = [
            row
            for batch in out
            for row in zip(*(batch.column(c).to_pylist() for c in ("partition", "side", "offset", "position", "key")))
        ]
        for partition in {row[0] for row in got}:
            steps = [row[3] for row in got if row[0] == partition]
            assert steps == sorted(steps), "a bucket's records come in step order"
        for partition, side, offset, step, key in got:
            assert key == f"k{offset}"
            seen[(partition, side, offset)] = step
    assert seen == whole


@pytest.mark.parametrize("size", [1, 2, 10])
def test_a_repeated_offset_is_an_error_naming_it(size):
    tasks = {(0, 2): [[(0, 1, 0), (4, 2, 0), (4, 3, 0)], []]}
    with pytest.raises(SparkInputError, match="partition 2: the left side has offset 4 twice"):
        list(clock_function(1)(iter(_packed(tasks, 1, size))))


def test_a_null_offset_is_an_error_naming_its_partition():
    batch = pa.RecordBatch.from_pydict(
        {"scenario": [0, 0], "partition": [3, 3], "_side_rank": [0, 0], "ts": [1, 2], "offset": [0, None]},
        schema=pa.schema([*NARROW, ("ts", pa.int64()), ("offset", pa.int64())]),
    )
    with pytest.raises(SparkInputError, match="partition 3: a null offset"):
        list(pack_function()(iter([batch])))
