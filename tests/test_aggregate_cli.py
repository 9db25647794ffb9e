"""The seed-000 joins as ``kjoin run`` prints them: the table format names the windows."""

from __future__ import annotations

from kjoin.aggregate_spec import run_spec, spec_table
from kjoin.aggregates import DAY_MS, WEEK_MS

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
    windowed = run_spec({"join": "window-aggregate", "window": {"size_ms": 10, "grace_ms": 2}, "events": [
        {"key": "a", "value": 1, "ts": 3}, {"key": "a", "value": 1, "ts": 30}, {"key": "a", "value": 1, "ts": 4}]})
    rows = spec_table(windowed).splitlines()[3:]
    assert [row.split("|")[6].strip() for row in rows] == ["a@[0, 10)=1@3", "a@[30, 40)=1@30", ""]
    assert rows[2].split("|")[7].strip() == "dropped (expired-window)"
    grouped = run_spec({"join": "table-aggregate", "group_by": "g", "partitions": 2,
                        "events": [{"key": "a", "value": {"g": "x"}, "ts": 3}]})
    assert spec_table(grouped).splitlines()[0] == "table-aggregate (count) grouped by g, 2 partitions"
