"""What a topology does when one of its user functions throws: Kafka's processing exception handler.

How it works (Kafka 3.9+, KIP-1033; ``ProcessorNode.process``):

* The handler sees an exception a processor throws while it handles a record: a mapper, predicate, key selector,
  joiner, aggregator or foreign-key extractor that raised (and, in kjoin, one that returned what no serde could
  write); and Kafka's own ``NullPointerException`` for a null-key record in a left stream-table join's grace buffer
  (3.7+, KIP-962 lets the record reach the buffer; :data:`NULL_KEY_IN_GRACE_BUFFER`). Not serde errors (the
  deserialization and production handlers decide those), and not a sink's: a sink node (``to``, a repartition
  topic) catches nothing, so its partitioner's exception reaches the node that forwarded to it, which hands it to
  the handler; a source node catches nothing either (kjoin: the run stops).
* ``fail`` (``LogAndFailProcessingExceptionHandler``, the default): the task fails; kjoin stops the run with its
  :class:`~kjoin.topology.runtime.ProcessingError` naming node, function and record.
* ``continue`` (``LogAndContinueProcessingExceptionHandler``): the record goes no further from that node; the
  node's parent goes on (its other children still get the record), the task's stream time has already advanced
  (it advances when the task takes the record), and the record counts in ``dropped-records``. kjoin's trace shows a
  ``dropped`` visit with the reason :attr:`~kjoin.fates.Reason.PROCESSING_EXCEPTION` at that node.
* ``dead_letter_queue: topic`` (4.2+, KIP-1034, ``errors.dead.letter.queue.topic.name``): both built-in handlers first
  write the record to that topic (``ExceptionHandlerUtils.buildDeadLetterQueueRecord``): the key and value of the record
  the task took from its source topic (its raw bytes, whatever the nodes before made of it), the timestamp of the record
  as it reached the failing node, no partition (the producer's partitioner: murmur2 of the key; kjoin puts a null key in
  partition 0), the source record's headers, then :data:`DLQ_HEADERS`. With ``fail`` the record is written and the task
  fails; kjoin's error says so. Once a sink has sent a record in the failing node's record context, the dead-letter
  record's key and value are null: ``RecordCollectorImpl.send`` frees the raw source record from the current record
  context, to save memory (``freeRawInputRecordFromContext``, in the 4.2.0 and 4.4.0 jars).
  ``ProcessorContextImpl.forward`` gives a forward's children a copy of the record context (with the raw record as it is
  then) whenever the forwarded record's timestamp or headers object differs from the context's, and
  ``Record.withKey``/``withValue`` copy the headers into a new object: so only a node that forwards the record it took
  (:data:`SAME_RECORD_OPS`) shares its context with its children, and a sink frees the raw record of its own copy. A
  source's children share one copy, so a sink that is a stream's first child empties the dead-letter records of its
  later siblings; a sink under a ``map_values``, a ``flat_map`` or a table's ``to_stream`` (or a filter: a
  ``FixedKeyProcessor``) leaves its parent's siblings theirs (``tests/test_topology_dead_letters.py``, against 4.4.0). A
  sink of ``Windowed<K>`` keys writes each key's text, which the application maps before the sink (``KStreamMap``: a new
  record, so a copy of the context): the sink frees that copy only, and its siblings keep the raw record (4.2.0 and
  4.4.0); so does a repartition topic's sink, behind the filter Kafka puts before it (``-repartition-filter``) or a
  table group-by's map, and a foreign-key join's subscription or response sink. A record a table group-by wrote to its
  repartition topic is a ``Change`` in ``ChangedSerializer``'s bytes, so its dead-letter value is those
  (:func:`changed_value_text`). A window-close aggregate forwards a window's final result in the record context of the
  record that closed it (``fetchAndEmit``). A suppression's eviction runs in the record context its entry was buffered
  in (``KTableSuppressProcessor.emit``), so a record that fails below it is dead-lettered as the buffered record (its
  key, value and offset). The buffer keeps that context object: its raw record is null if a sink freed it before the
  suppression took the record (a sink that is the source's first child, beside the aggregate), else kept, as no sink of
  the evicting step sends in it (``Rec.context``). A record that leaves a stream-table join's grace buffer runs in the
  context ``RocksDBTimeOrderedKeyValueBuffer`` stored serialized, without the raw record: its dead-letter record names
  the buffered record's offset, with a null key and value (:class:`~kjoin.topology.processors.joins.StreamTableNode`).
* ``global_processing_exception_handler: true`` (4.3+, KIP-1270, ``processing.exception.handler.global.enabled``):
  the handler also covers the global thread's processors. A kjoin global table runs no user function (it is a
  ``GlobalKTable`` read from its topic), so nothing there can throw; the setting changes no output and is refused
  on versions without it. Kafka writes no dead-letter record for a global processor (it logs a warning).

The headers kjoin writes (:func:`dead_letter_headers`) are Kafka's, byte for byte, except the stack trace: Kafka
writes Java's ``printStackTrace`` (the ``toString()`` line, then one ``\\tat`` line per JVM frame); kjoin writes
the first line only, as it has no JVM frames. The exception's class of a Python function is its Python name
(``ValueError``, ``mymodule.MyError``); the vocabulary's ``map_values {fail_on: text}`` throws what the harness's
mapper throws (``java.lang.IllegalArgumentException``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..records import render_value
from ..semantics import Semantics
from .graph import TopologyError

__all__ = [
    "KafkaException",
    "NULL_KEY_IN_GRACE_BUFFER",
    "SAME_RECORD_OPS",
    "HANDLERS",
    "ExceptionHandling",
    "exception_handling",
    "dead_letter_headers",
    "DLQ_HEADERS",
]

HANDLERS = ("fail", "continue")
"""``processing_exception_handler``: ``LogAndFailProcessingExceptionHandler`` or
``LogAndContinueProcessingExceptionHandler``."""

DLQ_HEADERS = (
    "__streams.errors.exception",
    "__streams.errors.message",
    "__streams.errors.stacktrace",
    "__streams.errors.topic",
    "__streams.errors.partition",
    "__streams.errors.offset",
)
"""The headers Kafka adds to a dead-letter record, in its order (``ExceptionHandlerUtils``)."""


@dataclass(frozen=True)
class ExceptionHandling:
    """A topology's processing exception handler and dead-letter queue (the defaults: fail, none)."""

    handler: str = "fail"
    dead_letter_queue: str | None = None
    global_enabled: bool = False

    @property
    def continues(self) -> bool:
        return self.handler == "continue"

    def to_dict(self) -> dict[str, Any]:
        """The document's fields for the settings that are not the defaults."""
        data: dict[str, Any] = {}
        if self.handler != "fail":
            data["processing_exception_handler"] = self.handler
        if self.dead_letter_queue is not None:
            data["dead_letter_queue"] = self.dead_letter_queue
        if self.global_enabled:
            data["global_processing_exception_handler"] = True
        return data


def exception_handling(
    semantics: Semantics, handler: Any, dead_letter_queue: Any, global_enabled: Any, at: str = "Topology({}=...)"
) -> ExceptionHandling:
    """The settings checked against ``semantics``: kjoin's error naming the field (``at``: where it was given, the
    field's name in its ``{}``) and the fix."""
    if handler is None:
        handler = "fail"
    if handler not in HANDLERS:
        raise TopologyError(
            f"{at.format('processing_exception_handler')}: expected fail or continue, got {handler!r:.60}"
        )
    if handler != "fail" and not semantics.processing_exception_handler:
        raise TopologyError(
            f"{at.format('processing_exception_handler')}: Kafka {semantics} has no processing exception handler "
            "(KIP-1033, 3.9): a user function that throws fails the task; choose semantics 3.9 or later, or "
            "leave it out"
        )
    if dead_letter_queue is not None:
        if not isinstance(dead_letter_queue, str) or not dead_letter_queue:
            raise TopologyError(
                f"{at.format('dead_letter_queue')}: a topic's name (text), got {dead_letter_queue!r:.60}"
            )
        if not semantics.dead_letter_queue:
            raise TopologyError(
                f"{at.format('dead_letter_queue')}: Kafka {semantics} has no dead-letter queue (KIP-1034, 4.2: "
                "errors.dead.letter.queue.topic.name); choose semantics 4.2 or later, or leave it out"
            )
    if global_enabled not in (None, False, True):
        raise TopologyError(
            f"{at.format('global_processing_exception_handler')}: true or false, got {global_enabled!r:.60}"
        )
    if global_enabled and not semantics.global_processing_exception_handler:
        raise TopologyError(
            f"{at.format('global_processing_exception_handler')}: Kafka {semantics} has no such setting "
            "(KIP-1270, 4.3: processing.exception.handler.global.enabled); choose semantics 4.3 or later, or "
            "leave it out"
        )
    return ExceptionHandling(handler, dead_letter_queue, bool(global_enabled))


class KafkaException(Exception):
    """An exception Kafka's own processor throws where kjoin's processor would go on: a null-key record reaching a
    stream-table join's grace buffer (``NullPointerException: key cannot be null``,
    :attr:`~kjoin.fates.Reason.NULL_KEY_IN_GRACE_BUFFER`). The handler decides as for any processing exception:
    ``fail`` stops the run there, ``continue`` drops the record at that node. ``fix``: what the error tells the
    user to change."""

    def __init__(self, java_class: str, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.java_class = java_class
        self.fix = fix


NULL_KEY_IN_GRACE_BUFFER = (
    "java.lang.NullPointerException",
    "key cannot be null",
    "keep null-key records out of this join (a filter on the key before it), or give it no grace period",
)
"""What Kafka 3.7+ throws for a null-key record in a left stream-table join with a grace period
(``RocksDBTimeOrderedKeyValueBuffer.put``: ``requireNonNull(record.key(), "key cannot be null")``), and the fix."""


def exception_class(error: BaseException) -> str:
    """The name Kafka's ``__streams.errors.exception`` header would give ``error``: Java's class for the vocabulary's
    exceptions (``java_class``), else the Python class (a built-in one by its bare name)."""
    java = getattr(error, "java_class", None)
    if java is not None:
        return str(java)
    kind = type(error)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def exception_message(error: BaseException) -> str | None:
    """``getMessage()``: the exception's text; ``None`` (a header with a null value) when it has none."""
    return str(error) if error.args else None


SAME_RECORD_OPS = frozenset({"merge", "split", "branch"})
"""The nodes that forward the record they took, not a new one (a merge's ``PassThrough``, ``KStreamBranch``): their
children run in their record context, so a sink below frees the raw record the node's later siblings see. Every
other node's children run in a copy (see the module): a filter or a peek too, which are ``FixedKeyProcessor``
processors, whose ``FixedKeyRecord`` copies the headers into a new object."""


def dead_letter_headers(error: BaseException, topic: str, partition: int, offset: int) -> tuple[tuple[str, Any], ...]:
    """The ``__streams.errors.*`` headers of the dead-letter record for ``error`` on the record the task took from
    ``topic`` ``partition`` at ``offset`` (see the module docstring for the stack trace)."""
    name, message = exception_class(error), exception_message(error)
    first_line = name if message is None else f"{name}: {message}"
    return tuple(zip(DLQ_HEADERS, (name, message, first_line, topic, str(partition), str(offset))))


def changed_value_text(new: Any, old: Any) -> str:
    """A table group-by's ``Change(new, old)`` as ``ChangedSerializer`` (3.4+, the String serde inside) writes it to
    the repartition topic, read back as text (what a dead-letter record of it carries): ``new`` then the byte 1 when
    only it is there; ``old`` then the byte 0 when only it is; both (the group stayed the same): the zigzag varint of
    ``new``'s length in bytes, ``new``, ``old``, the byte 2. Bytes that are no UTF-8 (a varint's from a length of 64
    on) read as U+FFFD, as Java's String decoder reads them."""
    new_bytes = None if new is None else render_value(new).encode("utf-8")
    old_bytes = None if old is None else render_value(old).encode("utf-8")
    if new_bytes is not None and old_bytes is not None:
        length, varint = len(new_bytes) << 1, bytearray()  # zigzag of a length (never negative): twice it
        while length >= 0x80:
            varint.append((length & 0x7F) | 0x80)
            length >>= 7
        varint.append(length)
        raw = bytes(varint) + new_bytes + old_bytes + b"\x02"
    elif new_bytes is not None:
        raw = new_bytes + b"\x01"
    else:
        raw = (old_bytes or b"") + b"\x00"
    return raw.decode("utf-8", errors="replace")
