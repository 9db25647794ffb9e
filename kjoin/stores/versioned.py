"""Versioned tables (KIP-889/KIP-914) and the stream-table join's grace buffer (KIP-923)."""

from __future__ import annotations

import bisect
import enum
import itertools
from dataclasses import dataclass
from typing import Any, Mapping

from ..partitioner import serialize_key
from ..records import Side
from ..state import StateLog
from .base import Item, Store
from .clock import Clock, observed_time_name

__all__ = [
    "VersionedStore",
    "PutResult",
    "Placement",
    "place_version",
    "versioned_store_name",
    "GraceBuffer",
    "GraceBuffered",
    "GRACE_BUFFER",
    "GRACE_STREAM_TIME",
]

GRACE_BUFFER = "grace buffer"
GRACE_STREAM_TIME = "grace buffer stream time"
"""The clock entry of the grace buffer's own stream time (the largest ts it accepted)."""


def versioned_store_name(side: Side) -> str:
    return f"{side} versioned table"


class PutResult(enum.Enum):
    """What a versioned store did with a put (Kafka's ``put`` return code)."""

    LATEST = "latest"
    """The version is now the latest of its key (``PUT_RETURN_CODE_IS_LATEST``)."""
    OUT_OF_ORDER = "out-of-order"
    """The version was stored, but the key already has a newer one."""
    EXPIRED = "expired"
    """Not stored: older than observed stream time minus history retention (``PUT_RETURN_CODE_NOT_PUT``)."""


class Placement(enum.Enum):
    """Where a versioned store puts a version (:func:`place_version`)."""

    LATEST = "latest"
    """The key's latest version (a version at the same ts is replaced)."""
    DELETES_LATEST = "deletes latest"
    """A tombstone at the latest value's own ts that leaves no trace: the latest value is deleted and nothing is
    written (``Semantics.versioned_same_ts_tombstone_leaves_no_trace``)."""
    OUT_OF_ORDER = "out-of-order"
    """An older version: into the segments, valid until the next version (a version at the same ts is replaced)."""


# the members as module names: an Enum's class attribute costs a lookup through its metaclass, and the versioned
# Spark pass calls place_version once per put
_LATEST, _DELETES_LATEST, _OUT_OF_ORDER = Placement.LATEST, Placement.DELETES_LATEST, Placement.OUT_OF_ORDER


def place_version(
    last_ts: int | None, last_is_tombstone: bool, end: int | None, ts: int, is_tombstone: bool, no_trace: bool
) -> tuple[Placement, int | None]:
    """Where a put at ``ts`` goes among a key's versions, and where the key's segments end after it: the rule of
    ``RocksDBVersionedStore.doPut`` (docs/semantics.md §5), written once for every store that keeps versions
    (:meth:`VersionedStore.put`; the Spark versioned pass's loop, :class:`kjoin.spark.passes.vectorised_versioned`,
    and its array forms' bookkeeping).

    The key's state: ``last_ts``, the ts of its newest version (``None``: it has none), ``last_is_tombstone``, is
    that version a tombstone, and ``end``, where its segments end (the newest segment record's validTo; ``None``:
    no segment record yet). The put: ``ts`` (not expired: the caller refuses those first) and is it a tombstone;
    ``no_trace`` is ``Semantics.versioned_same_ts_tombstone_leaves_no_trace``.

    Kafka keeps a key's latest non-null value in a latest value store and older versions in segments, each with
    its validTo; a tombstone exists only as the end of a segment record's validity. So:

    * a value is the latest: a put after it is the latest, and the old latest moves into a segment valid until
      ``ts`` (the segments end at ``ts``); a value at its very ts replaces it; a tombstone at its very ts deletes it
      and writes nothing, so unless the segments already end there the key keeps no trace of the tombstone
      (:attr:`Placement.DELETES_LATEST`; with ``no_trace`` off the tombstone is kept as a version and ends the
      segments); a put before it goes into the segments, which the latest's segment record now ends (at the
      latest's ts) when the put is at or after their end;
    * no value is the latest: a put at or after the segments' end finds nothing newer anywhere and is the latest
      (a tombstone ends the segments at ``ts``); one before their end goes into the segments."""
    if last_ts is not None and not last_is_tombstone:  # a value is the latest
        if ts > last_ts:
            return _LATEST, ts
        if ts == last_ts:
            if not is_tombstone:
                return _LATEST, end
            if end == ts or not no_trace:
                return _LATEST, ts
            return _DELETES_LATEST, end
        return _OUT_OF_ORDER, (last_ts if end is None or ts >= end else end)
    if end is None or ts >= end:
        return _LATEST, (ts if is_tombstone else end)
    return _OUT_OF_ORDER, end


class VersionedStore(Store):
    """A versioned KTable store: every version of every key within history retention.

    How it works (docs/semantics.md §5; ``RocksDBVersionedStore``):

    * ``put(k, v, ts)`` is refused when ``ts < observed - history_retention``, where
      ``observed`` is the largest ts ever put into this store (one per task). Otherwise the
      version is stored; a version with the same ts replaces it; a tombstone is a version,
      with one exception (:meth:`put`): a tombstone at the latest version's own ts deletes it
      and leaves no trace unless the key's history already ends there, so a later put older
      than it can become the latest again.
    * :meth:`get` returns the latest version, or nothing when it is a tombstone.
    * :meth:`get_as_of` returns the version with the greatest ts ``<= as_of`` (nothing when
      it is a tombstone). When ``as_of < observed - history_retention`` only the latest
      version can still be returned (if its ts ``<= as_of``); otherwise nothing (Kafka
      logs "Returning null for expired get.").
    * A version whose validity ended at or before ``observed - history_retention`` can never
      be returned again; kjoin removes it from the visible state at that moment.

    Entries in the state: ``(key, ts) -> value`` (``None`` for a tombstone); rows
    ``key | valid from | valid to | value`` in (key, ts) order, ``valid to`` being the next
    version's ts (``None`` for the latest).
    """

    kind = "versioned table"
    header = ("key", "valid from", "valid to", "value")
    default_names = tuple(versioned_store_name(side) for side in Side)

    def __init__(
        self,
        log: StateLog,
        task: int,
        side: Side,
        history_retention_ms: int,
        sends_old_values: bool,
        same_ts_tombstone_leaves_no_trace: bool = True,
    ) -> None:
        super().__init__(log, task, versioned_store_name(side))
        self.history_retention_ms = history_retention_ms
        self.sends_old_values = sends_old_values
        self.same_ts_tombstone_leaves_no_trace = same_ts_tombstone_leaves_no_trace
        """``Semantics.versioned_same_ts_tombstone_leaves_no_trace``; false: such a tombstone is kept as a version."""
        self._clock = Clock(log, task)
        self._observed_name = observed_time_name(self.name)
        self._versions: dict[Any, list[tuple[int, Any]]] = {}
        self._history_end: dict[Any, int] = {}  # per key: where Kafka's segments end (the newest record's validTo)
        self._expired_at: int | None = None  # the limit of the last expiry over every key

    def parts(self) -> tuple[Store, ...]:
        """The store and the clock that keeps its observed stream time."""
        return (self, self._clock)

    @classmethod
    def items(cls, entries: Mapping[Any, Any], limit: int | None = None) -> list[tuple[Any, tuple]]:
        times: dict[Any, list[int]] = {}
        for key, ts in entries:
            times.setdefault(key, []).append(ts)
        valid_to = {}
        for key, starts in times.items():
            starts.sort()
            for i, ts in enumerate(starts):
                valid_to[(key, ts)] = starts[i + 1] if i + 1 < len(starts) else None
        shown = super().items(entries, limit)
        return [((key, ts), (key, ts, valid_to[(key, ts)], value)) for (key, ts), value in shown]

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> Any:
        return stored  # the row is built in items(): it needs the key's next version

    @classmethod
    def summary(cls, record: Mapping[str, Any], stored: Any = None) -> tuple[Any, Any, Any, Any]:
        value = record["value"]
        return record["key"], record["valid from"], value, "tombstone" if value is None else None

    def enable_sending_old_values(self) -> None:
        """A downstream join needs ``Change.old`` (Kafka's ``enableSendingOldValues``)."""
        self.sends_old_values = True

    @property
    def observed_ms(self) -> int | None:
        return self._clock.get(self._observed_name)

    def expired_before(self) -> int | None:
        """``observed - history_retention``: puts and lookups older than this are expired."""
        observed = self.observed_ms
        return None if observed is None else observed - self.history_retention_ms

    # -- look up --------------------------------------------------------------------------
    def latest(self, key: Any) -> tuple[Any, int] | None:
        """``(value, ts)`` of the latest version, a tombstone included; ``None`` if the key has none."""
        versions = self._versions.get(key)
        if not versions:
            return None
        ts, value = versions[-1]
        return (value, ts)

    def get(self, key: Any) -> tuple[Any, int] | None:
        """``(value, ts)`` of the latest version, or ``None`` (no version, or a tombstone)."""
        latest = self.latest(key)
        return None if latest is None or latest[0] is None else latest

    def get_as_of(self, key: Any, as_of: int) -> tuple[tuple[Any, int] | None, bool]:
        """``((value, ts) or None, expired)``: the version valid at ``as_of``; ``expired`` is true
        when ``as_of`` is older than history retention allows (only the latest can answer)."""
        versions = self._versions.get(key, [])
        limit = self.expired_before()
        if limit is not None and as_of < limit:
            if versions and versions[-1][0] <= as_of and versions[-1][1] is not None:
                return (versions[-1][1], versions[-1][0]), True
            return None, True
        index = bisect.bisect_right(versions, as_of, key=lambda version: version[0])
        if index == 0:
            return None, False
        ts, value = versions[index - 1]
        return (None if value is None else (value, ts)), False

    def versions(self, key: Any) -> list[tuple[int, int | None, Any]]:
        """Every visible version of ``key`` as ``(valid_from, valid_to or None, value)``, oldest first."""
        rows = self._versions.get(key, [])
        return [(ts, rows[i + 1][0] if i + 1 < len(rows) else None, value) for i, (ts, value) in enumerate(rows)]

    # -- update state ---------------------------------------------------------------------
    def put(self, key: Any, value: Any, ts: int) -> tuple[PutResult, tuple[Any, int] | None]:
        """Put a version; return what happened and the previous latest ``(value, ts)`` (non-tombstone).

        kjoin keeps the key's versions as one list, tombstones as entries, plus where Kafka's segments end
        (``_history_end``), which decides the one case the list alone cannot (a tombstone at the latest version's
        own timestamp, ``Semantics.versioned_same_ts_tombstone_leaves_no_trace``); where the version goes and where
        the segments end after it is :func:`place_version`'s rule."""
        previous = self.get(key)
        limit = self.expired_before()
        if limit is not None and ts < limit:
            return PutResult.EXPIRED, previous
        self._clock.advance(self._observed_name, ts)
        versions = self._versions.setdefault(key, [])
        last_ts, last_value = versions[-1] if versions else (None, None)
        placement, end = place_version(
            last_ts,
            last_value is None,
            self._history_end.get(key),
            ts,
            value is None,
            self.same_ts_tombstone_leaves_no_trace,
        )
        if end is not None:
            self._history_end[key] = end
        if placement is Placement.DELETES_LATEST:  # the latest value is deleted, nothing is written
            versions.pop()
            self._log.delete(self.store, (key, ts))
        else:
            self._store(key, versions, ts, value)
        result = PutResult.OUT_OF_ORDER if placement is Placement.OUT_OF_ORDER else PutResult.LATEST
        if not versions:
            del self._versions[key]
        self._expire(key)
        return result, previous

    def _store(self, key: Any, versions: list[tuple[int, Any]], ts: int, value: Any) -> None:
        """Insert the version at ``ts`` in the key's list, replacing one with the same ts."""
        index = bisect.bisect_left(versions, ts, key=lambda version: version[0])
        if index < len(versions) and versions[index][0] == ts:
            versions[index] = (ts, value)
        else:
            versions.insert(index, (ts, value))
        self._log.put(self.store, (key, ts), value)

    def _expire(self, put_key: Any) -> None:
        """Drop the versions the limit has passed (each key keeps its newest). When the limit has not moved
        since the last pass over every key, only the key just put can have any: the same deletions, in the
        same order, without looking at every key on every put."""
        limit = self.expired_before()
        if limit is None:
            return
        if limit == self._expired_at:
            keys: Any = (put_key,)
        else:
            keys, self._expired_at = self._versions, limit
        for key in keys:
            versions = self._versions.get(key)
            if versions is None:
                continue
            while len(versions) > 1 and versions[1][0] <= limit:
                ts, _ = versions.pop(0)
                self._log.delete(self.store, (key, ts))


@dataclass(frozen=True, slots=True)
class GraceBuffered:
    """A stream record waiting in a stream-table join's grace buffer."""

    key: Any
    value: Any
    ts: int
    origin_step: int


class GraceBuffer(Store):
    """The time-ordered buffer of a stream-table join with a grace period (KIP-923).

    How it works (docs/semantics.md §2.4; ``RocksDBTimeOrderedKeyValueBuffer``):

    * Its stream time B is the largest ts of the records *accepted* into it.
    * :meth:`put` refuses a record with ``ts < B - grace`` (the caller joins it at once);
      otherwise it keeps it (duplicates too) and advances B.
    * :meth:`evict` removes every record with ``ts <= B - grace`` in (ts, key bytes, arrival)
      order.

    Entries in the state: ``(ts, key bytes, seq) -> GraceBuffered``; rows
    ``ts | key | value | from step`` in eviction order.
    """

    kind = "grace buffer"
    header = ("ts", "key", "value", "from step")
    default_names = (GRACE_BUFFER,)

    def __init__(self, log: StateLog, task: int, grace_ms: int) -> None:
        super().__init__(log, task, GRACE_BUFFER)
        self.grace_ms = grace_ms
        self._clock = Clock(log, task)
        self._rows: list[tuple[tuple[int, bytes, int], GraceBuffered]] = []
        self._seq = itertools.count()

    def parts(self) -> tuple[Store, ...]:
        """The buffer and the clock that keeps its stream time."""
        return (self, self._clock)

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        return (stored.ts, stored.key, stored.value, stored.origin_step)

    @classmethod
    def order(cls, item: Item) -> Any:
        return item[0]

    @classmethod
    def summary(cls, record: Mapping[str, Any], stored: Any = None) -> tuple[Any, Any, Any, Any]:
        return record["key"], record["ts"], record["value"], f"from step {record['from step']}"

    @classmethod
    def entry_label(cls, entry_key: Any) -> str | None:
        ts, key_bytes, _ = entry_key
        return f"{key_bytes.decode('utf-8', 'replace')}@{ts}"

    @property
    def stream_time(self) -> int | None:
        return self._clock.get(GRACE_STREAM_TIME)

    def put(self, record: GraceBuffered) -> bool:
        stream_time = self.stream_time
        if stream_time is not None and stream_time - self.grace_ms > record.ts:
            return False
        self._clock.advance(GRACE_STREAM_TIME, record.ts)
        entry = (record.ts, serialize_key(record.key), next(self._seq))
        bisect.insort(self._rows, (entry, record), key=lambda row: row[0])
        self._log.put(self.store, entry, record)
        return True

    def evict(self) -> list[GraceBuffered]:
        stream_time = self.stream_time
        evicted = []
        while self._rows and stream_time is not None and self._rows[0][1].ts <= stream_time - self.grace_ms:
            entry, record = self._rows.pop(0)
            self._log.delete(self.store, entry)
            evicted.append(record)
        return evicted
