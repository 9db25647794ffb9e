"""A lean per-task pass for joins over versioned tables (KIP-914) and the stream-table grace buffer (KIP-923).

Which joins: KStream-KTable inner/left against a versioned table, with or without a grace period, and
KTable-KTable inner/left/outer where one or both tables are versioned (every ``versioned_mode``), in every era
the processors run them (3.5 on; 3.6 on with grace), with the default joiner, on the values and keys
:func:`unsupported` accepts. ``method="auto"`` prefers this pass and falls back to the processors for anything
else.

How it works. The records arrive as on the processor path (:mod:`kjoin.spark.passes.task`): every Kafka task's records
together, in processing order. A versioned lookup is an as-of search among the versions stored *before* the
record, bounded by a stream time that the puts themselves move, and the grace buffer reorders records by
timestamp: not a forward fill. So the state is walked by one specialised loop per task segment, over plain
Python values (``to_pylist`` once per column and batch), with the store as two dicts ``key -> [version ts]``
and ``key -> [(value, joiner text) or None]`` searched with :mod:`bisect`, and the grace buffer a heap ordered
as Kafka's ``(ts, key bytes, arrival)``. The loop writes, per result row, only the input index of the step
that emits it, a case number and the values that differ per row; everything else (row kind, fate, reason,
output kind, scenario, partition, step, side, offset) is Arrow ``take`` from small tables or from the batch.
The joiner's text of each value is rendered once per batch (``pyarrow.compute``) and kept with the version.

Two joins run as array work instead, one row per record:

* a table-table join in ``versioned_mode: final`` never reads a version's history, only each key's latest
  version and each table's observed stream time (:func:`_table_table_arrays`: running maxima decide which puts
  are refused and which are out-of-order, and the rest is the unversioned pass's forward fill,
  :mod:`kjoin.spark.passes.vectorised`); ``attempt1`` and ``attempt2`` read the history and run the loop;
* a stream-table join without grace (:func:`_stream_table_arrays`) keeps the history as arrays sorted by
  (key id, ts): a lookup's version from it is a forward fill over the history and the lookups sorted together,
  and from the batch's own earlier puts a walk back over them, all lookups at once, one put per round (a batch
  where one key has more than :data:`WALK_LIMIT` puts runs the loop instead, its history moved in and out).

Every rule is the processors' (:mod:`kjoin.joins.versioned`, :mod:`kjoin.stores.versioned`): a put older than
observed stream time minus history retention is refused; a lookup older than that finds only the latest
version, if old enough; a version whose successor is at or before that limit can never be returned again and
is dropped (lazily: the key just written at each put, every key once the puts since the last sweep reach the
number of keys, so the store is bounded by retention as Kafka's is, at constant cost per put). Rows come out in
emission order within each task, byte-identical to the processors' (``tests/test_spark_vectorised_versioned.py``).

Measured outside Spark (2026-11-24, 2-core machine beside other jobs), CPU records/s on one Kafka task of the
bench's workload (:func:`kjoin.bench.generate`, 4 x 10^5 records over 4 partitions: one task of 99,707 records,
history retention 10 s, no grace), this pass against the processors (:func:`kjoin.spark.passes.task.task_function`) on
the same records; the loop (load 3.6-3.9) and the array forms (load 3-4.2; Arrow batches of 100,000, as
:func:`kjoin.spark.local_session` sets, and of 10,000):

=======================  =======  ===========  ==========  ==============  =============
join                     variant  processors   loop        arrays, 10^5    arrays, 10^4
=======================  =======  ===========  ==========  ==============  =============
versioned stream-table   inner    111K         808K        3.17M           1.23M
versioned stream-table   left     95K          773K        3.37M           1.70M
versioned table-table    inner    7.8K         297K        1.13-1.42M      0.88M
versioned table-table    left     6.2K         242K        1.54-1.65M      1.02M
versioned table-table    outer    4.4K         187K        1.25-1.72M      1.04M
=======================  =======  ===========  ==========  ==============  =============

Where the loop's time goes: 2.5-3 us a record for table-table (a put and a read of each table, about a dozen
appends), 1 us for stream-table, then the Arrow batch (a quarter of the stream-table pass). Tried and kept in
the loop: the common steps written out (no call per record), one dict entry per key for both lists, the cyclic
garbage collector paused (about a quarter of the loop's time went to its passes over the growing lists). The
array forms cost more per batch (the stream-table history is sorted again with each batch's puts), so smaller
batches lower their rate.
"""

from __future__ import annotations

import gc
import heapq
import json
from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from ...fates import Fate, Reason
from ...partitioner import serialize_key
from ...records import OutputKind, Side
from ...scenario import Scenario
from ...stores.versioned import Placement, place_version
from ..spec import JoinSpec, specs_of
from .task import RESULT_FIELDS, _arrow_schema
from .vectorised import (
    _NONE,
    _last_before,
    array_pass_refusal,
    key_groups,
    observed_before,
    _render,
    _Tables,
    joiner_text,
    keep_where,
    key_ids,
    task_segments,
)

if TYPE_CHECKING:
    from .plans import Inputs

__all__ = ["unsupported", "versioned_function", "is_versioned"]


def is_versioned(config: JoinSpec | Scenario) -> bool:
    """Is ``config`` a primary-key join over at least one versioned table (this pass's joins)?"""
    return JoinSpec.of(config).versioned


def unsupported(specs: Mapping[int, JoinSpec], inputs: "Inputs") -> str | None:
    """Why this pass cannot run these scenarios exactly, or ``None`` when it can."""
    why = array_pass_refusal(inputs)
    if why is not None:
        return why
    for scenario_id, spec in specs.items():
        where = f"scenario {scenario_id}" if len(specs) > 1 else "the join"
        if not is_versioned(spec):
            return f"{where} is not a join over a versioned table (vectorised versioned: those only)"
        extras = [
            name
            for name, on in (
                ("chained joins (then)", bool(spec.then)),
                ("a materialized result", spec.materialized),
                ("old values", spec.send_old_values),
                ("record caches", bool(spec.caching)),
            )
            if on
        ]
        if extras:
            return f"{where} has {' and '.join(extras)} (vectorised versioned: one plain join per scenario)"
        if (why := inputs.key_refusal(scenario_id, where)) is not None:
            return why
    return None


# The rows a step can give, by case number: (row, fate, reason, output kind).
_CASES: list[tuple[str, Fate | None, Reason | None, OutputKind | None]] = [
    ("output", None, None, OutputKind.JOINED),  # 0
    ("output", None, None, OutputKind.UNMATCHED),  # 1
    ("output", None, None, OutputKind.NULL_KEY),  # 2
    ("output", None, None, OutputKind.TOMBSTONE),  # 3
    ("step", Fate.DROPPED, Reason.NULL_KEY, None),  # 4
    ("step", Fate.STORED, Reason.TABLE_UPDATE, None),  # 5
    ("step", Fate.DROPPED, Reason.EXPIRED_PUT, None),  # 6
    ("step", Fate.DROPPED, Reason.NULL_VALUE, None),  # 7
    ("step", Fate.NO_MATCH, Reason.NO_PARTNER, None),  # 8
    ("step", Fate.DROPPED, Reason.NULL_KEY_IN_GRACE_BUFFER, None),  # 9
    ("step", Fate.BUFFERED, Reason.GRACE_PERIOD, None),  # 10
    ("step", Fate.STORED, Reason.NOTHING_TO_DELETE, None),  # 11
    ("step", Fate.DROPPED, Reason.OUT_OF_ORDER_VERSION, None),  # 12
]
_OUTPUT_CASES = 4  # cases below this are outputs

ARRAY_TABLE_TABLE = True
"""Run table-table joins in ``versioned_mode: final`` as array work (:func:`_table_table_arrays`); ``False``: the
loop (:func:`_table_table`), which every mode can run (the tests run both)."""
WALK_LIMIT = 64
"""The array form of the stream-table join walks back over a key's earlier puts in the batch, one per round: a
batch where one key has more puts than this runs the loop instead (its history moved into the loop's store and
back), so that a hot key does not cost rounds times lookups."""
ARRAY_STREAM_TABLE = True
"""Run stream-table joins without grace as array work (:func:`_stream_table_arrays`); ``False``: the loop
(:func:`_stream_table`), which runs them with grace too (the tests run both)."""
ID_TIME_KEY_LIMIT = 2**62
"""The array form of the stream-table join numbers a (key id, ts) pair as one int64 while that stays below this
limit (:func:`_id_time_keys`), so its lookups are a search in the sorted history; beyond it (timestamps spanning
centuries times many keys) it sorts the pairs (:func:`_versions_at`; the tests run both)."""


_LATEST, _DELETES_LATEST, _OUT_OF_ORDER = Placement.LATEST, Placement.DELETES_LATEST, Placement.OUT_OF_ORDER
"""(An Enum's members as module names: a lookup through its class costs about 100 ns, and the loops place every put.)"""


class _Versions:
    """One versioned table of one task: ``versions``, per key its versions' timestamps (ascending) and their
    ``(value, text)`` (``None`` for a tombstone), as two lists in one dict entry (one lookup per record);
    ``ends``: per key where Kafka's segments end (the newest segment record's validTo), which decides what a
    tombstone at the latest version's own timestamp leaves (:func:`kjoin.stores.versioned.place_version`);
    ``observed``: the largest ts put (``None`` before the first put)."""

    __slots__ = ("retention", "observed", "versions", "ends", "puts", "sends_old", "no_trace")
    plain = False

    def __init__(self, retention: int, no_trace: bool = True) -> None:
        self.retention = retention
        self.observed: int | None = None
        self.versions: dict[Any, tuple[list[int], list[Any]]] = {}
        self.ends: dict[Any, int] = {}
        self.puts = 0  # accepted puts since the last sweep over every key
        self.sends_old = False
        self.no_trace = no_trace  # Semantics.versioned_same_ts_tombstone_leaves_no_trace

    def latest(self, key: Any) -> tuple[Any, int] | None:
        """``((value, text), ts)`` of the latest version unless it is a tombstone, else ``None``."""
        found = self.versions.get(key)
        if found is None:
            return None
        entry = found[1][-1]
        return None if entry is None else (entry, found[0][-1])

    def as_of(self, key: Any, ts: int) -> tuple[Any, int] | None:
        """``((value, text), version ts)`` valid at ``ts``, or ``None`` (``get(key, ts)``)."""
        found = self.versions.get(key)
        if found is None:
            return None
        times, entries = found
        if ts < self.observed - self.retention:  # type: ignore[operator]  # expired: only the latest can answer
            if times[-1] <= ts:
                entry = entries[-1]
                return None if entry is None else (entry, times[-1])
            return None
        index = bisect_right(times, ts)
        if index == 0:
            return None
        entry = entries[index - 1]
        return None if entry is None else (entry, times[index - 1])

    def put(self, key: Any, entry: Any, ts: int) -> int:
        """Store a version: 1 if it is the key's latest, 0 if out-of-order, -1 if refused (expired). Where it goes
        and where the key's segments end after it: :func:`kjoin.stores.versioned.place_version`; the common case (a
        version after the key's last) is written out first."""
        observed = self.observed
        if observed is not None and ts < observed - self.retention:
            return -1
        if observed is None or ts > observed:
            self.observed = observed = ts
        found = self.versions.get(key)
        if found is None:
            found = self.versions[key] = ([], [])
        times, entries = found
        last = times[-1] if times else None
        placement, end = place_version(
            last, last is None or entries[-1] is None, self.ends.get(key), ts, entry is None, self.no_trace
        )
        if end is not None:
            self.ends[key] = end
        if last is None or ts > last:
            times.append(ts)
            entries.append(entry)
            if len(times) > 1 and times[1] <= observed - self.retention:
                self._trim(found, observed - self.retention)
        else:
            self._put_at_or_before(key, found, entry, ts, placement)
            self._trim(found, observed - self.retention)
        self.puts += 1
        if self.puts >= len(self.versions):
            self.puts = 0
            limit = observed - self.retention
            for each in self.versions.values():
                self._trim(each, limit)
        return 0 if placement is _OUT_OF_ORDER else 1

    def _put_at_or_before(
        self, key: Any, found: tuple[list[int], list[Any]], entry: Any, ts: int, placement: Placement
    ) -> None:
        """A version at or before the key's last one, placed by :func:`~kjoin.stores.versioned.place_version`."""
        times, entries = found
        if placement is _DELETES_LATEST:  # the latest value goes, nothing is written: the segments end
            times.pop()
            entries.pop()
            end = self.ends.get(key)
            if end is not None and (not times or times[-1] != end):
                times.append(end)  # (a store moved in from the array forms keeps only each key's last version)
                entries.append(None)
            if not times:
                del self.versions[key]
            return
        index = bisect_left(times, ts)
        if index < len(times) and times[index] == ts:
            entries[index] = entry
        else:
            times.insert(index, ts)
            entries.insert(index, entry)

    @staticmethod
    def _trim(found: tuple[list[int], list[Any]], limit: int) -> None:
        """Drop the versions of one key that can never be returned again: those whose successor is at or before
        ``limit``."""
        times, entries = found
        if len(times) > 1 and times[1] <= limit:
            cut = bisect_right(times, limit) - 1  # keep the last version at or before the limit, and all after
            del times[:cut]
            del entries[:cut]

    def visible(self, key: Any) -> list[tuple[int, int | None, Any]]:
        """Every version of ``key`` that can still be returned: ``(valid from, valid to or None, entry)``."""
        found = self.versions.get(key)
        if found is None:
            return []
        self._trim(found, self.observed - self.retention)  # type: ignore[operator]
        times, entries = found
        return [(t, times[i + 1] if i + 1 < len(times) else None, entries[i]) for i, t in enumerate(times)]


class _Plain:
    """An unversioned table of one task: ``key -> ((value, text), ts)``; a tombstone deletes the key."""

    __slots__ = ("rows", "sends_old")
    plain = True

    def __init__(self) -> None:
        self.rows: dict[Any, tuple[Any, int]] = {}
        self.sends_old = False

    def latest(self, key: Any) -> tuple[Any, int] | None:
        return self.rows.get(key)


class _Task:
    """What one Kafka task carries from batch to batch: its tables, its grace buffer, its step count."""

    def __init__(self, config: JoinSpec | Scenario) -> None:
        spec = JoinSpec.of(config)
        self.rank = 0
        self.stores: list[Any] = []
        for options in (spec.left, spec.right):
            if options.versioned and options.history_retention_ms is not None:
                no_trace = spec.semantics.versioned_same_ts_tombstone_leaves_no_trace
                self.stores.append(_Versions(options.history_retention_ms, no_trace))
            else:
                self.stores.append(_Plain())
        if spec.join == "table-table":  # a side sends old values when its records come out without a partner
            self.stores[0].sends_old = spec.variant.outer(Side.LEFT)
            self.stores[1].sends_old = spec.variant.outer(Side.RIGHT)
        # table-table in final mode as arrays: each side's latest values (unversioned: its table), observed
        # stream time and history retention (None: unversioned)
        self.tables = _Tables()
        self.observed = [_NONE, _NONE]
        self.retention = [
            options.history_retention_ms if options.versioned else None for options in (spec.left, spec.right)
        ]
        self.history = _History()  # stream-table without grace as arrays: the versioned table
        # the array forms' bookkeeping of each versioned side: key -> (last version ts, is it a tombstone, where the
        # segments end), enough to hand the table to the loop exactly (:func:`_advance_tails`)
        self.tails: list[dict[Any, tuple[int, bool, int | None]]] = [{}, {}]
        self.books = [_Bookkeeping(), _Bookkeeping()]  # the table-table array form's, per key id of ``tables``
        self.heap: list[tuple] = []  # the grace buffer: (ts, key bytes, arrival, key, (value, text), origin step)
        self.buffer_time: int | None = None
        self.arrivals = 0


def versioned_function(
    configs: Mapping[int, JoinSpec | Scenario], json_keys: bool = False, json_values: bool = False
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: input batches as :func:`kjoin.spark.passes.task.task_function` takes them, output
    rows of :data:`kjoin.spark.passes.task.RESULT_FIELDS` in emission order within each task."""
    specs = specs_of(configs)
    if not all(spec.versioned for spec in specs.values()):
        raise ValueError("vectorised_versioned: joins over versioned tables only")

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        group: tuple[int, int] | None = None
        task: _Task | None = None
        schema = None
        for batch in batches:
            if schema is None:
                schema = _arrow_schema(batch.schema)
            for key, segment in task_segments(batch):
                if key != group or task is None:
                    group, task = key, _Task(specs[key[0]])
                yield segment_rows(segment, specs[key[0]], task, schema, json_keys, json_values)

    return run


class _Rows:
    """The result rows of one segment as the loop writes them: per row the input index of the step that emits
    it, its case number, and the cells that differ per row."""

    __slots__ = ("at", "case", "key", "left", "right", "text", "ts", "origin", "until")

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, [])

    def step_recorder(self) -> Callable[..., None]:
        """``step(i, case number, key, ts, wait=None)``: a step row of the record at ``i`` (no output cells;
        ``wait``: the grace buffer's until), as a closure over the lists, for the loops."""
        at, case, out_key, left, right = self.at, self.case, self.key, self.left, self.right
        text, out_ts, origin, until = self.text, self.ts, self.origin, self.until

        def step(i: int, number: int, key: Any, ts: int, wait: int | None = None) -> None:
            at.append(i)
            case.append(number)
            out_key.append(key)
            left.append(None)
            right.append(None)
            text.append(None)
            out_ts.append(ts)
            origin.append(None)
            until.append(wait)

        return step

    def output(self, i: int, number: int, key: Any, left: Any, right: Any, text: Any, ts: int, origin: int) -> None:
        """An output row of the record at ``i`` (for the rare outputs; the loops write their common ones inline)."""
        self.at.append(i)
        self.case.append(number)
        self.key.append(key)
        self.left.append(left)
        self.right.append(right)
        self.text.append(text)
        self.ts.append(ts)
        self.origin.append(origin)
        self.until.append(None)

    def table_recorder(self, steps: list[int]) -> Callable[..., None]:
        """``emit(i, case number, key, side, mine, other, ts)``: an output of the table update at ``i`` on ``side``
        (``mine``/``other``: ``(value, text)`` or ``None``), as a closure over the lists, for the table-table loop's
        history modes (:func:`_history`, :func:`_rule`)."""
        at, case, out_key, left, right = self.at, self.case, self.key, self.left, self.right
        text, out_ts, origin, until = self.text, self.ts, self.origin, self.until

        def emit(i: int, number: int, key: Any, side: int, mine: Any, other: Any, ts: int) -> None:
            pair = (mine, other) if side == 0 else (other, mine)
            at.append(i)
            case.append(number)
            out_key.append(key)
            left.append(None if pair[0] is None else pair[0][0])
            right.append(None if pair[1] is None else pair[1][0])
            if number == 3:
                text.append(None)
            else:
                text.append(f"{'null' if pair[0] is None else pair[0][1]}-{'null' if pair[1] is None else pair[1][1]}")
            out_ts.append(ts)
            origin.append(steps[i])
            until.append(None)

        return emit


def segment_rows(
    batch: Any,
    config: JoinSpec | Scenario,
    task: _Task,
    schema: Any,
    json_keys: bool = False,
    json_values: bool = False,
) -> Any:
    """The result rows of one task's consecutive records; ``task`` carries on after them. The array forms take a
    batch they can run exactly (:func:`_advance_tails`), the loop every other."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    spec = JoinSpec.of(config)
    n = batch.num_rows
    position = batch.column("position")
    if position.null_count == n:
        steps = np.arange(task.rank, task.rank + n, dtype=np.int64)
    else:
        steps = pc.cast(position, pa.int64()).to_numpy(zero_copy_only=False)
    task.rank += n
    if spec.join == "table-table" and spec.versioned_mode == "final" and ARRAY_TABLE_TABLE:
        return _table_table_pieces(batch, spec, task, steps, schema, json_values)
    if spec.join == "stream-table" and spec.grace_ms is None and ARRAY_STREAM_TABLE:
        puts = pc.and_(pc.equal(batch.column("side"), "right"), pc.is_valid(batch.column("key")))
        codes = pc.dictionary_encode(batch.column("key").filter(puts)).indices.to_numpy(zero_copy_only=False)
        if (len(codes) == 0 or int(np.bincount(codes).max()) <= WALK_LIMIT) and _advance_tails(batch, task) is None:
            return _stream_table_arrays(batch, spec, task, steps, schema, json_values)
        # a key with many puts in this batch (the walk back would take as many rounds), or a tombstone that deletes
        # its key's latest version: the loop takes the batch
        moves = (_history_to_store, _store_to_history)
        return _loop_rows_moved(batch, spec, task, steps, schema, json_keys, json_values, *moves)
    return _loop_rows(batch, spec, task, steps, schema, json_keys, json_values)


def _table_table_pieces(batch: Any, spec: JoinSpec, task: _Task, steps: Any, schema: Any, json_values: bool) -> Any:
    """The table-table array form over a batch, in pieces that each end with a tombstone deleting its key's latest
    value (:func:`_advance_books`): the array form sees it as a tombstone that is the key's latest, which gives its
    row, and after it the key's latest is what the loop's store leaves (a tombstone where the segments end, or
    nothing), so the next piece finds it there."""
    import pyarrow as pa

    ids = task.tables.ids(batch.column("key"))
    columns = _put_columns(batch)
    pieces = []
    start, n = 0, batch.num_rows
    while start < n:
        found = _advance_books(task, ids, columns, start)
        stop = n if found is None else found[0] + 1
        piece = batch.slice(start, stop - start)
        pieces.append(_table_table_arrays(piece, spec, task, steps[start:stop], schema, json_values, ids[start:stop]))
        if found is not None:
            _, side, code, end = found
            _deleted_latest(task.tables, side, code, end)
        start = stop
    if len(pieces) == 1:
        return pieces[0]
    return pa.concat_batches(pieces)


def _deleted_latest(tables: _Tables, side: int, code: int, end: int | None) -> None:
    """One side's carried table after a tombstone deleted the latest value of the key ``code``: no value, and as
    the latest version's ts where the key's segments end (a tombstone there), or none."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    at = np.zeros(len(tables.keys), dtype=bool)
    at[code] = True
    where = pa.array(at)
    tables.values[side] = pc.if_else(where, pa.scalar(None, tables.values[side].type), tables.values[side])
    tables.ts[side] = pc.if_else(where, pa.scalar(end, pa.int64()), tables.ts[side])


def _loop_rows_moved(
    batch: Any,
    spec: JoinSpec,
    task: _Task,
    steps: Any,
    schema: Any,
    json_keys: bool,
    json_values: bool,
    move_in: Callable[[_Task, bool], None],
    move_out: Callable[[_Task, Any, Any], None],
) -> Any:
    """:func:`_loop_rows` over a batch an array form gave up: its state moved into the loop's stores
    (``move_in``) and back out after (``move_out``), so that the next batch finds it where it left it."""
    key_type, value_type = batch.column("key").type, batch.column("value").type
    move_in(task, json_values)
    try:
        return _loop_rows(batch, spec, task, steps, schema, json_keys, json_values)
    finally:
        move_out(task, key_type, value_type)


_NO_TAIL = (None, True, None)
"""The bookkeeping of a key with no version yet: no last version, no segments."""

_PLACEMENTS = (_LATEST, _DELETES_LATEST, _OUT_OF_ORDER)
_ORDERINGS = (None, 1, 0, -1)  # a reference time after ts, at ts, before ts (ts is 0); None: no such time


def _placement_table(no_trace: bool) -> tuple[Any, Any]:
    """:func:`~kjoin.stores.versioned.place_version` over every case it tells apart, for the array forms'
    bookkeeping (:func:`_advance_tails`): ``(placement, end)``, two arrays indexed by :func:`_placement_cases`'s
    number, the placement's index in :data:`_PLACEMENTS` and where the new end comes from (0: none, 1: the put's ts,
    2: the key's end, 3: its last version's ts). The rule compares the put's ts with the key's last version's ts
    and with its end, never those two with each other, so a case is the two orderings and the two tombstone flags,
    and each case is decided by calling the rule once on representatives (``tests/test_spark_vectorised_versioned``
    checks the table against the rule on random puts)."""
    import numpy as np

    placements = np.zeros(64, dtype=np.int8)
    sources = np.zeros(64, dtype=np.int8)
    for last_order in range(4):
        for end_order in range(4):
            for last_is_tombstone in (False, True):
                for is_tombstone in (False, True):
                    number = ((last_order * 4 + end_order) * 2 + last_is_tombstone) * 2 + is_tombstone
                    last = None if _ORDERINGS[last_order] is None else 2 * _ORDERINGS[last_order]
                    end = _ORDERINGS[end_order]  # distinct from last unless both are ts: the source is unambiguous
                    placement, new_end = place_version(
                        last, last is None or last_is_tombstone, end, 0, is_tombstone, no_trace
                    )
                    placements[number] = _PLACEMENTS.index(placement)
                    sources[number] = 0 if new_end is None else 1 if new_end == 0 else 2 if new_end == end else 3
    return placements, sources


_PLACEMENT_TABLES = {no_trace: _placement_table(no_trace) for no_trace in (False, True)}


def _placement_cases(ts: Any, last: Any, has_last: Any, last_null: Any, end: Any, has_end: Any, null: Any) -> Any:
    """Each put's case number in :func:`_placement_table` (numpy arrays, one element per put)."""
    import numpy as np

    last_order = np.where(has_last, 2 - np.sign(last - ts), 0)  # as _ORDERINGS: 0 none, 1 after ts, 2 at, 3 before
    end_order = np.where(has_end, 2 - np.sign(end - ts), 0)
    return ((last_order * 4 + end_order) * 2 + last_null) * 2 + null


ROUND_LIMIT = 256
"""The array forms' bookkeeping (:func:`_place_rounds`) places a side's puts in rounds, each key's first put of the
batch, then its second...: a batch where one key has more puts than this places them one by one instead."""


class _Bookkeeping:
    """A versioned side's bookkeeping for the array forms, per key number, as numpy arrays: its last version's ts
    (``has_last``: it has one) and whether that is a tombstone, and where its segments end (``has_end``: they do);
    a key never put has none of them (:data:`_NO_TAIL`)."""

    __slots__ = ("last", "has_last", "last_null", "end", "has_end")

    def __init__(self, size: int = 0) -> None:
        import numpy as np

        self.last = np.full(size, _NONE, dtype=np.int64)
        self.has_last = np.zeros(size, dtype=bool)
        self.last_null = np.ones(size, dtype=bool)
        self.end = np.full(size, _NONE, dtype=np.int64)
        self.has_end = np.zeros(size, dtype=bool)

    @classmethod
    def of(cls, tails: list[tuple[int | None, bool, int | None]]) -> "_Bookkeeping":
        """From ``(last ts or None, is it a tombstone, end or None)`` per key number."""
        import numpy as np

        book = cls(0)
        book.has_last = np.array([t[0] is not None for t in tails], dtype=bool)
        book.last = np.array([_NONE if t[0] is None else t[0] for t in tails], dtype=np.int64)
        book.last_null = np.array([t[1] for t in tails], dtype=bool)
        book.has_end = np.array([t[2] is not None for t in tails], dtype=bool)
        book.end = np.array([_NONE if t[2] is None else t[2] for t in tails], dtype=np.int64)
        return book

    def tails(self) -> Iterator[tuple[int | None, bool, int | None]]:
        """``(last ts or None, is it a tombstone, end or None)`` per key number."""
        columns = (self.last, self.has_last, self.last_null, self.end, self.has_end)
        for last, known, null, end, ends in zip(*(column.tolist() for column in columns)):
            yield (last if known else None, null, end if ends else None)

    def grown(self, size: int) -> "_Bookkeeping":
        """Covering ``size`` keys (the new ones never put)."""
        import numpy as np

        missing = size - len(self.last)
        if missing > 0:
            more = _Bookkeeping(missing)
            for name in self.__slots__:
                setattr(self, name, np.concatenate([getattr(self, name), getattr(more, name)]))
        return self

    def copy(self) -> "_Bookkeeping":
        book = _Bookkeeping(0)
        for name in self.__slots__:
            setattr(book, name, getattr(self, name).copy())
        return book

    def delete_latest(self, code: int) -> int | None:
        """After a tombstone deleted the latest value of key ``code``: a tombstone where its segments end, or nothing
        (as :meth:`_Versions._put_at_or_before` leaves the loop's store); returns that end."""
        end = int(self.end[code]) if self.has_end[code] else None
        self.has_last[code] = end is not None
        self.last[code] = _NONE if end is None else end
        self.last_null[code] = True
        return end


def _place_rounds(book: _Bookkeeping, codes: Any, indices: Any, ts: Any, null: Any, no_trace: bool) -> int | None:
    """Place one side's puts (their key numbers in ``book``, batch indices ascending, ts, is it a tombstone) by
    :func:`~kjoin.stores.versioned.place_version`, tabulated (:func:`_placement_table`): keys apart at once, each
    key's puts in turn (round ``r`` places every key's ``r``-th put). Returns the smallest batch index of a put that
    deletes its key's latest value (``book`` is then also past it: the caller places again up to it), or ``None``.
    A key with more than :data:`ROUND_LIMIT` puts: one by one, by the rule itself."""
    import numpy as np

    if not len(codes):
        return None
    _, group, counts = np.unique(codes, return_inverse=True, return_counts=True)
    if int(counts.max()) > ROUND_LIMIT:
        return _place_one_by_one(book, codes, indices, ts, null, no_trace)
    placements, sources = _PLACEMENT_TABLES[no_trace]
    order = np.argsort(group, kind="stable")  # by key, processing order within each
    rank = np.empty(len(codes), dtype=np.int64)
    rank[order] = np.arange(len(codes)) - np.repeat(np.cumsum(counts) - counts, counts)
    by_round = np.argsort(rank, kind="stable")
    deletes_at: int | None = None
    begin = 0
    for stop in np.cumsum(np.bincount(rank)).tolist():
        puts = by_round[begin:stop]
        begin = stop
        c, t, tombstone = codes[puts], ts[puts], null[puts]
        end = book.end[c]
        case = _placement_cases(t, book.last[c], book.has_last[c], book.last_null[c], end, book.has_end[c], tombstone)
        placement, source = placements[case], sources[case]
        deleting = placement == 1
        if deleting.any():
            first = int(indices[puts[deleting]].min())
            deletes_at = first if deletes_at is None else min(deletes_at, first)
        keep = ~deleting
        book.has_end[c[keep]] = source[keep] != 0
        book.end[c[keep]] = np.select([source == 1, source == 2], [t, end], default=book.last[c])[keep]
        latest = placement == 0
        book.has_last[c[latest]] = True
        book.last[c[latest]] = t[latest]
        book.last_null[c[latest]] = tombstone[latest]
    return deletes_at


def _place_one_by_one(book: _Bookkeeping, codes: Any, indices: Any, ts: Any, null: Any, no_trace: bool) -> int | None:
    """:func:`_place_rounds` put by put."""
    place, latest, deletes = place_version, _LATEST, _DELETES_LATEST
    for code, index, t, tombstone in zip(codes.tolist(), indices.tolist(), ts.tolist(), null.tolist()):
        last = int(book.last[code]) if book.has_last[code] else None
        end = int(book.end[code]) if book.has_end[code] else None
        placement, new_end = place(last, bool(book.last_null[code]), end, t, tombstone, no_trace)
        if placement is deletes:
            return index
        book.has_end[code] = new_end is not None
        book.end[code] = _NONE if new_end is None else new_end
        if placement is latest:
            book.has_last[code] = True
            book.last[code] = t
            book.last_null[code] = tombstone
    return None


def _accepted_puts(side: int, store: _Versions, task: _Task, ts: Any, is_right: Any, has_key: Any) -> Any:
    """The batch indices of one versioned side's puts its table accepts (not below observed stream time, carried in
    ``task.observed``, minus history retention)."""
    import numpy as np

    puts = (is_right if side else ~is_right) & has_key
    observed, _ = observed_before(ts, puts, task.observed[side])
    return np.flatnonzero(puts & ~((observed > _NONE) & (ts < observed - store.retention)))


def _advance_tails(batch: Any, task: _Task) -> int | None:
    """Keep the stream-table array form's bookkeeping of its versioned side (``task.tails``, key -> ``(last ts,
    is it a tombstone, end)``) through the batch's accepted puts (:func:`_place_rounds`), and return ``None``; or,
    changing nothing, the index of the first put that is a tombstone deleting its key's latest value
    (:attr:`~kjoin.stores.versioned.Placement.DELETES_LATEST`, ``versioned_same_ts_tombstone_leaves_no_trace``):
    what the key finds next then depends on its history, which this array form does not walk (the loop takes such
    a batch). Without such a tombstone a versioned table behaves as if every put were a version."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ts, is_right, has_key, null = _put_columns(batch)
    pending = []
    for side, store in enumerate(task.stores):
        if store.plain:
            continue
        accepted = _accepted_puts(side, store, task, ts, is_right, has_key)
        if not len(accepted):
            continue
        encoded = pc.dictionary_encode(batch.column("key").take(pa.array(accepted)))
        keys = encoded.dictionary.to_pylist()
        tails = task.tails[side]
        book = _Bookkeeping.of([tails.get(key) or _NO_TAIL for key in keys])
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        found = _place_rounds(book, codes, accepted, ts[accepted], null[accepted], store.no_trace)
        if found is not None:
            return found
        pending.append((tails, keys, book))
    for tails, keys, book in pending:
        tails.update(zip(keys, book.tails()))
    return None


def _put_columns(batch: Any) -> tuple[Any, Any, Any, Any]:
    """A batch's timestamps and, as numpy masks, is the record the right side's, has it a key, is its value null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ts = pc.cast(batch.column("ts"), pa.int64()).to_numpy(zero_copy_only=False)
    is_right = pc.equal(batch.column("side"), "right").to_numpy(zero_copy_only=False)
    has_key = pc.is_valid(batch.column("key")).to_numpy(zero_copy_only=False)
    null = pc.is_null(batch.column("value")).to_numpy(zero_copy_only=False)
    return ts, is_right, has_key, null


def _advance_books(task: _Task, ids: Any, columns: tuple, start: int) -> tuple[int, int, int, int | None] | None:
    """Keep the table-table array form's bookkeeping (``task.books``, per key id of ``task.tables``) through the
    accepted puts of the batch from ``start`` on (:func:`_place_rounds`), and return ``None``; or ``(index, side,
    key id, end)`` of the first put that is a tombstone deleting its key's latest value, the bookkeeping advanced
    through the puts before it and that key left with a tombstone where its segments end (``end``), or nothing."""
    ts, is_right, has_key, null = (column[start:] for column in columns)
    size = 0 if task.tables.keys is None else len(task.tables.keys)
    placed, first = [], None
    for side, store in enumerate(task.stores):
        if store.plain:
            continue
        accepted = _accepted_puts(side, store, task, ts, is_right, has_key)
        if not len(accepted):
            continue
        book = task.books[side].grown(size)
        saved = book.copy()
        codes = ids[start:][accepted]
        found = _place_rounds(book, codes, accepted, ts[accepted], null[accepted], store.no_trace)
        placed.append((side, saved, codes, accepted))
        if found is not None and (first is None or found < first[0]):
            first = (found, side)
    if first is None:
        return None
    index, deleting_side = first
    for side, saved, codes, accepted in placed:  # again, up to the first such put only
        task.books[side] = saved
        before = accepted < index
        assert _place_rounds(saved, codes[before], accepted[before], ts[accepted[before]], null[accepted[before]],
                             task.stores[side].no_trace) is None  # fmt: skip
    code = int(ids[start + index])
    return start + index, deleting_side, code, task.books[deleting_side].delete_latest(code)


def _tails_to_ends(tails: dict[Any, tuple[int, bool, int | None]]) -> dict[Any, int]:
    return {key: end for key, (_, _, end) in tails.items() if end is not None}


def _tails_from_store(store: _Versions) -> dict[Any, tuple[int, bool, int | None]]:
    ends = store.ends
    return {key: (times[-1], entries[-1] is None, ends.get(key)) for key, (times, entries) in store.versions.items()}


def _loop_rows(
    batch: Any, spec: JoinSpec, task: _Task, steps: Any, schema: Any, json_keys: bool, json_values: bool
) -> Any:
    """The result rows of the loop (:func:`_stream_table`, :func:`_table_table`) over one task segment."""
    import pyarrow as pa
    import pyarrow.compute as pc

    value = batch.column("value")
    texts = _render(value, json_values).to_pylist()
    columns = (
        pc.equal(batch.column("side"), "right").to_pylist(),
        batch.column("key").to_pylist(),
        value.to_pylist(),
        texts,
        pc.cast(batch.column("ts"), pa.int64()).to_pylist(),
        steps.tolist(),
    )
    rows = _Rows()
    collecting = gc.isenabled()
    gc.disable()  # the loop makes no reference cycles; the collector's passes over its growing lists cost a quarter
    try:
        if spec.join == "stream-table":
            _stream_table(columns, spec, task, rows, json_keys)
        else:
            _table_table(columns, spec, task, rows)
    finally:
        if collecting:
            gc.enable()
    return _assemble(batch, rows, steps, schema)


def _history_to_store(task: _Task, json_values: bool) -> None:
    """Move the array form's history (:class:`_History`) into the loop's store (:class:`_Versions`)."""
    history, store = task.history, task.stores[1]
    store.observed = None if task.observed[1] == _NONE else task.observed[1]
    store.versions = {}
    store.ends = _tails_to_ends(task.tails[1])
    if history.ids is None or not len(history.ids):
        return
    keys = history.keys.to_pylist()
    texts = _render(history.values, json_values).to_pylist()
    for key_id, ts, value, text in zip(history.ids.tolist(), history.ts.tolist(), history.values.to_pylist(), texts):
        times, entries = store.versions.setdefault(keys[key_id], ([], []))
        times.append(ts)
        entries.append(None if value is None else (value, text))
    history.ids = history.ts = history.values = None


def _store_to_history(task: _Task, key_type: Any, value_type: Any) -> None:
    """Move the loop's store back into the array form's history, sorted by (key id, ts)."""
    import numpy as np
    import pyarrow as pa

    history, store = task.history, task.stores[1]
    task.observed[1] = _NONE if store.observed is None else store.observed
    task.tails[1] = _tails_from_store(store)
    store.ends = {}
    keys = [] if history.keys is None else history.keys.to_pylist()
    known = {key: number for number, key in enumerate(keys)}
    ids, times, values = [], [], []
    for key, (version_times, entries) in store.versions.items():
        if key not in known:
            known[key] = len(keys)
            keys.append(key)
        ids += [known[key]] * len(version_times)
        times += version_times
        values += [None if entry is None else entry[0] for entry in entries]
    store.versions = {}
    order = np.lexsort((np.asarray(times, dtype=np.int64), np.asarray(ids, dtype=np.int64)))
    history.keys = pa.array(keys, type=key_type) if keys else None
    history.ids = np.asarray(ids, dtype=np.int64)[order]
    history.ts = np.asarray(times, dtype=np.int64)[order]
    history.values = pa.array(values, type=value_type).take(pa.array(order))


def _stream_table(columns: tuple, spec: JoinSpec, task: _Task, rows: _Rows, json_keys: bool) -> None:
    """KStream-KTable against a versioned table (:class:`kjoin.joins.versioned.VersionedStreamTableJoin`), record by
    record: a table record updates state (:meth:`_Versions.put`); a stream record looks up the version valid at its
    ts and calls the joiner, written out inline for the common case (no grace period: no call per record), else
    through the grace buffer (:func:`_through_grace_buffer`) and :func:`_stream_joiner`; a null key is
    :func:`_null_key_record`'s."""
    is_right, keys, values, texts, times, steps = columns
    store: _Versions = task.stores[1]
    unmatched_out = spec.variant.outer(Side.LEFT)  # a stream record without a version comes out (a left join)
    null_key_joins = unmatched_out and spec.semantics.relaxed_null_keys
    null_values_dropped = spec.semantics.kip77
    grace = spec.grace_ms
    at, case, out_key, left, right = rows.at, rows.case, rows.key, rows.left, rows.right
    text, out_ts, origin, until = rows.text, rows.ts, rows.origin, rows.until
    put, store_versions, retention = store.put, store.versions, store.retention
    step = rows.step_recorder()
    join = _stream_joiner(rows, store, unmatched_out, step)
    for i in range(len(keys)):
        key, ts = keys[i], times[i]
        if is_right[i]:  # update state
            if key is None:
                step(i, 4, None, ts)
            else:
                v = values[i]
                put_result = put(key, None if v is None else (v, texts[i]), ts)
                step(i, 6 if put_result < 0 else 5, key, ts)
            continue
        v = values[i]
        if key is None:
            _null_key_record(i, v, texts[i], ts, steps[i], null_key_joins, grace, rows, step)
            continue
        if v is None and null_values_dropped:
            step(i, 7, key, ts)
            continue
        number = steps[i]
        if grace is not None:
            _through_grace_buffer(i, key, (v, texts[i]), ts, number, task, grace, join, step, json_keys)
            continue
        # look up the version valid at ts (join(i, key, (v, texts[i]), ts, number, True), written out)
        found = None
        versions = store_versions.get(key)
        if versions is not None:
            version_times = versions[0]
            if ts < store.observed - retention:  # expired: only the latest version can answer
                if version_times[-1] <= ts:
                    found = versions[1][-1]
            else:
                index = bisect_right(version_times, ts)
                if index:
                    found = versions[1][index - 1]
        # call the joiner
        if found is None:
            if not unmatched_out:
                step(i, 8, key, ts)
                continue
            at.append(i)
            case.append(1)
            right.append(None)
            text.append(f"{texts[i]}-null")
        else:
            at.append(i)
            case.append(0)
            right.append(found[0])
            text.append(f"{texts[i]}-{found[1]}")
        out_key.append(key)
        left.append(v)
        out_ts.append(ts)
        origin.append(number)
        until.append(None)


def _stream_joiner(
    rows: _Rows, store: _Versions, unmatched_out: bool, step: Callable[..., None]
) -> Callable[..., None]:
    """``join(i, key, entry, ts, origin step, own)``: look up the version valid at ``ts`` for a stream record
    (``entry``: its ``(value, text)``) and call the joiner, as a closure over the rows' lists; ``own``: the record
    is the one the step at ``i`` read (a record the grace buffer releases later is not: it has no step of its own to
    say it found no partner)."""
    at, case, out_key, left, right = rows.at, rows.case, rows.key, rows.left, rows.right
    text, out_ts, origin, until = rows.text, rows.ts, rows.origin, rows.until
    as_of = store.as_of

    def join(i: int, key: Any, entry: Any, ts: int, origin_step: int, own: bool) -> None:
        found = as_of(key, ts)
        if found is None:
            if not unmatched_out:
                if own:
                    step(i, 8, key, ts)
                return
            number, table_value, table_text = 1, None, "null"
        else:
            (table_value, table_text), _ = found
            number = 0
        at.append(i)
        case.append(number)
        out_key.append(key)
        left.append(entry[0])
        right.append(table_value)
        text.append(f"{entry[1]}-{table_text}")
        out_ts.append(ts)
        origin.append(origin_step)
        until.append(None)

    return join


def _null_key_record(
    i: int, value: Any, value_text: Any, ts: int, origin_step: int, joins: bool, grace: int | None, rows: _Rows, step
) -> None:  # type: ignore[no-untyped-def]
    """A stream record with a null key: dropped, unless ``joins`` (KIP-962: a left join's record with a value
    comes out at once, without a partner), and then dropped by the grace buffer if there is one."""
    if not joins or value is None:
        step(i, 4, None, ts)
    elif grace is None:
        rows.output(i, 2, None, value, None, f"{value_text}-null", ts, origin_step)
    else:
        step(i, 9, None, ts)


def _through_grace_buffer(
    i: int, key: Any, entry: Any, ts: int, number: int, task: _Task, grace: int, join, step, json_keys: bool
) -> None:  # type: ignore[no-untyped-def]
    """A stream record with a grace period (KIP-923, :class:`kjoin.stores.versioned.GraceBuffer`): joined at once
    when the buffer's stream time minus grace has passed it, else buffered (the buffer's stream time advances);
    then every buffered record that time has passed is joined, in Kafka's ``(ts, key bytes, arrival)`` order."""
    heap = task.heap
    buffer_time = task.buffer_time
    settled = False
    if buffer_time is not None and buffer_time - grace > ts:
        join(i, key, entry, ts, number, True)
        settled = True
    else:
        if buffer_time is None or ts > buffer_time:
            task.buffer_time = buffer_time = ts
        task.arrivals += 1
        key_bytes = serialize_key(json.loads(key) if json_keys else key)
        heapq.heappush(heap, (ts, key_bytes, task.arrivals, key, entry, number))
    assert buffer_time is not None
    bound = buffer_time - grace
    while heap and heap[0][0] <= bound:
        waited_ts, _, _, waited_key, waited, origin_step = heapq.heappop(heap)
        own = origin_step == number
        settled = settled or own
        join(i, waited_key, waited, waited_ts, origin_step, own)
    if not settled:
        step(i, 10, key, ts, ts + grace)


def _table_table(columns: tuple, spec: JoinSpec, task: _Task, rows: _Rows) -> None:
    """KTable-KTable with one or both tables versioned (:class:`kjoin.joins.versioned.VersionedTableTableJoin`),
    record by record: update this side's table, look up the other table's latest value, call the joiner.

    The joiner is called by the KIP-77 rule (:meth:`kjoin.joins.table_table.TableTableJoin._rule`, :func:`_rule`),
    with ``other`` the other table's latest value: no partner and this side not kept alone: no output; no partner,
    a delete and no old value: nothing to delete; a delete whose result the other side does not keep alone: a
    tombstone; otherwise the joiner. The three stages are written out inline (no call per record: this loop is the
    pass's cost); a put that is not its key's latest (:func:`_not_latest`) and the history mode
    (:func:`_history`) go through calls."""
    is_right, keys, values, texts, times, steps = columns
    stores = task.stores
    mode = spec.versioned_mode
    outer = (spec.variant.outer(Side.LEFT), spec.variant.outer(Side.RIGHT))  # is each side kept without a partner
    ts_is_max = spec.semantics.table_table_output_ts_is_max
    at, case, out_key, left, right = rows.at, rows.case, rows.key, rows.left, rows.right
    text, out_ts, origin, until = rows.text, rows.ts, rows.origin, rows.until
    step = rows.step_recorder()
    emit = rows.table_recorder(steps)
    for i in range(len(keys)):
        key, ts = keys[i], times[i]
        if key is None:
            step(i, 4, None, ts)
            continue
        side = 1 if is_right[i] else 0
        this, that = stores[side], stores[1 - side]
        v = values[i]
        new = None if v is None else (v, texts[i])
        # update state
        if this.plain:
            previous = this.rows.get(key)
            if new is None:
                if previous is not None:
                    del this.rows[key]
            else:
                this.rows[key] = (new, ts)
            has_old = previous is not None and this.sends_old
        else:
            versions = this.versions.get(key)
            has_old = versions is not None and versions[1][-1] is not None and this.sends_old
            put_result = this.put(key, new, ts)
            if put_result != 1:
                _not_latest(i, side, key, new, ts, put_result, mode, this, that, outer, ts_is_max, step, emit)
                continue
            if mode == "attempt2":
                _history(i, side, key, new, ts, this, that, step, emit)
                continue
        # look up the other table's latest value, ((value, text), ts) or None
        if that.plain:
            other = that.rows.get(key)
        else:
            versions = that.versions.get(key)
            other = None if versions is None or versions[1][-1] is None else (versions[1][-1], versions[0][-1])
        # call the joiner (the KIP-77 rule, :func:`_rule` written out)
        if other is None:
            if not outer[side]:
                step(i, 8, key, ts)
                continue
            if new is None and not has_old:
                step(i, 11, key, ts)
                continue
            number, out, other_entry = (3 if new is None else 1), ts, None
        else:
            out = max(ts, other[1]) if ts_is_max else ts
            other_entry = other[0]
            number = 3 if new is None and not outer[1 - side] else 0
        if side:
            left_entry, right_entry = other_entry, new
        else:
            left_entry, right_entry = new, other_entry
        at.append(i)
        case.append(number)
        out_key.append(key)
        if left_entry is None:
            left.append(None)
            left_text = "null"
        else:
            left.append(left_entry[0])
            left_text = left_entry[1]
        if right_entry is None:
            right.append(None)
            right_text = "null"
        else:
            right.append(right_entry[0])
            right_text = right_entry[1]
        text.append(None if number == 3 else f"{left_text}-{right_text}")
        out_ts.append(out)
        origin.append(steps[i])
        until.append(None)


def _not_latest(i, side, key, new, ts, put_result, mode, this, that, outer, ts_is_max, step, emit) -> None:  # type: ignore[no-untyped-def]
    """A put its versioned table refused (``put_result`` -1: expired) or stored out of order (0): attempt 2 joins
    the out-of-order version with the other table's versions overlapping it (:func:`_history`), attempt 1 with the
    other table's version as of its ts (:func:`_rule`); ``final`` mode drops it."""
    if put_result < 0:
        step(i, 6, key, ts)
    elif mode == "attempt2":
        _history(i, side, key, new, ts, this, that, step, emit)
    elif mode == "attempt1":
        _rule(i, side, key, new, False, that.as_of(key, ts), ts, outer, ts_is_max, step, emit)
    else:
        step(i, 12, key, ts)


def _rule(i, side, key, new, has_old, other, ts, outer, ts_is_max, step, emit) -> None:  # type: ignore[no-untyped-def]
    """The KIP-77 rule for one update (the loop of :func:`_table_table` inlines it): ``new`` is ``(value, text)`` or
    ``None``, ``other`` the other table's ``((value, text), ts)`` or ``None``."""
    if other is None:
        if not outer[side]:
            step(i, 8, key, ts)
        elif new is None and not has_old:
            step(i, 11, key, ts)
        else:
            emit(i, 3 if new is None else 1, key, side, new, None, ts)
        return
    out = max(ts, other[1]) if ts_is_max else ts
    emit(i, 3 if new is None and not outer[1 - side] else 0, key, side, new, other[0], out)


def _record_columns(batch: Any) -> tuple:
    """What the array forms read of a batch: the key and value columns, the timestamps (Arrow and numpy), and as
    numpy masks: is the record the right side's, has it a key, is its value null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    key, value = batch.column("key"), batch.column("value")
    ts_array = pc.cast(batch.column("ts"), pa.int64())
    ts = ts_array.to_numpy(zero_copy_only=False)
    is_right = pc.equal(batch.column("side"), "right").to_numpy(zero_copy_only=False)
    has_key = pc.is_valid(key).to_numpy(zero_copy_only=False)
    value_null = pc.is_null(value).to_numpy(zero_copy_only=False)
    return key, value, ts_array, ts, is_right, has_key, value_null


def _table_table_arrays(
    batch: Any, spec: JoinSpec, task: _Task, steps: Any, schema: Any, json_values: bool, ids: Any = None
) -> Any:
    """KTable-KTable in ``versioned_mode: final`` as array work, one row per record.

    In ``final`` mode a versioned table's history is never read: only its latest version per key (the other
    side's lookup, this side's old value) and its observed stream time (which puts are refused). So:

    1. update state: a put into a versioned side is refused when its ts is below the side's observed stream time
       (a running max over the side's puts, carried from batch to batch) minus history retention; an accepted put
       is the key's new latest version when its ts is at or above the key's latest version's ts, else it is
       out-of-order: stored, no output (:func:`_latest_versions`);
    2. look up: the latest versions then behave as an unversioned table's updates (an unversioned side: every
       update): a forward fill per key of each side's last update (:func:`kjoin.spark.passes.vectorised._last_before`)
       and the carried table of each side's latest values (:class:`kjoin.spark.passes.vectorised._Tables`);
    3. call the joiner: the rule is :func:`_table_table`'s, as case numbers over arrays (:func:`_table_table_cases`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = batch.num_rows
    key, value, ts_array, ts, is_right, has_key, value_null = _record_columns(batch)
    if ids is None:
        ids = task.tables.ids(key)
    order, first, group_start = key_groups(ids)
    # update state: per side, the puts that are the key's new latest version (the table's updates)
    refused = np.zeros(n, dtype=bool)
    out_of_order = np.zeros(n, dtype=bool)
    updates = []
    for side in (0, 1):
        puts = (is_right if side else ~is_right) & has_key
        expired, latest = _latest_versions(side, ts, puts, ids, order, first, task, value.type)
        refused |= expired
        out_of_order |= puts & ~expired & ~latest
        updates.append(latest)
    # look up: each side's latest value as each record sees it
    last = [_last_before(ids, order, group_start, updates[side]) for side in (0, 1)]
    states = [task.tables.state(side, value, ts_array, ids, last[side], has_key) for side in (0, 1)]
    is_left = pa.array(~is_right)
    other_v = pc.if_else(is_left, states[1][0], states[0][0])
    other_t = pc.if_else(is_left, states[1][1], states[0][1])
    mine_v = pc.if_else(is_left, states[0][0], states[1][0])
    has_other = pc.is_valid(other_v).to_numpy(zero_copy_only=False)
    mine_valid = pc.is_valid(mine_v).to_numpy(zero_copy_only=False)
    case = _table_table_cases(spec, task, is_right, has_key, value_null, refused, out_of_order, has_other, mine_valid)
    for side in (0, 1):
        task.tables.update(side, ids, value, ts_array, updates[side])
    # call the joiner
    is_output = case < _OUTPUT_CASES
    output = pa.array(is_output)
    left_value = pc.if_else(is_left, value, other_v)
    right_value = pc.if_else(is_left, other_v, value)
    joined = joiner_text(left_value, right_value, json_values)
    if spec.semantics.table_table_output_ts_is_max:
        out_ts = pc.if_else(pa.array(has_other), pc.max_element_wise(ts_array, other_t), ts_array)
    else:
        out_ts = ts_array
    text_rows = is_output & (case != 3)
    tombstone = pc.if_else(output, pa.array(case == 3), pa.scalar(None, pa.bool_()))
    ts_out = pc.if_else(output, out_ts, ts_array)
    return _one_row_per_record(
        batch, schema, case, steps, key, left_value, right_value, joined, text_rows, ts_out, tombstone
    )


def _latest_versions(side: int, ts: Any, puts: Any, ids: Any, order: Any, first: Any, task: _Task, value_type: Any):  # type: ignore[no-untyped-def]
    """Update state, as arrays: ``(expired, latest)`` of one side's ``puts``: the puts its table refuses (below
    observed stream time minus history retention; observed carried on in ``task.observed``) and those that are
    their key's new latest version (at or above the key's latest version's ts: a running max per key, in key order
    ``order`` with ``first`` marking each key's first row, and the carried table's). An unversioned side refuses
    none and takes every put."""
    import numpy as np

    n = len(ts)
    retention = task.retention[side]
    if retention is None:  # unversioned: every put updates
        return np.zeros(n, dtype=bool), puts
    observed, task.observed[side] = observed_before(ts, puts, task.observed[side])
    expired = puts & (observed > _NONE) & (ts < observed - retention)
    accepted = puts & ~expired
    # the key's latest version's ts before each record: a running max per key (offset by the key's group so that
    # one key's max never reaches the next key's rows), then the carried table's
    group = np.cumsum(first) - 1  # the key's group number, in key order
    base = int(ts.min())
    span = int(ts.max()) - base + 2
    shifted = np.where(accepted[order], ts[order] - base + 1, 0) + group * span
    inclusive = np.maximum.accumulate(shifted)
    before = np.full(n, _NONE, dtype=np.int64)
    inner = ~first
    exclusive = inclusive[np.flatnonzero(inner) - 1] - group[inner] * span
    before_sorted = np.full(n, _NONE, dtype=np.int64)
    before_sorted[inner] = np.where(exclusive > 0, exclusive - 1 + base, _NONE)
    before[order] = before_sorted
    before = np.maximum(before, task.tables.latest_ts(side, ids, value_type))
    return expired, accepted & (ts >= before)


def _table_table_cases(spec, task, is_right, has_key, value_null, refused, out_of_order, has_other, mine_valid):  # type: ignore[no-untyped-def]
    """Each record's case number (:data:`_CASES`) in the table-table array form: :func:`_table_table`'s KIP-77
    rule over arrays (``has_other``: the other table has a value for the key; ``mine_valid``: this table had one,
    the old value it sends if it sends old values)."""
    import numpy as np

    outer = (spec.variant.outer(Side.LEFT), spec.variant.outer(Side.RIGHT))
    mine_outer = np.where(is_right, outer[1], outer[0])
    other_outer = np.where(is_right, outer[0], outer[1])
    sends_old = np.where(is_right, task.stores[1].sends_old, task.stores[0].sends_old)
    has_old = sends_old & mine_valid
    return np.select(
        [
            ~has_key,
            refused,
            out_of_order,
            ~has_other & ~mine_outer,
            ~has_other & value_null & ~has_old,
            ~has_other & value_null,
            ~has_other,
            value_null & ~other_outer,
        ],
        [4, 6, 12, 8, 11, 3, 1, 3],
        default=0,
    ).astype(np.int8)


class _History:
    """A versioned table as arrays (the no-grace stream-table join's array form): its keys (each once, an id each),
    and its versions sorted by (key id, ts), one per key and ts: ids, timestamps, values (null: a tombstone)."""

    def __init__(self) -> None:
        self.keys: Any = None
        self.ids: Any = None
        self.ts: Any = None
        self.values: Any = None


def _id_time_keys(ids: list, times: list) -> list | None:
    """One int64 per (key id, ts) pair of each array pair, ordered as the pairs are (by id, then ts): ``id * width +
    ts - earliest``; ``None`` when that would not fit (timestamps spanning centuries times many keys), and the
    caller sorts the pairs themselves. Ids are 0 or more."""
    import numpy as np

    present = [t for t in times if len(t)]
    if not present:
        return [np.zeros(0, dtype=np.int64) for _ in ids]
    earliest = min(int(t.min()) for t in present)
    width = max(int(t.max()) for t in present) - earliest + 1
    most = max((int(i.max()) for i in ids if len(i)), default=0)
    if (most + 1) * width >= ID_TIME_KEY_LIMIT:
        return None
    return [i.astype(np.int64) * width + (t - earliest) for i, t in zip(ids, times)]


def _versions_at(h_ids: Any, h_ts: Any, ids: Any, ts: Any) -> Any:
    """For each (id, ts) query, the index of the last version of the history ``(h_ids, h_ts)`` (sorted by id and
    ts) with that id at or before that ts, or -1: a forward fill over the versions and the queries sorted together
    (versions before queries at equal id and ts)."""
    import numpy as np

    event_ids = np.concatenate([h_ids, ids])
    event_ts = np.concatenate([h_ts, ts])
    kind = np.concatenate([np.zeros(len(h_ids), dtype=np.int8), np.ones(len(ids), dtype=np.int8)])
    events = np.lexsort((kind, event_ts, event_ids))
    positions = np.arange(len(events))
    is_version = kind[events] == 0
    last = np.maximum.accumulate(np.where(is_version, positions, -1))
    sorted_ids = event_ids[events]
    starts = np.ones(len(events), dtype=bool)
    starts[1:] = sorted_ids[1:] != sorted_ids[:-1]
    group = np.maximum.accumulate(np.where(starts, positions, 0))
    query_rows = ~is_version
    found = last[query_rows] >= group[query_rows]
    result = np.full(len(ids), -1, dtype=np.int64)
    result[events[query_rows][found] - len(h_ids)] = events[last[query_rows][found]]
    return result


def _stream_table_arrays(batch: Any, spec: JoinSpec, task: _Task, steps: Any, schema: Any, json_values: bool) -> Any:
    """KStream-KTable against a versioned table without grace as array work, one row per record.

    A lookup finds, of the versions of its key put before it (and not refused), the one with the greatest ts at or
    before its own ts (at equal ts the later put), or when its ts is below observed stream time minus retention,
    the latest version if that one is old enough. The versions come from two places: the batch's own earlier puts
    of the key (:func:`_batch_versions`) and the carried history (:func:`_carried_versions`); the later of the two
    wins. Then the batch's accepted puts join the history (:func:`_add_to_history`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    store: _Versions = task.stores[1]
    history: _History = task.history
    retention = store.retention
    key, value, ts_array, ts, is_right, has_key, value_null = _record_columns(batch)
    history.keys, ids = key_ids(history.keys, key)  # the keys' ids, kept from batch to batch
    # update state (which puts the table refuses): ts below observed stream time (before the put) minus retention
    puts = is_right & has_key
    observed, task.observed[1] = observed_before(ts, puts, task.observed[1])
    seen = observed > _NONE
    refused = puts & seen & (ts < observed - retention)
    accepted = puts & ~refused
    kip77 = spec.semantics.kip77
    lookups = ~is_right & has_key & ~(value_null & kip77)
    expired = lookups & seen & (ts < observed - retention)
    # look up: grouped by key id (the history's searches then run in id order)
    order, _, group_start = key_groups(ids)
    best, best_ts = _batch_versions(ids, ts, order, group_start, accepted, lookups, expired)
    carried, carried_ts = _carried_versions(history, ids, ts, order, lookups, expired)
    from_batch = (best >= 0) & (best_ts >= carried_ts)
    chosen_ts = np.where(from_batch, best_ts, carried_ts)
    chosen = np.where(from_batch, best, np.where(carried >= 0, len(ts) + carried, -1))
    chosen[expired & (chosen_ts > ts)] = -1  # an expired lookup's latest version is newer than it: nothing
    carried_values = history.values if history.values is not None else pa.nulls(0, value.type)
    found_value = pc.take(pa.concat_arrays([value, carried_values]), pa.array(chosen, mask=chosen < 0))
    found = pc.is_valid(found_value).to_numpy(zero_copy_only=False)
    unmatched_out = spec.variant.outer(Side.LEFT)  # a stream record without a version comes out (a left join)
    null_key_joins = unmatched_out and spec.semantics.relaxed_null_keys
    case = np.select(
        [
            is_right & ~has_key,
            refused,
            is_right,
            ~has_key & ~value_null & null_key_joins,
            ~has_key,
            value_null & kip77,
            ~found & (not unmatched_out),
            found,
        ],
        [4, 6, 5, 2, 4, 7, 8, 0],
        default=1,
    ).astype(np.int8)
    # update state: the batch's accepted puts join the history
    _add_to_history(history, ids, ts, value, accepted, task.observed[1] - retention)
    # call the joiner
    is_output = case < _OUTPUT_CASES
    output = pa.array(is_output)
    joined = joiner_text(value, found_value, json_values)
    tombstone = pc.if_else(output, pa.scalar(False), pa.scalar(None, pa.bool_()))
    return _one_row_per_record(
        batch, schema, case, steps, key, value, found_value, joined, is_output, ts_array, tombstone
    )


def _batch_versions(ids, ts, order, group_start, accepted, lookups, expired):  # type: ignore[no-untyped-def]
    """Look up in the batch: for each lookup, the index of the best of its key's earlier accepted puts in the batch
    (-1: none) and its ts, walking back one put at a time for every lookup at once (as many rounds as the most
    puts of one key before a lookup in the batch); later puts come first, so an earlier put at the same ts never
    wins. An expired lookup takes the latest."""
    import numpy as np

    n = len(ts)
    previous = _last_before(ids, order, group_start, accepted)
    best = np.full(n, -1, dtype=np.int64)
    best_ts = np.full(n, _NONE, dtype=np.int64)
    walking = np.flatnonzero(lookups)
    at = previous[walking]
    while True:
        live = at >= 0
        walking, at = walking[live], at[live]
        if len(walking) == 0:
            break
        candidate_ts = ts[at]
        better = (candidate_ts > best_ts[walking]) & (expired[walking] | (candidate_ts <= ts[walking]))
        best[walking[better]] = at[better]
        best_ts[walking[better]] = candidate_ts[better]
        at = previous[at]
    return best, best_ts


def _carried_versions(history: _History, ids, ts, order, lookups, expired):  # type: ignore[no-untyped-def]
    """Look up in the carried history (sorted by key id and ts): for each lookup, the index of its key's last
    version at or before its ts (an expired lookup: its key's latest version), -1 for none, and its ts. Each
    lookup's (key id, ts) is searched in the history (:func:`_id_time_keys`), or where that numbering would
    overflow, found by a forward fill over the history and the lookups sorted together (:func:`_versions_at`)."""
    import numpy as np

    n = len(ts)
    carried = np.full(n, -1, dtype=np.int64)
    carried_ts = np.full(n, _NONE, dtype=np.int64)
    if history.ids is None or not len(history.ids):
        return carried, carried_ts
    h_ids, h_ts = history.ids, history.ts
    wanted = lookups & ~expired
    queries = order[wanted[order]]  # in key id order: each search starts near where the one before ended
    keys = _id_time_keys([h_ids, ids[queries]], [h_ts, ts[queries]])
    if keys is not None:  # the history is sorted by (id, ts): each query's place in it, no sort
        at = np.searchsorted(keys[0], keys[1], "right") - 1  # the last version at or before (id, ts)
        same_key = at >= 0
        same_key[same_key] = h_ids[at[same_key]] == ids[queries[same_key]]
        carried[queries[same_key]] = at[same_key]
    else:
        carried[queries] = _versions_at(h_ids, h_ts, ids[queries], ts[queries])
    # an expired lookup: the key's latest version
    latest = np.full(len(history.keys), -1, dtype=np.int64)
    ends = np.ones(len(h_ids), dtype=bool)
    ends[:-1] = h_ids[1:] != h_ids[:-1]
    latest[h_ids[ends]] = np.flatnonzero(ends)
    stale = np.flatnonzero(expired)
    carried[stale] = latest[ids[stale]]
    has_carried = carried >= 0
    carried_ts[has_carried] = h_ts[carried[has_carried]]
    return carried, carried_ts


def _add_to_history(history: _History, ids: Any, ts: Any, value: Any, accepted: Any, limit: int) -> None:
    """Update state, as arrays: the batch's ``accepted`` puts join the history, kept sorted by (key id, ts); of
    versions with the same key and ts the last put replaces the others, and a version whose successor is at or
    before ``limit`` (observed stream time minus retention) can never be returned again and leaves."""
    import numpy as np
    import pyarrow as pa

    chosen_puts = np.flatnonzero(accepted)
    if not len(chosen_puts):
        return
    new_ids = ids[chosen_puts]
    new_ts = ts[chosen_puts]
    new_values = value.take(pa.array(chosen_puts))
    if history.ids is None:
        all_ids, all_ts, all_values = new_ids, new_ts, new_values
    else:
        all_ids = np.concatenate([history.ids, new_ids])
        all_ts = np.concatenate([history.ts, new_ts])
        all_values = pa.concat_arrays([history.values, new_values])
    keys = _id_time_keys([all_ids], [all_ts])
    if keys is not None:  # a sorted run and a short tail: a stable sort (timsort) merges them in linear time
        keep_order = np.argsort(keys[0], kind="stable")
    else:
        keep_order = np.lexsort((np.arange(len(all_ids)), all_ts, all_ids))
    all_ids, all_ts = all_ids[keep_order], all_ts[keep_order]
    last_of_same = np.ones(len(all_ids), dtype=bool)
    last_of_same[:-1] = (all_ids[1:] != all_ids[:-1]) | (all_ts[1:] != all_ts[:-1])
    survives = np.zeros(len(all_ids), dtype=bool)
    kept = np.flatnonzero(last_of_same)
    kept_ids, kept_ts = all_ids[kept], all_ts[kept]
    followed = np.zeros(len(kept), dtype=bool)
    followed[:-1] = (kept_ids[1:] == kept_ids[:-1]) & (kept_ts[1:] <= limit)
    survives[kept[~followed]] = True
    selected = keep_order[survives]
    history.ids, history.ts = all_ids[survives], all_ts[survives]
    history.values = all_values.take(pa.array(selected))


def _one_row_per_record(batch, schema, case, steps, key, left, right, text, text_rows, ts, tombstone) -> Any:  # type: ignore[no-untyped-def]
    """The result rows of an array form (one per record, in batch order): ``case`` indexes :data:`_CASES`; ``left``,
    ``right`` are the output's values where the case is an output, ``text`` the joiner's text where ``text_rows`` (a
    numpy mask); ``ts`` and ``tombstone`` are each row's."""
    import pyarrow as pa
    import pyarrow.compute as pc

    is_output = case < _OUTPUT_CASES
    cases = pa.array(case)
    fields = {name: schema.field(name).type for name, _ in RESULT_FIELDS}
    step = pa.array(steps)

    def by_case(i: int) -> Any:
        return pc.take(
            pa.array([None if c[i] is None else getattr(c[i], "value", c[i]) for c in _CASES], pa.string()), cases
        )

    columns = {
        "row": by_case(0),
        "scenario": batch.column("scenario"),
        "partition": batch.column("partition"),
        "step": step,
        "side": batch.column("side"),
        "offset": batch.column("offset"),
        "key": key,
        "left": keep_where(left, is_output),
        "right": keep_where(right, is_output),
        "value": keep_where(text, text_rows),
        "ts": ts,
        "tombstone": tombstone,
        "kind": by_case(3),
        "origin_step": keep_where(step, is_output),
        "fate": by_case(1),
        "reason": by_case(2),
        "until_ms": pa.nulls(batch.num_rows, pa.int64()),
    }
    return pa.RecordBatch.from_arrays(
        [pc.cast(columns[name], fields[name]) for name, _ in RESULT_FIELDS], schema=schema
    )


def _history(i: int, side: int, key: Any, new: Any, ts: int, this: _Versions, that: _Versions, step, emit) -> None:  # type: ignore[no-untyped-def]
    """Attempt 2: one result per version of the other table overlapping the new version's validity."""
    # the next version's ts (a tombstone at the latest's own ts is no version: it is valid until the next one)
    valid_to = next((start for start, _, _ in this.visible(key) if start > ts), None)
    overlapping = [
        (start, entry)
        for start, to, entry in that.visible(key)
        if entry is not None and (valid_to is None or start < valid_to) and (to is None or to > ts)
    ]
    if not overlapping:
        step(i, 8, key, ts)
        return
    for start, entry in overlapping:
        emit(i, 3 if new is None else 0, key, side, new, entry, max(ts, start))


def _assemble(batch: Any, rows: _Rows, steps: Any, schema: Any) -> Any:
    """The Arrow batch of the rows: per-step columns taken from the input, per-case ones from :data:`_CASES`."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    at = pa.array(np.asarray(rows.at, dtype=np.int64))
    case = pa.array(np.asarray(rows.case, dtype=np.int8))
    is_output = pc.less(case, _OUTPUT_CASES)
    fields = {name: schema.field(name).type for name, _ in RESULT_FIELDS}
    columns = {
        "row": pc.take(pa.array([c[0] for c in _CASES]), case),
        "scenario": batch.column("scenario").take(at),
        "partition": batch.column("partition").take(at),
        "step": pa.array(steps).take(at),
        "side": batch.column("side").take(at),
        "offset": batch.column("offset").take(at),
        "key": pa.array(rows.key, type=fields["key"]),
        "left": pa.array(rows.left, type=fields["left"]),
        "right": pa.array(rows.right, type=fields["right"]),
        "value": pa.array(rows.text, type=pa.string()),
        "ts": pa.array(rows.ts, type=pa.int64()),
        "tombstone": pc.if_else(is_output, pc.equal(case, 3), pa.scalar(None, pa.bool_())),
        "kind": pc.take(pa.array([None if c[3] is None else c[3].value for c in _CASES], pa.string()), case),
        "origin_step": pa.array(rows.origin, type=pa.int64()),
        "fate": pc.take(pa.array([None if c[1] is None else c[1].value for c in _CASES], pa.string()), case),
        "reason": pc.take(pa.array([None if c[2] is None else c[2].value for c in _CASES], pa.string()), case),
        "until_ms": pa.array(rows.until, type=pa.int64()),
    }
    return pa.RecordBatch.from_arrays(
        [pc.cast(columns[name], fields[name]) for name, _ in RESULT_FIELDS], schema=schema
    )
