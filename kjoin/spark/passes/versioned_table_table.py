"""The versioned pass's KTable-KTable job (:mod:`kjoin.spark.passes.vectorised_versioned`): the loop
(:func:`_table_table`, every ``versioned_mode``) and the array form of ``final`` mode (:func:`_table_table_pieces`)."""

from __future__ import annotations

from typing import Any

from ...records import Side
from ..spec import JoinSpec
from .vectorised import (
    _NONE,
    _last_before,
    key_groups,
    observed_before,
    _Tables,
    joiner_text,
)
from .versioned_common import (
    _OUTPUT_CASES,
    _Rows,
    _Task,
    _Versions,
    _one_row_per_record,
    _place_rounds,
    _record_columns,
)


def _table_table_pieces(batch: Any, spec: JoinSpec, task: _Task, steps: Any, schema: Any, json_values: bool) -> Any:
    """The table-table array form over a batch, in pieces that each end with a tombstone deleting its key's latest
    value (:func:`_advance_books`): the array form sees it as a tombstone that is the key's latest, which gives its
    row, and after it the key's latest is what the loop's store leaves (a tombstone where the segments end, or
    nothing), so the next piece finds it there. The batch's columns and each side's refused puts are taken once for
    all pieces (a put is refused by the observed time of the batch's puts before it, pieces or not)."""
    import pyarrow as pa

    columns = _record_columns(batch)
    _, _, _, ts, is_right, has_key, _ = columns
    ids = task.tables.ids(columns[0])
    expired = [_expired_puts(side, task, ts, is_right, has_key) for side in (0, 1)]
    deletions = _advance_books(task, ids, columns, expired)
    pieces = []
    start, n = 0, batch.num_rows
    for stop, side, code, end in [*deletions, (n - 1, None, None, None)]:
        stop += 1
        if stop > start:
            part = slice(start, stop)
            piece = batch.slice(start, stop - start)
            piece_columns = tuple(column[part] for column in columns)
            piece_expired = [refused[part] for refused in expired]
            pieces.append(
                _table_table_arrays(
                    piece, spec, task, steps[part], schema, json_values, ids[part], piece_columns, piece_expired
                )
            )
        if side is not None:
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


def _expired_puts(side: int, task: _Task, ts: Any, is_right: Any, has_key: Any) -> Any:
    """A mask of one side's puts in a batch its versioned table refuses (below observed stream time minus history
    retention; the observed time carried on in ``task.observed``); an unversioned side refuses none."""
    import numpy as np

    retention = task.retention[side]
    if retention is None:
        return np.zeros(len(ts), dtype=bool)
    puts = (is_right if side else ~is_right) & has_key
    observed, task.observed[side] = observed_before(ts, puts, task.observed[side])
    return puts & (observed > _NONE) & (ts < observed - retention)


def _advance_books(task: _Task, ids: Any, columns: tuple, expired: list[Any]) -> list[tuple[int, int, int, int | None]]:
    """Keep the table-table array form's bookkeeping (``task.books``, per key id of ``task.tables``) through the
    batch's accepted puts (the puts not ``expired``; :func:`_place_rounds`), and return ``(index, side, key id,
    end)`` of every put that is a tombstone deleting its key's latest value, in batch order: that key is left with
    a tombstone where its segments end (``end``), or nothing, as the loop's store leaves it."""
    import numpy as np

    _, _, _, ts, is_right, has_key, null = columns
    size = 0 if task.tables.keys is None else len(task.tables.keys)
    deletions: list[tuple[int, int, int, int | None]] = []
    for side, store in enumerate(task.stores):
        if store.plain:
            continue
        accepted = np.flatnonzero((is_right if side else ~is_right) & has_key & ~expired[side])
        if not len(accepted):
            continue
        book = task.books[side] = task.books[side].grown(size)
        found: list[tuple[int, int, int | None]] = []
        _place_rounds(book, ids[accepted], accepted, ts[accepted], null[accepted], store.no_trace, found)
        deletions.extend((index, side, code, end) for index, code, end in found)
    deletions.sort()
    return deletions


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


def _table_table_arrays(
    batch: Any,
    spec: JoinSpec,
    task: _Task,
    steps: Any,
    schema: Any,
    json_values: bool,
    ids: Any = None,
    columns: tuple | None = None,
    expired: list[Any] | None = None,
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
    3. call the joiner: the rule is :func:`_table_table`'s, as case numbers over arrays (:func:`_table_table_cases`).

    ``ids``, ``columns`` (:func:`_record_columns`) and ``expired`` (:func:`_expired_puts`, per side) when the caller
    has them for this batch already."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = batch.num_rows
    key, value, ts_array, ts, is_right, has_key, value_null = _record_columns(batch) if columns is None else columns
    if ids is None:
        ids = task.tables.ids(key)
    if expired is None:
        expired = [_expired_puts(side, task, ts, is_right, has_key) for side in (0, 1)]
    order, first, group_start = key_groups(ids)
    # update state: per side, the puts that are the key's new latest version (the table's updates)
    refused = np.zeros(n, dtype=bool)
    out_of_order = np.zeros(n, dtype=bool)
    updates = []
    for side in (0, 1):
        puts = (is_right if side else ~is_right) & has_key
        latest = _latest_versions(side, ts, puts, expired[side], ids, order, first, task, value.type)
        refused |= expired[side]
        out_of_order |= puts & ~expired[side] & ~latest
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


def _latest_versions(
    side: int, ts: Any, puts: Any, expired: Any, ids: Any, order: Any, first: Any, task: _Task, value_type: Any
) -> Any:
    """Update state, as arrays: a mask of one side's ``puts`` that are their key's new latest version: not
    ``expired`` (:func:`_expired_puts`) and at or above the key's latest version's ts (a running max per key, in key
    order ``order`` with ``first`` marking each key's first row, and the carried table's). An unversioned side takes
    every put."""
    import numpy as np

    n = len(ts)
    if task.retention[side] is None:  # unversioned: every put updates
        return puts
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
    return accepted & (ts >= before)


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
