"""kjoin's topologies against the real Kafka Streams library: random topologies of two or three joins
and a re-key (or a foreign-key join), or with an aggregate (of a stream, in tumbling, hopping, session or sliding
windows, of a table, joined by a stream), a merge, a to_table or a global table, 1 to 4 partitions, run through
kjoin (``kjoin/topology/``) and, in one JVM per Kafka version, through TopologyTestDriver
(``kafka_oracle/.../TopologyOracle.java``).

``python -m kafka_oracle.topology_oracle [N]`` (``make topology-check``, part of ``make kafka-check``) judges N random
topologies per version and prints ``kafka-streams <version>: <N> topologies, <M> mismatches, <S> s``;
``tests/test_topology_oracle.py`` runs a small sample in CI.

What is compared, per input event: the records every output topic received (topic, key, value, timestamp; in
order, or with several partitions as a multiset, see below), and once per topology what ``Topology.describe()``
lists (sub-topologies, repartition topics, foreign-key topics) against kjoin's own split.

What TopologyTestDriver can judge: one task, one partition per topic; after each input event it takes every record
the event set off, internal topics included, by timestamp (kjoin's ``schedule: test-driver``,
:mod:`kjoin.topology.runtime`). A topology of several partitions is judged in one of two ways:

* **Task by task** (:func:`task_groups`), when all its state sits in the sub-topology that writes the output and
  each event reaches one task of it (a re-key, then the joins): one driver per task, fed that task's events alone,
  runs what the task runs, its own stream times and history retention included; the outputs are compared in order.
* **As a multiset**, for the other topologies whose joins keep no time (stream-table, table-table, foreign-key, with
  a foreign-key join's tasks talking across partitions): each key should receive the same records on any number of
  partitions, but the order in which one event's consequences arrive can differ from the driver's (its one queue
  per topic is FIFO; kjoin's several partitions compete by timestamp: a foreign-key chain's two results for one
  key, KAFKA-16394's doubled left-join result, can swap), so each event's output records are compared as a
  multiset.

Other topologies with a stream-stream join or a versioned table run on one partition here. The ``timestamp``
schedule (a running application) is not judged: TopologyTestDriver cannot run it.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import functools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, NoReturn

import kjoin
from kjoin.records import render_value
from kjoin.topology import Topology
from kjoin.topology.document import TopologyScenario
from kjoin.topology.handlers import ExceptionHandling
from kjoin.topology.runtime import ProcessingError
from kjoin.topology.suppress import SuppressionBufferFull
from kafka_oracle.oracle_check import (
    HANDLER_JUDGES,
    LATEST_JUDGE,
    VERSIONS,
    HarnessError,
    KafkaVersion,
    build,
    classpath,
)

JUDGES = tuple(
    sorted(
        [
            *(version for version in VERSIONS if version.numbers >= (2, 4, 1)),
            *(KafkaVersion(name, ("dead-letter queue (KIP-1034, 4.2)",)) for name in HANDLER_JUDGES),
        ],
        key=lambda version: version.numbers,
        reverse=True,
    )
) or (LATEST_JUDGE,)
"""The versions that judge topologies, newest first: every judge from 2.4.1, whose TopologyTestDriver takes internal
records by timestamp (KAFKA-9503; the harness builds a window with a grace through ``JoinWindows.of(..).grace(..)``
before 3.1), and every release with a dead-letter queue (``HANDLER_JUDGES``: the generators draw the exception
handlers there)."""


# -- running both sides --------------------------------------------------------------------------------------------
def document(scenario: TopologyScenario) -> dict[str, Any]:
    """What the harness reads: the topology's document, its events and its output topics."""
    data = scenario.topology.to_dict()
    graph = scenario.topology.graph
    outputs = sorted(
        {node.topic for node in graph.nodes.values() if node.op == "to" and node.topic not in graph.sources()}
        | ({data["dead_letter_queue"]} if data.get("dead_letter_queue") else set())
    )
    return {**data, "events": list(scenario.events), "outputs": outputs}


_RUNS: collections.OrderedDict[int, tuple[TopologyScenario, Any, ProcessingError | None]] = collections.OrderedDict()
"""The last runs of kjoin's reference engine, by scenario (its ``id``, the scenario kept alive beside it, so an id is
not reused while its entry stands): a judge asks for one scenario's run several times (which tasks each event reaches,
whether a function fails, the outputs), and a run is deterministic, so it is computed once."""

_RUNS_KEPT = 256


RUN_STOPS = (ProcessingError, SuppressionBufferFull)
"""The errors on which kjoin's run stops as Kafka's task fails: a user function that throws (the ``fail`` handler),
a full suppression buffer that shuts down (``StreamsException: ... buffer exceeded its max capacity``)."""


def kjoin_run(scenario: TopologyScenario) -> Any:
    """``scenario.run()``, computed once per scenario among the last :data:`_RUNS_KEPT` (the same trace object, which
    judges only read; a :class:`~kjoin.topology.runtime.ProcessingError` raised again)."""
    found = _RUNS.get(id(scenario))
    if found is None or found[0] is not scenario:
        try:
            found = (scenario, scenario.run(), None)
        except RUN_STOPS as error:
            found = (scenario, None, error)
        _RUNS[id(scenario)] = found
        while len(_RUNS) > _RUNS_KEPT:
            _RUNS.popitem(last=False)
    _RUNS.move_to_end(id(scenario))
    if found[2] is not None:
        raise found[2]
    return found[1]


def _going_on(scenario: TopologyScenario) -> TopologyScenario:
    """``scenario`` made to run past whatever stops kjoin's run (:data:`RUN_STOPS`), any of them in any order: a
    throwing function skipped (the ``continue`` handler), suppression buffers unbounded. Only where each event goes
    is read from its run."""
    data = scenario.topology.to_dict()
    for node in data["topology"]:
        if "suppress" in node:
            node["suppress"] = {k: v for k, v in node["suppress"].items() if k in ("until", "time_limit_ms")}
    going_on = TopologyScenario.from_dict({**data, "events": list(scenario.events)})
    going_on.topology.exception_handling = ExceptionHandling("continue")
    return going_on


def kjoin_outputs(scenario: TopologyScenario) -> list[list[list[Any]]]:
    """Per input event, ``[topic, key, value, ts]`` of every output record, grouped by topic (each topic's records in
    the order written), values and keys as the String serde carries them."""
    trace = kjoin_run(scenario)
    per_event = []
    for records in trace.outputs_by_event():
        rows = [
            [
                r.topic,
                None if r.key is None else render_value(r.key),
                None if r.value is None else render_value(r.value),
                r.ts,
                *([[list(header) for header in r.headers]] if r.headers else []),
            ]
            for r in records
        ]
        per_event.append(sorted(rows, key=lambda row: row[0]))  # stable: each topic keeps its order
    return per_event


def kjoin_describe(topology: Topology) -> dict[str, int]:
    """What kjoin's split says ``Topology.describe()`` should list."""
    topology.build()
    topics = topology.graph.topics.values()
    return {
        "subtopologies": len(topology.graph.subtopologies()),
        "repartition_topics": sum(t.internal and t.name.endswith("-repartition") for t in topics),
        "fk_topics": sum(t.internal and not t.name.endswith("-repartition") for t in topics),
    }


def task_groups(scenario: TopologyScenario) -> list[list[int]] | None:
    """For a topology of several partitions that TopologyTestDriver can judge task by task: the input events of
    each task of the sink's sub-topology (``None`` when it cannot be cut so).

    It can be cut when every other sub-topology keeps no state (a re-key's, whose records only pass through) and
    every event reaches at most one task of the sink's sub-topology: then that task's records are the events'
    own, taken in the same order, and one driver per task (one partition, those events alone) runs what the task
    runs, its stream times and history retention included."""
    topology = scenario.topology
    if topology.partitions == 1:
        return None
    sub_of = topology.graph.subtopology_of()
    sinks = {sub_of[n.name] for n in topology.graph.nodes.values() if n.op == "to"}
    if len(sinks) != 1:
        return None
    (sink,) = sinks
    stateless = ("stream", "filter", "map_values", "select_key", "map", "repartition-sink", "group_by", "merge",
                 "peek", "split", "branch")  # fmt: skip
    if any(n.op == "global-table" for n in topology.graph.nodes.values()):
        return None  # a global store is state outside the sub-topologies
    if any(sub_of[n.name] != sink and n.op not in stateless for n in topology.graph.nodes.values()):
        return None
    try:
        trace = kjoin_run(scenario)
    except RUN_STOPS:  # a task stopped: which tasks each event reaches, from a run that goes on past every stop
        trace = _going_on(scenario).run()
    reached: list[set[str]] = [set() for _ in scenario.events]
    for step in trace:
        if step.task.split("_")[0] == str(sink):
            reached[trace.event_of(step.index)].add(step.task)
    if any(len(tasks) > 1 for tasks in reached):
        return None
    groups: dict[str, list[int]] = {}
    for index, tasks in enumerate(reached):
        for task in tasks:
            groups.setdefault(task, []).append(index)
    cut = [groups[task] for task in sorted(groups)] or [[]]
    # an event that reaches no task of the sink's sub-topology (its function threw on the way, and it went to the
    # dead-letter queue) changes no state: any driver can take it
    unreached = [index for index, tasks in enumerate(reached) if not tasks]
    cut[0] = sorted(cut[0] + unreached)
    return cut


class TopologyHarness:
    """One JVM of the topology harness (``TopologyOracle.java``) for one Kafka version, kept up between batches: its
    start (about two seconds) and the warming of its code are paid once per version, not once per batch. Documents
    go in as JSON lines; the answers come back one line each, in the order sent."""

    def __init__(self, version: str, threads: int = 4) -> None:
        java = shutil.which("java")
        if java is None:
            raise HarnessError("java is not on PATH: install Java 17 (apt-get install openjdk-17-jdk-headless)")
        self.version, self.threads = version, threads
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        self._process = subprocess.Popen(
            [java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx2g", "-cp", classpath(version),
             "kjoin.oracle.TopologyOracle", "--threads", str(threads)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
        )  # fmt: skip

    def answer(self, lines: list[str]) -> list[dict[str, Any]]:
        """The harness's answer to each document line."""
        self.send(lines)
        return self.receive(len(lines))

    def send(self, lines: list[str]) -> None:
        """Send document lines; their answers are read by :meth:`receive`, after those of the lines sent before
        (the JVM reads while it answers, so sending cannot block on answers not yet read)."""
        assert self._process.stdin is not None
        try:
            self._process.stdin.write("".join(line + "\n" for line in lines))
            self._process.stdin.flush()
        except BrokenPipeError:
            self._failed()

    def receive(self, count: int) -> list[dict[str, Any]]:
        """The next ``count`` answers, in the order their lines were sent."""
        assert self._process.stdout is not None
        raw = []
        try:
            for _ in range(count):
                line = self._process.stdout.readline()
                if not line:
                    break
                raw.append(json.loads(line))
        except json.JSONDecodeError:
            raw = []
        if len(raw) != count:
            self._failed()
        return raw

    def _failed(self) -> NoReturn:
        """The JVM stopped or answered what is no JSON: end it, and raise with what it wrote to stderr."""
        self.close()
        self._stderr.seek(0)
        raise HarnessError(
            f"the Kafka {self.version} topology harness failed (exit {self._process.returncode}):\n"
            f"{self._stderr.read()[-3000:]}"
        )

    def close(self) -> None:
        """End the JVM (its stdin closed, it answers what it has and exits)."""
        if self._process.poll() is None:
            try:
                assert self._process.stdin is not None
                self._process.stdin.close()
                self._process.wait(timeout=60)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()
        _HARNESSES.pop((self.version, self.threads), None)


_HARNESSES: collections.OrderedDict[tuple[str, int], TopologyHarness] = collections.OrderedDict()
"""The JVMs kept up, the most recently used last; at most :data:`_HARNESSES_KEPT` (each holds a few hundred MB)."""

_HARNESSES_KEPT = 2


def harness(version: str, threads: int = 4) -> TopologyHarness:
    """The kept-up JVM for ``version`` (started on first use; the least recently used one ended beyond
    :data:`_HARNESSES_KEPT`)."""
    key = (version, threads)
    if key not in _HARNESSES or _HARNESSES[key]._process.poll() is not None:
        _HARNESSES[key] = TopologyHarness(version, threads)
    _HARNESSES.move_to_end(key)
    while len(_HARNESSES) > _HARNESSES_KEPT:
        next(iter(_HARNESSES.values())).close()
    return _HARNESSES[key]


def close_harnesses() -> None:
    """End every kept-up JVM (also at the interpreter's exit)."""
    for kept in list(_HARNESSES.values()):
        kept.close()


atexit.register(close_harnesses)


def run_batch(version: str, batch: list[TopologyScenario], threads: int = 4) -> list[dict[str, Any]]:
    """Kafka's answers (``outputs`` per event and ``describe``, or ``error``) for every topology of ``batch``, from
    the version's kept-up JVM (:func:`harness`); a topology that :func:`task_groups` cuts runs as one driver per
    task, stitched back (``per_task``)."""
    return receive_batch(send_batch(version, batch, threads))


@dataclasses.dataclass
class SentBatch:
    """A batch sent to a version's JVM whose answers are still to be read (:func:`receive_batch`): the JVM works on
    it while the caller does something else (draws the next batch, judges the one before)."""

    harness: TopologyHarness
    batch: list[TopologyScenario]
    plans: list[list[tuple[list[int], dict[str, Any]]]]
    lines: int


def send_batch(version: str, batch: list[TopologyScenario], threads: int = 4) -> SentBatch:
    """Send every topology of ``batch`` to the version's kept-up JVM (see :func:`run_batch`); batches are received
    in the order sent."""
    plans: list[list[tuple[list[int], dict[str, Any]]]] = []
    for scenario in batch:
        whole = document(scenario)
        groups = task_groups(scenario)
        if groups is None:
            plans.append([(list(range(len(scenario.events))), whole)])
            continue
        one = {key: value for key, value in whole.items() if key != "topics"}
        plans.append(
            [(group, {**one, "partitions": 1, "events": [whole["events"][i] for i in group]}) for group in groups]
        )
    docs = [data for plan in plans for _, data in plan]
    lines = [json.dumps({**data, "id": i}, separators=(",", ":")) for i, data in enumerate(docs)]
    kept = harness(version, threads)
    kept.send(lines)
    return SentBatch(kept, batch, plans, len(lines))


def receive_batch(sent: SentBatch) -> list[dict[str, Any]]:
    """The answers to a batch :func:`send_batch` sent (every batch sent before it received first)."""
    batch, plans = sent.batch, sent.plans
    raw = sent.harness.receive(sent.lines)
    answers: list[dict[str, Any]] = []
    position = 0
    for scenario, plan in zip(batch, plans):
        parts = raw[position : position + len(plan)]
        position += len(plan)
        errors = [(indexes, part) for (indexes, _), part in zip(plan, parts) if "error" in part]
        if errors and all("failed_at" in part for _, part in errors):  # a task failed on an event: the first one
            at = min(indexes[part["failed_at"]] for indexes, part in errors)
            before: list[list[Any]] = [[] for _ in range(at)]
            for (indexes, _), part in zip(plan, parts):
                for index, emitted in zip(indexes, part["outputs"]):
                    if index < at:
                        before[index] = emitted
            first = next(part for indexes, part in errors if indexes[part["failed_at"]] == at)
            answers.append({"error": first["error"], "failed_at": at, "outputs": before, "per_task": len(plan) > 1})
            continue
        if errors:
            answers.append({"error": errors[0][1]["error"]})
            continue
        if len(plan) == 1 and len(plan[0][0]) == len(scenario.events):
            answers.append(parts[0])
            continue
        outputs: list[list[Any]] = [[] for _ in scenario.events]
        for (indexes, _), part in zip(plan, parts):
            for index, emitted in zip(indexes, part["outputs"]):
                outputs[index] = emitted
        answer = {"outputs": outputs, "per_task": True}
        if parts:  # a driver of one partition lists the same sub-topologies and topics
            answer["describe"] = parts[0]["describe"]
        answers.append(answer)
    return answers


def disagreements(
    version: str, batch: list[TopologyScenario], answers: list[dict[str, Any]] | None = None
) -> list[str]:
    """Every topology of ``batch`` on which kjoin and Kafka ``version`` disagree (its document, then the first
    :func:`difference`), judged by :func:`run_batch` unless its ``answers`` are given."""
    answers = run_batch(version, batch) if answers is None else answers
    found = []
    for scenario, answer in zip(batch, answers):
        text = difference(scenario, answer, version)
        if text is not None:
            found.append(f"{json.dumps(document(scenario), ensure_ascii=False, default=str)}\n{text}")
    return found


def on_partitions(scenario: TopologyScenario, partitions: int) -> TopologyScenario:
    """``scenario`` with its topics on ``partitions`` partitions."""
    data = {key: value for key, value in document(scenario).items() if key != "outputs"}
    return TopologyScenario.from_dict({**data, "partitions": partitions})


def difference(scenario: TopologyScenario, answer: dict[str, Any], version: str) -> str | None:
    """None when kjoin agrees with Kafka on the split and on every event's outputs; else the first difference. A task
    that failed on an event (a user function that throws, under the ``fail`` handler) agrees when kjoin's run stops
    with its :class:`~kjoin.topology.runtime.ProcessingError` on that event, after the same outputs."""
    if "error" in answer and "failed_at" not in answer:
        return f"Kafka {version} raised {answer['error']}"
    ours = kjoin_describe(scenario.topology)
    if "describe" in answer and answer["describe"] != ours:
        return f"Topology.describe() of Kafka {version} lists {answer['describe']}, kjoin's split {ours}"
    stopped = kjoin_failure(scenario)
    if stopped != answer.get("failed_at"):
        kafka = (
            "ran every event" if "error" not in answer else f"failed at event {answer['failed_at']}: {answer['error']}"
        )
        return f"Kafka {version} {kafka}; kjoin " + (
            "ran every event" if stopped is None else f"stopped at event {stopped}"
        )
    if stopped is not None:
        scenario = dataclasses.replace(scenario, events=scenario.events[:stopped])
    mine = [[_comparable(scenario, row) for row in rows] for rows in kjoin_outputs(scenario)]
    theirs_all = [[_comparable(scenario, row) for row in rows] for rows in answer["outputs"]]
    if scenario.topology.partitions > 1 and not answer.get("per_task"):  # interleaving unjudged: multisets
        mine = [_by_key(rows) for rows in mine]
        theirs_all = [_by_key(rows) for rows in theirs_all]
    for index, (theirs, own) in enumerate(zip(theirs_all, mine)):
        if theirs != own:
            return f"event {index} ({scenario.events[index]}): Kafka {version} emitted {theirs}, kjoin {own}"
    if len(answer["outputs"]) != len(mine):
        return f"Kafka gave outputs for {len(answer['outputs'])} events, kjoin for {len(mine)}"
    return None


def _comparable(scenario: TopologyScenario, row: list[Any]) -> list[Any]:
    """An output row as the harness can judge it. A dead-letter record's headers name the topic, partition and
    offset of the record its task took: an internal topic by a name of Kafka's making (``KSTREAM-...-repartition``,
    ``KTABLE-FK-JOIN-...-topic``), which kjoin does not reproduce (it names them after its nodes), so both sides
    read ``<internal>``; and a partition and offset of one TopologyTestDriver, judged only on one partition. A
    record taken from a foreign-key topic is Kafka's binary subscription wrapper, which kjoin does not write."""
    if len(row) < 5:
        return row
    graph = scenario.topology.graph
    outside = {name for name, topic in graph.topics.items() if not topic.internal}
    headers = []
    value = row[2]
    for name, text in row[4]:
        if name == "__streams.errors.topic" and text not in outside:
            if not text.endswith("-repartition"):
                value = "<foreign-key message>"
            text = "<internal>"
        if name in ("__streams.errors.partition", "__streams.errors.offset") and scenario.topology.partitions > 1:
            text = "<one partition judged>"
        headers.append([name, text])
    return [row[0], row[1], value, row[3], headers]


def kjoin_failure(scenario: TopologyScenario) -> int | None:
    """The event on which kjoin's run stops with a :class:`~kjoin.topology.runtime.ProcessingError` (``None``: it
    runs them all): the shortest prefix of the events that fails, found by bisection (a run is deterministic and a
    prefix's run is the whole run cut short, so every prefix longer than a failing one fails too)."""
    try:
        kjoin_run(scenario)
        return None
    except RUN_STOPS:
        pass
    low, high = 0, len(scenario.events)  # the prefix of ``high`` events fails; of ``low`` events, it runs
    while high - low > 1:
        middle = (low + high) // 2
        try:
            dataclasses.replace(scenario, events=scenario.events[:middle]).run()
            low = middle
        except RUN_STOPS:
            high = middle
    return high - 1


def _by_key(rows: list[list[Any]]) -> list[list[Any]]:
    """The rows of one event as a multiset per topic and key (see the module docstring: with several partitions the
    order in which one event's consequences reach a topic depends on how the partitions interleave, which the
    driver's one partition cannot show)."""
    return sorted(rows, key=lambda row: json.dumps(row))


# -- random topologies ---------------------------------------------------------------------------------------------
CUSTOMERS = ["c1", "c2", "c3"]
REGIONS = ["r1", "r2", "r3"]
ORDERS = ["o1", "o2", "o3", "o4"]
SHAPES = ("rekey-table-table", "rekey-stream-stream-table", "rekey-join-table-join", "fk-then-pk", "fk-rejoin-left",
          "fk-chain", "stream-stream-rekey-table", "rekey-self-join-table", "pk-then-fk", "rekey-join-fk-result",
          "fk-to-stream-rekey-join", "rekey-aggregate", "windowed-aggregate", "table-aggregate", "rekey-count-join",
          "merge-rekey-join", "global-join", "to-table-join", "rekey-through-join", "table-view-join",
          "word-count")  # fmt: skip
AGGREGATIONS = ({"count": True}, {"reduce": "concat"}, {"aggregate": "concat"})
TIMELESS = ("rekey-table-table", "rekey-join-table-join", "fk-then-pk", "fk-rejoin-left", "fk-chain", "pk-then-fk",
            "rekey-join-fk-result", "fk-to-stream-rekey-join", "table-aggregate", "rekey-count-join",
            "merge-rekey-join", "global-join", "to-table-join", "rekey-through-join", "table-view-join",
            "word-count")  # fmt: skip
"""Shapes whose joins keep no time: judged at 1 to 4 partitions (see the module docstring)."""
PER_TASK = ("rekey-stream-stream-table", "rekey-self-join-table", "rekey-aggregate", "windowed-aggregate")
"""Shapes whose state sits in the sink's sub-topology alone: judged at 1 to 4 partitions task by task
(:func:`task_groups`)."""


def _variant(rng: random.Random, *variants: str) -> str:
    return rng.choice(variants)


def _window(rng: random.Random) -> dict[str, int]:
    return {"before_ms": rng.randint(0, 6), "after_ms": rng.randint(0, 6), "grace_ms": rng.randint(0, 4)}


def _maybe_stateless(
    rng: random.Random,
    nodes: list[dict[str, Any]],
    current: str,
    tag: str,
    fields_read: bool = False,
    failing: bool = True,
) -> str:
    """Now and then a filter or a value mapper after a re-key (it stays upstream of the repartition topic);
    ``fields_read``: a node below reads a field of the value, so no ``append`` (the harness parses a JSON object
    value, which an appended ``!`` would break)."""
    roll = rng.random()
    if roll < 0.25:
        predicate = rng.choice(
            [{"key_not_in": [rng.choice(CUSTOMERS)]}, {"key_in": CUSTOMERS[:2]}, {"value_not_null": True}]
        )
        nodes.append({"name": f"{tag}-filter", "filter": predicate, "input": current})
        return f"{tag}-filter"
    if roll < 0.4:
        mapper = rng.choice([{"field": "v"}] if fields_read else [{"append": "!"}, {"field": "v"}])
        if failing and rng.random() < 0.5:  # a mapper that throws for some values (the exception handler decides)
            mapper = {"fail_on": rng.choice(["3", "c2", "O7"])}
        nodes.append({"name": f"{tag}-mapped", "map_values": mapper, "input": current})
        return f"{tag}-mapped"
    if roll < 0.55 and _ERA["stream_steps"]:
        return _stream_step(rng, nodes, current, tag, fields_read)
    return current


_ERA: dict[str, Any] = {"now": kjoin.parse_semantics(None), "partitions": 1, "stream_steps": False}
"""The era and partitions :func:`random_topology` draws for (the stream steps that exist depend on them), and whether
it draws stream steps at all (``tests/describe_cases.py`` draws its fixed shapes without them)."""


def _stream_step(rng: random.Random, nodes: list[dict[str, Any]], current: str, tag: str, fields_read: bool) -> str:
    """One of the stream operations of Kafka 4.x's DSL: filter_not, peek, process_values/process (the harness's
    processors: count_per_key, dedupe, swap), split (or, before 4.0, the legacy branch), repartition (2.6+, KIP-221;
    named now and then with ``as``, Repartitioned.as); the stream goes on from one branch."""
    era = _ERA["now"]
    kinds = ["filter_not", "peek"]
    if era.version >= (2, 6, 0):
        kinds.append("repartition")
    if era.process_values and _ERA["partitions"] == 1:  # a processor's store is per task: TopologyTestDriver
        kinds += ["process_values", "process"]  # runs one task, so only one partition judges it
    if era.split:
        kinds.append("split")
    if not era.legacy_branch_removed:
        kinds.append("branch")
    kind = rng.choice(kinds)
    name = f"{tag}-{kind}"
    predicate = rng.choice(
        [{"key_not_in": [rng.choice(CUSTOMERS)]}, {"key_in": CUSTOMERS[:2]}, {"value_not_null": True}]
    )
    if kind == "filter_not":
        nodes.append({"name": name, "filter_not": predicate, "input": current})
    elif kind == "peek":
        nodes.append({"name": name, "peek": True, "input": current})
    elif kind == "repartition":
        nodes.append({"name": name, "repartition": True, "input": current})
        if rng.random() < 0.5:  # Repartitioned.as: the topic is <as>-repartition
            nodes[-1]["as"] = f"{tag}-topic"
    elif kind in ("process_values", "process"):
        choices = ["dedupe"] if fields_read else ["dedupe", "count_per_key"]
        if kind == "process" and not fields_read:
            choices.append("swap")
        nodes.append({"name": name, kind: {rng.choice(choices): True}, "input": current})
    elif kind == "split":
        branches = [{"name": "a", "filter": predicate}]
        if rng.random() < 0.5:
            branches.append({"name": "b", "filter": {"value_not_null": True}})
        if rng.random() < 0.7:
            branches.append({"name": "rest", "default": True})
        nodes.append({"name": name, "split": branches, "input": current})
        return name + rng.choice(branches)["name"]
    else:
        nodes.append({"name": name, "branch": [predicate, {"value_not_null": True}], "input": current})
        return f"{name}-predicate-{rng.randint(0, 1)}"
    return name


def _customers(rng: random.Random, versioned: bool) -> dict[str, Any]:
    """The customers table, versioned now and then where the version has versioned tables (3.6+ here)."""
    node: dict[str, Any] = {"name": "customers", "table": "customers"}
    if versioned and rng.random() < 0.3:
        node["history_retention_ms"] = rng.randint(0, 20)
    return node


def random_topology(
    rng: random.Random, era: str, versioned: bool = False, stream_steps: bool = False, failing: bool = True
) -> dict[str, Any]:
    """A random topology document (without events): one of :data:`SHAPES`, variants and windows drawn; with
    ``versioned``, tables are versioned now and then (on one partition: a versioned table's history retention
    follows its task's observed time)."""
    shapes = SHAPES
    if not kjoin.parse_semantics(era).rekeyed_stream_joined_twice:  # KAFKA-9298: refused before 2.5.1
        shapes = tuple(shape for shape in SHAPES if shape != "rekey-self-join-table")
    if kjoin.parse_semantics(era) < kjoin.parse_semantics("2.5"):  # KStream.toTable: 2.5 (KIP-523)
        shapes = tuple(shape for shape in shapes if shape != "to-table-join")
    shape = rng.choice(shapes)
    stateless = functools.partial(_maybe_stateless, failing=failing)
    partitions = rng.randint(1, 4) if shape in TIMELESS or shape in PER_TASK else 1
    _ERA.update(now=kjoin.parse_semantics(era), partitions=partitions, stream_steps=stream_steps)
    nodes: list[dict[str, Any]] = []
    join = {"inner": "join", "left": "left_join", "outer": "outer_join"}
    if shape == "rekey-table-table":
        customers = _customers(rng, versioned and partitions == 1)
        nodes += [{"name": "orders", "stream": "orders"}, customers,
                  {"name": "addresses", "table": "addresses"},
                  {"name": "rekeyed", "select_key": {"field": "c"}, "input": "orders"}]  # fmt: skip
        current = stateless(rng, nodes, "rekeyed", "r")
        nodes.append({"name": "j1", join[_variant(rng, "inner", "left")]: [current, "customers"]})
        if "history_retention_ms" in customers and "join" in nodes[-1] and rng.random() < 0.5:
            # KIP-923's grace buffer, on inner joins only: Kafka 3.7+ throws a NullPointerException for a null-key
            # record in a left join with a grace period (docs/fidelity.md), and a re-key can make null keys
            nodes[-1]["grace_ms"] = rng.randint(0, customers["history_retention_ms"])
        nodes.append({"name": "j2", join[_variant(rng, "inner", "left")]: ["j1", "addresses"]})
        if rng.random() < 0.5:
            nodes.append({"name": "j3", join[_variant(rng, "inner", "left")]: ["j2", "customers"]})
    elif shape == "rekey-stream-stream-table":
        nodes += [{"name": "orders", "stream": "orders"}, {"name": "payments", "stream": "payments"},
                  {"name": "customers", "table": "customers"},
                  {"name": "orders-by-c", "select_key": {"field": "c"}, "input": "orders"},
                  {"name": "payments-by-c", "select_key": {"field": "c"}, "input": "payments"},
                  {"name": "j1", join[_variant(rng, "inner", "left", "outer")]: ["orders-by-c", "payments-by-c"],
                   "window": _window(rng)},
                  {"name": "j2", join[_variant(rng, "inner", "left")]: ["j1", "customers"]}]  # fmt: skip
    elif shape == "rekey-join-table-join":
        nodes += [{"name": "orders", "stream": "orders"}, {"name": "customers", "table": "customers"},
                  {"name": "addresses", "table": "addresses"},
                  {"name": "profiles", join[_variant(rng, "inner", "left", "outer")]: ["customers", "addresses"]},
                  {"name": "rekeyed", "select_key": {"field": "c"}, "input": "orders"}]  # fmt: skip
        held = random.Random(repr(rng.getstate()))  # drawn apart: every other draw stays as it was
        suppress_here = kjoin.parse_semantics(era).suppress_until_window_closes and partitions == 1
        if suppress_here and stream_steps and held.random() < 0.5:  # not in the fixtures' draws (describe_cases)
            # the customers held for a time limit, read as a table by the join (the suppression's value getter)
            bound = held.choice([{}, {"max_records": 1}, {"max_records": 2}])
            suppress = {"until": "time_limit", "time_limit_ms": held.choice([0, 3, 10]), **bound}
            suppress.update(_max_bytes(random.Random(repr(held.getstate())), suppress))  # drawn apart
            nodes.insert(3, {"name": "held", "suppress": suppress, "input": "customers"})
            profiles = nodes[4]
            sides = profiles[next(key for key in join.values() if key in profiles)]
            sides[0] = "held"
            if held.random() < 0.5:
                nodes.insert(4, {"name": "held-view", "filter": {"value_not_null": True}, "input": "held"})
                sides[0] = "held-view"
            if held.random() < 0.3:  # the held customers regrouped by region: what the suppression forwards
                nodes[4:4] = [{"name": "held-by-r", "group_by": {"field": "r"}, "input": "held"},
                              {"name": "held-counts", "count": True, "input": "held-by-r"},
                              {"name": "held-out", "to": "held-counts", "input": "held-counts"}]  # fmt: skip
        current = stateless(rng, nodes, "rekeyed", "r")
        nodes.append({"name": "j2", join[_variant(rng, "inner", "left")]: [current, "profiles"]})
    elif shape == "fk-then-pk":
        nodes += [{"name": "customers", "table": "customers"}, {"name": "regions", "table": "regions"},
                  {"name": "addresses", "table": "addresses"},
                  {"name": "j1", join[_variant(rng, "inner", "left")]: ["customers", "regions"], "foreign_key": "r"},
                  {"name": "j2", join[_variant(rng, "inner", "left", "outer")]: ["j1", "addresses"]}]  # fmt: skip
        _held_foreign_key_sides(random.Random(repr(rng.getstate())), era, nodes, partitions, stream_steps)
    elif shape == "fk-rejoin-left":
        nodes += [{"name": "customers", "table": "customers"}, {"name": "regions", "table": "regions"},
                  {"name": "j1", join[_variant(rng, "inner", "left")]: ["customers", "regions"], "foreign_key": "r"},
                  {"name": "j2", join[_variant(rng, "inner", "left", "outer")]: ["j1", "customers"]}]  # fmt: skip
        _held_foreign_key_sides(random.Random(repr(rng.getstate())), era, nodes, partitions, stream_steps)
    elif shape == "fk-chain":
        nodes += [{"name": "customers", "table": "customers"}, {"name": "regions", "table": "regions"},
                  {"name": "zones", "table": "zones"},
                  {"name": "j1", join[_variant(rng, "inner", "left")]: ["customers", "regions"], "foreign_key": "r",
                   "joiner": "object"},
                  {"name": "j2", join[_variant(rng, "inner", "left")]: ["j1", "zones"],
                   "foreign_key": "right.z"}]  # fmt: skip
        _held_foreign_key_sides(random.Random(repr(rng.getstate())), era, nodes, partitions, stream_steps)
    elif shape == "rekey-self-join-table":
        nodes += [{"name": "orders", "stream": "orders"}, _customers(rng, versioned),
                  {"name": "rekeyed", "select_key": {"field": "c"}, "input": "orders"},
                  {"name": "j1", join[_variant(rng, "inner", "left", "outer")]: ["rekeyed", "rekeyed"],
                   "window": _window(rng)},
                  {"name": "j2", join[_variant(rng, "inner", "left")]: ["j1", "customers"]}]  # fmt: skip
        if "history_retention_ms" in nodes[1] and "join" in nodes[-1] and rng.random() < 0.5:
            nodes[-1]["grace_ms"] = rng.randint(0, nodes[1]["history_retention_ms"])  # inner only, as above
    elif shape == "pk-then-fk":
        nodes += [{"name": "customers", "table": "customers"}, {"name": "addresses", "table": "addresses"},
                  {"name": "regions", "table": "regions"},
                  {"name": "j1", join[_variant(rng, "inner", "left", "outer")]: ["customers", "addresses"],
                   "joiner": "object"},
                  {"name": "j2", join[_variant(rng, "inner", "left")]: ["j1", "regions"],
                   "foreign_key": "left.r"}]  # fmt: skip
    elif shape == "rekey-join-fk-result":  # a stream joined with a foreign-key join's result (its value getter)
        nodes += [{"name": "orders", "stream": "orders"}, {"name": "customers", "table": "customers"},
                  {"name": "regions", "table": "regions"},
                  {"name": "located", join[_variant(rng, "inner", "left")]: ["customers", "regions"],
                   "foreign_key": "r"},
                  {"name": "rekeyed", "select_key": {"field": "c"}, "input": "orders"}]  # fmt: skip
        current = stateless(rng, nodes, "rekeyed", "r")
        nodes.append({"name": "j2", join[_variant(rng, "inner", "left")]: [current, "located"]})
    elif shape == "fk-to-stream-rekey-join":  # a table's changes re-keyed: a foreign-key result by its region
        nodes += [{"name": "customers", "table": "customers"}, {"name": "regions", "table": "regions"},
                  {"name": "j1", join[_variant(rng, "inner", "left")]: ["customers", "regions"], "foreign_key": "r",
                   "joiner": "object"},
                  {"name": "changes", "to_stream": True, "input": "j1"},
                  {"name": "by-region", "select_key": {"field": "left.r"}, "input": "changes"},
                  {"name": "j2", join[_variant(rng, "inner", "left")]: ["by-region", "regions"]}]  # fmt: skip
    elif shape == "rekey-aggregate":  # orders counted (reduced, aggregated) per customer
        nodes += [{"name": "orders", "stream": "orders"}]
        current = stateless(rng, nodes, "orders", "o", fields_read=True)
        nodes.append({"name": "by-c", "group_by": {"field": "c"}, "input": current})
        if rng.random() < 0.3:  # a second aggregate of the grouping: a repartition topic of its own (unnamed)
            nodes += [{"name": "agg2", **rng.choice(AGGREGATIONS), "input": "by-c"},
                      {"name": "out2", "to": "out2", "input": "agg2"}]  # fmt: skip
        aggregation = rng.choice(AGGREGATIONS)
        # now and then (drawn apart, so that every other draw stays as it was) a cogroup (KIP-150, 2.5) of the
        # orders by customer and the payments on their own key
        if kjoin.parse_semantics(era).cogroup and random.Random(repr(rng.getstate())).random() < 0.5:
            nodes += [{"name": "payments", "stream": "payments"},
                      {"name": "paid", "group_by_key": True, "input": "payments"},
                      {"name": "agg", "cogroup": ["by-c", "paid"]}]  # fmt: skip
        else:
            nodes.append({"name": "agg", **aggregation, "input": "by-c"})
    elif shape == "windowed-aggregate":  # tumbling, hopping, session or sliding windows, by key or by customer
        size = rng.randint(1, 10)
        window = {"size_ms": size, "advance_ms": rng.randint(1, size), "grace_ms": rng.randint(0, 5)}
        roll = rng.random()
        if roll < 0.25:
            window = {"inactivity_gap_ms": rng.randint(1, 6), "grace_ms": rng.randint(0, 5)}
        elif roll < 0.5 and kjoin.parse_semantics(era).sliding_windows:
            window = {"time_difference_ms": rng.randint(1, 8), "grace_ms": rng.randint(0, 5)}
        grouped = {"group_by_key": True} if rng.random() < 0.5 else {"group_by": {"field": "c"}}
        windows = {"name": "windows", "windowed_by": window, "input": "grouped"}
        if kjoin.parse_semantics(era).emit_on_window_close and rng.random() < 0.2:
            windows["emit_strategy"] = "on_window_close"  # KIP-825
        nodes += [{"name": "orders", "stream": "orders"}, {"name": "grouped", **grouped, "input": "orders"},
                  windows, {"name": "agg", **rng.choice(AGGREGATIONS), "input": "windows"}]  # fmt: skip
        view = random.Random(repr(rng.getstate()))  # drawn apart: every other draw stays as it was
        _windowed_tail(rng, nodes, window, grouped, partitions)
        if _ERA["stream_steps"]:  # the fixtures' draws (tests/describe_cases.py) stay as they are
            _windowed_view(view, nodes, window, grouped)
    elif shape == "table-aggregate":  # customers per region: the subtractor and adder of a table group-by
        nodes += [{"name": "customers", "table": "customers"},
                  {"name": "by-r", "group_by": {"field": "r"}, "input": "customers"},
                  {"name": "agg", **rng.choice(AGGREGATIONS), "input": "by-r"}]  # fmt: skip
    elif shape == "rekey-count-join":  # payments joined with the count of each customer's orders
        nodes += [{"name": "orders", "stream": "orders"}, {"name": "payments", "stream": "payments"},
                  {"name": "by-c", "group_by": {"field": "c"}, "input": "orders"},
                  {"name": "counts", **rng.choice(AGGREGATIONS), "input": "by-c"},
                  {"name": "payments-by-c", "select_key": {"field": "c"}, "input": "payments"},
                  {"name": "j", join[_variant(rng, "inner", "left")]: ["payments-by-c", "counts"]}]  # fmt: skip
    elif shape == "merge-rekey-join":  # orders and payments as one stream, re-keyed, joined with customers
        nodes += [{"name": "orders", "stream": "orders"}, {"name": "payments", "stream": "payments"},
                  {"name": "customers", "table": "customers"},
                  {"name": "both", "merge": ["orders", "payments"]},
                  {"name": "by-c", "select_key": {"field": "c"}, "input": "both"}]  # fmt: skip
        current = stateless(rng, nodes, "by-c", "m")
        nodes.append({"name": "j", join[_variant(rng, "inner", "left")]: [current, "customers"]})
    elif shape == "global-join":  # a GlobalKTable looked up by the order's customer, then a table by order key
        nodes += [{"name": "orders", "stream": "orders"}, {"name": "customers", "global_table": "customers"},
                  {"name": "j", join[_variant(rng, "inner", "left")]: ["orders", "customers"],
                   "key_selector": {"field": "c"}}]  # fmt: skip
        if rng.random() < 0.5:
            nodes += [{"name": "payments", "stream": "payments"},
                      {"name": "both", "merge": ["j", "payments"]}]  # fmt: skip
    elif shape == "to-table-join":  # orders by customer read as a table, joined with the customers table
        nodes += [{"name": "orders", "stream": "orders"}, {"name": "customers", "table": "customers"},
                  {"name": "by-c", "select_key": {"field": "c"}, "input": "orders"},
                  {"name": "latest", "to_table": True, "input": "by-c"},
                  {"name": "j", join[_variant(rng, "inner", "left", "outer")]: ["latest", "customers"]}]  # fmt: skip
    elif shape == "rekey-through-join":  # re-keyed, written to a topic of the user's and read back, then joined
        nodes += [{"name": "orders", "stream": "orders"}, {"name": "customers", "table": "customers"},
                  {"name": "by-c", "select_key": {"field": "c"}, "input": "orders"},
                  {"name": "by-customer", "through": "orders-by-customer", "input": "by-c"},
                  {"name": "j", join[_variant(rng, "inner", "left")]: ["by-customer", "customers"]}]  # fmt: skip
    elif shape == "table-view-join":  # a table's filter or mapValues (stored or not), joined, grouped or written
        nodes += [{"name": "orders", "stream": "orders"}, {"name": "customers", "table": "customers"},
                  {"name": "addresses", "table": "addresses"}]  # fmt: skip
        current = "customers"
        for index in range(rng.randint(1, 2)):
            view: dict[str, Any] = {"name": f"view{index}", "input": current}
            if rng.random() < 0.5:
                view["filter"] = rng.choice([{"key_not_in": [rng.choice(CUSTOMERS)]}, {"key_in": CUSTOMERS[:2]}])
            else:
                view["map_values"] = {"field": "v"} if index == 0 else {"append": "!"}
            if rng.random() < 0.4:
                view["materialized"] = True
            nodes.append(view)
            current = view["name"]
        roll = rng.random()
        if roll < 0.3:  # a re-keyed stream looks the view up
            nodes += [{"name": "rekeyed", "select_key": {"field": "c"}, "input": "orders"},
                      {"name": "j", join[_variant(rng, "inner", "left")]: ["rekeyed", current]}]  # fmt: skip
        elif roll < 0.6:  # a table join (an outer side asks the view for old values)
            nodes.append({"name": "j", join[_variant(rng, "inner", "left", "outer")]: [current, "addresses"]})
        elif roll < 0.8 and not any("map_values" in node for node in nodes):  # grouped by region: old values again
            nodes += [{"name": "by-r", "group_by": {"field": "r"}, "input": current},
                      {"name": "agg", **rng.choice(AGGREGATIONS), "input": "by-r"}]  # fmt: skip
        else:  # its changes as they are: a filter's tombstones (KAFKA-10077)
            nodes.append({"name": "changes", "to_stream": True, "input": current})
    elif shape == "word-count":  # Kafka's WordCountDemo: lines cut into words, counted per word
        nodes += [{"name": "lines", "stream": "lines"}]
        words = {"split": " ", "lower": rng.random() < 0.5}
        if rng.random() < 0.5:
            nodes += [{"name": "words", "flat_map_values": words, "input": "lines"},
                      {"name": "by-word", "group_by": {"value": True}, "input": "words"}]  # fmt: skip
        else:
            nodes += [{"name": "words", "flat_map": words, "input": "lines"},
                      {"name": "by-word", "group_by_key": True, "input": "words"}]  # fmt: skip
        nodes.append({"name": "counts", **rng.choice(AGGREGATIONS), "input": "by-word"})
    else:  # stream-stream-rekey-table
        nodes += [{"name": "orders", "stream": "orders"}, {"name": "payments", "stream": "payments"},
                  {"name": "customers", "table": "customers"},
                  {"name": "j1", join[_variant(rng, "inner", "left", "outer")]: ["orders", "payments"],
                   "window": _window(rng)},
                  {"name": "by-customer", "select_key": {"map": {o: rng.choice(CUSTOMERS) for o in ORDERS}},
                   "input": "j1"},
                  {"name": "j2", join[_variant(rng, "inner", "left")]: ["by-customer", "customers"]}]  # fmt: skip
    if versioned and partitions == 1 and shape != "table-view-join":  # versioned tables in table-table and
        # foreign-key joins too (KIP-914); a versioned table's filter or mapValues kjoin does not model, and Kafka
        # suppresses non-versioned tables only (a held table stays as it is)
        held = {node["input"] for node in nodes if "suppress" in node}
        for node in nodes:
            if "table" in node and "history_retention_ms" not in node and rng.random() < 0.25:
                if node["name"] not in held:
                    node["history_retention_ms"] = rng.randint(0, 20)
    last = nodes[-1]["name"]
    if failing and rng.random() < 0.2 and "count" not in nodes[-1]:
        # a result mapper that throws for some results (a stream's or a table's mapValues)
        nodes.append({"name": "checked", "map_values": {"fail_on": rng.choice(["3", "C1", "null"])}, "input": last})
        last = "checked"
    nodes.append({"name": "out", "to": "out", "input": last})
    handling = _handling(rng, era) if failing else {}
    if handling.get("processing_exception_handler") == "continue":
        without_full_stops(nodes)
    return {"partitions": partitions, "semantics": era, "topology": nodes, **handling}


def _held_foreign_key_sides(
    held: random.Random, era: str, nodes: list[dict[str, Any]], partitions: int, stream_steps: bool
) -> None:
    """Now and then the customers (the subscribing side), the regions (the primary-key side) or both held for a
    time limit before foreign-key join ``j1``: its subscriptions follow the suppression's evictions, its response
    and subscription joins ask the suppression's value getter. Not in the fixtures' draws (describe_cases)."""
    if not (stream_steps and partitions == 1 and kjoin.parse_semantics(era).suppress_until_window_closes):
        return
    if held.random() < 0.2:
        return
    j1 = next(node for node in nodes if node["name"] == "j1")
    sides = j1["join" if "join" in j1 else "left_join"]
    for index in held.choice([(0,), (1,), (0, 1)]):
        bound = held.choice([{}, {}, {"max_records": 1}, {"max_records": 2}])
        suppress = {"until": "time_limit", "time_limit_ms": held.choice([0, 3, 10]), **bound}
        suppress.update(_max_bytes(held, suppress))
        name = f"held-{sides[index]}"
        nodes.insert(nodes.index(j1), {"name": name, "suppress": suppress, "input": sides[index]})
        sides[index] = name


def without_full_stops(nodes: list[dict[str, Any]]) -> None:
    """The suppressions of ``nodes`` whose full buffer would shut down made unbounded: kjoin refuses them under the
    continue handler (the task goes on with the buffer over its bound)."""
    for node in nodes:
        options = node.get("suppress")
        if options is not None and options.get("when_full") == "shut_down":
            node["suppress"] = {k: v for k, v in options.items() if k in ("until", "time_limit_ms")}


def _handling(rng: random.Random, era: str) -> dict[str, Any]:
    """Now and then a processing exception handler that continues, and a dead-letter queue, where ``era`` has
    them."""
    semantics = kjoin.parse_semantics(era)
    found: dict[str, Any] = {}
    if semantics.processing_exception_handler and rng.random() < 0.5:
        found["processing_exception_handler"] = "continue"
    if semantics.dead_letter_queue and rng.random() < 0.5:
        found["dead_letter_queue"] = "dead-letters"
    return found


SUPPRESSIONS = (
    {"until": "window_closes"},
    {"until": "window_closes", "max_records": 100, "when_full": "shut_down"},
    {"until": "time_limit", "time_limit_ms": 3},
    {"until": "time_limit", "time_limit_ms": 5, "max_records": 1},
    {"until": "time_limit", "time_limit_ms": 0, "max_records": 2, "when_full": "emit_early"},
)
"""The suppressions a windowed aggregate draws (never a buffer that fills with shut_down: that stops the task)."""


def _max_bytes(rng: random.Random, suppress: dict[str, Any]) -> dict[str, Any]:
    """Now and then a byte bound for ``suppress`` (``BufferConfig.maxBytes``): around the size of one to a few
    entries (about 40-80 bytes each here), so that it fills; with ``shut_down`` now and then (the task stops, on the
    same event in kjoin and in Kafka), else the suppression's own ``when_full``."""
    if rng.random() < 0.6:
        return {}
    drawn: dict[str, Any] = {"max_bytes": rng.choice([30, 45, 60, 90, 150, 400])}
    if suppress["until"] == "window_closes" or rng.random() < 0.25:
        drawn["when_full"] = "shut_down"
    return drawn


def _windowed_tail(
    rng: random.Random, nodes: list[dict[str, Any]], window: dict[str, Any], grouped: dict[str, Any], partitions: int
) -> None:
    """After a windowed aggregate ``agg``, now and then: a suppression, a join with payments aggregated in the same
    windows (two windowed tables join by their windowed key), or final results re-keyed to their own key and joined
    with the customers table (final results feeding a join)."""
    roll = rng.random()
    if roll < 0.3:
        suppress = dict(rng.choice(SUPPRESSIONS))
        if "group_by_key" in grouped:  # the records come from orders, a topic kjoin names as Kafka does
            suppress.update(_max_bytes(random.Random(repr(rng.getstate())), suppress))  # drawn apart
        nodes.append({"name": "final", "suppress": suppress, "input": "agg"})
        regroup = random.Random(repr(rng.getstate()))  # drawn apart: every other draw stays as it was
        if _ERA["stream_steps"] and regroup.random() < 0.8 and partitions == 1:  # not in the fixtures' draws
            # the final results regrouped by their window's key (Windowed.key()) and aggregated again (on one
            # partition: the regroup's repartition topic crosses tasks, so task_groups cannot cut the topology into
            # one driver per task, and one TopologyTestDriver task would close windows on every key's stream time)
            nodes += [{"name": "per-key", "group_by": {"window_key": True}, "input": "final"},
                      {"name": "totals", **regroup.choice(AGGREGATIONS), "input": "per-key"}]  # fmt: skip
    elif roll < 0.45:
        final = random.Random(repr(rng.getstate()))  # drawn apart: every other draw stays as it was
        nodes += [{"name": "payments", "stream": "payments"},
                  {"name": "p-grouped", **grouped, "input": "payments"},
                  {"name": "p-windows", "windowed_by": window, "input": "p-grouped"},
                  {"name": "p-agg", **rng.choice(AGGREGATIONS), "input": "p-windows"},
                  {"name": "both", rng.choice(["join", "left_join", "outer_join"]): ["agg", "p-agg"]}]  # fmt: skip
        if final.random() < 0.3 and "windowed_by" in nodes[-3] and "size_ms" in window:
            # the final results read as a table by the join (the suppression's value getter over the buffer and
            # the window store), now and then through a mapValues
            read = "final"
            nodes.insert(-1, {"name": "final", "suppress": {"until": "window_closes"}, "input": "agg"})
            if final.random() < 0.3:
                nodes.insert(-1, {"name": "final-view", "map_values": {"append": "!"}, "input": "final"})
                read = "final-view"
            both = nodes[-1]
            sides = both[next(key for key in ("join", "left_join", "outer_join") if key in both)]
            sides[:] = [read, "p-agg"] if final.random() < 0.5 else ["p-agg", read]
    elif roll < 0.55 and partitions == 1:
        nodes += [{"name": "customers", "table": "customers"},
                  {"name": "final", "suppress": {"until": "window_closes"}, "input": "agg"},
                  {"name": "finals", "to_stream": True, "input": "final"},
                  {"name": "by-key", "select_key": {"window_key": True}, "input": "finals"},
                  {"name": "enriched", rng.choice(["join", "left_join"]): ["by-key", "customers"]}]  # fmt: skip


def _windowed_view(
    rng: random.Random, nodes: list[dict[str, Any]], window: dict[str, Any], grouped: dict[str, Any]
) -> None:
    """Now and then a view of the windowed aggregate ``agg`` (a ``KTable<Windowed<K>, V>``) or of its suppression
    ``final``: a filter or filterNot whose keys are windowed keys' text (``[key@start/end]``, :func:`windowed_keys`),
    or a mapValues; materialized or in a named store now and then (a ``KeyValueStore`` of ``Windowed`` keys). The
    join of two windowed tables reads the view instead of ``agg`` (through its value getter, or its store); else the
    sink reads it."""
    if rng.random() < 0.5:
        return
    name, viewed = "agg-view", "agg" if nodes[-1]["name"] != "final" else "final"
    roll = rng.random()
    if roll < 0.7:
        texts = windowed_keys(rng, window, ORDERS if "group_by_key" in grouped else CUSTOMERS, 0, 30)
        predicate = {"value_not_null": True} if rng.random() < 0.2 else {rng.choice(["key_in", "key_not_in"]): texts}
        view: dict[str, Any] = {"name": name, "filter" if roll < 0.45 else "filter_not": predicate, "input": viewed}
    else:
        view = {"name": name, "map_values": {"append": "!"}, "input": viewed}
    roll = rng.random()
    if roll < 0.35:
        view["store"] = f"{name}-store"
    elif roll < 0.6:
        view["materialized"] = True
    joins = [(node, node[op]) for node in nodes for op in ("join", "left_join", "outer_join") if op in node]
    readers = [(node, sides) for node, sides in joins if "agg" in sides]
    if readers:
        node, sides = readers[0]
        sides[sides.index("agg")] = name
        nodes.insert(nodes.index(node), view)
    elif nodes[-1]["name"] == viewed:
        nodes.append(view)


def windowed_keys(rng: random.Random, window: dict[str, Any], keys: list[Any], low_ms: int, high_ms: int) -> list[str]:
    """One to three windowed keys' text, ``[key@start/end]`` (Kafka's ``Windowed.toString``), of windows of
    ``window`` starting between ``low_ms`` and ``high_ms``: a time window's start a multiple of its advance, so that a
    predicate over them keeps or drops some windows; a session's or sliding window's bounds guessed."""
    texts = set()
    for _ in range(rng.randint(1, 3)):
        start = rng.randint(low_ms, high_ms)
        if "size_ms" in window:
            start -= start % window.get("advance_ms", window["size_ms"])
            end = start + window["size_ms"]
        else:
            end = start + rng.randint(0, window.get("inactivity_gap_ms", window.get("time_difference_ms", 1)))
        texts.add(f"[{rng.choice(keys)}@{start}/{end}]")
    return sorted(texts)


LINES = ["Hello world", "hello  Kafka", " streams", "world kafka streams ", "", " ", "Kafka"]


def _value(rng: random.Random, topic: str) -> Any:
    if rng.random() < 0.12:
        return None
    if topic == "lines":
        return rng.choice(LINES)
    n = rng.randint(0, 9)
    if topic in ("orders", "payments"):
        return {"c": rng.choice(CUSTOMERS), "v": f"{topic[0].upper()}{n}"}
    if topic == "customers":
        return {"r": rng.choice(REGIONS + [None]) if rng.random() < 0.2 else rng.choice(REGIONS), "v": f"C{n}"}
    if topic == "regions":
        return {"z": rng.choice(["z1", "z2"]), "v": f"R{n}"}
    return f"{topic[0].upper()}{n}"


def _key(rng: random.Random, topic: str) -> Any:
    if rng.random() < 0.04:
        return None
    pool = {"orders": ORDERS, "payments": ORDERS, "regions": REGIONS, "zones": ["z1", "z2"], "lines": ["l1", "l2"]}
    pool = pool.get(topic, CUSTOMERS)
    return rng.choice(pool)


def random_scenario(
    rng: random.Random, era: str, versioned: bool = False, stream_steps: bool = False, failing: bool = True
) -> TopologyScenario:
    """A random topology and its events; ``stream_steps``: the 4.x stream steps (split, processors, filter_not,
    peek) are drawn too; ``failing=False``: no mapper that throws and no handler settings (the draws of the fixtures'
    shapes, ``tests/describe_cases.py``)."""
    data = random_topology(rng, era, versioned, stream_steps, failing)
    if stream_steps:  # the fixtures' draws (tests/describe_cases.py) stay as they are
        _name_stores(rng, data)
        _unmaterialize_tables(data)
    sources = [node[op] for node in data["topology"] for op in ("stream", "table", "global_table") if op in node]
    # a through topic is written by the topology; its input events would be the user's own records on it
    events = []
    for _ in range(rng.randint(6, 24)):
        topic = rng.choice(sources)
        events.append({"topic": topic, "key": _key(rng, topic), "value": _value(rng, topic), "ts": rng.randint(0, 30)})
    return TopologyScenario.from_dict({**data, "events": events})


_STATEFUL = ("table", "count", "reduce", "aggregate", "cogroup", "join", "left_join", "outer_join")


def _name_stores(rng: random.Random, data: dict[str, Any]) -> None:
    """Name some stores and groupings as applications do (``store``: Materialized.as, StreamJoined.withStoreName;
    ``as``: Grouped.as; a repartition's ``as`` is drawn with it, :func:`_stream_step`), which changes the names
    ``describe()`` lists and, for a foreign-key join's result, whether a filter below it gets old values
    (:meth:`kjoin.topology.graph.Graph.keeps_store`); a name where kjoin (as Kafka) takes none, a stream's join with
    a table, is left out by building the topology with it."""
    for node in data["topology"]:
        if rng.random() < 0.7 or "history_retention_ms" in node:
            continue
        if "group_by" in node:
            field, name = "as", node["name"]
        elif any(op in node for op in _STATEFUL):
            field, name = "store", f"{node['name']}-named"
        else:
            continue
        node[field] = name
        try:
            TopologyScenario.from_dict({**data, "events": []})
        except kjoin.ScenarioError:  # a stream-table join's store; a named grouping a cogroup shares
            del node[field]
            continue


def _unmaterialize_tables(data: dict[str, Any]) -> None:
    """Build some source tables as ``builder.table(topic, consumed)`` alone (``materialized: false``), besides the
    harness's default store and a named one (:func:`_name_stores`): without ``Materialized`` a table keeps a store
    only when a node reads it (``KTableSource.materialize``), which decides where KIP-557 drops idempotent updates
    and whether a filter below forwards tombstones for keys it never held (KAFKA-10077). A versioned or named table
    keeps its store. The forms come from a random stream of their own, seeded by the topology, so a seed's
    topologies and events stay what they were and only the tables' forms are added."""
    forms = random.Random(json.dumps(data["topology"], sort_keys=True))
    for node in data["topology"]:
        if "table" in node and "store" not in node and "history_retention_ms" not in node and forms.random() < 0.4:
            node["materialized"] = False


def check(version: str, count: int, seed: int) -> tuple[list[TopologyScenario], list[tuple[TopologyScenario, str]]]:
    """``count`` random topologies judged by ``version``: the topologies and the mismatches."""
    rng = random.Random(seed)
    era = kjoin.parse_semantics(version)
    versioned = tuple(int(part) for part in version.split(".")) >= (3, 6, 0)
    batch = [random_scenario(rng, str(era), versioned, stream_steps=True) for _ in range(count)]
    mismatches = []
    for scenario, answer in zip(batch, run_batch(version, batch)):
        found = difference(scenario, answer, version)
        if found is not None:
            mismatches.append((scenario, found))
    return batch, mismatches


def main(argv: list[str]) -> int:
    count = int(argv[0]) if argv else int(os.environ.get("N", "1000"))
    seed = int(os.environ.get("KJOIN_TOPOLOGY_SEED", str(int(time.time()))))
    chosen = os.environ.get("KJOIN_ORACLE_VERSIONS", "").strip()
    judges = [v.version for v in JUDGES if not chosen or chosen == "all" or v.version in chosen.split(",")]
    build()
    failed = 0
    print(f"topologies: seed {seed}", flush=True)
    for version in judges:
        started = time.monotonic()
        batch, mismatches = check(version, count, seed)
        elapsed = time.monotonic() - started
        print(
            f"kafka-streams {version}: {len(batch)} topologies, {len(mismatches)} mismatches, {elapsed:.0f} s",
            flush=True,
        )
        for scenario, found in mismatches[:5]:
            print(f"  {found}\n  {json.dumps(document(scenario))}", flush=True)
        failed += len(mismatches)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
