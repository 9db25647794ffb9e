"""Windowed aggregates of a stream: ``stream.groupByKey().windowedBy(TimeWindows...).aggregate(...)``.

The result is a *WTable*: a table keyed by (aggregation key, window), partitioned by the
aggregation key alone, so that every window of a key lives in one task and a join can look up
another window of the same key there (today's page views against last week's).

How it works (Kafka's ``KStreamWindowAggregate``; one instance per task):

* A record with a null key is skipped before stream time is read. A null value is not
  skipped (``Semantics.windowed_aggregate_counts_null_values``, every Kafka version): it
  advances stream time and reaches the aggregator, so ``count()`` counts it.
* Stream time is the largest timestamp the processor has seen (its own, per task).
* The record belongs to every window ``[start, start + size)`` with ``start`` a multiple of
  ``advance`` and ``start <= ts < start + size`` (tumbling: ``advance == size``, one window).
* A window is *closed* once ``window end + grace <= stream time``; a record for a closed window
  is skipped for that window ("Skipping record for expired window"). A record whose windows
  are all closed is dropped (``expired-window``); one with some open windows updates those.
* An open window's aggregate is read (the initializer if absent), the aggregator applied, and
  ``Change(new, old)`` forwarded for ``Windowed(key, window)`` with ``max(ts, aggregate ts)``.
* The store keeps ``size + grace`` (Kafka's default retention) in segments (see
  :mod:`kjoin.stores.segmented_window`). A lookup (a join's value getter) finds nothing for a window
  behind the retention in Kafka 3.4+ (``Semantics.window_store_hides_expired``).

Windows are shown as Kafka prints them: ``[start, end)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ..stores.segmented_window import SegmentedWindowStore, SegmentLayout
from ..fates import Fate, Reason
from ..records import Record, render_value
from ..semantics import Semantics, parse_semantics
from ..state import StateLog
from ..stores import Clock
from ..stores.window import MAINTAIN_MS
from .aggregate import AggregateOutput, Aggregation, AggregationError
from .context import StepContext
from ..times import at

__all__ = [
    "Window",
    "Windowed",
    "TimeWindows",
    "WindowAggregate",
    "WTable",
    "WTableWriteError",
    "STREAM_TIME",
    "DAY_MS",
    "WEEK_MS",
    "window_aggregate_factory",
]

DAY_MS = 24 * 60 * 60 * 1000
WEEK_MS = 7 * DAY_MS

STREAM_TIME = "stream time"


@dataclass(frozen=True, order=True, slots=True)
class Window:
    """A time window ``[start_ms, end_ms)``: start inclusive, end exclusive."""

    start_ms: int
    end_ms: int

    def __str__(self) -> str:
        return f"[{self.start_ms}, {self.end_ms})"

    def shifted(self, by_ms: int) -> "Window":
        return Window(self.start_ms + by_ms, self.end_ms + by_ms)

    def to_dict(self) -> dict[str, int]:
        return {"start_ms": self.start_ms, "end_ms": self.end_ms}


@dataclass(frozen=True, slots=True)
class Windowed:
    """A WTable key: the aggregation key and a window (Kafka's ``Windowed<K>``)."""

    key: Any
    window: Window

    def __str__(self) -> str:
        return f"{render_value(self.key)}@{self.window}"


@dataclass(frozen=True)
class TimeWindows:
    """Tumbling (``advance_ms`` = ``size_ms``, the default) or hopping windows, with ``grace_ms``."""

    size_ms: int
    advance_ms: int | None = None
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.size_ms <= 0:
            raise ValueError(f"size_ms must be positive, not {self.size_ms}")
        if not 0 < self.advance <= self.size_ms:
            raise ValueError(
                f"advance_ms must lie within (0, {self.size_ms}] (Kafka's TimeWindows), not {self.advance_ms}"
            )
        if self.grace_ms < 0:
            raise ValueError(f"grace_ms must not be negative, not {self.grace_ms}")

    @property
    def advance(self) -> int:
        return self.size_ms if self.advance_ms is None else self.advance_ms

    @property
    def hopping(self) -> bool:
        return self.advance < self.size_ms

    @property
    def retention_ms(self) -> int:
        """Kafka's default retention of a windowed aggregate's store: ``size + grace``."""
        return self.size_ms + self.grace_ms

    def store_retention_ms(self, semantics: Semantics, *, settable: str | None = None) -> int:
        """The store's retention when the application sets none (``Materialized.withRetention``): ``size + grace``
        from 3.0 (``Semantics.window_retention_size_and_grace``, KAFKA-7106); before, the deprecated
        ``Windows.maintainMs()``: one day, or the size if larger, which Kafka refuses below ``size + grace``.
        ``settable``: the field a caller lets its user set the retention with (a scenario's ``retention_ms``), named in
        the refusal; a topology node has none."""
        if semantics.window_retention_size_and_grace:
            return self.retention_ms
        retention = max(MAINTAIN_MS, self.size_ms)
        if retention < self.retention_ms:
            remedies = ([f"set {settable}"] if settable else []) + ["choose a shorter grace or semantics 3.0 or later"]
            raise ValueError(
                f"window size {self.size_ms} + grace {self.grace_ms} is more than the store's retention {retention} "
                f"(Windows.maintainMs before 3.0), and Kafka {semantics} refuses it; {', '.join(remedies)}"
            )
        return retention

    def layout(self, retention_ms: int | None = None, segments: int | None = None) -> SegmentLayout:
        """The window store's segments: ``retention_ms`` (default ``size + grace``; Kafka refuses less)
        cut as Kafka does, or into the seed's ``segments`` rolling stores."""
        retention = self.retention_ms if retention_ms is None else retention_ms
        if retention < self.retention_ms:
            raise ValueError(
                f"retention_ms {retention} is smaller than window size {self.size_ms} + grace {self.grace_ms}: "
                "Kafka refuses a window store that would drop windows still open"
            )
        return SegmentLayout.kafka(retention) if segments is None else SegmentLayout.rolling(retention, segments)

    def windows_for(self, ts: int) -> list[Window]:
        """Every window containing ``ts``, oldest first (Kafka's ``TimeWindows.windowsFor``)."""
        start = (max(0, ts - self.size_ms + self.advance) // self.advance) * self.advance
        found = []
        while start <= ts:
            found.append(Window(start, start + self.size_ms))
            start += self.advance
        return found

    def is_closed(self, window: Window, stream_time: int | None) -> bool:
        """``window end + grace <= stream time``: the window takes no more records."""
        return stream_time is not None and window.end_ms + self.grace_ms <= stream_time

    def describe(self) -> str:
        kind = (
            f"hopping windows of {self.size_ms} ms advancing by {self.advance}"
            if self.hopping
            else f"tumbling windows of {self.size_ms} ms"
        )
        return f"{kind}, grace {self.grace_ms} ms"


class WTableWriteError(TypeError):
    """A WTable was written to a topic: the seed's API has no ``to()``/``through()`` for it."""


class WindowAggregate:
    """One task's windowed aggregate: its stream time and its segmented window store.

    ``on_update(output, ctx)`` is called with every aggregate update (a WTable join hangs
    itself there); by default updates are forwarded as the step's outputs.
    """

    def __init__(
        self,
        log: StateLog,
        task: int,
        windows: TimeWindows,
        aggregation: Aggregation,
        prefix: str = "",
        layout: SegmentLayout | None = None,
        on_update: Callable[[AggregateOutput, StepContext], None] | None = None,
        semantics: Semantics | str | None = None,
    ) -> None:
        self.windows = windows
        self.aggregation = aggregation
        self.task = task
        self.semantics = parse_semantics(semantics)
        self.clock = Clock(log, task, f"{prefix}window aggregate clock")
        self.store = SegmentedWindowStore(
            log,
            task,
            f"{prefix}window aggregate store",
            windows.size_ms,
            layout or SegmentLayout.kafka(windows.retention_ms),
            strict_retention=self.semantics.window_store_hides_expired,
        )
        self.on_update = on_update or (lambda output, ctx: ctx.forward(output))
        self.prefix = prefix

    @property
    def stream_time(self) -> int | None:
        return self.clock.get(STREAM_TIME)

    def get(self, key: Any, window: Window) -> tuple[Any, int] | None:
        """The WTable's value getter: ``(aggregate, ts)`` of ``key`` in ``window``, or ``None``."""
        return self.store.fetch(key, window.start_ms)

    def found(self, key: Any, window: Window, found: tuple[Any, int] | None) -> str:
        """What a lookup of ``key`` in ``window`` found, in words: ``agg@ts``, ``nothing``, or why nothing
        though the store holds the window (it is behind the retention)."""
        if found is not None:
            return at(render_value(found[0]), found[1])
        hidden = self.store.hidden(key, window.start_ms)
        return "nothing" if hidden is None else f"nothing ({hidden})"

    def windows_of(self, key: Any) -> list[tuple[Window, Any, int]]:
        return [(Window(start, end), agg, ts) for start, end, agg, ts in self.store.windows_of(key)]

    def process(self, record: Record, ctx: StepContext) -> None:
        if record.key is None:
            ctx.drop(Reason.NULL_KEY, lambda: f"{record.describe()} has a null key: skipped, stream time not advanced.")
            return
        if record.value is None:
            if not self.semantics.windowed_aggregate_counts_null_values:  # pragma: no cover - no known version
                ctx.drop(Reason.NULL_VALUE, lambda: f"{record.describe()} has a null value: the aggregate skips it.")
                return
            ctx.note(
                f"{record.describe()} has a null value: a windowed aggregate skips only null keys, so the "
                f"{self.aggregation.name} aggregator gets it (Kafka {self.semantics})."
            )
        stream_time = self.clock.advance(STREAM_TIME, record.ts)
        open_windows, closed = [], []
        for window in self.windows.windows_for(record.ts):
            (closed if self.windows.is_closed(window, stream_time) else open_windows).append(window)
        for window in closed:
            ctx.note(
                lambda w=window: (
                    f"{self.prefix}Window {w} closed at {w.end_ms} + grace {self.windows.grace_ms} <= stream time "
                    f'{stream_time}: skipped for it ("Skipping record for expired window").'
                )
            )
        if not open_windows:
            ctx.drop(
                Reason.EXPIRED_WINDOW,
                lambda: (
                    f"{record.describe()} is late: every window it belongs to "
                    f"({', '.join(map(str, closed))}) has closed "
                    f"(stream time {stream_time}, grace {self.windows.grace_ms})."
                ),
            )
            return
        updated = [self._update(window, record, ctx) for window in open_windows]
        ctx.settle(
            Fate.JOINED,
            None,
            lambda: (
                f"{record.describe()} updated {self.prefix}window(s) {', '.join(updated)} (stream time {stream_time})."
            ),
        )

    def _update(self, window: Window, record: Record, ctx: StepContext) -> str:
        found = self.store.fetch(record.key, window.start_ms)
        old = None if found is None else found[0]
        ts = record.ts if found is None else max(record.ts, found[1])
        try:
            new = self.aggregation.add(record.key, record.value, old)
        except AggregationError as error:
            raise AggregationError(f"events[{record.offset}] ({record.describe()}): {error}") from None
        stored = self.store.put(record.key, window.start_ms, new, ts)
        forwarded_old = old
        if found is None and not self.aggregation.is_reduce:
            forwarded_old = self.aggregation.initializer()  # Kafka's old value of a new window: the initializer's
        if self.store.dropped:
            dropped, observed = list(self.store.dropped), self.store.observed_ms  # as they are at this step
            ctx.note(
                lambda: (
                    f"The {self.store.name} rolled: segment(s) {', '.join(map(str, dropped))} dropped whole "
                    f"(older than observed {observed} - retention {self.store.layout.retention_ms})."
                )
            )
        if not stored:  # pragma: no cover - retention >= size + grace keeps open windows' segments alive
            ctx.note(f"Window {window}: its segment has expired; the update is not stored.")
        self.on_update(
            AggregateOutput(
                record.key,
                new,
                forwarded_old,
                ts,
                False,
                "window",
                self.task,
                ctx.index,
                (window.start_ms, window.end_ms),
            ),
            ctx,
        )
        return f"{window}: {render_value(old)} -> {render_value(new)}"


class WTable:
    """A finished windowed aggregate's result: its changelog and its materialized rows.

    A WTable cannot be written to a topic (:meth:`to` and :meth:`through` raise
    :class:`WTableWriteError`); :meth:`to_stream` converts it with a user function
    ``(key, value, window) -> (key1, value1)``, e.g. ``(K, W) -> K1`` to read it back as a table.
    """

    def __init__(self, changelog: Iterable[AggregateOutput]) -> None:
        self.changelog = [o for o in changelog if o.window is not None]

    def materialize(self) -> dict[Windowed, Any]:
        """``Windowed(key, window) -> aggregate`` after the last update."""
        rows: dict[Windowed, Any] = {}
        for output in self.changelog:
            assert output.window is not None
            rows[Windowed(output.key, Window(*output.window))] = output.value
        return rows

    def to(self, topic: str) -> None:
        raise WTableWriteError(
            f"cannot write a WTable to topic {topic!r}: a WTable is keyed by (key, window) but partitioned by the key "
            "alone, so no topic can hold it. Convert it first: "
            "wtable.to_stream(lambda key, value, window: (key1, value1)), e.g. (key, window) -> key1 to read it "
            "back as a table, or key -> key1 with (value, window) -> value1 to join by key."
        )

    def through(self, topic: str) -> None:
        self.to(topic)

    def to_stream(self, conversion: Callable[[Any, Any, Window], tuple[Any, Any]]) -> list[tuple[Any, Any, int]]:
        """Every update as a KStream record ``(key1, value1, ts)``, in changelog order."""
        stream = []
        for output in self.changelog:
            assert output.window is not None
            key1, value1 = conversion(output.key, output.value, Window(*output.window))
            stream.append((key1, value1, output.ts))
        return stream


def window_aggregate_factory(
    windows: TimeWindows,
    aggregation: Aggregation,
    retention_ms: int | None = None,
    segments: int | None = None,
    semantics: Semantics | str | None = None,
) -> Callable[[StateLog, int], WindowAggregate]:
    """``(log, task) -> processor`` of one task of a windowed aggregate (the Spark engine builds
    its tasks with it, so both engines run the same processors)."""
    rules = parse_semantics(semantics)
    retention = windows.store_retention_ms(rules, settable="retention_ms") if retention_ms is None else retention_ms
    layout = windows.layout(retention, segments)
    return lambda log, task: WindowAggregate(log, task, windows, aggregation, layout=layout, semantics=rules)
