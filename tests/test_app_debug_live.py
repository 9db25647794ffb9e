"""``kjoin debug --bootstrap-servers host:port --topic NAME``: the whole app debugged over live topics of a real Kafka
cluster (:mod:`kafka_oracle.kafka_broker`), printing and writing what the same command prints and writes over dump files
of the same records. Nothing here skips: without Java, the broker's jars or the Kafka connector it fails naming why.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kjoin.cli import main
from kjoin.topology.events import input_records
from tests.app_planted import Planted, app, document, planted, write_dumps
from kafka_oracle.kafka_broker import Broker

pytestmark = pytest.mark.spark

ORDERS = 60
TOPICS = ("orders", "customers", "products")


def _shifted(topics: Planted) -> Planted:
    """The planted topics one millisecond later: a Kafka producer takes timestamps from 1 (0 is "now")."""
    events = [{**event, "ts": event["ts"] + 1} for event in topics.events]
    return Planted(events, topics.causes, topics.misrouted)


@pytest.fixture(scope="module")
def live(tmp_path_factory, spark):
    """The planted topics in a real cluster, each record in the partition the dump gives it, and the same records as
    dump files."""
    directory = tmp_path_factory.mktemp("live")
    topics = _shifted(planted(ORDERS))
    paths = write_dumps(topics, directory, partitions=True)
    app_path = directory / "app.json"
    app_path.write_text(json.dumps(document(topics)))
    placed = input_records(app().build().graph, topics.events)
    broker = Broker()
    try:
        for name in TOPICS:
            records = [r for r in placed if r.topic == name]
            broker.create_topic(name, max(r.partition for r in records) + 1)
            broker.produce(
                name,
                [
                    (
                        None if r.key is None else r.key.encode(),
                        None if r.value is None else json.dumps(r.value, separators=(",", ":")).encode(),
                        r.partition,
                        r.ts,
                    )
                    for r in records
                ],
            )
        yield broker, directory, app_path, paths
    finally:
        broker.stop()


def _debug(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["debug", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_kjoin_debug_over_a_live_broker_prints_and_writes_what_it_does_over_dumps(live, capsys) -> None:
    broker, directory, app_path, paths = live
    from_dumps = directory / "RUN-dumps"
    from_broker = directory / "RUN-live"
    dump_args = [arg for name in TOPICS for arg in ("--topic", f"{name}={paths[name]}")]
    code, dumped, err = _debug(capsys, str(app_path), *dump_args, "--out", str(from_dumps))
    assert code == 0, err
    live_args = [arg for name in TOPICS for arg in ("--topic", name)]
    code, read, err = _debug(
        capsys, str(app_path), "--bootstrap-servers", broker.bootstrap_servers, *live_args, "--out", str(from_broker)
    )
    assert code == 0, err
    assert read.replace(str(from_broker), "RUN") == dumped.replace(str(from_dumps), "RUN")
    assert "late-in-window" in read and "partner-other-partition" in read, read
    # the written runs answer alike: the first order, asked for in each
    order = next(json.loads(line) for line in Path(paths["orders"]).read_text().splitlines())
    where = ["--topic", "orders", "--partition", str(order["partition"]), "--offset", str(order["offset"])]
    assert main(["why", str(from_dumps), *where]) == 0
    by_dumps = capsys.readouterr().out
    assert main(["why", str(from_broker), *where]) == 0
    assert capsys.readouterr().out == by_dumps and by_dumps


def test_a_topic_missing_on_the_broker_is_named_with_the_fix(live, capsys) -> None:
    broker, _, app_path, _ = live
    code, _, err = _debug(
        capsys, str(app_path), "--bootstrap-servers", broker.bootstrap_servers, "--topic", "orders", "--topic",
        "customer", "--topic", "products",
    )  # fmt: skip
    assert code == 2
    assert "--topic customer:" in err and f"at {broker.bootstrap_servers} has no topic 'customer'" in err, err
    assert "check the name" in err


def test_a_topic_name_without_a_path_or_a_broker_is_refused_naming_both_ways(live, capsys) -> None:
    _, _, app_path, _ = live
    code, _, err = _debug(capsys, str(app_path), "--topic", "orders")
    assert code == 2 and "--topic orders: expected NAME=PATH" in err and "--bootstrap-servers" in err
