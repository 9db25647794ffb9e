"""The state stores a join keeps, each writing every change through the run's StateLog.

One module per kind of store; each store class describes its own rows (``header`` and
``rows()``, see :mod:`kjoin.stores.base`), so the trace and the widgets read them without
knowing their layout:

* :mod:`~kjoin.stores.clock`: :class:`Clock`, the task's stream time and the other
  per-task times the join keeps.
* :mod:`~kjoin.stores.window`: :class:`WindowStore`, one side's stream records of a
  stream-stream join, kept for the store's retention (before + after + grace).
* :mod:`~kjoin.stores.outer_buffer`: :class:`OuterJoinBuffer`, the 3.1+ store of
  left/outer records still waiting for a partner, in Kafka's order.
* :mod:`~kjoin.stores.table`: :class:`TableStore`, a KTable's materialized view.
* :mod:`~kjoin.stores.global_table`: :class:`GlobalTableStore`, a GlobalKTable's whole topic, one
  store every task reads.
* :mod:`~kjoin.stores.versioned`: :class:`VersionedStore` (every version within history
  retention) and :class:`GraceBuffer` (stream records a stream-table join holds for its grace).
* :mod:`~kjoin.stores.subscriptions`: :class:`SubscriptionStore`, a foreign-key join's
  subscriptions on the right side. (The messages between tasks travel through
  :class:`kjoin.joins.fk_transport.InFlightMessages`, a transport rather than a store.)
* :mod:`~kjoin.stores.record_cache`: :class:`RecordCache`, the updates a caching store
  holds back until the next commit.

The windowed-table design's aggregates and windowed tables (:func:`describe_store` reads any of their stores for a
stepper):

* :mod:`~kjoin.stores.aggregate`: :class:`AggregateStore`, a KTable aggregate's result.
* :mod:`~kjoin.stores.repartition`: :class:`RepartitionTopic`, what a group-by wrote to its repartition topic.
* :mod:`~kjoin.stores.segmented_window`: :class:`SegmentedWindowStore`, a windowed aggregate's store in time
  segments (:class:`SegmentLayout`).
* :mod:`~kjoin.stores.session`: :class:`SessionStore`, a session-windowed aggregate's sessions.
* :mod:`~kjoin.stores.suppression`: :class:`SuppressionStore`, the updates ``suppress(untilWindowCloses)`` holds.
* :mod:`~kjoin.stores.hopping_window`: what a hopping-window join's records mean in a snapshot.
"""

from typing import Any

from .aggregate import AggregateStore, AggregateStoreKind
from .base import STORE_KINDS, Store, StoreKind, kind_of, sort_key, type_then_value
from .clock import CLOCK, STREAM_TIME, Clock, observed_time_name
from .global_table import GLOBAL_TABLE, GLOBAL_TASK, GlobalTableStore
from .outer_buffer import OUTER_BUFFER, BufferedRecord, OuterJoinBuffer
from .hopping_window import HOPPING_WINDOW, HoppingWindowKind
from .record_cache import CachedUpdate, RecordCache
from .repartition import RepartitionRecord, RepartitionTopic, RepartitionTopicKind
from .segmented_window import (
    KAFKA_MIN_SEGMENT_INTERVAL_MS,
    SegmentedWindowStore,
    SegmentLayout,
    SegmentsKind,
    WindowAggregateStoreKind,
    storage_overhead,
)
from .subscriptions import SUBSCRIPTIONS, SubscriptionStore
from .table import TableStore, table_store_name
from .versioned import (
    GRACE_BUFFER,
    GRACE_STREAM_TIME,
    GraceBuffer,
    GraceBuffered,
    PutResult,
    VersionedStore,
    versioned_store_name,
)
from .window import WindowStore, window_store_name
from ..records import Side
from ..state import StoreId

IN_FLIGHT = "in flight"
"""Where a foreign-key join's messages on their way to a task appear in that task's state
(written by :class:`kjoin.joins.fk_transport.InFlightMessages`)."""

STORE_ORDER = (
    CLOCK,
    *(window_store_name(side) for side in Side),
    OUTER_BUFFER,
    *(name(side) for side in Side for name in (table_store_name, versioned_store_name)),
    GRACE_BUFFER,
    SUBSCRIPTIONS,
    IN_FLIGHT,
)
"""The order of a task's stores wherever they are listed: a foreign-key join reads left
table, right table, subscription store, then the messages on their way. Other stores
(chained joins, result tables, caches) follow by name."""


def store_order(store: StoreId) -> tuple[int, int, str]:
    """Sort key of a store: by task, then :data:`STORE_ORDER`, then name."""
    rank = STORE_ORDER.index(store.name) if store.name in STORE_ORDER else len(STORE_ORDER)
    return (store.task, rank, store.name)


__all__ = [
    "Store",
    "StoreKind",
    "STORE_KINDS",
    "kind_of",
    "sort_key",
    "STORE_ORDER",
    "store_order",
    "IN_FLIGHT",
    "Clock",
    "CLOCK",
    "STREAM_TIME",
    "observed_time_name",
    "WindowStore",
    "window_store_name",
    "OuterJoinBuffer",
    "BufferedRecord",
    "OUTER_BUFFER",
    "TableStore",
    "table_store_name",
    "GlobalTableStore",
    "GLOBAL_TABLE",
    "GLOBAL_TASK",
    "VersionedStore",
    "PutResult",
    "versioned_store_name",
    "GraceBuffer",
    "GraceBuffered",
    "GRACE_BUFFER",
    "GRACE_STREAM_TIME",
    "SubscriptionStore",
    "SUBSCRIPTIONS",
    "RecordCache",
    "CachedUpdate",
    "AggregateStore",
    "RepartitionRecord",
    "RepartitionTopic",
    "SegmentedWindowStore",
    "SegmentLayout",
    "storage_overhead",
    "KAFKA_MIN_SEGMENT_INTERVAL_MS",
    "HOPPING_WINDOW",
    "type_then_value",
    "AGGREGATE_KINDS",
    "describe_store",
]

AGGREGATE_KINDS = (AggregateStoreKind, RepartitionTopicKind, WindowAggregateStoreKind, SegmentsKind, HoppingWindowKind)
"""The store kinds of aggregates, windowed tables and hopping-window joins."""


def describe_store(name: str, entries: dict[Any, Any]) -> tuple[tuple[str, ...], list[tuple]]:
    """``(header, rows)`` of a store of an aggregate or WTable trace, from a snapshot's entries.

    For a stepper: ``describe_store(store.name, trace.state_at(i).stores[store])`` for every
    store of ``trace.state_at(i).stores``. Knows the windowed-table design's stores (aggregate, repartition topic,
    segmented window store and its segments), and the source tables, clocks and hopping-join windows these traces also
    keep.
    """
    if name.endswith("window aggregate store segments"):
        return SegmentedWindowStore.segment_header, SegmentedWindowStore.segment_rows_from(entries)
    if name.endswith("window aggregate store"):
        return SegmentedWindowStore.header, SegmentedWindowStore.rows_from(entries)
    if name.endswith("aggregate store"):
        return AggregateStore.header, AggregateStore.rows_from(entries)
    if name.endswith("repartition topic"):
        return RepartitionTopic.header, RepartitionTopic.rows_from(entries)
    if name.endswith("clock"):
        return ("time", "ms"), sorted(entries.items())
    if name.endswith("hopping window"):
        ordered = sorted(entries.items(), key=lambda item: (type_then_value(item[0][0]), item[0][1], item[0][2]))
        return ("key", "ts", "value"), [(key, ts, value) for (key, ts, _), value in ordered]
    if name.endswith("table"):
        ordered = sorted(entries.items(), key=lambda item: type_then_value(item[0]))
        return ("key", "value", "ts"), [(key, row[0], row[1]) for key, row in ordered]
    raise ValueError(f"no description for store {name!r}")
