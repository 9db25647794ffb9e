"""Topologies on Spark against the reference engine: random topologies (the shapes of
``kafka_oracle/topology_oracle.py``: two or three joins and a re-key, foreign-key chains, aggregates, windowed
aggregates, merges, to_table, through, global tables; 1 to 4 partitions) run through :func:`kjoin.spark.run_topology`
and through the reference engine's ``stages`` schedule; every record every topic received (repartition, foreign-key and
output topics: partition, offset, key, value, timestamp) and every step (task, record taken, fate, reason, nodes passed,
each node's drop, in processing order) must be the same.

``python -m tests.topology_spark_check [N] [SEED]`` (``make topology-spark-check``) runs N topologies in one Spark
session and prints ``spark topologies: <N> topologies, <M> mismatches, <S> s``, then N/10 topologies of chains
(:func:`chain_scenario`) with each ``run_topology`` method forced (:func:`chain_difference`), then N/10 declarative
ones (:func:`declarative_scenario`, :func:`expressions_difference`);
``tests/test_spark_topology.py`` and ``tests/test_spark_topology_vectorised.py`` run small samples in CI, the latter
mostly without Spark (:func:`local_difference`: the same per-task functions on pandas frames).
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
from kjoin.spark.passes.stage_task import STEP_ORDER, shown
from kafka_oracle.topology_oracle import random_scenario

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


def instances(scenario: TopologyScenario) -> int:
    """The application instances both engines run: one, unless a stream-stream join's tasks would share its time
    tracker there (before KAFKA-14862), which run_topology refuses; then each partition's tasks on their own."""
    from kjoin.topology.runtime import joins_sharing_time

    scenario.topology.build()
    if not joins_sharing_time(scenario.topology, None):
        return 1
    return max(topic.partitions for topic in scenario.topology.graph.topics.values())


def reference(scenario: TopologyScenario) -> TopologyTrace:
    return run(scenario.topology, scenario.events, schedule="stages", instances=instances(scenario))


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
            s.dropped or None,
        )
        for s in trace.steps
        if s.task != "global"
    ]


def difference(
    spark: Any, scenario: TopologyScenario, with_partitions: bool = True, method: str = "auto"
) -> str | None:
    """``None`` when Spark (``run_topology``'s ``method``) and the reference engine agree on the scenario, else
    what differs first."""
    from kjoin.spark import run_topology

    from kjoin.topology.runtime import ProcessingError
    from kjoin.topology.suppress import SuppressionBufferFull

    topics = spark_topics(spark, scenario, with_partitions)
    try:
        trace = reference(scenario)
    except (ProcessingError, SuppressionBufferFull) as stopped:  # a function that throws (fail handler), a full
        # suppression buffer that shuts down: Spark must stop the same way
        from kjoin.spark.topology_run import kjoin_error

        try:
            result = run_topology(spark, scenario.topology, topics, method=method, instances=instances(scenario))
            result.topics.count()
        except Exception as error:  # noqa: BLE001 - a Spark job's failure, read back as kjoin's error
            also = error if isinstance(error, (ProcessingError, SuppressionBufferFull)) else kjoin_error(error)
            if also is None:
                raise
            return None if str(also) == str(stopped) else f"both stop, differently:\n  {stopped}\n  {also}"
        return f"the reference engine stops ({stopped}); Spark runs on"
    result = run_topology(spark, scenario.topology, topics, method=method, instances=instances(scenario))
    return result_difference(trace, result)


def result_difference(trace: TopologyTrace, result: Any) -> str | None:
    """``None`` when a :class:`~kjoin.spark.TopologyRun` wrote and took what the reference trace did."""
    expected_written = written_of(trace)
    got_written = sorted(
        (tuple(row) for row in result.topics.select("topic", "partition", "offset", "key", "value", "ts").collect()),
        key=lambda row: (row[0], row[1], row[2]),
    )
    if got_written != expected_written:
        return _first_difference("written records", expected_written, got_written)
    steps = result.steps.orderBy(*STEP_ORDER).select(
        "task", "topic", "partition", "offset", "fate", "reason", "nodes", "dropped"
    )
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


CUSTOMERS = ("c0", "c1", "c2", "c3", "c4")


def _stateless(rng: random.Random, stream: Any, tag: str) -> Any:
    """Now and then a filter or a value mapper (a document's or a Python function), null values and all."""
    roll = rng.random()
    if roll < 0.2:
        keep = rng.choice(
            [{"value_not_null": True}, {"key_not_in": [rng.choice(CUSTOMERS)]}, lambda key, value: (key or "") < "c3"]
        )
        return stream.filter(keep, name=f"{tag}-filter")
    if roll < 0.35:
        mapper = rng.choice([{"append": "!"}, lambda value: value if isinstance(value, dict) else {"c": value}])
        return stream.map_values(mapper, name=f"{tag}-mapped")
    return stream


def _rekeyed(rng: random.Random, stream: Any, tag: str) -> Any:
    """A re-key: the value's ``c`` (null when it has none), a Python ``map``, or a ``select_key`` by lookup."""
    roll = rng.random()
    if roll < 0.5:
        return stream.select_key({"field": "c"}, name=f"{tag}-by-c")
    if roll < 0.75:

        def swap(key: Any, value: Any) -> Any:
            found = value.get("c") if isinstance(value, dict) else None
            return found, {"was": key, "value": value}

        return stream.map(swap, name=f"{tag}-mapped-key")
    return stream.select_key({"map": {"c0": "c1", "c1": "c0"}}, name=f"{tag}-swapped")


def chain_scenario(rng: random.Random, chains: int = 3) -> TopologyScenario:
    """A topology of ``chains`` independent chains (:mod:`kjoin.spark.passes.stage_chain`'s shapes: a stream,
    stateless nodes, re-keys to repartition topics, zero to three stream-table joins, inner or left, over one to
    three tables, to a topic), 1 to 4 partitions, an era drawn, and events full of timestamp ties, null keys, null
    values and deletes: every stage of it runs as a chain."""
    import kjoin

    era = rng.choice(("2.8", "3.1", "3.6", "latest"))
    b = kjoin.Topology(partitions=rng.randint(1, 4), semantics=era)
    topics: dict[str, str] = {}
    for chain in range(chains):
        tag = f"k{chain}"
        tables = [b.table(f"{tag}-t{number}") for number in range(rng.randint(1, 3))]
        stream = _stateless(rng, b.stream(f"{tag}-s"), f"{tag}-a")
        topics[f"{tag}-s"] = "stream"
        topics.update({f"{tag}-t{number}": "table" for number in range(len(tables))})
        if rng.random() < 0.7:
            stream = _stateless(rng, _rekeyed(rng, stream, tag), f"{tag}-b")
        usable, used = list(tables), []  # after a re-key, a table already joined would make the stage a loop
        for number in range(rng.randint(0, 3)):
            if not usable:
                break
            joiner = rng.choice([None, "object", lambda left, right: f"{left}|{right}"])
            join = stream.join if rng.random() < 0.5 else stream.left_join
            used.append(rng.choice(usable))
            stream = join(used[-1], joiner, name=f"{tag}-j{number}")
            stream = _stateless(rng, stream, f"{tag}-j{number}")
            if rng.random() < 0.2:
                stream = _rekeyed(rng, stream, f"{tag}-j{number}")
                usable = [table for table in usable if all(table is not u for u in used)]
        stream.to(f"{tag}-out")
    events = []
    for _ in range(rng.randint(20, 60)):
        topic = rng.choice(sorted(topics))
        key = None if rng.random() < 0.06 else rng.choice(CUSTOMERS)
        if rng.random() < 0.1:
            value = None
        elif topics[topic] == "stream":
            value = {"c": None if rng.random() < 0.1 else rng.choice(CUSTOMERS), "v": f"O{rng.randint(0, 9)}"}
        else:  # a JSON string, an object or a number: the joins show each as the trace does
            value = rng.choice([f"T{rng.randint(0, 9)}", f"T{rng.randint(0, 9)}", {"t": rng.randint(0, 3)}, 7])
        events.append({"topic": topic, "key": key, "value": value, "ts": rng.randint(0, 12)})
    return TopologyScenario(b, tuple(events), "stages")


def declarative_scenario(rng: random.Random, chains: int = 2) -> TopologyScenario:
    """A topology of ``chains`` chains whose re-key stages are declarative
    (:mod:`kjoin.spark.passes.stage_expressions`): a stream re-keyed by its value's ``c`` (``a.c`` now and then),
    then zero to two stream-table joins with the default joiner (one at least in the first chain), now and then
    through a topic and left-joined with another table, to a topic; 1 to 4 partitions. The orders' texts are mostly
    within :func:`kjoin.spark.json_text.exact` (objects, integers, ASCII, null and missing fields, null values) and
    now and then outside it (a fraction, a letter outside ASCII, a nested object as the key); the tables' values are
    JSON strings, objects and numbers."""
    import kjoin

    era = rng.choice(ERAS)
    b = kjoin.Topology(partitions=rng.randint(1, 4), semantics=era)
    topics: dict[str, str] = {}
    paths: dict[str, str] = {}
    for chain in range(chains):
        tag = f"k{chain}"
        tables = [b.table(f"{tag}-t{number}") for number in range(rng.randint(1, 2))]
        topics[f"{tag}-s"] = "stream"
        topics.update({f"{tag}-t{number}": "table" for number in range(len(tables))})
        paths[f"{tag}-s"] = rng.choice(["c", "c", "a.c"])
        stream = b.stream(f"{tag}-s").select_key({"field": paths[f"{tag}-s"]}, name=f"{tag}-by-c")
        # the first chain joins (a re-key straight to a topic writes no repartition topic: no declarative stage)
        joined = rng.sample(tables, rng.randint(0 if chain else 1, len(tables)))
        for number, table in enumerate(joined):
            join = stream.join if rng.random() < 0.5 else stream.left_join
            stream = join(table, None, name=f"{tag}-j{number}")
        if joined and rng.random() < 0.3:  # the joins' results through a topic and joined again: records they write
            topics[f"{tag}-u"] = "table"  # (pickled) for a stage that decodes them
            stream = stream.through(f"{tag}-thru").left_join(b.table(f"{tag}-u"), None, name=f"{tag}-again")
        stream.to(f"{tag}-out")
    events = []
    for _ in range(rng.randint(30, 70)):
        topic = rng.choice(sorted(topics))
        key = None if rng.random() < 0.06 else rng.choice(CUSTOMERS)
        if rng.random() < 0.1:
            value: Any = None
        elif topics[topic] == "stream":
            customer = rng.choice([*CUSTOMERS, None, 7, "é", {"n": 1}, 2.5])
            value = {"c": customer, "v": rng.choice([f"O{rng.randint(0, 9)}", rng.randint(-5, 5), 0.5, "ü", [1]])}
            if paths[topic] == "a.c":
                value = {"a": value, "z": True} if rng.random() < 0.8 else value
            elif rng.random() < 0.1:
                del value["c"]
        else:  # a JSON string, an object or a number: the joins show each as the trace does
            value = rng.choice([f"T{rng.randint(0, 9)}", f"T{rng.randint(0, 9)}", {"t": rng.randint(0, 3)}, 7])
        events.append({"topic": topic, "key": key, "value": value, "ts": rng.randint(0, 12)})
    return TopologyScenario(b, tuple(events), "stages")


def expressions_difference(spark: Any, scenario: TopologyScenario) -> str | None:
    """``None`` when the declarative stages as Spark expressions and the joins after them on their values as shown
    (``method="expressions"``), ``auto`` and the chain pass (``"vectorised"``) agree with the reference engine on
    every step and written record, and their rows are equal (payloads decoded); else what differs first."""
    from kjoin.spark import run_topology

    trace = reference(scenario)
    topics = spark_topics(spark, scenario, with_partitions=_given_partitions(scenario))
    runs = {method: run_topology(spark, scenario.topology, topics, method=method)
            for method in ("expressions", "auto", "vectorised")}  # fmt: skip
    ways = runs["expressions"].methods.values()
    if "expressions" not in [way for way, _ in ways]:
        return f"no stage ran as expressions: {runs['expressions'].methods}"
    joins = any(node.op == "stream-table" for node in scenario.topology.graph.nodes.values())
    if joins and not any(why.startswith("values as shown") for _, why in ways):
        return f"no join stage ran on its values as shown: {runs['expressions'].methods}"
    for method, result in runs.items():
        found = result_difference(trace, result)
        if found is not None:
            return f"{method}: {found}"
    chain_rows = rows_of(runs["vectorised"])
    for method in ("expressions", "auto"):  # auto: the re-key by the chain pass, the joins on values as shown
        found_rows = rows_of(runs[method])
        if found_rows != chain_rows:
            return _first_difference(f"rows (chain pass, {method})", chain_rows, found_rows)
    return None


def _given_partitions(scenario: TopologyScenario) -> bool:
    """Whether to give Spark the events' partitions and offsets (half the scenarios, by their events: no draw)."""
    return len(scenario.events) % 2 == 0


def rows_of(result: Any) -> list[tuple[Any, ...]]:
    """Every row of a run (steps and written records), payloads unpickled, sorted: two runs with equal rows have
    equal ``steps``, ``topics``, ``outputs``, ``trace`` and ``why``."""
    from kjoin.spark.passes.stage_task import load_payload

    rows = []
    for row in result.rows.collect():
        values = row.asDict()
        payload = values.pop("payload")
        rows.append((*values.values(), None if payload is None else load_payload(payload)))
    return sorted(rows, key=repr)


def chain_difference(spark: Any, scenario: TopologyScenario, with_partitions: bool = True) -> str | None:
    """``None`` when the chain pass (forced), the processors (forced) and the reference engine agree on every step and
    written record, and both passes' rows are equal; else what differs first."""
    from kjoin.spark import run_topology

    trace = reference(scenario)
    topics = spark_topics(spark, scenario, with_partitions)
    runs = {}
    for method in ("vectorised", "processors"):
        runs[method] = run_topology(spark, scenario.topology, topics, method=method)
        found = result_difference(trace, runs[method])
        if found is not None:
            return f"{method}: {found}"
    chain_rows, processor_rows = rows_of(runs["vectorised"]), rows_of(runs["processors"])
    if chain_rows != processor_rows:
        return _first_difference("rows (processors, chains)", processor_rows, chain_rows)
    return None


def local_rows(scenario: TopologyScenario, method: str) -> Any:
    """The rows ``run_topology`` would compute for the scenario, without Spark: each stage's per-task function (the
    chain pass, ``method="vectorised"``, or the processors') called on pandas frames grouped as Spark groups them
    (written records with their :data:`WRITE_ORDER`: each task numbers them), the written records' offsets ranked
    as ``run_topology``'s ``topics`` ranks them. For scenarios
    without global tables, whose stages are all chains when ``method`` is ``vectorised``."""
    import pandas as pd

    from kjoin.spark.passes.stage_task import WRITE_ORDER, stage_function
    from kjoin.spark.passes.stage_chain import chain_stage_function, stage_plan
    from kjoin.topology.stages import stages_of, topic_readers

    topology = scenario.topology
    topology.build()
    graph = topology.graph
    readers = topic_readers(graph)
    inputs = pd.DataFrame(
        [
            (r.topic, r.partition, r.offset, r.ts, r.key, None if r.value is None else json.dumps(r.value), None)
            for r in input_records(graph, scenario.events)
        ],
        columns=["topic", "partition", "offset", "ts", "key_text", "value_text", "payload"],
    ).assign(**{column: None for column in WRITE_ORDER})
    decoding = {name: (False, "json") for name in graph.topics}
    results: list[Any] = []
    for stage in stages_of(graph):
        read = [topic for topic, sub in readers.items() if sub in stage.subtopologies]
        parts = [inputs[inputs["topic"].isin(read)]]
        if results:  # written records with their place in the order written: the reading task numbers them
            earlier = _concat(results)
            writes = earlier[(earlier["kind"] == "write") & earlier["topic"].isin(read)]
            parts.append(writes.rename(columns={"key": "key_text", "value": "value_text"})[list(inputs.columns)])
        records = _concat(parts)
        if records.empty:
            continue
        records["_sub"] = records["topic"].map(readers)
        chain, why = stage_plan(topology, stage)
        if method == "vectorised":
            assert chain is not None, why
            function = chain_stage_function(topology, stage.number, chain, decoding)
        else:
            function = stage_function(topology, stage.number, stage.subtopologies, stage.cyclic, decoding, [])
        groups = [records] if stage.cyclic else [group for _, group in records.groupby(["_sub", "partition"])]
        if method == "vectorised":  # applyInArrow's: Arrow tables in and out
            function = _through_arrow(function)
        results.extend(function(group.reset_index(drop=True)) for group in groups)
    rows = _concat(results)
    writes = rows[rows["kind"] == "write"].sort_values(list(WRITE_ORDER), kind="stable")
    rows.loc[writes.index, "offset"] = writes.groupby(["topic", "partition"]).cumcount()
    return rows


def _through_arrow(function: Any) -> Any:
    """A chain stage's function (Arrow tables in and out, as ``applyInArrow`` calls it) on a pandas group."""
    import pyarrow as pa

    from kjoin.spark.passes.stage_chain import RECORD_SCHEMA

    schema = RECORD_SCHEMA.append(pa.field("_sub", pa.int32()))

    def on_frame(frame: Any) -> Any:
        return function(pa.Table.from_pandas(frame[schema.names], schema, preserve_index=False)).to_pandas()

    return on_frame


def _concat(frames: list[Any]) -> Any:
    """The rows of several groups in one frame (columns that are null in some groups, payloads or write numbers, stay
    objects: pandas warns that it will stop ignoring all-null columns when typing them, which changes nothing here)."""
    import warnings

    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        full = [frame for frame in frames if not frame.empty]
        return pd.concat(full, ignore_index=True) if full else frames[0]


def local_difference(scenario: TopologyScenario) -> str | None:
    """``None`` when the chain pass and the processors' give equal rows without Spark (:func:`local_rows`), and
    those rows are the reference engine's steps and written records; else what differs first."""
    import pickle

    trace = reference(scenario)
    found = {}
    for method in ("vectorised", "processors"):
        rows = local_rows(scenario, method)
        writes = rows[rows["kind"] == "write"]
        got_written = sorted(
            zip(writes["topic"], writes["partition"], writes["offset"].astype(int), writes["key"], writes["value"],
                writes["ts"]),
            key=lambda row: (row[0], row[1], row[2]),
        )  # fmt: skip
        expected_written = written_of(trace)
        if got_written != expected_written:
            return f"{method}: " + _first_difference("written records", expected_written, got_written)
        steps = rows[rows["kind"] == "step"].sort_values(list(STEP_ORDER), kind="stable")
        got_steps = list(
            zip(steps["task"], steps["topic"], steps["partition"], steps["offset"], steps["fate"],
                steps["reason"].where(steps["reason"].notna(), None), steps["nodes"],
                steps["dropped"].where(steps["dropped"].notna(), None))
        )  # fmt: skip
        if got_steps != steps_of(trace):
            return f"{method}: " + _first_difference("steps", steps_of(trace), got_steps)
        rows = rows.assign(payload=[None if p is None else pickle.loads(p) for p in rows["payload"]])
        found[method] = sorted(
            (tuple(None if isinstance(v, float) and v != v else v for v in row) for row in rows.itertuples(False)),
            key=repr,
        )
    if found["vectorised"] != found["processors"]:
        return _first_difference("rows (processors, chains)", found["processors"], found["vectorised"])
    return None


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
    rng = random.Random(seed)
    started, chain_mismatches, chain_count = time.monotonic(), 0, max(1, count // 10)
    for index in range(chain_count):
        scenario = chain_scenario(rng)
        found = chain_difference(spark, scenario, with_partitions=index % 4 != 3)
        if found is not None:
            chain_mismatches += 1
            print(f"chains {index}: {found}\n{scenario.topology.describe()}\n{scenario.events}", flush=True)
    elapsed = time.monotonic() - started
    print(
        f"spark topology chains (vectorised and processors forced): {chain_count} topologies of 3 chains, "
        f"{chain_mismatches} mismatches, {elapsed:.0f} s"
    )
    mismatches += chain_mismatches
    started, declarative_mismatches = time.monotonic(), 0
    for index in range(chain_count):
        scenario = declarative_scenario(rng)
        found = expressions_difference(spark, scenario)
        if found is not None:
            declarative_mismatches += 1
            print(f"declarative {index}: {found}\n{scenario.topology.describe()}\n{scenario.events}", flush=True)
    elapsed = time.monotonic() - started
    print(
        f"spark declarative topologies (expressions, auto and vectorised): {chain_count} topologies of 2 chains, "
        f"{declarative_mismatches} mismatches, {elapsed:.0f} s"
    )
    mismatches += declarative_mismatches
    spark.stop()
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
