"""The planted whole app (:mod:`tests.app_planted`) run by the real Kafka Streams library on a real broker with one
customers partition lagging, its output topic read back, and ``run_topology(...).reconcile(actual, arrival=...)``
asked to explain every difference: ``make app-lag-check`` (``APP_LAG_ORDERS``, default 10^4), and a small sample in
``tests/test_app_lag_broker.py``.

How a lagging partition is made real: the input topics are created with the app's partitions and filled with every
record but those of the lagging partition (phase 0); the application (``kafka_oracle``'s ``AppRunner``: the document's
topology built as the topology oracle builds it, ``max.task.idle.ms = 0``, caches off) runs until its consumer group
has committed every offset of its input and repartition topics; then the lagging partition's records are produced
(phase 1) and taken in turn. So every order of that partition's task was joined before any of its customers arrived:
kjoin's arrival model (:mod:`kjoin.topology.arrival`) with that partition lagging by more than the records' span.

The repartition topic lags too, in any running application: the customers topics are fetched whole at the start, the
re-keyed orders reach the join's tasks only once the re-key's tasks have written them, and with ``max.task.idle.ms =
0`` a task does not wait for a partition that is empty on the broker (KIP-695). So the tasks take every customer of
the other partitions before the orders that look them up (an order whose customer is created half a minute after it
finds the customer): :data:`REPARTITION` lagging by the span, the customers partition by twice the span
(:func:`arrival`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any, Iterable

from kjoin.topology.events import input_records
from kjoin.topology.trace import TopicRecord
from tests.app_planted import Planted, app, document, planted
from kafka_oracle.kafka_broker import Broker, BrokerError, _die_with_parent
from kafka_oracle.oracle_check import LATEST_JUDGE, classpath

LAGGING = ("customers", 1)
"""The topic partition that reaches the application late."""
REPARTITION = "by-customer-repartition"
"""The repartition topic the customers join reads: kjoin names the document's unnamed join's topic after the re-keyed
stream, as Kafka's counter name is (the application's id is not part of it)."""
OUTPUT = "enriched-orders"
"""The output topic reconciled: the customers join's results (a lag changes which customer rows a lookup finds)."""


def arrival(topics: Planted, lagging: tuple[str, int] = LAGGING) -> dict[str, Any]:
    """``reconcile``'s ``arrival=`` for a run on the broker (see the module): the repartition topic late by the records'
    span, ``lagging`` by twice the span."""
    times = [event["ts"] for event in topics.events]
    span = max(times) - min(times) + 1
    return {REPARTITION: {"lag_ms": span}, lagging[0]: {"partitions": {lagging[1]: 2 * span}}}


def shifted(topics: Planted) -> Planted:
    """The planted topics one millisecond later: a Kafka producer takes timestamps from 1 (0 is "now")."""
    return Planted([{**event, "ts": event["ts"] + 1} for event in topics.events], topics.causes, topics.misrouted)


def placed(topics: Planted) -> list[TopicRecord]:
    """The planted records on their topic partitions, at their offsets."""
    return input_records(app().build().graph, topics.events)


def _encoded(records: Iterable[TopicRecord]) -> list[tuple[bytes | None, bytes | None, int, int]]:
    def text(value: Any) -> bytes | None:
        if value is None:
            return None
        return (value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))).encode()

    return [(text(r.key), text(r.value), r.partition, r.ts) for r in records]


def _caught_up(broker: Broker, group: str, topics: list[str], timeout_s: float = 120.0) -> None:
    """Wait until the application's consumer group has committed every offset of ``topics`` and of its repartition
    topics (the same three times in a row, 0.3 s apart); fail when it makes no progress for ``timeout_s``."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(broker.client_config())
    consumer = Consumer(broker.client_config(**{"group.id": group, "enable.auto.commit": False}))
    deadline = time.monotonic() + timeout_s
    stable, least = 0, None
    try:
        while True:
            names = list(topics) + [
                t for t in admin.list_topics(timeout=10).topics if t.startswith(f"{group}-") and "repartition" in t
            ]
            metadata = admin.list_topics(timeout=10).topics
            parts = [TopicPartition(t, p) for t in names for p in metadata[t].partitions]
            committed = consumer.committed(parts, timeout=10)
            behind = 0
            for part in committed:
                high = consumer.get_watermark_offsets(TopicPartition(part.topic, part.partition), timeout=10)[1]
                behind += max(high - max(part.offset, 0), 0)
            stable = stable + 1 if behind == 0 else 0
            if stable >= 3:
                return
            if least is None or behind < least:  # progress: the application is working through them
                least, deadline = behind, time.monotonic() + timeout_s
            if time.monotonic() > deadline:
                raise BrokerError(f"the application is {behind} records behind, none taken in {timeout_s:.0f} s")
            time.sleep(0.3)
    finally:
        consumer.close()


def read_topic(broker: Broker, topic: str) -> list[dict[str, Any]]:
    """Every record of ``topic``: ``key, value, ts, partition, offset`` (texts), in partition and offset order."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(broker.client_config(**{"group.id": f"kjoin-read-{time.monotonic_ns()}"}))
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        rows: list[dict[str, Any]] = []
        for partition in sorted(metadata.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, partition, low)])
            while not rows or rows[-1]["partition"] != partition or rows[-1]["offset"] < high - 1:
                message = consumer.poll(10)
                if message is None:
                    raise BrokerError(f"{topic}[{partition}]: no record within 10 s before offset {high}")
                if message.error():
                    raise BrokerError(f"{topic}[{partition}]: {message.error()}")
                rows.append({
                    "key": None if message.key() is None else message.key().decode(),
                    "value": None if message.value() is None else message.value().decode(),
                    "ts": message.timestamp()[1], "partition": partition, "offset": message.offset(),
                })  # fmt: skip
        return rows
    finally:
        consumer.close()


def run_on_broker(broker: Broker, topics: Planted, lagging: tuple[str, int] = LAGGING) -> list[dict[str, Any]]:
    """The planted app run by Kafka Streams on ``broker`` with ``lagging`` late (see the module); returns what it
    wrote to :data:`OUTPUT`."""
    records = placed(topics)
    graph = app().build().graph
    for name in ("orders", "customers", "products", "enriched-orders", "orders-per-hour"):  # the broker creates none
        broker.create_topic(name, graph.topics[name].partitions or 1)
    late = [r for r in records if (r.topic, r.partition) == lagging]
    for name in ("products", "customers", "orders"):
        broker.produce(name, _encoded(r for r in records if r.topic == name and (r.topic, r.partition) != lagging))
    group = f"kjoin-app-{time.monotonic_ns()}"
    java = [
        "java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath(LATEST_JUDGE.version),
        "kjoin.oracle.AppRunner", broker.bootstrap_servers, group,
    ]  # fmt: skip
    process = subprocess.Popen(java, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               bufsize=1, preexec_fn=_die_with_parent)  # fmt: skip
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps({**document(topics), "events": []}) + "\n")
        process.stdin.flush()
        if process.stdout.readline().strip() != "running":  # its log (stderr) is read only then: it is short
            raise BrokerError(f"AppRunner did not start:\n{process.stderr.read()[-3000:] if process.stderr else ''}")
        _caught_up(broker, group, ["orders", "customers"])
        broker.produce(lagging[0], _encoded(late))
        _caught_up(broker, group, ["orders", "customers"])
        process.stdin.write("stop\n")
        process.stdin.flush()
        process.stdout.readline()
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=15)
    return read_topic(broker, OUTPUT)


def on_broker(spark: Any, broker: Broker, orders: int) -> tuple[Any, Any, Planted]:
    """The planted app run on the broker with :data:`LAGGING` late, and by kjoin on Spark over the same live input
    topics (:func:`kjoin.spark.from_kafka`): kjoin's run, and what the app wrote to :data:`OUTPUT` (``key, value,
    ts``), for ``run.reconcile(actual, topic=OUTPUT, arrival=...)``, and the planted topics."""
    from kjoin.spark import from_kafka, run_topology
    from kjoin.topology.document import TopologyScenario

    topics = shifted(planted(orders))
    written = run_on_broker(broker, topics)
    topology = TopologyScenario.from_dict({**document(topics), "events": []}).topology
    live = {
        name: from_kafka(spark, bootstrap_servers=broker.bootstrap_servers, topic=name, value=kind)
        for name, kind in (("orders", "json"), ("customers", "string"), ("products", "string"))
    }
    rows = [(r["key"], r["value"], r["ts"]) for r in written]
    actual = spark.createDataFrame(rows, "key string, value string, ts long")
    return run_topology(spark, topology, live), actual, topics


def main() -> None:  # pragma: no cover - make app-lag-check
    from kjoin.spark import local_session

    orders = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    started = time.monotonic()
    spark = local_session()
    topic, partition = LAGGING
    with Broker(start_timeout_s=180) as broker:
        run, actual, topics = on_broker(spark, broker, orders)
        told_nothing = run.reconcile(actual, topic=OUTPUT)
        found = run.reconcile(actual, topic=OUTPUT, arrival=arrival(topics))
    print(f"app-lag-check: {orders} orders, {topic} partition {partition} lagging, {time.monotonic() - started:.0f} s")
    print("Without a lag:\n" + str(told_nothing))
    print("With the lag:\n" + str(found))
    if not found.explained:
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
