"""KStream-GlobalKTable joins: inner and left, through a key selector.

``stream.join(globalTable, (key, value) -> tableKey, joiner)`` (and ``leftJoin``). The left input is the stream,
the right the global topic. Kafka's ``KStreamGlobalKTableJoin`` is the stream-table join processor
(``KStreamKTableJoinProcessor``) with a key selector in place of the stream key:

* A global-topic record only updates the global store (a null value deletes the key, a null key is skipped); it
  never triggers output. The global store holds the whole topic in every application instance (see
  :mod:`kjoin.stores.global_table`), so a stream record never needs to be co-partitioned with the table.
* A stream record's key selector gives the table key to look up (in scenarios ``foreign_key: <field path>`` into
  the stream value; without it, the stream key). The result carries the *stream* key and the stream record's
  timestamp; inner joins only when the table has a value, left always (null when it has none).
* Null handling, by era (``Semantics``): before 2.7 a null stream key or a null value is skipped, and a key
  selector giving null means no lookup (left: joined with null; inner: no output). From 2.7 (KAFKA-10277,
  ``global_join_skips_null_mapped_keys``) the key selector decides: a null stream key is looked up by its selected
  key, a null selected key or a null value is skipped. From 3.7 (KIP-962, ``relaxed_null_keys``) a left join joins a
  null-key record with a value, looked up by its selected key (null: joined with null). From 4.0.1 (KAFKA-19208,
  ``global_left_join_keeps_null_mapped_keys``) a left join joins any record with a value whose selected key is
  null with null; only a null value is skipped.

The order of global updates against stream records (what kjoin can and cannot say):

* *Bootstrap.* A starting application restores its global store to the end of the global topic before any stream
  thread processes a record. So the global records listed before the first stream record are loaded first:
  every stream record sees them, whatever its timestamp.
* *Later updates.* After start the global thread reads the global topic on its own, beside the stream threads.
  Its updates are applied in the global topic's order, but nothing ties them to the stream records' timestamps
  or to their processing (there is no timestamp synchronization with a global table, unlike a KTable's
  ``max.task.idle.ms``). A stream record processed around a global update may see the table before it or after
  it, and running the same input again may give another answer. What holds: updates appear in topic order, and a
  stream thread never sees an update disappear once it has seen it.
* *kjoin's order is TopologyTestDriver's:* a global record is applied the moment it is piped, so a scenario's
  event order is one possible interleaving (the one the Kafka oracle checks). :func:`possible_partners` lists, for
  each stream record, every table value a running application could give it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ..fates import Fate, Reason
from ..join_model import Variant
from ..records import OutputKind, Record, Side, render_value
from ..semantics import Semantics
from ..state import StateLog
from ..times import at
from ..stores.global_table import GlobalTableStore
from .context import StepContext, drop_idempotent_update, drop_null_key_update

__all__ = ["GlobalTableJoin", "KeySelector", "key_selector", "possible_partners"]

KeySelector = Callable[[Any, Any], Any]
"""Kafka's ``KeyValueMapper``: ``(stream key, stream value) -> table key`` (``None``: no table key)."""


def key_selector(path: str | None) -> KeySelector:
    """The key selector of ``foreign_key: <path>``: the field at ``path`` of the stream value (``None`` when the
    value is null, or a field on the way is missing or null); with no path, the stream key itself."""
    if path is None:
        return lambda key, value: key

    def select(key: Any, value: Any) -> Any:
        node = value
        for part in path.split("."):
            if not isinstance(node, dict):
                return None
            node = node.get(part)
            if node is None:
                return None
        return node

    select.__doc__ = f"the stream value's field {path!r}"
    return select


class GlobalTableJoin:
    """A stream joined with a GlobalKTable: the one global store every stream task reads, and the join each
    stream task runs (it keeps no state of its own: ``KStreamGlobalKTableJoin`` has no store).

    ``process(record, ctx)`` takes a stream record (left) or a global-topic record (right)."""

    def __init__(
        self,
        log: StateLog,
        variant: str | Variant,
        semantics: Semantics,
        foreign_key: str | None = None,
        *,
        table: GlobalTableStore | None = None,
        select: KeySelector | None = None,
    ) -> None:
        """``table``: a global store shared with other joins (a topology's; default: this join's own);
        ``select``: a key selector in place of ``foreign_key``'s field (``foreign_key`` then only names it)."""
        self.variant = Variant(variant)
        self.semantics = semantics
        self.path = foreign_key
        self.select = select or key_selector(foreign_key)
        self.table = table if table is not None else GlobalTableStore(log)
        self._started = False  # has a stream record been processed: the global store's bootstrap is over

    def process(self, record: Record, ctx: StepContext) -> None:
        if record.side is Side.RIGHT:
            self._update_global_store(record, ctx)
        else:
            self._started = True
            self._join_stream_record(record, ctx)

    # -- update state: the global thread ----------------------------------------------------
    def _update_global_store(self, record: Record, ctx: StepContext) -> None:
        if drop_null_key_update(record, ctx) or drop_idempotent_update(self.table, record, self.semantics, ctx):
            return
        previous = self.table.put(record.key, record.value, record.ts)
        if record.value is None:
            change = "deleted the key" if previous is not None else "deleted nothing (the key was absent)"
        else:
            change = f"set it to {render_value(record.value)}"
        if self._started:
            when = (
                "The global thread applied it now, as TopologyTestDriver does when a global record is piped; a "
                "running application's global thread reads the global topic beside the stream threads, so stream "
                "records processed around this one may see the table before or after it."
            )
        else:
            when = (
                "Bootstrap: before the first stream record, so a starting application restores it into the global "
                "store before it processes any stream record."
            )
        ctx.settle(
            Fate.STORED,
            Reason.TABLE_UPDATE,
            lambda: (
                f"Global table update for key {render_value(record.key)} {change}; a global table update never "
                f"triggers a join. {when}"
            ),
        )

    # -- the skip rules -----------------------------------------------------------------------
    def _join_stream_record(self, record: Record, ctx: StepContext) -> None:
        if not self.semantics.global_join_skips_null_mapped_keys:
            self._join_before_2_7(record, ctx)
            return
        selected = self._selected(record)
        if self.variant.outer(Side.LEFT) and record.value is not None:
            if record.key is None and self.semantics.relaxed_null_keys:
                self._join(record, selected, ctx, "a left join joins a null-key record, KIP-962")
                return
            if selected is None and self.semantics.global_left_join_keeps_null_mapped_keys:
                self._join(record, selected, ctx, "a left join joins it with null, KAFKA-19208")
                return
        if record.value is None:
            ctx.drop(Reason.NULL_VALUE, lambda: f"{record.describe()} has a null value: skipped.")
            return
        if selected is None:
            self._drop_null_selected(record, ctx)
            return
        self._join(record, selected, ctx)

    def _join_before_2_7(self, record: Record, ctx: StepContext) -> None:
        if record.key is None:
            ctx.drop(
                Reason.NULL_KEY,
                lambda: f"{record.describe()} has a null key: skipped before the key selector runs (Kafka before 2.7).",
            )
            return
        if record.value is None:
            ctx.drop(Reason.NULL_VALUE, lambda: f"{record.describe()} has a null value: skipped.")
            return
        selected = self._selected(record)
        if selected is None and self.variant.inner:
            ctx.settle(
                Fate.NO_MATCH,
                Reason.NULL_JOIN_KEY,
                lambda: (
                    f"{record.describe()}: the key selector gives null, so there is no table key to look up; an "
                    "inner join emits nothing (Kafka before 2.7)."
                ),
            )
            return
        self._join(record, selected, ctx)

    def _drop_null_selected(self, record: Record, ctx: StepContext) -> None:
        if self.path is None:
            ctx.drop(Reason.NULL_KEY, lambda: f"{record.describe()} has a null key: skipped.")
            return
        ctx.drop(
            Reason.NULL_JOIN_KEY,
            lambda: (
                f'{record.describe()}: the key selector (field {self.path!r}) gives null: skipped ("Skipping record '
                'due to null join key or value"; a left join too, KAFKA-10277).'
            ),
        )

    def _selected(self, record: Record) -> Any:
        return self.select(record.key, record.value)

    # -- look up and call the joiner -------------------------------------------------------
    def _join(self, record: Record, selected: Any, ctx: StepContext, why: str | None = None) -> None:
        found = None if selected is None else self.table.get(selected)
        via = "" if self.path is None else f" by its key selector (field {self.path!r}: {render_value(selected)})"
        if selected is None:
            looked = f"{record.describe()}: the key selector gives null, so nothing is looked up"
        elif found is None:
            looked = f"{record.describe()} looked up the global table{via}: key {render_value(selected)} is absent"
        else:
            looked = (
                f"{record.describe()} looked up the global table{via} and found {at(render_value(found[0]), found[1])}"
            )
        if why:
            looked = f"{looked} ({why})"
        if found is None and self.variant.inner:
            ctx.settle(Fate.NO_MATCH, Reason.NO_PARTNER, f"{looked}; inner join: no output.")
            return
        kind = OutputKind.JOINED if found else (OutputKind.NULL_KEY if record.key is None else OutputKind.UNMATCHED)
        ctx.emit(kind, record.key, record.value, None if found is None else found[0], record.ts)
        ctx.settle(Fate.JOINED, None, f"{looked}; joiner called.")


def possible_partners(records: Iterable[Record], foreign_key: str | None = None) -> list[list[Any] | None]:
    """For each record, in processing order: ``None`` for a global-topic record, else every table value (``None``:
    absent) the stream record's lookup could find in a running application.

    The global records before the first stream record are the bootstrap: every stream record sees them. Each later
    global update may be applied before or after any stream record (the global thread keeps no time with the
    stream threads), but in topic order and never undone for a thread that saw it: a stream record may see any
    prefix of the later updates that is at least as long as the one an earlier stream record of the same thread
    saw. Taken one stream record at a time, that is any prefix at all, so the possible values of a lookup are the
    key's values after each prefix of the later updates (kjoin's scenario order picks one). Skip rules (null keys,
    null values) are not applied here."""
    records = list(records)
    select = key_selector(foreign_key)
    first_stream = next((i for i, r in enumerate(records) if r.side is Side.LEFT), len(records))
    table: dict[Any, Any] = {}
    for record in records[:first_stream]:
        if record.key is not None:
            table.pop(record.key, None) if record.value is None else table.__setitem__(record.key, record.value)
    later = [r for r in records[first_stream:] if r.side is Side.RIGHT and r.key is not None]
    answers: list[list[Any] | None] = []
    for record in records:
        if record.side is Side.RIGHT:
            answers.append(None)
            continue
        selected = select(record.key, record.value)
        current = table.get(selected)
        values = [current]
        for update in later:
            if update.key == selected and type(update.key) is type(selected):
                current = update.value
                if current not in values:
                    values.append(current)
        answers.append(values)
    return answers
