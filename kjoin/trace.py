"""The result of a run: one step per input record, and the state after every step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from .fates import Fate, Reason
from .records import Output, Record, Side
from .state import StateHistory, StoreId
from .stores import CLOCK, GRACE_BUFFER, IN_FLIGHT, OUTER_BUFFER, SUBSCRIPTIONS, table_store_name, versioned_store_name, window_store_name

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .scenario import Scenario

__all__ = ["Step", "Trace", "StateSnapshot"]


@dataclass(frozen=True, slots=True)
class Step:
    """What one input record did.

    ``outputs`` are all records the step emitted, including results of *earlier* records
    whose window closed now (their ``origin_step`` says whose). ``fate`` and ``reason`` are
    this record's own: joined, buffered (until ``until_ms``), stored, no match, dropped.
    """

    index: int
    record: Record
    task: int
    outputs: tuple[Output, ...]
    fate: Fate
    reason: Reason | None
    until_ms: int | None
    explain: str
    message: Any = None
    """Foreign-key joins: the message this step delivered (then ``record`` describes it: side
    ``right`` for a subscription, ``left`` for a response; its value is the message's text)."""

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


class Trace:
    """Every step of a run, in processing order, with the state after each one."""

    def __init__(self, scenario: "Scenario", steps: list[Step], history: StateHistory) -> None:
        self.scenario = scenario
        self.steps = steps
        self._history = history

    def __len__(self) -> int:
        return len(self.steps)

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
        ``find(lambda step: step.outputs)``; ``None`` if no step does."""
        wanted_side = None if side is None else Side(side)
        for step in self.steps:
            record = step.record
            if offset is not None and record.offset != offset:
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
        columns = ["step", "task", "side", "key", "value", "ts", "partition", "offset", "fate", "reason", "until_ms", "outputs", "explain"]
        return pd.DataFrame(rows, columns=columns).astype({"until_ms": "Int64"})

    def outputs_frame(self) -> "pd.DataFrame":
        """One row per output, with the step that emitted it and the step it came from."""
        import pandas as pd

        rows = [{"step": s.index, **o.to_dict()} for s in self.steps for o in s.outputs]
        columns = ["step", "key", "left", "right", "value", "ts", "tombstone", "kind", "partition", "origin_step"]
        return pd.DataFrame(rows, columns=columns)

    def state_frame(self, step: int) -> "pd.DataFrame":
        return self.state_at(step).frame()


class StateSnapshot:
    """All stores after one step, read by kind of store."""

    def __init__(
        self, stores: Mapping[StoreId, dict[Any, Any]], step: int, task: int = 0, tasks: frozenset[int] | None = None
    ) -> None:
        self.stores = stores
        self.step = step
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

    def _entries(self, name: str, task: int | None) -> dict[Any, Any]:
        return self.stores.get(StoreId(self.task if task is None else task, name), {})

    def clock(self, task: int | None = None) -> dict[str, int]:
        return dict(self._entries(CLOCK, task))

    def stream_time(self, task: int | None = None) -> int | None:
        """The task's stream time, or ``None`` if the join keeps none (or nothing arrived yet)."""
        return self.clock(task).get("stream time")

    def window(self, side: Side | str, task: int | None = None) -> list[dict[str, Any]]:
        """One side's window store: ``key, ts, value`` rows in (key, ts, arrival) order."""
        side = Side(side)
        entries = self._entries(window_store_name(side), task)
        ordered = sorted(entries.items(), key=lambda item: (_sortable(item[0][0]), item[0][1], item[0][2]))
        return [{"key": key, "ts": ts, "value": value} for (key, ts, _), value in ordered]

    def window_range(self, side: Side | str, task: int, retention_ms: int) -> tuple[int, int] | None:
        """``(oldest visible ts, newest ts put)`` of a window store, or ``None`` if empty so far."""
        observed = self.clock(task).get(f"{Side(side)} window observed")
        return None if observed is None else (observed - retention_ms + 1, observed)

    def outer_buffer(self, task: int | None = None) -> list[dict[str, Any]]:
        """The 3.1+ outer-join buffer, in Kafka's iteration order."""
        entries = self._entries(OUTER_BUFFER, task)
        return [
            {"ts": r.ts, "side": r.side.value, "key": r.key, "value": r.value, "closes_at_ms": r.closes_at_ms, "origin_step": r.origin_step}
            for _, r in sorted(entries.items(), key=lambda item: item[0])
        ]

    def table(self, side: Side | str, task: int | None = None) -> list[dict[str, Any]]:
        """A table store: ``key, value, ts, old_value`` rows in key order."""
        entries = self._entries(table_store_name(Side(side)), task)
        return [
            {"key": key, "value": value, "ts": ts, "old_value": old}
            for key, (value, ts, old) in sorted(entries.items(), key=lambda item: _sortable(item[0]))
        ]

    def versions(self, side: Side | str, task: int | None = None) -> list[dict[str, Any]]:
        """A versioned table: ``key, ts, value`` rows (``value`` None: a tombstone version) in (key, ts) order."""
        entries = self._entries(versioned_store_name(Side(side)), task)
        return [{"key": key, "ts": ts, "value": value} for (key, ts), value in sorted(entries.items(), key=lambda item: (_sortable(item[0][0]), item[0][1]))]

    def subscriptions(self, task: int | None = None) -> list[dict[str, Any]]:
        """A foreign-key join's subscription store, in CombinedKey byte order."""
        entries = self._entries(SUBSCRIPTIONS, task)
        return [
            {"fk": ck.fk, "pk": ck.pk, "hash": wrapper.hash, "instruction": wrapper.instruction.value, "ts": ts}
            for ck, (wrapper, ts) in sorted(entries.items(), key=lambda item: item[0].sort_key())
        ]

    def in_flight(self, task: int | None = None) -> list[Any]:
        """Messages sent and not yet delivered (to ``task``, or to any task), oldest first."""
        tasks = self.tasks() if task is None else [task]
        return sorted((m for t in tasks for m in self._entries(IN_FLIGHT, t).values()), key=lambda m: m.seq)

    def grace_buffer(self, task: int | None = None) -> list[dict[str, Any]]:
        """A stream-table join's grace buffer, in eviction order (ts, key bytes, arrival)."""
        entries = self._entries(GRACE_BUFFER, task)
        return [{"key": r.key, "value": r.value, "ts": r.ts, "origin_step": r.origin_step} for _, r in sorted(entries.items(), key=lambda item: item[0])]

    def frame(self) -> "pd.DataFrame":
        """Every store as one long table: ``task, store, key, ts, value, detail``."""
        import pandas as pd

        rows = []
        for task in self.tasks():
            for name, value in sorted(self.clock(task).items()):
                rows.append({"task": task, "store": CLOCK, "key": name, "ts": value, "value": None, "detail": None})
            for side in Side:
                for row in self.window(side, task):
                    rows.append({"task": task, "store": window_store_name(side), "key": row["key"], "ts": row["ts"], "value": row["value"], "detail": None})
            for row in self.outer_buffer(task):
                detail = f"{row['side']}, closes after {row['closes_at_ms']}"
                rows.append({"task": task, "store": OUTER_BUFFER, "key": row["key"], "ts": row["ts"], "value": row["value"], "detail": detail})
            for side in Side:
                for row in self.table(side, task):
                    detail = None if row["old_value"] is None else f"old: {row['old_value']}"
                    rows.append({"task": task, "store": table_store_name(side), "key": row["key"], "ts": row["ts"], "value": row["value"], "detail": detail})
            for side in Side:
                for row in self.versions(side, task):
                    rows.append({"task": task, "store": versioned_store_name(side), "key": row["key"], "ts": row["ts"], "value": row["value"], "detail": "tombstone" if row["value"] is None else None})
            for row in self.grace_buffer(task):
                rows.append({"task": task, "store": GRACE_BUFFER, "key": row["key"], "ts": row["ts"], "value": row["value"], "detail": f"from step {row['origin_step']}"})
            for row in self.subscriptions(task):
                rows.append({"task": task, "store": SUBSCRIPTIONS, "key": f"({row['fk']}, {row['pk']})", "ts": row["ts"], "value": row["instruction"], "detail": f"hash {row['hash']}"})
            for message in self.in_flight(task):
                rows.append({"task": task, "store": IN_FLIGHT, "key": message.key, "ts": message.ts, "value": message.describe(), "detail": message.id})
            rows += self._other_stores(task)
        return pd.DataFrame(rows, columns=["task", "store", "key", "ts", "value", "detail"])

    def _other_stores(self, task: int) -> list[dict[str, Any]]:
        """Stores of bigger topologies (chained joins, self-joins, result tables, record
        caches), read by their row shapes: window stores ``(key, ts, seq) -> value``,
        tables and caches ``key -> (value, ts, ...)``, clocks ``name -> time``."""
        known = {CLOCK, OUTER_BUFFER, GRACE_BUFFER, SUBSCRIPTIONS, IN_FLIGHT}
        known |= {name(side) for side in Side for name in (window_store_name, table_store_name, versioned_store_name)}
        rows = []
        for store in sorted(s for s in self.stores if s.task == task and s.name not in known):
            entries = self.stores[store]
            for entry_key, row in sorted(entries.items(), key=lambda item: _sortable(item[0])):
                if store.name.endswith("window"):
                    key, ts, value, detail = entry_key[0], entry_key[1], row, None
                elif store.name.endswith(CLOCK):
                    key, ts, value, detail = entry_key, row, None, None
                elif store.name.endswith(OUTER_BUFFER):
                    key, ts, value, detail = row.key, row.ts, row.value, f"{row.side}, closes after {row.closes_at_ms}"
                else:
                    key, ts, value = entry_key, row[1], row[0]
                    detail = f"from step {row[2]}" if store.name.endswith("cache") else None
                rows.append({"task": task, "store": store.name, "key": key, "ts": ts, "value": value, "detail": detail})
        return rows


def _sortable(key: Any) -> tuple[str, Any]:
    return (type(key).__name__, key if key is not None else 0)
