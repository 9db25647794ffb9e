"""The versioned pass's KStream-KTable job (:mod:`kjoin.spark.passes.vectorised_versioned`): the loop
(:func:`_stream_table`, with or without grace) and the array form without grace (:func:`_stream_table_arrays`), with
the hand-over of the versioned table between them."""

from __future__ import annotations

import heapq
import json
from bisect import bisect_right
from typing import Any, Callable

from ...partitioner import serialize_key
from ...records import Side
from ..spec import JoinSpec
from .vectorised import (
    _NONE,
    _last_before,
    key_groups,
    observed_before,
    _render,
    joiner_text,
)
from .versioned_common import (
    _Bookkeeping,
    _History,
    _NO_TAIL,
    _OUTPUT_CASES,
    _Rows,
    _Task,
    _Versions,
    _accepted_puts,
    _one_row_per_record,
    _place_rounds,
    _put_columns,
    _record_columns,
)


def _advance_tails(batch: Any, task: _Task, ids: Any) -> int | None:
    """Keep the stream-table array form's bookkeeping of its versioned table (``task.history.book``, per key id:
    last ts, is it a tombstone, end) through the batch's accepted puts (:func:`_place_rounds`; ``ids``: each
    record's key id in ``task.history.keys``, :func:`~.vectorised.key_ids`), and return ``None``; or, changing
    nothing, the index of the first put that is a tombstone deleting its key's latest value
    (:attr:`~kjoin.stores.versioned.Placement.DELETES_LATEST`, ``versioned_same_ts_tombstone_leaves_no_trace``): what
    the key finds next then depends on its history, which this array form does not walk (the loop takes such a
    batch). Without such a tombstone a versioned table behaves as if every put were a version. Only the right table
    of a stream-table join can be versioned."""
    import numpy as np

    ts, is_right, has_key, null = _put_columns(batch)
    store: _Versions = task.stores[1]
    accepted = _accepted_puts(1, store, task, ts, is_right, has_key)
    if not len(accepted):
        return None
    history = task.history
    history.book = history.book.grown(len(history.keys))
    present, codes = np.unique(ids[accepted], return_inverse=True)  # the batch's put keys, numbered 0, 1, ...
    book = history.book.rows(present)
    found = _place_rounds(book, codes, accepted, ts[accepted], null[accepted], store.no_trace)
    if found is not None:
        return found
    history.book.set_rows(present, book)
    return None


def _book_to_ends(history: _History) -> dict[Any, int]:
    """Where each key's segments end, by key, from the array form's bookkeeping (the loop's ``_Versions.ends``)."""
    import numpy as np

    book = history.book
    if history.keys is None or not len(book.end):
        return {}
    ended = np.flatnonzero(book.has_end)
    keys = history.keys.take(ended).to_pylist()
    return dict(zip(keys, book.end[ended].tolist()))


def _book_from_store(store: _Versions, keys: list) -> _Bookkeeping:
    """The array form's bookkeeping, per key id (``keys``: each id's key), of what the loop's store holds: each
    key's last version and, for a key with versions, where its segments end."""
    versions, ends = store.versions, store.ends
    tails = []
    for key in keys:
        held = versions.get(key)
        tails.append(_NO_TAIL if held is None else (held[0][-1], held[1][-1] is None, ends.get(key)))
    return _Bookkeeping.of(tails)


def _history_to_store(task: _Task, json_values: bool) -> None:
    """Move the array form's history (:class:`_History`) into the loop's store (:class:`_Versions`)."""
    history, store = task.history, task.stores[1]
    store.observed = None if task.observed[1] == _NONE else task.observed[1]
    store.versions = {}
    store.ends = _book_to_ends(history)
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
    history.book = _book_from_store(store, keys)
    store.versions = {}
    store.ends = {}
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


def _id_time_keys(ids: list, times: list, limit: int) -> list | None:
    """One int64 per (key id, ts) pair of each array pair, ordered as the pairs are (by id, then ts): ``id * width +
    ts - earliest``; ``None`` when that would reach ``limit`` (timestamps spanning centuries times many keys;
    :data:`~kjoin.spark.passes.vectorised_versioned.ID_TIME_KEY_LIMIT`), and the caller sorts the pairs themselves.
    Ids are 0 or more."""
    import numpy as np

    present = [t for t in times if len(t)]
    if not present:
        return [np.zeros(0, dtype=np.int64) for _ in ids]
    earliest = min(int(t.min()) for t in present)
    width = max(int(t.max()) for t in present) - earliest + 1
    most = max((int(i.max()) for i in ids if len(i)), default=0)
    if (most + 1) * width >= limit:
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


def _stream_table_arrays(
    batch: Any, spec: JoinSpec, task: _Task, steps: Any, schema: Any, json_values: bool, key_limit: int, ids: Any
) -> Any:
    """KStream-KTable against a versioned table without grace as array work, one row per record.

    A lookup finds, of the versions of its key put before it (and not refused), the one with the greatest ts at or
    before its own ts (at equal ts the later put), or when its ts is below observed stream time minus retention,
    the latest version if that one is old enough. The versions come from two places: the batch's own earlier puts
    of the key (:func:`_batch_versions`) and the carried history (:func:`_carried_versions`); the later of the two
    wins. Then the batch's accepted puts join the history (:func:`_add_to_history`). ``ids``: each record's key id in
    ``task.history.keys`` (:func:`~.vectorised.key_ids`, -1: a null key)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    store: _Versions = task.stores[1]
    history: _History = task.history
    retention = store.retention
    key, value, ts_array, ts, is_right, has_key, value_null = _record_columns(batch)
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
    carried, carried_ts = _carried_versions(history, ids, ts, order, lookups, expired, key_limit)
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
    _add_to_history(history, ids, ts, value, accepted, task.observed[1] - retention, key_limit)
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


def _carried_versions(history: _History, ids, ts, order, lookups, expired, key_limit):  # type: ignore[no-untyped-def]
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
    keys = _id_time_keys([h_ids, ids[queries]], [h_ts, ts[queries]], key_limit)
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


def _add_to_history(
    history: _History, ids: Any, ts: Any, value: Any, accepted: Any, limit: int, key_limit: int
) -> None:
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
    keys = _id_time_keys([all_ids], [all_ts], key_limit)
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
