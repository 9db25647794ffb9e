"""``kjoin diff`` on a topology document: each difference in an output topic charged to the rule or the node's
setting that alone produces it."""

from __future__ import annotations

import copy

import pytest

from kjoin.cli import main
from kjoin.topology.diff import diff
from kjoin.scenario import ScenarioError
from kjoin.topology.diff import setting_location

APP = {
    "name": "orders by customer",
    "partitions": 2,
    "semantics": "3.6",
    "topology": [
        {"name": "orders", "stream": "orders"},
        {"name": "customers", "table": "customers"},
        {"name": "by_customer", "select_key": {"field": "customer"}, "input": "orders"},
        {"name": "enriched", "left_join": ["by_customer", "customers"]},
        {"name": "out", "to": "enriched-orders", "input": "enriched"},
        {"name": "grouped", "group_by_key": True, "input": "by_customer"},
        {"name": "hourly", "windowed_by": {"size_ms": 100, "grace_ms": 50}, "input": "grouped"},
        {"name": "per_hour", "count": True, "input": "hourly"},
        {"name": "counts", "to": "counts", "input": "per_hour"},
    ],
    "events": [
        {"topic": "customers", "key": "c1", "value": "Alice", "ts": 1},
        {"topic": "orders", "key": "o1", "value": {"customer": "c1"}, "ts": 2},
        {"topic": "orders", "key": "o2", "value": {"item": "x"}, "ts": 3},
        {"topic": "orders", "key": "o3", "value": {"customer": "c2"}, "ts": 200},
        {"topic": "orders", "key": "o4", "value": {"customer": "c1"}, "ts": 120},
        {"topic": "orders", "key": "o5", "value": {"item": "y"}, "ts": 201},
    ],
}


def test_the_upgrade_adds_the_null_key_orders_kip_962_keeps_charged_to_relaxed_null_keys():
    result = diff(APP, from_="3.6", to="4.4")
    added = [(d.event, d.change, d.after["topic"], d.after["key"], d.rules) for d in result]
    assert added == [
        (2, "added", "enriched-orders", None, ("relaxed_null_keys",)),
        (5, "added", "enriched-orders", None, ("relaxed_null_keys",)),
    ]
    assert [d.after["value"] for d in result] == ['{"item":"x"}-null', '{"item":"y"}-null']
    assert "relaxed_null_keys (2)" in result.table()


def test_a_windowed_count_grace_is_set_through_the_count_node():
    result = diff(APP, set={"per_hour.grace_ms": 0})
    assert [(d.event, d.change, d.before["topic"], d.rules) for d in result] == [
        (4, "removed", "counts", ("per_hour.grace_ms",))
    ]
    same = diff(APP, set={"hourly.grace_ms": 0})
    assert [d.identity for d in same] == [d.identity for d in result]


def test_a_version_and_a_setting_are_charged_each_to_its_own_differences():
    result = diff(APP, from_="3.6", to="4.4", set={"per_hour.grace_ms": 0})
    assert sorted((d.event, d.rules) for d in result) == [
        (2, ("relaxed_null_keys",)),
        (4, ("per_hour.grace_ms",)),
        (5, ("relaxed_null_keys",)),
    ]


def test_a_join_grace_and_a_table_history_are_node_settings():
    app = copy.deepcopy(APP)
    app["topology"][1]["history_retention_ms"] = 1000
    app["topology"][3]["grace_ms"] = 0
    assert setting_location(app, "enriched.grace_ms") == ("topology", 3, "grace_ms")
    assert setting_location(app, "customers.history_retention_ms") == ("topology", 1, "history_retention_ms")
    assert setting_location(app, "partitions") == ("partitions",)


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("per_hour.grace", "per_hour.grace_ms"),
        ("per_huor.grace_ms", "did you mean per_hour"),
        ("semantics", "--from and --to"),
        ("out.grace_ms", "its settings are out.partitions"),
    ],
)
def test_a_setting_the_document_does_not_have_is_refused_naming_what_it_has(path, says):
    with pytest.raises(ScenarioError, match=says.replace(".", r"\.")):
        diff(APP, set={path: 0})


def test_kjoin_diff_reads_a_topology_file(tmp_path, capsys):
    import yaml

    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump(APP))
    assert main(["diff", str(path), "--from", "3.6", "--to", "4.4"]) == 0
    out = capsys.readouterr().out
    assert "topology orders by customer: 3.6 -> 4.4: 2 differences" in out
    assert "enriched-orders: null:" in out and "relaxed_null_keys" in out
    assert main(["diff", str(path), "--set", "per_hour.grace_ms=0", "--format", "jsonl"]) == 0
    assert '"rules": ["per_hour.grace_ms"]' in capsys.readouterr().out


def test_a_diff_of_one_join_says_it_cannot_see_a_rule_acting_upstream():
    from kjoin import Scenario

    join = Scenario.from_dict(
        {
            "join": "stream-table",
            "variant": "left",
            "events": [
                {"side": "right", "key": "c1", "value": "Alice", "ts": 1},
                {"side": "left", "key": "c1", "value": "o1", "ts": 2},
            ],
        }
    )
    text = diff(join, from_="3.6", to="4.4").table()
    assert "no output changes" in text
    assert "not seen by this diff of one join: relaxed_null_keys also acts upstream" in text
    assert "kjoin diff app.yaml" in text
    assert "not seen" not in diff(APP, from_="3.6", to="4.4").table()
