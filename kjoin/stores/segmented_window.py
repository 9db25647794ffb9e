"""A windowed aggregate's store (the WTable's materialization; the sliding aggregate's too), writing every change
through the StateLog: :class:`SegmentedWindowStore`, ``(key, window start) -> (aggregate, ts)``, kept in time
segments (:class:`SegmentLayout`) that roll with the store's observed stream time and are dropped whole once they
fall behind the retention. It follows the store contract of the house (``header``, ``rows()``, and a static
``rows_from(entries)`` decoding the same rows from a snapshot's entries).

How segments work (Kafka's ``AbstractRocksDBSegmentedBytesStore`` over ``KeyValueSegments``):

* A record put at timestamp ``t`` (for a windowed aggregate: the window start) lives in
  segment ``t // segment_interval_ms``.
* The store's observed stream time is the largest timestamp ever put. Segments whose id is
  below ``(observed - retention) // segment_interval_ms`` are dropped whole, and a put into
  such a segment is refused ("Skipping record for expired segment").
* A read (Kafka 3.4+, KAFKA-12960) skips every window starting at or before ``observed -
  retention``, even while its segment lives; before 3.4 the default (RocksDB) store finds it
  until its segment is dropped. ``Semantics.window_store_hides_expired`` says which.
* Kafka's default interval is ``max(retention / 2, 60 s)``. The seed's design instead rolls
  ``n`` stores, each covering ``retention / (n - 1)``: the oldest store can be dropped only
  when all of its records are expired, so up to ``n / (n - 1)`` times the retention is kept
  (2 stores: 2x, 3 stores: 1.5x). :func:`storage_overhead` computes that factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..state import StateLog, StoreId
from .base import StoreKind, type_then_value

__all__ = [
    "SegmentedWindowStore",
    "SegmentLayout",
    "storage_overhead",
    "KAFKA_MIN_SEGMENT_INTERVAL_MS",
    "WindowAggregateStoreKind",
    "SegmentsKind",
]

KAFKA_MIN_SEGMENT_INTERVAL_MS = 60_000
"""Kafka's window stores never use segments shorter than a minute (``max(retention / 2, 60 s)``)."""


def storage_overhead(segments: int) -> float:
    """The storage a rolling layout of ``segments`` stores needs, as a multiple of the retention.

    Each store covers ``retention / (segments - 1)``; the oldest can be dropped only once all of
    its records have expired, so up to ``segments`` stores are alive: ``segments / (segments - 1)``.
    """
    if segments < 2:
        raise ValueError(f"a rolling layout needs at least 2 segments, not {segments}")
    return segments / (segments - 1)


@dataclass(frozen=True)
class SegmentLayout:
    """How a window store is cut into segments: ``retention_ms`` and ``segment_interval_ms``.

    :meth:`kafka` is Kafka's default (``max(retention / 2, 60 s)``); :meth:`rolling` the seed's
    ``n`` rolling stores (interval ``retention / (n - 1)``, rounded up).
    """

    retention_ms: int
    segment_interval_ms: int

    def __post_init__(self) -> None:
        if self.retention_ms <= 0 or self.segment_interval_ms <= 0:
            raise ValueError(f"retention_ms and segment_interval_ms must be positive: {self}")

    @classmethod
    def kafka(cls, retention_ms: int) -> "SegmentLayout":
        return cls(retention_ms, max(retention_ms // 2, KAFKA_MIN_SEGMENT_INTERVAL_MS))

    @classmethod
    def rolling(cls, retention_ms: int, segments: int) -> "SegmentLayout":
        storage_overhead(segments)  # validates
        return cls(retention_ms, math.ceil(retention_ms / (segments - 1)))

    def segment_of(self, ts: int) -> int:
        return ts // self.segment_interval_ms

    @property
    def max_live_segments(self) -> int:
        """The most segments alive at once: ``retention / interval + 1`` (Kafka's ``numSegments``)."""
        return self.retention_ms // self.segment_interval_ms + 1

    @property
    def overhead(self) -> float:
        """The most time the live segments can cover, as a multiple of the retention."""
        return self.max_live_segments * self.segment_interval_ms / self.retention_ms


class SegmentedWindowStore:
    """A windowed aggregate's store: ``(key, window start) -> (aggregate, ts)`` in time segments.

    How it works:

    * :meth:`put` advances the store's observed stream time to the window start, drops every
      segment now entirely behind ``observed - retention``, and refuses a put into a dropped
      segment (returns ``False``).
    * :meth:`fetch` reads one window of one key; :meth:`windows_of` every live window of a key
      (a prefix scan: the WTable is partitioned by the key alone, so all of a key's windows
      are in this task). With ``strict_retention`` (Kafka 3.4+, KAFKA-12960) a read skips a
      window starting at or before ``observed - retention`` even while its segment lives
      (:meth:`behind_retention`; :meth:`hidden` says why in words); before 3.4 a read finds it
      until its segment is dropped.
    * ``time_first``: the time-ordered store of an emit-final aggregate
      (``RocksDbIndexedTimeOrderedWindowBytesStoreSupplier``), whose 3.4+ check
      (``AbstractDualSchemaRocksDBSegmentedBytesStore.get`` and ``fetch`` with a
      ``TimeFirstWindowKeySchema``) hides only a window starting *before* ``observed - retention``:
      one millisecond less than a key-first store, for a value getter's point read as for a range read.

    Rows in the state: ``(key, window start) -> (aggregate, ts, window end, segment)``; the
    segments themselves are a second store, ``<name> segments``: ``segment -> (range, first ms,
    records)``, so a stepper sees which segment holds which record and when one is dropped.
    """

    header = ("key", "window", "value", "ts", "segment")
    segment_header = ("segment", "range", "records")

    def __init__(
        self,
        log: StateLog,
        task: int,
        name: str,
        size_ms: int,
        layout: SegmentLayout,
        strict_retention: bool = True,
        time_first: bool = False,
    ) -> None:
        self._log = log
        self.strict_retention = strict_retention
        """Kafka 3.4+ (``Semantics.window_store_hides_expired``): reads hide a window behind the retention."""
        self.time_first = time_first
        """An emit-final aggregate's time-ordered store: a read keeps a window starting at ``observed - retention``."""
        self.name = name
        self.store = StoreId(task, name, WindowAggregateStoreKind.kind)
        self.segment_store = StoreId(task, f"{name} segments", SegmentsKind.kind)
        self.size_ms = size_ms
        self.layout = layout
        self.observed_ms: int | None = None
        self._rows: dict[tuple[Any, int], tuple[Any, int, int, int]] = {}
        self._starts: dict[tuple[str, Any], set[int]] = {}
        """The window starts of each key (by type and value: 1 and True are two keys), so that a
        read of one key's windows never scans the whole store."""
        self._segments: dict[int, set[tuple[Any, int]]] = {}
        self.dropped: list[int] = []
        """Segments dropped by the last :meth:`put` (for the step's explanation)."""
        log.declare(self.store)
        log.declare(self.segment_store)

    # -- read ---------------------------------------------------------------------------
    def fetch(self, key: Any, start_ms: int) -> tuple[Any, int] | None:
        """``(aggregate, ts)`` of ``key``'s window starting at ``start_ms``, or ``None`` (also for a window
        :meth:`behind_retention`)."""
        if self.behind_retention(start_ms):
            return None
        row = self._rows.get((key, start_ms))
        return None if row is None else (row[0], row[1])

    def windows_of(self, key: Any) -> list[tuple[int, int, Any, int]]:
        """Every live window of ``key`` a read can see: ``(start, end, aggregate, ts)`` by start."""
        found = []
        for start in self._starts.get(_by_type(key), ()):
            if not self.behind_retention(start):
                row = self._rows[(key, start)]
                found.append((start, row[2], row[0], row[1]))
        return sorted(found)

    def all_windows(self) -> list[tuple[Any, int, Any, int]]:
        """Every window a read can see, of every key: ``(key, start, aggregate, ts)`` (an emit-final range read
        orders them itself)."""
        return [
            (key, start, row[0], row[1]) for (key, start), row in self._rows.items() if not self.behind_retention(start)
        ]

    def behind_retention(self, start_ms: int) -> bool:
        """Kafka 3.4+ (KAFKA-12960): a read hides the window starting at ``start_ms`` when ``start_ms <= observed
        - retention`` (``start_ms < observed - retention`` in a ``time_first`` store), though its segment may still
        live; before 3.4 a read finds it until its segment drops."""
        observed = self.observed_ms
        if not self.strict_retention or observed is None:
            return False
        bound = observed - self.layout.retention_ms
        return start_ms < bound if self.time_first else start_ms <= bound

    def hidden(self, key: Any, start_ms: int) -> str | None:
        """Why a read of ``key``'s window at ``start_ms`` finds nothing though the store still holds it (the
        window is behind the retention), in plain words; ``None`` when the read is not hidden."""
        row = self._rows.get((key, start_ms))
        if row is None or not self.behind_retention(start_ms):
            return None
        return (
            f"{self.name} still holds window [{start_ms}, {row[2]}) (segment {row[3]}), but it starts "
            f"{'before' if self.time_first else 'at or before'} "
            f"observed {self.observed_ms} - retention {self.layout.retention_ms} = "
            f"{self.observed_ms - self.layout.retention_ms}: behind the retention, so reads skip it (Kafka 3.4+)"
        )

    def min_live_segment(self) -> int | None:
        if self.observed_ms is None:
            return None
        return self.layout.segment_of(self.observed_ms - self.layout.retention_ms)

    # -- write --------------------------------------------------------------------------
    def put(self, key: Any, start_ms: int, value: Any, ts: int) -> bool:
        """Store ``key``'s aggregate for the window at ``start_ms``; ``False`` if its segment expired."""
        self.dropped = []
        self.observed_ms = start_ms if self.observed_ms is None else max(self.observed_ms, start_ms)
        min_live = self.min_live_segment()
        assert min_live is not None
        for segment in sorted(s for s in self._segments if s < min_live):
            self._drop(segment)
        segment = self.layout.segment_of(start_ms)
        if segment < min_live:
            return False
        entry = (key, start_ms)
        if value is None:  # Kafka's window stores delete on a null value (a reduce whose first value was null)
            self._remove(entry)
            return True
        self._rows[entry] = (value, ts, start_ms + self.size_ms, segment)
        self._starts.setdefault(_by_type(key), set()).add(start_ms)
        self._log.put(self.store, entry, self._rows[entry])
        members = self._segments.setdefault(segment, set())
        members.add(entry)
        self._write_segment(segment)
        return True

    def _remove(self, entry: tuple[Any, int]) -> None:
        row = self._rows.pop(entry, None)
        if row is None:
            return
        starts = self._starts[_by_type(entry[0])]
        starts.discard(entry[1])
        if not starts:
            del self._starts[_by_type(entry[0])]
        self._log.delete(self.store, entry)
        members = self._segments[row[3]]
        members.discard(entry)
        self._write_segment(row[3])

    def _drop(self, segment: int) -> None:
        for entry in sorted(self._segments.pop(segment), key=lambda e: (type_then_value(e[0]), e[1])):
            del self._rows[entry]
            starts = self._starts[_by_type(entry[0])]
            starts.discard(entry[1])
            if not starts:
                del self._starts[_by_type(entry[0])]
            self._log.delete(self.store, entry)
        self._log.delete(self.segment_store, segment)
        self.dropped.append(segment)

    def _write_segment(self, segment: int) -> None:
        first = segment * self.layout.segment_interval_ms
        span = f"[{first}, {first + self.layout.segment_interval_ms})"
        self._log.put(self.segment_store, segment, (span, first, len(self._segments[segment])))

    # -- the store contract -------------------------------------------------------------
    def rows(self) -> list[tuple]:
        return self.rows_from(self._rows)

    @staticmethod
    def rows_from(entries: dict[Any, Any]) -> list[tuple]:
        ordered = sorted(entries.items(), key=lambda item: (type_then_value(item[0][0]), item[0][1]))
        return [(key, f"[{start}, {row[2]})", row[0], row[1], row[3]) for (key, start), row in ordered]

    def segment_rows(self) -> list[tuple]:
        return [
            (segment, f"[{first}, {first + self.layout.segment_interval_ms})", len(members))
            for segment, members in sorted(self._segments.items())
            for first in (segment * self.layout.segment_interval_ms,)
        ]

    @staticmethod
    def segment_rows_from(entries: dict[Any, Any]) -> list[tuple]:
        return [(segment, row[0], row[2]) for segment, row in sorted(entries.items())]


def _by_type(key: Any) -> tuple[str, Any]:
    """A key as an index entry: its type and value, so that keys equal in Python but of different
    types (1 and True) stay apart."""
    return type(key).__name__, key


# -- the kinds: what a snapshot's entries of these stores mean (kjoin.stores' contract) ----------
class WindowAggregateStoreKind(StoreKind):
    """``(key, window start) -> (aggregate, ts, window end, segment)``: rows by key, then window."""

    kind = "window aggregate store"
    header = SegmentedWindowStore.header

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        return (entry_key[0], f"[{entry_key[1]}, {stored[2]})", stored[0], stored[1], stored[3])

    @classmethod
    def summary(cls, record: Any, stored: Any = None) -> tuple[Any, Any, Any, Any]:
        return record["key"], record["ts"], record["value"], f"window {record['window']}, segment {record['segment']}"


class SegmentsKind(StoreKind):
    """``segment -> (range, first ms, records)``: one row per live segment."""

    kind = "window store segments"
    header = SegmentedWindowStore.segment_header

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        return (entry_key, stored[0], stored[2])

    @classmethod
    def summary(cls, record: Any, stored: Any = None) -> tuple[Any, Any, Any, Any]:
        return record["segment"], None, record["records"], f"range {record['range']}"
