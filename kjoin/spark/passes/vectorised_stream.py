"""Vectorised per-task pass for KStream-KStream joins: the window stores' band join and the outer-join
buffer as numpy/pyarrow array work inside ``mapInArrow``, with Python only for the buffer's rare sweeps.

Why one module of this size: it is one pass, the stream-stream join's band join and its outer-join buffer over the
same arrays, and its era rules read the same per-task arrays; split, each half would import the other's internals.

Which joins: stream-stream inner, left and outer from KIP-77 (0.10.2) on, every later era (output
timestamps before and from 2.0, window segments before 3.4 and hidden expired records from 3.4, stream
time after a skipped record before and from 3.7, KIP-962's null keys, the outer-join buffer's three
sweeps of 3.1.0, 3.1.1 to 3.7 and 3.8+, eager left/outer results before 3.1 and with the deprecated
window API), the default joiner, string and integer keys and values (:func:`unsupported` says what is
refused; ``method="auto"`` then runs the processors).

How it works. Records arrive as on the processor path (:mod:`kjoin.spark.passes.task`), each Kafka task's
together and in processing order; Spark's Arrow batches are joined into passes of at least
:data:`COALESCE_ROWS` records. Per pass and task:

1. stream time and each window store's observed time (the largest timestamp put into it) before every
   record are running maxima (``np.maximum.accumulate``) continued from the task's earlier passes;
   whether a record is stored (not behind its own store's retention, or its segment not dropped before
   3.4) and which of the other store's records a fetch can still see follow from them;
2. the band join: the stored records (this pass's and those carried from earlier passes whose key
   occurs in it) are sorted by (key code, side, ts, arrival); each record's partners are one
   ``searchsorted`` range over ``[max(ts - look_back, visible from), ts + look_ahead]`` of the other
   side's block of its key, keeping those that arrived before it: the fetch's (ts, arrival) order;
3. every record's fate and reason come from array masks (null key, null value, joined, no partner,
   expired, emitted with null at once, buffered until ``ts + look_ahead + grace``);
4. 3.1+ left/outer joins: when a later partner deletes a waiting record's ``<ts, side, key>`` group is a
   sorted search; the buffer's min time, which gates the sweep at a record at stream time, is a running
   minimum of the puts' ts since the last sweep that ran; only a sweep that passes the gate (about once per
   window plus grace of stream time in a left join) looks at the waiting records, and Kafka's walk over them
   reduces to "every closed record, in ``<ts, side, key>`` order" plus the min time it leaves
   (:func:`_walk`), since each side's records close at their ts plus a constant.

What a task carries from pass to pass: its stream time and observed times, its step count, the stored
records still visible (``ts`` at or after the store's visible-from time: bounded by the window's
retention, not by the task's size) and the outer-join buffer's waiting records and min time (bounded by
the window and grace).

Measured (``python -m kjoin.bench``, 4 Kafka partitions, 10^5 keys, window ±1 s, grace 100 ms, 2-core
machine shared with other jobs): see the table in :mod:`kjoin.bench`. Outside Spark, one task of 10^5 of
the benchmark's records: inner about 800K records/s of CPU, left 390K, outer 100K (Kafka 3.8+'s outer
sweep leaves a min time just inside the window, so it runs at almost every advance of stream time), against
the processors' 70K, 46K and 6K.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...fates import Fate, Reason
from ...partitioner import serialize_key
from ...records import OutputKind
from ...scenario import Scenario
from ..spec import JoinSpec, specs_of
from ...stores.window import MIN_SEGMENT_INTERVAL_MS
from .task import RESULT_FIELDS, _arrow_schema
from .vectorised import (
    _NONE,
    _render,
    array_pass_refusal,
    joiner_text,
    observed_before,
    stable_order,
    task_segments,
)

if TYPE_CHECKING:
    from .plans import Inputs

__all__ = ["unsupported", "stream_function"]


def unsupported(specs: Mapping[int, JoinSpec], inputs: "Inputs") -> str | None:
    """Why the vectorised stream-stream pass cannot run these scenarios exactly, or ``None`` when it can."""
    why = array_pass_refusal(inputs)
    if why is not None:
        return why
    for scenario_id, config in specs.items():
        where = f"scenario {scenario_id}" if len(specs) > 1 else "the join"
        if config.join != "stream-stream":
            return f"{where} is a {config.join} join (vectorised stream-stream pass: stream-stream only)"
        if not config.semantics.kip77:
            return (
                f"{where} is a stream-stream join with {config.semantics} semantics (before KIP-77 null values "
                "trigger lookups and a left join keeps no left store; vectorised: 0.10.2 and later)"
            )
        topology = [
            name
            for name, on in (
                ("chained joins (then)", bool(config.then)),
                ("a self-join", config.self_join or config.optimize),
            )
            if on
        ]
        if topology:
            return f"{where} has {' and '.join(topology)} (vectorised: one plain join per scenario)"
        if (why := inputs.key_refusal(scenario_id, where)) is not None:
            return why
    return None


@dataclass(frozen=True)
class _Rules:
    """One scenario's window and era, as the numbers the pass needs (index 0: left, 1: right)."""

    look_back: tuple[int, int]
    look_ahead: tuple[int, int]
    outer: tuple[bool, bool]
    grace: int
    retention: int
    segment_interval: int
    hides_expired: bool
    buffered: bool
    output_ts_is_max: bool
    skipped_advance: bool
    null_value_puts: bool
    """Before KAFKA-9921 (2.5.1): a null value's put advances its window store's observed time."""
    forward_null_keys: bool
    per_side: bool
    gate: tuple[int, int]

    @classmethod
    def of(cls, config: JoinSpec | Scenario) -> "_Rules":
        spec = JoinSpec.of(config)
        window, semantics, variant = spec.window, spec.semantics, spec.variant
        assert window is not None
        look_back = (window.before_ms, window.after_ms)
        look_ahead = (window.after_ms, window.before_ms)
        per_side = semantics.outer_join_sweep_per_side
        looks_back = semantics.outer_join_sweep_gate_looks_back and not per_side
        return cls(
            look_back=look_back,
            look_ahead=look_ahead,
            outer=(variant.outer("left"), variant.outer("right")),
            grace=window.effective_grace_ms,
            retention=window.retention_ms,
            segment_interval=max(window.retention_ms // 2, MIN_SEGMENT_INTERVAL_MS),
            hides_expired=semantics.window_store_hides_expired,
            buffered=variant != "inner" and semantics.spurious_result_fix and not window.deprecated_api,
            output_ts_is_max=semantics.stream_stream_output_ts_is_max,
            skipped_advance=semantics.skipped_records_advance_stream_time,
            null_value_puts=not semantics.join_window_store_skips_null_values,
            forward_null_keys=semantics.relaxed_null_keys,
            per_side=per_side,
            gate=look_back if looks_back else look_ahead,
        )

    def visible_from(self, observed: Any) -> Any:
        """The oldest timestamp a window store whose observed time is ``observed`` still holds (``_NONE`` before
        its first put): ``WindowStore.visible_from`` over arrays."""
        if self.hides_expired:
            start = observed - self.retention + 1
        else:
            start = np.maximum(((observed - self.retention) // self.segment_interval) * self.segment_interval, 0)
        return np.where(observed == _NONE, _NONE, start)


@dataclass
class _Buffer:
    """The outer-join buffer of one task between passes: its min time (``None``: Kafka's ``Long.MAX_VALUE``) and
    its waiting records (see :func:`_sweeps`)."""

    min_time: int | None = None
    waiting: Any = None  # a _Waiting of the records still waiting, in arrival order


@dataclass
class _Task:
    """What one Kafka task carries from one Arrow batch to the next."""

    rank: int = 0
    observed: list = field(default_factory=lambda: [_NONE, _NONE])
    stream_time: int = _NONE
    stored: Any = None  # (is_right, key, value, ts) of the stored records still visible
    buffer: _Buffer = field(default_factory=_Buffer)


COALESCE_ROWS = 65_536
"""Input batches are joined into batches of at least this many records before a pass (Spark's Arrow batches hold
10^4 by default): each pass re-reads the carried records of its keys, so fewer, larger passes cost less. Measured
outside Spark on the benchmark's left join (one task of 250K records, load ~7): 213K rec/s of CPU in passes of 10^4
records, 259K in passes of 5 x 10^4."""


def _coalesced(batches: Iterator[Any], rows: int) -> Iterator[Any]:
    """``batches`` joined into batches of at least ``rows`` records (the last may hold fewer), in order."""
    pending: list[Any] = []
    count = 0
    for batch in batches:
        pending.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield pa.concat_batches(pending) if len(pending) > 1 else pending[0]
            pending, count = [], 0
    if pending:
        yield pa.concat_batches(pending) if len(pending) > 1 else pending[0]


def stream_function(
    configs: Mapping[int, JoinSpec | Scenario],
    json_keys: bool = False,
    json_values: bool = False,
    rows: int | None = None,
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: input batches as :func:`kjoin.spark.passes.task.task_function` takes them (sorted by
    processing position within each task), output rows of :data:`kjoin.spark.passes.task.RESULT_FIELDS` in emission
    order within each task. ``rows``: see :data:`COALESCE_ROWS` (1: every input batch is a pass of its own)."""
    specs = specs_of(configs)
    if any(spec.join != "stream-stream" for spec in specs.values()):
        raise ValueError("vectorised_stream: stream-stream joins only")
    rules = {i: _Rules.of(spec) for i, spec in specs.items()}
    rows = COALESCE_ROWS if rows is None else rows
    band_limit = BAND_KEY_LIMIT  # read here, in the driver: the workers' module has the default

    def run(batches: Iterator[Any]) -> Iterator[Any]:

        group: tuple[int, int] | None = None
        task = _Task()
        schema = None
        for batch in _coalesced(batches, rows):
            if schema is None:
                schema = _arrow_schema(batch.schema)
            for key, segment in task_segments(batch):
                if key != group:
                    group, task = key, _Task()
                yield _segment(segment, rules[key[0]], task, schema, json_keys, json_values, band_limit)

    return run


def _segment(
    batch: Any, rules: _Rules, task: _Task, schema: Any, json_keys: bool, json_values: bool, band_limit: int
) -> Any:
    """The result rows of one task's consecutive records; ``task`` is updated to carry on after them."""
    n = batch.num_rows
    key, value = batch.column("key"), batch.column("value")
    ts = pc.cast(batch.column("ts"), pa.int64()).to_numpy(zero_copy_only=False)
    right = pc.equal(batch.column("side"), "right").to_numpy(zero_copy_only=False)
    side = right.astype(np.int64)
    key_null = pc.is_null(key).to_numpy(zero_copy_only=False)
    value_null = pc.is_null(value).to_numpy(zero_copy_only=False)
    valid = ~key_null & ~value_null
    position = batch.column("position")
    if position.null_count == n:
        step = np.arange(task.rank, task.rank + n, dtype=np.int64)
    else:
        step = pc.cast(position, pa.int64()).to_numpy(zero_copy_only=False)
    task.rank += n

    # 1. Stream time after each record advanced it, each store's observed time before each record.
    advances = np.ones(n, dtype=bool) if rules.skipped_advance else valid
    stream_time = np.maximum(np.maximum.accumulate(np.where(advances, ts, _NONE)), task.stream_time)
    task.stream_time = int(stream_time[-1])
    before = []
    observes = valid | (~key_null & value_null) if rules.null_value_puts else valid  # the puts a store observes
    for s in (0, 1):
        store_before, task.observed[s] = observed_before(ts, observes & (side == s), task.observed[s])
        before.append(store_before)
    own_observed = np.where(right, before[1], before[0])
    other_observed = np.where(right, before[0], before[1])
    stored = valid & (ts >= rules.visible_from(np.maximum(own_observed, ts)))
    look_back = np.where(right, rules.look_back[1], rules.look_back[0])
    look_ahead = np.where(right, rules.look_ahead[1], rules.look_ahead[0])
    outer = np.where(right, rules.outer[1], rules.outer[0])
    time_to = np.maximum(0, ts + look_ahead)
    time_from = np.maximum(np.maximum(0, ts - look_back), rules.visible_from(other_observed))

    # 2. The band join over the carried stored records of the segment's keys (first: they arrived earlier) and the
    # segment.
    carried = task.stored
    if carried is None:
        carried = (np.zeros(0, dtype=bool), pa.array([], key.type), pa.array([], value.type), np.zeros(0, np.int64))
    pair_i, pair_j, all_right, all_value, all_ts = _band_join(
        carried, key, value, ts, right, stored, valid, time_from, time_to, band_limit
    )
    matched = np.bincount(pair_i, minlength=n) > 0

    # 3. Fates.
    unmatched = valid & ~matched
    forward = key_null & ~value_null & outer & rules.forward_null_keys
    if rules.buffered:
        emit_now = unmatched & outer & (time_to < stream_time)
        put = unmatched & outer & (time_to >= stream_time)
    else:
        emit_now = unmatched & outer
        put = np.zeros(n, dtype=bool)
    closes_at = ts + look_ahead + rules.grace
    case = np.select(
        [key_null & ~forward, ~key_null & value_null, unmatched & ~outer & stored, unmatched & ~outer, put],
        [1, 2, 3, 4, 5],
        default=0,
    )

    # 4. The outer-join buffer's events.
    swept = None
    if rules.buffered:
        puts = _Waiting.of(key, value, ts, side, step, closes_at, np.flatnonzero(put), json_keys, json_values)
        partners = (pair_i, all_right[pair_j], all_ts[pair_j])
        swept = _sweeps(rules, task.buffer, key, ts, side, stream_time, valid, puts, partners)

    columns = _rows(
        batch, schema, key, value, all_value, ts, right, step, case, pair_i, all_ts, pair_j, emit_now,
        forward, swept, closes_at, rules, json_values,
    )  # fmt: skip

    _carry_stored(task, carried, key, value, ts, right, stored, rules)
    return columns


def _band_join(
    carried: tuple,
    key: Any,
    value: Any,
    ts: Any,
    right: Any,
    stored: Any,
    valid: Any,
    time_from: Any,
    time_to: Any,
    band_limit: int,
) -> tuple[Any, Any, Any, Any, Any]:
    """The pairs ``(i, j)`` of a record ``i`` of the segment (a probe: valid key and value) and a stored record ``j``
    of the other side with its key, inside its band ``[time_from, time_to]`` and processed before it; ``j`` indexes
    the carried stored records of the segment's keys followed by the segment (``all_right``, ``all_value``,
    ``all_ts``)."""
    side = right.astype(np.int64)
    in_segment = np.flatnonzero(pc.is_in(carried[1], value_set=key).to_numpy(zero_copy_only=False))
    base = len(in_segment)
    all_right = np.concatenate([carried[0][in_segment], right])
    all_key = pa.concat_arrays([carried[1].take(in_segment), key])
    all_value = pa.concat_arrays([carried[2].take(in_segment), value])
    all_ts = np.concatenate([carried[3][in_segment], ts])
    codes = pc.fill_null(pc.dictionary_encode(all_key).indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    group_of = codes * 2 + all_right
    candidates = np.concatenate([np.arange(base), base + np.flatnonzero(stored)])
    candidates = candidates[stable_order(all_ts[candidates], group_of[candidates])]
    # One sortable number per (group, time): the time as its distance from the segment's earliest (or, should that
    # overflow, as its rank among the candidates' times), so that a probe's band is one range of numbers.
    candidate_ts = all_ts[candidates]
    probes = np.flatnonzero(valid)
    earliest = int(candidate_ts.min()) if len(candidates) else 0
    span = int(candidate_ts.max()) - earliest if len(candidates) else 0
    if (int(group_of.max(initial=0)) + 2) * (span + 3) < band_limit:
        width = span + 3
        sorted_keys = group_of[candidates] * width + (candidate_ts - earliest + 1)
        from_rank = np.clip(time_from[probes] - earliest + 1, 0, width - 1)
        to_rank = np.clip(time_to[probes] - earliest + 1, 0, width - 1)
    else:
        times = np.unique(candidate_ts)
        width = len(times) + 2
        sorted_keys = group_of[candidates] * width + np.searchsorted(times, candidate_ts) + 1
        from_rank = np.searchsorted(times, time_from[probes], "left") + 1
        to_rank = np.searchsorted(times, time_to[probes], "right")
    target = codes[base + probes] * 2 + (1 - side[probes])
    low = target * width + from_rank
    high = target * width + to_rank
    # Searched in ascending order of the probes' bands (numpy narrows each search by the one before), then put back
    # in processing order: half the time of searching in processing order.
    by_band = stable_order(low)
    first, last = np.empty(len(probes), dtype=np.int64), np.empty(len(probes), dtype=np.int64)
    first[by_band] = np.searchsorted(sorted_keys, low[by_band], "left")
    last[by_band] = np.searchsorted(sorted_keys, high[by_band], "right")
    count = np.maximum(last - first, 0)
    total = int(count.sum())
    pair_i = np.repeat(probes, count)
    within = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    pair_j = candidates[np.repeat(first, count) + within]
    earlier = pair_j < base + pair_i  # processed before the record: a store never holds what comes later
    pair_i, pair_j = pair_i[earlier], pair_j[earlier]
    return pair_i, pair_j, all_right, all_value, all_ts


def _carry_stored(
    task: _Task, carried: tuple, key: Any, value: Any, ts: Any, right: Any, stored: Any, rules: _Rules
) -> None:
    """What the task carries on to its next segment: every stored record its store still shows."""
    keep = np.flatnonzero(stored)
    stored_right = np.concatenate([carried[0], right[keep]])
    stored_ts = np.concatenate([carried[3], ts[keep]])
    visible = stored_ts >= np.where(
        stored_right, rules.visible_from(np.array(task.observed[1])), rules.visible_from(np.array(task.observed[0]))
    )
    alive = np.flatnonzero(visible)
    task.stored = (
        stored_right[alive],
        pa.concat_arrays([carried[1], key.take(keep)]).take(alive),
        pa.concat_arrays([carried[2], value.take(keep)]).take(alive),
        stored_ts[alive],
    )


def _unmatched_text(value: Any, right: Any, json_values: bool) -> Any:
    """The joiner's text of every record joined with null: ``value-null`` on the left, ``null-value`` on the
    right."""
    text = _render(value, json_values)
    null = pa.scalar("null")
    return pc.if_else(
        pa.array(right),
        pc.binary_join_element_wise(null, text, "-"),
        pc.binary_join_element_wise(text, null, "-"),
    )


BAND_KEY_LIMIT = 2**62
"""The band join numbers a (group, time) pair as ``group * width + time distance`` while that stays below this
limit, and by the rank of the time among the pass's times beyond (timestamps spanning centuries)."""


_LATER = 2**62
"""A position or time after every other (no deletion yet; Kafka's ``Long.MAX_VALUE`` min time)."""


@dataclass
class _Waiting:
    """Records in the outer-join buffer (or put into it by a pass), as arrays in arrival order: the output's key,
    left and right values and text, the key's bytes (Arrow arrays); ts, the time the window closes, the origin step,
    the side (0 left, 1 right) and the position of the put in its pass (-1: an earlier pass) (numpy arrays)."""

    key: Any
    left: Any
    right: Any
    text: Any
    key_bytes: Any
    ts: Any
    closes: Any
    origin: Any
    side: Any
    position: Any

    @classmethod
    def of(cls, key, value, ts, side, step, closes_at, puts, json_keys: bool, json_values: bool) -> "_Waiting":
        put_value = value.take(puts)
        put_right = pa.array(side[puts] == 1)
        nulls = pa.nulls(len(puts), value.type)
        put_key = key.take(puts)
        return cls(
            put_key,
            pc.if_else(put_right, nulls, put_value),
            pc.if_else(put_right, put_value, nulls),
            _unmatched_text(put_value, side[puts] == 1, json_values),
            _serialized(put_key, json_keys),
            ts[puts],
            closes_at[puts],
            step[puts],
            side[puts],
            puts,
        )

    def __len__(self) -> int:
        return len(self.ts)

    def then(self, later: "_Waiting") -> "_Waiting":
        """These records (from earlier passes: position -1) followed by ``later``."""
        arrow = [pa.concat_arrays([a, b]) for a, b in zip(self.arrow(), later.arrow())]
        arrays = [np.concatenate([a, b]) for a, b in zip(self.arrays()[:-1], later.arrays()[:-1])]
        return _Waiting(*arrow, *arrays, np.concatenate([np.full(len(self), -1), later.position]))

    def arrow(self) -> tuple:
        return (self.key, self.left, self.right, self.text, self.key_bytes)

    def arrays(self) -> tuple:
        return (self.ts, self.closes, self.origin, self.side, self.position)

    def take(self, rows: Any) -> "_Waiting":
        picked = pa.array(rows, type=pa.int64())
        return _Waiting(*(a.take(picked) for a in self.arrow()), *(a[rows] for a in self.arrays()))


def _sweeps(
    rules: _Rules, buffer: _Buffer, key, ts, side, stream_time, valid, puts: _Waiting, partners
) -> tuple[Any, _Waiting] | None:
    """The outer-join buffer over one pass, vectorised but for its sweeps: which records a later partner deletes
    (a whole ``<ts, side, key>`` group, at the first partner found after the put) is array work; the min time's
    gate is a running minimum of the puts' ts since the last sweep that ran; only a sweep that passes the gate (about
    once per window plus grace of stream time) reads the waiting records, in Kafka's order, in Python. Returns the
    sweeps' outputs as ``(records, entries)``: the index of the record whose sweep released each, and the released
    entries (in emission order), or ``None`` when no sweep released any; ``buffer`` carries on."""
    n = len(ts)
    waiting = puts if buffer.waiting is None else buffer.waiting.then(puts)
    count = len(waiting)
    pair_i, partner_right, partner_ts = partners
    outer_partner = np.where(partner_right, rules.outer[1], rules.outer[0])
    pair_i, partner_right, partner_ts = pair_i[outer_partner], partner_right[outer_partner], partner_ts[outer_partner]
    # Groups: (ts, side, key code) of every waiting record and every partner found.
    codes = pc.dictionary_encode(pa.concat_arrays([waiting.key, key])).indices.to_numpy(zero_copy_only=False)
    group_ts = np.concatenate([waiting.ts, partner_ts])
    group_side = np.concatenate([waiting.side, partner_right.astype(np.int64)])
    group_code = np.concatenate([codes[:count], codes[count + pair_i]]).astype(np.int64)
    order = stable_order(group_code, group_side, group_ts)
    new_group = np.ones(len(order), dtype=bool)
    if len(order):
        new_group[1:] = (
            (np.diff(group_ts[order]) != 0) | (np.diff(group_side[order]) != 0) | (np.diff(group_code[order]) != 0)
        )
    group = np.empty(len(order), dtype=np.int64)
    group[order] = np.cumsum(new_group) - 1
    # Deleted at: the first partner of the record's group found after its put.
    width = n + 2
    found = np.sort(group[count:] * width + pair_i + 1)
    query = group[:count] * width + waiting.position + 2
    at = np.searchsorted(found, query)
    hit = at < len(found)
    hit[hit] = found[at[hit]] < (group[:count][hit] + 1) * width
    deleted_at = np.full(count, _LATER, dtype=np.int64)
    deleted_at[hit] = found[at[hit]] - group[:count][hit] * width - 1
    # The sweeps: records at stream time, in order, each gated by the min time (the smallest ts put since the last
    # sweep that ran, or what that sweep left). A scalar loop: with both sides buffered (outer joins) a sweep passes
    # its gate about once per millisecond of stream time, too often for array work between sweeps.
    candidates = np.flatnonzero(valid & (ts == stream_time))
    gates = np.where(side[candidates] == 1, rules.gate[1], rules.gate[0]) + rules.grace
    # The gate passes when the min time is below the record's stream time less its side's gate.
    thresholds, nows = (stream_time[candidates] - gates).tolist(), stream_time[candidates].tolist()
    sides = side[candidates].tolist()
    # The puts lower the min time: each candidate sees the smallest ts put since the candidate before it.
    put_at = np.flatnonzero(waiting.position >= 0)  # this pass's puts, by position
    put_position, put_ts = waiting.position[put_at], waiting.ts[put_at]
    ends = np.searchsorted(put_position, candidates, "left")  # the puts before each candidate
    puts_between = np.full(len(candidates), _LATER, dtype=np.int64)
    if len(put_at) and len(candidates):
        starts = np.concatenate([[0], ends[:-1]])
        smallest = np.minimum.reduceat(np.append(put_ts, _LATER), np.append(starts, ends[-1]))[:-1]
        puts_between = np.where(ends > starts, smallest, _LATER)
    walker = _Walker(rules, waiting, deleted_at)
    sweeping: list[int] = []  # the records whose sweeps released entries, and how many each
    released_counts: list[int] = []
    released: list[int] = []
    min_time = _LATER if buffer.min_time is None else buffer.min_time
    for at, put_min, threshold, now, sweeping_side in zip(
        candidates.tolist(), puts_between.tolist(), thresholds, nows, sides
    ):
        if put_min < min_time:
            min_time = put_min
        if min_time < threshold:  # Kafka's ``minTime + gate < now`` (no sweep while the min time is Long.MAX)
            min_time, closed = walker.sweep(at, now, sweeping_side)
            if closed:
                sweeping.append(at)
                released_counts.append(len(closed))
                released.extend(closed)
    after = ends[-1] if len(candidates) else 0
    if after < len(put_ts):  # the puts after the last candidate
        min_time = min(min_time, int(put_ts[after:].min()))
    buffer.min_time = None if min_time >= _LATER else min_time
    alive = np.flatnonzero(~walker.emitted() & (deleted_at >= _LATER))
    buffer.waiting = waiting.take(alive)
    if not released:
        return None
    at = np.repeat(np.array(sweeping, dtype=np.int64), np.array(released_counts, dtype=np.int64))
    return at, waiting.take(np.array(released, dtype=np.int64))


class _Walker:
    """The sweeps of one pass, Kafka's ``emitNonJoinedOuterRecords``: the waiting records are sorted once in Kafka's
    store order (ts, right before left, key bytes, arrival), and each sweep reads them from the first one that may
    still be there, so a sweep costs the records it emits (and the few it passes over), not the whole buffer.

    A sweep by a record of ``side`` at stream time ``now`` at position ``sweep_at`` sees the records put before it,
    not deleted by a partner before it and not emitted by an earlier sweep. Every record of one side closes at its ts
    plus a constant (3.8+: its own side's look-ahead plus grace; before: the sweeping side's), so a side's closed
    records come before its first open one. 3.1 to 3.7 stop at the first open record: they emit every closed record
    and leave the first open ts (or the last ts, if all closed). 3.8+ go on until both sides have met an open
    record, then read one more: they also emit every closed record, and leave the ts of the entry after the later
    of the two sides' first open records (the last one's ts if there is none after it, or if a side never meets
    an open record). An entry is one record: Kafka's store keeps a list per ``<ts, side, key>`` and reads each of
    its values on its own, so a later record of the same group stops the sweep at that group's ts.

    The sweeps are a scalar loop (a sweep passes its gate about once per millisecond of stream time in an outer
    join), so the walker keeps plain lists in store order, indexed by place: ``gone[place]`` is the position from
    which the record is gone (deleted by a partner, or -1 once a sweep emitted it)."""

    def __init__(self, rules: _Rules, waiting: _Waiting, deleted_at: Any) -> None:
        self.rules = rules
        count = len(waiting)
        side_byte = 1 - waiting.side  # right (1) before left (0) at the same ts
        if count:
            # the key bytes' dense rank: of the distinct keys only (a quarter of the time of ranking every record)
            encoded = pc.dictionary_encode(waiting.key_bytes)
            ranks = pc.rank(encoded.dictionary, tiebreaker="dense").to_numpy().astype(np.int64)
            key_rank = ranks[encoded.indices.to_numpy()]
            order = stable_order(key_rank, side_byte, waiting.ts)
        else:
            key_rank = order = np.zeros(0, dtype=np.int64)
        self.order = order.tolist()  # place -> the record's index in ``waiting``
        self.ts = waiting.ts[order].tolist()
        self.side_byte = side_byte[order].tolist()
        self.key_rank = key_rank[order].tolist()
        # A record is closed when this is below the sweep's bound: 3.8+ its close time against the sweep's stream
        # time; before, its ts against stream time less the sweeping side's look-ahead and grace.
        self.closing = (waiting.closes if rules.per_side else waiting.ts)[order].tolist()
        self.position = waiting.position[order].tolist()
        self.gone = deleted_at[order].tolist()
        self.one_side = len(set(self.side_byte)) < 2  # a left join's buffer, say: a side never meets an open group
        self.bulk = (waiting.ts, waiting.position, deleted_at)  # for the last ts in bulk (_last_ts)
        self.count = count
        self.start = 0  # every record before this place is gone for good

    def emitted(self) -> Any:
        """Which records (in ``waiting`` order) the sweeps emitted."""
        emitted = np.zeros(self.count, dtype=bool)
        emitted[np.array(self.order, dtype=np.int64)[np.array(self.gone, dtype=np.int64) < 0]] = True
        return emitted

    def sweep(self, sweep_at: int, now: int, side: int) -> tuple[int, list[int]]:
        """The min time the sweep leaves and the records it emits (indices in ``waiting``), in emission order."""
        rules = self.rules
        order, ts, closing, position, gone, side_byte = (
            self.order, self.ts, self.closing, self.position, self.gone, self.side_byte,
        )  # fmt: skip
        per_side = rules.per_side
        bound = now if per_side else now - rules.look_ahead[side] - rules.grace
        emitted: list[int] = []
        first_open: dict[int, int] = {}
        last = -1
        gone_so_far = True
        n = self.count
        i = self.start
        while i < n:
            if gone[i] < sweep_at:  # deleted by a partner before the sweep, or emitted
                if gone_so_far:
                    self.start = i + 1
                i += 1
                continue
            if position[i] >= sweep_at:  # put by a later record
                gone_so_far = False
                i += 1
                continue
            last = i
            if closing[i] < bound:
                gone[i] = -1
                emitted.append(order[i])
                if gone_so_far:
                    self.start = i + 1
                i += 1
                continue
            gone_so_far = False
            if not per_side:
                return ts[i], emitted
            first_open.setdefault(side_byte[i], i)
            if len(first_open) == 2:
                break
            if self.one_side:  # no closed record after this one: the last ts of the rest is the max, in bulk
                return self._last_ts(sweep_at), emitted
            i += 1
        if last < 0:
            return _LATER, emitted
        if len(first_open) < 2:
            return ts[last], emitted
        for j in range(i + 1, n):
            if gone[j] < sweep_at or position[j] >= sweep_at:
                continue
            # The next entry Kafka's iterator reads: each value of a <ts, side, key> list is an entry of its own, so
            # this is a later value of the group the sweep stopped at (same ts), or the next group.
            return ts[j], emitted
        return ts[i], emitted

    def _last_ts(self, sweep_at: int) -> int:
        """The largest ts the sweep at ``sweep_at`` reads from a one-sided buffer (3.8+), where the walk would read
        the whole buffer, since it never meets an open record of the other side: the largest ts of the records put
        before it and not deleted by then, in array work. That counts the records this sweep and earlier ones emitted
        too, which changes nothing: they closed before the open record the sweep stopped at, and one side's records
        close in ts order (at ts plus one constant), so their ts are below that record's."""
        ts, position, deleted = self.bulk
        return int(ts[(deleted >= sweep_at) & (position < sweep_at)].max())


def _serialized(keys: Any, json_keys: bool) -> Any:
    """The bytes of each key as Kafka's serde writes them (:func:`kjoin.partitioner.serialize_key`), an Arrow
    binary array."""
    if json_keys:
        return pa.array([serialize_key(json.loads(k)) for k in keys.to_pylist()], pa.binary())
    if pa.types.is_string(keys.type):
        return pc.cast(keys, pa.binary())
    return pa.array([serialize_key(k) for k in keys.to_pylist()], pa.binary())


_STEPS: list[tuple[Fate, Reason | None]] = [
    (Fate.JOINED, None),  # 0: no step row
    (Fate.DROPPED, Reason.NULL_KEY),  # 1
    (Fate.DROPPED, Reason.NULL_VALUE),  # 2
    (Fate.NO_MATCH, Reason.NO_PARTNER),  # 3
    (Fate.NO_MATCH, Reason.EXPIRED),  # 4: no partner, and too old for its own store
    (Fate.BUFFERED, Reason.WINDOW_OPEN),  # 5
]


def _rows(
    batch, schema, key, value, all_value, ts, right, step, case, pair_i, all_ts, pair_j, emit_now, forward,
    swept, closes_at, rules, json_values,
) -> Any:  # fmt: skip
    """The segment's result rows in emission order: per record, the buffer's outputs its sweep released, its
    joined outputs (or its result with null), then its step row if its fate is not ``joined``."""
    parts = []  # (record index, sub-order, columns)
    value_type = value.type

    def part(i: Any, sub: int, **columns: Any) -> None:
        parts.append((i, sub, columns))

    if swept is not None:
        at, released = swept
        part(
            at,
            0,
            key=released.key,
            left=released.left,
            right=released.right,
            value=released.text,
            ts=pa.array(released.ts, pa.int64()),
            kind=OutputKind.WINDOW_CLOSED.value,
            origin_step=pa.array(released.origin, pa.int64()),
        )
    if len(pair_i):
        left, right_value, joined = _placed_by_side(
            value.take(pair_i), all_value.take(pair_j), pa.array(right[pair_i]), json_values
        )
        out_ts = np.maximum(ts[pair_i], all_ts[pair_j]) if rules.output_ts_is_max else ts[pair_i]
        part(
            pair_i,
            1,
            key=key.take(pair_i),
            left=left,
            right=right_value,
            value=joined,
            ts=pa.array(out_ts),
            kind=OutputKind.JOINED.value,
            origin_step=pa.array(step[pair_i]),
        )
    alone = np.flatnonzero(emit_now | forward)
    if len(alone):
        left, right_value, joined = _placed_by_side(
            value.take(alone), pa.nulls(len(alone), value_type), pa.array(right[alone]), json_values
        )
        part(
            alone,
            1,
            key=key.take(alone),
            left=left,
            right=right_value,
            value=joined,
            ts=pa.array(ts[alone]),
            kind=pa.array(np.where(forward[alone], OutputKind.NULL_KEY.value, OutputKind.UNMATCHED.value)),
            origin_step=pa.array(step[alone]),
        )
    steps = np.flatnonzero(case > 0)
    if len(steps):
        cases = pa.array(case[steps])
        part(
            steps,
            2,
            key=key.take(steps),
            ts=pa.array(ts[steps]),
            fate=pc.take(pa.array([f.value for f, _ in _STEPS]), cases),
            reason=pc.take(pa.array([None if r is None else r.value for _, r in _STEPS], pa.string()), cases),
            until_ms=pa.array(np.where(case[steps] == 5, closes_at[steps], 0), mask=case[steps] != 5),
        )
    return _interleaved(batch, schema, step, parts)


def _interleaved(batch: Any, schema: Any, step: Any, parts: list) -> Any:
    """The Arrow batch of ``parts`` (``(record indexes, sub-order, columns)``): rows ordered by record, then by
    sub-order (released outputs, the record's outputs, its step row); a column a part leaves out is null."""
    if not parts:
        return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)
    i = np.concatenate([p[0] for p in parts])
    order = stable_order(np.concatenate([np.full(len(p[0]), p[1], dtype=np.int8) for p in parts]), i)
    i_sorted = pa.array(i[order])
    take = pa.array(order)
    arrays = []
    for name, _ in RESULT_FIELDS:
        kind = schema.field(name).type
        if name in ("scenario", "partition", "side", "offset"):
            arrays.append(batch.column(name).take(i_sorted))
            continue
        if name == "step":
            arrays.append(pa.array(step).take(i_sorted))
            continue
        if name == "row":
            pieces = [pa.repeat(pa.scalar("step" if p[1] == 2 else "output"), len(p[0])) for p in parts]
        elif name == "tombstone":
            pieces = [
                pa.nulls(len(p[0]), pa.bool_()) if p[1] == 2 else pa.array(np.zeros(len(p[0]), bool)) for p in parts
            ]
        else:
            pieces = []
            for p in parts:
                cell = p[2].get(name)
                if cell is None:
                    cell = pa.nulls(len(p[0]), kind)
                elif isinstance(cell, str):
                    cell = pa.repeat(pa.scalar(cell), len(p[0]))
                pieces.append(pc.cast(cell, kind))
        arrays.append(pc.take(pa.concat_arrays([pc.cast(x, kind) for x in pieces]), take))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _placed_by_side(mine: Any, other: Any, on_right: Any, json_values: bool) -> tuple[Any, Any, Any]:
    """``(left, right, joiner text)`` of result rows whose record's value is ``mine`` and its
    partner's ``other`` (null for an unmatched record): ``on_right`` marks the rows whose record
    is a right record."""
    left = pc.if_else(on_right, other, mine)
    right = pc.if_else(on_right, mine, other)
    return left, right, joiner_text(left, right, json_values)
