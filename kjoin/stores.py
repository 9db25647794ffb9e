"""The state stores a join keeps, each writing every change through the run's StateLog.

* :class:`WindowStore`: one side's stream records of a stream-stream join, kept for the
  store's retention (before + after + grace) and fetched by key and time range.
* :class:`OuterJoinBuffer`: the 3.1+ store of left/outer records still waiting for a partner,
  ordered as Kafka orders it (timestamp, right before left, key bytes, arrival).
* :class:`TableStore`: a KTable's materialized view (latest value and timestamp per key).
* :class:`Clock`: the task's stream time and the other per-task times the join keeps.
* :class:`VersionedStore`: a versioned KTable (every version within history retention).
* :class:`GraceBuffer`: stream records a stream-table join holds for its grace period.
* :class:`SubscriptionStore` and :class:`InFlightMessages`: a foreign-key join's
  subscriptions on the right side, and the messages travelling between tasks.
* :class:`RecordCache`: the updates a caching store holds back until the next commit.
"""

from __future__ import annotations

import bisect
import enum
import heapq
import itertools
from dataclasses import dataclass
from typing import Any

from .partitioner import serialize_key
from .records import Side
from .state import StateLog, StoreId

__all__ = [
    "WindowStore", "OuterJoinBuffer", "BufferedRecord", "TableStore", "Clock", "window_store_name", "table_store_name",
    "VersionedStore", "PutResult", "GraceBuffer", "GraceBuffered", "SubscriptionStore", "InFlightMessages", "versioned_store_name",
    "RecordCache", "CachedUpdate",
]

OUTER_BUFFER = "outer-join buffer"
CLOCK = "clock"


def window_store_name(side: Side) -> str:
    return f"{side} window"


def table_store_name(side: Side) -> str:
    return f"{side} table"


class Clock:
    """Per-task times: stream time and friends, visible in the state as a store.

    Times that were never set read as ``None`` (Kafka starts stream time at -1).
    """

    def __init__(self, log: StateLog, task: int, name: str = CLOCK) -> None:
        self._log = log
        self._store = StoreId(task, name)
        self._times: dict[str, int] = {}  # read on every record: kept here, written through to the log
        log.declare(self._store)

    def get(self, name: str) -> int | None:
        return self._times.get(name)

    def set(self, name: str, value: int | None) -> None:
        if value is None:
            if self._times.pop(name, None) is not None:
                self._log.delete(self._store, name)
        elif self._times.get(name) != value:
            self._times[name] = value
            self._log.put(self._store, name, value)

    def advance(self, name: str, ts: int) -> int:
        """Set ``name`` to max(current, ts) and return it."""
        current = self.get(name)
        if current is None or ts > current:
            self.set(name, ts)
            return ts
        return current


class WindowStore:
    """One side's window store in a stream-stream join.

    A fetch returns only records with ``ts >= observed - retention + 1``, where ``observed``
    is the largest timestamp ever put into *this* store: Kafka's segmented store hides
    older records, and kjoin removes them from the visible state at the same moment.
    Rows in the state: ``(key, ts, seq) -> value``.
    """

    def __init__(self, log: StateLog, task: int, side: Side, retention_ms: int, clock: Clock, name: str | None = None) -> None:
        self._log = log
        self.store = StoreId(task, name or window_store_name(side))
        self.retention_ms = retention_ms
        self._clock = clock
        self._observed_name = f"{side} window observed"
        self._by_key: dict[Any, list[tuple[int, int, Any]]] = {}
        self._by_time: list[tuple[int, int, Any]] = []  # heap of (ts, seq, key)
        self._seq = itertools.count()
        log.declare(self.store)

    @property
    def observed_ms(self) -> int | None:
        return self._clock.get(self._observed_name)

    def visible_from(self) -> int | None:
        """The oldest timestamp a fetch can still return, or ``None`` before the first put."""
        observed = self.observed_ms
        return None if observed is None else observed - self.retention_ms + 1

    def put(self, key: Any, ts: int, value: Any) -> bool:
        """Store a record; ``False`` if it is already older than the retention."""
        self._clock.advance(self._observed_name, ts)
        self._expire()
        start = self.visible_from()
        if start is not None and ts < start:
            return False
        seq = next(self._seq)
        bisect.insort(self._by_key.setdefault(key, []), (ts, seq, value), key=lambda row: row[:2])
        heapq.heappush(self._by_time, (ts, seq, key))
        self._log.put(self.store, (key, ts, seq), value)
        return True

    def fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any]]:
        """``(ts, value)`` of ``key``'s records with ``time_from <= ts <= time_to``, in (ts, arrival) order."""
        start = self.visible_from()
        if start is not None:
            time_from = max(time_from, start)
        rows = self._by_key.get(key, ())
        lo = bisect.bisect_left(rows, time_from, key=lambda row: row[0])
        found = []
        for ts, _, value in itertools.islice(rows, lo, None):
            if ts > time_to:
                break
            found.append((ts, value))
        return found

    def _expire(self) -> None:
        start = self.visible_from()
        while self._by_time and self._by_time[0][0] < start:
            ts, seq, key = heapq.heappop(self._by_time)
            rows = self._by_key[key]
            rows.remove(next(row for row in rows if row[1] == seq))
            if not rows:
                del self._by_key[key]
            self._log.delete(self.store, (key, ts, seq))


@dataclass(frozen=True, slots=True)
class BufferedRecord:
    """A left/outer record waiting in the outer-join buffer for a partner or for its window to close."""

    side: Side
    key: Any
    value: Any
    ts: int
    closes_at_ms: int
    """The record is emitted with null once stream time is strictly greater than this."""
    origin_step: int


class OuterJoinBuffer:
    """The shared outer-join store of a 3.1+ left/outer stream-stream join (one per task).

    Kafka keys it by ``<ts, side, key>`` with a list of values per key; iteration order is
    timestamp ascending, then right (side byte 0) before left (1), then the serialized key
    bytes unsigned, then arrival. A match deletes the whole list of its ``<ts, side, key>``.
    Rows in the state: ``(ts, side byte, key bytes, seq) -> BufferedRecord``.
    """

    def __init__(self, log: StateLog, task: int, name: str = OUTER_BUFFER) -> None:
        self._log = log
        self.store = StoreId(task, name)
        self._groups: dict[tuple[int, int, bytes], list[tuple[int, BufferedRecord]]] = {}
        self._order: list[tuple[int, int, bytes]] = []
        self._seq = itertools.count()
        log.declare(self.store)

    @staticmethod
    def group_key(side: Side, key: Any, ts: int) -> tuple[int, int, bytes]:
        return (ts, 1 if side is Side.LEFT else 0, serialize_key(key))

    def __len__(self) -> int:
        return len(self._order)

    def put(self, record: BufferedRecord) -> None:
        group = self.group_key(record.side, record.key, record.ts)
        if group not in self._groups:
            self._groups[group] = []
            bisect.insort(self._order, group)
        seq = next(self._seq)
        self._groups[group].append((seq, record))
        self._log.put(self.store, (*group, seq), record)

    def delete(self, side: Side, key: Any, ts: int) -> list[BufferedRecord]:
        """Remove every record buffered for ``<ts, side, key>``; return what was removed."""
        group = self.group_key(side, key, ts)
        entries = self._groups.pop(group, None)
        if entries is None:
            return []
        del self._order[bisect.bisect_left(self._order, group)]
        for seq, _ in entries:
            self._log.delete(self.store, (*group, seq))
        return [record for _, record in entries]

    def groups(self) -> list[tuple[tuple[int, int, bytes], list[BufferedRecord]]]:
        """All groups in Kafka's iteration order (a copy: safe to delete while iterating)."""
        return [(group, [record for _, record in self._groups[group]]) for group in self._order]


class TableStore:
    """A KTable's materialized view: ``key -> (value, ts)``; a null value deletes the key.

    Rows in the state: ``key -> (value, ts, old_value)``; ``old_value`` is what Kafka's
    ``Change(new, old)`` carries when this table sends old values, else ``None``.
    """

    def __init__(self, log: StateLog, task: int, side: Side, sends_old_values: bool, name: str | None = None) -> None:
        self._log = log
        self.store = StoreId(task, name or table_store_name(side))
        self.sends_old_values = sends_old_values
        self._rows: dict[Any, tuple[Any, int]] = {}
        log.declare(self.store)

    def get(self, key: Any) -> tuple[Any, int] | None:
        """``(value, ts)`` of the latest non-deleted version, or ``None``."""
        return self._rows.get(key)

    def enable_sending_old_values(self) -> None:
        """A downstream join needs ``Change.old`` (Kafka's ``enableSendingOldValues``)."""
        self.sends_old_values = True

    def put(self, key: Any, value: Any, ts: int) -> tuple[Any, int] | None:
        """Write the update; return the previous ``(value, ts)`` or ``None``."""
        previous = self._rows.get(key)
        if value is None:
            if previous is not None:
                del self._rows[key]
                self._log.delete(self.store, key)
        else:
            self._rows[key] = (value, ts)
            old = previous[0] if (previous is not None and self.sends_old_values) else None
            self._log.put(self.store, key, (value, ts, old))
        return previous


# -- versioned tables (KIP-889/KIP-914), the stream-table grace buffer (KIP-923), and the
# -- foreign-key join's subscription store and messages in flight (KIP-213) --------------

IN_FLIGHT = "in flight"
SUBSCRIPTIONS = "subscription store"
GRACE_BUFFER = "grace buffer"


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


class VersionedStore:
    """A versioned KTable store: every version of every key within history retention.

    How it works (KAFKA_SEMANTICS.md §5; ``RocksDBVersionedStore``):

    * ``put(k, v, ts)`` is refused when ``ts < observed - history_retention``, where
      ``observed`` is the largest ts ever put into this store (one per task). Otherwise the
      version is stored; a version with the same ts replaces it; a tombstone is a version.
    * :meth:`get` returns the latest version, or nothing when it is a tombstone.
    * :meth:`get_as_of` returns the version with the greatest ts ``<= as_of`` (nothing when
      it is a tombstone). When ``as_of < observed - history_retention`` only the latest
      version can still be returned (if its ts ``<= as_of``); otherwise nothing (Kafka
      logs "Returning null for expired get.").
    * A version whose validity ended at or before ``observed - history_retention`` can never
      be returned again; kjoin removes it from the visible state at that moment.

    Rows in the state: ``(key, ts) -> value`` (``None`` for a tombstone).
    """

    def __init__(self, log: StateLog, task: int, side: Side, history_retention_ms: int, sends_old_values: bool) -> None:
        self._log = log
        self.store = StoreId(task, versioned_store_name(side))
        self.history_retention_ms = history_retention_ms
        self.sends_old_values = sends_old_values
        self._clock = Clock(log, task)
        self._observed_name = f"{side} versioned table observed"
        self._versions: dict[Any, list[tuple[int, Any]]] = {}
        log.declare(self.store)

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
        """Put a version; return what happened and the previous latest ``(value, ts)`` (non-tombstone)."""
        previous = self.get(key)
        limit = self.expired_before()
        if limit is not None and ts < limit:
            return PutResult.EXPIRED, previous
        self._clock.advance(self._observed_name, ts)
        versions = self._versions.setdefault(key, [])
        index = bisect.bisect_left(versions, ts, key=lambda version: version[0])
        if index < len(versions) and versions[index][0] == ts:
            versions[index] = (ts, value)
        else:
            versions.insert(index, (ts, value))
        self._log.put(self.store, (key, ts), value)
        result = PutResult.LATEST if versions[-1][0] == ts else PutResult.OUT_OF_ORDER
        self._expire()
        return result, previous

    def _expire(self) -> None:
        limit = self.expired_before()
        if limit is None:
            return
        for key, versions in self._versions.items():
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


class GraceBuffer:
    """The time-ordered buffer of a stream-table join with a grace period (KIP-923).

    How it works (KAFKA_SEMANTICS.md §2.4; ``RocksDBTimeOrderedKeyValueBuffer``):

    * Its stream time B is the largest ts of the records *accepted* into it.
    * :meth:`put` refuses a record with ``ts < B - grace`` (the caller joins it at once);
      otherwise it keeps it (duplicates too) and advances B.
    * :meth:`evict` removes every record with ``ts <= B - grace`` in (ts, key bytes, arrival)
      order.

    Rows in the state: ``(ts, key bytes, seq) -> GraceBuffered``.
    """

    def __init__(self, log: StateLog, task: int, grace_ms: int) -> None:
        self._log = log
        self.store = StoreId(task, GRACE_BUFFER)
        self.grace_ms = grace_ms
        self._clock = Clock(log, task)
        self._rows: list[tuple[tuple[int, bytes, int], GraceBuffered]] = []
        self._seq = itertools.count()
        log.declare(self.store)

    @property
    def stream_time(self) -> int | None:
        return self._clock.get("grace buffer stream time")

    def put(self, record: GraceBuffered) -> bool:
        stream_time = self.stream_time
        if stream_time is not None and stream_time - self.grace_ms > record.ts:
            return False
        self._clock.advance("grace buffer stream time", record.ts)
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


class SubscriptionStore:
    """The right task's subscription store of a foreign-key join.

    Keyed by ``CombinedKey(fk, pk)`` in Kafka's byte order (``[len(fk)][fk][pk]``), so a
    prefix scan for one foreign key returns exactly its subscribers, in primary-key byte
    order. Rows in the state: ``CombinedKey -> (SubscriptionWrapper, ts)``.
    """

    def __init__(self, log: StateLog, task: int) -> None:
        self._log = log
        self.store = StoreId(task, SUBSCRIPTIONS)
        self._rows: dict[Any, tuple[Any, int]] = {}
        log.declare(self.store)

    def put(self, combined_key: Any, wrapper: Any, ts: int) -> None:
        self._rows[combined_key] = (wrapper, ts)
        self._log.put(self.store, combined_key, (wrapper, ts))

    def delete(self, combined_key: Any) -> bool:
        existed = self._rows.pop(combined_key, None) is not None
        self._log.delete(self.store, combined_key)
        return existed

    def prefix_scan(self, prefix: tuple[int, bytes]) -> list[tuple[Any, Any, int]]:
        """``(combined key, wrapper, ts)`` of every subscription whose prefix is exactly ``prefix``."""
        found = [(ck, row[0], row[1]) for ck, row in self._rows.items() if ck.prefix() == prefix]
        return sorted(found, key=lambda item: item[0].sort_key())


class InFlightMessages:
    """Messages sent between tasks and not yet delivered, one queue per (topic, partition).

    Kafka delivers a topic partition in order; between partitions (and topics) any
    interleaving can happen. Rows in the state of the destination task: ``id -> Message``.
    """

    def __init__(self, log: StateLog, partitions: int) -> None:
        self._log = log
        self._queues: dict[tuple[str, int], list[Any]] = {}
        self._seq = itertools.count(1)
        for task in range(partitions):
            log.declare(StoreId(task, IN_FLIGHT))

    def next_id(self) -> str:
        return f"m{next(self._seq)}"

    def send(self, message: Any) -> None:
        self._queues.setdefault((message.topic, message.partition), []).append(message)
        self._log.put(StoreId(message.partition, IN_FLIGHT), message.id, message)

    def __len__(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    def heads(self) -> list[Any]:
        """The next deliverable message of every non-empty queue, oldest first."""
        return sorted((queue[0] for queue in self._queues.values() if queue), key=lambda m: m.seq)

    def pending(self) -> list[Any]:
        """Every message in flight, oldest first."""
        return sorted((m for queue in self._queues.values() for m in queue), key=lambda m: m.seq)

    def take(self, message: Any) -> None:
        """Remove ``message``, which must be the head of its queue."""
        queue = self._queues[(message.topic, message.partition)]
        if queue[0] is not message:
            raise ValueError(f"{message.id} is behind {queue[0].id} in {message.topic} partition {message.partition}")
        queue.pop(0)
        self._log.delete(StoreId(message.partition, IN_FLIGHT), message.id)


# -- record caches (KIP-63): what a caching store holds back until the next commit ---------

@dataclass(frozen=True)
class CachedUpdate:
    """One dirty entry of a record cache: the latest update of a key since the last commit.

    ``item`` is what will be forwarded (a source table's record, or a join result);
    ``old`` the store's value before the first update since the last commit (what a
    flushed ``Change`` carries as old value); ``replaced`` how many earlier updates of the
    key this one overwrote.
    """

    key: Any
    item: Any
    new: Any
    ts: int
    old: Any
    step: int
    replaced: int


class RecordCache:
    """A caching store's dirty entries (Kafka's ``CachingKeyValueStore`` over a ``NamedCache``).

    Reads see the newest value at once (the table store itself is updated); only the
    forwarding waits. A commit flushes the entries in the order their keys were last
    written, one per key. Rows in the state: ``key -> (new value, ts, step, replaced)``.
    """

    def __init__(self, log: StateLog, task: int, name: str) -> None:
        self._log = log
        self.store = StoreId(task, name)
        self._dirty: dict[Any, CachedUpdate] = {}
        log.declare(self.store)

    def __len__(self) -> int:
        return len(self._dirty)

    def put(self, key: Any, item: Any, new: Any, ts: int, old_before: Any, step: int) -> CachedUpdate:
        earlier = self._dirty.pop(key, None)  # re-added below: dirty order is the order of last writes
        entry = CachedUpdate(key, item, new, ts, old_before if earlier is None else earlier.old, step, 0 if earlier is None else earlier.replaced + 1)
        self._dirty[key] = entry
        self._log.put(self.store, key, (new, ts, step, entry.replaced))
        return entry

    def holds_step(self, step: int) -> bool:
        """Does a dirty entry come from ``step``'s record?"""
        return any(entry.step == step for entry in self._dirty.values())

    def flush(self) -> list[CachedUpdate]:
        """Every dirty entry, in flush order; the cache is clean afterwards."""
        entries = list(self._dirty.values())
        for key in self._dirty:
            self._log.delete(self.store, key)
        self._dirty.clear()
        return entries
