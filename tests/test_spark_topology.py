"""A whole topology on Spark: :func:`kjoin.spark.run_topology` against the reference engine's ``stages``
schedule, record for record, on a sample of random topologies (``make topology-spark-check`` runs many), and its
drill-down (``trace``, ``why``) on an app built in Python (re-key with a custom partitioner, two joins)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

import kjoin
from kjoin.spark import SparkInputError, Topic, run_topology
from kjoin.topology.document import TopologyScenario
from kjoin.topology.runtime import run
from tests import topology_pinned
from kafka_oracle.topology_oracle import kjoin_outputs
from tests.test_topology_oracle import flat_map_pieces
from tests.topology_spark_check import difference, scenarios, spark_topics

pytestmark = pytest.mark.spark

SAMPLE = 10


@pytest.mark.parametrize("index", range(SAMPLE))
def test_random_topologies_agree_with_the_reference_engine(spark, index):
    scenario = scenarios(SAMPLE, 30)[index]
    assert difference(spark, scenario, with_partitions=index % 4 != 3) is None


def _app() -> kjoin.Topology:
    """Orders re-keyed by customer (a custom partitioner on the repartition topic, and on the tables' topics, which
    must be co-partitioned with it), joined with customers, then left-joined with addresses; two partitions, Python
    functions throughout."""
    b = kjoin.Topology(partitions=2)

    def by_name(key, partitions):  # the producers of customers and addresses place their records the same way
        return 0 if key < "c2" else 1

    orders = b.stream("orders")
    customers = b.table("customers", partitioner=by_name)
    addresses = b.table("addresses", partitioner=by_name)
    rekeyed = orders.select_key(lambda key, value: value["c"], name="by-customer", partitioner=by_name)
    enriched = rekeyed.join(customers, lambda order, customer: f"{order['v']}+{customer}", name="with-customer")
    enriched.left_join(addresses, lambda order, address: f"{order}@{address}", name="with-address").to("out")
    return b


EVENTS = [
    {"topic": "customers", "key": "c1", "value": "Ann", "ts": 1},
    {"topic": "customers", "key": "c2", "value": "Bob", "ts": 2},
    {"topic": "addresses", "key": "c1", "value": "Oslo", "ts": 3},
    {"topic": "orders", "key": "o1", "value": {"c": "c1", "v": "A"}, "ts": 5},
    {"topic": "orders", "key": "o2", "value": {"c": "c2", "v": "B"}, "ts": 6},
    {"topic": "orders", "key": "o3", "value": {"c": "c3", "v": "C"}, "ts": 7},
    {"topic": "customers", "key": "c1", "value": "Anna", "ts": 8},
    {"topic": "orders", "key": "o4", "value": {"c": "c1", "v": "D"}, "ts": 9},
]


def _topics(spark, topology):
    from kjoin.topology.document import TopologyScenario

    scenario = TopologyScenario(topology, tuple(EVENTS), "stages")
    return spark_topics(spark, scenario, with_partitions=False)


@pytest.fixture(scope="module")
def app_run(spark):
    """One run of the app for the tests below (a Spark run costs seconds; they only read it)."""
    topology = _app()
    return run_topology(spark, topology, _topics(spark, topology))


def test_an_app_in_python_gives_the_reference_outputs_and_partitions(app_run):
    result = app_run
    expected = run(_app(), EVENTS, schedule="stages")
    got = [tuple(row) for row in result.outputs.orderBy("partition", "offset").collect()]
    want = sorted(
        ((r.topic, r.partition, r.offset, r.key, r.value, r.ts) for r in expected.outputs()),
        key=lambda row: (row[1], row[2]),
    )
    assert got == want
    assert sorted(row[4] for row in got) == ["A+Ann@Oslo", "B+Bob@None", "D+Anna@Oslo"]
    repartitioned = result.topics.where("topic LIKE '%repartition'").select("key", "partition").collect()
    assert {(row["key"], row["partition"]) for row in repartitioned} == {("c1", 0), ("c2", 1), ("c3", 1)}


def test_why_follows_an_output_back_through_the_repartition_topic_and_both_joins(app_run):
    result = app_run
    output = result.outputs.where("value = 'D+Anna@Oslo'").first()
    lines = result.why(output["topic"], output["partition"], output["offset"])
    text = "\n".join(lines)
    assert lines[0].startswith(
        f"out[{output['partition']}]@{output['offset']} c1:D+Anna@Oslo@9 was written by task 1_0"
    )
    assert "with-customer looked up the row customers[" in text and "c1:Anna@8" in text
    assert "with-address looked up the row addresses[" in text and "c1:Oslo@3" in text
    assert "was written by task 0_" in text  # the repartition record, written by the re-keying task
    assert lines[-1].endswith("is an input record.") and "o4:" in lines[-1]


def test_a_task_trace_is_the_reference_engines_for_that_task(app_run):
    result = app_run
    trace = result.trace("1_0")
    rows = result.steps.where("task = '1_0'").orderBy("seq").select("offset", "topic", "fate", "nodes").collect()
    assert [(s.record.topic, s.record.offset, s.fate.value) for s in trace.steps if s.task == "1_0"] == [
        (row["topic"], row["offset"], row["fate"]) for row in rows
    ]
    store = trace.store(len(trace) - 1, "1_0", "customers: table")
    assert {row["key"]: row["value"] for row in store} == {"c1": "Anna"}


def test_topics_the_topology_does_not_read_or_writes_itself_are_refused(spark):
    topology = _app()
    topics = _topics(spark, topology)
    with pytest.raises(SparkInputError, match="no Topic for 'addresses'"):
        run_topology(spark, topology, {name: t for name, t in topics.items() if name != "addresses"})
    with pytest.raises(SparkInputError, match="does not read 'payments'"):
        run_topology(spark, topology, {**topics, "payments": topics["orders"]})
    frame = spark.createDataFrame([("k", json.dumps("v"), 1)], "key string, value string, ts long")
    with pytest.raises(SparkInputError, match="3 partition"):
        run_topology(spark, topology, {**topics, "orders": Topic(frame, 3, json_values=True)})


def test_instances_name_each_steps_instance_and_change_no_output(spark, app_run):
    """Two application instances (task ``s_p`` on instance ``p % 2``), or an assignment of tasks: every step row says
    the instance the reference engine's step says, the task traces too, and the outputs are the one instance's."""
    topology = _app()
    spread = run_topology(spark, topology, _topics(spark, topology), instances=2)
    expected = run(_app(), EVENTS, schedule="stages", instances=2)
    want = {(s.task, s.record.topic, s.record.partition, s.record.offset): s.instance for s in expected.steps}
    rows = spread.steps.select("task", "topic", "partition", "offset", "instance").collect()
    got = {(r["task"], r["topic"], r["partition"], r["offset"]): r["instance"] for r in rows}
    assert got == {at: instance for at, instance in want.items() if at in got} and len(got) == len(rows)
    assert {r["instance"] for r in rows} == {0, 1}
    assert {s.instance for s in spread.trace("1_1").steps if s.task == "1_1"} == {1}
    assert sorted(map(tuple, spread.outputs.collect())) == sorted(map(tuple, app_run.outputs.collect()))
    assert {r["instance"] for r in app_run.steps.select("instance").collect()} == {None}
    assigned = run_topology(
        spark, topology, _topics(spark, topology), assignment={"0_0": 1, "0_1": 1, "1_0": 0, "1_1": 1}
    )
    by_task = {r["task"]: r["instance"] for r in assigned.steps.select("task", "instance").collect()}
    assert by_task == {"0_0": 1, "0_1": 1, "1_0": 0, "1_1": 1}
    with pytest.raises(SparkInputError, match="instances: a whole number from 1"):
        run_topology(spark, topology, _topics(spark, topology), instances=0)
    with pytest.raises(SparkInputError, match="'9_0' is not a task of this topology"):
        run_topology(spark, topology, _topics(spark, topology), assignment={"9_0": 0})


def test_a_through_topic_with_records_of_its_own(spark):
    """A ``through`` topic is a user topic: other producers may have written to it before the application ran. Those
    records are input (passed as a Topic like any other) and the run's writes come after them in each partition; the
    reader takes both, as in the reference engine's stages schedule."""
    from kjoin.topology.document import TopologyScenario

    from tests.topology_spark_check import difference, reference

    events = [
        {"topic": "customers", "key": "c1", "value": {"name": "Ann"}, "ts": 1},
        {"topic": "customers", "key": "c2", "value": {"name": "Bob"}, "ts": 2},
        {"topic": "orders-by-customer", "key": "c2", "value": {"c": "c2", "v": "early"}, "ts": 3},
        {"topic": "orders", "key": "o1", "value": {"c": "c1", "v": "A"}, "ts": 4},
        {"topic": "orders-by-customer", "key": "c1", "value": {"c": "c1", "v": "direct"}, "ts": 5},
        {"topic": "orders", "key": "o2", "value": {"c": "c2", "v": "B"}, "ts": 6},
    ]
    scenario = TopologyScenario.from_dict(
        {
            "partitions": 2,
            "topology": [
                {"name": "orders", "stream": "orders"},
                {"name": "customers", "table": "customers"},
                {"name": "by-c", "select_key": {"field": "c"}, "input": "orders"},
                {"name": "by-customer", "through": "orders-by-customer", "input": "by-c"},
                {"name": "j", "left_join": ["by-customer", "customers"]},
                {"name": "out", "to": "out", "input": "j"},
            ],
            "events": events,
            "schedule": "stages",
        }
    )
    trace = reference(scenario)
    own = [r for p in trace.topics["orders-by-customer"].values() for r in p if r.written_at is None]
    assert len(own) == 2 and len(trace.outputs()) == 4  # two of its own, two written, all joined
    assert difference(spark, scenario) is None
    assert difference(spark, scenario, with_partitions=False) is None
    from tests.topology_spark_check import spark_topics

    topics = spark_topics(spark, scenario)
    with pytest.raises(SparkInputError, match="'out' is an output topic \\(to\\) the topology writes"):
        run_topology(spark, scenario.topology, {**topics, "out": topics["orders"]})


def test_a_stage_a_later_one_reads_is_kept_and_the_last_only_by_keep(spark):
    """The re-key stage's rows (the join stage reads them) are kept once computed, serialized; the join stage's
    (nothing reads them) only when the run is kept (``why`` keeps it), and the same rows either way; ``release``
    frees them all."""
    from pyspark import StorageLevel

    from kjoin.spark.keep import kept_level

    topology = _app()
    result = run_topology(spark, topology, _topics(spark, topology))
    rekey, join = result._stage_rows
    assert kept_level(rekey) == StorageLevel.MEMORY_AND_DISK and kept_level(join) == StorageLevel.NONE
    before = sorted(tuple(row) for row in result.outputs.collect())
    output = result.outputs.first()
    result.why(output["topic"], output["partition"], output["offset"])
    assert all(kept_level(frame) == StorageLevel.MEMORY_AND_DISK for frame in result._stage_rows)
    assert sorted(tuple(row) for row in result.outputs.collect()) == before
    frames = list(result._stage_rows)
    result.release()
    assert all(not spark.sparkContext._jsc.sc().getPersistentRDDs().contains(_rdd_id(frame)) for frame in frames)


def _rdd_id(frame):
    return frame._jdf.logicalPlan().rdd().id()


SPARK_PINNED = (
    "chained-joins-keep-their-joiners",
    "filter-of-a-foreign-key-result",
    "global-join-after-a-re-key-then-a-table-join",
    "to-table-of-a-re-keyed-stream-joined-with-it",
    "re-key-to-numbers-looks-up-by-text",
    "repartition-then-count",
    "object-joiner-parses-an-objects-text",
    "null-key-through-a-repartition-into-a-global-left-join",
    "self-join-read-by-a-foreign-key-join",
)
"""One pinned topology per rule for CI (``KJOIN_SPARK_PINNED=all``: every one, on one partition and on three)."""


@pytest.mark.parametrize(
    "name", list(topology_pinned.CASES) if os.environ.get("KJOIN_SPARK_PINNED") == "all" else SPARK_PINNED
)
def test_the_topologies_kafka_pins_run_on_spark_as_in_the_reference_engine(spark, name):
    """The minimal topologies of tests/topology_pinned.py (a join of a join with its own joiner, a filter without a
    stored parent, a global join after a re-key, a toTable's own repartition topic, keys by their String bytes,
    repartition then count): the reference engine gives Kafka's outputs, and Spark the reference engine's records
    and steps on three partitions (placed by Spark: murmur2 of the keys' text), and with ``KJOIN_SPARK_PINNED=all``
    on one partition too."""
    every = os.environ.get("KJOIN_SPARK_PINNED") == "all"
    assert kjoin_outputs(TopologyScenario.from_dict(topology_pinned.document(name, "latest", 1))) == (
        topology_pinned.expected_outputs(name, "4.4.0")
    )
    for partitions in topology_pinned.PARTITIONS if every else (3,):
        scenario = TopologyScenario.from_dict(topology_pinned.document(name, "latest", partitions))
        assert difference(spark, scenario, with_partitions=partitions == 1) is None


WALK_GETTER_CASES = (
    "foreign-key-response-reads-the-table-join-getter",
    "foreign-key-subscription-reads-the-table-join-getter-time",
    "foreign-key-chain-counts-depend-on-the-interleaving",
)
"""Walk cases where a foreign-key join reads a table-table join through its value getter, not its own copy."""


@pytest.mark.parametrize("name", WALK_GETTER_CASES)
def test_a_foreign_key_join_reads_a_table_join_getter_on_spark_as_in_the_reference_engine(spark, name):
    """The cases of tests/topology_walk_cases/ (judged by Kafka in tests/test_topology_walk.py) on Spark: the
    reference engine's records and steps on one partition and on four."""
    path = Path(__file__).parent / "topology_walk_cases" / f"{name}.yaml"
    case = yaml.safe_load(path.read_text(encoding="utf-8"))
    for partitions in (1, 4):
        document = {"partitions": partitions, "topology": case["topology"], "events": case["events"]}
        scenario = TopologyScenario.from_dict(document)
        assert difference(spark, scenario, with_partitions=partitions == 1) is None, partitions


@pytest.mark.parametrize("method, returns_nan", [("vectorised", False), ("processors", False), ("vectorised", True)])
def test_a_user_function_failing_on_an_executor_is_kjoins_error_naming_the_node_and_the_record(
    spark, method, returns_nan
):
    from kjoin.topology.document import TopologyScenario
    from kjoin.topology.runtime import ProcessingError

    def by_customer(key, value):
        return float("nan") if returns_nan else value["c"]

    b = kjoin.Topology(partitions=2)
    b.stream("orders").select_key(by_customer, name="by-customer").join(b.table("customers"), name="joined").to("out")
    events = [
        {"topic": "customers", "key": "c1", "value": "Ann", "ts": 1},
        {"topic": "orders", "key": "o1", "value": {"v": 1}, "ts": 2},
    ]
    topics = spark_topics(spark, TopologyScenario(b, tuple(events), "stages"), with_partitions=False)
    spark_run = run_topology(spark, b, topics, method=method)
    with pytest.raises(ProcessingError) as raised:
        spark_run.collect()
    problem = "returned nan, which JSON cannot carry" if returns_nan else "raised KeyError: 'c'"
    assert str(raised.value).startswith(
        f"node by-customer (select_key): the select_key function (by_customer) {problem}; on the record "
        "orders partition "
    )
    assert 'offset 0, key o1, value {"v":1}, ts 2' in str(raised.value)
    assert "Traceback" not in str(raised.value)


@pytest.mark.parametrize("handler", ["fail", "continue"])
def test_a_null_key_in_a_grace_buffer_fails_or_is_dropped_on_spark_as_in_the_reference_engine(spark, handler):
    """A null-key record reaching a left stream-table join's grace buffer is a processing exception (Kafka's
    buffer put throws, 3.7+): under fail the Spark run stops on it with kjoin's error, under continue it is dropped
    at the join, as in the reference engine."""
    from kjoin.fates import Reason
    from kjoin.topology.runtime import ProcessingError
    from tests.test_topology_handlers import grace_join

    scenario = grace_join(handler)
    if handler == "fail":
        with pytest.raises(ProcessingError, match="NullPointerException: key cannot be null"):
            run(scenario.topology, list(scenario.events), schedule="stages")
    else:
        trace = run(scenario.topology, list(scenario.events), schedule="stages")
        assert Reason.PROCESSING_EXCEPTION in {visit.reason for step in trace for visit in step.visits}
    assert difference(spark, scenario) is None


def test_a_flat_maps_two_pieces_read_as_a_stream_and_a_table_both_join_on_spark(spark):
    """Each piece of a flat_map, written to a to_table's repartition topic and to a join's, joins in its own task on
    Spark as in the reference engine's running application (and in Kafka's TopologyTestDriver)."""
    scenario = flat_map_pieces(2)
    assert sorted(r.key for r in run(scenario.topology, list(scenario.events), schedule="stages").outputs("out")) == [
        "d",
        "x",
    ]
    assert difference(spark, scenario) is None
