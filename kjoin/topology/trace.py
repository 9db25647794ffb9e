"""What a topology run did: one step per record a task took, what every node did with it, the
records of every topic, and the state of every store after every step.

* A :class:`TopicRecord` is a record of a topic partition at an offset: an input event, a record
  a repartition sink wrote, a foreign-key join's subscription or response, or an output.
* A :class:`TopologyStep` is one record taken by one task (``"1_0"``: sub-topology 1, partition 0):
  the :class:`NodeVisit` of every node it passed, in Kafka's depth-first order, and what it wrote.
* :meth:`TopologyTrace.why` follows an output back, step by step, through the internal topics it
  crossed, to the input event that set it off.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterator

from ..fates import Fate, Reason
from ..records import render_value
from ..state import StateHistory, StoreId
from ..times import at

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["TopicRecord", "NodeVisit", "TopologyStep", "TopologyTrace"]


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """One record of ``topic`` partition ``partition`` at ``offset``. ``written_at``: the step that
    wrote it (``None``: an input event, number ``event``)."""

    topic: str
    partition: int
    offset: int
    key: Any
    value: Any
    ts: int
    written_at: int | None = None
    event: int | None = None
    message: Any = None
    """A foreign-key join's :class:`~kjoin.joins.fk_protocol.Message`, for its topics' records."""
    old: Any = None
    has_old: bool = False
    """A table group-by's repartition record carries ``Change(new=value, old)``."""
    headers: tuple[tuple[str, Any], ...] = ()
    """(name, text or None) of the headers kjoin sets: a dead-letter record's ``__streams.errors.*``
    (:mod:`kjoin.topology.handlers`); other records carry none."""

    def describe(self) -> str:
        """``orders[1]@3 k1:A@5``: topic, partition, offset, key, value, timestamp."""
        if self.message is not None:
            value = self.message.describe()
        elif self.has_old:
            value = f"Change({render_value(self.value)}, {render_value(self.old)})"
        else:
            value = render_value(self.value)
        return f"{self.topic}[{self.partition}]@{self.offset} " + at(f"{render_value(self.key)}:{value}", self.ts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "key": self.key,
            "value": self.value if self.message is None else self.message.describe(),
            "ts": self.ts,
            "written_at": self.written_at,
            "event": self.event,
            **({"headers": dict(self.headers)} if self.headers else {}),
        }


@dataclass(frozen=True, slots=True)
class NodeVisit:
    """What one node did with the record it was handed (on ``port``: a join's left or right)."""

    node: str
    op: str
    port: str | None
    key: Any
    value: Any
    ts: int
    fate: Fate
    reason: Reason | None
    text: Any
    """The story as text, or a function that writes it (written when read: see :attr:`explain`)."""
    forwarded: tuple[Any, ...] = ()
    """What the node handed to its children: records with a ``key``, ``value`` (a tombstone's: None) and ``ts``."""
    wrote: tuple[TopicRecord, ...] = ()
    partners: tuple[int, ...] = ()
    """The steps that wrote the table rows this join looked up (for :meth:`TopologyTrace.why`)."""

    @property
    def explain(self) -> str:
        """What the node did with the record, in words."""
        return self.text() if callable(self.text) else self.text

    def describe(self) -> str:
        port = f" ({self.port})" if self.port else ""
        return f"{self.node}{port}: {self.explain}"


@dataclass(frozen=True, slots=True)
class TopologyStep:
    """One record taken by one task, and everything that happened to it."""

    index: int
    task: str
    record: TopicRecord
    visits: tuple[NodeVisit, ...]
    fate: Fate
    reason: Reason | None
    instance: int | None = None
    """The application instance that ran the step (``Topology.run(..., instances=N)``; ``None``: one instance).
    A global topic's record is applied by every instance's global thread; kjoin shows instance 0's."""

    @property
    def wrote(self) -> tuple[TopicRecord, ...]:
        return tuple(written for visit in self.visits for written in visit.wrote)

    @property
    def drops(self) -> tuple[NodeVisit, ...]:
        """The visits whose node dropped the record (a filter, a null key kept out of a repartition topic, a windowed
        aggregate's expired window): a step's :attr:`fate` is the most telling over all its nodes (``joined`` when a
        join emitted, though a later node dropped the result), so each drop is named here with its node and
        reason."""
        return tuple(visit for visit in self.visits if visit.fate is Fate.DROPPED)

    @property
    def dropped(self) -> str:
        """The drops as text: ``per-hour: expired-window`` (``""``: none)."""
        return "; ".join(
            f"{visit.node}: {visit.reason.value if visit.reason is not None else visit.fate.value}"
            for visit in self.drops
        )

    def explain(self) -> str:
        where = "" if self.instance is None else f" (instance {self.instance})"
        head = f"Task {self.task}{where} took {self.record.describe()}."
        return " ".join([head, *(visit.describe() for visit in self.visits)])

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.index,
            "task": self.task,
            "instance": self.instance,
            "record": self.record.to_dict(),
            "fate": self.fate.value,
            "reason": None if self.reason is None else self.reason.value,
            "dropped": self.dropped,
            "visits": [
                {
                    "node": v.node,
                    "op": v.op,
                    "port": v.port,
                    "fate": v.fate.value,
                    "reason": None if v.reason is None else v.reason.value,
                    "explain": v.explain,
                    "forwarded": [[item.key, item.value, item.ts] for item in v.forwarded],
                    "wrote": [w.to_dict() for w in v.wrote],
                }
                for v in self.visits
            ],
        }


class TopologyTrace:
    """Every step of a topology run in processing order, every topic's records, and the state."""

    def __init__(
        self,
        topology: Any,
        events: list[TopicRecord],
        steps: list[TopologyStep],
        topics: dict[str, dict[int, list[TopicRecord]]],
        history: StateHistory | None,
        schedule: str,
    ) -> None:
        self.topology = topology
        self.events = events
        self.steps = steps
        self.topics = topics
        self._history = history
        """The state after every step; ``None``: a run that kept none (``run_records(..., history=False)``)."""
        self.schedule = schedule

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[TopologyStep]:
        return iter(self.steps)

    def __getitem__(self, index: int) -> TopologyStep:
        return self.steps[index]

    # -- topics ---------------------------------------------------------------------------------
    def records(self, topic: str) -> list[TopicRecord]:
        """Every record of ``topic`` in the order written (partition by partition interleaved as written)."""
        if topic not in self.topics:
            raise KeyError(f"no topic {topic!r}; the topics are {', '.join(sorted(self.topics))}")
        return sorted(
            (r for records in self.topics[topic].values() for r in records),
            key=lambda r: (-1 if r.written_at is None else r.written_at, r.event or 0, r.partition, r.offset),
        )

    def outputs(self, topic: str | None = None) -> list[TopicRecord]:
        """The records written to the output topics (``topic``: one of them), in the order written."""
        outputs = [w for step in self.steps for w in step.wrote if self._is_output(w.topic)]
        return [w for w in outputs if topic is None or w.topic == topic]

    @cached_property
    def output_topics(self) -> frozenset[str]:
        """The topology's output topics: the topics it knows that are neither internal nor read by a source node
        (named once per trace: a finished run's graph does not change)."""
        graph = self.topology.graph
        sources = graph.sources()
        return frozenset(name for name, topic in graph.topics.items() if not topic.internal and name not in sources)

    def _is_output(self, topic: str) -> bool:
        return topic in self.output_topics

    def dropped_records(self) -> dict[tuple[str, str], int]:
        """How many records each node dropped, by reason: ``{(node, reason): count}`` in the order first seen (what
        Kafka counts in its ``dropped-records`` metric, named; a processing exception's drops under ``continue``
        among them)."""
        counts: dict[tuple[str, str], int] = {}
        for step in self.steps:
            for visit in step.visits:
                if visit.fate is Fate.DROPPED and visit.reason is not None:
                    key = (visit.node, visit.reason.value)
                    counts[key] = counts.get(key, 0) + 1
        return counts

    def outputs_by_event(self, topic: str | None = None) -> list[list[TopicRecord]]:
        """Per input event, the outputs it set off (every step its record and the records it caused took)."""
        per_event: list[list[TopicRecord]] = [[] for _ in self.events]
        for step in self.steps:
            event = self.event_of(step.index)
            for written in step.wrote:
                if self._is_output(written.topic) and (topic is None or written.topic == topic):
                    per_event[event].append(written)
        return per_event

    def event_of(self, step: int) -> int:
        """The input event whose record, or whose consequences, ``step`` took."""
        record = self.steps[step].record
        while record.written_at is not None:
            record = self.steps[record.written_at].record
        assert record.event is not None
        return record.event

    # -- why ------------------------------------------------------------------------------------
    def why(self, output: TopicRecord) -> list[str]:
        """How ``output`` came to be, newest first: the step that wrote it and every step before it back to the
        input event that set it off (through repartition and foreign-key topics), each with the nodes the record
        passed there; and for every join on the way, the input event that wrote the table row it looked up."""
        if output.written_at is None:
            return [f"{output.describe()} is an input event (number {output.event})."]
        lines = []
        record = output
        while record.written_at is not None:
            step = self.steps[record.written_at]
            lines.append(f"{record.describe()} was written at step {step.index}: {step.explain()}")
            for visit in step.visits:
                for partner in visit.partners:
                    row = self.steps[partner].record
                    found = at(f"{render_value(row.key)}:{render_value(row.value)}", row.ts)
                    lines.append(
                        f"  {visit.node} looked up the row {found}, "
                        f"written at step {partner} by input event {self.event_of(partner)}."
                    )
            record = step.record
        lines.append(f"{record.describe()} is input event {record.event}.")
        return lines

    # -- state ----------------------------------------------------------------------------------
    def state_at(self, step: int) -> dict[StoreId, dict[Any, Any]]:
        """Every store of every task after ``step`` (negative: counted from the end, ``-1`` after the
        last step), as ``StoreId(task, "node: store") -> entries``; :meth:`initial_state` is before the first."""
        if step < 0:
            step += len(self.steps)
        if not 0 <= step < len(self.steps):
            raise IndexError(f"step {step} is outside this trace (0 to {len(self.steps) - 1})")
        return self._state_history().at(step)

    def initial_state(self) -> dict[StoreId, dict[Any, Any]]:
        return self._state_history().at(-1)

    def _state_history(self) -> StateHistory:
        if self._history is None:
            raise ValueError(
                "this trace kept no state after each step (a whole app's debugging run keeps the steps and topics "
                "its verdicts read); run the records with kjoin.topology.runtime.run_records(..., history=True), or "
                "the task's trace (TopologyRun.trace), to read the stores"
            )
        return self._history

    def state_frame(self, step: int) -> "pd.DataFrame":
        """Every store of every task after ``step`` as one long table: ``task, store, key, ts, value, detail``
        (:meth:`kjoin.StateSnapshot.frame`)."""
        from ..trace import StateSnapshot

        stores = self.state_at(step)
        return StateSnapshot(stores, step, self.steps[step].task).frame()

    def store(self, step: int, task: str, name: str) -> list[dict[str, Any]]:
        """The rows of one store (``"join-1: right table"``) of ``task`` after ``step``, as dicts."""
        from ..stores import kind_of

        stores = self.state_at(step)
        for store, entries in stores.items():
            if store.task == task and store.name == name:
                kind = kind_of(store)
                return [] if kind is None else kind.records_of(entries)
        raise KeyError(
            f"task {task} has no store {name!r}; it has {', '.join(sorted(s.name for s in stores if s.task == task))}"
        )

    # -- text ---------------------------------------------------------------------------------
    def table(self) -> str:
        """One line per step: task, record, fate, the nodes it passed, what it wrote (``kjoin run``)."""
        lines = [f"{'step':>4}  {'task':<5} {'record':<40} {'fate':<10} nodes → wrote"]
        for step in self.steps:
            fate = step.fate.value if step.reason is None else f"{step.fate.value} ({step.reason.value})"
            nodes = " → ".join(v.node for v in step.visits)
            wrote = ", ".join(w.describe() for w in step.wrote)
            dropped = f" (dropped at {step.dropped})" if step.drops and step.fate is not Fate.DROPPED else ""
            lines.append(
                f"{step.index:>4}  {step.task:<5} {step.record.describe():<40} {fate:<10} {nodes}"
                + (f" ⇒ {wrote}" if wrote else "")
                + dropped
            )
        return "\n".join(lines)

    def jsonl(self) -> list[str]:
        """One JSON object per step (:meth:`TopologyStep.to_dict`)."""
        import json

        return [json.dumps(step.to_dict(), default=render_value, ensure_ascii=False) for step in self.steps]

    def steps_frame(self) -> "pd.DataFrame":
        import pandas as pd

        rows = [
            {
                "step": s.index,
                "task": s.task,
                "instance": s.instance,
                "topic": s.record.topic,
                "partition": s.record.partition,
                "offset": s.record.offset,
                "key": s.record.key,
                "value": s.record.value,
                "ts": s.record.ts,
                "fate": s.fate.value,
                "reason": None if s.reason is None else s.reason.value,
                "dropped": s.dropped or None,
                "nodes": " → ".join(v.node for v in s.visits),
                "wrote": ", ".join(w.describe() for w in s.wrote),
            }
            for s in self.steps
        ]
        return pd.DataFrame(rows)
