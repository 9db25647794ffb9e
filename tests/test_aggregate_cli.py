"""The seed-000 joins through ``kjoin.load_scenario``, ``kjoin.run`` and ``kjoin run`` (table and JSON lines)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import kjoin
from kjoin.scenario import AGGREGATE_JOINS, AggregateSpec
from kjoin.engine.aggregates import DAY_MS, WEEK_MS, run_spec
from kjoin.render import spec_table
from kjoin.cli import main

from .test_spark_aggregates import random_spec
from .test_wtable import BEHIND_RETENTION

ROOT = Path(__file__).resolve().parent.parent

PAGE_VIEWS = {
    "join": "wtable-wtable",
    "self_join": True,
    "window_shift_ms": -WEEK_MS,
    "retention_ms": 8 * DAY_MS,
    "window": {"size_ms": DAY_MS},
    "events": [{"key": "home", "value": "view", "ts": 1000}, {"key": "home", "value": "view", "ts": WEEK_MS + 4}],
}


def test_the_table_names_the_join_its_windows_and_every_step():
    text = spec_table(run_spec(PAGE_VIEWS))
    lines = text.splitlines()
    assert lines[0] == (
        "wtable-wtable left join, tumbling windows of 86400000 ms, grace 0 ms, retention 691200000 ms in segments of "
        "345600000 ms, window shifter: shift by -604800000 ms, self join, 1 partition"
    )
    assert "home@[0, 86400000): 1-null@1000" in lines[3]
    assert "home@[604800000, 691200000): 1-1@604800004" in lines[4]


def test_the_table_shows_late_drops_and_aggregate_updates():
    windowed = run_spec(
        {
            "join": "window-aggregate",
            "window": {"size_ms": 10, "grace_ms": 2},
            "events": [
                {"key": "a", "value": 1, "ts": 3},
                {"key": "a", "value": 1, "ts": 30},
                {"key": "a", "value": 1, "ts": 4},
            ],
        }
    )
    rows = spec_table(windowed).splitlines()[3:]
    assert [row.split("|")[6].strip() for row in rows] == ["a@[0, 10)=1@3", "a@[30, 40)=1@30", ""]
    assert rows[2].split("|")[7].strip() == "dropped (expired-window)"
    grouped = run_spec(
        {
            "join": "table-aggregate",
            "group_by": "g",
            "partitions": 2,
            "events": [{"key": "a", "value": {"g": "x"}, "ts": 3}],
        }
    )
    assert spec_table(grouped).splitlines()[0] == "table-aggregate (count) grouped by g, 2 partitions"


# -- kjoin.load_scenario, kjoin.run and `kjoin run` route the six join names -------------------------


def _write(tmp_path, data, name="scenario.yaml"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("join", AGGREGATE_JOINS)
def test_load_scenario_and_kjoin_run_take_every_seed_000_join(tmp_path, join):
    spec = random_spec(join, random.Random(len(join)))
    path = _write(tmp_path, spec)
    loaded = kjoin.load_scenario(path)
    assert isinstance(loaded, AggregateSpec) and loaded.join == join and loaded.source == str(path)
    trace = kjoin.run(loaded)
    expected = kjoin.run(AggregateSpec.from_dict(spec))
    assert [[o.to_dict() for o in s.outputs] for s in trace] == [[o.to_dict() for o in s.outputs] for s in expected]
    assert [(s.fate, s.reason) for s in trace] == [(s.fate, s.reason) for s in expected]


def test_kjoin_run_prints_the_table_and_jsonl_with_windows(tmp_path, capsys):
    path = _write(tmp_path, PAGE_VIEWS, "views.json")
    assert main(["run", str(path)]) == 0
    table = capsys.readouterr().out
    assert table.startswith("wtable-wtable left join, tumbling windows of 86400000 ms")
    assert "home@[604800000, 691200000): 1-1@604800004" in table
    assert main(["run", str(path), "--format", "jsonl"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["step"] for line in lines] == [0, 1]
    last = lines[1]["outputs"][0]
    assert last["key"] == "home" and last["window"] == {"start_ms": WEEK_MS, "end_ms": WEEK_MS + DAY_MS}
    assert (last["left"], last["right"], last["value"]) == (1, 1, "1-1")


def test_kjoin_run_takes_the_semantics_of_a_seed_000_scenario(tmp_path, capsys):
    """The same wtable-wtable left join under Kafka 4.3 (the right update's lookup of [10, 15), behind the left
    store's retention, finds nothing) and under Kafka 3.3 (its RocksDB store still finds the window)."""
    scenario = {key: value for key, value in BEHIND_RETENTION.items() if key != "variant"}
    assert main(["run", str(_write(tmp_path, scenario))]) == 0
    latest = capsys.readouterr().out.splitlines()
    cells = [cell.strip() for cell in latest[-1].split("|")]
    assert "rules" not in latest[0] and cells[6:] == ["", "no-match (behind-retention)"]
    assert main(["run", str(_write(tmp_path, {**scenario, "semantics": "3.3"}, "old.yaml"))]) == 0
    older = capsys.readouterr().out.splitlines()
    assert "Kafka 3.3 rules" in older[0]
    assert [cell.strip() for cell in older[-1].split("|")][6:] == ["k3@[10, 15): 1-1@14", "joined"]


def test_a_bad_seed_000_scenario_names_the_file_and_field_without_a_traceback(tmp_path, capsys):
    bad = _write(tmp_path, {**PAGE_VIEWS, "selector": "timestamp"})
    assert main(["run", str(bad)]) == 2
    error = capsys.readouterr().err
    assert str(bad) in error and "selector: not a field of a wtable-wtable scenario" in error
    assert "Traceback" not in error
    failing = _write(
        tmp_path,
        {
            "join": "window-aggregate",
            "window": {"size_ms": 10},
            "aggregate": {"sum": "n"},
            "events": [{"key": "a", "value": {"n": "two"}, "ts": 1}],
        },
        "sum.yaml",
    )
    assert main(["run", str(failing)]) == 2
    error = capsys.readouterr().err
    assert "events[0]" in error and "sum of n adder failed" in error and "Traceback" not in error


def test_the_kjoin_command_runs_a_seed_000_file(tmp_path):
    path = _write(
        tmp_path,
        {
            "join": "table-aggregate",
            "group_by": "page",
            "events": [
                {"key": "o1", "value": {"page": "home"}, "ts": 1},
                {"key": "o1", "value": {"page": "cart"}, "ts": 2},
            ],
        },
    )
    done = subprocess.run(
        [sys.executable, "-m", "kjoin.cli", "run", str(path), "--format", "jsonl"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    steps = [json.loads(line) for line in done.stdout.splitlines()]
    assert [[(o["key"], o["value"], o["kind"]) for o in s["outputs"]] for s in steps] == [
        [("home", 1, "aggregate-add")],
        [("home", 0, "aggregate-subtract"), ("cart", 1, "aggregate-add")],
    ]


def test_kjoin_run_passes_the_joiner_to_a_wtable_join(tmp_path):
    loaded = kjoin.load_scenario(_write(tmp_path, PAGE_VIEWS))
    trace = kjoin.run(loaded, lambda today, last_week: {"today": today, "last_week": last_week})
    values = [o.value for s in trace for o in s.outputs]
    assert values == [{"today": 1, "last_week": None}, {"today": 1, "last_week": 1}]
