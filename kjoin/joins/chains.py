"""Joins wired into bigger topologies: self-joins, chained joins, materialized and cached results.

Each class here runs ordinary join processors and only decides *which* processor sees a
record, in which order, and where their results go. How Kafka wires them:

* :class:`SelfJoin` — ``s.join(s)`` without the optimization: the one input record goes
  through the join's left side first and then through its right side, so a record meets
  itself only from the right side (docs/semantics.md §1.1).
* :class:`StreamChain` — ``a.join(b).join(b)``: a ``b`` record is processed by the first
  join's right side, whose results flow depth-first into the second join's left side; only
  then does the second join's right side process the ``b`` record. Each join keeps its own
  stores and stream time (§1.10).
* :class:`TablePipeline` — the same chaining for table-table joins (§3.4): the right
  source table is updated once and forwards the same ``Change`` to every join's right side,
  which makes the duplicate results of KAFKA-6443 expected behaviour. It also models a
  materialized result (``Materialized.as``: the merger writes the result store before
  forwarding) and record caches (§3.6): caching source and result stores hold their updates
  until a commit and then forward only the newest update per key, skipping keys whose new
  and old values are both null.

A processor reports into its own :class:`StepContext`; :func:`merge_fates` folds the
contexts of one input record into the step's single fate and explanation.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable

from ..fates import Fate, Reason
from ..records import Output, Record, Side, render_value
from ..state import StateLog
from ..stores import RecordCache, TableStore, table_store_name
from ..stores.base import Store, owned
from .context import StepContext, drop_null_key_update
from .stream_stream import StreamStreamJoin
from .table_table import TableTableJoin
from ..times import at

__all__ = ["SelfJoin", "StreamChain", "TablePipeline", "ResultSink", "merge_fates", "RESULT_TABLE"]

RESULT_TABLE = "result table"


def merge_fates(ctx: StepContext, parts: Iterable[tuple[str, StepContext]]) -> None:
    """Settle ``ctx`` from the contexts its record went through (label, context).

    The step joined if it emitted anything; otherwise it is buffered if any processor holds
    the record, else it has the last processor's fate. The explanation tells every part.
    """
    parts = [(label, part) for label, part in parts if part.fate is not None]
    if not parts:
        return
    text = " ".join(f"{label}{part.explain()}" for label, part in parts)
    if any(output.origin_step == ctx.index for output in ctx.outputs):
        ctx.settle(Fate.JOINED, None, text)
        return
    buffered = [part for _, part in parts if part.fate is Fate.BUFFERED]
    chosen = buffered[0] if buffered else parts[-1][1]
    ctx.settle(chosen.fate, chosen.reason, text, until_ms=chosen.until_ms)  # type: ignore[arg-type]


def _sub(ctx: StepContext, record: Record, index: int | None = None) -> StepContext:
    return StepContext(ctx.index if index is None else index, record, ctx.joiner)


# -- stream-stream ------------------------------------------------------------------------
class SelfJoin:
    """``s.join(s)`` without the single-store optimization: one window store per side, both
    holding every record; each record is processed as a left record, then as a right record."""

    REASONS = StreamStreamJoin.REASONS

    def __init__(self, join: StreamStreamJoin) -> None:
        self.join = join

    def state_stores(self) -> tuple[Store, ...]:
        """The join's stores: one window store per side, both holding every record."""
        return self.join.state_stores()

    def process(self, record: Record, ctx: StepContext) -> None:
        parts = []
        for side in (Side.LEFT, Side.RIGHT):
            sub = _sub(ctx, replace(record, side=side))
            self.join.process(sub.record, sub)
            for output in sub.outputs:
                ctx.forward(output)
            parts.append((f"As the {side} input: ", sub))
        merge_fates(ctx, parts)


class StreamChain:
    """``a.join(b).join(b)…``: stage 0 joins left with right; stage ``i`` joins the results of
    stage ``i - 1`` (as its left input) with the right input again."""

    REASONS = StreamStreamJoin.REASONS

    def __init__(self, stages: list[StreamStreamJoin]) -> None:
        self.stages = stages

    def state_stores(self) -> tuple[Store, ...]:
        """Every stage's stores (each stage keeps its own, named by its place in the chain)."""
        return owned(*(store for stage in self.stages for store in stage.state_stores()))

    def process(self, record: Record, ctx: StepContext) -> None:
        parts: list[tuple[str, StepContext]] = []
        if record.side is Side.LEFT:
            self._flow(0, record, ctx, parts)
        else:
            for stage in range(len(self.stages)):
                self._flow(stage, record, ctx, parts)
        merge_fates(ctx, parts)

    def _flow(self, stage: int, record: Record, ctx: StepContext, parts: list[tuple[str, StepContext]]) -> None:
        sub = _sub(ctx, record)
        self.stages[stage].process(record, sub)
        parts.append((f"Join {stage + 1}: ", sub))
        last = stage == len(self.stages) - 1
        for output in sub.outputs:
            if last:
                ctx.forward(output)
            else:
                derived = Record(Side.LEFT, output.key, output.value, output.ts, record.partition, record.offset)
                self._flow(stage + 1, derived, ctx, parts)


# -- a materialized result ------------------------------------------------------------------
class ResultSink:
    """A join's materialized result (``Materialized.as``): the merger writes the result store
    first, then forwards; a caching result store instead holds the result until the next
    commit, forwards only the newest result per key, and drops a tombstone for a key that
    had no value before (``CachingKeyValueStore``; for FK joins MaterializationIntegrationTest).

    ``drops_idempotent``: the result is written by a ``KTableSource`` (a foreign-key join's, 2.4 to 3.x) in a version
    with KIP-557 (2.6.0 to 2.7.0), which drops a result that changes nothing (:meth:`TableStore.unchanged_by`):
    the same value bytes at a timestamp no older, or a tombstone for a key without a result."""

    def __init__(self, log: StateLog, task: int, caching: bool, drops_idempotent: bool = False) -> None:
        self.drops_idempotent = drops_idempotent
        self.store = TableStore(log, task, Side.LEFT, False, RESULT_TABLE)
        self.cache = RecordCache(log, task, f"{RESULT_TABLE} cache") if caching else None
        self._cached_from: dict[Any, int] = {}  # key -> the step of the result the cache holds
        self._replaced: set[int] = set()

    def put(self, output: Output, ctx: StepContext) -> bool:
        """Write the result and forward it (or cache it); ``False`` when the result table dropped it (KIP-557)."""
        value = None if output.tombstone else output.value
        if self.drops_idempotent and self.store.unchanged_by(output.key, value, output.ts):
            ctx.note(
                f"The result table drops {at(output.render(), output.ts)} for {render_value(output.key)}: it changes "
                "nothing there (KIP-557: a KTableSource drops an idempotent update, 2.6.0 to 2.7.0)."
            )
            return False
        previous = self.store.get(output.key)
        self.store.put(output.key, value, output.ts)
        if self.cache is None:
            ctx.forward(output)
        else:
            earlier = self._cached_from.get(output.key)
            if earlier is not None and earlier != output.origin_step:
                self._replaced.add(earlier)
            self._cached_from[output.key] = output.origin_step
            self.cache.put(
                output.key,
                output,
                None if output.tombstone else output.value,
                output.ts,
                None if previous is None else previous[0],
                output.origin_step,
            )
        return True

    def holds_step(self, step: int) -> bool:
        return self.cache is not None and self.cache.holds_step(step)

    def replaced_step(self, step: int) -> bool:
        """Was a result of ``step`` replaced in the cache by another record's result for its key?"""
        return step in self._replaced

    @staticmethod
    def settle_held(ctx: StepContext) -> None:
        """The step joined, but its result waits in the cache: the record is buffered."""
        ctx.settle(
            Fate.BUFFERED,
            Reason.RECORD_CACHE,
            f"{ctx.summary} The result waits in the result store's cache until the next commit.",
        )

    def flush(self, ctx: StepContext) -> None:
        """Commit: forward the cached results."""
        if self.cache is None:
            return
        self._cached_from.clear()
        for entry in self.cache.flush():
            output: Output = entry.item
            if entry.new is None and entry.old is None:
                ctx.note(
                    f"Commit: the result cache drops the tombstone for {render_value(entry.key)}: the result never had "
                    "a value."
                )
                continue
            if output.has_old:
                output = replace(output, old=entry.old)
            ctx.forward(output)
            ctx.note(
                f"Commit: the result cache forwards {at(output.render(), output.ts)} for {render_value(entry.key)}"
                + (f" (the newest of {entry.replaced + 1} results)." if entry.replaced else ".")
            )


# -- table-table ----------------------------------------------------------------------------
class TablePipeline:
    """Source tables → one or more table-table joins → the result, with the options of §3.4
    and §3.6: old values, a materialized result store, record caches and commits.

    ``stages[0]`` joins the two source tables; ``stages[i]`` joins ``stages[i - 1]``'s result
    with the right source table again. Caching applies to the unversioned source tables and
    to the materialized result store, as ``caching`` names them (``left``, ``right``,
    ``result``); a task commits after every ``commit_every`` of its
    records (Kafka's TopologyTestDriver commits after every record).
    """

    REASONS = frozenset(Reason)  # its stages, sources, caches and result stores: any reason a table join gives

    def __init__(
        self,
        log: StateLog,
        task: int,
        stages: list[TableTableJoin],
        *,
        send_old_values: bool = False,
        materialized: bool = False,
        caching: tuple[str, ...] = (),
        commit_every: int = 1,
    ) -> None:
        self.stages = stages
        if send_old_values:
            stages[-1].enable_sending_old_values()
        self.sources = stages[0].tables
        self.result = ResultSink(log, task, "result" in caching) if materialized else None
        self.source_caches: dict[Side, RecordCache] = {}
        for side, table in self.sources.items():
            if side.value in caching and isinstance(table, TableStore):  # versioned stores do not cache
                self.source_caches[side] = RecordCache(log, task, f"{table_store_name(side)} cache")
        self.commit_every = commit_every
        self._since_commit = 0

    def state_stores(self) -> tuple[Store, ...]:
        """Every stage's source tables (the right one shared, kept once), the source caches, and the materialized
        result's store and cache."""
        result = () if self.result is None else (self.result.store, self.result.cache)
        stages = (store for stage in self.stages for store in stage.state_stores())
        return owned(*stages, *self.source_caches.values(), *result)

    # -- an input record --------------------------------------------------------------------
    def process(self, record: Record, ctx: StepContext) -> None:
        parts: list[tuple[str, StepContext]] = []
        if drop_null_key_update(record, ctx) or self.stages[0].drop_idempotent(record, ctx):
            pass
        elif record.side in self.source_caches:
            raw_old = self.stages[0].update(record)  # update state: reads see the new value at once
            entry = self.source_caches[record.side].put(record.key, record, record.value, record.ts, raw_old, ctx.index)
            replaced = f", replacing {entry.replaced} earlier update(s) of the key" if entry.replaced else ""
            ctx.settle(
                Fate.BUFFERED,
                Reason.RECORD_CACHE,
                f"{record.describe()} updates the {record.side} table; the caching store holds the update until the "
                f"next commit{replaced}.",
            )
        elif len(self.stages) == 1 and not isinstance(self.sources[record.side], TableStore):
            sub = _sub(ctx, record)
            self.stages[0].process(record, sub)  # a versioned source: its join handles the put
            self._sink(sub, ctx)
            parts.append(("", sub))
        else:
            raw_old = self.stages[0].update(record)
            self._deliver(record.side, record, raw_old, ctx, parts, ctx.index)
        self._since_commit += 1
        if self._since_commit >= self.commit_every:
            self._since_commit = 0
            self._commit(ctx, parts)
        if parts:
            merge_fates(ctx, parts)
        if ctx.fate is Fate.JOINED and not any(output.origin_step == ctx.index for output in ctx.outputs):
            if self.result is not None and self.result.holds_step(ctx.index):
                ResultSink.settle_held(ctx)
            elif self.result is not None and self.result.replaced_step(ctx.index):
                ctx.settle(Fate.STORED, Reason.REPLACED_IN_CACHE, ctx.summary)
            else:  # the result cache dropped the record's tombstone: the key never had a result
                ctx.settle(Fate.STORED, Reason.NOTHING_TO_DELETE, ctx.summary)

    # -- flow through the joins --------------------------------------------------------------
    def _deliver(
        self,
        side: Side,
        record: Record,
        raw_old: Any,
        ctx: StepContext,
        parts: list[tuple[str, StepContext]],
        origin: int,
    ) -> None:
        """The source forwards ``Change(new, old)``: to stage 0 for a left update, to every
        stage's right side (stage 0 first) for a right update."""
        old = raw_old if self.sources[side].sends_old_values else None
        if side is Side.LEFT:
            self._flow(0, side, record, old, ctx, parts, origin)
        else:
            for stage in range(len(self.stages)):
                self._flow(stage, side, record, old, ctx, parts, origin)

    def _flow(
        self,
        stage: int,
        side: Side,
        record: Record,
        old: Any,
        ctx: StepContext,
        parts: list[tuple[str, StepContext]],
        origin: int,
    ) -> None:
        sub = _sub(ctx, record, origin)
        self.stages[stage].on_change(side, record, old, sub)
        parts.append((f"Join {stage + 1}: " if len(self.stages) > 1 else "", sub))
        if stage == len(self.stages) - 1:
            self._sink(sub, ctx)
            return
        for output in sub.outputs:
            derived = Record(
                Side.LEFT,
                output.key,
                None if output.tombstone else output.value,
                output.ts,
                record.partition,
                record.offset,
            )
            self._flow(stage + 1, Side.LEFT, derived, output.old, ctx, parts, origin)

    def _sink(self, sub: StepContext, ctx: StepContext) -> None:
        """The merger: write the result store (if materialized), then forward (or cache)."""
        for output in sub.outputs:
            if self.result is None:
                ctx.forward(output)
            else:
                self.result.put(output, ctx)

    # -- commit: flush the caches ------------------------------------------------------------
    def _commit(self, ctx: StepContext, parts: list[tuple[str, StepContext]]) -> None:
        for side in (Side.LEFT, Side.RIGHT):
            cache = self.source_caches.get(side)
            for entry in cache.flush() if cache is not None else []:
                if entry.new is None and entry.old is None:
                    self._note_skip(
                        ctx,
                        parts,
                        entry.step,
                        f"Commit: the {side} table's cache drops the delete of {render_value(entry.key)}: no value "
                        "before or after.",
                    )
                    continue
                flushed: list[tuple[str, StepContext]] = []
                self._deliver(side, entry.item, entry.old, ctx, flushed, entry.step)
                if entry.step == ctx.index:
                    parts.extend((f"Commit: {label}", part) for label, part in flushed)
                else:  # an earlier record's update: told in the notes, never this record's fate
                    for label, part in flushed:
                        ctx.note(
                            f"Commit: the {side} table's cache forwards {entry.item.describe()}: "
                            f"{label}{part.explain()}"
                        )
        if self.result is not None:
            self.result.flush(ctx)

    def _note_skip(self, ctx: StepContext, parts: list[tuple[str, StepContext]], step: int, text: str) -> None:
        if step == ctx.index:
            sub = _sub(ctx, ctx.record)
            sub.settle(Fate.STORED, Reason.NOTHING_TO_DELETE, text)
            parts.append(("", sub))
        else:
            ctx.note(text)
