"""A Kafka task's processing order, merged inside the Python pass: one Spark sort, not two.

Kafka Streams' task takes, of its two input partitions, the one whose head record has the lower
timestamp (ties: the one it did not take its last record from). That order equals a sort by ``(running max ts
of the record's own partition up to it, rank among the ties, offset)`` (:mod:`kjoin.spark.ties`). Spark can
compute it with windows (the running max, the ties' ranks) and a second sort, but both cost more than the whole
per-task pass: at
10^7 records the window spills 1.2-1.6 GB and the two sorts plus the window took 15 s where one
sort took 11 s. So the plan sorts once, by ``(scenario, partition, side first held, offset)``, and
:func:`merged_batches` turns that into processing order:

1. Per task, the side that arrives first (the *held* side: the table of a stream-table join,
   the left side otherwise) is read whole; each record gets its partition's running max ts
   (``np.maximum.accumulate`` carried from batch to batch, a null ts counting as the lowest
   value, as Spark's ``max`` window and its ``nulls first`` sort treat it). The held records stay
   in memory up to ``spill_rows`` and go on to a local Arrow file beyond, so memory is bounded by
   configuration, not by the size of a Kafka partition (Spark's own sort spills the same way).
2. The other (*live*) side streams through. Its running max and the held side's are both
   non-decreasing, so the two are merged chunk by chunk, in whole runs of one running max, by the
   tie rule's ranks (:func:`kjoin.spark.ties.tie_order`: linear passes and ``np.searchsorted``). A
   run waits until both sides have passed it, so one run of equal timestamps is held in memory whole.

The merged batches carry the columns the per-task passes take (``scenario, partition, side, key, value, ts,
offset, position``), in processing order within every task, and tasks stay whole and in the order Spark sorted them.
Tests: ``tests/test_spark_merge.py`` (against the reference engine's order on random tasks full of ties, with spills
and batch edges everywhere).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..io.topic import SparkInputError
from ..ties import LEFT, tie_order
from .vectorised import task_segments

__all__ = ["merged_batches", "held_rows", "SPILL_ROWS", "HELD_ROWS_CONF", "COLUMNS"]

SPILL_ROWS = 500_000
"""Held records kept in memory per task before the rest go to a local Arrow file (by default)."""

HELD_ROWS_CONF = "spark.kjoin.merge.heldRows"
"""The Spark setting that overrides :data:`SPILL_ROWS`, read when the join is planned, e.g.
``spark.conf.set("spark.kjoin.merge.heldRows", "100000")``."""


def held_rows(setting: str | None) -> int:
    """The held records kept in memory per task, from :data:`HELD_ROWS_CONF`'s value (``None``: the default)."""
    if setting is None:
        return SPILL_ROWS
    try:
        rows = int(setting)
    except ValueError:
        rows = -1
    if rows < 0:
        raise SparkInputError(f"{HELD_ROWS_CONF}={setting!r}: expected a number of records, 0 or more")
    return rows


COLUMNS = ("scenario", "partition", "side", "key", "value", "ts", "offset", "position")
"""The merged batches' columns: those the per-task passes take."""

_LOWEST = -(2**63)  # a null ts in the running max: lower than every timestamp, as Spark sorts nulls first


def merged_batches(
    batches: Iterator[Any], held_rank: int, spill_rows: int = SPILL_ROWS, target_rows: int = 100_000
) -> Iterator[Any]:
    """Batches sorted by ``(scenario, partition, _side_rank == held_rank first, offset)`` (columns
    ``scenario, partition, _side_rank, key, value, ts, offset``; rank 0 is the left side; without ``scenario``,
    scenario 0) as batches in processing order within each task (:data:`COLUMNS`), about ``target_rows`` each."""
    out = _Coalesce(target_rows)
    task: tuple[int, int] | None = None
    held: _Held | None = None
    live: _Live | None = None
    try:
        for batch in batches:
            for key, segment in task_segments(batch):
                if key != task:
                    if held is not None:
                        yield from out.add_all(_finish(held, live))
                        held.close()
                    task, held, live = key, _Held(held_rank, spill_rows), None
                ranks = segment.column("_side_rank").to_numpy(zero_copy_only=False)
                live_from = int((ranks == held_rank).sum())  # held records sort first within the task
                if live_from:
                    held.add(segment.slice(0, live_from))
                if live_from < segment.num_rows:
                    if live is None:
                        live = _Live(held)
                    yield from out.add_all(live.add(segment.slice(live_from)))
        if held is not None:
            yield from out.add_all(_finish(held, live))
        yield from out.flush()
    finally:
        if held is not None:
            held.close()


def _running_max(ts: Any, carry: int) -> tuple[Any, int]:
    """The running max of ``ts`` (an Arrow int64 array, nulls lowest) after ``carry``, and the new carry."""
    values = pc.fill_null(ts, _LOWEST).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    running = np.maximum.accumulate(np.maximum(values, carry)) if len(values) else values
    return running, (int(running[-1]) if len(running) else carry)


def _with_order(segment: Any, carry: int) -> tuple[Any, Any, int]:
    """``segment`` in the merged columns, its running max (numpy) and the new carry."""
    order, carry = _running_max(segment.column("ts"), carry)
    sides = pa.array(["left", "right"]).take(segment.column("_side_rank").cast(pa.int32()))
    n = segment.num_rows
    columns = {name: segment.column(name) for name in ("partition", "key", "value", "ts", "offset")}
    has_scenario = "scenario" in segment.schema.names
    columns["scenario"] = segment.column("scenario") if has_scenario else pa.repeat(pa.scalar(0, pa.int64()), n)
    columns["side"] = sides
    columns["position"] = pa.nulls(n, pa.int64())
    return pa.RecordBatch.from_pydict({name: columns[name] for name in COLUMNS}), order, carry


class _Held:
    """One task's held side: its records with their running max (or, for a key bucket, their steps:
    :mod:`.clock`), in memory up to ``spill_rows``, then in a local Arrow IPC file; read back once, in order, as
    (batch, order) chunks."""

    def __init__(self, rank: int, spill_rows: int) -> None:
        self.rank = rank
        self.spill_rows = spill_rows
        self.carry = _LOWEST
        self.chunks: list[tuple[Any, Any]] = []
        self.rows = 0
        self.path: str | None = None
        self.writer: Any = None
        self.sink: Any = None

    def add(self, segment: Any) -> None:
        batch, order, self.carry = _with_order(segment, self.carry)
        self.store(batch, order)

    def store(self, batch: Any, order: Any) -> None:
        """Keep ``batch`` (in the merged columns) with its order (non-decreasing, continuing the stored ones')."""
        self.rows += batch.num_rows
        if self.writer is None and self.rows <= self.spill_rows:
            self.chunks.append((batch, order))
            return
        if self.writer is None:
            handle, self.path = tempfile.mkstemp(prefix="kjoin-held-", suffix=".arrow", dir=_local_dir())
            os.close(handle)
            self.sink = pa.OSFile(self.path, "wb")
            self.writer = pa.ipc.new_stream(self.sink, _spilled_schema(batch.schema))
        self.writer.write_batch(_spilled(batch, order))

    def read(self) -> Iterator[tuple[Any, Any]]:
        """The held chunks in order (each once)."""
        chunks, self.chunks = self.chunks, []
        yield from chunks
        if self.writer is not None:
            self.writer.close()
            self.sink.close()
            self.writer = None
            with pa.OSFile(self.path, "rb") as source:  # read into memory: the batches outlive the file
                for batch in pa.ipc.open_stream(source):
                    yield batch.drop_columns(["_order_ts"]), batch.column("_order_ts").to_numpy()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.sink.close()
            self.writer = None
        if self.path is not None:
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass
            self.path = None


def _local_dir() -> str | None:
    """Spark's local directory on a worker (where its own sorts spill), else the system's temporary one."""
    local = os.environ.get("SPARK_LOCAL_DIRS")
    return local.split(",")[0] if local else None


def _spilled_schema(schema: Any) -> Any:
    return schema.append(pa.field("_order_ts", pa.int64()))


def _spilled(batch: Any, order: Any) -> Any:
    return pa.RecordBatch.from_arrays(
        [*batch.columns, pa.array(order, pa.int64())], schema=_spilled_schema(batch.schema)
    )


class _Live:
    """The live side of one task, merged with the held side as its batches stream in.

    Records go out in whole *runs* (the records of both sides with one running max ts): those below both sides'
    last running max seen so far (the live batch's, and the held chunk's while more held chunks follow); the rest
    wait for the next batch or chunk. Within a run a tie between the sides goes as Kafka's ``PartitionGroup`` takes
    it (:mod:`kjoin.spark.ties`), which depends on the side taken last: carried from run to run in ``start``."""

    def __init__(self, held: _Held) -> None:
        self.carry = _LOWEST
        self.held_rank = held.rank
        self.held_chunks = held.read()
        self.held: tuple[Any, Any] | None = None  # the held records not merged yet
        self.held_done = False
        self.live: tuple[Any, Any] | None = None  # the live records not merged yet
        self.start = LEFT  # the side a run of ties starts on, when it has as many blocks on each side

    def _pull_held(self) -> None:
        chunk = next(self.held_chunks, None)
        while chunk is not None and chunk[0].num_rows == 0:
            chunk = next(self.held_chunks, None)
        if chunk is None:
            self.held_done = True
        else:
            self.held = _joined(self.held, chunk)

    def add(self, segment: Any) -> Iterator[Any]:
        batch, order, self.carry = _with_order(segment, self.carry)
        if batch.num_rows:
            self.live = _joined(self.live, (batch, order))
            yield from self._emit(int(order[-1]))

    def rest(self) -> Iterator[Any]:
        """The records not merged yet, once the live side has ended."""
        yield from self._emit(None)

    def _emit(self, live_bound: int | None) -> Iterator[Any]:
        """Merge the runs below ``live_bound`` (the live side's last running max; ``None``: the live side ended) and
        below the held side's, pulling held chunks while the held side's bound is the lower."""
        while True:
            while not self.held_done and _rows(self.held) == 0:
                self._pull_held()
            held_bound = None if self.held_done else int(self.held[1][-1])
            bounds = [bound for bound in (live_bound, held_bound) if bound is not None]
            piece = self._take(min(bounds) if bounds else None)
            if piece is not None:
                yield piece
            if held_bound is None or (live_bound is not None and held_bound > live_bound):
                return
            self._pull_held()  # the held run at the bound may go on in the next chunk

    def _take(self, bound: int | None) -> Any:
        """The held and live records whose running max is below ``bound`` (all: ``None``), merged."""
        held, self.held = _split(self.held, bound)
        live, self.live = _split(self.live, bound)
        if held is None and live is None:
            return None
        live_rank = 1 - self.held_rank
        if held is None or live is None:
            only = held if live is None else live
            self.start = 1 - (self.held_rank if live is None else live_rank)
            return only[0]
        (left, left_order), (right, right_order) = (held, live) if self.held_rank == LEFT else (live, held)
        take, self.start = tie_order(left_order, _ts(left), right_order, _ts(right), self.start)
        return pa.Table.from_batches([left, right]).take(take).combine_chunks().to_batches()[0]


def _rows(part: tuple[Any, Any] | None) -> int:
    return 0 if part is None else part[0].num_rows


def _joined(part: tuple[Any, Any] | None, more: tuple[Any, Any]) -> tuple[Any, Any]:
    """Records not merged yet, followed by ``more`` (a batch and its running max)."""
    if _rows(part) == 0:
        return more
    batch = pa.Table.from_batches([part[0], more[0]]).combine_chunks().to_batches()[0]
    return batch, np.concatenate((part[1], more[1]))


def _split(part: tuple[Any, Any] | None, bound: int | None) -> tuple[Any, Any]:
    """``part`` cut before its first running max at or above ``bound``: (the records before, or None; the rest)."""
    if _rows(part) == 0:
        return None, None
    batch, order = part
    k = len(order) if bound is None else int(np.searchsorted(order, bound, "left"))
    before = (batch.slice(0, k), order[:k]) if k else None
    return before, ((batch.slice(k), order[k:]) if k < len(order) else None)


def _ts(batch: Any) -> Any:
    """A batch's timestamps, a null as the running max counts it."""
    return pc.fill_null(batch.column("ts"), _LOWEST).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _finish(held: _Held, live: _Live | None) -> Iterator[Any]:
    """A task's records after its last live batch: the held ones not yet merged (all, with no live side)."""
    if live is None:
        for batch, _ in held.read():
            yield batch
    else:
        yield from live.rest()


class _Coalesce:
    """Merged pieces joined into batches of about ``target_rows`` (the per-task passes pay per batch)."""

    def __init__(self, target_rows: int) -> None:
        self.target_rows = target_rows
        self.pieces: list[Any] = []
        self.rows = 0

    def add_all(self, pieces: Iterator[Any]) -> Iterator[Any]:
        for piece in pieces:
            if piece.num_rows == 0:
                continue
            self.pieces.append(piece)
            self.rows += piece.num_rows
            if self.rows >= self.target_rows:
                yield from self.flush()

    def flush(self) -> Iterator[Any]:
        if not self.pieces:
            return
        pieces, self.pieces, self.rows = self.pieces, [], 0
        if len(pieces) == 1:
            yield pieces[0]
        else:
            yield pa.Table.from_batches(pieces).combine_chunks().to_batches()[0]
