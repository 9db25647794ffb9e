"""Vectorised per-task passes: the stream-table and table-table joins as numpy/pyarrow array work
inside ``mapInArrow``, with no Python step per record.

Which joins: exactly those of :mod:`kjoin.spark.passes.native` (KStream-KTable inner/left over an
unversioned table, KTable-KTable inner/left/outer over two unversioned tables, every era, the
default joiner), on the values and keys :func:`unsupported` accepts; ``method="auto"`` prefers
this path and falls back to the native plan or the processors for anything else.

How it works. The records arrive as on the processor path (:mod:`kjoin.spark.passes.task`): hash-
partitioned by Kafka task, in processing position within each task (sorted by Spark by input
partition and offset, then merged by :mod:`kjoin.spark.passes.merge`; or, for :func:`kjoin.spark.run_scenarios`,
sorted by their position in the scenario). In these joins the state a record sees is, per side, the
last update of its key before it in its task (a tombstone meaning "absent"). Per Arrow batch
and task segment:

1. keys become the task's key ids: the batch's distinct keys (``dictionary_encode``) are looked up once
   each among the keys the task has seen (``pc.index_in``; a new key takes the next id), so no record's
   key is hashed twice; a stable sort by id (a radix sort while ids fit 16 bits) keeps processing order
   within each key;
2. a forward fill (``np.maximum.accumulate`` over the positions of one side's updates, reset
   at every key's first row) finds, for each record, the last update of each side earlier in
   the batch;
3. the keys that find none read the state carried over from earlier batches of the task
   (:class:`_Tables`): per side, an Arrow array of each key's latest value and one of its timestamp,
   indexed by key id, so the read is one ``take``; the batch's last update per key replaces the entry
   at its end. Bounded by the task's keys, as Kafka's store is;
4. the processors' rules, the same ones :mod:`kjoin.spark.passes.native` writes as ``CASE``
   expressions, become one case number per record (``np.select``), which indexes small
   tables of row kind, fate and reason; the joiner's text is ``pyarrow.compute`` string
   concatenation.

Every input record gives exactly one result row (an output or a step), as on the native path,
and rows come out in processing order within each task.

Measured (``python -m kjoin.bench``, 2-core machine shared with other jobs), outside Spark on one
task of the bench's workload: with the carried store as Python dicts (a lookup for every record whose
key the batch did not update, for both sides: about 80% of the table-table pass), the stream-table
pass ran 1.5M records/s of CPU on one core and the table-table pass 440K at Spark's default Arrow
batches of 10,000 records, 640K at 100,000; with the store as Arrow arrays, 2.1M and 800K at 10,000,
3.5M and 1.9M at 100,000 (what :func:`kjoin.spark.local_session` sets). On Spark, before both,
stream-table left ran 0.62x a plain equi-join at 10^6 and 0.34x at 10^7, table-table outer 0.61x and
0.40x (the bench's table has today's numbers). Then the store looked up every record that missed in the
batch by its key's bytes (``index_in`` of 90,000 keys per batch) and rebuilt itself from a hash of the
task's keys; with key ids (one lookup per distinct key of the batch, the tables indexed by id), the radix
sort and result columns that share their values' buffers (:func:`keep_where`), one stream-table task of the
bench's 10^7 records (2.5M) took 0.62 s of CPU outside Spark instead of 0.89 s (the versioned pass, which
shares them: 0.79 s instead of 1.15 s).

Where the time goes at 10^7 (stream-table, 4 Kafka tasks on 4 Spark tasks, Spark's REST API, load
5-11): the first stage (read, union, hash by task, 190-200 MB of shuffle) costs 6-8 s of JVM CPU; the
second (sort by input partition and offset, running-max window, sort by processing order, Arrow out,
this pass, Arrow back, sink) 17-21 s of JVM CPU plus 5-7 s of Python, and spills 1.2-1.6 GB: Spark's
window holds a whole window partition (one side of one Kafka partition, 2.25M rows) in a spillable
buffer, beside the two sorts. The shuffle, sort and window alone (no second sort, no Arrow) are about
6 s of CPU; the plain equi-join, whole, about 11 s. Tried, not kept: a first sort column that packs
(partition, running max, side) into one long, so that Spark's sort compares a 64-bit prefix instead of
whole rows (no gain within noise); hashing by partition alone, without the constant scenario (two Kafka
tasks land on one Spark task: more spill). Kept: the side travels as its rank and the null position is
added after the shuffle (6% less shuffle, less spill). Since then the running max and the merge run in
Python after one sort by (task, side, offset) (:mod:`kjoin.spark.passes.merge`), holding the table side in memory
up to a configured number of records and in a local Arrow file beyond, as Spark's sort spills: at 10^7,
one sort plus an Arrow identity pass took 10-11 s where the window and the two sorts took 15 s. The feed into
Python then cost more than the shuffle and sort (an input-only pass 8.5-11 s against 3.6-4 s without Arrow),
most of it Spark measuring each Arrow batch after every row it added: kjoin's sessions lift the byte limit
that makes it do so (:data:`kjoin.spark.io.session.QUIET_CONFIG`), and the same pass took 6.7-7.5 s. Arrow batch
sizes from 10^4 to 10^6 and ``spark.buffer.size`` of 1 MB changed nothing beyond noise. On many tiny
scenarios the per-batch cost dominates and the processors are faster (``auto`` picks them there,
:data:`kjoin.spark.passes.plans.AUTO_MIN_RECORDS_PER_TASK`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...fates import Fate, Reason
from ...records import OutputKind
from ...scenario import Scenario
from ..spec import JoinSpec, Variant, specs_of
from .native import NATIVE_JOINS
from .native import unsupported as native_unsupported
from .task import RESULT_FIELDS, _arrow_schema

if TYPE_CHECKING:
    from .plans import Inputs

__all__ = ["unsupported", "vectorised_function", "VALUE_TYPES"]

VALUE_TYPES = ("string", "bigint", "int")
"""Value types whose text the vectorised joiner computes exactly as ``render_value`` does."""


def unsupported(specs: Mapping[int, JoinSpec], inputs: "Inputs") -> str | None:
    """Why the vectorised path cannot run these scenarios exactly, or ``None`` when it can:
    everything :func:`kjoin.spark.passes.native.unsupported` refuses, and values other than strings
    and integers (their text in Arrow may differ from ``render_value``'s)."""
    why = native_unsupported(specs, inputs)
    if why is not None:
        return why
    if inputs.value_type not in VALUE_TYPES:
        return f"{inputs.value_type} values (vectorised: {', '.join(VALUE_TYPES)} only)"
    if inputs.key_type not in VALUE_TYPES:
        return f"{inputs.key_type} keys (vectorised: {', '.join(VALUE_TYPES)} only)"
    return None


def array_pass_refusal(inputs: "Inputs") -> str | None:
    """What no array pass (this module's, :mod:`kjoin.spark.passes.vectorised_stream`'s,
    :mod:`kjoin.spark.passes.vectorised_versioned`'s) runs exactly, or ``None``: a custom joiner, values or keys whose
    text in Arrow may differ from ``render_value``'s, JSON values from a reader."""
    joiner, key_type, value_type = inputs.joiner, inputs.key_type, inputs.value_type
    json_keys, json_values = inputs.json_keys, inputs.json_values
    if joiner is not None:
        return "a custom joiner (the vectorised passes compute only the default joiner, render(left)-render(right))"
    if value_type not in VALUE_TYPES:
        return f"{value_type} values (vectorised: {', '.join(VALUE_TYPES)} only)"
    if key_type not in VALUE_TYPES:
        return f"{key_type} keys (vectorised: {', '.join(VALUE_TYPES)} only)"
    if json_values and not json_keys:
        return "JSON values from a reader (the processors re-encode JSON canonically; the passes keep the text)"
    return None


# The rows a record can give: (row, fate, reason); index = case number.
_STEP, _OUTPUT = "step", "output"
_CASES: list[tuple[str, Fate | None, Reason | None]] = [
    (_OUTPUT, None, None),  # 0: an output (fate joined: no step row)
    (_STEP, Fate.DROPPED, Reason.NULL_KEY),  # 1
    (_STEP, Fate.STORED, Reason.TABLE_UPDATE),  # 2
    (_STEP, Fate.DROPPED, Reason.NULL_VALUE),  # 3
    (_STEP, Fate.NO_MATCH, Reason.NO_PARTNER),  # 4
    (_STEP, Fate.STORED, Reason.NOTHING_TO_DELETE),  # 5
]
_KINDS = [OutputKind.NULL_KEY.value, OutputKind.JOINED.value, OutputKind.UNMATCHED.value, OutputKind.TOMBSTONE.value]


def vectorised_function(
    configs: Mapping[int, JoinSpec | Scenario], json_values: bool = False
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: input batches as :func:`kjoin.spark.passes.task.task_function`
    takes them (sorted by processing position within each task), output rows of
    :data:`kjoin.spark.passes.task.RESULT_FIELDS`."""
    specs = specs_of(configs)
    joins = {i: spec.join for i, spec in specs.items()}
    if any(join not in NATIVE_JOINS for join in joins.values()):
        raise ValueError(f"vectorised: {', '.join(NATIVE_JOINS)} joins only")

    def run(batches: Iterator[Any]) -> Iterator[Any]:

        group: tuple[int, int] | None = None
        states = _Tables()
        rank = 0
        schema = None
        for batch in batches:
            if schema is None:
                schema = _arrow_schema(batch.schema)
            for task, segment in task_segments(batch):
                if task != group:
                    group, states, rank = task, _Tables(), 0
                yield _segment(segment, specs[task[0]], states, rank, schema, json_values)
                rank += segment.num_rows

    return run


def task_segments(batch: Any) -> Iterator[tuple[tuple[int, int], Any]]:
    """The runs of one Kafka task's rows in an Arrow batch sorted by task: ``((scenario,
    partition), slice)`` each (an empty batch has none; without a ``scenario`` column, every row is
    scenario 0)."""
    n = batch.num_rows
    if n == 0:
        return
    partition = batch.column("partition").to_numpy(zero_copy_only=False)
    if "scenario" in batch.schema.names:
        scenario = batch.column("scenario").to_numpy(zero_copy_only=False)
    else:
        scenario = np.zeros(n, dtype=np.int64)
    edges = np.flatnonzero((scenario[1:] != scenario[:-1]) | (partition[1:] != partition[:-1])) + 1
    bounds = [0, *edges.tolist(), n]
    for start, end in zip(bounds[:-1], bounds[1:]):
        yield (int(scenario[start]), int(partition[start])), batch.slice(start, end - start)


_NONE = -(2**62)
"""A time not known yet (Kafka's ``-1`` for a store's observed time, ``Long.MIN_VALUE`` for stream time): lower
than any timestamp."""


def stable_order(*keys: Any) -> Any:
    """``np.lexsort(keys)`` (the last key sorts first; ties keep their index order), faster: where the keys' ranges
    multiplied with the record count fit an int64, each record's keys and index become one distinct int64 and an
    unstable sort of those decides (about 40% faster than lexsort on 100,000 records). Integer keys only."""
    count = len(keys[0]) if keys else 0
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    lows, spans = [], []
    total = count
    for key in keys:
        low = int(key.min())
        span = int(key.max()) - low + 1
        lows.append(low)
        spans.append(span)
        total *= span
        if total >= 2**63:
            return np.lexsort(keys)
    packed = np.zeros(count, dtype=np.int64)
    for key, low, span in zip(reversed(keys), reversed(lows), reversed(spans)):
        packed *= span
        packed += key.astype(np.int64) - low
    packed *= count
    packed += np.arange(count)
    packed.sort()
    return packed % count


def key_ids(known_keys: Any, key: Any) -> tuple[Any, Any]:
    """A task's keys as ids, kept from batch to batch: the keys after this batch (``known_keys``, an Arrow array
    of each key once or ``None`` before the first, with the batch's new keys appended, which take the next ids) and
    each record's key id (-1: a null key). One hash lookup per distinct key of the batch, not per record."""
    encoded = pc.dictionary_encode(key)
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
    dictionary = encoded.dictionary
    if known_keys is None:
        known = np.full(len(dictionary), -1, dtype=np.int64)
    else:
        known = pc.fill_null(pc.index_in(dictionary, value_set=known_keys), -1).to_numpy(zero_copy_only=False)
        known = known.astype(np.int64)
    fresh = known < 0
    if fresh.any():
        known[fresh] = (0 if known_keys is None else len(known_keys)) + np.arange(int(fresh.sum()))
        added = dictionary.filter(pa.array(fresh))
        known_keys = added if known_keys is None else pa.concat_arrays([known_keys, added])
    if not len(known):
        return known_keys, np.full(len(codes), -1, dtype=np.int64)
    return known_keys, np.where(codes >= 0, known[np.maximum(codes, 0)], -1)


def key_groups(codes: Any) -> tuple[Any, Any, Any]:
    """A batch's records grouped by key code (-1 or more), processing order kept within each key: ``(order, first,
    group_start)``, the stable sort by code, whether each place in it starts a key's group, and the place where
    each place's group starts."""
    n = len(codes)
    most = int(codes.max()) if n else 0  # codes are -1 (a null key) or more
    if most < 2**16 - 1:  # numpy's stable sort of 16-bit integers is a radix sort: 1 ms for 100,000 records
        shifted = (codes + 1).astype(np.uint16)
        order = np.argsort(shifted, kind="stable")
        sorted_codes = shifted[order]
    else:
        order = stable_order(codes)
        sorted_codes = codes[order]
    first = np.ones(n, dtype=bool)
    first[1:] = sorted_codes[1:] != sorted_codes[:-1]
    return order, first, np.maximum.accumulate(np.where(first, np.arange(n), 0))


def observed_before(ts: Any, puts: Any, carried: int) -> tuple[Any, int]:
    """A store's observed time before each record of a batch (the largest ts among the earlier ``puts``, after
    ``carried``, the time observed before the batch), and the time it has observed after the batch."""
    running = np.maximum(np.maximum.accumulate(np.where(puts, ts, _NONE)), carried)
    before = np.empty(len(ts), dtype=np.int64)
    before[0] = carried
    before[1:] = running[:-1]
    return before, int(running[-1])


def _last_before(codes: Any, order: Any, group_start: Any, updates: Any) -> Any:
    """For each record (in batch order), the batch index of the last record before it with the
    same key code among ``updates`` (a boolean mask in batch order), or -1."""
    n = len(codes)
    positions = np.arange(n)
    marked = np.where(updates[order], positions, -1)
    inclusive = np.maximum.accumulate(marked)
    exclusive = np.empty(n, dtype=np.int64)
    exclusive[0] = -1
    exclusive[1:] = inclusive[:-1]
    found = exclusive >= group_start
    last = np.full(n, -1, dtype=np.int64)
    last[order[found]] = order[exclusive[found]]
    return last


class _Tables:
    """A Kafka task's two tables, as carried from batch to batch: the task's keys (each once, in order of first
    appearance; a key's id is its place here) and, per side, Arrow arrays aligned with them: each key's latest
    value (null: deleted or never put) and its timestamp. Bounded by the task's keys, as Kafka's stores are."""

    def __init__(self) -> None:
        self.keys: Any = None
        self.values: list[Any] = [None, None]
        self.ts: list[Any] = [None, None]

    def ids(self, key: Any) -> Any:
        """Each record's key id (-1: a null key); the keys seen for the first time take the next ids
        (:func:`key_ids`)."""
        self.keys, ids = key_ids(self.keys, key)
        return ids

    def state(self, side: int, values: Any, ts: Any, ids: Any, last: Any, wanted: Any) -> tuple[Any, Any]:
        """One side's table before each record, as (value array, ts array), null where the table holds no value for
        the key: from the batch (``last``: the index of the key's last update earlier in the batch) or, for
        ``wanted`` records that found none, from the carried table. ``ts`` None: no ts array (None)."""
        self._cover(side, values.type)
        n = len(last)
        index = last.copy()
        misses = np.flatnonzero(wanted & (last < 0))
        index[misses] = n + ids[misses]
        take = pa.array(index, mask=index < 0)
        found = pc.take(pa.concat_arrays([values, self.values[side]]), take)
        return found, None if ts is None else pc.take(pa.concat_arrays([ts, self.ts[side]]), take)

    def update(self, side: int, ids: Any, values: Any, ts: Any, updates: Any) -> None:
        """The batch's updates (a mask) into one side's table, in processing order: the last one per key wins."""
        self._cover(side, values.type)
        positions = np.flatnonzero(updates)
        if len(positions) == 0:
            return
        size = len(self.keys)
        last = np.full(size, -1, dtype=np.int64)
        np.maximum.at(last, ids[positions], positions)  # each key's last update (no sort: np.unique's cost more)
        index = np.where(last >= 0, size + last, np.arange(size, dtype=np.int64))
        take = pa.array(index)
        self.values[side] = pc.take(pa.concat_arrays([self.values[side], values]), take)
        self.ts[side] = pc.take(pa.concat_arrays([self.ts[side], pc.cast(ts, pa.int64())]), take)

    def latest_ts(self, side: int, ids: Any, value_type: Any) -> Any:
        """The timestamp of each record's key's value in one side's carried table (``_NONE``: none)."""
        self._cover(side, value_type)
        known = pc.fill_null(self.ts[side], _NONE).to_numpy(zero_copy_only=False)
        if not len(known):
            return np.full(len(ids), _NONE, dtype=np.int64)
        return np.where(ids >= 0, known[np.maximum(ids, 0)], _NONE)

    def _cover(self, side: int, value_type: Any) -> None:
        """One side's arrays, grown with nulls to cover every key the task has seen."""
        if self.values[side] is None:
            self.values[side], self.ts[side] = pa.nulls(0, value_type), pa.nulls(0, pa.int64())
        missing = (0 if self.keys is None else len(self.keys)) - len(self.values[side])
        if missing:
            self.values[side] = pa.concat_arrays([self.values[side], pa.nulls(missing, value_type)])
            self.ts[side] = pa.concat_arrays([self.ts[side], pa.nulls(missing, pa.int64())])


def _text(values: Any, json_values: bool) -> Any:
    """``render_value`` of each non-null value, as Arrow strings (nulls stay null)."""
    text = values if pa.types.is_string(values.type) else pc.cast(values, pa.string())
    if json_values:  # canonical JSON text: a JSON string renders bare, anything else as its text
        quoted = pc.fill_null(pc.starts_with(text, '"'), False)
        if pc.any(quoted).as_py():
            decoded = [json.loads(t) if q else t for t, q in zip(text.to_pylist(), quoted.to_pylist())]
            text = pa.array(decoded, type=pa.string())
    return text


def _render(values: Any, json_values: bool) -> Any:
    """``render_value`` of each value (``null`` for a null), as Arrow strings."""
    return pc.fill_null(_text(values, json_values), "null")


def joiner_text(left: Any, right: Any, json_values: bool) -> Any:
    """The default joiner's text of each pair, ``render(left)-render(right)`` (a null renders ``null``), in one
    pass over both arrays."""
    return pc.binary_join_element_wise(
        _text(left, json_values), _text(right, json_values), "-", null_handling="replace", null_replacement="null"
    )  # "-" is the separator


def keep_where(array: Any, keep: Any) -> Any:
    """``array`` with nulls where ``keep`` (a numpy bool array) is false: its own buffers under a new validity bitmap,
    no copy of the values (a string column's ``if_else`` against a null copies every string)."""
    if array.offset != 0 or pa.types.is_boolean(array.type):
        return pc.if_else(pa.array(keep), array, pa.scalar(None, array.type))
    valid = keep if array.null_count == 0 else keep & pc.is_valid(array).to_numpy(zero_copy_only=False)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    buffers = array.buffers()
    return pa.Array.from_buffers(
        array.type, len(array), [bitmap, *buffers[1:]], null_count=len(valid) - int(np.count_nonzero(valid))
    )


@dataclass
class _Columns:
    """One task segment's columns as the two joins read them (numpy masks, Arrow values, key ids)."""

    n: int
    key: Any
    value: Any
    ts: Any
    is_right: Any
    is_left: Any
    key_null: Any
    value_null: Any
    has_key: Any
    ids: Any
    order: Any
    group_start: Any

    @classmethod
    def of(cls, batch: Any, states: _Tables) -> "_Columns":
        key = batch.column("key")
        value = batch.column("value")
        is_right = pc.equal(batch.column("side"), "right").to_numpy(zero_copy_only=False)
        key_null = pc.is_null(key).to_numpy(zero_copy_only=False)
        ids = states.ids(key)
        order, _, group_start = key_groups(ids)
        return cls(
            n=batch.num_rows,
            key=key,
            value=value,
            ts=batch.column("ts"),
            is_right=is_right,
            is_left=~is_right,
            key_null=key_null,
            value_null=pc.is_null(value).to_numpy(zero_copy_only=False),
            has_key=~key_null,
            ids=ids,
            order=order,
            group_start=group_start,
        )


def _segment(batch: Any, spec: JoinSpec, states: _Tables, rank: int, schema: Any, json_values: bool) -> Any:
    """The result rows of one task's consecutive records (``states``: the task's left and right
    tables carried from its earlier batches, updated here)."""
    columns = _Columns.of(batch, states)
    join = _stream_table if spec.join == "stream-table" else _table_table
    case, kind, left_value, right_value, out_ts, tombstone, joined = join(columns, spec, states, json_values)
    return _assemble(batch, rank, schema, case, kind, left_value, right_value, out_ts, tombstone, joined)


def _stream_table(c: _Columns, spec: JoinSpec, states: _Tables, json_values: bool) -> tuple:
    """KStream-KTable: each stream record looks up the table as its earlier updates left it; each table record
    updates it. Returns the case, kind, values, timestamps, tombstones and joiner texts of the rows."""
    value, ts, n = c.value, c.ts, c.n
    is_right, is_left, key_null, value_null, has_key = c.is_right, c.is_left, c.key_null, c.value_null, c.has_key
    ids, order, group_start = c.ids, c.order, c.group_start
    semantics, variant = spec.semantics, spec.variant
    kip77 = bool(semantics.kip77)
    last = _last_before(ids, order, group_start, is_right & has_key)
    table, _ = states.state(1, value, None, ids, last, is_left & has_key)
    found = pc.is_valid(table).to_numpy(zero_copy_only=False)
    null_key_joins = variant is Variant.LEFT and bool(semantics.relaxed_null_keys)  # KIP-962
    case = np.select(
        [
            is_right & key_null,
            is_right,
            key_null & ~value_null & null_key_joins,
            key_null,
            value_null & kip77,
            ~found & (variant is Variant.INNER),
        ],
        [1, 2, 0, 1, 3, 4],
        default=0,
    )
    kind = np.where(key_null, 0, np.where(found, 1, 2))
    left_value = value
    right_value = table
    out_ts = ts
    tombstone = np.zeros(n, dtype=bool)
    joined = joiner_text(left_value, right_value, json_values)
    states.update(1, ids, value, ts, is_right & has_key)
    return case, kind, left_value, right_value, out_ts, tombstone, joined


def _table_table(c: _Columns, spec: JoinSpec, states: _Tables, json_values: bool) -> tuple:
    """KTable-KTable: each record updates its own table and looks up the other, by the variant's and the era's
    rules (KIP-77: which updates emit, which emit tombstones)."""
    value, ts = c.value, c.ts
    is_right, is_left, key_null, value_null, has_key = c.is_right, c.is_left, c.key_null, c.value_null, c.has_key
    ids, order, group_start = c.ids, c.order, c.group_start
    semantics, variant = spec.semantics, spec.variant
    kip77 = bool(semantics.kip77)
    last_left = _last_before(ids, order, group_start, is_left & has_key)
    last_right = _last_before(ids, order, group_start, is_right & has_key)
    left_v, left_t = states.state(0, value, ts, ids, last_left, has_key)
    right_v, right_t = states.state(1, value, ts, ids, last_right, has_key)
    # mine / other: the record's own side's table and the other side's.
    other_v = pc.if_else(pa.array(is_left), right_v, left_v)
    other_t = pc.if_else(pa.array(is_left), right_t, left_t)
    mine_v = pc.if_else(pa.array(is_left), left_v, right_v)
    has_other = pc.is_valid(other_v).to_numpy(zero_copy_only=False)
    inner, left = variant is Variant.INNER, variant is Variant.LEFT
    # the sides a record without a partner comes out of (and whose old value a table sends)
    outer_side = np.where(is_left, variant.outer("left"), variant.outer("right"))
    old_null = ~(outer_side & pc.is_valid(mine_v).to_numpy(zero_copy_only=False))
    left_right_update = left & is_right
    new_rule = np.select(
        [
            left_right_update & ~has_other,
            left_right_update,
            ~has_other & ~outer_side,
            ~has_other & value_null & old_null,
        ],
        [4, 0, 4, 5],
        default=0,
    )
    case = np.where(key_null, 1, new_rule if kip77 else 0)
    if kip77:
        tombstone = ~left_right_update & value_null & (~has_other | ~outer_side | left)
    else:
        if inner:
            ok = ~value_null & has_other
        elif left:
            ok = np.where(is_left, ~value_null, has_other)
        else:
            ok = ~value_null | has_other
        tombstone = ~ok
    kind = np.where(tombstone, 3, np.where(has_other, 1, 2))
    left_value = pc.if_else(pa.array(is_left), value, other_v)
    right_value = pc.if_else(pa.array(is_left), other_v, value)
    joined = keep_where(joiner_text(left_value, right_value, json_values), ~tombstone)
    if semantics.table_table_output_ts_is_max:
        out_ts = pc.if_else(pa.array(has_other), pc.max_element_wise(ts, other_t), ts)
    else:
        out_ts = ts
    states.update(0, ids, value, ts, is_left & has_key)
    states.update(1, ids, value, ts, is_right & has_key)
    return case, kind, left_value, right_value, out_ts, tombstone, joined


def _assemble(
    batch: Any,
    rank: int,
    schema: Any,
    case: Any,
    kind: Any,
    left_value: Any,
    right_value: Any,
    out_ts: Any,
    tombstone: Any,
    joined: Any,
) -> Any:
    """The Arrow batch of the rows: one per record, its case indexing :data:`_CASES`."""
    n = batch.num_rows
    key, ts = batch.column("key"), batch.column("ts")
    is_output = case == 0
    output = pa.array(is_output)
    position = batch.column("position")
    if position.null_count == n:
        step = pa.array(np.arange(rank, rank + n, dtype=np.int64))
    else:
        step = pc.cast(position, pa.int64())
    rows = pc.take(pa.array([c[0] for c in _CASES]), pa.array(case))
    fates = pc.take(pa.array([None if c[1] is None else c[1].value for c in _CASES], pa.string()), pa.array(case))
    reasons = pc.take(pa.array([None if c[2] is None else c[2].value for c in _CASES], pa.string()), pa.array(case))
    kinds = pc.take(pa.array(_KINDS), pa.array(kind))
    columns = {
        "row": rows,
        "scenario": batch.column("scenario"),
        "partition": batch.column("partition"),
        "step": step,
        "side": batch.column("side"),
        "offset": batch.column("offset"),
        "key": key,
        "left": keep_where(left_value, is_output),
        "right": keep_where(right_value, is_output),
        "value": keep_where(joined, is_output),
        "ts": pc.if_else(output, out_ts, ts),
        "tombstone": pc.if_else(output, pa.array(tombstone), pa.scalar(None, pa.bool_())),
        "kind": keep_where(kinds, is_output),
        "origin_step": keep_where(step, is_output),
        "fate": fates,
        "reason": reasons,
        "until_ms": pa.nulls(n, pa.int64()),
    }
    return pa.RecordBatch.from_arrays(
        [pc.cast(columns[name], schema.field(name).type) for name, _ in RESULT_FIELDS], schema=schema
    )
