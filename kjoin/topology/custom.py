"""A user's own processor: ``KStream.process`` and ``KStream.processValues`` (KIP-820), and ``peek``.

A processor is a Python function ``(record, ctx)`` called once per record, or a document's name from a small
vocabulary that the Kafka Streams harness (``TopologyOracle.java``) implements as Java processors too:

==================  ==========================================================================================
``count_per_key``   a running count per key in the processor's store; forwards the count as text (``"1"``,
                    ``"2"``, ...); a null key is not counted (a key-value store takes no null key)
``dedupe``          forwards a record only when its value differs from the key's last forwarded value, which
                    it keeps in its store, the two compared as the String serde writes them (``0`` and ``"0"``
                    are one value); a null key passes through (no store entry)
``swap``            (``process`` only) forwards ``(value's text, key)``: the value becomes the key
==================  ==========================================================================================

How a processor sees a record (:class:`ProcessorRecord`) and what it may do (:class:`ProcessorContext`):

- ``ctx.forward(value=..., key=..., timestamp=...)`` sends a record on (each left out: the record's own); any
  number of times, or none (the record is then dropped with the reason ``not-forwarded``).
- ``process_values`` may not change the key: Kafka's ``FixedKeyRecord`` has no ``withKey``, and kjoin refuses a
  forward with another key. ``process`` may, so a join or an aggregate below it reads it through a repartition
  topic (Kafka's ``KStreamImpl.process`` sets ``repartitionRequired``; ``processValues`` does not).
- ``ctx.store`` is the processor's own key-value store (``store=`` names it), one per task; its entries show in
  the trace like any store's.
- Punctuation (``ctx.schedule``) is refused with kjoin's error: kjoin has no wall-clock or stream-time
  punctuators.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..fates import Fate, Reason
from ..records import render_value
from ..serde import string_serde_text
from ..state import StoreId
from ..stores.base import StoreKind
from .branching import BRANCH_OPS, BranchNode, SplitNode
from .functions import Function, FunctionError, UserFunctionError, function_name
from .plain import not_a_key, not_a_value
from .processors import NodeProcessor, Outcome, Rec, said

__all__ = [
    "ProcessorRecord", "ProcessorContext", "processor", "peek_action", "build_custom", "CUSTOM_OPS", "PROCESSORS",
]  # fmt: skip

CUSTOM_OPS = ("process", "process_values", "peek", *BRANCH_OPS)
"""The nodes whose processors this module builds (a split's: :mod:`kjoin.topology.branching`)."""

PROCESSORS = ("count_per_key", "dedupe", "swap")
"""The document vocabulary of processors (``swap`` changes the key: ``process`` only)."""


@dataclass(frozen=True)
class ProcessorRecord:
    """The record a processor is handed: Kafka's ``Record`` (``FixedKeyRecord`` for ``process_values``)."""

    key: Any
    value: Any
    timestamp: int


class ProcessorStoreKind(StoreKind):
    """A processor's own key-value store (``Stores.keyValueStoreBuilder``, added with ``addStateStore``)."""

    kind = "processor-store"
    header = ("key", "value")

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        return (entry_key, stored)


class ProcessorStore:
    """``ctx.store``: ``get(key)``, ``put(key, value)`` (``None``: a delete, as Kafka's ``put(key, null)``),
    ``delete(key)``; its changes go to the task's state log, so the trace shows them."""

    def __init__(self, log: Any, partition: int, name: str) -> None:
        self._log = log
        self._id = StoreId(partition, f"store {name}", ProcessorStoreKind.kind)
        self.name = name
        log.declare(self._id)

    def get(self, key: Any, default: Any = None) -> Any:
        return self._log.get(self._id, self._key(key), default)

    def put(self, key: Any, value: Any) -> None:
        if value is None:
            self.delete(key)
            return
        problem = not_a_value(value)
        if problem is not None:
            raise UserFunctionError(f"the store {self.name}", f"was given {problem}", fix="store a JSON value")
        self._log.put(self._id, self._key(key), value)

    def delete(self, key: Any) -> None:
        key = self._key(key)
        if self._log.get(self._id, key) is not None:
            self._log.delete(self._id, key)

    def _key(self, key: Any) -> Any:
        if key is None:
            raise UserFunctionError(
                f"the store {self.name}", "was given a null key", fix="skip null keys (Kafka's stores refuse them)"
            )
        problem = not_a_key(key)
        if problem is not None:
            raise UserFunctionError(f"the store {self.name}", f"was given the key {problem}")
        return key


class ProcessorContext:
    """What a processor may do with the record it is handed (Kafka's ``ProcessorContext``, kept small)."""

    def __init__(self, rec: ProcessorRecord, store: ProcessorStore | None, fixed_key: bool, text_keys: bool) -> None:
        self.record = rec
        self._store = store
        self._fixed_key = fixed_key
        self._text_keys = text_keys
        self.forwarded: list[Rec] = []

    @property
    def key(self) -> Any:
        return self.record.key

    @property
    def value(self) -> Any:
        return self.record.value

    @property
    def timestamp(self) -> int:
        return self.record.timestamp

    @property
    def store(self) -> ProcessorStore:
        if self._store is None:
            raise UserFunctionError(
                "the processor", "asked for its store and has none", fix="name one: process_values(fn, store='name')"
            )
        return self._store

    _SAME: Any = object()

    def forward(self, value: Any = _SAME, *, key: Any = _SAME, timestamp: Any = _SAME) -> None:
        """Send a record on: the record's own key, value and timestamp unless given."""
        record = self.record
        if key is not self._SAME and self._fixed_key and key != record.key:
            raise UserFunctionError(
                "the processor",
                f"forwarded the key {render_value(key)} for the record keyed {render_value(record.key)}",
                fix="process_values keeps the key (Kafka's FixedKeyRecord has no withKey): use process to change it",
            )
        new_key = record.key if key is self._SAME else key
        if not self._fixed_key and key is not self._SAME:
            problem = not_a_key(new_key)
            if problem is not None:
                raise UserFunctionError("the processor", f"forwarded the key {problem}")
            if self._text_keys:
                new_key = string_serde_text(new_key)
        new_value = record.value if value is self._SAME else value
        problem = not_a_value(new_value)
        if problem is not None:
            raise UserFunctionError("the processor", f"forwarded {problem}")
        ts = record.timestamp if timestamp is self._SAME else timestamp
        if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
            raise UserFunctionError(
                "the processor", f"forwarded the timestamp {ts!r:.40}", fix="forward a whole number of milliseconds"
            )
        self.forwarded.append(Rec(new_key, new_value, ts))

    def schedule(self, *args: Any, **kwargs: Any) -> None:
        """Kafka's ``context.schedule(interval, type, punctuator)``: refused."""
        raise UserFunctionError(
            "the processor",
            "scheduled a punctuator",
            fix="kjoin models no punctuation (wall-clock or stream-time); forward from process instead",
        )


def _count_per_key(record: ProcessorRecord, ctx: ProcessorContext) -> None:
    if record.key is None:
        return
    count = int(ctx.store.get(record.key) or "0") + 1
    ctx.store.put(record.key, str(count))
    ctx.forward(str(count))


def _dedupe(record: ProcessorRecord, ctx: ProcessorContext) -> None:
    if record.key is None:
        ctx.forward()
        return
    seen = ctx.store.get(record.key)
    if seen is not None and string_serde_text(seen) == string_serde_text(record.value):  # Kafka's String store
        return
    ctx.store.put(record.key, record.value)
    ctx.forward()


def _swap(record: ProcessorRecord, ctx: ProcessorContext) -> None:
    ctx.forward(key=string_serde_text(record.value), value=record.key)


_VOCABULARY: dict[str, tuple[Callable[..., None], str]] = {
    "count_per_key": (_count_per_key, "a running count per key"),
    "dedupe": (_dedupe, "a de-duplicator of each key's values"),
    "swap": (_swap, "the value as the key, the key as the value"),
}


def processor(spec: Any, op: str) -> Function:
    """``process``'s or ``process_values``'s processor: a Python function ``(record, ctx)``, or
    ``{count_per_key: true}``, ``{dedupe: true}``, ``{swap: true}`` (``process`` only)."""
    if isinstance(spec, Function):
        return spec
    if callable(spec):
        return Function(spec, None, function_name(spec))
    allowed = PROCESSORS if op == "process" else tuple(name for name in PROCESSORS if name != "swap")
    if (
        not isinstance(spec, dict)
        or len(spec) != 1
        or next(iter(spec)) not in allowed
        or next(iter(spec.values())) is not True
    ):
        forms = ", ".join(f"{{{name}: true}}" for name in allowed)
        hint = " (swap changes the key: use process)" if isinstance(spec, dict) and "swap" in spec else ""
        raise FunctionError(f"{op}: expected one of {forms} or a Python function (record, ctx), got {spec!r:.80}{hint}")
    name = next(iter(spec))
    call, text = _VOCABULARY[name]
    return Function(call, {name: True}, text)


class ProcessNode(NodeProcessor):
    """``process`` / ``process_values``: the user's processor, called once per record with its context."""

    def __init__(self, node: Any, partition: int, log: Any, text_keys: bool) -> None:
        super().__init__(node, partition)
        store = node.params.get("store")
        self.store = None if store is None else ProcessorStore(log, partition, store)
        self.text_keys = text_keys

    def handle(self, port: Any, rec: Rec, step: int) -> Outcome:
        fn = self.node.params["fn"]
        fixed = self.node.op == "process_values"
        ctx = ProcessorContext(ProcessorRecord(rec.key, rec.value, rec.ts), self.store, fixed, self.text_keys)
        fn(ctx.record, ctx)
        made = ctx.forwarded
        if not made:
            return Outcome(Fate.DROPPED, Reason.NOT_FORWARDED, lambda: f"{fn.text}: forwarded nothing for {said(rec)}.")
        return Outcome(
            Fate.FORWARDED, None, lambda: f"{fn.text}: {said(rec)} → " + ", ".join(map(said, made)) + ".", made
        )


class PeekNode(NodeProcessor):
    """``peek``: the action sees the record, which goes on unchanged (Kafka's ``KStreamPeek``)."""

    def handle(self, port: Any, rec: Rec, step: int) -> Outcome:
        fn = self.node.params["fn"]
        fn(rec.key, rec.value)
        plain = Rec(rec.key, rec.value, rec.ts)
        return Outcome(Fate.FORWARDED, None, lambda: f"{fn.text} saw {said(rec)}; passed it on.", [plain])


def peek_action(spec: Any) -> Function:
    """``peek``'s action ``(key, value) -> None``: a Python function, or ``true`` in a document (an action with no
    effect on the records, as any peek has)."""
    if isinstance(spec, Function):
        return spec
    if spec is True:
        return Function(lambda key, value: None, True, "the peek")
    if callable(spec):
        return Function(spec, None, function_name(spec))
    raise FunctionError(f"peek: expected true or a Python function (key, value), got {spec!r:.80}")


def build_custom(node: Any, partition: int, log: Any, text_keys: bool) -> NodeProcessor:
    """The processor of a ``process``, ``process_values``, ``peek``, ``split`` or branch node in the task of
    ``partition``."""
    if node.op == "peek":
        return PeekNode(node, partition)
    if node.op == "split":
        return SplitNode(node, partition)
    if node.op == "branch":
        return BranchNode(node, partition)
    return ProcessNode(node, partition, log, text_keys)
