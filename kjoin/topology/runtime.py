"""Running a topology as Kafka runs it: tasks, their records, and the order they take them.

Why one module of this size: it is one job, the record loop of a topology run. :class:`_Run` takes every record of
every schedule through the nodes of its task, and its parts share one state (the tasks' partition groups and clocks,
the topics' partitions and offsets, the processors per task, the handlers of a record that fails); the functions
around it only place tasks and schedules. The processors it drives are :mod:`kjoin.topology.processors`, the
schedule of stages :mod:`kjoin.topology.stages`.

How it works:

* A global table's topic is read by the global thread (task ``global``), outside every
  sub-topology; its store is read by every task. ``test-driver`` applies a global record when it
  is piped (TopologyTestDriver), ``timestamp`` restores the whole global topic before any task
  takes a record (a starting application bootstraps its global stores first).
* With ``instances`` (or an ``assignment``, task -> instance) the tasks are spread over application
  instances, task ``s_p`` on instance ``p % instances`` by default; every step says the instance
  that ran it. The outputs do not change: a task keeps its own state and stream time wherever it
  runs (:func:`assign_tasks`, :func:`tasks_of`); except before KAFKA-14862 (3.1 to 3.4.0), where the
  tasks of one instance share a left/outer stream-stream join's time tracker
  (``Semantics.outer_join_time_per_task``, :class:`kjoin.joins.stream_stream.InstanceTimes`) in a running
  application (the ``timestamp`` and ``stages`` schedules; ``test-driver`` runs each task alone).

* A topology splits into sub-topologies at its repartition and foreign-key topics
  (:meth:`~kjoin.topology.graph.Graph.subtopologies`). Task ``"s_p"`` runs sub-topology ``s`` on
  partition ``p`` of every topic it reads, with its own processors, stores and stream time.
* A step is one record taken by one task: the record goes from its source node to the node's
  children, depth-first and in the order they were added (Kafka's ``context.forward``); every
  node's :class:`~kjoin.topology.trace.NodeVisit` is kept. A sink appends to its topic partition
  (the next offset); a record written to an internal topic is a new record its task takes later.
* **When** a task takes a record is the ``schedule``; in both, a task takes its records as Kafka's
  ``PartitionGroup`` hands them out (:class:`kjoin.ordering.PartitionGroup`, as for a single join): the head record with
  the smallest timestamp among its partitions, each partition in offset order.

  - ``test-driver`` (default): Kafka's ``TopologyTestDriver`` (2.4.1+, KAFKA-9503). It runs one
    task for all sub-topologies and partitions, with one queue per topic (the driver gives every topic one
    partition; kjoin's records keep theirs for the stores). Each input event is piped in on its own; the task
    then takes records until none is left: after each one, everything it wrote to an internal
    topic is enqueued (``captureOutputsAndReEnqueueInternalResults``) and competes by timestamp with
    what is already queued (``completeAllProcessableWork``). So a record written to a repartition
    topic is *not* processed at once: a queued record with a smaller timestamp goes first, and a
    foreign-key join's second response can overtake the subscriptions its first response sent
    (Kafka before 2.4.1 processed internal records depth-first instead).
  - ``timestamp``: a running application whose input is all in its topics before it starts. Each
    task ``"s_p"`` has its own partition group; the next step is the task whose next record has the
    smallest timestamp (ties: the task listed first, sub-topology then partition). A record written
    to a repartition topic waits in its partition until its task takes it: an order re-keyed at ts 5
    is joined after the customer update at ts 3, even if the update was written later.
  - ``stages``: the same running application, processed stage by stage (:mod:`kjoin.topology.stages`): the
    global tables first, then each stage's tasks with every record of every topic they read already written (a
    downstream task's partitions all have records buffered, what waiting with ``max.task.idle.ms`` gives, as
    :func:`kjoin.spark.run_join` assumes). A stage's tasks interleave as in ``timestamp`` (the task whose next
    record has the smallest timestamp; ties: sub-topology, then partition), so the records written to one
    repartition partition by several tasks get their offsets in that order. A task adds its records to its
    partition group topic by topic, in the order the topology declares its topics, each partition in offset
    order. Where ``timestamp`` lets a downstream task take a record before an upstream task has written a
    lower-timestamped one, ``stages`` does not; without such records the two agree. This is the schedule the
    Spark engine runs (:func:`kjoin.spark.run_topology`: an acyclic stage's tasks each on its own, a stage that
    feeds itself, a foreign-key join's two sides, whole).
"""

from __future__ import annotations

from collections import defaultdict

from typing import Any, Callable, Iterable, Iterator, Mapping

from ..scenario.inputs import MAX_LONG, MAX_PARTITIONS

from ..fates import Fate, Reason
from ..ordering import PartitionGroup, next_task
from ..joins.aggregate import AggregationError
from ..joins.stream_stream import InstanceTimes
from ..joins.tasks import LateLog
from ..records import Side, render_value
from ..state import StateHistory, StateLog
from .events import input_records
from .functions import UserFunctionError
from .graph import VIEW_OPS, Node, TopologyError, windowed_table
from .handlers import (
    NULL_KEY_IN_GRACE_BUFFER,
    SAME_RECORD_OPS,
    KafkaException,
    changed_value_text,
    dead_letter_headers,
)
from .plain import not_a_key, not_a_value
from .aggregates import AGGREGATE_OPS, OldValue, WindowedKey, build_aggregate
from .cogroup import COGROUP_OPS, CogroupAggregate
from .custom import CUSTOM_OPS, build_custom
from .suppress import SuppressProcessor
from .stages import stages_of
from .processors import (
    ForeignKeyNode,
    GlobalTableSource,
    NodeProcessor,
    Outcome,
    Rec,
    ScopedLog,
    TaskClock,
    build_processor,
    table_of,
)
from .trace import NodeVisit, TopicRecord, TopologyStep, TopologyTrace

__all__ = [
    "run",
    "stage_steps",
    "stage_trace",
    "SCHEDULES",
    "tasks_of",
    "assign_tasks",
    "stage_add_order",
    "joins_sharing_time",
    "ProcessingError",
]

SCHEDULES = ("test-driver", "timestamp", "stages")

CHECKED_HERE = ("map", "flat_map", "flat_map_values", "table-group-by", *AGGREGATE_OPS, *COGROUP_OPS)
"""Nodes whose forwarded records the runtime checks (:meth:`_Run._check_plain`): a user function makes them and no
check on its return has (the other nodes' functions check what they return when they return it:
:attr:`~kjoin.topology.functions.Function.check`, :func:`~kjoin.topology.functions.guarded`; or they forward what
they were handed, or what kjoin's vocabulary makes of it); an aggregate's windows may end past Kafka's long."""


class ProcessingError(TopologyError):
    """A user function of the topology raised, or returned what no serde could write: the message names the node,
    the function, the record the task took (topic, partition, offset, key, value) and what went wrong; the
    function's own exception, if any, is the cause (``__cause__``)."""


def run(
    topology: Any,
    events: Iterable[Mapping[str, Any]],
    schedule: str = "test-driver",
    instances: int = 1,
    assignment: Mapping[str, int] | None = None,
) -> TopologyTrace:
    """Run ``events`` through ``topology`` (a :class:`kjoin.Topology`); see the module docstring."""
    if schedule not in SCHEDULES:
        raise TopologyError(f"schedule: expected one of {', '.join(SCHEDULES)}, got {schedule!r}")
    topology.build()
    inputs = input_records(topology.graph, events)
    return _Run(topology, schedule, assign_tasks(topology, instances, assignment)).run(inputs)


def run_records(
    topology: Any,
    records: Iterable[TopicRecord],
    schedule: str = "stages",
    assignment: Mapping[str, int] | None = None,
    history: bool = True,
    keep: Callable[[TopologyStep], TopologyStep] | None = None,
) -> TopologyTrace:
    """Run input records already on their topic partitions, at their own offsets (a dump's, which need not start at
    0), each numbered by its ``event`` (its place in ``records``): a whole run of topics read from files, which
    :mod:`kjoin.topology.verdicts` explains (``kjoin debug``). ``history=False`` keeps no state after each step (the
    steps and topics alone, which the verdicts read): :meth:`TopologyTrace.state_at` of that trace refuses.
    ``keep``: what the trace keeps of each step, given the whole step as it is taken (a whole app's debugging run
    keeps the visits its verdicts read, their words written: :func:`kjoin.topology.verdicts.debugging_step`)."""
    if schedule not in SCHEDULES:
        raise TopologyError(f"schedule: expected one of {', '.join(SCHEDULES)}, got {schedule!r}")
    topology.build()
    runner = _Run(topology, schedule, None if assignment is None else dict(assignment), history=history)
    runner.keep = keep
    return runner.run(list(records))


def task_partitions(topology: Any) -> dict[int, int]:
    """Sub-topology -> how many tasks it has (its source topics' largest partition count), without listing them: a
    topology of 2^31 - 1 partitions costs nothing until a record reaches a task."""
    graph = topology.graph
    found: dict[int, int] = {}
    subs = graph.subtopology_of()
    for node in graph.nodes.values():
        if node.op in ("stream", "table", "repartition-source"):
            found[subs[node.name]] = max(found.get(subs[node.name], 0), graph.topics[node.topic].partitions)
    for node in graph.nodes.values():
        if node.op == "fk":  # its topics are read by both sides' sub-topologies
            for side in node.parents[1:]:
                found.setdefault(subs[side.name], 1)
    return dict(sorted(found.items()))


def tasks_of(topology: Any) -> list[str]:
    """Every task of ``topology`` (built): ``"s_p"`` for sub-topology ``s`` and each partition of its source topics
    (a list as long as the partitions: :func:`task_partitions` counts them)."""
    return [f"{sub}_{p}" for sub, count in task_partitions(topology).items() for p in range(count)]


class _ByPartition(Mapping[str, int]):
    """Task ``s_p`` -> instance ``p % instances``, computed when asked (the tasks are never listed)."""

    def __init__(self, counts: dict[int, int], instances: int) -> None:
        self.counts, self.instances = counts, instances

    def __getitem__(self, task: str) -> int:
        if _task_number(task, self.counts) is None:
            raise KeyError(task)
        return int(task.split("_")[1]) % self.instances

    def __iter__(self) -> Iterator[str]:
        return (f"{sub}_{p}" for sub, count in self.counts.items() for p in range(count))

    def __len__(self) -> int:
        return sum(self.counts.values())


def _task_number(task: Any, counts: dict[int, int]) -> tuple[int, int] | None:
    """``(sub-topology, partition)`` of a task's name if the topology has that task; else ``None``."""
    if not isinstance(task, str) or task.count("_") != 1:
        return None
    sub, partition = task.split("_")
    if not (sub.isdigit() and partition.isdigit()) or int(sub) not in counts:
        return None
    return (int(sub), int(partition)) if int(partition) < counts[int(sub)] else None


def assign_tasks(topology: Any, instances: int, assignment: Mapping[str, int] | None) -> Mapping[str, int] | None:
    """Which instance runs each task: ``assignment`` (task -> instance) as given, or by partition (task ``s_p``
    to instance ``p % instances``, so a partition's tasks share an instance). ``None`` for one instance."""
    if not isinstance(instances, int) or isinstance(instances, bool) or not 1 <= instances <= MAX_PARTITIONS:
        raise TopologyError(f"instances: a whole number from 1 to {MAX_PARTITIONS}, got {instances!r:.60}")
    topology.build()
    if assignment is None and instances == 1:
        return None
    counts = task_partitions(topology)
    if assignment is None:
        return _ByPartition(counts, instances)
    if not isinstance(assignment, Mapping):
        raise TopologyError(
            f"assignment: expected a mapping from task (0_1) to instance number, got {assignment!r:.60}"
        )
    count = max(instances, 1 + max((v for v in assignment.values() if isinstance(v, int)), default=0))
    for task, instance in assignment.items():
        if _task_number(task, counts) is None:
            shown = ", ".join(f"{sub}_0 to {sub}_{n - 1}" if n > 1 else f"{sub}_0" for sub, n in counts.items())
            raise TopologyError(f"assignment: {task!r} is not a task of this topology; its tasks are {shown}")
        if not isinstance(instance, int) or isinstance(instance, bool) or not 0 <= instance < count:
            raise TopologyError(f"assignment.{task}: an instance number from 0, got {instance!r}")
    if len(assignment) != sum(counts.values()):  # every named task is a task, once: some task is missing
        missing = next(task for task in _ByPartition(counts, 1) if task not in assignment)
        raise TopologyError(f"assignment: every task runs on an instance; {missing} has none")
    return dict(assignment)


def joins_sharing_time(topology: Any, assignment: Mapping[str, int] | None) -> list[str]:
    """The stream-stream joins of ``topology`` (built) whose tasks share a time tracker on some instance
    (``assignment`` from :func:`assign_tasks`, ``None``: one instance): left/outer joins holding unmatched records
    before KAFKA-14862 (``Semantics.outer_join_time_per_task``) with two or more tasks on one instance. Their
    results depend on the order across those tasks."""
    semantics = topology.semantics
    if not semantics.spurious_result_fix or semantics.outer_join_time_per_task:
        return []
    subtopology_of = topology.graph.subtopology_of()
    tasks = tasks_of(topology)
    found = []
    for node in topology.graph.nodes.values():
        if node.op != "stream-stream" or node.params["variant"] == "inner" or node.params["window"].deprecated_api:
            continue
        mine = [task for task in tasks if task.split("_")[0] == str(subtopology_of[node.name])]
        on = [assignment.get(task, 0) if assignment else 0 for task in mine]
        if len(on) != len(set(on)):
            found.append(node.name)
    return found


def stage_add_order(graph: Any) -> Any:
    """The order a task adds its records to its partition group in the ``stages`` schedule: topic by topic as the
    topology declares them, each partition in offset order (a sort key for :class:`TopicRecord`)."""
    rank = {name: number for number, name in enumerate(graph.topics)}
    return lambda record: (rank[record.topic], record.partition, record.offset)


def stage_steps(
    topology: Any,
    records: Iterable[TopicRecord],
    subtopologies: Iterable[int],
    global_records: Iterable[TopicRecord] = (),
    assignment: Mapping[str, int] | None = None,
) -> Iterator[TopologyStep]:
    """The steps of one stage's records (or of some of its tasks': those of an acyclic stage's task are the task's
    alone), taken as the ``stages`` schedule takes them, after the global tables' records (whose steps are not
    yielded), one at a time and forgotten: no history, no topic lists (a written record's offset counts only what
    this run wrote). ``subtopologies``: the stage's; records written to a topic they read are taken in this run,
    the others are only reported in the step's :attr:`~TopologyStep.wrote`. The Spark engine's per-task pass."""
    topology.build()
    runner = _Run(topology, "stages", None if assignment is None else dict(assignment), lean=True)
    for record in global_records:
        runner._take(record)
    yield from runner._stage_loop(list(records), set(subtopologies))


def stage_trace(
    topology: Any,
    records: Iterable[TopicRecord],
    subtopologies: Iterable[int],
    global_records: Iterable[TopicRecord] = (),
    assignment: dict[str, int] | None = None,
) -> TopologyTrace:
    """The reference trace (history and all) of some tasks of one stage, given their records (their inputs and the
    records earlier stages wrote to them) and the global tables' records, whose steps come first: the drill-down
    into one task of a Spark run (:meth:`kjoin.spark.TopologyRun.trace`); ``assignment`` (:func:`assign_tasks`)
    names each step's instance."""
    topology.build()
    records, global_records = list(records), list(global_records)
    runner = _Run(topology, "stages", assignment)
    runner.start(global_records + records)
    for record in global_records:
        runner._take(record)
    for _ in runner._stage_loop(records, set(subtopologies)):
        pass
    return TopologyTrace(topology, global_records + records, runner.steps, runner.topics, runner.history, "stages")


class _Run:
    def __init__(
        self,
        topology: Any,
        schedule: str,
        assignment: dict[str, int] | None = None,
        lean: bool = False,
        history: bool = True,
    ) -> None:
        self.lean = lean
        self.keeps_history = history and not lean
        """Record the state after every step (:class:`StateHistory`)? Not when lean, nor when asked not to."""
        self.count = 0
        self.current: Any = None
        self.sent = False
        """Has a sink sent a record in the current record context (which frees the raw source record)?"""
        """The timestamp of the current record context (Kafka's ``ProcessorRecordContext``)."""
        """The record of the step being taken (a :class:`TopicRecord`), for a processing error."""
        self.last_step: TopologyStep | None = None
        self.written_count: dict[tuple[str, int], int] = defaultdict(int)
        self.pending: dict[int, list[TopicRecord]] = {}
        self.history: StateHistory | None = None
        self.assignment = assignment
        self.topology = topology
        self.graph = topology.graph
        self.schedule = schedule
        self.subtopology_of = self.graph.subtopology_of()
        self.sources = self.graph.sources()
        self.log = StateLog(keep_changes=self.keeps_history)
        self.late = LateLog(self.log)
        self.processors: dict[tuple[str, int], NodeProcessor] = {}
        self.tasks: set[tuple[int, int]] = set()  # the (sub-topology, partition) whose processors are built
        self.foreign_keys = {
            node.name: ForeignKeyNode(
                node, self.graph, self.late, topology.semantics, self.subtopology_of, self._getter_of
            )
            for node in self.graph.nodes.values()
            if node.op == "fk"
        }
        self.internal_readers: dict[str, tuple[ForeignKeyNode, int]] = {}
        for fk in self.foreign_keys.values():
            self.internal_readers[fk.node.params["subscription_topic"]] = (fk, fk.right_sub)
            self.internal_readers[fk.node.params["response_topic"]] = (fk, fk.left_sub)
        self.windowed_sinks = {
            node.name for node in self.graph.nodes.values() if node.op == "to" and windowed_table(node.parents[0])
        }
        """The sinks that write a ``Windowed<K>`` key as its text: Kafka's application maps each key to text before
        the sink, so the sink sends in the map's copy of the record context (see :mod:`kjoin.topology.handlers`)."""
        self.clocks: dict[str, TaskClock] = {}
        self.instance_times: dict[tuple[str, int], InstanceTimes] = {}
        """A stream-stream join's time trackers per (node, instance): what the instance's tasks share."""
        # A partition's list is made when a record first reaches it (a topic of 2^31 partitions costs nothing).
        self.topics: dict[str, dict[int, list[TopicRecord]]] = {name: defaultdict(list) for name in self.graph.topics}
        self.steps: list[TopologyStep] = []
        self.keep: Callable[[TopologyStep], TopologyStep] | None = None
        """What :attr:`steps` keeps of each step (``None``: the whole step)."""

    # -- the schedules ----------------------------------------------------------------------------
    def start(self, inputs: list[TopicRecord]) -> None:
        if self.keeps_history:
            self.history = StateHistory(self.log.copy())
        self.log.take_changes()
        for record in inputs:
            self.topics[record.topic][record.partition].append(record)

    def run(self, inputs: list[TopicRecord]) -> TopologyTrace:
        self.start(inputs)
        if self.schedule == "stages":
            self._by_stage(inputs)
        elif self.schedule == "test-driver":
            group = PartitionGroup()  # TopologyTestDriver: one task, one partition group for every topic
            for record in inputs:
                _enqueue_driven(group, record)  # pipeInput: enqueue, then completeAllProcessableWork
                while group.buffered:
                    for written in self._take(group.next_record()):
                        if self._read_by_topology(written.topic):
                            _enqueue_driven(group, written)
        else:
            self._by_timestamp(inputs)
        return TopologyTrace(self.topology, inputs, self.steps, self.topics, self.history, self.schedule)

    def _by_timestamp(self, inputs: list[TopicRecord]) -> None:
        groups: dict[tuple[int, int], PartitionGroup] = {}

        def add(record: TopicRecord) -> None:
            task = (self._subtopology_reading(record.topic), record.partition)
            _enqueue(groups.setdefault(task, PartitionGroup()), record)

        for record in inputs:
            if self.sources[record.topic].op == "global-table":
                self._take(record)  # a starting instance restores its global stores before any task runs
        for record in inputs:
            if self.sources[record.topic].op != "global-table":
                add(record)
        while True:
            task = next_task(groups)
            if task is None:
                return
            for written in self._take(groups[task].next_record()):
                if self._read_by_topology(written.topic):
                    add(written)

    def _by_stage(self, inputs: list[TopicRecord]) -> None:
        for record in sorted(inputs, key=stage_add_order(self.graph)):
            if self.sources[record.topic].op == "global-table":
                self._take(record)
        for record in inputs:
            if self.sources[record.topic].op != "global-table":
                self.pending.setdefault(self._subtopology_reading(record.topic), []).append(record)
        for stage in stages_of(self.graph):
            records = [record for sub in stage.subtopologies for record in self.pending.pop(sub, [])]
            for _ in self._stage_loop(records, set(stage.subtopologies)):
                pass

    def _stage_loop(self, records: list[TopicRecord], members: set[int]) -> Iterator[TopologyStep]:
        """One stage's tasks take ``records`` (and what they write to each other) by timestamp, as in
        ``timestamp``; a record written to a later stage's topic waits in :attr:`pending` (unless lean)."""
        groups: dict[tuple[int, int], PartitionGroup] = {}

        def add(record: TopicRecord) -> None:
            task = (self._subtopology_reading(record.topic), record.partition)
            _enqueue(groups.setdefault(task, PartitionGroup()), record)

        for record in sorted(records, key=stage_add_order(self.graph)):
            add(record)
        while True:
            task = next_task(groups)
            if task is None:
                return
            written = self._take(groups[task].next_record())
            assert self.last_step is not None
            yield self.last_step
            self._route(written, members, add)

    def _route(self, written: Iterable[TopicRecord], members: set[int], add: Callable[[TopicRecord], None]) -> None:
        """Hand each record a step wrote to the sub-topology that reads it: to ``add`` when that sub-topology runs
        in this stage (``members``), else to :attr:`pending` for a later stage (unless lean)."""
        for record in written:
            if self._read_by_topology(record.topic):
                sub = self._subtopology_reading(record.topic)
                if sub in members:
                    add(record)
                elif not self.lean:
                    self.pending.setdefault(sub, []).append(record)

    def _read_by_topology(self, topic: str) -> bool:
        return topic in self.sources or topic in self.internal_readers

    def _subtopology_reading(self, topic: str) -> int:
        if topic in self.sources:
            if self.sources[topic].op == "global-table":
                return -1  # the global thread
            return self.subtopology_of[self.sources[topic].name]
        return self.internal_readers[topic][1]

    # -- one step ---------------------------------------------------------------------------------
    def _take(self, record: TopicRecord) -> list[TopicRecord]:
        """The task of ``record`` takes it: one step. Returns the records the step wrote."""
        index = self.count
        self.count += 1
        self.current = record
        self.sent = False  # the step's record context
        sub = self._subtopology_reading(record.topic)
        task = "global" if sub < 0 else f"{sub}_{record.partition}"
        if sub >= 0:
            if task not in self.clocks:
                self.clocks[task] = TaskClock(self.late, task)
            self.clocks[task].advance(record.ts)
        visits: list[NodeVisit] = []
        written: list[TopicRecord] = []
        if record.message is not None:
            fk, _ = self.internal_readers[record.topic]
            port = "subscription" if record.topic == fk.node.params["subscription_topic"] else "response"
            rec = Rec(record.key, record.value, record.ts)
            try:
                outcome = fk.handle_message(record.message, index)
            except (UserFunctionError, AggregationError) as error:
                self._handle_error(fk.node, port, rec, error, index, visits, written)
            else:
                self._report(fk.node, port, rec, record.partition, outcome, index, visits, written)
        else:
            source = self.sources[record.topic]
            rec = Rec(record.key, record.value, record.ts, record.old, record.has_old)
            self._visit(source, None, rec, record.partition, index, visits, written)
        fate, reason = _step_fate(visits)
        instance = None if self.assignment is None else self.assignment.get(task, 0)
        self.last_step = TopologyStep(index, task, record, tuple(visits), fate, reason, instance)
        changes = self.log.take_changes()
        if not self.lean:
            self.steps.append(self.last_step if self.keep is None else self.keep(self.last_step))
        if self.history is not None:
            self.history.record(changes, self.log)
        return written

    def _visit(
        self,
        node: Node,
        port: Side | None,
        rec: Rec,
        partition: int,
        step: int,
        visits: list[NodeVisit],
        written: list[TopicRecord],
    ) -> None:
        try:
            if node.op == "fk":
                assert port is not None
                outcome = self.foreign_keys[node.name].handle_input(port, rec, partition, step)
            else:
                processor = self._processor(node, partition)
                if node.op in ("suppress", "stream-table"):  # a buffer keeps each entry's record context
                    processor.taken = (self.current, self.sent)
                outcome = processor.handle(port, rec, step)
            problem = self._check_plain(node, outcome) if node.op in CHECKED_HERE else None
            if problem is not None:
                raise problem
            if outcome.reason is Reason.NULL_KEY_IN_GRACE_BUFFER:
                raise KafkaException(*NULL_KEY_IN_GRACE_BUFFER)  # Kafka's buffer.put throws: the handler decides
        except (UserFunctionError, AggregationError, KafkaException) as error:
            self._handle_error(node, None if port is None else str(port), rec, error, step, visits, written)
            return
        partners: tuple[int, ...] = ()
        if outcome.forwarded and node.op == "stream-table":
            partners = self._writers(node.params["table"], partition, rec.key)
        elif outcome.forwarded and node.op == "stream-global":
            selector = node.params.get("key_selector")
            looked_up = rec.key if selector is None else selector(rec.key, rec.value)
            partners = self._writers(node.parents[1], 0, looked_up)
        elif outcome.forwarded and node.op == "table-table" and port is not None:
            partners = self._writers(node.parents[1 if port is Side.LEFT else 0], partition, rec.key)
        self._report(
            node, None if port is None else str(port), rec, partition, outcome, step, visits, written, partners
        )

    # -- a user function's failure: the one place it is decided ---------------------------------------
    def _check_plain(self, node: Node, outcome: Outcome) -> UserFunctionError | None:
        """What to refuse, at the node that made it: a forwarded record whose key the String serde could not write
        or whose value is not JSON (a set, bytes, an object, NaN or infinity, an integer beyond 64 bits)."""
        for made in outcome.forwarded:
            if isinstance(made.key, WindowedKey) and made.key.end_ms > MAX_LONG:
                window = f"[{made.key.start_ms}, {made.key.end_ms})"
                return UserFunctionError(
                    f"the window {window}", f"ends past {MAX_LONG}, Kafka's largest timestamp (Kafka's TimeWindow "
                    "refuses it: IllegalArgumentException, the application stops)",
                    fix="give the records timestamps at least a window size below 2^63 - 1",
                )  # fmt: skip
            problem = not_a_key(made.key)
            if problem is not None:
                return UserFunctionError(_function_of(node), f"made the key {problem}")
            problem = not_a_value(made.value)
            if problem is not None:
                return UserFunctionError(_function_of(node), f"made the value {problem}")
        return None

    def _handle_error(
        self,
        node: Node,
        port: str | None,
        rec: Rec,
        error: Exception,
        step: int,
        visits: list[NodeVisit],
        written: list[TopicRecord],
        thrower: Node | None = None,
    ) -> None:
        """A user function failed while ``node`` handled ``rec`` (``thrower``: the sink child whose partitioner
        threw): the processing exception handler decides (:mod:`kjoin.topology.handlers`). ``continue`` drops the
        record at ``node`` (a ``dropped`` visit, and the dead-letter record if there is a queue); ``fail`` stops the
        run (:meth:`_failed`). A source node catches nothing (Kafka's ``SourceNode`` overrides ``process``): the run
        stops whatever the handler."""
        handling = self.topology.exception_handling
        if not handling.continues or node.op in ("stream", "table", "repartition-source"):
            self._failed(node, rec, error)
        cause = getattr(error, "original", None) or error
        wrote = self._dead_letter(cause, rec.ts, step)
        written.extend(wrote)
        what = self._what_failed(thrower or node, error)
        if thrower is not None:
            what += f" (in {thrower.name}, a sink, which passes the exception to this node)"
        text = (
            f"{what}; the processing exception handler (continue) drops the record here"
            + (f" and writes it to the dead-letter queue {handling.dead_letter_queue}" if wrote else "")
            + "."
        )
        visits.append(
            NodeVisit(
                node.name, node.op, port, rec.key, rec.value, rec.ts, Fate.DROPPED, Reason.PROCESSING_EXCEPTION, text,
                (), wrote,
            )
        )  # fmt: skip

    def _dead_letter(self, error: BaseException, ts: int, step: int) -> tuple[TopicRecord, ...]:
        """The dead-letter record of the step's record (:data:`current`), if the topology has a queue: the source
        record's key and value, ``ts`` (the record's as it reached the failing node), Kafka's headers. Once a sink of
        the step has sent a record, the key and value are null: Kafka's ``RecordCollectorImpl.send`` frees the raw
        source record from the record context (see :mod:`kjoin.topology.handlers`)."""
        topic = self.topology.exception_handling.dead_letter_queue
        if topic is None:
            return ()
        record = self.current
        value = record.value if record.message is None else record.message.describe()
        if self.sent:
            return (self._append(topic, None, None, ts, None, step, headers_of(error, record)),)
        if record.has_old:  # a table group-by's Change, in the bytes its repartition topic carries
            value = changed_value_text(record.value, record.old)
        return (self._append(topic, record.key, value, ts, None, step, headers_of(error, record)),)

    def _failed(self, node: Node, rec: Rec, error: Exception) -> Any:
        """A processing error at ``node`` on ``rec`` (the step's record :attr:`current`, as it reached the node):
        kjoin's :class:`ProcessingError`, its cause the function's own exception. This is where a processing
        exception handler (Kafka's KIP-1033) said fail, or could not decide (a source node's, a failure it never
        sees)."""
        record = self.current
        taken = (
            f"{record.topic} partition {record.partition} offset {record.offset}, key {_shown(record.key)}, value "
            f"{_shown(record.value)}, ts {record.ts}"
        )
        reached = ""
        if (rec.key, rec.value) != (record.key, record.value):
            reached = f" (it reached {node.name} as key {_shown(rec.key)}, value {_shown(rec.value)})"
        what = self._what_failed(node, error)
        fix = getattr(error, "fix", None) or (
            "return a key that is text, a number, a boolean or null, and a value that is JSON"
            if isinstance(error, UserFunctionError) and error.original is None
            else "fix the function, or keep such records out before this node (a filter)"
        )
        handling = self.topology.exception_handling
        if node.op in ("stream", "table", "repartition-source"):
            stops = "a source node catches no exception (Kafka's SourceNode), so the task fails whatever the handler"
        elif handling.continues:
            stops = "this failure reaches no processing exception handler"
        else:
            stops = "as Kafka's default processing exception handler (fail) does"
            if handling.dead_letter_queue is not None:
                stops += f", after writing the record to the dead-letter queue {handling.dead_letter_queue}"
            if self.topology.semantics.processing_exception_handler:
                fix += "; or drop such records at this node with processing_exception_handler continue"
        cause = getattr(error, "original", None) or error
        raise ProcessingError(
            f"node {node.name} ({node.op}): {what}; on the record {taken}{reached}. kjoin stops the run, {stops}: {fix}"
        ) from cause

    def _what_failed(self, node: Node, error: Exception) -> str:
        """What failed at ``node``, in words: the function by its name and what it did."""
        if isinstance(error, KafkaException):
            return f"Kafka's {node.op} processor throws {error.java_class}: {error} (a null key in its grace buffer)"
        if not isinstance(error, UserFunctionError):
            return f"{_function_of(node)} failed: {error}"
        if error.function.startswith("the "):
            return str(error)
        if node.op in ("to", "repartition-sink"):
            return f"the partitioner of {node.topic} ({error.function}) {error.problem}"
        return f"{_function_of(node, error.function)} {error.problem}"  # the node's own function, named by its text

    def _writers(self, node: Node, partition: int, key: Any) -> tuple[int, ...]:
        """The steps that wrote what table ``node`` holds for ``key`` (a join's result: both sides')."""
        if node.op in ("aggregate", "table-aggregate", "cogroup", "to_table", "global-table"):
            if node.op == "global-table":
                partition = 0
            processor = self.processors.get((node.name, partition))
            step = None if processor is None else getattr(processor, "writers", {}).get(key)
            return () if step is None else (step,)
        if node.op == "table":
            if node.params.get("history_retention_ms") is not None:
                return ()  # a versioned table answers as of a timestamp: its latest writer may not be the one
            processor = self.processors.get((node.name, partition))
            step = None if processor is None else processor.writers.get(key)  # type: ignore[attr-defined]
            return () if step is None else (step,)
        if node.op == "fk":
            step = self.foreign_keys[node.name].writers.get((partition, key))
            return () if step is None else (step,)
        if node.op == "table-table":
            return tuple(sorted({s for parent in node.parents for s in self._writers(parent, partition, key)}))
        if node.op in VIEW_OPS:  # a table's filter or mapValues: its parent's row, filtered or mapped
            return self._writers(node.parents[0], partition, key)
        return ()

    def _report(
        self,
        node: Node,
        port: str | None,
        rec: Rec,
        partition: int,
        outcome: Outcome,
        step: int,
        visits: list[NodeVisit],
        written: list[TopicRecord],
        partners: tuple[int, ...] = (),
    ) -> None:
        try:
            wrote = tuple(
                self._append(topic, key, value, ts, message, step) for topic, key, value, ts, message in outcome.writes
            )
        except ProcessingError:
            raise
        except (UserFunctionError, TopologyError) as error:  # a partitioner that raised or named no partition
            if node.op in ("to", "repartition-sink") and self.topology.exception_handling.continues:
                raise _SinkFailed(node, rec, error) from error  # a sink catches nothing: its parent decides
            self._failed(node, rec, error)
        # a foreign-key join's processors forward to their internal topics' sinks in a record context of their own; a
        # repartition topic's sink sends in the copy its repartition filter (or a table group-by's map) made, and a
        # sink of windowed keys in the copy its key's map to text made (judged against 4.4.0 and 4.2.0: the
        # siblings' dead-letter records keep the raw record)
        frees = node.op not in ("fk", "repartition-sink") and node.name not in self.windowed_sinks
        self.sent = self.sent or (bool(wrote) and frees)
        written.extend(wrote)
        forwarded = tuple(outcome.forwarded)  # the records themselves: the children's visits and stories hold them
        visits.append(
            NodeVisit(
                node.name, node.op, port, rec.key, rec.value, rec.ts, outcome.fate, outcome.reason, outcome.explain,
                forwarded, wrote, partners,
            )
        )  # fmt: skip
        processor = self.processors.get((node.name, partition))
        try:
            for child_rec in outcome.forwarded:
                outer, taken = self.sent, self.current
                if child_rec.context is not None:  # an eviction: its children run in the entry's record context,
                    self.current, self.sent = child_rec.context  # its raw record freed only if it was when buffered
                for child, child_port in node.children:
                    if child_rec.to is None or child_rec.to == child.name:
                        self._visit(child, child_port, child_rec, partition, step, visits, written)
                if child_rec.context is not None:
                    self.current, self.sent = taken, outer
                elif node.op not in SAME_RECORD_OPS:  # the children ran in a copy of the record context
                    self.sent = outer
                if processor is not None:
                    processor.forwarded(child_rec)
        except _SinkFailed as failed:  # Kafka's ProcessorNode of this node catches what its sink child threw
            if node.op in ("stream", "table", "repartition-source"):
                self._failed(failed.node, failed.rec, failed.error)
            self._handle_error(node, port, rec, failed.error, step, visits, written, failed.node)

    def _append(
        self, topic: str, key: Any, value: Any, ts: int, message: Any, step: int, headers: tuple[Any, ...] = ()
    ) -> TopicRecord:
        old, has_old = None, False
        if isinstance(message, OldValue):  # a table group-by's Change(new, old)
            old, has_old, message = message.value, True, None
        partition = message.partition if message is not None else self.graph.topics[topic].partition_of(key)
        if self.lean:
            offset = self.written_count[(topic, partition)]
            self.written_count[(topic, partition)] += 1
            return TopicRecord(topic, partition, offset, key, value, ts, step, None, message, old, has_old, headers)
        records = self.topics[topic][partition]
        record = TopicRecord(topic, partition, len(records), key, value, ts, step, None, message, old, has_old, headers)
        records.append(record)
        return record

    def _processor(self, node: Node, partition: int) -> NodeProcessor:
        if node.op == "global-table":
            partition = 0  # one global store, read by every task
        found = self.processors.get((node.name, partition))
        if (
            found is None
            and node.op != "global-table"
            and (self.subtopology_of[node.name], partition) not in self.tasks
        ):
            self._create_task(self.subtopology_of[node.name], partition)
            found = self.processors.get((node.name, partition))
        if found is None and node.op == "global-table":
            log = ScopedLog(self.late, f"{node.name}: ", lambda task, name: "global")
            found = GlobalTableSource(node, log, self.topology.semantics)
            self.processors[(node.name, partition)] = found
        if found is None:
            sub = self.subtopology_of[node.name]
            log = ScopedLog(self.late, f"{node.name}: ", lambda task, name: f"{sub}_{task}")
            if node.op in AGGREGATE_OPS:
                found = build_aggregate(node, partition, log, self.topology.semantics)
            elif node.op in CUSTOM_OPS:
                found = build_custom(node, partition, log, self.graph.text_keys)
            elif node.op == "suppress":
                found = SuppressProcessor(node, partition, log, self._parent(partition), self.topology.kafka_topic)
            elif node.op in COGROUP_OPS:
                found = CogroupAggregate(node, partition, log, self.topology.semantics)
            else:
                semantics = self.topology.semantics
                materialized = self.graph.materialized(node, semantics)
                instance = self._instance_times(node, partition, log)
                found = build_processor(
                    node, partition, log, semantics, self._parent(partition), materialized, instance
                )
            self.processors[(node.name, partition)] = found
        return found

    def _instance_times(self, node: Node, partition: int, log: Any) -> InstanceTimes | None:
        """The time trackers of stream-stream ``node`` on the instance that runs its task of ``partition`` (one
        instance without an assignment): shared by that instance's tasks where Kafka shares them. None under the
        ``test-driver`` schedule, whose judge runs each task in a TopologyTestDriver of its own."""
        if node.op != "stream-stream" or self.schedule == "test-driver":
            return None
        task = f"{self.subtopology_of[node.name]}_{partition}"
        number = self.assignment.get(task, 0) if self.assignment else 0
        if (node.name, number) not in self.instance_times:
            self.instance_times[(node.name, number)] = InstanceTimes(log)
        return self.instance_times[(node.name, number)]

    def _create_task(self, subtopology: int, partition: int) -> None:
        """Build every processor of task ``subtopology_partition`` before its first record, as Kafka builds a task's
        whole topology at once: a processor asks its parents for old values when it is built (a materialized view
        before 2.7, KAFKA-10494), which must hold from the task's first record on, whichever node that reaches."""
        self.tasks.add((subtopology, partition))
        for name, number in self.subtopology_of.items():
            other = self.graph.nodes[name]
            if number == subtopology and other.op not in ("fk", "global-table"):
                self._processor(other, partition)

    def _getter_of(self, node: Node) -> Callable[[int], Any]:
        """Table ``node``'s value getter in the task of a partition (a foreign-key join reads a join through it)."""
        return lambda partition: table_of(node, partition, self._parent(partition))

    def _parent(self, partition: int) -> Any:
        def parent(node: Node) -> Any:
            if node.op == "fk":
                return self.foreign_keys[node.name]
            return self._processor(node, partition)

        return parent


class _SinkFailed(Exception):
    """A sink's partitioner failed under a handler that continues: the sink node catches nothing, so the exception
    goes up to the node that forwarded to it (:meth:`_Run._report`), whose handler decides."""

    def __init__(self, node: Node, rec: Rec, error: Exception) -> None:
        super().__init__(str(error))
        self.node, self.rec, self.error = node, rec, error


def _function_of(node: Node, text: str | None = None) -> str:
    """The user function a node calls (the one named ``text``, if given), named for an error (``the joiner (pair)``,
    ``the select_key function (f)``)."""
    params = node.params
    found = [
        f"{what} ({fn.text})"
        for name, what in (
            ("fn", f"the {node.op} function"),
            ("joiner", "the joiner"),
            ("key_selector", "the key selector"),
        )
        if (fn := params.get(name)) is not None and (text is None or fn.text == text)
    ]
    if found:
        return found[0]
    if text is not None:
        return _function_of(node)
    if "aggregation" in params:
        return f"the {params['aggregation'].name} aggregation"
    if node.op == "fk":
        return "the foreign-key join"
    return f"the {node.op} node"


def headers_of(error: BaseException, record: TopicRecord) -> tuple[Any, ...]:
    """Kafka's ``__streams.errors.*`` headers of a dead-letter record of ``record``."""
    return dead_letter_headers(error, record.topic, record.partition, record.offset)


def _shown(value: Any) -> str:
    """A value for an error message, whatever it is."""
    try:
        text = render_value(value)
    except Exception:  # noqa: BLE001 - a value no serde can write is shown as Python shows it
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _step_fate(visits: list[NodeVisit]) -> tuple[Fate, Any]:
    """The record's fate over the whole step: it joined if any join emitted; else it waits in a
    buffer; else it was passed on to a topic; else the most telling of the nodes' fates (stored,
    no match, dropped), with the reason of the last node that had it."""
    best: dict[Fate, Any] = {}
    wrote = False
    for visit in visits:
        wrote = wrote or (bool(visit.wrote) and visit.reason is not Reason.PROCESSING_EXCEPTION)
        best[visit.fate] = visit.reason
    for fate in (Fate.JOINED, Fate.BUFFERED):
        if fate in best:
            return fate, best[fate]
    if wrote:
        return Fate.FORWARDED, None
    for fate in (Fate.STORED, Fate.NO_MATCH, Fate.DROPPED):
        if fate in best:
            return fate, best[fate]
    return Fate.FORWARDED, None


def _enqueue(group: PartitionGroup, record: TopicRecord) -> None:
    """A record into its task's partition group: its topic partition's queue."""
    group.add((record.topic, record.partition), (record,))


def _enqueue_driven(group: PartitionGroup, record: TopicRecord) -> None:
    """A record into the ``test-driver`` schedule's partition group: its topic's queue, whatever its partition.
    TopologyTestDriver gives every topic one partition, so the records one step writes to several partitions of a
    topic wait in one queue in the order written, and two topics' heads with equal timestamps alternate as two
    queues do, not as one queue per partition would (docs/semantics.md section 10, item 28)."""
    group.add(record.topic, (record,))
