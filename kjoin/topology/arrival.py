"""A whole app whose input partitions lag: :func:`lagged_run`, the reference engine's ``stages`` schedule with some
input topic partitions reaching their tasks late, as a single join's ``arrival:`` has one side lag
(:class:`kjoin.scenario.Arrival`, :func:`kjoin.ordering.arrival_order`).

How it works (the arrival model of a single join, per topic partition):

* a record of a lagging partition reaches its task ``lag_ms`` after its timestamp, and never before the record ahead
  of it in its partition (a partition is delivered in order); every other record at its timestamp; a record a task
  writes to a topic of the same stage (a foreign-key join's messages) at once;
* the clock is the records' own time: whatever has arrived is buffered in its task's
  :class:`~kjoin.ordering.PartitionGroup` (topic by topic as the topology declares them, then by partition: the
  ``stages`` schedule's order), each task takes its buffered records as Kafka Streams does with ``max.task.idle.ms =
  0``, and when no task has anything buffered time moves on to the next arrival;
* each stage runs after the one before, as in the ``stages`` schedule: a repartition topic's records are there when
  its stage starts, and arrive at their timestamps.

With no lag this is the ``stages`` schedule (every record buffered at the start); a lag larger than the run's span
has the lagging partition's records taken after every other record of their tasks: what a running application with
``max.task.idle.ms = 0`` does when that partition's records reach the broker after it has processed the rest.

``arrival`` names the topics the app's tasks read (not sides): ``{"customers": {"partitions": {1: 1_800_000}}}``
(partition 1 of ``customers`` 30 minutes late) or ``{"customers": {"lag_ms": 5000}}`` (every partition). A repartition
topic can lag too, and in a running application it does: its records reach the reading task only once the tasks
upstream have written them, while an input topic filled beforehand is fetched at once, and with ``max.task.idle.ms =
0`` a task does not wait for a partition that is empty on the broker (Kafka's ``PartitionGroup.readyToProcess``,
KIP-695): a table's rows are taken before the re-keyed records that look them up. A global table's topic cannot lag: a
starting instance restores it before any task runs.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

from ..ordering import PartitionGroup, next_task
from .graph import TopologyError
from .runtime import _enqueue, _Run, stage_add_order
from .trace import TopicRecord, TopologyStep, TopologyTrace

__all__ = ["lagged_run", "partition_lags", "lagging_topics"]


def partition_lags(topology: Any, arrival: Mapping[str, Any]) -> dict[tuple[str, int], int]:
    """``arrival`` as ``{(topic, partition): lag_ms}``, checked against the app's input topics (each error names the
    field and the fix)."""
    if not isinstance(arrival, Mapping):
        raise TopologyError(
            f"arrival: expected {{topic: {{'lag_ms': N}} or {{'partitions': {{P: N}}}}}}, got {arrival!r:.80}"
        )
    graph = topology.graph
    sources = graph.sources()
    lags: dict[tuple[str, int], int] = {}
    inputs = lagging_topics(topology)
    for topic, spec in arrival.items():
        if topic not in sources:
            raise TopologyError(f"arrival: {topic!r} is not a topic the app reads; it reads {', '.join(inputs)}")
        if sources[topic].op == "global-table":
            raise TopologyError(
                f"arrival.{topic}: a global table's topic cannot lag (every instance restores it before any task "
                f"runs); lag one of {', '.join(inputs)}"
            )
        if not isinstance(spec, Mapping) or not spec or set(spec) - {"lag_ms", "partitions"}:
            raise TopologyError(
                f"arrival.{topic}: expected {{'lag_ms': N}} and/or {{'partitions': {{P: N}}}} (milliseconds), got "
                f"{spec!r:.80}"
            )
        count = graph.topics[topic].partitions or 1
        every = spec.get("lag_ms")
        own = spec.get("partitions") or {}
        if not isinstance(own, Mapping):
            raise TopologyError(f"arrival.{topic}.partitions: expected {{partition: lag_ms}}, got {own!r:.80}")
        for partition in range(count):
            lag = own.get(partition, own.get(str(partition), every))
            if lag is not None:
                lags[(topic, partition)] = _lag(lag, f"arrival.{topic}")
        for partition in own:
            number = int(partition) if isinstance(partition, str) and partition.isdigit() else partition
            if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number < count:
                raise TopologyError(
                    f"arrival.{topic}.partitions: {partition!r} is not a partition of {topic} (it has {count})"
                )
    return lags


def lagging_topics(topology: Any) -> list[str]:
    """The topics whose partitions can lag: every topic the app's tasks read (input and repartition topics), not a
    global table's."""
    return sorted(t for t, node in topology.graph.sources().items() if node.op != "global-table")


def _lag(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TopologyError(f"{where}: a lag is milliseconds >= 0, got {value!r:.60}")
    return value


def lagged_run(topology: Any, records: Iterable[TopicRecord], arrival: Mapping[str, Any]) -> TopologyTrace:
    """The reference trace of input ``records`` (on their partitions, at their offsets, numbered by their ``event``:
    :func:`kjoin.spark.debug.topology_why.numbered_events`) with the partitions of ``arrival`` lagging (see the
    module)."""
    topology.build()
    runner = _LaggingRun(topology, partition_lags(topology, arrival))
    return runner.run(list(records))


class _LaggingRun(_Run):
    """The ``stages`` schedule, each stage's records taken as they arrive (see the module)."""

    def __init__(self, topology: Any, lags: Mapping[tuple[str, int], int]) -> None:
        super().__init__(topology, "stages")
        self.lags = dict(lags)

    def _stage_loop(self, records: list[TopicRecord], members: set[int]) -> Iterator[TopologyStep]:
        groups: dict[tuple[int, int], PartitionGroup] = {}

        def add(record: TopicRecord) -> None:
            task = (self._subtopology_reading(record.topic), record.partition)
            _enqueue(groups.setdefault(task, PartitionGroup()), record)

        queues: dict[tuple[str, int], list[tuple[int, TopicRecord]]] = {}
        for record in sorted(records, key=stage_add_order(self.graph)):
            queue = queues.setdefault((record.topic, record.partition), [])
            arrives = record.ts + self.lags.get((record.topic, record.partition), 0)
            queue.append((max(arrives, queue[-1][0]) if queue else arrives, record))
        delivered = dict.fromkeys(queues, 0)
        while True:
            task = next_task(groups)
            if task is None:
                waiting = [queues[w][delivered[w]][0] for w in queues if delivered[w] < len(queues[w])]
                if not waiting:
                    return
                now = min(waiting)  # nothing buffered: time moves on to the next arrival, and it is buffered
                for where, queue in queues.items():
                    first = last = delivered[where]
                    while last < len(queue) and queue[last][0] <= now:
                        last += 1
                    for _, record in queue[first:last]:
                        add(record)
                    delivered[where] = last
                continue
            written = self._take(groups[task].next_record())
            assert self.last_step is not None
            yield self.last_step
            self._route(written, members, add)
