"""The course's tables (kjoin_viz.course, the one module that owns them) agree with the engine's trace."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import kjoin
import kjoin_viz.course
from kjoin_viz.course import clock_table, held_at_end, result_table, results_by_step, steps_table, table_history

WINDOW = {"before_ms": 15, "after_ms": 15, "grace_ms": 5}


def _seed(variant: str = "left") -> kjoin.Scenario:
    return kjoin.Scenario.from_notation(
        "stream-stream", variant, left="1:null, 3:A, 40:E, 100:G", right="4:a, 80:f, 130:h", window=WINDOW
    )


def test_steps_table_shows_fate_reason_and_until():
    trace = kjoin.run(_seed("left"))
    shown = steps_table(trace)
    table = shown.frame
    assert len(shown) == len(trace.steps) and table["step"].tolist() == list(range(len(trace.steps)))
    assert table.loc[0, "fate"] == "dropped: null value"
    assert table.loc[1, "fate"] == "held until stream time passes 23"
    assert table.loc[2, "outputs"] == "A-a@4"
    assert table.loc[2, "fate"] == "joined: 1 result"
    assert table.loc[6, "outputs"] == "G-null@100"  # h@130 releases G@100
    assert table.loc[6, "fate"] == "no match: no output"


def test_result_table_keeps_the_newest_output_per_key_and_tombstones_delete():
    events = [
        {"side": "left", "key": "alice", "value": "A1", "ts": 1},
        {"side": "right", "key": "alice", "value": "x", "ts": 2},
        {"side": "left", "key": "bob", "value": "B1", "ts": 3},
        {"side": "left", "key": "alice", "value": None, "ts": 4},
    ]
    trace = kjoin.run(kjoin.Scenario.from_records("table-table", "left", events))
    assert result_table(trace, 1).values.tolist() == [["alice", "A1-x", 2]]
    assert result_table(trace, 2).values.tolist() == [["alice", "A1-x", 2], ["bob", "B1-null", 3]]
    assert result_table(trace).values.tolist() == [["bob", "B1-null", 3]]  # alice's tombstone removed it
    with pytest.raises(IndexError):
        result_table(trace, 4)


def test_held_at_end_lists_the_outer_join_buffer():
    held = held_at_end(kjoin.run(_seed("outer")))
    assert held[["store", "key", "ts", "value"]].values.tolist() == [["outer-join buffer", "k", 130, "h"]]
    assert "150" in held.loc[0, "detail"]
    assert held_at_end(kjoin.run(_seed("inner"))).empty


def test_clock_table_shows_each_tasks_stream_time_after_each_step():
    events = [
        {"side": "left", "key": "alice", "value": "o1", "ts": 1},
        {"side": "left", "key": "bob", "value": "o2", "ts": 2},
        {"side": "right", "key": "alice", "value": "a", "ts": 3},
        {"side": "left", "key": "alice", "value": "o4", "ts": 2},
    ]
    trace = kjoin.run(
        kjoin.Scenario.from_records(
            "stream-stream", "inner", events, partitions=2, window={"before_ms": 5, "after_ms": 5, "grace_ms": 0}
        )
    )
    table = clock_table(trace)
    assert list(table.columns[:3]) == ["task", "record", "stream time"]
    assert table["task"].tolist() == [1, 0, 1, 1]  # alice and bob land in different partitions
    assert table["stream time"].tolist() == [1, 2, 3, 3]  # o4@2 is late: stream time stays at 3
    assert table.loc[3, "record"] == "left o4@2"
    assert table["right window observed"].isna().tolist() == [True, True, False, False]


def test_results_by_step_shows_a_record_cache_agreeing_only_at_commits():
    events = [
        {"side": "left", "key": "alice", "value": "A1", "ts": 1},
        {"side": "right", "key": "alice", "value": "x", "ts": 2},
        {"side": "left", "key": "alice", "value": "A2", "ts": 3},
        {"side": "left", "key": "bob", "value": "B1", "ts": 4},
    ]
    plain = kjoin.Scenario.from_dict({"join": "table-table", "variant": "left", "events": events})
    cached = kjoin.Scenario.from_dict(
        {"join": "table-table", "variant": "left", "events": events, "caching": True, "commit_every": 3}
    )
    frame = results_by_step({"plain": kjoin.run(plain), "cached": kjoin.run(cached)})
    assert frame["record"].tolist() == ["left alice A1@1", "right alice x@2", "left alice A2@3", "left bob B1@4"]
    assert frame.loc[0, "plain"] == "alice: A1-null"
    assert frame.loc[0, "cached"] == "(empty)"  # held in the cache until the commit after 3 records
    assert frame.loc[2, "cached"] == "alice: A2-x"
    assert frame["same"].tolist() == [False, False, True, False]
    with pytest.raises(ValueError, match="same input"):
        results_by_step(
            {
                "a": kjoin.run(plain),
                "b": kjoin.run(
                    kjoin.Scenario.from_dict({"join": "table-table", "variant": "left", "events": events[:2]})
                ),
            }
        )


def test_table_history_keeps_the_newest_value_per_key_and_tombstones_delete():
    events = [
        {"side": "left", "key": "alice", "value": "Berlin", "ts": 1},
        {"side": "left", "key": "bob", "value": "Rome", "ts": 2},
        {"side": "left", "key": "alice", "value": "Paris", "ts": 3},
        {"side": "left", "key": "alice", "value": None, "ts": 4},
    ]
    history = table_history(kjoin.run(kjoin.Scenario.from_records("table-table", "inner", events)))
    assert history["left table"].tolist() == [
        "alice = Berlin",
        "alice = Berlin, bob = Rome",
        "alice = Paris, bob = Rome",
        "bob = Rome",
    ]
    assert history.loc[3, "record"] == "left alice null@4"
    assert table_history(kjoin.run(kjoin.Scenario.from_records("table-table", "inner", events[:1])), "right")[
        "right table"
    ].tolist() == ["(empty)"]


def test_the_course_has_one_steps_table_and_one_module_for_its_tables():
    assert importlib.util.find_spec("kjoin_viz.lesson_tables") is None  # merged into kjoin_viz.course
    assert callable(kjoin_viz.course.steps_table)
    sources = []
    for path in sorted((Path(__file__).parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        sources += ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert sources and not [s for s in sources if "lesson_tables" in s]
    assert sum("from kjoin_viz.course import" in s for s in sources) >= 5
