"""Topologies on Spark against the reference engine (issue 30): random topologies (the shapes of
``tests/topology_oracle.py``: two or three joins and a re-key, foreign-key chains, aggregates, windowed aggregates,
merges, to_table, through, global tables; 1 to 4 partitions) run through :func:`kjoin.spark.run_topology` and
through the reference engine's ``stages`` schedule; every record every topic received (repartition, foreign-key and
output topics: partition, offset, key, value, timestamp) and every step (task, record taken, fate, reason, nodes
passed, in processing order) must be the same.

``python -m tests.topology_spark_check [N] [SEED]`` (``make topology-spark-check``) runs N topologies in one Spark
session and prints ``spark topologies: <N> topologies, <M> mismatches, <S> s``; ``tests/test_spark_topology.py``
runs a small sample in CI.
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import Any

from kjoin.topology.document import TopologyScenario
from kjoin.topology.events import input_records
from kjoin.topology.runtime import run
from kjoin.topology.stages import topic_writers
from kjoin.topology.trace import TopologyTrace
from kjoin.spark.passes.topology_task import STEP_ORDER, shown
from tests.topology_oracle import random_scenario

ERAS = ("2.8", "3.1", "3.6", "latest")


def spark_topics(spark: Any, scenario: TopologyScenario, with_partitions: bool = True) -> dict[str, Any]:
    """The scenario's events as Spark topics (JSON values): with their partitions and offsets as the reference engine
    places them, or (``with_partitions=False``) without, for run_topology to partition by murmur2."""
    from kjoin.spark import Topic

    topology = scenario.topology
    topology.build()
    graph = topology.graph
    records = input_records(graph, scenario.events)
    schema = "key string, value string, ts long, partition int, offset long"
    topics = {}
    written = topic_writers(graph)
    for name in graph.sources():
        rows = [
            (r.key, None if r.value is None else json.dumps(r.value), r.ts, r.partition, r.offset)
            for r in records
            if r.topic == name
        ]
        if name in written and not rows:
            continue  # written by the run only (a through topic can have records of its own too)
        frame = spark.createDataFrame(rows, schema)
        if not with_partitions:
            frame = frame.drop("partition", "offset")
        topics[name] = Topic(frame, graph.topics[name].partitions, json_values=True, source=f"events of {name}")
    return topics


def reference(scenario: TopologyScenario) -> TopologyTrace:
    return run(scenario.topology, scenario.events, schedule="stages")


def written_of(trace: TopologyTrace) -> list[tuple[Any, ...]]:
    """Every record the topology wrote, by topic, partition and offset."""
    rows = []
    for topic, partitions in trace.topics.items():
        for partition, records in partitions.items():
            for r in records:
                if r.written_at is not None:
                    value = r.message.describe() if r.message is not None else shown(r.value)
                    rows.append((topic, partition, r.offset, shown(r.key), value, r.ts))
    return sorted(rows, key=lambda row: (row[0], row[1], row[2]))


def steps_of(trace: TopologyTrace) -> list[tuple[Any, ...]]:
    """The steps of the tasks (not the global thread's), in processing order."""
    return [
        (
            s.task,
            s.record.topic,
            s.record.partition,
            s.record.offset,
            s.fate.value,
            None if s.reason is None else s.reason.value,
            " → ".join(v.node for v in s.visits),
        )
        for s in trace.steps
        if s.task != "global"
    ]


def difference(spark: Any, scenario: TopologyScenario, with_partitions: bool = True) -> str | None:
    """``None`` when Spark and the reference engine agree on the scenario, else what differs first."""
    from kjoin.spark import run_topology

    trace = reference(scenario)
    result = run_topology(spark, scenario.topology, spark_topics(spark, scenario, with_partitions))
    expected_written = written_of(trace)
    got_written = sorted(
        (tuple(row) for row in result.topics.select("topic", "partition", "offset", "key", "value", "ts").collect()),
        key=lambda row: (row[0], row[1], row[2]),
    )
    if got_written != expected_written:
        return _first_difference("written records", expected_written, got_written)
    steps = result.steps.orderBy(*STEP_ORDER).select("task", "topic", "partition", "offset", "fate", "reason", "nodes")
    got_steps = [tuple(row) for row in steps.collect()]
    expected_steps = steps_of(trace)
    if got_steps != expected_steps:
        return _first_difference("steps", expected_steps, got_steps)
    return None


def _first_difference(what: str, expected: list[Any], got: list[Any]) -> str:
    for index, (a, b) in enumerate(zip(expected, got)):
        if a != b:
            return f"{what}[{index}]: reference {a}, Spark {b}"
    return f"{what}: reference has {len(expected)}, Spark {len(got)}"


def scenarios(count: int, seed: int) -> list[TopologyScenario]:
    """``count`` random topologies (the oracle's shapes) over the judged eras."""
    rng = random.Random(seed)
    eras = [ERAS[index % len(ERAS)] for index in range(count)]
    return [random_scenario(rng, era, versioned=era in ("3.6", "latest")) for era in eras]


def main(argv: list[str]) -> int:
    from kjoin.spark import local_session

    count = int(argv[1]) if len(argv) > 1 else 200
    seed = int(argv[2]) if len(argv) > 2 else 30
    spark = local_session()
    started = time.monotonic()
    mismatches = 0
    for index, scenario in enumerate(scenarios(count, seed)):
        found = difference(spark, scenario, with_partitions=index % 4 != 3)
        if found is not None:
            mismatches += 1
            print(f"topology {index}: {found}\n{json.dumps(scenario.to_dict(), default=str)[:2000]}", flush=True)
    elapsed = time.monotonic() - started
    print(f"spark topologies: {count} topologies, {mismatches} mismatches, {elapsed:.0f} s")
    spark.stop()
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
