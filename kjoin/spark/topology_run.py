"""A whole topology on Spark: :func:`run_topology` (topics in, lazy frames of steps and topics out) and
:class:`TopologyRun` (the frames, and the drill-down: a task's reference trace, ``why`` of a record).

How a run flows:

* The topology's stages (:mod:`kjoin.topology.stages`: its sub-topologies in dependency order, the two sides of a
  foreign-key join together) run one after the other, each as one ``mapInArrow`` (a chain: its Kafka task ``p``
  placed in Spark partition ``p`` by :func:`kjoin.spark.placement.by_partition`, no sort) or ``applyInPandas``
  (the processors) over its records grouped by Kafka task; a stage that feeds itself runs whole in one group.
  Per Kafka task, a *chain* stage (a stream through stateless nodes and stream-table joins to a sink:
  :func:`~kjoin.spark.passes.stage_chain.stage_plan`) runs the chain pass
  (:mod:`kjoin.spark.passes.stage_chain`: no processors), any other the reference engine's processors
  (:mod:`kjoin.spark.passes.stage_task`); both give the same rows (``method=`` forces one,
  :attr:`TopologyRun.methods` says which ran and why). A chain whose functions are declarative (a re-key by a
  field of a JSON value: :func:`~kjoin.spark.passes.stage_expressions.declarative_plan`) can run as Spark
  expressions (``method="expressions"``, :mod:`kjoin.spark.passes.stage_expressions`: a window and a
  projection, no Python worker but for the keys' murmur2 and the few texts Spark's JSON would show otherwise), with
  the same rows; a chain of default joins reading what such a stage wrote runs the chain pass on the values as
  shown, without decoding them (``auto`` and ``expressions``).
* A stage's records are the input topics its sub-topologies read and what earlier stages wrote to their
  repartition (or ``through``) topics. Grouping those by task *is* the repartition: the writing task chose each
  record's partition (murmur2 of the serialized key, or the topology's partitioner, by the reference engine's own
  code) and the reading stage's tasks gather theirs in one shuffle. A written record's offset is its rank in its
  topic partition in the order the writing tasks produced it (:data:`~kjoin.spark.passes.stage_task.WRITE_ORDER`),
  which the reading task, holding the whole topic partition, numbers itself
  (:func:`~kjoin.spark.passes.stage_task.written_offsets`: a window over the written records cost a shuffle and a
  sort of its own); :attr:`TopologyRun.topics` numbers them the same way with a window.
* The global tables' records are read once on the driver (they are small: every Kafka task holds them all) and
  taken first by every group, as a starting application restores its global stores before any task runs.
* The result is the reference engine's ``stages`` schedule (:mod:`kjoin.topology.runtime`), record for record:
  ``tests/test_spark_topology.py`` compares random topologies with it (``make topology-spark-check`` runs many).

A stage's rows that a later stage reads are kept (a lazy local checkpoint on a local master, persisted on a cluster:
:func:`kjoin.spark.keep.kept`), serialized (``MEMORY_AND_DISK``), so the run computes each stage once. The last
stages' rows (no stage reads them) are kept only by :meth:`TopologyRun.keep` (``why`` calls it): reading one frame
once costs the run and no more, and at 10^7 records keeping them cost a fifth of the run's JVM CPU
(``benchmarks/bench_topology.py``: 100-110 s of JVM CPU with every stage kept as objects, 74 s serialized, 61 s
serialized and the last stage not kept; the same 10^7 records' Python 19-21 s).
"""

from __future__ import annotations

import contextlib
import functools
import re
from functools import reduce
from typing import Any, Callable, Collection, Iterator, Mapping

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..topology.graph import TopologyError
from ..topology.runtime import ProcessingError, assign_tasks, joins_sharing_time, stage_trace
from ..topology.stages import Stage, stages_of, topic_readers, topic_writers
from ..topology.suppress import SuppressionBufferFull
from ..topology.trace import TopicRecord, TopologyTrace
from .io.topic import SparkInputError, Topic, default_partition_column
from .keep import kept, release
from .passes.stage_task import (
    ROW_SCHEMA,
    STEP_ORDER,
    WRITE_ORDER,
    WRITE_ORDER_TYPES,
    Decoding,
    decode_records,
    stage_function,
)
from .passes.stage_expressions import declarative_plan, expression_rows, shown_values_plan
from .passes.stage_rekey import rekey_plan, rekey_stage_function
from .passes.stage_chain import chain_stage_function, per_task, stage_plan
from .placement import by_partition

__all__ = ["run_topology", "TopologyRun", "RECORD_COLUMNS", "METHODS", "kjoin_error", "kjoin_errors"]

METHODS = ("auto", "expressions", "vectorised", "processors")
"""``run_topology``'s ``method``: ``vectorised`` runs every stage as a chain (:mod:`.passes.stage_chain`)
and refuses a stage that is not one, ``expressions`` does too but runs a declarative chain as Spark expressions
(:mod:`.passes.stage_expressions`), ``processors`` runs every stage with the processors, ``auto`` each stage the
first way that fits it (the chain pass, as arrays on values as shown after a declarative re-key; the processors)."""

RECORD_COLUMNS = ("topic", "partition", "offset", "ts", "key_text", "value_text", "payload", *WRITE_ORDER)
"""The columns of a stage's records: an input record's key and value as text (``payload`` null), a written one's
pickled (``key_text``/``value_text`` then show it) with its place in the order written (:data:`WRITE_ORDER`, null
for an input record): the reading task numbers the written records of each topic partition (its offsets)."""


def _assignment(topology: Any, instances: int, assignment: Mapping[str, int] | None) -> dict[str, int] | None:
    """The instance of every task (:func:`kjoin.topology.runtime.assign_tasks`); refused when a stream-stream
    join's tasks share their instance's time tracker (before KAFKA-14862): their results depend on the order across
    tasks, which the topics do not carry and the stages here do not fix."""
    try:
        tasks_on = assign_tasks(topology, instances, assignment)
    except TopologyError as error:
        raise SparkInputError(str(error)) from None
    shared = joins_sharing_time(topology, tasks_on)
    if shared:
        raise SparkInputError(
            f"{', '.join(shared)}: on Kafka {topology.semantics} the tasks of one instance share a left/outer "
            "stream-stream join's time tracker (before KAFKA-14862, 3.4.1 and 3.5), so a task's results depend on "
            "the order in which the instance ran its tasks' records, which Spark's stages do not follow; run it on "
            "one partition, with its tasks on instances of their own (instances=<partitions>), on 3.4.1+, or in "
            "the reference engine (Topology.run, whose schedule fixes that order)"
        )
    return tasks_on


def run_topology(
    spark: Any,
    topology: Any,
    topics: Mapping[str, Topic],
    *,
    spark_partitions: int | None = None,
    instances: int = 1,
    assignment: Mapping[str, int] | None = None,
    method: str = "auto",
) -> "TopologyRun":
    """Run ``topology`` (a :class:`kjoin.Topology`) over ``topics`` (topic name -> :class:`Topic`, from
    :func:`~kjoin.spark.from_files`, :func:`~kjoin.spark.from_kafka`, ...: one for every topic the topology
    reads), as Kafka Streams runs it and as the reference engine's ``stages`` schedule does, record for record.
    ``spark_partitions``: Spark partitions per stage (default: ``spark.sql.shuffle.partitions``). ``method``
    (:data:`METHODS`): how each stage runs; :attr:`TopologyRun.methods` says, per stage, which way and why.
    ``instances``/``assignment``: application instances sharing the tasks, as ``Topology.run`` takes them (task
    ``s_p`` on instance ``p % instances``, or ``assignment``, task -> instance): each step names its instance;
    the outputs do not change (each task's input is all written before it runs).
    Returns a lazy :class:`TopologyRun`."""
    if method not in METHODS:
        raise SparkInputError(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
    topology.build()
    tasks_on = _assignment(topology, instances, assignment)
    graph = topology.graph
    sources = graph.sources()
    written = topic_writers(graph)
    _check_topics(graph, sources, written, topics)
    readers = topic_readers(graph)
    decoding: dict[str, tuple[bool, str]] = {}
    inputs: dict[str, DataFrame] = {}
    for name, topic in topics.items():
        inputs[name], decoding[name] = _records(name, topic, graph.topics[name])
    bases = _first_written_offsets(inputs, written)
    global_records = _global_records(graph, sources, inputs, decoding)
    stages = stages_of(graph)
    results: list[DataFrame] = []
    writers: list[set[str]] = []  # per result, the topics its stage writes
    leaves: list[int] = []  # the results no later stage reads: kept only by TopologyRun.keep()
    stage_records: dict[int, DataFrame] = {}
    methods: dict[int, tuple[str, str]] = {}
    carried: set[str] = set()  # the repartition topics declarative stages wrote: text keys, values as JSON text
    for stage in stages:
        read = sorted(topic for topic, sub in readers.items() if sub in stage.subtopologies)
        records = _stage_records(read, readers, inputs, written, zip(results, writers))
        if records is None:
            continue
        stage_records[stage.number] = records
        chain, why = _chain_plan(topology, stage, method)
        records = records.select(*RECORD_COLUMNS, "_sub")
        declarative, texts = None, False
        if chain is not None and method in ("auto", "expressions"):
            declarative, declarative_why = declarative_plan(topology, chain, decoding, written)
            if declarative is None:
                texts, texts_why = shown_values_plan(chain, decoding, carried)
                why = texts_why if texts else why
        if declarative is not None:
            carried.add(declarative.sink_topic)  # text keys, JSON values: the next stage needs them only as shown
        if declarative is not None and method == "expressions":
            # in the JVM: a window over each input partition and expressions per record (its rows keep themselves);
            # not auto's choice: Spark's JSON parsing and rendering cost more CPU than the chain pass's Python
            methods[stage.number] = ("expressions", declarative_why)
            results.append(expression_rows(records, stage.number, declarative))
            writers.append(_written_by(stage, written))
            continue
        if chain is not None:
            methods[stage.number] = ("vectorised", why)
            function = chain_stage_function(
                topology, stage.number, chain, decoding, bases, texts, json_payloads=declarative is not None
            )
            if declarative is not None and (rekey := rekey_plan(topology, chain, decoding)) is not None:
                function = rekey_stage_function(topology, stage.number, rekey, decoding, bases, function)
            if texts:  # the values as shown are all it reads: the written records' payloads need not travel
                records = records.withColumn("payload", F.lit(None).cast("binary"))
            tasks = max(graph.topics[topic].partitions for topic in read)
            rows = _chain_rows(records, function, spark_partitions or min(tasks, _shuffle_partitions(spark)))
        else:
            methods[stage.number] = ("processors", why)
            function = stage_function(
                topology, stage.number, stage.subtopologies, stage.cyclic, decoding, global_records, bases
            )
            rows = _processor_rows(records, function, stage, spark_partitions)
        writes = _written_by(stage, written)
        if any(readers[topic] not in stage.subtopologies for topic in writes if topic in readers):
            rows = kept(rows, StorageLevel.MEMORY_AND_DISK)  # a later stage reads them: computed once
        else:
            leaves.append(len(results))
        results.append(rows)
        writers.append(writes)
    if not results:
        results, leaves = [spark.createDataFrame([], ROW_SCHEMA)], []

    options = dict(spark_partitions=spark_partitions, instances=instances, assignment=assignment, method=method)
    rerun = functools.partial(_rerun, spark, topics, options)  # the same topics through another topology
    return TopologyRun(
        topology, stages, results, stage_records, global_records, decoding, tasks_on, bases, methods, leaves, inputs,
        rerun,
    )  # fmt: skip


def _rerun(spark: Any, topics: Mapping[str, Topic], options: Mapping[str, Any], topology: Any) -> "TopologyRun":
    return run_topology(spark, topology, topics, **options)


_PROCESSING_ERROR = re.compile(
    r"(?:kjoin\.topology\.(?:runtime|suppress)\.)?(ProcessingError|SuppressionBufferFull): "
    r"(.*?)(?:\n\s*\n|\n\tat |\nJVM stacktrace|$)",
    re.S,
)
_STOPS = {"ProcessingError": ProcessingError, "SuppressionBufferFull": SuppressionBufferFull}
"""The errors on which a task stops, as the reference engine raises them: a user function that throws (the ``fail``
handler), a full suppression buffer that shuts down."""


def kjoin_error(error: BaseException) -> ProcessingError | SuppressionBufferFull | None:
    """The kjoin error a Spark job failed with on an executor (a ``PythonException`` or ``Py4JJavaError`` whose
    Python worker raised :class:`~kjoin.topology.runtime.ProcessingError` or
    :class:`~kjoin.topology.suppress.SuppressionBufferFull`), as kjoin's own error; ``None`` if the failure was not
    kjoin's."""
    found = _PROCESSING_ERROR.search(str(error))
    return None if found is None else _STOPS[found.group(1)](found.group(2).strip())


@contextlib.contextmanager
def kjoin_errors() -> Iterator[None]:
    """Spark actions inside raise kjoin's :class:`~kjoin.topology.runtime.ProcessingError` when a user function
    failed on an executor (the Spark error is its cause, for the worker's traceback)."""
    try:
        yield
    except (ProcessingError, SuppressionBufferFull):
        raise
    except Exception as error:
        translated = kjoin_error(error)
        if translated is None:
            raise
        raise translated from error


class TopologyRun:
    """A topology run on Spark (lazy): its frames, and the reference engine's view of any task or record.

    * :attr:`steps`: one row per record a task took, in the ``stages`` schedule's order (sort by
      :data:`~kjoin.spark.passes.stage_task.STEP_ORDER`): ``task, instance, topic, partition, offset, ts, key,
      value, fate, reason, nodes, dropped`` (``instance`` null for one instance; the global tables' steps are the
      reference trace's first ones, not rows here). ``dropped`` names every node that dropped the record and why
      (``per-hour: expired-window``), as the reference trace's steps do, also when the step's ``fate`` is
      ``joined`` because a join before that node emitted.
    * :attr:`topics`: every record the topology wrote (repartition, foreign-key, output topics), with its offset.
    * :attr:`outputs`: those of the output topics (``to``, not read back), ``topic, partition, offset, key, value,
      ts`` (keys and values as the trace writes them).
    * :meth:`trace`: a task's reference trace (every node's visit, every store after every step);
      :meth:`why`: a written record followed back through every join and repartition topic to the input records.
    """

    def __init__(
        self,
        topology: Any,
        stages: list[Stage],
        stage_rows: list[DataFrame],
        stage_records: dict[int, DataFrame],
        global_records: list[TopicRecord],
        decoding: Decoding,
        assignment: dict[str, int] | None = None,
        bases: Mapping[tuple[str, int], int] | None = None,
        methods: Mapping[int, tuple[str, str]] | None = None,
        leaves: Collection[int] = (),
        inputs: Mapping[str, DataFrame] | None = None,
        rerun: Callable[[Any], TopologyRun] | None = None,
    ) -> None:
        self.topology = topology
        self.inputs = dict(inputs or {})
        """Topic -> its input records (:data:`RECORD_COLUMNS`), as read: what the whole app's verdicts re-read."""
        self.assignment = assignment
        self._bases = dict(bases or {})
        self.methods = dict(methods or {})
        """Stage number -> (``expressions``, ``vectorised`` or ``processors``, why): how each stage that took records
        ran."""
        self.stages = stages
        self._stage_rows = list(stage_rows)
        self._leaves = set(leaves)
        self._stage_records = stage_records
        self._global_records = global_records
        self._decoding = decoding
        self._traces: dict[tuple[int, str], TopologyTrace] = {}
        self._app_debug: Any = None
        self.rerun = rerun
        """``rerun(topology)``: the same topics run through another topology (its rules or settings turned), as
        :meth:`diff` runs them (:func:`run_topology` gives it)."""
        graph = topology.graph
        self.output_topics = sorted(
            name for name, topic in graph.topics.items() if not topic.internal and name not in graph.sources()
        )

    @property
    def rows(self) -> DataFrame:
        """Every stage's step and write rows (:data:`~kjoin.spark.passes.stage_task.ROW_SCHEMA`)."""
        return reduce(DataFrame.unionByName, self._stage_rows)

    def keep(self) -> "TopologyRun":
        """Keep the rows of the stages no later stage reads (the last ones) once computed, as the others are: until
        then each read of a frame computes them again, so reading one frame once costs no more than the run (the
        bench's case), and reading several, or asking :meth:`why` (which calls this), computes them once. Returns the
        run."""
        for index in sorted(self._leaves):
            self._stage_rows[index] = kept(self._stage_rows[index], StorageLevel.MEMORY_AND_DISK)
        self._leaves.clear()
        return self

    def release(self) -> None:
        """Free the rows :func:`kjoin.spark.keep.kept` keeps for this run (:func:`kjoin.spark.keep.release`): the run
        is done, its frames, ``trace`` and ``why`` are not to be read again."""
        for frame in self._stage_rows:
            release(frame)

    @property
    def method(self) -> str:
        """``expressions``, ``vectorised`` or ``processors`` when every stage ran that way, else the stages' ways in
        order (``expressions+vectorised``); :attr:`methods` says why."""
        ways = [way for _, (way, _) in sorted(self.methods.items())]
        if not ways:
            return "processors"
        return ways[0] if len(set(ways)) == 1 else "+".join(ways)

    @property
    def steps(self) -> DataFrame:
        if self.assignment is None:
            instance = F.lit(None).cast("int")
        else:
            instance = F.create_map(*[F.lit(x) for pair in sorted(self.assignment.items()) for x in pair])[
                F.col("task")
            ]
        return self.rows.where(F.col("kind") == "step").select(
            *STEP_ORDER, "task", instance.cast("int").alias("instance"), "topic", "partition", "offset", "ts", "key",
            "value", "fate", "reason", "nodes", "dropped",
        )  # fmt: skip

    @property
    def topics(self) -> DataFrame:
        return _with_offsets(self.rows.where(F.col("kind") == "write"), self._bases).select(
            "topic", "partition", "offset", "key", "value", "ts", "task", *WRITE_ORDER
        )

    @property
    def outputs(self) -> DataFrame:
        return self.topics.where(F.col("topic").isin(self.output_topics)).select(
            "topic", "partition", "offset", "key", "value", "ts"
        )

    def diff(self, semantics: Any = None, set: Mapping[str, Any] | None = None) -> Any:  # named as kjoin diff --set
        """``kjoin diff`` of the whole app: every output record that changes when the same topics run through this
        topology under ``semantics`` (a Kafka version) with ``set`` (``{"per_hour.grace_ms": 0}``: a node's name and
        its field), each charged to the rule or setting that alone changes it (:mod:`kjoin.spark.debug.app_diff`)."""
        from .debug.app_diff import app_diff

        return app_diff(self, semantics, set)

    def reconcile(
        self,
        actual: Any,
        topic: str | None = None,
        semantics: Any = None,
        set: Mapping[str, Any] | None = None,
        arrival: Mapping[str, Any] | None = None,
    ) -> Any:
        """Match what the application really wrote to the output ``topic`` (``actual``: the topic read with
        ``from_kafka``/``from_files``, or a frame with ``key, value, ts``) with this run's records of it, and put
        each difference down to a lag of input partitions (``arrival``: ``{"customers": {"partitions": {1:
        1_800_000}}}``, :mod:`kjoin.topology.arrival`), to ``set``/``semantics`` (as :meth:`diff` charges them), or
        leave it unexplained (:mod:`kjoin.spark.debug.app_reconcile`): a
        :class:`~kjoin.spark.debug.reconcile.Reconciliation`."""
        from .debug.app_reconcile import app_reconcile

        return app_reconcile(self, actual, topic, semantics, set, arrival=arrival)

    # -- the drill-down ---------------------------------------------------------------------------
    def stage_of(self, task: str) -> Stage:
        sub = _task_numbers(task)[0]
        for stage in self.stages:
            if sub in stage.subtopologies:
                return stage
        raise SparkInputError(f"task {task}: the topology has no sub-topology {sub}")

    def collect(self, frame: str = "outputs") -> list[Any]:
        """The rows of :attr:`outputs` (or ``"topics"``, ``"steps"``, ``"rows"``), collected; a user function's
        failure on an executor comes back as kjoin's :class:`~kjoin.topology.runtime.ProcessingError` (naming the
        node, the function and the record), not as Spark's Python-worker traceback: see :func:`kjoin_error`."""
        if frame not in ("outputs", "topics", "steps", "rows"):
            raise SparkInputError(f"collect: expected outputs, topics, steps or rows, got {frame!r:.60}")
        with kjoin_errors():
            return getattr(self, frame).collect()

    def trace(self, task: str) -> TopologyTrace:
        """The reference trace of one task (``"1_0"``): the global tables' records first, then the task's records
        (its inputs and what earlier stages wrote to it) as it took them; a task of a cyclic stage (a foreign-key
        join's side) comes with the whole stage, whose tasks talk to each other."""
        stage = self.stage_of(task)
        group = "" if stage.cyclic else task
        cached = self._traces.get((stage.number, group))
        if cached is not None:
            return cached
        records = self._stage_records.get(stage.number)
        if records is None:
            raise SparkInputError(f"task {task}: its stage took no records")
        if not stage.cyclic:
            sub, partition = _task_numbers(task)
            records = records.where((F.col("_sub") == sub) & (F.col("partition") == partition))
        with kjoin_errors():
            rows = records.select(*RECORD_COLUMNS).collect()
        taken = decode_records(_pandas(rows), self._decoding, self._bases)
        trace = stage_trace(self.topology, taken, stage.subtopologies, self._global_records, self.assignment)
        self._traces[(stage.number, group)] = trace
        return trace

    def why(self, topic: str, partition: int, offset: int) -> list[str]:
        """How the record at ``topic[partition]@offset`` came to be, newest first: each step that wrote a record on
        the way (the task, its place in the task's trace, the nodes it passed and what each did), the table rows
        each join looked up, back through every repartition topic to the input record that set it off."""
        lines: list[str] = []
        written = self.keep().topics
        while True:
            found = (
                written.where(
                    (F.col("topic") == topic) & (F.col("partition") == partition) & (F.col("offset") == offset)
                )
                .select("task", "seq", "wseq")
                .first()
            )
            if found is None:
                lines.append(f"{topic}[{partition}]@{offset} is an input record (not written by the topology).")
                return lines
            trace = self.trace(found["task"])
            step = trace[len(self._global_records) + found["seq"]]
            record = step.wrote[found["wseq"]]  # the trace's offsets count only what its own tasks wrote
            while True:
                lines.append(
                    f"{topic}[{partition}]@{offset} {record.describe().split(' ', 1)[1]} was written by task "
                    f"{step.task} (step {step.index} of trace({found['task']!r})): {step.explain()}"
                )
                for visit in step.visits:
                    for partner in visit.partners:
                        row = trace[partner].record
                        lines.append(f"  {visit.node} looked up the row {row.describe()}, taken at step {partner}.")
                taken = step.record
                topic, partition, offset = taken.topic, taken.partition, taken.offset
                if taken.written_at is None:
                    break
                step = trace[taken.written_at]  # written within the same stage (a foreign-key join's messages)
                record = taken
            if topic not in topic_writers(self.topology.graph):
                lines.append(f"{taken.describe()} is an input record.")
                return lines

    # -- the whole app's verdicts (kjoin.spark.debug.topology_why) ------------------------------------
    def debug(self) -> Any:
        """The whole app's verdicts (:class:`~kjoin.spark.debug.topology_why.AppDebug`), computed once per run: its
        input topics collected and run by the reference engine's ``stages`` schedule, which the Spark run agrees with
        record for record."""
        if self._app_debug is None:
            from .debug.topology_why import AppDebug

            self._app_debug = AppDebug.of_records(self.topology, self.input_records())
        return self._app_debug

    def input_records(self, topics: Collection[str] | None = None) -> list[TopicRecord]:
        """Every input record of the run (of ``topics`` only, when given), collected to the driver and decoded as the
        reference engine reads them."""
        records: list[TopicRecord] = []
        with kjoin_errors():
            for name, frame in sorted(self.inputs.items()):
                if topics is not None and name not in topics:
                    continue
                rows = frame.select(*RECORD_COLUMNS).collect()
                records.extend(decode_records(_pandas(rows), self._decoding))
        return records

    def explain(self, topic: str, partition: int, offset: int) -> Any:
        """The verdict at every join, aggregate and drop on the way to (or from) the record at
        ``topic[partition]@offset``, with the records behind each, back to the input record
        (:class:`~kjoin.topology.verdicts.AppVerdict`; ``str()`` tells it)."""
        return self.debug().why(topic, partition, offset)

    def explained_outputs(self) -> Any:
        """One row per output record and per input record that got nothing in an output topic, with the cause and
        the node where it happened (pandas)."""
        return self.debug().explained_outputs()

    def summary(self) -> Any:
        """:meth:`explained_outputs` counted by topic, result, verdict and node (pandas)."""
        return self.debug().summary()

    def audit(self) -> Any:
        """Every input record of a co-partitioned topic that is not in its key's partition (pandas), read from the
        input topics alone: no whole-app run (:func:`~kjoin.topology.verdicts.audit_records`)."""
        if self._app_debug is not None:
            return self._app_debug.audit()
        from ..topology.copartition import copartition_groups
        from .debug.topology_why import audit_frame

        audited = {topic for _, topics in copartition_groups(self.topology.graph) for topic in topics}
        return audit_frame(self.topology, self.input_records(audited))

    def drops(self) -> Any:
        """Every step in which a node dropped the record, with the step's fate and each drop's node and reason
        (``per-hour: expired-window`` on a step whose fate is ``joined``: the joins before the count emitted), from
        the reference trace :meth:`debug` reads (pandas)."""
        return self.debug().drops()

    def write_parquet(self, path: str, why_index: bool = True) -> None:
        """Write the run's verdicts, summary, audit, drops and outputs under ``path`` (with ``why_index``, every input
        and output record's story), for :func:`kjoin.spark.open_run` and ``kjoin why``."""
        from .debug.topology_index import write_topology_run

        write_topology_run(self.debug(), path, why_index)


def _chain_plan(topology: Any, stage: Stage, method: str) -> tuple[Any, str]:
    """The stage's chain and why (:func:`~kjoin.spark.passes.stage_chain.stage_plan`), ``None`` for the
    processors; refused when ``method`` asks for a chain and the stage is not one."""
    if method == "processors":
        return None, "method='processors'"
    chain, why = stage_plan(topology, stage)
    if chain is None and method in ("vectorised", "expressions"):
        raise SparkInputError(
            f"method={method!r}: stage {stage.number} (sub-topologies {stage.subtopologies}) is not a chain: "
            f"{why}; run it with method='auto' (the processors run it)"
        )
    return chain, why


def _stage_records(
    read: list[str],
    readers: Mapping[str, int],
    inputs: Mapping[str, DataFrame],
    written: Mapping[str, Any],
    earlier: Any,
) -> DataFrame | None:
    """A stage's records (``None``: it takes none): the input topics it reads (``read``) and the records earlier
    stages (``earlier``: their rows and the topics they write) wrote to its repartition and through topics, each with
    the sub-topology that reads it (``_sub``)."""
    parts = [inputs[topic] for topic in read if topic in inputs]
    fed = [topic for topic in read if topic in written]
    feeding = [rows for rows, topics in earlier if topics & set(fed)]
    if feeding:
        writes = reduce(DataFrame.unionByName, feeding)
        parts.append(_as_records(writes.where((F.col("kind") == "write") & F.col("topic").isin(fed))))
    if not parts:
        return None
    reader = F.create_map(*[x for topic in read for x in (F.lit(topic), F.lit(readers[topic]))])
    return reduce(DataFrame.unionByName, parts).withColumn("_sub", reader[F.col("topic")])


def _chain_rows(records: DataFrame, function: Any, spark_partitions: int) -> DataFrame:
    """A chain stage's rows: its Kafka task p in Spark partition p (mod their count), Arrow in and out (pandas frames
    cost the chain pass half its CPU), and no sort by task (the pass orders each task's records itself)."""
    return by_partition(records, spark_partitions).mapInArrow(per_task(function), ROW_SCHEMA)


def _processor_rows(records: DataFrame, function: Any, stage: Stage, spark_partitions: int | None) -> DataFrame:
    """A stage's rows by the processors: grouped by Kafka task (a cyclic stage in one group), as pandas frames."""
    group = [F.lit(stage.number).alias("_stage")] if stage.cyclic else [F.col("_sub"), F.col("partition")]
    if spark_partitions:
        records = records.repartition(spark_partitions, *group)
    return records.groupBy(*group).applyInPandas(function, ROW_SCHEMA)


def _global_records(
    graph: Any, sources: Mapping[str, Any], inputs: Mapping[str, DataFrame], decoding: Decoding
) -> list[TopicRecord]:
    """The global tables' records, read on the driver in the order a starting application restores them."""
    rank = {name: number for number, name in enumerate(graph.topics)}
    rows = [row for name, node in sources.items() if node.op == "global-table" for row in inputs[name].collect()]
    rows.sort(key=lambda row: (rank[row["topic"]], row["partition"], row["offset"]))
    return decode_records(_pandas(rows), decoding)


def _written_by(stage: Stage, written: Mapping[str, set[int]]) -> set[str]:
    """The topics ``stage``'s sub-topologies write."""
    return {topic for topic, subs in written.items() if subs & set(stage.subtopologies)}


def _task_numbers(task: str) -> tuple[int, int]:
    try:
        sub, partition = (int(part) for part in task.split("_"))
    except (ValueError, AttributeError):
        raise SparkInputError(f"task: expected sub-topology_partition, like '1_0', got {task!r}") from None
    return sub, partition


def _shuffle_partitions(spark: Any) -> int:
    try:
        return max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))
    except (TypeError, ValueError):  # pragma: no cover - Spark's own default
        return 200


def _pandas(rows: list[Any]) -> Any:
    import pandas as pd

    return pd.DataFrame([row.asDict() for row in rows], columns=list(RECORD_COLUMNS))


def _check_topics(
    graph: Any, sources: Mapping[str, Any], written: Mapping[str, Any], topics: Mapping[str, Topic]
) -> None:
    reads = sorted(topic for topic in sources if topic not in written)
    for name in topics:
        if name in written and (name not in sources or graph.topics[name].internal):
            what = "an internal topic" if graph.topics[name].internal else "an output topic (to)"
            raise SparkInputError(
                f"topics: {name!r} is {what} the topology writes; its records come from the run, so pass only the "
                "topics it reads from outside: " + ", ".join(reads) + " (and a through topic's own records)"
            )
        if name not in sources:
            raise SparkInputError(f"topics: the topology does not read {name!r}; it reads {', '.join(reads)}")
        if not isinstance(topics[name], Topic):
            raise SparkInputError(
                f"topics[{name!r}]: expected a kjoin.spark.Topic (from_files, from_kafka, Topic(frame)), "
                f"got {type(topics[name]).__name__}"
            )
        declared = graph.topics[name].partitions
        given = topics[name].partitions
        if given is not None and given != declared:
            raise SparkInputError(
                f"topics[{name!r}]: the topic has {given} partition(s), the topology declares {declared}; "
                f"declare it with Topology(partitions=...) or topic(..., partitions={given})"
            )
    missing = [name for name in reads if name not in topics]
    if missing:
        raise SparkInputError(
            f"topics: no Topic for {', '.join(map(repr, missing))}; the topology reads {', '.join(reads)}"
        )


def _records(name: str, topic: Topic, info: Any) -> tuple[DataFrame, tuple[bool, str]]:
    """One input topic as records (:data:`RECORD_COLUMNS`), and how to decode its keys and values."""
    frame = topic.frame
    types = dict(frame.dtypes)
    for column in ("key", "value", "ts"):
        if column not in types:
            raise SparkInputError(
                f"topics[{name!r}] ({topic.source}): no column {column!r}; the columns are {', '.join(types)}"
            )
    key_type, value_type = types["key"], types["value"]
    if key_type not in ("string", "bigint", "int"):
        raise SparkInputError(
            f"topics[{name!r}] ({topic.source}): column 'key' has type {key_type}, expected string or bigint"
        )
    if value_type not in ("string", "bigint", "int", "double"):
        raise SparkInputError(
            f"topics[{name!r}] ({topic.source}): column 'value' has type {value_type}, expected string, bigint or "
            "double (JSON values as text, with json_values=True)"
        )
    long_keys = key_type != "string"
    values = "json" if topic.json_values else {"string": "string", "double": "double"}.get(value_type, "long")
    if not topic.has_partition:
        if info.partitioner is None:
            partition = default_partition_column(F.col("key").cast("bigint" if long_keys else "string"),
                                                 info.partitions, "bigint" if long_keys else "string")  # fmt: skip
        else:
            chooser = info.partition_of
            partition = F.udf(lambda key: chooser(key), "int")(F.col("key"))
        frame = frame.withColumn("partition", partition)
    if not topic.has_offset:
        in_order = Window.partitionBy("partition").orderBy(F.monotonically_increasing_id())
        frame = frame.withColumn("offset", (F.row_number().over(in_order) - 1).cast("bigint"))
    records = frame.select(
        F.lit(name).alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("bigint").alias("offset"),
        F.col("ts").cast("bigint").alias("ts"),
        F.col("key").cast("string").alias("key_text"),
        F.col("value").cast("string").alias("value_text"),
        F.lit(None).cast("binary").alias("payload"),
        *[F.lit(None).cast(kind).alias(column) for column, kind in WRITE_ORDER_TYPES.items()],
    )
    return records, (long_keys, values)


def _first_written_offsets(inputs: Mapping[str, DataFrame], written: Mapping[str, Any]) -> dict[tuple[str, int], int]:
    """Where the run's writes start in each partition of a ``through`` topic that also has records of its own (written
    before the application ran, as the reference engine's inputs are): after the last of them."""
    bases: dict[tuple[str, int], int] = {}
    for name in sorted(set(inputs) & set(written)):
        for row in inputs[name].groupBy("partition").agg(F.max("offset").alias("last")).collect():
            bases[(name, row["partition"])] = row["last"] + 1
    return bases


def _with_offsets(writes: DataFrame, bases: Mapping[tuple[str, int], int]) -> DataFrame:
    """Written rows with their offsets: each one's rank in its topic partition in the order written, after a
    ``through`` topic's own records (``bases``: :func:`_first_written_offsets`)."""
    order = Window.partitionBy("topic", "partition").orderBy(*WRITE_ORDER)
    offset = F.row_number().over(order) - 1
    if bases:
        at = F.create_map(*[F.lit(x) for (topic, partition), base in sorted(bases.items())
                            for x in (f"{topic}\x00{partition}", base)])  # fmt: skip
        offset = offset + F.coalesce(at[F.concat_ws("\x00", "topic", F.col("partition").cast("string"))], F.lit(0))
    return writes.withColumn("offset", offset.cast("bigint"))


def _as_records(writes: DataFrame) -> DataFrame:
    return writes.select(
        "topic",
        "partition",
        "offset",
        "ts",
        F.col("key").alias("key_text"),
        F.col("value").alias("value_text"),
        "payload",
        *WRITE_ORDER,
    )
