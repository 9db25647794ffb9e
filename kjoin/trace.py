"""The result of a run: one step per input record, and the state after every step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from .fates import Fate, Reason
from .joins.aggregate import AggregateOutput
from .joins.fk_protocol import SUBSCRIPTION, Message
from .joins.window_aggregate import WTable, Windowed
from .joins.wtable import RESULT_TYPES
from .records import Output, Record, Side
from .scenario.aggregate import AggregateConfig
from .state import StateHistory, StoreId
from .stores import (
    CLOCK,
    GRACE_BUFFER,
    IN_FLIGHT,
    OUTER_BUFFER,
    STREAM_TIME,
    SUBSCRIPTIONS,
    StoreKind,
    kind_of,
    store_order,
    table_store_name,
    versioned_store_name,
    window_store_name,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .join_model import JoinWindows
    from .scenario import Scenario

__all__ = ["Step", "DeliveryStep", "Trace", "AggregateTrace", "StateSnapshot", "output_to_dict"]


@dataclass(frozen=True, slots=True)
class Step:
    """What one input record did.

    ``outputs`` are all records the step emitted, including results of *earlier* records
    whose window closed now (their ``origin_step`` says whose). ``fate`` and ``reason`` are
    this record's own: joined, buffered (until ``until_ms``), stored, no match, dropped.
    A foreign-key join's step that delivered a message instead is a :class:`DeliveryStep`.
    """

    index: int
    record: Record
    task: int
    outputs: tuple[Output, ...]
    fate: Fate
    reason: Reason | None
    until_ms: int | None
    explain: str

    @property
    def message(self) -> Message | None:
        """The message a :class:`DeliveryStep` delivered; ``None``: this step processed an input record."""
        return None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "step": self.index,
            "input": self.record.to_dict(),
            "task": self.task,
            "outputs": [output.to_dict() for output in self.outputs],
            "fate": self.fate.value,
            "reason": None if self.reason is None else self.reason.value,
            "until_ms": self.until_ms,
            "explain": self.explain,
        }
        if self.message is not None:
            data["message"] = self.message.to_dict()
        return data


@dataclass(frozen=True, slots=True)
class DeliveryStep(Step):
    """A foreign-key join's step that delivered one message between tasks (``delivered``) at
    task ``task``, rather than processing an input record.

    ``record`` is the delivery as a row of the steps table, so that tables of all steps read
    alike: side ``right`` for a subscription (it arrives at the right side), ``left`` for a
    response, the message's key, ts, destination partition and sequence number, and its text
    (:meth:`Message.describe`) as the value. It was never an input record.
    """

    delivered: Message

    @property
    def message(self) -> Message:
        return self.delivered

    @classmethod
    def of(
        cls,
        index: int,
        message: Message,
        outputs: tuple[Output, ...],
        fate: Fate,
        reason: Reason | None,
        until_ms: int | None,
        explain: str,
    ) -> "DeliveryStep":
        side = Side.RIGHT if message.topic == SUBSCRIPTION else Side.LEFT
        row = Record(side, message.key, message.describe(), message.ts, message.partition, message.seq)
        return cls(index, row, message.partition, outputs, fate, reason, until_ms, explain, message)


class Trace:
    """Every step of a run, in processing order, with the state after each one.

    ``scenario`` is what the run was asked to do: the :class:`~kjoin.scenario.Scenario` of a join,
    or the :class:`~kjoin.scenario.AggregateConfig` of an aggregate or a WTable join (the windowed-table design).
    """

    def __init__(self, scenario: "Scenario | AggregateConfig", steps: list[Step], history: StateHistory) -> None:
        self.scenario = scenario
        self.steps = steps
        self._history = history

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def join_window(self) -> "JoinWindows | None":
        """The join window of a stream-stream join; ``None`` for every other run (a windowed
        aggregate's windows are its ``scenario.options["windows"]``)."""
        scenario = self.scenario
        return None if isinstance(scenario, AggregateConfig) else scenario.window

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __getitem__(self, index: int) -> Step:
        return self.steps[index]

    def find(
        self,
        predicate: Any = None,
        *,
        offset: int | None = None,
        side: Side | str | None = None,
        partition: int | None = None,
    ) -> Step | None:
        """The first step whose input record matches: ``find(offset=7, side="left")``, or
        ``find(lambda step: step.outputs)``; ``None`` if no step does. With ``offset``, a foreign-key
        join's message deliveries are passed over (their row's offset is the message's number)."""
        wanted_side = None if side is None else Side(side)
        for step in self.steps:
            record = step.record
            if offset is not None and (record.offset != offset or step.message is not None):
                continue
            if wanted_side is not None and record.side is not wanted_side:
                continue
            if partition is not None and record.partition != partition:
                continue
            if predicate is not None and not predicate(step):
                continue
            return step
        return None

    @property
    def outputs(self) -> list[Output]:
        return [output for step in self.steps for output in step.outputs]

    def state_at(self, step: int) -> "StateSnapshot":
        """The state of every store after ``step``; negative steps count from the end, as in
        a list (``-1``: after the last record). :meth:`initial_state` is before the first."""
        if step < 0:
            step += len(self.steps)
        if not 0 <= step < len(self.steps):
            raise IndexError(f"step {step} is outside this trace (0 to {len(self.steps) - 1})")
        return StateSnapshot(self._history.at(step), step, self.steps[step].task, self._tasks())

    def initial_state(self) -> "StateSnapshot":
        """The state of every store before the first record: empty stores, no stream time."""
        return StateSnapshot(self._history.at(-1), -1, self.steps[0].task if self.steps else 0, self._tasks())

    def _tasks(self) -> frozenset[int]:
        """The tasks this trace's records went to (a drill-down of one partition: that one)."""
        return frozenset(step.task for step in self.steps)

    def changed_rows(self, step: int) -> tuple[tuple[StoreId, Any, Any], ...]:
        """The changes ``step`` made, with their rows: ``(store, entry, row)``, ``row`` being
        :data:`kjoin.state.DELETED` for a delete (for replaying the state cheaply)."""
        return self._history.changes(step)

    def changes_at(self, step: int) -> list[tuple[StoreId, Any, bool]]:
        """The entries ``step`` put (``True``) or deleted (``False``), per store."""
        from .state import DELETED

        return [(store, entry, row is not DELETED) for store, entry, row in self._history.changes(step)]

    # -- pandas -------------------------------------------------------------------------
    def steps_frame(self) -> "pd.DataFrame":
        """One row per step: the input record, fate, reason, output count and explanation."""
        import pandas as pd

        rows = [
            {
                "step": s.index,
                "task": s.task,
                "side": s.record.side.value,
                "key": s.record.key,
                "value": s.record.value,
                "ts": s.record.ts,
                "partition": s.record.partition,
                "offset": s.record.offset,
                "fate": s.fate.value,
                "reason": None if s.reason is None else s.reason.value,
                "until_ms": s.until_ms,
                "outputs": len(s.outputs),
                "explain": s.explain,
            }
            for s in self.steps
        ]
        columns = [
            "step",
            "task",
            "side",
            "key",
            "value",
            "ts",
            "partition",
            "offset",
            "fate",
            "reason",
            "until_ms",
            "outputs",
            "explain",
        ]
        return pd.DataFrame(rows, columns=columns).astype({"until_ms": "Int64"})

    def outputs_frame(self) -> "pd.DataFrame":
        """One row per output, with the step that emitted it and the step it came from."""
        import pandas as pd

        rows = [{"step": s.index, **o.to_dict()} for s in self.steps for o in s.outputs]
        columns = ["step", "key", "left", "right", "value", "ts", "tombstone", "kind", "partition", "origin_step"]
        return pd.DataFrame(rows, columns=columns)

    def state_frame(self, step: int) -> "pd.DataFrame":
        return self.state_at(step).frame()


class AggregateTrace(Trace):
    """A trace of an aggregate or a WTable join; :meth:`wtable` gives a windowed result."""

    def wtable(self) -> WTable:
        """The WTable of a windowed aggregate (or of a join whose result is a WTable)."""
        if self.scenario.join == "window-aggregate":
            return WTable(o for o in self.outputs if isinstance(o, AggregateOutput))
        if RESULT_TYPES.get(self.scenario.join) == "WTable":
            return WTable(_as_aggregate_output(o) for o in self.outputs)
        raise TypeError(
            f"a {self.scenario.join} result is a {RESULT_TYPES.get(self.scenario.join, 'KTable')}, not a WTable"
        )


def _as_aggregate_output(output: Output) -> AggregateOutput:
    key = output.key
    assert isinstance(key, Windowed)
    return AggregateOutput(
        key.key,
        output.value,
        None,
        output.ts,
        output.tombstone,
        "join",
        output.partition,
        output.origin_step,
        (key.window.start_ms, key.window.end_ms),
    )


def output_to_dict(output: Any) -> dict[str, Any]:
    """An output as JSON-ready data; a :class:`Windowed` key becomes ``key`` and ``window``."""
    data = output.to_dict()
    key = data.get("key")
    if isinstance(key, Windowed):
        data["key"] = key.key
        data["window"] = key.window.to_dict()
    return data


class StateSnapshot:
    """All stores after one step, read by kind of store.

    Each store's rows come from its kind (:mod:`kjoin.stores`): the snapshot names no
    column positions, only the columns a kind's ``header`` declares.
    """

    def __init__(
        self, stores: Mapping[StoreId, dict[Any, Any]], step: int, task: int = 0, tasks: frozenset[int] | None = None
    ) -> None:
        self.stores = stores
        self.step = step
        self._ids = {store: store for store in stores}  # a StoreId made here finds the store's own (with its kind)
        self.task = task
        """The task every reader below reads when given no ``task``: the task of the step's record."""
        self._trace_tasks = tasks

    def tasks(self) -> list[int]:
        """The trace's tasks: those its records went to, and any other whose stores hold something."""
        tasks = {store.task for store in self.stores}
        if self._trace_tasks is not None:
            filled = {s.task for s, entries in self.stores.items() if entries}
            tasks = {t for t in tasks if t in self._trace_tasks or t in filled}
        return sorted(tasks)

    def kind(self, store: StoreId) -> type[StoreKind] | None:
        """The kind of ``store``: what its entries mean (``None`` if it has none)."""
        return kind_of(self._ids.get(store, store))

    def _records(self, name: str, task: int | None) -> list[dict[str, Any]]:
        """The rows of one store (of ``task``, by default the step's own) as dicts from column name to cell."""
        store = StoreId(self.task if task is None else task, name)
        kind = self.kind(store)
        entries = self.stores.get(store, {})
        return [] if kind is None or not entries else kind.records_of(entries)

    def clock(self, task: int | None = None) -> dict[str, int]:
        return dict(self.stores.get(StoreId(self.task if task is None else task, CLOCK), {}))

    def stream_time(self, task: int | None = None) -> int | None:
        """The task's stream time, or ``None`` if the join keeps none (or nothing arrived yet)."""
        return self.clock(task).get(STREAM_TIME)

    def window(self, side: Side | str, task: int | None = None) -> list[dict[str, Any]]:
        """One side's window store: ``key, ts, value`` rows in (key, ts, arrival) order."""
        return self._records(window_store_name(Side(side)), task)

    def outer_buffer(self, task: int | None = None) -> list[dict[str, Any]]:
        """The 3.1+ outer-join buffer, in Kafka's iteration order."""
        return self._records(OUTER_BUFFER, task)

    def table(self, side: Side | str, task: int | None = None) -> list[dict[str, Any]]:
        """A table store: ``key, value, ts, old_value`` rows in key order."""
        return self._records(table_store_name(Side(side)), task)

    def versions(self, side: Side | str, task: int | None = None) -> list[dict[str, Any]]:
        """A versioned table: ``key, ts, value`` rows (``value`` None: a tombstone version) in (key, ts) order."""
        records = self._records(versioned_store_name(Side(side)), task)
        return [{"key": r["key"], "ts": r["valid from"], "value": r["value"]} for r in records]

    def subscriptions(self, task: int | None = None) -> list[dict[str, Any]]:
        """A foreign-key join's subscription store, in CombinedKey byte order."""
        return self._records(SUBSCRIPTIONS, task)

    def in_flight(self, task: int | None = None) -> list[Any]:
        """Messages sent and not yet delivered (to ``task``, or to any task), oldest first."""
        tasks = self.tasks() if task is None else [task]
        messages = (m for t in tasks for m in self.stores.get(StoreId(t, IN_FLIGHT), {}).values())
        return sorted(messages, key=lambda m: m.seq)

    def grace_buffer(self, task: int | None = None) -> list[dict[str, Any]]:
        """A stream-table join's grace buffer, in eviction order (ts, key bytes, arrival)."""
        records = self._records(GRACE_BUFFER, task)
        return [{"key": r["key"], "value": r["value"], "ts": r["ts"], "origin_step": r["from step"]} for r in records]

    def frame(self) -> "pd.DataFrame":
        """Every store as one long table: ``task, store, key, ts, value, detail``; a task's
        stores in :data:`kjoin.stores.STORE_ORDER`, each store's rows in its own order."""
        import pandas as pd

        rows = []
        for store in sorted(self.stores, key=store_order):
            kind = self.kind(store)
            entries = self.stores[store]
            if kind is None or not entries:
                continue
            for key, ts, value, detail in kind.summaries(entries):
                rows.append(
                    {"task": store.task, "store": store.name, "key": key, "ts": ts, "value": value, "detail": detail}
                )
        return pd.DataFrame(rows, columns=["task", "store", "key", "ts", "value", "detail"])
