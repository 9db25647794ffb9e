"""Why a whole app's run came out as it did: a verdict at every join, aggregate and drop a record passed, traced
through repartition topics back to the input record.

How it works, on a finished :class:`~kjoin.topology.trace.TopologyTrace`:

* Every step belongs to one input record (:meth:`TopologyTrace.event_of`): its own step and every step that took a
  record its steps wrote to a repartition topic. The record's *path* is those steps' node visits, in order.
* At a stream-table join the verdict is the single join's (:data:`kjoin.spark.debug.why.VERDICTS`), read from the
  records that reached the join: the table's records of the looked-up key in the task's partition (processed before
  or after the stream record), and in the other partitions of the table's topic (a record not in its key's
  partition, which the task never sees):

  * ``partner-other-partition``: no row in the task, but the key has a record in another partition;
  * ``joined-stale`` (``joined-deleted``): the join found a row, but a newer update (a tombstone) of the key, no
    later than the stream record, went to another partition;
  * ``partner-deleted``: the task's last record of the key before the stream record is a tombstone;
  * ``partner-later``: the task's first record of the key comes after the stream record;
  * ``partner-never``: the key has no record anywhere; ``null-key``: the stream record's key is null.

  A GlobalKTable join reads one store every task shares: ``partner-deleted``, ``partner-later``, ``partner-never``
  of the key its key selector gives (``null-key``: the selector gave null).
* A drop inside a node is a verdict of its own: ``dropped-by-filter``, ``null-key-not-repartitioned``,
  ``late-in-window`` (a windowed aggregate's expired window), or the node's named reason.
* An aggregate that took the record says ``aggregated``; any other join its fate (``joined``, or its reason).

:func:`explained_outputs` gives one row per output record and one per (input record, output topic) that got
nothing, each with the cause (the first verdict on its path that is not ``joined``/``aggregated``) and the node;
:func:`summary` counts those rows; :func:`audit` lists every input record of a co-partitioned topic that is not in
its key's partition.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator

from ..fates import Fate, Reason
from ..records import render_value
from ..times import at
from .copartition import copartition_groups
from .trace import NodeVisit, TopicRecord, TopologyStep, TopologyTrace

__all__ = [
    "NodeVerdict",
    "AppVerdict",
    "PASSED",
    "TOPOLOGY_VERDICTS",
    "AppExplainer",
    "EXPLAINED_FIELDS",
    "explained_outputs",
    "explained_rows",
    "counted",
    "summary",
    "audit",
    "audit_records",
    "passes_on",
    "debugging_step",
]

PASSED = ("joined", "aggregated")
"""Verdicts that name no cause: the record joined (with a partner) or was aggregated."""

TOPOLOGY_VERDICTS = (
    "dropped-by-filter",
    "null-key-not-repartitioned",
    "late-in-window",
    "aggregated",
    "no-result",
)
"""The verdicts a topology adds to the single join's: a filter's drop, a null key kept out of a repartition topic,
a windowed aggregate's expired window, an aggregate that took the record, and an input record that only updated a
table (it produces no result of its own)."""

JOIN_OPS = ("stream-table", "stream-global", "stream-stream", "table-table", "fk")
AGGREGATE_OPS = ("aggregate", "table-aggregate", "cogroup")
_DROP_VERDICTS = {
    Reason.FILTERED: "dropped-by-filter",
    Reason.NULL_KEY_NOT_REPARTITIONED: "null-key-not-repartitioned",
    Reason.EXPIRED_WINDOW: "late-in-window",
}


@dataclass(frozen=True, slots=True)
class NodeVerdict:
    """What one join, aggregate or dropping node did with the record, and the records behind it."""

    node: str
    op: str
    step: int
    """The step (of the trace) whose record reached the node."""
    task: str
    verdict: str
    told: Any
    """What happened, in words: the text, or a function that writes it (written when read: :attr:`text`; a whole
    run's summary reads the name of every verdict and the words of few)."""
    record: TopicRecord
    """The record the step took (the input record, or the repartition record it became)."""
    behind: tuple[TopicRecord, ...] = ()
    """The records the verdict rests on: the table rows looked up, the misrouted record, the tombstone."""

    @property
    def text(self) -> str:
        return self.told() if callable(self.told) else self.told

    @property
    def passed(self) -> bool:
        return self.verdict in PASSED

    def describe(self) -> str:
        return f"{self.node} ({self.op}, task {self.task}, step {self.step}): {self.verdict}: {self.text}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "op": self.op,
            "step": self.step,
            "task": self.task,
            "verdict": self.verdict,
            "text": self.text,
            "record": self.record.to_dict(),
            "behind": [r.to_dict() for r in self.behind],
        }


@dataclass(frozen=True)
class AppVerdict:
    """One input record through the whole app: the verdict at every node that decided something, in the order the
    record (and what it became) reached them, and the output records it set off."""

    event: TopicRecord
    verdicts: tuple[NodeVerdict, ...]
    outputs: tuple[TopicRecord, ...]

    @property
    def cause(self) -> NodeVerdict | None:
        """The first verdict that names a cause (not ``joined``/``aggregated``); ``None``: it passed everywhere."""
        return next((v for v in self.verdicts if not v.passed), None)

    def decided(self, produced: bool) -> tuple[str, NodeVerdict | None]:
        """The verdict to show and the node behind it: the :attr:`cause`; without one, ``joined`` when the record
        ``produced`` the output asked about, else the last node's verdict (``no-result`` when that node passed it on:
        by its rules nothing follows)."""
        cause = self.cause
        if cause is None and not produced and self.verdicts:
            cause = self.verdicts[-1]
        if cause is None:
            return "joined", None
        return ("no-result" if cause.passed else cause.verdict), cause

    def lines(self) -> list[str]:
        """The story: the input record, each node's verdict with the records behind it, the outputs."""
        lines = [f"{self.event.describe()} (input record)"]
        for verdict in self.verdicts:
            lines.append("  " + verdict.describe())
            lines.extend(f"    behind it: {record.describe()}" for record in verdict.behind)
        if self.outputs:
            lines.append("  outputs: " + ", ".join(r.describe() for r in self.outputs))
        else:
            lines.append("  outputs: none")
        return lines

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _said(visit: NodeVisit) -> str:
    """The record that reached the node: ``key:value@ts``."""
    return at(f"{render_value(visit.key)}:{render_value(visit.value)}", visit.ts)


class _Told:
    """A verdict's words, written when read (:attr:`NodeVerdict.text`): ``template`` with the record that reached the
    node (``{said}``), the node's own story (``{story}``) and its name (``{node}``). A whole run keeps one per
    aggregate and drop it explains: two slots, no closure."""

    __slots__ = ("template", "visit")

    def __init__(self, template: str, visit: NodeVisit) -> None:
        self.template = template
        self.visit = visit

    def __call__(self) -> str:
        return self.template.format(said=_said(self.visit), story=self.visit.explain, node=self.visit.node)


def passes_on(step: TopologyStep, visit: NodeVisit) -> bool:
    """Did the node only pass the record on (no verdict: not a join, an aggregate, a drop, nor an input record's
    table update)?"""
    if visit.fate is Fate.DROPPED or visit.op in JOIN_OPS or visit.op in AGGREGATE_OPS:
        return False
    return not (visit.fate is Fate.STORED and step.record.written_at is None)


def debugging_step(step: TopologyStep) -> TopologyStep:
    """What a whole app's debugging run keeps of ``step`` (:func:`kjoin.topology.runtime.run_records`' ``keep``): the
    visits a verdict is read from, their words written now, and the visits that wrote a record; not the visits
    that only passed the record on, nor what any node forwarded.

    Why: a step's words are functions holding the records, contexts and outputs each node made (a few KB per input
    record over a whole run); a verdict reads the words of the nodes that decided something, and a story (the why
    index) writes each of them once, so writing them as the step is taken costs nothing more and frees the rest. A
    visit that wrote keeps its place among the verdicts (an output's way ends at the node that wrote it)."""
    visits = tuple(
        replace(visit, text=visit.explain, forwarded=()) if not passes_on(step, visit) else replace(visit, forwarded=())
        for visit in step.visits
        if visit.wrote or not passes_on(step, visit)
    )
    return replace(step, visits=visits)


class AppExplainer:
    """The verdicts of a topology trace, read once: the steps of each input record, each table's records by key."""

    def __init__(self, trace: TopologyTrace) -> None:
        self.trace = trace
        self.graph = trace.topology.graph
        self._event_of: list[int] = []
        self._steps_of: dict[int, list[int]] = defaultdict(list)
        self._taken_at: dict[tuple[str, int, int], int] = {}
        """(topic, partition, offset) -> the step that took it, for the tables' topics (what a join looks up)."""
        tables = {topic for topic, node in self.graph.sources().items() if node.op in ("table", "global-table")}
        for step in trace.steps:
            record = step.record
            event = record.event if record.written_at is None else self._event_of[record.written_at]
            assert event is not None
            self._event_of.append(event)
            self._steps_of[event].append(step.index)
            if record.topic in tables:
                self._taken_at[(record.topic, record.partition, record.offset)] = step.index
        self._rows: dict[str, dict[Any, list[tuple[TopicRecord, int]]]] = {}
        self._outputs = trace.output_topics
        self._verdicts: list[tuple[NodeVerdict | None, ...] | None] = [None] * len(trace.steps)
        """Step -> the verdict at each of its visits, read once: an output's way shares its steps with its input
        record's."""

    # -- the records a join reads -----------------------------------------------------------------
    def _table_rows(self, topic: str) -> dict[Any, list[tuple[TopicRecord, int]]]:
        """Key -> the topic's records of that key with the step that took each (``-1``: never taken), in step order."""
        if topic not in self._rows:
            rows: dict[Any, list[tuple[TopicRecord, int]]] = defaultdict(list)
            for records in self.trace.topics.get(topic, {}).values():
                for record in records:
                    step = self._taken_at.get((record.topic, record.partition, record.offset), -1)
                    rows[record.key].append((record, step))
            for key in rows:
                rows[key].sort(key=lambda pair: (pair[1] < 0, pair[1]))
            self._rows[topic] = rows
        return self._rows[topic]

    def _home(self, record: TopicRecord) -> int | None:
        if record.key is None:
            return None
        try:
            return self.graph.topics[record.topic].partition_of(record.key)
        except Exception:  # noqa: BLE001 - a partitioner that fails here fails in the run too; no home then
            return None

    # -- one node ---------------------------------------------------------------------------------
    def visit_verdict(self, step: TopologyStep, number: int) -> NodeVerdict | None:
        """The verdict at the step's visit ``number`` (read once)."""
        return self.step_verdicts(step)[number]

    def step_verdicts(self, step: TopologyStep) -> tuple[NodeVerdict | None, ...]:
        """The verdict at each of the step's visits (``None``: a node that only passed the record on), read once."""
        known = self._verdicts[step.index]
        if known is None:
            known = self._verdicts[step.index] = tuple(self.node_verdict(step, visit) for visit in step.visits)
        return known

    def node_verdict(self, step: TopologyStep, visit: NodeVisit) -> NodeVerdict | None:
        """The verdict at ``visit`` (``None``: a node that only passed the record on)."""
        if passes_on(step, visit):
            return None

        def verdict(name: str, text: Any, behind: Iterable[TopicRecord] = ()) -> NodeVerdict:
            """``text``: the words, or a function that writes them."""
            return NodeVerdict(visit.node, visit.op, step.index, step.task, name, text, step.record, tuple(behind))

        if visit.fate is Fate.DROPPED and visit.op not in JOIN_OPS:
            reason = visit.reason
            name = _DROP_VERDICTS.get(reason, reason.value if reason is not None else "dropped")  # type: ignore[arg-type]
            return verdict(name, _Told("{said} was dropped here: {story}", visit))
        if visit.op in AGGREGATE_OPS:
            return verdict("aggregated", _Told("{said}: {story}", visit))
        if visit.op == "stream-table" and visit.port == "left":
            return self._stream_table(step, visit, verdict)
        if visit.op == "stream-global" and visit.port == "left":
            return self._stream_global(step, visit, verdict)
        if visit.op in JOIN_OPS:
            if visit.fate is Fate.JOINED:
                return verdict("joined", visit.text)
            if visit.reason is Reason.TABLE_UPDATE:
                return verdict("no-result", visit.text)
            return verdict(visit.reason.value if visit.reason is not None else visit.fate.value, visit.text)
        if visit.fate is Fate.STORED and step.record.written_at is None and visit.op in ("table", "global-table"):
            return verdict(
                "no-result", _Told("{said} updated the table {node}; a table update joins nothing itself.", visit)
            )
        return None

    def _stream_table(self, step: TopologyStep, visit: NodeVisit, verdict: Any) -> NodeVerdict:
        node = self.graph.nodes[visit.node]
        table = node.params["table"]
        if visit.key is None:
            return verdict(
                "null-key", f"{_said(visit)} has a null key, so {visit.node} looked nothing up: {visit.explain}"
            )
        sources = self.graph.upstream_sources(table)
        plain = table.op == "table" and table.params.get("history_retention_ms") is None and len(sources) == 1
        if not plain:  # a view or a versioned table: the join's own words
            return verdict("joined" if visit.partners else "partner-never", visit.text)
        rows = self._table_rows(sources[0].topic).get(visit.key, [])
        partition = step.record.partition
        here_before = [r for r, s in rows if r.partition == partition and 0 <= s < step.index]
        here_after = [r for r, s in rows if r.partition == partition and s > step.index]
        elsewhere = [r for r, _ in rows if r.partition != partition and r.ts <= visit.ts]
        latest = here_before[-1] if here_before else None
        key = render_value(visit.key)
        newer = [r for r in elsewhere if latest is None or r.ts >= latest.ts]
        if latest is not None and latest.value is not None:
            if newer:
                last = max(newer, key=lambda r: r.ts)
                name = "joined-deleted" if last.value is None else "joined-stale"
                what = "a tombstone" if last.value is None else "a newer update"
                return verdict(
                    name,
                    f"{_said(visit)} joined {visit.node}'s row {at(render_value(latest.value), latest.ts)} "
                    f"of key {key}, but "
                    f"{what} of the key, {last.describe()}, is in partition {last.partition}, not in its key's "
                    f"partition {self._home(last)}: task {step.task} never saw it.",
                    (last, latest),
                )
            return verdict("joined", visit.text, (latest,))
        if newer and any(r.value is not None for r in newer):
            misrouted = [r for r in newer if r.value is not None]
            return verdict(
                "partner-other-partition",
                f"{_said(visit)} found no row of key {key} in partition {partition} of {sources[0].topic}; "
                f"the key's record "
                f"{misrouted[-1].describe()} is in partition {misrouted[-1].partition} (its key belongs in partition "
                f"{self._home(misrouted[-1])}), which task {step.task} does not read.",
                misrouted,
            )
        if latest is not None:  # a tombstone
            return verdict(
                "partner-deleted",
                f"{_said(visit)} found no row of key {key}: the tombstone {latest.describe()} deleted it before.",
                tuple(here_before[-2:]),
            )
        if here_after:
            first = here_after[0]
            return verdict(
                "partner-later",
                f"{_said(visit)} came before the first record of key {key} in its partition, {first.describe()}: the "
                "table had no row yet.",
                (first,),
            )
        others = [r for r, _ in rows if r.partition != partition]
        if others:
            return verdict(
                "partner-other-partition",
                f"{_said(visit)} found no row of key {key}; the key's records are only in other partitions: "
                + ", ".join(r.describe() for r in others[:3]),
                others,
            )
        return verdict("partner-never", f"{_said(visit)}: {sources[0].topic} has no record of key {key}.")

    def _stream_global(self, step: TopologyStep, visit: NodeVisit, verdict: Any) -> NodeVerdict:
        node = self.graph.nodes[visit.node]
        selector = node.params.get("key_selector")
        looked_up = visit.key if selector is None else selector(visit.key, visit.value)
        if looked_up is None:
            return verdict(
                "null-key", f"{_said(visit)}: the key selector gave null, so nothing was looked up: {visit.explain}"
            )
        sources = self.graph.upstream_sources(node.parents[1])
        rows = self._table_rows(sources[0].topic).get(looked_up, []) if sources else []
        before = [r for r, s in rows if 0 <= s < step.index]
        after = [r for r, s in rows if s > step.index]
        key = render_value(looked_up)
        if before and before[-1].value is not None:
            return verdict("joined", visit.text, (before[-1],))
        if before:
            return verdict(
                "partner-deleted",
                f"{_said(visit)} looked up {key} in the global table: the tombstone {before[-1].describe()} "
                "deleted it.",
                tuple(before[-2:]),
            )
        if after:
            return verdict(
                "partner-later",
                f"{_said(visit)} looked up {key} before the global table's first record of it, {after[0].describe()}.",
                (after[0],),
            )
        topic = sources[0].topic if sources else "the global table"
        return verdict("partner-never", f"{_said(visit)} looked up {key}: {topic} has no record of it.")

    # -- one input record -------------------------------------------------------------------------
    def event_steps(self, event: int) -> list[TopologyStep]:
        return [self.trace.steps[i] for i in self._steps_of.get(event, [])]

    def explain_event(self, event: int) -> AppVerdict:
        """The verdicts of input record number ``event`` (its index in :attr:`TopologyTrace.events`)."""
        verdicts, outputs = [], []
        for step in self.event_steps(event):
            verdicts.extend(found for found in self.step_verdicts(step) if found is not None)
            outputs.extend(w for visit in step.visits for w in visit.wrote if w.topic in self._outputs)
        return AppVerdict(self.trace.events[event], tuple(verdicts), tuple(outputs))

    def explain_output(self, output: TopicRecord) -> AppVerdict:
        """The verdicts on the way to ``output``: every step from the input record to the step that wrote it, and in
        that step the nodes up to the one that wrote it."""
        if output.written_at is None:
            raise ValueError(f"{output.describe()} is an input record; explain_event explains it")
        chain = []
        step = self.trace.steps[output.written_at]
        while True:
            chain.append(step)
            if step.record.written_at is None:
                break
            step = self.trace.steps[step.record.written_at]
        chain.reverse()
        verdicts = []
        for number, taken in enumerate(chain):
            last = number == len(chain) - 1
            for visit, found in zip(taken.visits, self.step_verdicts(taken)):
                if found is not None:
                    verdicts.append(found)
                if last and output in visit.wrote:
                    break
        event = self._event_of[chain[0].index]
        return AppVerdict(self.trace.events[event], tuple(verdicts), (output,))

    def find(self, topic: str, partition: int, offset: int) -> AppVerdict:
        """The verdict of the record at ``topic[partition]@offset``: an output's way there, or an input record's
        whole path (what it set off, or why nothing)."""
        records = self.trace.topics.get(topic, {}).get(partition, [])
        if not 0 <= offset < len(records):
            known = ", ".join(sorted(self.trace.topics))
            raise KeyError(
                f"{topic}[{partition}]@{offset}: no such record in this run (topics: {known}; partition {partition} "
                f"of {topic} has {len(records)} record(s))"
            )
        record = records[offset]
        if record.written_at is None:
            assert record.event is not None
            return self.explain_event(record.event)
        return self.explain_output(record)


# -- the whole run ----------------------------------------------------------------------------------
EXPLAINED_FIELDS = (
    "topic", "partition", "offset", "input_topic", "input_partition", "input_offset", "verdict", "node", "text",
)  # fmt: skip
"""The fields of an :func:`explained_outputs` row, in order."""


def explained_outputs(trace: TopologyTrace, explainer: AppExplainer | None = None) -> list[dict[str, Any]]:
    """One row per output record, and one per input record of a stream and output topic it got nothing in:
    ``topic, partition, offset`` (of the output; ``None`` for nothing), ``input_topic, input_partition,
    input_offset``, ``verdict`` (the cause, or ``joined``), ``node`` (where; ``None`` for ``joined``), ``text``."""
    return [dict(zip(EXPLAINED_FIELDS, row)) for row in explained_rows(trace, explainer)]


def explained_rows(trace: TopologyTrace, explainer: AppExplainer | None = None) -> Iterator[tuple[Any, ...]]:
    """:func:`explained_outputs`' rows one at a time, as tuples of :data:`EXPLAINED_FIELDS` (a whole run's rows are
    kept as columns, not as a dict each)."""
    explainer = explainer or AppExplainer(trace)
    output_topics = sorted(t for t in explainer.graph.topics if trace._is_output(t))
    streams = {topic for topic, node in explainer.graph.sources().items() if node.op == "stream"}
    for number, event in enumerate(trace.events):
        if event.topic not in streams:
            continue
        whole = explainer.explain_event(number)
        got = {w.topic for w in whole.outputs}
        for output in whole.outputs:
            yield _row(explainer.explain_output(output), output.topic, output)
        for topic in output_topics:
            if topic not in got:
                yield _row(whole, topic, None)


def _row(verdict: AppVerdict, topic: str, output: TopicRecord | None) -> tuple[Any, ...]:
    name, cause = verdict.decided(produced=output is not None)
    event = verdict.event
    return (
        topic,
        None if output is None else output.partition,
        None if output is None else output.offset,
        event.topic,
        event.partition,
        event.offset,
        name,
        None if cause is None else cause.node,
        "" if cause is None else cause.text,
    )


def summary(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Counts of :func:`explained_outputs`' rows by ``topic``, whether an output was written (``result``:
    ``output`` or ``none``), ``verdict`` and ``node``, largest first."""
    return counted(
        (row["topic"], "none" if row["offset"] is None else "output", row["verdict"], row["node"]) for row in rows
    )


def counted(keys: Iterable[tuple[str, str, str, str | None]]) -> list[dict[str, Any]]:
    """:func:`summary` of the rows' ``(topic, result, verdict, node)``."""
    counts = Counter(keys)
    return [
        {"topic": topic, "result": result, "verdict": verdict, "node": node, "count": count}
        for (topic, result, verdict, node), count in sorted(
            counts.items(), key=lambda item: (-item[1], item[0][0], item[0][1], item[0][2], str(item[0][3]))
        )
    ]


def audit(trace: TopologyTrace) -> list[dict[str, Any]]:
    """Every input record of a topic that a join co-partitions (:func:`~kjoin.topology.copartition.copartition_groups`)
    which is not in its key's partition (by the topic's partitioner: murmur2 unless given): ``topic, partition,
    offset, key, expected_partition, joins`` (the joins reading it), in topic, partition, offset order."""
    inputs = (
        record
        for partitions in trace.topics.values()
        for records in partitions.values()
        for record in records
        if record.written_at is None
    )
    return audit_records(trace.topology, inputs)


def audit_records(topology: Any, records: Iterable[TopicRecord]) -> list[dict[str, Any]]:
    """:func:`audit` read from the input records alone, with no run: where a record sits and where its key belongs
    depend on nothing the topology computes, so a run's audit needs only its input topics."""
    graph = topology.graph
    joins_of: dict[str, list[str]] = defaultdict(list)
    for join, topics in copartition_groups(graph):
        for topic in topics:
            if not graph.topics[topic].internal and join.name not in joins_of[topic]:
                joins_of[topic].append(join.name)
    rows = []
    audited = [r for r in records if r.topic in joins_of and r.key is not None]
    audited.sort(key=lambda r: (r.topic, r.partition, r.offset))
    for record in audited:
        expected = graph.topics[record.topic].partition_of(record.key)
        if expected != record.partition:
            rows.append(
                {
                    "topic": record.topic,
                    "partition": record.partition,
                    "offset": record.offset,
                    "key": record.key,
                    "expected_partition": expected,
                    "joins": ", ".join(joins_of[record.topic]),
                }
            )
    return rows
