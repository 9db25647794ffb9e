"""A Kafka task's clock for the key split, computed once per task and narrow: each record's step from its side and
offset.

A record's **step** is its place in its task's processing order (:mod:`.merge`). Kafka takes a partition's records
in offset order, so the processing order is fixed by one fact per step, *which side* comes next: the task's side
sequence. The ``i``-th record of side ``s`` (counting in offset order) is at the step where side ``s`` occurs for
the ``i``-th time. So the clock of a task is

* its **side sequence**: one bit per step, in chunks of :data:`CHUNK_STEPS` steps (``np.packbits``);
* per side, its **offset runs**: where the side's offsets are consecutive, one ``(first offset, its index)`` pair
  per run (a partition with dense offsets is one run; a gap, e.g. left by compaction, starts another).

:func:`pack_function` packs each task's ``(side, offset, ts)`` where the topics are read (one row per Arrow batch,
task and side: its offsets, sorted, and timestamps), so Spark sorts a row per 10^5 records, not every record.
:func:`clock_function` unpacks them in order (held side first, by offset: a streaming merge of the packed rows,
which overlap only where the input was not read in offset order) and merges them into processing order by
:func:`.merge.merged_batches` itself, so the steps are the whole task's by construction. Its rows (``scenario,
partition, offset, _clock``: a sequence number and a payload) go to every key bucket of the task, ahead of the
bucket's own records (sorted by side and offset). :func:`stepped_batches` reads them into a :class:`TaskClock`,
gives each own record its step (``TaskClock.steps``: a ``searchsorted`` over the runs, a lookup in the side
sequence) and merges the bucket's two sides by step, streaming the live side against the held one (held in memory up
to ``spill_rows``, the rest in a local Arrow file, as :mod:`.merge` does). Per bucket this costs one bit per record
of the task, unpacked a chunk at a time, and the runs, where the previous clock (every record of the task as a row
in every bucket) cost a sort and a merge of the whole task per bucket.

Offsets must be unique within a partition (Kafka's are): a repeated or null offset is an error naming it, since
which of two equal offsets comes first would be Spark's sort's choice. Tests: ``tests/test_spark_clock.py`` (the
steps against :func:`.merge.merged_batches` on random tasks full of ties, gaps, spills and batch edges) and
``tests/test_spark_split.py`` (split runs against the reference engine and unsplit ones).
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..io.topic import SparkInputError
from .merge import COLUMNS, SPILL_ROWS, _Coalesce, _Held, _rows, _split, merged_batches
from .vectorised import task_segments

__all__ = [
    "CHUNK_STEPS",
    "CLOCK_FIELDS",
    "PACKED_FIELDS",
    "pack_function",
    "clock_function",
    "clock_rank",
    "TaskClock",
    "stepped_batches",
]

CHUNK_STEPS = 1 << 20
"""Steps per side-sequence chunk (128 KiB packed): one clock row each, unpacked one at a time by the buckets."""

_SEQUENCE, _RUNS = 0, 1  # payload kinds

CLOCK_FIELDS = (("scenario", "bigint"), ("partition", "int"), ("offset", "bigint"), ("_clock", "binary"))
"""The clock rows: per task, a sequence number (as ``offset``, so the clock rows sort in order) and a payload."""


PACKED_FIELDS = (
    ("scenario", "bigint"),
    ("partition", "int"),
    ("_side_rank", "byte"),
    ("offset", "bigint"),
    ("_clock", "binary"),
)
"""The clock pass's input: per Arrow batch of a topic as read, per task and side, one row of its records' offsets
and timestamps (ascending offsets; ``offset`` the first, so Spark sorts these few rows as the merge takes them)."""

_NULL_TS = -(2**63)  # a null timestamp in a packed row: the merge counts both as lower than every timestamp


def clock_rank(held_rank: int) -> int:
    """The ``_side_rank`` of clock rows in a bucket: it sorts before both sides, whichever comes first."""
    return 2 if held_rank else -1


def clock_schema() -> Any:
    return pa.schema(
        [
            pa.field("scenario", pa.int64()),
            pa.field("partition", pa.int32()),
            pa.field("offset", pa.int64()),
            pa.field("_clock", pa.binary()),
        ]
    )


def _payload(kind: int, *arrays: Any) -> bytes:
    return np.asarray([kind], dtype=np.int64).tobytes() + b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)


class _ClockBuilder:
    """One task's clock as its merged records go by: the side sequence, emitted chunk by chunk, and the offset
    runs, emitted at the end."""

    def __init__(self, task: tuple[int, int]) -> None:
        self.task = task
        self.sequence: list[Any] = []
        self.pending = 0
        self.rows: list[bytes] = []
        self.count = [0, 0]
        self.last = [None, None]  # each side's last offset
        self.runs: list[list[Any]] = [[], []]  # each side's (first offset, index) per run

    def add(self, batch: Any) -> None:
        right = pc.equal(batch.column("side"), "right").to_numpy(zero_copy_only=False)
        values = batch.column("offset").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        for side in (0, 1):
            mine = values[right == bool(side)]
            if len(mine):
                self._runs(side, mine)
        self.sequence.append(right)
        self.pending += len(right)
        while self.pending >= CHUNK_STEPS:
            self._chunk(CHUNK_STEPS)

    def _runs(self, side: int, offsets: Any) -> None:
        last = self.last[side]
        step = np.diff(offsets, prepend=offsets[0] - 1 if last is None else last)
        if (step <= 0).any():
            at = int(np.flatnonzero(step <= 0)[0])
            raise SparkInputError(
                self._where(
                    f"the {('left', 'right')[side]} side has offset {int(offsets[at])} twice (or out of order): the "
                    "key split needs offsets unique within a partition, as Kafka's are; fix the offsets or run with "
                    "key_split='off'"
                )
            )
        if last is None:
            step[0] = 0  # the side's first record starts its first run
        starts = np.flatnonzero(step != 1)
        if len(starts):
            self.runs[side].append(np.stack([offsets[starts], starts + self.count[side]], axis=1))
        self.count[side] += len(offsets)
        self.last[side] = int(offsets[-1])

    def _chunk(self, n: int) -> None:
        joined = np.concatenate(self.sequence) if len(self.sequence) > 1 else self.sequence[0]
        self.rows.append(_payload(_SEQUENCE, np.asarray([n]), np.packbits(joined[:n])))
        self.sequence = [joined[n:]] if n < len(joined) else []
        self.pending -= n

    def take(self) -> list[bytes]:
        rows, self.rows = self.rows, []
        return rows

    def finish(self) -> list[bytes]:
        if self.pending:
            self._chunk(self.pending)
        for side in (0, 1):
            runs = np.concatenate(self.runs[side]) if self.runs[side] else np.empty((0, 2), dtype=np.int64)
            self.rows.append(_payload(_RUNS, np.asarray([side, self.count[side]]), runs.astype(np.int64)))
        return self.take()

    def _where(self, what: str) -> str:
        scenario, partition = self.task
        where = f"partition {partition}" + (f" of scenario {scenario}" if scenario else "")
        return f"key split, {where}: {what}"


# -- the clock's input, packed where the topics are read ---------------------------------------------------
def pack_function() -> Any:
    """The ``mapInArrow`` function that packs a topic's ``(scenario, partition, _side_rank, ts, offset)`` rows as
    they are read (in parallel, one Spark task per input split) into :data:`PACKED_FIELDS` rows: one per task and
    side of each Arrow batch, its offsets sorted. So the clock pass's Spark sort orders a row per 10^5 records
    instead of every record, and its shuffle moves a few large rows."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        types = {"bigint": pa.int64(), "int": pa.int32(), "byte": pa.int8(), "binary": pa.binary()}
        schema = pa.schema([pa.field(name, types[kind]) for name, kind in PACKED_FIELDS])
        for batch in batches:
            if batch.num_rows:
                yield pa.RecordBatch.from_pylist(list(_packed_rows(batch)), schema=schema)

    return run


def _packed_rows(batch: Any) -> Iterator[dict[str, Any]]:
    """One batch's packed rows (see :func:`pack_function`)."""
    scenario = _ints(batch, "scenario")
    partition = _ints(batch, "partition")
    side = _ints(batch, "_side_rank")
    offsets_column = batch.column("offset")
    if offsets_column.null_count:
        at = int(np.flatnonzero(offsets_column.is_null().to_numpy(zero_copy_only=False))[0])
        where = f"partition {int(partition[at])}" + (f" of scenario {int(scenario[at])}" if scenario[at] else "")
        raise SparkInputError(f"key split, {where}: a null offset: every record needs its partition offset")
    offsets = offsets_column.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    ts = pc.fill_null(batch.column("ts"), _NULL_TS).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    one_group = all(int(a.min()) == int(a.max()) for a in (scenario, partition, side))
    if not (one_group and (len(offsets) < 2 or bool((offsets[1:] > offsets[:-1]).all()))):
        order = np.lexsort((offsets, side, partition, scenario))
        scenario, partition, side, offsets, ts = (a[order] for a in (scenario, partition, side, offsets, ts))
    change = (scenario[1:] != scenario[:-1]) | (partition[1:] != partition[:-1]) | (side[1:] != side[:-1])
    edges = np.flatnonzero(change)
    bounds = [0, *(edges + 1).tolist(), len(offsets)]
    for start, end in zip(bounds[:-1], bounds[1:]):
        yield {
            "scenario": int(scenario[start]),
            "partition": int(partition[start]),
            "_side_rank": int(side[start]),
            "offset": int(offsets[start]),
            "_clock": offsets[start:end].tobytes() + ts[start:end].tobytes(),
        }


def _ints(batch: Any, name: str) -> Any:
    return batch.column(name).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _unpacked(batches: Iterator[Any]) -> Iterator[Any]:
    """Packed rows sorted by ``(scenario, partition, held side first, first offset)`` as the merge takes them: each
    task's records, held side first, each side by offset (``scenario, partition, _side_rank, ts, offset``, and the
    ``key`` and ``value`` the merge carries, null). Each packed row is sorted, and rows start in ascending order, so
    the records below the next row's first offset are final: a streaming merge, which holds no more than the rows
    that overlap (none where the input was read in offset order, as a Kafka partition or a file written in offset
    order is)."""
    group: tuple[int, int, int] | None = None
    pending: tuple[Any, Any] | None = None  # the group's sorted (offsets, ts) not given out yet

    def out(part: tuple[Any, Any], key: tuple[int, int, int]) -> Any:
        offsets, ts = part
        n = len(offsets)
        return pa.RecordBatch.from_arrays(
            [
                pa.array(np.full(n, key[0], dtype=np.int64)),
                pa.array(np.full(n, key[1], dtype=np.int32)),
                pa.array(np.full(n, key[2], dtype=np.int8)),
                pa.array(ts),
                pa.array(offsets),
                pa.nulls(n),
                pa.nulls(n),
            ],
            names=["scenario", "partition", "_side_rank", "ts", "offset", "key", "value"],
        )

    for batch in batches:
        keys = zip(*(batch.column(name).to_pylist() for name in ("scenario", "partition", "_side_rank")))
        for key, payload in zip(keys, batch.column("_clock").to_pylist()):
            data = np.frombuffer(payload, dtype=np.int64)
            half = len(data) // 2
            more = (data[:half], data[half:])
            if key != group:
                if pending is not None:
                    yield out(pending, group)
                group, pending = key, more
                continue
            first = int(more[0][0])
            done = int(np.searchsorted(pending[0], first, "left"))  # below the new row's first offset: final
            if done:
                yield out((pending[0][:done], pending[1][:done]), group)
            rest = (pending[0][done:], pending[1][done:])
            if len(rest[0]):
                offsets, ts = np.concatenate((rest[0], more[0])), np.concatenate((rest[1], more[1]))
                order = np.argsort(offsets, kind="stable")
                pending = (offsets[order], ts[order])
            else:
                pending = more
    if pending is not None:
        yield out(pending, group)


def clock_function(held_rank: int, spill_rows: int = SPILL_ROWS) -> Any:
    """The ``mapInArrow`` function of the clock pass: packed rows (:data:`PACKED_FIELDS`, from
    :func:`pack_function`) sorted by ``(scenario, partition, held side first, offset)`` in, clock rows
    (:data:`CLOCK_FIELDS`) out."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        schema = clock_schema()
        builder: _ClockBuilder | None = None
        sequence = 0

        def rows(task: tuple[int, int], payloads: list[bytes]) -> Iterator[Any]:
            nonlocal sequence
            if payloads:
                n = len(payloads)
                yield pa.RecordBatch.from_arrays(
                    [
                        pa.array([task[0]] * n, pa.int64()),
                        pa.array([task[1]] * n, pa.int32()),
                        pa.array(range(sequence, sequence + n), pa.int64()),
                        pa.array(payloads, pa.binary()),
                    ],
                    schema=schema,
                )
                sequence += n

        for merged in merged_batches(_unpacked(batches), held_rank, spill_rows):
            for task, segment in task_segments(merged):
                if builder is None or builder.task != task:
                    if builder is not None:
                        yield from rows(builder.task, builder.finish())
                    builder, sequence = _ClockBuilder(task), 0
                builder.add(segment)
                yield from rows(task, builder.take())
        if builder is not None:
            yield from rows(builder.task, builder.finish())

    return run


class TaskClock:
    """A task's clock read back from its rows (in order): :meth:`steps` of records given their side and offset."""

    def __init__(self) -> None:
        self.chunks: list[tuple[int, Any]] = []  # (steps, packed side bits)
        self.runs: dict[int, tuple[Any, Any, int]] = {}  # side -> (first offsets, their indices, records)
        self._starts: Any = None
        self._counts: dict[int, Any] = {}
        self._cached: dict[int, tuple[int, Any]] = {}

    def add(self, payload: bytes) -> None:
        data = np.frombuffer(payload, dtype=np.uint8)
        kind = int(data[:8].view(np.int64)[0])
        if kind == _SEQUENCE:
            n = int(data[8:16].view(np.int64)[0])
            self.chunks.append((n, data[16:]))
        else:
            side, count = (int(v) for v in data[8:24].view(np.int64))
            runs = data[24:].view(np.int64).reshape(-1, 2)
            self.runs[side] = (runs[:, 0], runs[:, 1], count)

    @property
    def complete(self) -> bool:
        return len(self.runs) == 2

    def _side_counts(self, side: int) -> Any:
        """How many records of ``side`` come before each chunk (and in all, last)."""
        if not self._counts:
            sizes = np.asarray([n for n, _ in self.chunks], dtype=np.int64)
            right = np.asarray([int(np.unpackbits(bits, count=n).sum()) for n, bits in self.chunks], dtype=np.int64)
            self._starts = np.concatenate(([0], np.cumsum(sizes)))
            self._counts = {
                0: np.concatenate(([0], np.cumsum(sizes - right))),
                1: np.concatenate(([0], np.cumsum(right))),
            }
        return self._counts[side]

    def _positions(self, side: int, chunk: int) -> Any:
        """The steps of ``side`` within ``chunk`` (one chunk per side cached: the lookups come in offset order)."""
        cached = self._cached.get(side)
        if cached is None or cached[0] != chunk:
            n, bits = self.chunks[chunk]
            right = np.unpackbits(bits, count=n).astype(bool)
            mine = right if side else ~right
            cached = (chunk, np.flatnonzero(mine).astype(np.int64) + self._starts[chunk])
            self._cached[side] = cached
        return cached[1]

    def steps(self, side: int, offsets: Any) -> Any:
        """The steps of records of ``side`` with these ``offsets`` (a numpy int64 array, ascending)."""
        starts, first, count = self.runs[side]
        run = np.searchsorted(starts, offsets, "right") - 1
        index = first[np.maximum(run, 0)] + offsets - starts[np.maximum(run, 0)]
        ends = np.append(first[1:], count)
        if len(offsets) and ((run < 0).any() or (index >= ends[np.maximum(run, 0)]).any()):
            raise AssertionError("a record of a key bucket is not in its task's clock")  # pragma: no cover
        counts = self._side_counts(side)
        chunk = np.searchsorted(counts, index, "right") - 1
        out = np.empty(len(index), dtype=np.int64)
        for c in np.unique(chunk):
            at = chunk == c
            out[at] = self._positions(side, int(c))[index[at] - counts[c]]
        return out


def stepped_batches(
    batches: Iterator[Any], held_rank: int, spill_rows: int = SPILL_ROWS, target_rows: int = 100_000
) -> Iterator[Any]:
    """A key bucket's rows (``scenario, partition, _side_rank, key, value, ts, offset, _clock``: per task, its clock
    rows first, then its own records, the held side first, each side by offset) as its own records in processing
    order with their steps (:data:`.merge.COLUMNS`, ``position`` the step), about ``target_rows`` a batch."""
    out = _Coalesce(target_rows)
    marker = clock_rank(held_rank)
    task: tuple[int, int] | None = None
    clock = TaskClock()
    held: _Held | None = None
    live: _ByStep | None = None
    try:
        for batch in batches:
            for key, segment in task_segments(batch):
                if key != task:
                    if held is not None:
                        yield from out.add_all(_finish(held, live))
                        held.close()
                    task, clock, held, live = key, TaskClock(), _Held(held_rank, spill_rows), None
                ranks = segment.column("_side_rank").to_numpy(zero_copy_only=False)
                ticks = int((ranks == marker).sum())  # the clock rows sort first within the task
                for payload in segment.column("_clock").slice(0, ticks).to_pylist():
                    clock.add(payload)
                held_to = ticks + int((ranks == held_rank).sum())
                if held_to > ticks or held_to < segment.num_rows:
                    if not clock.complete:
                        raise AssertionError(f"key bucket {key}: its records came without their task's clock")
                if held_to > ticks:
                    part = segment.slice(ticks, held_to - ticks)
                    held.store(*_placed(part, clock, held_rank))
                if held_to < segment.num_rows:
                    if live is None:
                        live = _ByStep(held)
                    part = segment.slice(held_to)
                    yield from out.add_all(live.add(*_placed(part, clock, 1 - held_rank)))
        if held is not None:
            yield from out.add_all(_finish(held, live))
        yield from out.flush()
    finally:
        if held is not None:
            held.close()


def _placed(segment: Any, clock: TaskClock, side: int) -> tuple[Any, Any]:
    """One side's records of a bucket in the merged columns with their steps, and the steps."""
    offsets = segment.column("offset").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    steps = clock.steps(side, offsets)
    n = segment.num_rows
    columns = {name: segment.column(name) for name in ("scenario", "partition", "key", "value", "ts", "offset")}
    columns["side"] = pa.repeat(pa.scalar(("left", "right")[side]), n)
    columns["position"] = pa.array(steps, pa.int64())
    return pa.RecordBatch.from_pydict({name: columns[name] for name in COLUMNS}), steps


class _ByStep:
    """A bucket's live side merged with its held side by step, as the live batches stream in: the held records
    below a live batch's last step go out with it."""

    def __init__(self, held: _Held) -> None:
        self.held_chunks = held.read()
        self.held: tuple[Any, Any] | None = None
        self.held_done = False

    def _pull(self) -> None:
        chunk = next(self.held_chunks, None)
        if chunk is None:
            self.held_done = True
        elif chunk[0].num_rows:
            self.held = chunk if _rows(self.held) == 0 else _concat(self.held, chunk)

    def add(self, batch: Any, steps: Any) -> Iterator[Any]:
        if not len(steps):
            return
        bound = int(steps[-1])
        while not self.held_done and (_rows(self.held) == 0 or int(self.held[1][-1]) < bound):
            self._pull()
        before, self.held = _split(self.held, bound)
        if before is None:
            yield batch
            return
        held_batch, held_steps = before
        h, n = len(held_steps), len(held_steps) + len(steps)
        take = np.empty(n, dtype=np.int64)
        take[np.arange(h) + np.searchsorted(steps, held_steps)] = np.arange(h)
        take[np.arange(n - h) + np.searchsorted(held_steps, steps)] = np.arange(h, n)
        yield pa.Table.from_batches([held_batch, batch]).take(take).combine_chunks().to_batches()[0]

    def rest(self) -> Iterator[Any]:
        if _rows(self.held):
            yield self.held[0]
        self.held = None
        for batch, _ in self.held_chunks:
            yield batch


def _concat(part: tuple[Any, Any], more: tuple[Any, Any]) -> tuple[Any, Any]:
    batch = pa.Table.from_batches([part[0], more[0]]).combine_chunks().to_batches()[0]
    return batch, np.concatenate((part[1], more[1]))


def _finish(held: _Held, live: _ByStep | None) -> Iterator[Any]:
    """A bucket task's records after its last live batch: the held ones not merged yet (all, with no live side)."""
    if live is None:
        for batch, _ in held.read():
            yield batch
    else:
        yield from live.rest()
