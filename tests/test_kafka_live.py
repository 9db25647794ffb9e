"""Live topics: ``from_kafka(spark, bootstrap_servers=..., topic=...)`` against a real Kafka cluster.

One Apache Kafka server (KRaft, broker and controller in one process, :mod:`kafka_oracle.kafka_broker`) runs on free
ports of 127.0.0.1 for this module and is stopped by its fixture, also when a test fails. The scenario's records are
written by a real client (confluent-kafka) with explicit partitions and timestamps, null keys and tombstones included;
Spark reads them back through its Kafka source, and every join's outputs must be the reference engine's, task by task,
for the records as the cluster stored them (partitions, offsets, timestamps). Nothing here skips: without Java, Maven's
jars (`make kafka-live`) or the connector on the session, the tests fail with the reason.
"""

from __future__ import annotations

import json
import random
import re
import struct
import time
from pathlib import Path

import pytest

from kjoin.records import Record, Side
from kjoin.spark import SparkInputError, from_kafka, run_join
from kjoin.spark.io import kafka as kafka_reader
from kjoin.spark.io import session as session_module
from kafka_oracle.kafka_broker import Broker
from tests.spark_compare import reference_outputs, spark_outputs
from tests.test_spark_readers import LEFT_ROWS, RIGHT_ROWS, WINDOW, kafka_frame, utf8

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def broker():
    cluster = Broker()
    try:
        yield cluster
    finally:
        cluster.stop()


def _encode(value, how):
    if value is None:
        return None
    if how == "long":
        return struct.pack(">q", value)
    if how == "json":
        return json.dumps(value).encode()
    return str(value).encode()


def produce(broker, topic, rows, partitions, key="string", value="string"):
    """Create ``topic`` and write ``rows`` of (key, value, ts, partition, _) in order; the cluster assigns the
    offsets. Returns the rows with the offsets the cluster must have given (counting per partition from 0)."""
    broker.create_topic(topic, partitions)
    broker.produce(topic, [(_encode(k, key), _encode(v, value), p, ts) for k, v, ts, p, _ in rows])
    offsets: dict[int, int] = {}
    stored = []
    for k, v, ts, p, _ in rows:
        stored.append((k, v, ts, p, offsets.get(p, 0)))
        offsets[p] = offsets.get(p, 0) + 1
    return stored


def records(side, rows):
    return [Record(side, k, v, ts, p, o) for k, v, ts, p, o in rows]


def topic_rows(topic):
    """The topic's records (key, value, ts, partition, offset) in partition and offset order."""
    frame = topic.frame.select("key", "value", "ts", "partition", "offset")
    return sorted((tuple(row) for row in frame.collect()), key=lambda r: (r[3], r[4]))


def in_log_order(rows):
    return sorted((tuple(r) for r in rows), key=lambda r: (r[3], r[4]))


def random_rows(seed, count, partitions):
    """``count`` records over ``partitions`` partitions: few keys (so that they meet), null keys, tombstones,
    timestamps out of order within each partition (from 1: librdkafka reads a timestamp of 0 as "now")."""
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        key = rng.choice(["k0", "k1", "k2", "k3", "k4", None])
        value = None if rng.random() < 0.2 else f"v{i}"
        rows.append((key, value, rng.randrange(1, 60), rng.randrange(partitions), None))
    return rows


@pytest.fixture(scope="module")
def small_topics(broker, spark):
    """The readers' two-partition example (null key, tombstones, out-of-order timestamps) as live topics."""
    left_rows = produce(broker, "small-orders", [(*r[:4], None) for r in LEFT_ROWS], 2)
    right_rows = produce(broker, "small-customers", [(*r[:4], None) for r in RIGHT_ROWS], 2)
    left = from_kafka(spark, bootstrap_servers=broker.bootstrap_servers, topic="small-orders")
    right = from_kafka(spark, bootstrap_servers=broker.bootstrap_servers, topic="small-customers")
    return left, right, left_rows, right_rows


def test_the_session_has_the_kafka_connector(spark):
    jars = session_module.kafka_connector_jars()
    assert jars, "Spark's Kafka connector is not set up: run `make kafka-live`"
    assert any("spark-sql-kafka-0-10" in jar for jar in jars) and any("kafka-clients" in jar for jar in jars)
    on_session = spark.sparkContext.getConf().get("spark.jars", "")
    assert all(jar in on_session for jar in jars), "local_session() must put the connector on spark.jars"


def test_a_live_topic_is_the_clusters_records(broker, small_topics):
    """Partitions, offsets, timestamps, null keys and tombstones as the cluster stored them."""
    left, right, left_rows, right_rows = small_topics
    # Each partition's offsets count from 0 in the order written: the readers' example is written in that order.
    assert left_rows == LEFT_ROWS and right_rows == RIGHT_ROWS
    assert topic_rows(left) == in_log_order(LEFT_ROWS)
    assert topic_rows(right) == in_log_order(RIGHT_ROWS)
    assert left.source == f"topic 'small-orders' at {broker.bootstrap_servers}" and left.partitions is None
    assert any(r[0] is None for r in topic_rows(left)), "the null key must survive the round trip"
    assert any(r[1] is None for r in topic_rows(right)), "tombstones must survive the round trip"


@pytest.mark.parametrize("join, variant", [("table-table", "outer"), ("stream-stream", "outer")])
def test_joins_of_live_topics_agree_with_the_reference_engine(small_topics, join, variant):
    left, right, left_rows, right_rows = small_topics
    window = WINDOW if join == "stream-stream" else None
    result = run_join(left, right, join, variant, window=window)
    expected = reference_outputs(
        records(Side.LEFT, left_rows), records(Side.RIGHT, right_rows), join, variant, 2, window
    )
    assert expected, "the example must produce outputs, or the comparison proves nothing"
    assert spark_outputs(result) == expected


def test_the_frame_form_reads_the_same_as_the_live_form(spark, small_topics):
    """``from_kafka(frame)``, the Kafka source schema built by hand, still works and gives the same topic."""
    left = small_topics[0]
    by_hand = from_kafka(kafka_frame(spark, LEFT_ROWS, utf8, utf8), source="orders by hand")
    assert topic_rows(by_hand) == topic_rows(left)


def test_random_live_topics_with_three_partitions_agree(broker, spark):
    left_rows = produce(broker, "clicks", random_rows(1, 80, 3), 3)
    right_rows = produce(broker, "users", random_rows(2, 60, 3), 3)
    left = from_kafka(spark, bootstrap_servers=broker.bootstrap_servers, topic="clicks", partitions=3)
    right = from_kafka(spark, bootstrap_servers=broker.bootstrap_servers, topic="users", partitions=3)
    for join, variant, window in (("stream-table", "left", None), ("stream-stream", "left", WINDOW)):
        expected = reference_outputs(
            records(Side.LEFT, left_rows), records(Side.RIGHT, right_rows), join, variant, 3, window
        )
        assert len(expected) == 3, "every task must emit something, or the comparison proves little"
        assert spark_outputs(run_join(left, right, join, variant, window=window)) == expected


def test_long_keys_and_json_values_from_a_live_topic(broker, spark):
    """8-byte big-endian keys (LongSerializer) and JSON values, as a Java producer would write them."""
    big = 2**62 + 1
    keys = {"a": -7, "b": big, "c": 3, None: None}
    left_rows = produce(
        broker,
        "orders-json",
        [(keys[k], None if v is None else {"item": v}, ts, p, None) for k, v, ts, p, _ in LEFT_ROWS],
        2,
        key="long",
        value="json",
    )
    right_rows = produce(
        broker,
        "customers-json",
        [(keys[k], None if v is None else {"name": v}, ts, p, None) for k, v, ts, p, _ in RIGHT_ROWS],
        2,
        key="long",
        value="json",
    )
    servers = broker.bootstrap_servers
    left = from_kafka(spark, bootstrap_servers=servers, topic="orders-json", key="long", value="json")
    right = from_kafka(spark, bootstrap_servers=servers, topic="customers-json", key="long", value="json")
    assert dict(left.frame.dtypes)["key"] == "bigint" and left.json_values
    result = run_join(left, right, "stream-table", "left")
    expected = reference_outputs(
        records(Side.LEFT, left_rows), records(Side.RIGHT, right_rows), "stream-table", "left", 2
    )
    assert expected and spark_outputs(result) == expected
    assert big in {row["key"] for row in result.outputs.select("key").collect()}


def test_the_guide_live_example_runs_against_the_broker(broker, spark):
    """The example of docs/how-to/live-topics.md, with only the cluster's address replaced by this broker's."""
    guide = ROOT / "docs" / "how-to" / "live-topics.md"
    example = re.findall(r"```python\n(.*?)```", guide.read_text(), re.S)[0]
    assert "broker:9092" in example
    orders = [(f"C{i % 5}", {"order": f"O{i}"}, 1 + 10 * i, i % 4, None) for i in range(16)]
    customers = [(f"C{i}", {"name": f"name{i}"}, 3 + 10 * i, i % 4, None) for i in range(3)]
    orders = produce(broker, "orders", orders, 4, value="json")
    customers = produce(broker, "customers", customers, 4, value="json")
    scope = {"spark": spark, "from_kafka": from_kafka, "run_join": run_join}
    exec(compile(example.replace("broker:9092", broker.bootstrap_servers), str(guide), "exec"), scope)
    expected = reference_outputs(records(Side.LEFT, orders), records(Side.RIGHT, customers), "stream-table", "left", 4)
    assert len(expected) == 4 and spark_outputs(scope["result"]) == expected


def test_a_read_is_pinned_to_the_offsets_it_found(broker, spark):
    """Records written after ``from_kafka`` stay out of that topic; a new read sees them. Offsets in Spark's JSON
    form choose a range."""
    servers = broker.bootstrap_servers
    produce(broker, "growing", [("a", "1", 1, 0, None), ("b", "2", 2, 1, None), ("a", "3", 3, 0, None)], 2)
    before = from_kafka(spark, bootstrap_servers=servers, topic="growing")
    broker.produce("growing", [(b"c", b"4", 1, 4), (b"a", None, 0, 5)])
    assert topic_rows(before) == [("a", "1", 1, 0, 0), ("a", "3", 3, 0, 1), ("b", "2", 2, 1, 0)]
    after = from_kafka(spark, bootstrap_servers=servers, topic="growing")
    assert topic_rows(after) == [
        ("a", "1", 1, 0, 0),
        ("a", "3", 3, 0, 1),
        ("a", None, 5, 0, 2),
        ("b", "2", 2, 1, 0),
        ("c", "4", 4, 1, 1),
    ]
    ranged = from_kafka(
        spark,
        bootstrap_servers=servers,
        topic="growing",
        starting_offsets=json.dumps({"growing": {"0": 1, "1": 0}}),
        ending_offsets=json.dumps({"growing": {"0": 2, "1": 2}}),
    )
    assert topic_rows(ranged) == [("a", "3", 3, 0, 1), ("b", "2", 2, 1, 0), ("c", "4", 4, 1, 1)]
    at_the_end = json.dumps({"growing": {"0": 3, "1": 2}})
    empty = from_kafka(
        spark, bootstrap_servers=servers, topic="growing", starting_offsets=at_the_end, ending_offsets=at_the_end
    )
    assert topic_rows(empty) == []
    with pytest.raises(SparkInputError) as caught:  # Spark's own rule, relayed with the topic
        from_kafka(spark, bootstrap_servers=servers, topic="growing", starting_offsets="latest")
    assert "topic 'growing'" in str(caught.value) and "can't be latest for batch queries" in str(caught.value)


def test_a_missing_topic_is_named_with_the_cluster(broker, spark):
    started = time.monotonic()
    with pytest.raises(SparkInputError) as caught:
        from_kafka(spark, bootstrap_servers=broker.bootstrap_servers, topic="no-such-topic", timeout_ms=5000)
    message = str(caught.value)
    assert "'no-such-topic'" in message and broker.bootstrap_servers in message and "has no topic" in message
    assert "Traceback" not in message and "\tat " not in message
    assert time.monotonic() - started < 30


def test_an_unreachable_cluster_fails_within_the_timeout(spark):
    from kafka_oracle.kafka_broker import free_port

    nobody = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(SparkInputError) as caught:
        from_kafka(spark, bootstrap_servers=nobody, topic="orders", timeout_ms=2000)
    elapsed = time.monotonic() - started
    message = str(caught.value)
    assert nobody in message and "'orders'" in message and "timeout_ms=2000" in message
    assert elapsed < 30, f"an unreachable cluster took {elapsed:.0f} s to report"


def test_a_session_without_the_kafka_source_names_the_set_up(spark, monkeypatch):
    """Spark's own DATA_SOURCE_NOT_FOUND, for a source name no session has, becomes the set-up advice."""
    monkeypatch.setattr(kafka_reader, "KAFKA_FORMAT", "kjoin-no-such-kafka-source")
    with pytest.raises(SparkInputError) as caught:
        from_kafka(spark, bootstrap_servers="127.0.0.1:9", topic="orders")
    message = str(caught.value)
    assert "cannot load Spark's Kafka source" in message and "make kafka-live" in message
    assert "spark-sql-kafka-0-10" in message and "'orders'" in message


def test_kafka_true_without_the_set_up_names_it(monkeypatch, tmp_path):
    monkeypatch.setenv(session_module.KAFKA_CONNECTOR_ENV, str(tmp_path / "missing.txt"))
    assert session_module.kafka_connector_jars() is None
    with pytest.raises(RuntimeError, match="make kafka-live"):
        session_module.local_session(kafka=True)
    listed = tmp_path / "classpath.txt"
    listed.write_text(str(tmp_path / "gone.jar"))
    monkeypatch.setenv(session_module.KAFKA_CONNECTOR_ENV, str(listed))
    assert session_module.kafka_connector_jars() is None, "a jar gone from ~/.m2 means not set up"


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"bootstrap_servers": "", "topic": "t"}, "bootstrap_servers=''"),
        ({"bootstrap_servers": "127.0.0.1:9"}, "topic=None"),
        ({"bootstrap_servers": "127.0.0.1:9", "topic": "a,b"}, "one topic"),
        ({"bootstrap_servers": "127.0.0.1:9", "topic": "t", "timeout_ms": 0}, "timeout_ms=0"),
        ({"bootstrap_servers": "127.0.0.1:9", "topic": "t", "key": "avro"}, "no such deserializer"),
        ({"bootstrap_servers": "127.0.0.1:9", "topic": "t", "ending_offsets": 5}, "ending_offsets=5"),
        ({"bootstrap_servers": "127.0.0.1:9", "topic": "t", "options": ["x"]}, "options="),
        ({"bootstrap_servers": "127.0.0.1:9", "topic": "t", "options": {"subscribePattern": "t.*"}}, "use topic="),
        ({"bootstrap_servers": "127.0.0.1:9", "topic": "t", "options": {"startingOffsets": "x"}}, "starting_offsets="),
    ],
)
def test_bad_arguments_are_refused_before_any_read(spark, kwargs, fragment):
    with pytest.raises(SparkInputError) as caught:
        from_kafka(spark, **kwargs)
    assert fragment in str(caught.value)


def test_the_session_alone_asks_for_the_topic(spark):
    with pytest.raises(SparkInputError, match="bootstrap_servers='host:port' and topic='name'"):
        from_kafka(spark)
