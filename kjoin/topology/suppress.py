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
* ``max_records`` and ``max_bytes`` (``BufferConfig.maxRecords``, ``maxBytes``, either or both): after those
  evictions, a buffer holding more records than ``max_records`` or more bytes than ``max_bytes`` is full:
  ``when_full="emit_early"`` (``emitEarlyWhenFull``, time limit only) forwards the oldest entries until it is not;
  ``"shut_down"`` (``shutDownWhenFull``) stops the task: kjoin's :class:`SuppressionBufferFull`, naming the node,
  the record and Kafka's message (``... buffer exceeded its max capacity. Currently [n/max] records and [b/max]
  bytes.``).
* A buffer's bytes (:class:`BufferSizes`, Kafka's ``computeRecordSize`` in ``InMemoryTimeOrderedKeyValueBuffer``,
  from 3.6 ``InMemoryTimeOrderedKeyValueChangeBuffer``, the same sum from 2.1 to 4.4): per entry 8 (its buffer time) +
  the serialized key (a windowed key: its key's bytes then the window start; a session key's then end and start) +
  ``BufferValue.residentMemorySizeEstimate``: the prior value's bytes, the old value's unless they equal the prior's
  (the constructor keeps one array for equal bytes), the new value's (a null counts 0; values through the String
  serde, as the harness's tables carry them) + ``ProcessorRecordContext``'s: 8 + 8 + 4 + the characters of the
  record's topic name + each header's key characters and value bytes. An update of a buffered key replaces its
  entry and keeps its prior value (the old value of the update that made the entry). The record context is the one
  the entry was last buffered in: the topic the task read, an internal topic by its full name
  ``<application.id>-<name>`` (``Topology(application_id=...)``); a ``max_bytes`` suppression that records can reach
  from an internal topic whose name Kafka makes with its counter (``KSTREAM-AGGREGATE-STATE-STORE-<n>-repartition``,
  a foreign-key join's topics) is refused, as kjoin does not reproduce that name.
* A stream's join, a table-table join, a foreign-key join and a table's filter or map_values read a suppression as
  a table through :class:`SuppressedGetter` (Kafka's value getter, the same for both kinds): a key the buffer holds
  answers with its prior value (the old value of the update that made its entry), any other with the input table's
  row. An eviction is forwarded as ``Change(new, old)``, old being the latest buffered update's old value. A
  window-close suppression holds windowed keys (``[key@start/end]``), so its readers are a windowed table's join or
  a stream of windowed keys (``builder._check_windowed_keys``); its prior value for a new window is the aggregate's
  initializer, and a window no longer held is read from the aggregate's window store, which forgets it past its
  retention (size + grace). A group-by reads what a suppression forwards (a window-close one's selector sees the
  windowed key: ``{window_key: true}``, Kafka's ``Windowed.key()``).
* A foreign-key join (``KTableImpl.doJoinOnForeignKey``) of a time-limit suppression, on either side: on the left
  its subscriptions follow each eviction's ``Change(new, old)`` and a response is resolved against the getter (a
  held key: its prior value); on the right each eviction is scanned against the subscriptions and a subscription is
  joined with the getter. A foreign-key join of windowed keys is refused (``builder._check_windowed_keys``: on the
  right Kafka's first subscription fails, on the left kjoin does not model windowed primary keys).
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
    """A suppression buffer with ``when_full="shut_down"`` held more than ``max_records`` records or ``max_bytes``
    bytes: Kafka's task stops (``StreamsException``: the buffer exceeded its max capacity), and so does kjoin's
    run."""


@dataclass(frozen=True)
class Suppressed:
    """A suppression's options, as a document writes them (``{"until": "time_limit", "time_limit_ms": 10, ...}``)."""

    until: str
    time_limit_ms: int | None = None
    max_records: int | None = None
    when_full: str = "shut_down"
    max_bytes: int | None = None

    @property
    def bounded(self) -> bool:
        """Whether the buffer can be full (``max_records`` or ``max_bytes``)."""
        return self.max_records is not None or self.max_bytes is not None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"until": self.until}
        if self.time_limit_ms is not None:
            data["time_limit_ms"] = self.time_limit_ms
        if self.max_records is not None:
            data["max_records"] = self.max_records
        if self.max_bytes is not None:
            data["max_bytes"] = self.max_bytes
        if self.bounded:
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
    max_bytes = options.get("max_bytes")
    if max_bytes is not None and (
        not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or not 0 <= max_bytes <= MAX_LONG
    ):
        raise TopologyError(
            f"{where}.max_bytes: expected a whole number of bytes from 0 to {MAX_LONG}, got {max_bytes!r:.60}"
        )
    default = "emit_early" if until == "time_limit" else "shut_down"  # BufferConfig.maxRecords is eager
    when_full = options.get("when_full") or default
    if when_full not in WHEN_FULL:
        raise TopologyError(f"{where}.when_full: expected emit_early or shut_down, got {when_full!r:.60}")
    if until == "window_closes" and when_full == "emit_early":
        raise TopologyError(
            f"{where}.when_full: untilWindowCloses takes a strict buffer (unbounded, or max_records or max_bytes "
            "with shut_down): "
            "emitting early would forward a result that is not final"
        )
    bounded = records is not None or max_bytes is not None
    if not bounded and options.get("when_full") is not None:
        raise TopologyError(f"{where}.when_full: an unbounded buffer is never full; give max_records or max_bytes too")
    return Suppressed(until, limit, records, when_full if bounded else "shut_down", max_bytes)


class SuppressProcessor(NodeProcessor):
    """One task's suppression (``KTableSuppressProcessor``): ``windows`` are the aggregate's whose final results
    ``window_closes`` waits for (``None`` for a time limit)."""

    def __init__(
        self,
        node: Node,
        partition: int,
        log: Any,
        parent: Callable[[Node], Any] | None = None,
        kafka_topic: Callable[[str], str] = str,
    ) -> None:
        super().__init__(node, partition)
        self.parent = parent  # the task's other processors: a lookup reads the input table through them
        self.options: Suppressed = node.params["suppressed"]
        self.sizes = BufferSizes(kafka_topic, bool(node.params.get("session_keys")))
        """Each entry's bytes, counted only when ``max_bytes`` bounds the buffer."""
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
        entry = (type(rec.key).__name__, rec.key)
        self.contexts[entry] = self.taken
        if self.options.max_bytes is not None:
            self.sizes.put(entry, rec, None if self.taken is None else self.taken[0])
        if self.buffer is not None:
            forwarded, fate, reason, text = self._until_window_closes(rec, step)
            held = len(self.buffer.buffer)
            if self.options.max_bytes is not None:
                store = self.buffer.buffer
                self.sizes.keep(lambda e: (type(e[1].key).__name__, e[1].key, e[1].start_ms, e[1].end_ms) in store)
        else:
            forwarded, fate, reason, text = self._until_time_limit(rec)
            held = len(self.time_limit)  # type: ignore[arg-type]
        forwarded = [
            dataclasses.replace(f, context=self.contexts.pop((type(f.key).__name__, f.key), None)) for f in forwarded
        ]
        if self._over_capacity(held):
            records, max_bytes = self.options.max_records, self.options.max_bytes
            over = []
            if records is not None and held > records:
                over.append(f"{held} records, more than max_records {records}")
            if max_bytes is not None and self.sizes.total > max_bytes:
                over.append(f"{self.sizes.total} bytes, more than max_bytes {max_bytes}")
            raise SuppressionBufferFull(
                f"suppress {self.node.name}: after {said(rec)} its buffer holds {' and '.join(over)}, and when_full is "
                f"shut_down: Kafka stops the task (StreamsException: {self.node.name} buffer exceeded its max "
                f"capacity. Currently [{held}/{MAX_LONG if records is None else records}] records and "
                f"[{self.sizes.total}/{MAX_LONG if max_bytes is None else max_bytes}] bytes.). Raise max_records or "
                "max_bytes, leave the buffer unbounded, or (untilTimeLimit) choose when_full=emit_early"
            )
        return Outcome(fate, reason, text, forwarded)

    def _over_capacity(self, held: int) -> bool:
        """Kafka's ``overCapacity``: more records than ``max_records`` or more bytes than ``max_bytes``."""
        records, max_bytes = self.options.max_records, self.options.max_bytes
        return (records is not None and held > records) or (max_bytes is not None and self.sizes.total > max_bytes)

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
        self.evicted.clear()  # a child that failed under `continue` cut the previous record's forwards short
        self.buffer.process(update, ctx)
        forwarded = []
        priors = self.buffer.buffer.evicted_priors
        for o in ctx.outputs:  # type: ignore[attr-defined]
            windowed = WindowedKey(o.key, *o.window)
            # Change(new, old), old the latest update's; the key stays held until its record has gone through
            self.evicted.append((windowed, priors.get((type(o.key).__name__, o.key, *o.window)), o.ts))
            forwarded.append(Rec(windowed, o.value, o.ts, o.old, True))
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
        if self.options.bounded and self.options.when_full == "emit_early":
            while self._over_capacity(len(store)) and (evicted := store.evict_first()) is not None:
                full = self._fullness(len(store))
                forwarded.append(self._evicting(evicted))
                notes.append(f"{render_value(evicted[0])} emitted early (the buffer held {full})")
        text = f"{said(rec)} buffered (stream time {stream_time}, time limit {limit} ms)"
        if notes:
            shown = ", ".join(f"{n}: {at(render_value(r.value), r.ts)}" for n, r in zip(notes, forwarded))
            text += f"; forwarded {shown}"
        return forwarded, Fate.BUFFERED if not forwarded else Fate.FORWARDED, Reason.TIME_LIMIT, text + "."

    def _fullness(self, remaining: int) -> str:
        """What made the buffer full, before the entry just evicted left it (``remaining``: the records after)."""
        records, max_bytes = self.options.max_records, self.options.max_bytes
        parts = []
        if records is not None and remaining + 1 > records:
            parts.append(f"{remaining + 1} records, more than {records}")
        if max_bytes is not None and self.sizes.total > max_bytes:
            parts.append(f"{self.sizes.total} bytes, more than {max_bytes}")
        return " and ".join(parts)

    def _evicting(self, evicted: tuple[Any, Any, int, Any, Any]) -> Rec:
        """An evicted entry, held until its record has run through the children: Kafka's ``evictWhile`` emits an
        entry before it removes it from the buffer, so a join below that looks the key up still reads its prior
        value (``priorValueForBuffered``). It goes on as ``Change(new, old)`` with its latest update's old value,
        whether or not a child asked for old values (a table join below reads it: "nothing before")."""
        key, value, ts, prior, old = evicted
        self.sizes.remove((type(key).__name__, key))
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
        if self.time_limit is not None:
            return self.time_limit.held(key)
        if not isinstance(key, WindowedKey):  # a window-close suppression holds windowed keys only
            return None
        assert self.buffer is not None
        held, prior = self.buffer.buffer.prior((type(key.key).__name__, key.key, key.start_ms, key.end_ms))
        return (prior, UNKNOWN_TIMESTAMP) if held else None


class BufferSizes:
    """Each buffered entry's bytes as Kafka counts them (``computeRecordSize``, see the module) and their total:
    ``kafka_topic`` gives a topic's full name (an internal one prefixed by the application id), ``session_keys``
    whether a windowed key serializes its window's end and start (a session) or its start."""

    def __init__(self, kafka_topic: Callable[[str], str], session_keys: bool) -> None:
        self.kafka_topic = kafka_topic
        self.session_keys = session_keys
        self.entries: dict[tuple[str, Any], tuple[bytes | None, int]] = {}
        """Entry -> (its prior value's bytes, its size)."""
        self.total = 0

    def put(self, entry: tuple[str, Any], rec: Rec, context: Any) -> None:
        """``rec`` buffered as ``entry`` in the record context ``context`` (the record the task took)."""
        new, old = _bytes(rec.value), _bytes(rec.old)
        found = self.entries.get(entry)
        prior = old if found is None else found[0]  # a new entry's prior value is its old value
        size = (
            8
            + len(self.key_bytes(rec.key))
            + (0 if prior is None else len(prior))
            + (0 if old is None or old == prior else len(old))  # BufferValue keeps one array of equal bytes
            + (0 if new is None else len(new))
            + self.context_size(context)
        )
        self.total += size - (0 if found is None else found[1])
        self.entries[entry] = (prior, size)

    def remove(self, entry: tuple[str, Any]) -> None:
        found = self.entries.pop(entry, None)
        if found is not None:
            self.total -= found[1]

    def keep(self, held: Callable[[tuple[str, Any]], bool]) -> None:
        """Forget the entries the buffer no longer holds."""
        for entry in [e for e in self.entries if not held(e)]:
            self.remove(entry)

    def key_bytes(self, key: Any) -> bytes:
        """The serialized key: a windowed key's key then its start (``TimeWindowedSerializer``), or end then start
        (``SessionWindowedSerializer``); any other key its text's UTF-8."""
        if not isinstance(key, WindowedKey):
            return render_value(key).encode("utf-8")
        return render_value(key.key).encode("utf-8") + key.window_bytes(self.session_keys)

    def context_size(self, context: Any) -> int:
        """``ProcessorRecordContext.residentMemorySizeEstimate``: timestamp, offset, partition, the topic's
        characters (UTF-16 units, Java's ``toCharArray``), each header's key characters and value bytes."""
        if context is None:  # pragma: no cover - the runtime hands every suppression the record it took
            raise AssertionError("a suppression buffers in the record context of the record the task took")
        size = 8 + 8 + 4 + _chars(self.kafka_topic(context.topic))
        for name, value in context.headers:
            size += _chars(name) + (0 if value is None else len(render_value(value).encode("utf-8")))
        return size


def _bytes(value: Any) -> bytes | None:
    """A value through the String serde: its text's UTF-8, ``None`` for null."""
    return None if value is None else render_value(value).encode("utf-8")


def _chars(text: str) -> int:
    """Java's ``String.toCharArray().length``: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


UNKNOWN_TIMESTAMP = -1
"""``RecordQueue.UNKNOWN``: the timestamp ``priorValueForBuffered`` gives a held key's prior value."""


class SuppressedGetter:
    """A suppression read as a table, by a stream's join, a table-table join, a foreign-key join or a view
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
