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
  version and each table's observed stream time (:func:`~.versioned_table_table._table_table_arrays`: running
  maxima decide which puts are refused and which are out-of-order, and the rest is the unversioned pass's forward
  fill, :mod:`kjoin.spark.passes.vectorised`); a tombstone that deletes its key's latest value (where the key's
  segments end decides what it finds next) ends a piece of the batch, and the next piece starts from what the
  loop's store would hold (:func:`~.versioned_table_table._table_table_pieces`); ``attempt1`` and ``attempt2``
  read the history and run the loop;
* a stream-table join without grace (:func:`~.versioned_stream_table._stream_table_arrays`) keeps the history as
  arrays sorted by
  (key id, ts): a lookup's version from it is a forward fill over the history and the lookups sorted together,
  and from the batch's own earlier puts a walk back over them, all lookups at once, one put per round (a batch
  where one key has more than :data:`WALK_LIMIT` puts runs the loop instead, its history moved in and out). Each
  key's bookkeeping (its last version, where its segments end: is a tombstone deleting its latest value?) is kept
  as arrays by the same key ids (:func:`~.versioned_stream_table._advance_tails`); a Python dict by key cost as
  much as the rest of the array form (0.2 of 0.4 CPU s at 10^6 records).

Where it lives: this module chooses, per task segment, the loop or an array form (:func:`segment_rows`);
:mod:`~kjoin.spark.passes.versioned_stream_table` and :mod:`~kjoin.spark.passes.versioned_table_table` are the two
jobs, each its loop and its array form; :mod:`~kjoin.spark.passes.versioned_common` what they share (the task's
stores and carried state, the result rows by case number, the array forms' placement of a put among its key's
versions).

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
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from ...scenario import Scenario
from ..spec import JoinSpec, specs_of
from .task import _arrow_schema
from .vectorised import (
    array_pass_refusal,
    _render,
    key_ids,
    task_segments,
)
from .versioned_common import _Rows, _Task, _assemble
from .versioned_table_table import _table_table, _table_table_pieces
from .versioned_stream_table import (
    _advance_tails,
    _history_to_store,
    _store_to_history,
    _stream_table,
    _stream_table_arrays,
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
        history = task.history
        history.keys, ids = key_ids(history.keys, batch.column("key"))  # the keys' ids, kept from batch to batch
        puts = pc.equal(batch.column("side"), "right").to_numpy(zero_copy_only=False) & (ids >= 0)
        put_ids = ids[puts]
        if (len(put_ids) == 0 or int(np.bincount(put_ids).max()) <= WALK_LIMIT) and _advance_tails(
            batch, task, ids
        ) is None:
            return _stream_table_arrays(batch, spec, task, steps, schema, json_values, ID_TIME_KEY_LIMIT, ids)
        # a key with many puts in this batch (the walk back would take as many rounds), or a tombstone that deletes
        # its key's latest version: the loop takes the batch
        moves = (_history_to_store, _store_to_history)
        return _loop_rows_moved(batch, spec, task, steps, schema, json_keys, json_values, *moves)
    return _loop_rows(batch, spec, task, steps, schema, json_keys, json_values)


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
