"""Two joins of the same records in one per-task pass, compared right there: the Spark diff's differences, without
a shuffle.

``SparkRun.diff`` (:mod:`kjoin.spark.debug.diff`) compares a run with the same topics joined under other semantics
or settings. Joining the topics twice and grouping both runs' outputs per input record costs two shuffles and sorts
of the records and one of every output; this pass takes the records once (the input-partition sort of
:func:`kjoin.spark.api.run_join`, merged into processing order per task: :mod:`kjoin.spark.passes.merge`), runs
both joins' per-task functions over them (:attr:`kjoin.spark.passes.plans.Plan.function`), and compares their
outputs per input record right there, since a record's outputs in both runs are all in its task:

1. A 64-bit fingerprint per output (a hash of key, value, ts, tombstone and the values joined: each text column
   dictionary-encoded over both runs by Arrow, the codes mixed by splitmix64 in numpy, where hashing the texts with
   pandas cost twice the join itself), summed per input record with the count, finds the input records whose outputs
   differ (a record is known by its *place*, its task and step: both runs give their rows in processing order, so
   each run's outputs and the records come sorted by place, and the sums are ``np.add.reduceat`` over runs of equal
   places, the lookups ``searchsorted``, no hashing of identities). Equal sums of different multisets of outputs
   would hide a difference; with 64-bit hashes that has a chance of about 2^-64 per input record.
2. Those records' outputs are compared as the reference engine compares them, in arrays
   (:func:`kjoin.spark.passes.comparison.compared_table`; the few records whose pairing the arrays cannot decide
   exactly go to the reference engine's comparison in Python, and are counted). The pass's rows are the
   differences (:data:`kjoin.spark.passes.comparison.DIFF_SCHEMA`).

The pass streams: both functions take the merged records as they come (``itertools.tee``: the run ahead waits for the
other, the records in between are held), and each gives its rows in processing order, so once both runs have given
a row of the record at place ``p`` (task, step), every output of every record before ``p`` is out in both, and those
records are compared and their differences go out (:data:`CHUNK_ROWS` at a time) while the joins go on. Memory holds
the records and outputs between the two runs' places and one chunk, not a whole task; and Spark reads the differences
and writes them as Python computes the next ones (holding a task whole, a diff of 10^7 records kept 1.4 of 2 cores
busy where one run keeps 1.8). A function that gave its rows out of processing order would be an error, not a silent
miss: the pass checks it.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import tee
from typing import Any, Callable, Iterator

import numpy as np

from .comparison import compared_table
from .merge import merged_batches
from .vectorised import task_segments

__all__ = ["paired_function", "Paired", "CHUNK_ROWS", "CHUNK_CONF", "diff_chunk_rows"]

_OUTPUT = ("scenario", "partition", "step", "side", "offset", "key", "left", "right", "value", "ts", "tombstone")
_OUTPUT += ("origin_step",)
_FINGERPRINTED = ("key", "value", "ts", "tombstone", "left", "right")


@dataclass(frozen=True)
class Paired:
    """The pass over a Spark frame: ``frame``, the differences, and ``fallbacks``, the Spark accumulator counting
    the records compared in Python as the frame is computed (``None`` where Spark has no accumulators)."""

    frame: Any
    fallbacks: Any


def paired_function(
    first: Callable[[Iterator[Any]], Iterator[Any]],
    second: Callable[[Iterator[Any]], Iterator[Any]],
    held_rank: int,
    spill_rows: int,
    json_keys: bool,
    json_values: bool,
    fallbacks: Any = None,
    chunk_rows: int = 0,
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A ``mapInArrow`` function over the input-partition sort (:class:`kjoin.spark.passes.plans.Feed`'s
    ``by_partition``): both per-task functions over the same records in processing order, the differences out
    (:data:`kjoin.spark.passes.comparison.DIFF_SCHEMA`). ``fallbacks``: a Spark accumulator that counts the records
    compared in Python."""

    def paired(batches: Iterator[Any]) -> Iterator[Any]:
        inputs = _Inputs()
        feeds = tee(inputs.capture(merged_batches(batches, held_rank, spill_rows)), 2)
        runs = [_Run(function(feed), inputs) for function, feed in zip((first, second), feeds)]
        while True:
            behind = [run for run in runs if not run.done]
            if behind:
                min(behind, key=lambda run: run.mark).pull()
            complete = min(run.mark for run in runs)  # every output of a record before it is out, in both runs
            if behind and sum(run.pending_rows(complete) for run in runs) < (chunk_rows or CHUNK_ROWS):
                continue
            found = _differing(inputs.take(complete), *(run.take(complete) for run in runs))
            if found is not None:
                differences, python = compared_table(*found, json_keys, json_values)
                if fallbacks is not None and python:
                    fallbacks.add(python)
                yield from differences.to_batches()
            if not behind:
                return

    return paired


CHUNK_ROWS = 200_000
"""Both runs' outputs compared at once, at least (fewer at the end of the task): the differences go out chunk by
chunk, as Spark reads them, while the joins go on. :data:`CHUNK_CONF` overrides it."""

CHUNK_CONF = "spark.kjoin.diff.chunkRows"
"""The Spark setting that overrides :data:`CHUNK_ROWS`, read when the diff is planned (the tests set it small, so
that a few records make many chunks)."""

_DONE = np.iinfo(np.int64).max


def diff_chunk_rows(spark: Any) -> int:
    """:data:`CHUNK_CONF` of ``spark`` (0: not set, :data:`CHUNK_ROWS`); a setting that is not a count is an
    error that names it."""
    from ..io.topic import SparkInputError

    setting = spark.conf.get(CHUNK_CONF, None)
    try:
        rows = 0 if setting is None else int(setting)
    except ValueError:
        rows = -1
    if rows < 0:
        raise SparkInputError(f"{CHUNK_CONF}={setting!r}: expected a number of outputs, e.g. 200000, or unset it")
    return rows


class _Inputs:
    """The merged records as both joins take them, each with its place ``(task, step)`` as one int64 (the task's
    number in the order the tasks come, shifted, plus the record's rank in its task: the ``step`` the per-task
    functions give its outputs), kept until both runs are past them."""

    def __init__(self) -> None:
        self.tasks: dict[tuple[int, int], int] = {}
        self.current: tuple[int, int] | None = None
        self.rank = 0
        self.tables: list[Any] = []
        self.places: list[Any] = []

    def capture(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            if batch.num_rows:
                self.tables.append(pa.Table.from_batches([batch]))
                self.places.append(self._places(batch))
            yield batch

    def _places(self, batch: Any) -> Any:
        places = []
        for task, rows in task_segments(batch):
            if task != self.current:
                self.current, self.rank = task, 0
                self.tasks.setdefault(task, len(self.tasks))
            places.append((self.tasks[task] << 40) + self.rank + np.arange(rows.num_rows, dtype=np.int64))
            self.rank += rows.num_rows
        return np.concatenate(places)

    def place(self, table: Any) -> Any:
        """The place of each row of a run's rows (``scenario, partition, step``; the rows come task by task)."""
        task = np.concatenate(
            [np.full(rows.num_rows, self.tasks[task], dtype=np.int64) for task, rows in task_segments(table)]
        )
        return (task << 40) + table.column("step").to_numpy(zero_copy_only=False).astype(np.int64)

    def take(self, before: int) -> Any:
        """The records placed before ``before``, gone from here."""
        return _split(self, before)


class _Run:
    """One join's rows as they come out of its per-task function: ``mark``, the place of the last row out (the
    functions give rows in processing order, so every row of a record placed before it is out), and the outputs
    not compared yet."""

    def __init__(self, rows: Iterator[Any], inputs: _Inputs) -> None:
        self.rows = rows
        self.inputs = inputs
        self.mark = -1
        self.done = False
        self.tables: list[Any] = []
        self.places: list[Any] = []

    def pull(self) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        for batch in self.rows:
            if not batch.num_rows:
                continue
            table = pa.Table.from_batches([batch])
            places = self.inputs.place(table)
            if places[0] < self.mark or (np.diff(places) < 0).any():
                raise RuntimeError(
                    "kjoin's paired diff pass: a per-task function gave its rows out of processing order; the diff "
                    "cannot compare it record by record (please report this with the join and its settings)"
                )
            self.mark = int(places[-1])
            outputs = pc.equal(table.column("row"), "output")
            self.tables.append(table.filter(outputs).select(list(_OUTPUT)))
            self.places.append(places[outputs.to_numpy(zero_copy_only=False)])
            return
        self.done, self.mark = True, _DONE

    def pending_rows(self, before: int) -> int:
        return sum(int(np.searchsorted(places, before)) for places in self.places)

    def take(self, before: int) -> Any:
        """The outputs of the records placed before ``before`` (``None``: none), gone from here."""
        return _split(self, before)


def _split(held: Any, before: int) -> tuple[Any, Any]:
    """The rows of ``held`` (its ``tables`` and ascending ``places``) placed before ``before``, taken out of it:
    a table and its places (``None, None``: none)."""
    import pyarrow as pa

    taken, places_taken, kept_tables, kept_places = [], [], [], []
    for table, places in zip(held.tables, held.places):
        cut = int(np.searchsorted(places, before))
        if cut:
            taken.append(table.slice(0, cut))
            places_taken.append(places[:cut])
        if cut < len(places):
            kept_tables.append(table.slice(cut))
            kept_places.append(places[cut:])
    held.tables, held.places = kept_tables, kept_places
    if not taken:
        return None, None
    return pa.concat_tables(taken), np.concatenate(places_taken)


def _mix(x: Any) -> Any:
    """splitmix64's finaliser over a uint64 array (wrapping)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _codes(column: Any) -> Any:
    """A column of both runs' outputs as uint64 codes, equal exactly where the values are: a text's index in the
    column's dictionary (built once over both runs, by Arrow), a number itself; null has a code of its own."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or pa.types.is_binary(column.type):
        column = pc.dictionary_encode(column.combine_chunks()).indices
    elif pa.types.is_boolean(column.type):
        column = pc.cast(column, pa.int64())
    values = pc.fill_null(pc.cast(column, pa.int64()), -(2**63)).to_numpy(zero_copy_only=False)
    return values.astype(np.int64).view(np.uint64)


def _fingerprints(tables: list[Any]) -> Any:
    """Each output of ``tables`` (both runs' outputs) as a 64-bit hash of what the output topic shows and the values
    joined, in the order of the tables' rows."""
    import pyarrow as pa

    both = pa.concat_tables(tables)
    hashes = np.zeros(both.num_rows, dtype=np.uint64)
    for salt, name in enumerate(_FINGERPRINTED):
        hashes = _mix(hashes ^ _mix(_codes(both.column(name)) + np.uint64(salt)))
    return hashes


def _per_record(places: Any, hashes: Any) -> tuple[Any, Any, Any]:
    """Per record (its place; ``places`` ascending): the place, the sum of its outputs' hashes (wrapping) and their
    count."""
    starts = np.flatnonzero(np.concatenate([[True], places[1:] != places[:-1]]))
    counts = np.diff(np.append(starts, len(places)))
    return places[starts], np.add.reduceat(hashes, starts), counts


def _among(places: Any, wanted: Any) -> Any:
    """Which of ``places`` are in ``wanted`` (both ascending)."""
    at = np.minimum(np.searchsorted(wanted, places), len(wanted) - 1)
    return wanted[at] == places


def _differing(records: tuple[Any, Any], first: tuple[Any, Any], second: tuple[Any, Any]) -> tuple[Any, Any] | None:
    """The outputs of the input records whose outputs differ between the two runs (per record, each run's sum of
    its outputs' hashes and their count), with ``i`` (the record's place) and ``run``; and those records' ``i,
    input_key, input_value, input_ts``. Each argument is a table and its rows' places, ascending (``None, None``:
    no rows). ``None``: no record differs."""
    import pyarrow as pa

    runs = [(run, table, places) for run, (table, places) in enumerate((first, second)) if table is not None]
    if not runs:
        return None
    hashes = _fingerprints([table for _, table, _ in runs])
    sums: list[tuple[Any, Any, Any]] = [(np.empty(0, np.int64), np.empty(0, np.uint64), np.empty(0, np.int64))] * 2
    start = 0
    for run, table, places in runs:
        sums[run] = _per_record(places, hashes[start : start + table.num_rows])
        start += table.num_rows
    every = np.union1d(sums[0][0], sums[1][0])
    totals = []
    for found, hashed, counts in sums:
        at = np.searchsorted(every, found)
        total_hash, total_count = np.zeros(len(every), np.uint64), np.zeros(len(every), np.int64)
        total_hash[at], total_count[at] = hashed, counts
        totals.append((total_hash, total_count))
    changed = every[(totals[0][0] != totals[1][0]) | (totals[0][1] != totals[1][1])]
    if not len(changed):
        return None
    table, places = records
    mine = _among(places, changed)
    inputs = table.filter(pa.array(mine))
    inputs = pa.table(
        {
            "i": pa.array(places[mine]),
            "input_key": inputs.column("key"),
            "input_value": inputs.column("value"),
            "input_ts": inputs.column("ts"),
        }
    )
    found = []
    for run, table, places in runs:
        mine = _among(places, changed)
        rows = table.filter(pa.array(mine))
        found.append(
            rows.append_column("i", pa.array(places[mine])).append_column(
                "run", pa.array(np.full(rows.num_rows, run, dtype=np.int32))
            )
        )
    return pa.concat_tables(found), inputs
