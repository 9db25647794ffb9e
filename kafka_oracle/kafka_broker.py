"""A real single-node Kafka cluster for the live-topic tests, and the set-up that fetches it (``make kafka-live``).

:func:`build` resolves two small Maven projects into ~/.m2 and writes one classpath file each:

* ``kafka_oracle/connector/target/classpath.txt``: Spark's Kafka source and the jars PySpark lacks, which
  :func:`kjoin.spark.local_session` puts on ``spark.jars`` (:func:`kjoin.spark.io.session.kafka_connector_jars`);
* ``kafka_oracle/broker/target/classpath.txt``: the Apache Kafka server.

:class:`Broker` formats a log directory with a random cluster id (``kafka.tools.StorageTool format``, as
``kafka-storage.sh`` does) and runs ``kafka.Kafka`` in KRaft mode, broker and controller in one process, on two free
ports of 127.0.0.1; it is ready when a client can read the cluster's metadata. ``stop()`` ends the process and removes
the directory. The topics are made and filled with ``confluent-kafka`` (librdkafka), a client independent of Spark.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parent.parent
CONNECTOR = ROOT / "kafka_oracle" / "connector"
BROKER = ROOT / "kafka_oracle" / "broker"
CLASSPATH_FILE = "target/classpath.txt"


class BrokerError(RuntimeError):
    """The broker cannot be set up or started: Java, Maven or its jars are missing, or it did not come up."""


def _mvn(project: Path, offline: bool) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerError(
            "mvn is not on PATH: install Maven (apt-get install maven) and Java 17, then `make kafka-live`"
        )
    command = [
        mvn,
        "-q",
        "-B",
        *(["-o"] if offline else []),
        "dependency:build-classpath",
        f"-Dmdep.outputFile={CLASSPATH_FILE}",
    ]
    done = subprocess.run(command, cwd=project, capture_output=True, text=True)
    if done.returncode != 0:
        raise BrokerError(f"{' '.join(command)} failed in {project}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


def build(offline: bool | None = None) -> None:
    """Resolve the connector and the broker and write their classpath files: offline when ~/.m2 has every jar,
    else (a first run) from Maven Central."""
    for project in (CONNECTOR, BROKER):
        if offline is None:
            try:
                _mvn(project, offline=True)
                continue
            except BrokerError:
                pass
        _mvn(project, offline=bool(offline))


def broker_classpath() -> str:
    path = BROKER / CLASSPATH_FILE
    if not path.exists():
        raise BrokerError(f"the Kafka broker is not set up ({path} is missing): run `make kafka-live`")
    return path.read_text().strip()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _die_with_parent() -> None:
    """In the broker's process before it runs Java: Linux sends it SIGTERM when the test process dies, so a test
    run that is killed (and cannot reach the fixture's ``stop()``) leaves no broker behind."""
    import ctypes
    import signal

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:  # not Linux: stop() is the only way out
        pass


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _cluster_id() -> str:
    """A random cluster id in Kafka's form: 16 bytes, URL-safe base64 without padding (22 characters), never
    starting with ``-`` (Kafka's ``Uuid.randomUuid`` draws again too: the storage tool's argument parser would read
    such an id as an option, and one broker start in 64 failed so)."""
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not found.startswith("-"):
            return found


SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller_port}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs={log_dir}
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# The scenarios' timestamps are small numbers of milliseconds (1970): keep them as the producer set them, and
# never delete them for being older than a retention time.
log.retention.ms=-1
log.retention.bytes=-1
log.message.timestamp.type=CreateTime
log.message.timestamp.before.max.ms=9223372036854775807
log.message.timestamp.after.max.ms=9223372036854775807
"""

JAVA_OPTIONS = ["-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-Djava.awt.headless=true"]


class Broker:
    """One Kafka server process (KRaft, single node) on free ports of 127.0.0.1; a context manager."""

    def __init__(self, start_timeout_s: float = 60.0) -> None:
        java = shutil.which("java")
        if java is None:
            raise BrokerError("java is not on PATH: install Java 17 (apt-get install openjdk-17-jdk-headless)")
        self._java = java
        self._classpath = broker_classpath()
        self._dir = Path(tempfile.mkdtemp(prefix="kjoin-kafka-"))
        self.port = free_port()
        self.controller_port = free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        self.bootstrap_servers = f"127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None
        self._log = self._dir / "server.out"
        try:
            self._start(start_timeout_s)
        except BaseException:
            self.stop()
            raise

    def _java_command(self, main: str, *args: str) -> list[str]:
        return [
            self._java,
            *JAVA_OPTIONS,
            f"-Dkafka.logs.dir={self._dir / 'logs'}",
            "-cp",
            self._classpath,
            main,
            *args,
        ]

    def _start(self, timeout_s: float) -> None:
        config = self._dir / "server.properties"
        config.write_text(
            SERVER_PROPERTIES.format(port=self.port, controller_port=self.controller_port, log_dir=self._dir / "data")
        )
        formatted = subprocess.run(
            self._java_command("kafka.tools.StorageTool", "format", "-t", _cluster_id(), "-c", str(config)),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if formatted.returncode != 0:
            raise BrokerError(f"kafka.tools.StorageTool format failed:\n{formatted.stdout[-2000:]}{formatted.stderr}")
        with open(self._log, "wb") as out:
            self._process = subprocess.Popen(
                self._java_command("kafka.Kafka", str(config)),
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        self._wait_ready(timeout_s)

    def _wait_ready(self, timeout_s: float) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout_s
        admin = None
        while True:
            assert self._process is not None
            if self._process.poll() is not None:
                raise BrokerError(f"the Kafka server exited with {self._process.returncode}:\n{self.log_tail()}")
            if admin is None and _accepts(self.port):
                admin = AdminClient(self.client_config())
            if admin is not None:
                try:
                    if admin.list_topics(timeout=1).brokers:
                        return
                except Exception:  # not serving metadata yet: KafkaException(_TRANSPORT) or a timeout
                    pass
            if time.monotonic() > deadline:
                raise BrokerError(f"the Kafka server did not answer within {timeout_s:.0f} s:\n{self.log_tail()}")
            time.sleep(0.2)

    def client_config(self, **extra: Any) -> dict[str, Any]:
        """librdkafka settings for this broker; its connection-refused chatter (log level 3) is silenced."""
        return {"bootstrap.servers": self.bootstrap_servers, "log_level": 0, **extra}

    def log_tail(self, chars: int = 3000) -> str:
        return self._log.read_text(errors="replace")[-chars:] if self._log.exists() else "(no output)"

    # -- topics ---------------------------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient(self.client_config())
        futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
        futures[name].result(timeout=30)
        deadline = time.monotonic() + 30
        while True:  # created in the controller; wait until the broker serves every partition's leader
            topic = admin.list_topics(topic=name, timeout=5).topics.get(name)
            if topic is not None and topic.error is None and len(topic.partitions) == partitions:
                if all(p.leader >= 0 for p in topic.partitions.values()):
                    return
            if time.monotonic() > deadline:
                raise BrokerError(f"topic {name!r} has no leader for every partition after 30 s")
            time.sleep(0.1)

    def produce(self, topic: str, records: Iterable[tuple[bytes | None, bytes | None, int, int]]) -> None:
        """Write ``(key, value, partition, timestamp_ms)`` records in order, each to its partition with its
        timestamp (CreateTime); ``None`` is a null key or a tombstone. Waits until every record is acknowledged."""
        from confluent_kafka import Producer

        failures: list[Any] = []

        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                failures.append(error)

        # One request in flight: a retried batch cannot overtake a later one, so the records land in the order given.
        producer = Producer(self.client_config(**{"acks": "all", "max.in.flight.requests.per.connection": 1}))
        for key, value, partition, timestamp_ms in records:
            if timestamp_ms < 1:  # librdkafka's produce() takes 0 for "now": such a record would get the wall clock
                raise BrokerError(f"producing to {topic!r}: timestamp {timestamp_ms} ms; this client needs 1 or more")
            producer.produce(
                topic, value=value, key=key, partition=partition, timestamp=timestamp_ms, on_delivery=delivered
            )
        left = producer.flush(30)
        if left or failures:
            raise BrokerError(f"producing to {topic!r}: {left} records unacknowledged, errors: {failures[:3]}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> "Broker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main() -> None:  # pragma: no cover - a manual check: `python -m kafka_oracle.kafka_broker`
    started = time.monotonic()
    with Broker() as broker:
        print(f"Kafka at {broker.bootstrap_servers}, ready in {time.monotonic() - started:.1f} s")
        broker.create_topic("probe", 2)
        broker.produce("probe", [(b"k", b"v", 1, 5), (None, None, 0, 7)])
        print(f"topic probe filled after {time.monotonic() - started:.1f} s")
    print(f"stopped after {time.monotonic() - started:.1f} s; pid gone: {os.name}")


if __name__ == "__main__":  # pragma: no cover
    main()
