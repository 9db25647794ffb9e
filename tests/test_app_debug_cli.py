"""``kjoin debug`` over the planted topics' dump files, and ``kjoin why`` answering from the written run in a new
process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kjoin.cli import main
from tests.app_planted import document, planted, write_dumps

ORDERS = 200


def _kjoin(*args: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "kjoin"
    return subprocess.run([str(script), *args], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    directory = tmp_path_factory.mktemp("dumps")
    topics = planted(ORDERS)
    paths = write_dumps(topics, directory, partitions=False)
    app = directory / "app.json"
    app.write_text(json.dumps(document(topics)))
    return topics, directory, app, paths


def _topic_args(paths):
    return [arg for name, path in sorted(paths.items()) for arg in ("--topic", f"{name}={path}")]


def test_a_file_without_partitions_is_refused_unless_the_user_says_how_it_was_partitioned(dumps, capsys) -> None:
    _, _, app, paths = dumps
    assert main(["debug", str(app), *_topic_args(paths)]) == 2
    error = capsys.readouterr().err
    assert "--topic products: record 0 has no partition" in error and "--partitioned-by murmur2" in error


def test_kjoin_debug_prints_the_causes_the_audit_and_the_drops_and_kjoin_why_answers_in_a_new_process(dumps) -> None:
    topics, directory, app, paths = dumps
    run = directory / "RUN"
    done = _kjoin("debug", str(app), *_topic_args(paths), "--partitioned-by", "murmur2", "--out", str(run))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"Co-partitioning audit: {len(topics.misrouted)} record(s) not in their key's partition." in out
    for verdict, node in (
        ("partner-other-partition", "customers-join"),
        ("late-in-window", "per-hour"),
        ("dropped-by-filter", "real-orders"),
    ):
        assert any(verdict in line and node in line for line in out.splitlines()), (verdict, out)
    assert "per-hour: expired-window" in out
    # a misrouted customer's order: its output, asked for by offset, names the misrouted record
    key = next(key for key, cause in topics.causes.items() if cause == "misrouted-creation")
    order = next(line for line in Path(paths["orders"]).read_text().splitlines() if json.loads(line)["key"] == key)
    record = json.loads(order)
    asked = _kjoin("why", str(run), "--topic", "orders", "--partition", str(record["partition"]), "--offset",
                   str(record["offset"]))  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    assert "partner-other-partition" in asked.stdout and "behind it: customers[" in asked.stdout
    output = next(line for line in asked.stdout.splitlines() if line.startswith("  outputs: "))
    where = output.split("outputs: ")[1].split(" ")[0]  # enriched-orders[p]@o
    topic, partition, offset = re.fullmatch(r"(.+)\[(\d+)\]@(\d+)", where).groups()
    again = _kjoin("why", str(run), "--topic", topic, "--partition", partition, "--offset", offset)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"{where} ") and "partner-other-partition" in again.stdout
    missing = _kjoin("why", str(run), "--topic", "orders", "--partition", "0", "--offset", "99999")
    assert missing.returncode == 2 and "no input or output record there" in missing.stderr


def test_kjoin_debug_takes_a_describe_text_and_the_functions_file(tmp_path, capsys) -> None:
    """Kafka 4.4's own describe() text of a stream's left join with a GlobalKTable (the describe fixtures'), its key
    selector given in app.py; the global table is restored before any task runs, so every order finds its customer."""
    fixture = json.loads((Path(__file__).parent / "describe_fixtures" / "shape-global-join.json").read_text())
    (tmp_path / "topology.txt").write_text(fixture["describe_text"])
    (tmp_path / "app.py").write_text(
        'functions = {"KSTREAM-LEFTJOIN-0000000004": {"variant": "left", "key_selector": lambda key, value: '
        '(value or {}).get("c")}}\n'
    )
    offsets: dict[str, int] = {}
    for topic in ("orders", "customers"):
        with open(tmp_path / f"{topic}.jsonl", "w") as file:
            for event in fixture["document"]["events"]:
                if event["topic"] == topic:
                    offsets[topic] = offsets.get(topic, -1) + 1
                    file.write(json.dumps({**event, "partition": 0, "offset": offsets[topic]}) + "\n")
    args = ["--describe", str(tmp_path / "topology.txt"), "--functions", str(tmp_path / "app.py")]
    topics = ["--topic", f"orders={tmp_path / 'orders.jsonl'}", "--topic", f"customers={tmp_path / 'customers.jsonl'}"]
    assert main(["debug", *args, *topics, "--out", str(tmp_path / "RUN")]) == 0
    printed = capsys.readouterr().out
    assert "Co-partitioning audit: 0 record(s)" in printed and "KSTREAM-LEFTJOIN-0000000004" in printed
    assert main(["why", str(tmp_path / "RUN"), "--topic", "out", "--partition", "0", "--offset", "0"]) == 0
    story = capsys.readouterr().out
    assert story.startswith("out[0]@0 o4:") and "joined" in story and "behind it: customers[0]@" in story


@pytest.mark.parametrize(
    ("lines", "topic", "said"),
    [
        (["not json"], "orders", "line 1: not JSON"),
        (['{"key": "o1", "ts": 1, "partition": 0}'], "orders", "line 1: no field 'value'"),
        (['{"key": "o1", "value": {}, "ts": 1, "partition": 9}'], "orders", "record 0 has partition 9"),
        (['{"key": "o1", "value": {}, "ts": -1, "partition": 0}'], "orders", "record 0 has ts -1"),
        (['{"key": "o1", "value": {}, "ts": 1, "partition": 0}'], "payments", "the app does not read payments"),
    ],
)
def test_bad_dumps_get_kjoins_error_naming_the_topic_the_record_and_the_fix(
    dumps, tmp_path, capsys, lines, topic, said
) -> None:
    _, _, app, paths = dumps
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    given = {**paths, topic: str(bad)}
    assert main(["debug", str(app), *_topic_args(given), "--partitioned-by", "murmur2"]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"kjoin: --topic {topic}") and said in error, error


def test_a_topic_the_app_reads_without_its_dump_is_named(dumps, capsys) -> None:
    _, _, app, paths = dumps
    given = {name: path for name, path in paths.items() if name != "customers"}
    assert main(["debug", str(app), *_topic_args(given), "--partitioned-by", "murmur2"]) == 2
    assert "no --topic for customers" in capsys.readouterr().err


def test_a_parquet_dump_is_read_with_its_partitions_and_json_values(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kjoin.topology.debug_cli import read_topic

    path = tmp_path / "orders.parquet"
    pq.write_table(
        pa.table({"key": ["o1", None], "value": ['{"customer":"c1"}', None], "ts": [5, 6], "partition": [3, 0]}), path
    )
    assert read_topic("orders", str(path)) == [
        {"key": "o1", "value": {"customer": "c1"}, "ts": 5, "partition": 3},
        {"key": None, "value": None, "ts": 6, "partition": 0},
    ]
    assert read_topic("orders", str(path), values="string")[0]["value"] == '{"customer":"c1"}'
