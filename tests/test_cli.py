"""The ``kjoin`` command: ``kjoin run SCENARIO`` (table and JSON lines) and ``kjoin table``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kjoin.cli import main

SCENARIO = {
    "join": "stream-stream",
    "variant": "left",
    "semantics": "3.1",
    "window": {"before_ms": 15, "after_ms": 15, "grace_ms": 5},
    "events": [
        {"side": "left", "key": "k", "value": "A", "ts": 3},
        {"side": "right", "key": "k", "value": "a", "ts": 4},
        {"side": "left", "key": "k", "value": None, "ts": 5},
        {"side": "left", "key": "j", "value": "J", "ts": 30},
    ],
}


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(SCENARIO), encoding="utf-8")
    return path


def test_run_prints_one_json_object_per_input_step(scenario_file, capsys):
    assert main(["run", str(scenario_file), "--format", "jsonl"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["step"] for line in lines] == [0, 1, 2, 3]
    assert lines[1]["input"] == {"side": "right", "key": "k", "value": "a", "ts": 4, "partition": 0, "offset": 0}
    output = lines[1]["outputs"][0]
    assert {k: output[k] for k in ("key", "left", "right", "value", "ts", "tombstone")} == {
        "key": "k",
        "left": "A",
        "right": "a",
        "value": "A-a",
        "ts": 4,
        "tombstone": False,
    }
    assert (lines[0]["fate"], lines[0]["reason"], lines[0]["until_ms"]) == ("buffered", "window-open", 23)
    assert (lines[2]["fate"], lines[2]["reason"]) == ("dropped", "null-value")
    assert all(line["explain"] for line in lines)


def test_run_json_scenarios_too_and_prints_a_readable_table_by_default(tmp_path, capsys):
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(SCENARIO), encoding="utf-8")
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "stream-stream left join, semantics 3.1, window -15/+15, grace 5"
    assert "A-a@4" in out and "buffered (window-open) until 23" in out and "dropped (null-value)" in out


def test_the_same_scenario_prints_the_same_bytes(scenario_file, capsys):
    main(["run", str(scenario_file), "--format", "jsonl"])
    first = capsys.readouterr().out
    main(["run", str(scenario_file), "--format", "jsonl"])
    assert capsys.readouterr().out == first


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            "join: stream-stream\nvariant: left\nevents:\n  - {side: left, key: k, value: A, ts: x}\n",
            "events[0].ts: expected a non-negative integer",
        ),
        (
            "join: stream-stream\nvariant: left\nwindow: {before_ms: 1, after_ms: 1}\n"
            "events:\n  - {side: up, key: k, value: A, ts: 1}\n",
            "events[0].side: expected left or right, got 'up'",
        ),
        (
            "join: stream-stream\nvariant: left\nwindow: {before_ms: 1, after_ms: 1}\n"
            "events:\n  - {side: left, value: A, ts: 1}\n",
            "events[0]: missing field 'key' (write null for a null key or value)",
        ),
        (
            "join: stream-stream\nvariant: full\nevents: []\n",
            "variant: expected one of inner | left | outer, got 'full'",
        ),
        ("join: stream-stream\nvariant: left\nevents: []\n", "window: a stream-stream join needs"),
        ("join: [unclosed\n", "not valid YAML"),
        ("join: table-table\nvariant: left\nevents: []\nwindows: {}\n", "unknown field 'windows'"),
        (
            "join: table-table\nvariant: left\npartitions: 2\n"
            "events:\n  - {side: left, key: k, value: A, ts: 1, partition: 2}\n",
            "events[0].partition: expected an integer from 0 to 1",
        ),
    ],
)
def test_a_scenario_that_cannot_run_exits_non_zero_naming_file_field_and_record(tmp_path, capsys, document, message):
    path = tmp_path / "bad.yaml"
    path.write_text(document, encoding="utf-8")
    assert main(["run", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"kjoin: {path}: ")
    assert message in captured.err
    assert "Traceback" not in captured.err


def test_table_prints_the_seeds_kind_of_table(capsys):
    assert (
        main(
            [
                "table",
                "--join",
                "stream-stream",
                "--left",
                "1:null, 3:A, 5:B",
                "--right",
                "2:null, 4:a",
                "--window",
                "15",
                "--grace",
                "5",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert [cell.strip() for cell in lines[0].split("|")] == [
        "ts",
        "left input",
        "right input",
        "inner",
        "left",
        "outer",
    ]
    rows = [[cell.strip() for cell in line.split("|")] for line in lines[2:]]
    assert rows == [
        ["1", "null", "", "", "", ""],
        ["2", "", "null", "", "", ""],
        ["3", "A", "", "", "", ""],
        ["4", "", "a", "A-a", "A-a", "A-a"],
        ["5", "B", "", "B-a", "B-a", "B-a"],
    ]


def test_table_shows_other_eras_and_omits_joins_an_era_lacks(capsys):
    assert (
        main(["table", "--join", "stream-table", "--left", "1:null, 3:A", "--right", "2:a", "--semantics", "0.10.0"])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert [cell.strip() for cell in lines[0].split("|")] == ["ts", "left input", "right input", "left"]
    assert lines[2].split("|")[-1].strip() == "null-null"


def test_table_refuses_bad_notation_and_missing_windows(capsys):
    assert main(["table", "--join", "stream-table", "--left", "1:A, x"]) == 2
    assert "--left: item 2 'x' is not ts:value" in capsys.readouterr().err
    assert main(["table", "--join", "stream-stream", "--left", "1:A"]) == 2
    assert "--window (or --before and --after) is needed" in capsys.readouterr().err


def test_table_offers_only_the_primary_key_joins(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["table", "--join", "fk", "--left", "1:A"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'fk'" in capsys.readouterr().err


def test_the_console_script_runs(scenario_file):
    script = Path(sys.executable).parent / "kjoin"
    result = subprocess.run(
        [str(script), "run", str(scenario_file), "--format", "jsonl"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 4


def test_run_names_the_foreign_key_options_in_the_title(tmp_path, capsys):
    path = tmp_path / "fk.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "join": "fk",
                "variant": "inner",
                "semantics": "3.7",
                "foreign_key": "fk",
                "delivery": "explicit",
                "hash_check": False,
                "events": [
                    {"side": "right", "key": "Y", "value": "bar", "ts": 1},
                    {"side": "left", "key": "A", "value": {"fk": "Y"}, "ts": 2},
                    {"deliver": "all"},
                ],
            }
        ),
        encoding="utf-8",
    )
    assert main(["run", str(path)]) == 0
    assert (
        capsys.readouterr().out.splitlines()[0]
        == "fk inner join, semantics 3.7, foreign key fk, hash check off, delivery explicit"
    )
