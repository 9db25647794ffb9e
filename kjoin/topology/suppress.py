"""``KTable#suppress`` in a topology: the table's updates held in a buffer, forwarded later (KIP-328).

How it works (Kafka's ``KTableSuppressProcessorSupplier``, caching off as in every kjoin run):

* ``until="window_closes"`` (``Suppressed.untilWindowCloses``): the final result of each window. The table must be
  keyed by window (a windowed aggregate, or a filter or mapValues of one: Kafka finds the grace by walking up to
  the aggregate). Each update goes to :class:`~kjoin.joins.final_results.SuppressionBuffer`, the one the windowed
  single-aggregate scenarios use: buffered by window end, forwarded once the buffer's stream time (the largest
  timestamp it received) reaches ``end + grace`` (session windows: ``+ gap``), tombstones dropped.
* ``until="time_limit"`` (``Suppressed.untilTimeLimit(Duration, BufferConfig)``): any table. Each key's newest update
  waits in a :class:`~kjoin.stores.suppression.TimeLimitStore` from the timestamp of its *first* buffered update;
  after each record every entry with ``first ts <= stream time - time_limit_ms`` is forwarded in buffer order
  (tombstones too), with the latest update's timestamp.
* ``max_records``: after those evictions, a buffer holding more records is full: ``when_full="emit_early"``
  (``emitEarlyWhenFull``, time limit only) forwards the oldest entries until it is not; ``"shut_down"``
  (``shutDownWhenFull``) stops the task: kjoin's :class:`SuppressionBufferFull`, naming the node and the record.
  ``BufferConfig.maxBytes`` is refused. Kafka 4.4's ``InMemoryTimeOrderedKeyValueChangeBuffer`` counts each entry
  as ``computeRecordSize``: 8 + the serialized key (a windowed key with its window's start, and end for a session)
  + ``BufferValue.residentMemorySizeEstimate`` (the prior value's bytes, the old value's unless it is the same
  array as the prior, the new value's, and ``ProcessorRecordContext.residentMemorySizeEstimate``: 8 + 8 + 4 + the
  characters of the record's topic name + each header's key characters and value bytes). The topic is the one the
  task read: behind a repartition topic, ``<application.id>-<name>-repartition``, named by the application id and
  by Kafka's counter unless ``Grouped.as`` names it, neither of which a kjoin topology has; so the bound is not
  reproduced and kjoin refuses it rather than guess.
* A stream's join, a table-table join and a table's filter or map_values read a time-limit suppression as a table
  through :class:`SuppressedGetter` (Kafka's value getter): a key the buffer holds answers with its prior value, any
  other with the input table's row. An eviction is forwarded as ``Change(new, old)``, old being the latest buffered
  update's old value. A foreign-key join or a group-by of a suppressed table, and any table read of a window-close
  suppression, are refused (``builder._check_not_suppressed``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..fates import Fate, Reason
from ..joins.aggregate import AggregateOutput
from ..joins.context import StepContext
from ..joins.final_results import SuppressionBuffer
from ..joins.session_aggregate import SessionWindows
from ..joins.window_aggregate import TimeWindows
from ..records import Record, Side, render_value
from ..scenario.inputs import MAX_LONG, did_you_mean
from ..stores.suppression import TimeLimitStore
from ..times import at
from .aggregates import WindowedKey
from .graph import Node, TopologyError
from .processors import NodeProcessor, Outcome, Rec, said

__all__ = ["Suppressed", "SuppressProcessor", "SuppressionBufferFull", "suppressed"]

UNTIL = ("window_closes", "time_limit")
WHEN_FULL = ("emit_early", "shut_down")
FIELDS = ("until", "time_limit_ms", "max_records", "max_bytes", "when_full")


class SuppressionBufferFull(TopologyError):
    """A suppression buffer with ``when_full="shut_down"`` held more than ``max_records``: Kafka's task stops
    (``StreamsException``: the buffer exceeded its max capacity), and so does kjoin's run."""


@dataclass(frozen=True)
class Suppressed:
    """A suppression's options, as a document writes them (``{"until": "time_limit", "time_limit_ms": 10, ...}``)."""

    until: str
    time_limit_ms: int | None = None
    max_records: int | None = None
    when_full: str = "shut_down"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"until": self.until}
        if self.time_limit_ms is not None:
            data["time_limit_ms"] = self.time_limit_ms
        if self.max_records is not None:
            data["max_records"] = self.max_records
            data["when_full"] = self.when_full
        return data


def suppressed(options: Mapping[str, Any], where: str) -> Suppressed:
    """``options`` checked at the edge, each error naming ``where``, the field and the fix."""
    unknown = sorted(str(name) for name in set(options) - set(FIELDS))
    if unknown:
        raise TopologyError(
            f"{where}: unknown field {unknown[0]}{did_you_mean(unknown[0], FIELDS)}; it takes {', '.join(FIELDS)}"
        )
    until = options.get("until", "window_closes")
    if until not in UNTIL:
        raise TopologyError(f"{where}.until: expected window_closes or time_limit, got {until!r:.60}")
    if options.get("max_bytes") is not None:
        raise TopologyError(
            f"{where}.max_bytes: kjoin does not model BufferConfig.maxBytes: each buffered entry counts its serialized "
            "key, prior, old and new values and its record context, whose size includes the name of the topic the "
            "record came from (an internal topic's full name, <application.id>-...-repartition, which kjoin does not "
            "reproduce); bound the buffer with max_records, or leave it unbounded"
        )
    limit = options.get("time_limit_ms")
    if until == "time_limit":
        if not isinstance(limit, int) or isinstance(limit, bool) or not 0 <= limit <= MAX_LONG:
            raise TopologyError(
                f"{where}.time_limit_ms: untilTimeLimit waits a whole number of milliseconds from 0 to {MAX_LONG}, "
                f"got {limit!r:.60}"
            )
    elif limit is not None:
        raise TopologyError(
            f"{where}.time_limit_ms: untilWindowCloses waits for the window's grace, not a time limit; leave "
            "time_limit_ms out or choose until=time_limit"
        )
    records = options.get("max_records")
    if records is not None and (not isinstance(records, int) or isinstance(records, bool) or records < 0):
        raise TopologyError(f"{where}.max_records: expected a whole number of records from 0, got {records!r:.60}")
    default = "emit_early" if until == "time_limit" else "shut_down"  # BufferConfig.maxRecords is eager
    when_full = options.get("when_full") or default
    if when_full not in WHEN_FULL:
        raise TopologyError(f"{where}.when_full: expected emit_early or shut_down, got {when_full!r:.60}")
    if until == "window_closes" and when_full == "emit_early":
        raise TopologyError(
            f"{where}.when_full: untilWindowCloses takes a strict buffer (unbounded, or max_records with shut_down): "
            "emitting early would forward a result that is not final"
        )
    if records is None and options.get("when_full") is not None:
        raise TopologyError(f"{where}.when_full: an unbounded buffer is never full; give max_records too")
    return Suppressed(until, limit, records, when_full if records is not None else "shut_down")


class SuppressProcessor(NodeProcessor):
    """One task's suppression (``KTableSuppressProcessor``): ``windows`` are the aggregate's whose final results
    ``window_closes`` waits for (``None`` for a time limit)."""

    def __init__(self, node: Node, partition: int, log: Any, parent: Callable[[Node], Any] | None = None) -> None:
        super().__init__(node, partition)
        self.parent = parent  # the task's other processors: a lookup reads the input table through them
        self.options: Suppressed = node.params["suppressed"]
        windows = node.params.get("windows")
        self.buffer: SuppressionBuffer | None = None
        self.time_limit: TimeLimitStore | None = None
        if self.options.until == "window_closes":
            duration = windows.grace_ms if isinstance(windows, TimeWindows) else windows.suppress_duration_ms
            self.buffer = SuppressionBuffer(log, partition, duration, session=isinstance(windows, SessionWindows))
        else:
            self.time_limit = TimeLimitStore(log, partition)
        self.evicted: list[tuple[Any, Any, int]] = []
        """Entries evicted by the record in hand whose records have not yet run through the children."""
        self.taken: tuple[Any, bool] | None = None
        """The record context of the record in hand (the runtime sets it): the record the task took, and whether a
        sink had freed its raw record before the record reached this node."""
        self.contexts: dict[tuple[str, Any], tuple[Any, bool] | None] = {}
        """Each buffered key's record context, its latest update's (``cleanPut`` replaces the whole entry): an
        eviction's children run in it, so a dead-letter record below names the buffered record."""

    def getter_over(self, parent: Any) -> "SuppressedGetter":
        """This suppression read as a table, over ``parent`` (its input table's value getter)."""
        return SuppressedGetter(self, parent)

    def as_table(self, partition: int) -> "SuppressedGetter":
        """Read through the buffer, then the input table (Kafka's ``KTableSuppressProcessorSupplier`` getter)."""
        if self.parent is None:  # pragma: no cover - the runtime always hands the task's processors
            raise AssertionError(f"{self.node.name}: built without its task's processors")
        return self.getter_over(self.parent(self.node.parents[0]).as_table(partition))

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        self.contexts[(type(rec.key).__name__, rec.key)] = self.taken
        if self.buffer is not None:
            forwarded, fate, reason, text = self._until_window_closes(rec, step)
            held = len(self.buffer.buffer)
        else:
            forwarded, fate, reason, text = self._until_time_limit(rec)
            held = len(self.time_limit)  # type: ignore[arg-type]
        forwarded = [
            dataclasses.replace(f, context=self.contexts.pop((type(f.key).__name__, f.key), None)) for f in forwarded
        ]
        if self.options.max_records is not None and held > self.options.max_records:
            raise SuppressionBufferFull(
                f"suppress {self.node.name}: after {said(rec)} its buffer holds {held} records, more than "
                f"max_records {self.options.max_records}, and when_full is shut_down: Kafka stops the task "
                "(StreamsException: the suppression buffer exceeded its max capacity). Raise max_records, leave the "
                "buffer unbounded, or (untilTimeLimit) choose when_full=emit_early"
            )
        return Outcome(fate, reason, text, forwarded)

    def _until_window_closes(self, rec: Rec, step: int) -> tuple[list[Rec], Fate, Reason | None, str]:
        assert self.buffer is not None
        key = rec.key
        assert isinstance(key, WindowedKey), "a windowed table's suppression reads windowed keys"
        record = Record(Side.LEFT, key.key, rec.value, rec.ts, self.partition)
        ctx = StepContext(step, record, _no_joiner)
        update = AggregateOutput(
            key.key, rec.value, rec.old, rec.ts, rec.value is None, "window", self.partition, step,
            (key.start_ms, key.end_ms),
        )  # fmt: skip
        self.buffer.process(update, ctx)
        forwarded = [Rec(WindowedKey(o.key, *o.window), o.value, o.ts) for o in ctx.outputs]  # type: ignore[attr-defined]
        waits = f"{key} waits in the buffer until its window closes"
        text = " ".join([f"{said(rec)}: {waits}." if rec.value is not None else f"{said(rec)} buffered.", *ctx.notes])
        return forwarded, Fate.BUFFERED if not forwarded else Fate.FORWARDED, Reason.WINDOW_OPEN, text

    def _until_time_limit(self, rec: Rec) -> tuple[list[Rec], Fate, Reason | None, str]:
        store = self.time_limit
        assert store is not None
        limit = self.options.time_limit_ms
        assert limit is not None
        self.evicted.clear()  # a child that failed under `continue` cut the previous record's forwards short
        stream_time = store.observe(rec.ts)
        store.put(rec.key, rec.value, rec.ts, rec.old)
        forwarded, notes = [], []
        while (evicted := store.evict_first(stream_time - limit)) is not None:
            forwarded.append(self._evicting(evicted))
            notes.append(f"{render_value(evicted[0])}'s time limit passed")
        records = self.options.max_records
        if records is not None and self.options.when_full == "emit_early":
            while len(store) > records and (evicted := store.evict_first()) is not None:
                forwarded.append(self._evicting(evicted))
                notes.append(f"{render_value(evicted[0])} emitted early (the buffer holds more than {records})")
        text = f"{said(rec)} buffered (stream time {stream_time}, time limit {limit} ms)"
        if notes:
            shown = ", ".join(f"{n}: {at(render_value(r.value), r.ts)}" for n, r in zip(notes, forwarded))
            text += f"; forwarded {shown}"
        return forwarded, Fate.BUFFERED if not forwarded else Fate.FORWARDED, Reason.TIME_LIMIT, text + "."

    def _evicting(self, evicted: tuple[Any, Any, int, Any, Any]) -> Rec:
        """An evicted entry, held until its record has run through the children: Kafka's ``evictWhile`` emits an
        entry before it removes it from the buffer, so a join below that looks the key up still reads its prior
        value (``priorValueForBuffered``). It goes on as ``Change(new, old)`` with its latest update's old value,
        whether or not a child asked for old values (a table join below reads it: "nothing before")."""
        key, value, ts, prior, old = evicted
        self.evicted.append((key, prior, ts))
        return Rec(key, value, ts, old, True)

    def forwarded(self, rec: Rec) -> None:
        if self.evicted:
            self.evicted.pop(0)

    def held(self, key: Any) -> tuple[Any, int] | None:
        """``(prior value, ts)`` of ``key`` while the buffer holds it, an evicted entry included until its record
        has been forwarded; else ``None``."""
        for evicted, prior, ts in self.evicted:
            if evicted == key:
                return prior, ts
        return None if self.time_limit is None else self.time_limit.held(key)


UNKNOWN_TIMESTAMP = -1
"""``RecordQueue.UNKNOWN``: the timestamp ``priorValueForBuffered`` gives a held key's prior value."""


class SuppressedGetter:
    """A time-limit suppression read as a table, by a stream's join, a table-table join or a view
    (``KTableSuppressProcessorSupplier``'s value getter): a key the buffer holds answers with its prior value, what
    the suppression last let through (none if that was a tombstone or nothing), with an unknown timestamp
    (``RecordQueue.UNKNOWN``, -1: the buffer keeps no timestamp of the prior value, so a table-table join's result
    takes its own record's); any other key with the input table's row."""

    def __init__(self, processor: SuppressProcessor, parent: Any) -> None:
        self.processor = processor
        self.parent = parent

    def get(self, key: Any) -> Any:
        held = self.processor.held(key)
        if held is None:
            return self.parent.get(key)
        prior, _ = held
        return None if prior is None else (prior, UNKNOWN_TIMESTAMP)

    def enable_sending_old_values(self) -> None:
        """Nothing to switch on: the suppression's input sends old values from the start (the supplier forces
        them), and its evictions always carry them."""


def _no_joiner(left: Any, right: Any) -> Any:  # pragma: no cover - a suppression joins nothing
    raise AssertionError("a suppression calls no joiner")
