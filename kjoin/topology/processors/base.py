"""What every node's processor shares: the record handed from node to node (:class:`Rec`), the :class:`Outcome` a
processor reports, the :class:`NodeProcessor` base, and the :class:`ScopedLog` that files a node's stores under its
Kafka task."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ...fates import Fate, Reason
from ...joins.context import StepContext
from ...records import Side, render_value
from ...state import StoreId
from ...stores import Clock
from ...times import at
from ..graph import Node

__all__ = ["Rec", "Outcome", "ScopedLog", "TaskClock", "OldValue", "NodeProcessor", "Wiring", "said", "join_outcome"]


@dataclass(frozen=True, slots=True)
class Rec:
    """A record handed from node to node: a stream record, or a table's ``Change(value, old)``."""

    key: Any
    value: Any
    ts: int
    old: Any = None
    has_old: bool = False
    is_latest: bool = True
    """A versioned table's ``Change.isLatest``: false for an out-of-order version (KIP-914)."""
    to: str | None = None
    """The one child the record goes to (Kafka's ``context.forward(record, childName)``: a ``split``'s branch);
    ``None``: every child."""
    context: Any = None
    """The record context the children run in when it is not the step's: a suppression's eviction runs in the one its
    entry was buffered in (``KTableSuppressProcessor.emit``: ``setRecordContext(toEmit.recordContext())``): the
    record the task took then, and whether a sink had freed its raw record by then (the buffer keeps the context
    object as it was handed over); ``None``: the step's."""


@dataclass
class Outcome:
    fate: Fate
    reason: Reason | None
    explain: Any
    """The story: text, or a function that writes it when someone reads it (:attr:`NodeVisit.explain`)."""
    forwarded: list[Rec] = field(default_factory=list)
    writes: list[tuple[str, Any, Any, int, Any]] = field(default_factory=list)
    """(topic, key, value, ts, message or None): records for the runtime to append to topics."""


class _LiveView:
    def __init__(self, scoped: "ScopedLog") -> None:
        self._scoped = scoped

    def get(self, store: StoreId, default: Any = None) -> Any:
        return self._scoped._log.live.get(self._scoped.id_of(store), default)


class ScopedLog:
    """A :class:`~kjoin.state.StateLog` seen by one node's processors: a store ``right table`` of
    partition 1 becomes ``StoreId("0_1", "join-3: right table")``."""

    def __init__(self, log: Any, prefix: str, task_of: Callable[[int, str], str]) -> None:
        self._log = log
        self._prefix = prefix
        self._task_of = task_of
        self.live = _LiveView(self)

    def id_of(self, store: StoreId) -> StoreId:
        return StoreId(self._task_of(store.task, store.name), f"{self._prefix}{store.name}", store.kind)

    def put(self, store: StoreId, entry_key: Any, row: Any) -> None:
        self._log.put(self.id_of(store), entry_key, row)

    def delete(self, store: StoreId, entry_key: Any) -> None:
        self._log.delete(self.id_of(store), entry_key)

    def get(self, store: StoreId, entry_key: Any, default: Any = None) -> Any:
        return self._log.get(self.id_of(store), entry_key, default)

    def declare(self, store: StoreId) -> None:
        self._log.declare(self.id_of(store))


class TaskClock:
    """A task's own stream time (the largest timestamp it has taken), shown as a store ``task``."""

    def __init__(self, log: Any, task: str) -> None:
        self.clock = Clock(log, task, "task")  # type: ignore[arg-type]

    def advance(self, ts: int) -> int:
        return self.clock.advance("stream time", ts)


class OldValue:
    """A repartition record's old half (a table group-by writes ``Change(new, old)`` to its topic)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class NodeProcessor:
    """One node's processor in one task."""

    def __init__(self, node: Node, partition: int) -> None:
        self.node = node
        self.partition = partition

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def build(cls, node: Node, partition: int, wiring: "Wiring") -> "NodeProcessor":
        """The processor of ``node`` in the task of ``partition`` (:func:`kjoin.topology.processors.build_processor`
        calls it through :data:`~kjoin.topology.processors.PROCESSOR_OF`); a processor that needs more than its node
        takes it from ``wiring``."""
        return cls(node, partition)

    def forwarded(self, rec: "Rec") -> None:
        """Called once a record this node forwarded has run through its children (a suppression keeps an evicted
        entry readable until then)."""

    def as_table(self, partition: int) -> Any:
        """What a join or a view below reads this node through when it is a table (Kafka's value getter:
        ``get(key) -> (value, ts) | None``); an aggregate's processor keeps its own as ``table``."""
        table = getattr(self, "table", None)
        if table is None:  # pragma: no cover - the graph joins tables only
            raise AssertionError(f"{self.node.name} is not a table")
        return table


@dataclass(frozen=True)
class Wiring:
    """What a task hands the processors it builds: the state log, the Kafka version's rules, the task's other
    processors (``parent(node)``: a join reads its tables' stores through them), whether a source table is
    materialized, and what the tasks of one application instance share (a stream-stream join's time tracker)."""

    log: Any
    semantics: Any
    parent: Callable[[Node], Any]
    materialized: bool = True
    instance: Any = None

    def table(self, node: Node, partition: int) -> Any:
        """What a lookup in the task of ``partition`` reads table ``node`` through."""
        return self.parent(node).as_table(partition)


def said(rec: Rec) -> str:
    return at(f"{render_value(rec.key)}:{render_value(rec.value)}", rec.ts)


def join_outcome(ctx: StepContext, table: bool) -> Outcome:
    """A join processor's report as an outcome: its outputs become the records it forwards."""
    forwarded = []
    for output in ctx.outputs:
        value = None if output.tombstone else output.value
        forwarded.append(
            Rec(output.key, value, output.ts, output.old, output.has_old)
            if table
            else Rec(output.key, value, output.ts)
        )
    fate = ctx.fate if ctx.fate is not None else (Fate.JOINED if forwarded else Fate.STORED)
    return Outcome(fate, ctx.reason, ctx.explain, forwarded)
