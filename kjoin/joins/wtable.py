"""The WTable joins of the windowed-table design's API, each over a windowed aggregate built in the same task.

A WTable is only ever the result of a windowed aggregate, so each join here owns the
aggregate(s) of its WTable side(s): a WTable side's input events are stream records, and every
aggregate update (``Change(new, old)`` of ``Windowed(key, window)``) drives the join as a table
update does. A WTable is partitioned by the aggregation key alone, so every window of a key is
in the task of that key, and a lookup in *another* window of the key (a shifter, a selector)
stays local.

How each join works ("update" = an aggregate update or a table update; aggregates never
delete, so a WTable update always carries a value):

* ``wtable-wtable`` inner/left/outer, on the same window (result: WTable). An update of
  ``key@w`` looks up the other WTable at ``key@w`` and follows KTable-KTable rules (KIP-77):
  inner needs both; left emits for every left update (null when the right is missing) and
  for a right update only when the left has the window; outer emits for every update.
* ``wtable-wtable`` left with a window shifter ``W -> W`` (result: WTable keyed by the left
  window). A left update of ``key@w`` looks up the right at ``key@shift(w)``; a right update
  of ``key@w2`` re-joins every left window ``w`` of the key with ``shift(w) == w2``.
* ``wtable-table`` left (result: WTable). A left update of ``key@w`` looks up the table's
  ``key``; a table update (a delete too: ``joiner(agg, null)``) re-joins every live left
  window of the key.
* ``stream-wtable`` left with a window selector ``(K, V, ts) -> W`` (result: KStream). A stream
  record looks up the WTable at ``key@selector(...)``; WTable updates only change state.
* ``table-wtable`` left with a window selector (result: KTable, with tombstones). A table
  update looks up ``key@selector(key, value, ts)``; a delete emits a tombstone when the row
  existed. A WTable update of ``key@w`` emits only if the table's row of the key selects ``w``.

A result carries ``max(ts of the update, ts of the value found)`` (a stream-wtable result the
stream record's ts). Results of WTable type are keyed by :class:`Windowed`.

A lookup finds nothing for a window behind its store's retention (it starts at or before the
store's observed time minus the retention) in Kafka 3.4+ (``Semantics.window_store_hides_expired``),
though the store still holds it; the step says so, and a step left without an output gets the
reason ``behind-retention``. Before 3.4 the lookup finds the window until its segment is dropped.
"""

from __future__ import annotations

from typing import Any, Callable

from ..stores.segmented_window import SegmentLayout
from ..fates import Fate, Reason
from ..join_model import Variant
from ..records import OutputKind, Record, Side, render_value
from ..semantics import Semantics, parse_semantics
from ..state import StateLog
from ..stores import TableStore
from .aggregate import AggregateOutput, Aggregation, count, value_field
from .context import StepContext, drop_idempotent_update, drop_null_key_update
from .window_aggregate import TimeWindows, Window, WindowAggregate, Windowed
from ..times import at

__all__ = [
    "WTableWTableJoin",
    "WTableTableJoin",
    "StreamWTableJoin",
    "TableWTableJoin",
    "Shifter",
    "Selector",
    "shift_by",
    "select_by_timestamp",
    "select_by_field",
    "WTABLE_JOINS",
    "RESULT_TYPES",
    "wtable_join_factory",
]

Shifter = Callable[[Window], Window]
"""A window shifter: the window of the secondary WTable to look up for a primary window."""
Selector = Callable[[Any, Any, int], "Window | None"]
"""A window selector: ``(key, value, ts) -> window`` of the WTable to look up (``None``: none)."""

WTABLE_JOINS = ("wtable-wtable", "wtable-table", "stream-wtable", "table-wtable")
RESULT_TYPES = {
    "wtable-wtable": "WTable",
    "wtable-table": "WTable",
    "stream-wtable": "KStream",
    "table-wtable": "KTable",
}
"""The seed's result-type table for the joins with a WTable."""


def shift_by(ms: int) -> Shifter:
    """A shifter moving a window by ``ms`` (negative: back in time; one week back: ``-604800000``)."""

    def shift(window: Window) -> Window:
        return window.shifted(ms)

    shift.__doc__ = f"shift by {ms} ms"
    return shift


def _newest_window(windows: TimeWindows, ts: int | None) -> Window | None:
    if ts is None or not isinstance(ts, int) or ts < 0:
        return None
    return windows.windows_for(ts)[-1]


def select_by_timestamp(windows: TimeWindows) -> Selector:
    """Select the window containing the record's own timestamp (the newest one, for hopping windows)."""
    return lambda key, value, ts: _newest_window(windows, ts)


def select_by_field(windows: TimeWindows, field: str) -> Selector:
    """Select the window containing the timestamp in the value's ``field`` (newest, for hopping windows); a
    value without the field selects no window, a value that is not a mapping is an error."""

    def select(key: Any, value: Any, ts: int) -> Window | None:
        found = value_field(value, field, f"selector: {{field: {field}}}")
        if found is not None and (not isinstance(found, int) or isinstance(found, bool)):
            raise ValueError(
                f"selector: {{field: {field}}} picks the window holding the time in the value's field {field!r}, "
                f"and it is {render_value(found)}; give integer milliseconds there"
            )
        return _newest_window(windows, found)

    return select


def _ts(*found: int | None) -> int:
    return max(ts for ts in found if ts is not None)


def _said(found: tuple[Any, int] | None) -> str:
    return "nothing" if found is None else at(render_value(found[0]), found[1])


class _WTableJoin:
    """What every WTable join shares: look up a WTable, settle the step from what the join emitted."""

    hidden_lookup = False
    """The step's last lookup found nothing because the window is behind its store's retention."""

    def _lookup(self, wtable: WindowAggregate, key: Any, window: Window) -> tuple[tuple[Any, int] | None, str]:
        """``wtable``'s value of ``key`` in ``window``, and what was found in words (why nothing, when the
        window is behind the store's retention)."""
        found = wtable.get(key, window)
        said = wtable.found(key, window, found)
        self.hidden_lookup = found is None and said != "nothing"
        return found, said

    def _settle(self, ctx: StepContext, emitted_before: int, silent: str) -> None:
        """After an aggregate update: no join result means no partner (or a mere state change)."""
        if ctx.fate is Fate.JOINED and len(ctx.outputs) == emitted_before:
            summary = ctx.summary
            reason = Reason.BEHIND_RETENTION if self.hidden_lookup else Reason.NO_PARTNER
            ctx.settle(Fate.NO_MATCH, reason, f"{summary} {silent}")
        self.hidden_lookup = False


class WTableWTableJoin(_WTableJoin):
    """``wtable.join/leftJoin/outerJoin(wtable)`` on the same window, or ``leftJoin`` with a shifter."""

    def __init__(
        self,
        log: StateLog,
        task: int,
        variant: str | Variant,
        left_windows: TimeWindows,
        right_windows: TimeWindows,
        left_aggregation: Aggregation,
        right_aggregation: Aggregation,
        shifter: Shifter | None = None,
        self_join: bool = False,
        layouts: tuple[SegmentLayout | None, SegmentLayout | None] = (None, None),
        semantics: Semantics | str | None = None,
    ) -> None:
        """``self_join``: one WTable joined with itself (``wt.leftJoin(wt, shifter, joiner)``): every
        update is a left update and a right update at once; it needs a shifter."""
        if self_join and shifter is None:
            raise ValueError("a WTable joined with itself needs a window shifter (on the same window it meets itself)")
        if shifter is not None and variant != "left":
            raise ValueError(f"a window shifter exists only for the left join (the seed's API), not for {variant}")
        if shifter is None and left_windows != right_windows:
            raise ValueError(
                "a wtable-wtable join on the same window needs the same windows on both sides "
                f"({left_windows.describe()} vs {right_windows.describe()}); give a shifter otherwise"
            )
        self.variant = Variant(variant)
        self.shifter = shifter
        if self_join:
            self.left = self.right = WindowAggregate(
                log, task, left_windows, left_aggregation, "", layouts[0], self._on_both, semantics
            )
            return
        self.left = WindowAggregate(
            log, task, left_windows, left_aggregation, "left ", layouts[0], self._on_left, semantics
        )
        self.right = WindowAggregate(
            log, task, right_windows, right_aggregation, "right ", layouts[1], self._on_right, semantics
        )

    def _on_both(self, update: AggregateOutput, ctx: StepContext) -> None:
        self._on_left(update, ctx)
        self._on_right(update, ctx)

    def process(self, record: Record, ctx: StepContext) -> None:
        before = len(ctx.outputs)
        (self.left if record.side is Side.LEFT else self.right).process(record, ctx)
        self._settle(ctx, before, f"The {self.variant} join found no partner window: no output.")

    def _target(self, window: Window) -> Window:
        return window if self.shifter is None else self.shifter(window)

    def _on_left(self, update: AggregateOutput, ctx: StepContext) -> None:
        window = Window(*update.window)  # type: ignore[misc]
        target = self._target(window)
        other, said = self._lookup(self.right, update.key, target)
        looked = f"left {update.key}@{window} = {render_value(update.value)} looks up right @{target}: found {said}"
        if other is None and self.variant.inner:
            ctx.note(f"{looked}; inner join: no output.")
            return
        kind = OutputKind.JOINED if other is not None else OutputKind.UNMATCHED
        output = ctx.emit(
            kind,
            Windowed(update.key, window),
            update.value,
            None if other is None else other[0],
            _ts(update.ts, None if other is None else other[1]),
        )
        ctx.note(f"{looked}; joiner called: {render_value(output.value)}.")

    def _on_right(self, update: AggregateOutput, ctx: StepContext) -> None:
        window = Window(*update.window)  # type: ignore[misc]
        said = "none"
        if self.shifter is None:
            found, said = self._lookup(self.left, update.key, window)
            partners = [] if found is None else [(window, found[0], found[1])]
        else:
            partners = [(w, agg, ts) for w, agg, ts in self.left.windows_of(update.key) if self.shifter(w) == window]
        looked = f"right {update.key}@{window} = {render_value(update.value)} looks for left windows"
        if not partners:
            said = "none" if said == "nothing" else said
            if self.variant.outer(Side.RIGHT):
                output = ctx.emit(OutputKind.UNMATCHED, Windowed(update.key, window), None, update.value, update.ts)
                ctx.note(f"{looked}: {said}; outer join: joiner called: {render_value(output.value)}.")
            else:
                ctx.note(f"{looked}: {said}; no output.")
            return
        for left_window, agg, ts in partners:
            output = ctx.emit(
                OutputKind.JOINED, Windowed(update.key, left_window), agg, update.value, _ts(update.ts, ts)
            )
            ctx.note(
                f"{looked}: left @{left_window} = {render_value(agg)}; joiner called: {render_value(output.value)}."
            )


class WTableTableJoin(_WTableJoin):
    """``wtable.leftJoin(table)``: every window of a key joins the table's current value of the key."""

    def __init__(
        self,
        log: StateLog,
        task: int,
        windows: TimeWindows,
        aggregation: Aggregation,
        layout: SegmentLayout | None = None,
        semantics: Semantics | str | None = None,
    ) -> None:
        self.semantics = parse_semantics(semantics)
        self.left = WindowAggregate(log, task, windows, aggregation, "left ", layout, self._on_left, semantics)
        self.table = TableStore(log, task, Side.RIGHT, sends_old_values=False)

    def process(self, record: Record, ctx: StepContext) -> None:
        if record.side is Side.LEFT:
            before = len(ctx.outputs)
            self.left.process(record, ctx)
            self._settle(ctx, before, "No output.")  # pragma: no cover - a left join always emits
            return
        if drop_null_key_update(record, ctx) or drop_idempotent_update(self.table, record, self.semantics, ctx):
            return
        self.table.put(record.key, record.value, record.ts)
        windows = self.left.windows_of(record.key)
        if not windows:
            ctx.settle(
                Fate.NO_MATCH,
                Reason.NO_PARTNER,
                f"{record.describe()} updated the table; the left WTable has no "
                f"window of key {render_value(record.key)}: no output.",
            )
            return
        for window, agg, ts in windows:
            ctx.emit(OutputKind.JOINED, Windowed(record.key, window), agg, record.value, _ts(record.ts, ts))
        ctx.settle(
            Fate.JOINED,
            None,
            f"{record.describe()} updated the table and re-joined every left window of key "
            f"{render_value(record.key)}: {', '.join(str(w) for w, _, _ in windows)}.",
        )

    def _on_left(self, update: AggregateOutput, ctx: StepContext) -> None:
        window = Window(*update.window)  # type: ignore[misc]
        other = self.table.get(update.key)
        kind = OutputKind.JOINED if other is not None else OutputKind.UNMATCHED
        output = ctx.emit(
            kind,
            Windowed(update.key, window),
            update.value,
            None if other is None else other[0],
            _ts(update.ts, None if other is None else other[1]),
        )
        ctx.note(
            f"left {update.key}@{window} = {render_value(update.value)} looks up the table: found {_said(other)}; "
            f"joiner called: {render_value(output.value)}."
        )


class _SelectorJoin(_WTableJoin):
    """A left side (stream or table) whose records each look up the window their selector picks in the right WTable."""

    def __init__(
        self,
        log: StateLog,
        task: int,
        windows: TimeWindows,
        aggregation: Aggregation,
        selector: Selector,
        layout: SegmentLayout | None = None,
        semantics: Semantics | str | None = None,
    ) -> None:
        self.selector = selector
        self.semantics = parse_semantics(semantics)
        self._declare_left(log, task)
        self.right = WindowAggregate(log, task, windows, aggregation, "right ", layout, self._on_right, semantics)

    def _declare_left(self, log: StateLog, task: int) -> None:
        """The left side's store, if it has one (declared before the WTable's: shown first)."""

    def _on_right(self, update: AggregateOutput, ctx: StepContext) -> None:
        raise NotImplementedError

    def _join_selected(self, record: Record, ctx: StepContext, ts: Callable[[int | None], int]) -> str:
        """Look up the window the selector picks for ``record`` and emit the left join's result with the
        timestamp ``ts(ts of the value found)``; what happened, in words."""
        try:
            window = self.selector(record.key, record.value, record.ts)
        except ValueError as error:
            raise ValueError(f"events[{record.offset}] ({record.describe()}): {error}") from None
        found, said = (None, "") if window is None else self._lookup(self.right, record.key, window)
        kind = OutputKind.JOINED if found is not None else OutputKind.UNMATCHED
        output = ctx.emit(
            kind, record.key, record.value, None if found is None else found[0], ts(None if found is None else found[1])
        )
        where = "the selector picked no window" if window is None else f"the selector picked {window}: found {said}"
        return f"{where}; joiner called: {render_value(output.value)}."


class StreamWTableJoin(_SelectorJoin):
    """``stream.leftJoin(wtable, selector, joiner)``: a stream record looks up the window its selector picks."""

    def process(self, record: Record, ctx: StepContext) -> None:
        if record.side is Side.RIGHT:
            self.right.process(record, ctx)
            if ctx.fate is Fate.JOINED:
                summary = ctx.summary
                ctx.settle(
                    Fate.STORED, Reason.TABLE_UPDATE, f"{summary} A WTable update never triggers a stream-wtable join."
                )
            return
        if record.key is None:
            ctx.drop(Reason.NULL_KEY, lambda: f"{record.describe()} has a null key: skipped.")
            return
        if record.value is None:
            ctx.drop(Reason.NULL_VALUE, lambda: f"{record.describe()} has a null value: skipped.")
            return
        joined = self._join_selected(record, ctx, lambda found_ts: record.ts)  # a stream result keeps its ts
        ctx.settle(Fate.JOINED, None, f"{record.describe()}: {joined}")

    def _on_right(self, update: AggregateOutput, ctx: StepContext) -> None:
        return None


class TableWTableJoin(_SelectorJoin):
    """``table.leftJoin(wtable, selector, joiner)``: a KTable whose rows each look at the window they select."""

    def _declare_left(self, log: StateLog, task: int) -> None:
        self.table = TableStore(log, task, Side.LEFT, sends_old_values=True)

    def process(self, record: Record, ctx: StepContext) -> None:
        if record.side is Side.RIGHT:
            before = len(ctx.outputs)
            self.right.process(record, ctx)
            self._settle(ctx, before, "No table row selects this window: no output.")
            return
        if drop_null_key_update(record, ctx) or drop_idempotent_update(self.table, record, self.semantics, ctx):
            return
        previous = self.table.put(record.key, record.value, record.ts)
        if record.value is None:
            if previous is None:
                ctx.settle(
                    Fate.STORED,
                    Reason.NOTHING_TO_DELETE,
                    f"{record.describe()} deletes an absent row: no tombstone needed.",
                )
                return
            ctx.emit_tombstone(record.key, None, None, record.ts)
            ctx.settle(Fate.JOINED, None, f"{record.describe()} deletes the row: the result is deleted: tombstone.")
            return
        joined = self._join_selected(record, ctx, lambda found_ts: _ts(record.ts, found_ts))
        ctx.settle(Fate.JOINED, None, f"{record.describe()} updated the table; {joined}")

    def _on_right(self, update: AggregateOutput, ctx: StepContext) -> None:
        window = Window(*update.window)  # type: ignore[misc]
        row = self.table.get(update.key)
        selected = None if row is None else self.selector(update.key, row[0], row[1])
        if row is None or selected != window:
            why = "the table has no row" if row is None else f"the table's row selects {selected}"
            ctx.note(f"right {update.key}@{window} = {render_value(update.value)}: {why}.")
            return
        output = ctx.emit(OutputKind.JOINED, update.key, row[0], update.value, _ts(update.ts, row[1]))
        ctx.note(
            f"right {update.key}@{window} = {render_value(update.value)} is the window the table's row "
            f"{render_value(row[0])} selects; joiner called: {render_value(output.value)}."
        )


def wtable_layouts(
    join: str,
    windows: TimeWindows,
    right_windows: TimeWindows | None,
    retention_ms: int | None,
    segments: int | None,
    semantics: Semantics,
) -> tuple[SegmentLayout, SegmentLayout]:
    """The left and right window stores' layouts: ``retention_ms`` if given; else a ``wtable-wtable`` join's two
    windowed aggregates keep the version's default (:meth:`TimeWindows.store_retention_ms`: a day before 3.0) and the
    seed's other joins ``size + grace``."""
    right = right_windows or windows
    if join == "wtable-wtable" and retention_ms is None:
        return windows.layout(windows.store_retention_ms(semantics, settable="retention_ms"), segments), right.layout(
            right.store_retention_ms(semantics, settable="retention_ms"), segments
        )
    return windows.layout(retention_ms, segments), right.layout(retention_ms, segments)


def wtable_join_factory(
    join: str,
    windows: TimeWindows,
    variant: str = "left",
    aggregation: Aggregation | None = None,
    right_aggregation: Aggregation | None = None,
    right_windows: TimeWindows | None = None,
    shifter: Shifter | None = None,
    selector: Selector | None = None,
    self_join: bool = False,
    retention_ms: int | None = None,
    segments: int | None = None,
    semantics: Semantics | str | None = None,
) -> Callable[[StateLog, int], Any]:
    """``(log, task) -> processor`` of one task of a WTable join, after checking the options
    (the arguments of :func:`kjoin.engine.aggregates.run_wtable_join`)."""
    if join not in WTABLE_JOINS:
        raise ValueError(f"join must be one of {', '.join(WTABLE_JOINS)}, not {join!r}")
    if variant not in tuple(Variant):
        raise ValueError(f"variant must be inner, left or outer, not {variant!r}")
    if join != "wtable-wtable" and variant != "left":
        raise ValueError(f"{join} exists only as a left join in the seed's API, not {variant}")
    if join in ("stream-wtable", "table-wtable") and selector is None:
        raise ValueError(
            f"{join} needs a window selector: (key, value, ts) -> window, e.g. select_by_timestamp(windows)"
        )
    left_agg = aggregation or count()
    right_agg = right_aggregation or left_agg
    rules = parse_semantics(semantics)
    left_layout, right_layout = wtable_layouts(join, windows, right_windows, retention_ms, segments, rules)

    def new(log: StateLog, task: int) -> Any:
        if join == "wtable-wtable":
            layouts = (left_layout, right_layout)
            right = right_windows or windows
            return WTableWTableJoin(
                log, task, variant, windows, right, left_agg, right_agg, shifter, self_join, layouts, rules
            )
        if join == "wtable-table":
            return WTableTableJoin(log, task, windows, left_agg, left_layout, rules)
        if join == "stream-wtable":
            return StreamWTableJoin(log, task, windows, right_agg, selector, right_layout, rules)  # type: ignore[arg-type]
        return TableWTableJoin(log, task, windows, right_agg, selector, right_layout, rules)  # type: ignore[arg-type]

    return new
