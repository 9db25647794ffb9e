"""What the versioned pass's two jobs share (:mod:`kjoin.spark.passes.vectorised_versioned`): a task's state
(the loop's stores, :class:`_Versions` and :class:`_Plain`, the array forms' carried tables, history and
bookkeeping, the grace buffer: :class:`_Task`), the result rows by case number (:data:`_CASES`, :class:`_Rows`,
:func:`_assemble`, :func:`_one_row_per_record`), and where a put goes among its key's versions as the array forms
place it (:func:`_place_rounds`: :func:`kjoin.stores.versioned.place_version`, tabulated)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, Callable, Iterator

from ...fates import Fate, Reason
from ...records import OutputKind, Side
from ...scenario import Scenario
from ...stores.versioned import Placement, place_version
from ..spec import JoinSpec
from .task import RESULT_FIELDS
from .vectorised import (
    _NONE,
    observed_before,
    _Tables,
    keep_where,
    key_groups,
)


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
        self.history = _History()  # stream-table without grace as arrays: the versioned table and its bookkeeping
        self.books = [_Bookkeeping(), _Bookkeeping()]  # the table-table array form's, per key id of ``tables``
        self.heap: list[tuple] = []  # the grace buffer: (ts, key bytes, arrival, key, (value, text), origin step)
        self.buffer_time: int | None = None
        self.arrivals = 0


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

    def rows(self, codes: Any) -> "_Bookkeeping":
        """A copy of the bookkeeping of the key numbers ``codes``, numbered by their place in ``codes``."""
        book = _Bookkeeping(0)
        for name in self.__slots__:
            setattr(book, name, getattr(self, name)[codes])
        return book

    def set_rows(self, codes: Any, book: "_Bookkeeping") -> None:
        """Write back ``book`` (as :meth:`rows` gave it for ``codes``)."""
        for name in self.__slots__:
            getattr(self, name)[codes] = getattr(book, name)

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


def _place_rounds(
    book: _Bookkeeping,
    codes: Any,
    indices: Any,
    ts: Any,
    null: Any,
    no_trace: bool,
    deletions: list[tuple[int, int, int | None]] | None = None,
) -> int | None:
    """Place one side's puts (their key numbers in ``book``, batch indices ascending, ts, is it a tombstone) by
    :func:`~kjoin.stores.versioned.place_version`, tabulated (:func:`_placement_table`): keys apart at once, each
    key's puts in turn (round ``r`` places every key's ``r``-th put). Returns the smallest batch index of a put that
    deletes its key's latest value, or ``None``. Without ``deletions``, ``book`` is then past that put without its
    delete (the caller places again up to it); with a list, such a put deletes as the loop's store does
    (:meth:`_Bookkeeping.delete_latest`), ``(batch index, key number, end)`` of each is appended to the list (in
    no particular order), and ``book`` ends past every put. Keys are apart, so one pass finds them all.
    The keys whose puts all come after everything they have (:func:`_place_in_order`, :data:`IN_ORDER_KEYS`) are
    placed at once without rounds; a key of the others with more than :data:`ROUND_LIMIT` puts: one by one, by the rule
    itself."""
    import numpy as np

    if not len(codes):
        return None
    # Each put's rank among its key's puts, from the puts grouped by key (a radix sort while the key numbers fit 16
    # bits: a comparison sort of the codes, np.unique's, cost a third of the table-table pass at 10^6 records).
    order, first, group_start = key_groups(codes)
    if IN_ORDER_KEYS:
        rest = _place_in_order(book, codes, ts, null, order, first, group_start)
        if not rest.any():
            return None
        if not rest.all():
            codes, indices, ts, null = codes[rest], indices[rest], ts[rest], null[rest]
            order, first, group_start = key_groups(codes)
    rank = np.empty(len(codes), dtype=np.int64)
    rank[order] = np.arange(len(codes)) - group_start
    if int(rank.max()) >= ROUND_LIMIT:
        return _place_one_by_one(book, codes, indices, ts, null, no_trace, deletions)
    placements, sources = _PLACEMENT_TABLES[no_trace]
    by_round = np.argsort(rank.astype(np.uint16), kind="stable")  # a radix sort too: ranks are below ROUND_LIMIT
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
            first_index = int(indices[puts[deleting]].min())
            deletes_at = first_index if deletes_at is None else min(deletes_at, first_index)
            if deletions is not None:
                gone = c[deleting]
                ends = book.has_end[gone]
                at, gone_ends = indices[puts[deleting]].tolist(), end[deleting].tolist()
                deletions.extend(
                    (index, code, gone_end if has else None)
                    for index, code, gone_end, has in zip(at, gone.tolist(), gone_ends, ends.tolist())
                )
                book.has_last[gone] = ends
                book.last[gone] = np.where(ends, end[deleting], _NONE)
                book.last_null[gone] = True
        keep = ~deleting
        book.has_end[c[keep]] = source[keep] != 0
        book.end[c[keep]] = np.select([source == 1, source == 2], [t, end], default=book.last[c])[keep]
        latest = placement == 0
        book.has_last[c[latest]] = True
        book.last[c[latest]] = t[latest]
        book.last_null[c[latest]] = tombstone[latest]
    return deletes_at


IN_ORDER_KEYS = True
"""Place the keys whose puts all come after everything they have at once (:func:`_place_in_order`); ``False``: every
key in rounds (the tests compare both with the rule put by put)."""


def _place_in_order(
    book: _Bookkeeping, codes: Any, ts: Any, null: Any, order: Any, first: Any, group_start: Any
) -> Any:
    """Place at once the puts of the keys whose puts in this batch are in ts order, each after the one before and
    the first after the key's last version and at or after where its segments end; return a mask (batch order) of
    the other keys' puts, left for the rounds. ``order``, ``first``, ``group_start``: the puts grouped by key
    (:func:`~kjoin.spark.passes.vectorised.key_groups`).

    Such a put finds its key's latest version (or none) before it and its segments ending at or before it, so by
    :func:`~kjoin.stores.versioned.place_version` it is the latest version and never deletes one; the segments end
    at its ts when it is a tombstone or when a value was the latest before it, and stay where they were otherwise.
    So a key's bookkeeping after the batch is its last put's ts and tombstone flag, and as the end the ts of its
    last put that moves the end (if any; else the end it had)."""
    import numpy as np

    c, t, tombstone = codes[order], ts[order], null[order]
    n = len(c)
    positions = np.arange(n)
    previous = np.empty(n, dtype=np.int64)
    previous[1:] = t[:-1]
    previous_null = np.empty(n, dtype=bool)
    previous_null[1:] = tombstone[:-1]
    first_puts = np.flatnonzero(first)
    fc, ft = c[first_puts], t[first_puts]
    has_last, last_null = book.has_last[fc], book.last_null[fc]
    after_first = (~has_last | (ft > book.last[fc])) & (~book.has_end[fc] | (ft >= book.end[fc]))
    ok = t > previous
    ok[first_puts] = after_first
    group = np.cumsum(first) - 1
    in_order = np.logical_and.reduceat(ok, first_puts)  # per key (group), in key order
    previous_null[first_puts] = ~has_last | last_null
    moves_end = tombstone | ~previous_null  # a tombstone, or a value was the latest before it
    last_moving = np.maximum.accumulate(np.where(moves_end, positions, -1))
    group_end = np.empty(len(first_puts), dtype=np.int64)
    group_end[:-1] = first_puts[1:] - 1
    group_end[-1] = n - 1
    keys = fc[in_order]
    ends = group_end[in_order]
    book.has_last[keys] = True
    book.last[keys] = t[ends]
    book.last_null[keys] = tombstone[ends]
    moving = last_moving[ends]
    moved = moving >= group_start[ends]
    book.has_end[keys[moved]] = True
    book.end[keys[moved]] = t[moving[moved]]
    rest = np.empty(n, dtype=bool)
    rest[order] = ~in_order[group]
    return rest


def _place_one_by_one(
    book: _Bookkeeping,
    codes: Any,
    indices: Any,
    ts: Any,
    null: Any,
    no_trace: bool,
    deletions: list[tuple[int, int, int | None]] | None = None,
) -> int | None:
    """:func:`_place_rounds` put by put."""
    place, latest, deletes = place_version, _LATEST, _DELETES_LATEST
    deletes_at: int | None = None
    for code, index, t, tombstone in zip(codes.tolist(), indices.tolist(), ts.tolist(), null.tolist()):
        last = int(book.last[code]) if book.has_last[code] else None
        end = int(book.end[code]) if book.has_end[code] else None
        placement, new_end = place(last, bool(book.last_null[code]), end, t, tombstone, no_trace)
        if placement is deletes:
            if deletions is None:
                return index
            deletes_at = index if deletes_at is None else deletes_at
            deletions.append((index, code, book.delete_latest(code)))
            continue
        book.has_end[code] = new_end is not None
        book.end[code] = _NONE if new_end is None else new_end
        if placement is latest:
            book.has_last[code] = True
            book.last[code] = t
            book.last_null[code] = tombstone
    return deletes_at


def _accepted_puts(side: int, store: _Versions, task: _Task, ts: Any, is_right: Any, has_key: Any) -> Any:
    """The batch indices of one versioned side's puts its table accepts (not below observed stream time, carried in
    ``task.observed``, minus history retention)."""
    import numpy as np

    puts = (is_right if side else ~is_right) & has_key
    observed, _ = observed_before(ts, puts, task.observed[side])
    return np.flatnonzero(puts & ~((observed > _NONE) & (ts < observed - store.retention)))


def _put_columns(batch: Any) -> tuple[Any, Any, Any, Any]:
    """A batch's timestamps and, as numpy masks, is the record the right side's, has it a key, is its value null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ts = pc.cast(batch.column("ts"), pa.int64()).to_numpy(zero_copy_only=False)
    is_right = pc.equal(batch.column("side"), "right").to_numpy(zero_copy_only=False)
    has_key = pc.is_valid(batch.column("key")).to_numpy(zero_copy_only=False)
    null = pc.is_null(batch.column("value")).to_numpy(zero_copy_only=False)
    return ts, is_right, has_key, null


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


class _History:
    """A versioned table as arrays (the no-grace stream-table join's array form): its keys (each once, an id each),
    and its versions sorted by (key id, ts), one per key and ts: ids, timestamps, values (null: a tombstone); and
    per key id its bookkeeping (:class:`_Bookkeeping`)."""

    def __init__(self) -> None:
        self.keys: Any = None
        self.ids: Any = None
        self.ts: Any = None
        self.values: Any = None
        self.book = _Bookkeeping()
        """Per key id: its last version's ts and whether that is a tombstone, and where its segments end, enough to
        hand the table to the loop exactly (:func:`~.versioned_stream_table._advance_tails`)."""


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
