"""The title line of ``kjoin run``'s table (:func:`kjoin.render.trace_table`): every option
that changes a foreign-key join or a join over versioned tables is named."""

from __future__ import annotations

import pytest

import kjoin
from kjoin.render import scenario_title, trace_table

LEFT = {"side": "left", "key": "A", "value": {"fk": "Y"}, "ts": 2}
RIGHT = {"side": "right", "key": "Y", "value": "bar", "ts": 1}


def title(**data) -> str:
    return trace_table(kjoin.run(kjoin.Scenario.from_dict(data))).splitlines()[0]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, "fk inner join, semantics 3.7, foreign key fk, hash check on, delivery immediate"),
        (
            {"hash_check": False, "delivery": "explicit"},
            "fk inner join, semantics 3.7, foreign key fk, hash check off, delivery explicit",
        ),
        (
            {"delivery": {"mode": "random", "seed": 7}},
            "fk inner join, semantics 3.7, foreign key fk, hash check on, delivery random (seed 7)",
        ),
        (
            {"delivery": {"mode": "random", "seed": 7, "wait_for_row": True}, "partitions": 2},
            "fk inner join, semantics 3.7, 2 partitions, foreign key fk, hash check on, "
            "delivery random (seed 7, wait for row)",
        ),
    ],
)
def test_a_foreign_key_join_names_its_key_hash_check_and_delivery(options, expected):
    assert (
        title(join="fk", variant="inner", semantics="3.7", foreign_key="fk", events=[RIGHT, LEFT], **options)
        == expected
    )


def test_a_nested_foreign_key_and_versioned_fk_tables():
    events = [RIGHT, {"side": "left", "key": "A", "value": {"c": {"id": "Y"}}, "ts": 2}]
    assert title(
        join="fk",
        variant="left",
        semantics="3.7",
        foreign_key="c.id",
        events=events,
        left={"versioned": True, "history_retention_ms": 50},
    ) == (
        "fk left join, semantics 3.7, foreign key c.id, hash check on, delivery immediate, "
        "left table versioned (history retention 50 ms)"
    )


def test_a_stream_table_join_names_its_versioned_table_and_grace():
    events = [{"side": "right", "key": "k", "value": "a", "ts": 1}, {"side": "left", "key": "k", "value": "A", "ts": 2}]
    right = {"versioned": True, "history_retention_ms": 20}
    assert title(join="stream-table", variant="left", semantics="3.6", right=right, grace_ms=5, events=events) == (
        "stream-table left join, semantics 3.6, right table versioned (history retention 20 ms), grace period 5 ms"
    )
    assert title(join="stream-table", variant="inner", semantics="3.5", right=right, events=events) == (
        "stream-table inner join, semantics 3.5, right table versioned (history retention 20 ms)"
    )


@pytest.mark.parametrize("mode", ["final", "attempt1", "attempt2"])
def test_a_table_table_join_over_versioned_tables_names_sides_retention_and_mode(mode):
    events = [
        {"side": "left", "key": "k", "value": "a0", "ts": 0},
        {"side": "right", "key": "k", "value": "b2", "ts": 2},
    ]
    versioned = {"versioned": True, "history_retention_ms": 100}
    assert title(
        join="table-table",
        variant="inner",
        semantics="3.5",
        left=versioned,
        right=versioned,
        versioned_mode=mode,
        events=events,
    ) == (
        "table-table inner join, semantics 3.5, left and right tables versioned (history retention 100 ms), "
        f"versioned_mode {mode}"
    )


def test_two_versioned_tables_with_different_retentions_and_one_versioned_side():
    events = [{"side": "left", "key": "k", "value": "a0", "ts": 0}]
    assert title(
        join="table-table",
        variant="left",
        semantics="3.5",
        left={"versioned": True, "history_retention_ms": 10},
        right={"versioned": True, "history_retention_ms": 30},
        events=events,
    ) == (
        "table-table left join, semantics 3.5, left table versioned (history retention 10 ms), "
        "right table versioned (history retention 30 ms), versioned_mode final"
    )
    assert title(
        join="table-table",
        variant="outer",
        semantics="3.5",
        right={"versioned": True, "history_retention_ms": 30},
        events=events,
    ) == (
        "table-table outer join, semantics 3.5, right table versioned (history retention 30 ms), versioned_mode final"
    )


def test_joins_without_these_options_keep_their_title():
    scenario = kjoin.Scenario.from_notation(
        "stream-stream",
        "left",
        left="3:A",
        right="4:a",
        semantics="3.1",
        window={"before_ms": 15, "after_ms": 15, "grace_ms": 5},
    )
    assert scenario_title(scenario) == "stream-stream left join, semantics 3.1, window -15/+15, grace 5"
    plain = kjoin.Scenario.from_notation("table-table", "inner", left="1:A", right="2:a", semantics="3.5")
    assert scenario_title(plain) == "table-table inner join, semantics 3.5"


def test_the_title_names_the_topology_around_the_join():
    from kjoin import Scenario
    from kjoin.render import scenario_title

    chained = Scenario.from_dict(
        {
            "join": "table-table",
            "variant": "inner",
            "then": [{"variant": "left"}],
            "materialized": True,
            "send_old_values": True,
            "caching": True,
            "commit_every": 3,
            "events": [],
        }
    )
    assert scenario_title(chained) == (
        "table-table inner join, semantics 4.4, then join 2: left, result materialized, old values sent, "
        "caching left and right and result, commit every 3 records"
    )
    window = {"before_ms": 1, "after_ms": 2, "grace_ms": 0}
    selfish = Scenario.from_dict(
        {
            "join": "stream-stream",
            "variant": "inner",
            "window": window,
            "self_join": True,
            "optimize": True,
            "events": [],
        }
    )
    assert scenario_title(selfish).endswith("self-join, single store (optimized)")
