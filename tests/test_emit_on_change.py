"""KIP-557 in Kafka 2.6.0, 2.6.1 and 2.7.0: a materialized source table drops an update that changes nothing.

``KTableSource`` wrote through ``putIfDifferentValues`` from 2.6.0 (KAFKA-8770) until KAFKA-12508 disabled it again in
2.6.2, 2.7.1 and 2.8.0 (``Semantics.table_source_emits_on_change`` and ``emit_on_change_disabled``). An update whose
value serializes to the bytes the table holds, at a timestamp no older, is neither stored nor forwarded; nor is a
delete of an absent key. The rule in kjoin's processors first, then against the real library on each side of both
boundaries (a table-table join shows it, a stream-table join cannot: its outputs are the same), then ``kjoin diff``.
"""

from __future__ import annotations

import pytest

import kjoin
from kjoin import Fate, Reason, Topology, parse_semantics, run
from kjoin.diff import diff
from kjoin.topology.document import TopologyScenario
from kafka_oracle import topology_oracle
from kafka_oracle.oracle_check import VERSIONS, Harness, kjoin_outputs
from tests.rules import ev, outs, run_events

DROPPING = ("2.6.0", "2.6.1", "2.7.0")
FORWARDING = ("2.5.1", "2.6.2", "2.6.3", "2.7.1", "2.8.2", "4.4")

# A@5 repeats A@1 (dropped in 2.6.0 to 2.7.0, which keep A@1's timestamp: a@3 joins at 3, not 5); A@2 repeats it
# at a newer timestamp than the kept 1, so it is dropped too; A@0 is older than the stored timestamp and is
# forwarded (the time moved back); the deletes of j: the first is of an absent key (dropped, and nothing for a
# left join to delete anyway), the second after J@7 deletes J.
TABLE_TABLE = {
    "join": "table-table",
    "variant": "left",
    "events": [
        ev("L", "k", "A", 1),
        ev("L", "k", "A", 5),
        ev("R", "k", "a", 3),
        ev("L", "k", "A", 2),
        ev("L", "j", None, 6),
        ev("L", "j", "J", 7),
        ev("L", "j", None, 8),
        ev("L", "k", "A", 0),
    ],
}
TABLE_TABLE_2_6_1 = [[("k", "A-null", 1)], [], [("k", "A-a", 3)], [], [], [("j", "J-null", 7)], [("j", "null", 8)],
                     [("k", "A-a", 3)]]  # fmt: skip
TABLE_TABLE_2_6_3 = [[("k", "A-null", 1)], [("k", "A-null", 5)], [("k", "A-a", 5)], [("k", "A-a", 3)], [],
                     [("j", "J-null", 7)], [("j", "null", 8)], [("k", "A-a", 3)]]  # fmt: skip

# The table's idempotent updates change no output of a stream-table join (a table update never triggers one and the
# result carries the stream record's timestamp): only the table records' fates differ.
STREAM_TABLE = {
    "join": "stream-table",
    "variant": "left",
    "events": [ev("R", "k", "a", 5), ev("R", "k", "a", 7), ev("L", "k", "L", 6), ev("R", "j", None, 8),
               ev("L", "k", "M", 8)],
}  # fmt: skip

# A foreign-key join: the repeated order o@3 sends no subscription, the repeated customer C@4 no response; o@1 is
# older than o's stored timestamp, so it goes through, and joins C@1 (the kept timestamp) instead of C@4.
FOREIGN_KEY = {
    "join": "fk",
    "variant": "left",
    "foreign_key": "fk",
    "events": [ev("R", "c", "C", 1), ev("L", "o", {"fk": "c", "v": 1}, 2), ev("L", "o", {"fk": "c", "v": 1}, 3),
               ev("R", "c", "C", 4), ev("L", "o", {"fk": "c", "v": 1}, 1)],
}  # fmt: skip

# A foreign-key join's result is a KTableSource too (2.4 to 3.x): materialized, it drops a tombstone for a row that
# never had a result (the oracle's wide sweep found it on 2.7.0, shrunk from 123 events).
FOREIGN_KEY_RESULT = {
    "join": "fk",
    "variant": "inner",
    "foreign_key": "fk",
    "materialized": True,
    "events": [ev("L", "k6", {"fk": "k1"}, 10), ev("L", "k6", None, 10)],
}


def _run(document: dict, semantics: str) -> kjoin.Trace:
    return run(kjoin.Scenario.from_dict({**document, "semantics": semantics}))


# -- the rule --------------------------------------------------------------------------------------------------------
def test_only_2_6_0_2_6_1_and_2_7_0_drop_idempotent_updates() -> None:
    for version in DROPPING:
        assert parse_semantics(version).drops_idempotent_table_updates, version
    for version in FORWARDING + ("2.5", "2.6.2", "2.7.1", "2.8", "3.0"):
        assert not parse_semantics(version).drops_idempotent_table_updates, version
    # each rule switches it: 2.6.1 with KAFKA-12508, 4.4 without it
    assert not parse_semantics("2.6.1+emit_on_change_disabled").drops_idempotent_table_updates
    assert parse_semantics("4.4-emit_on_change_disabled").drops_idempotent_table_updates
    # the disable means nothing without KIP-557: switching KIP-557 off switches it off too
    assert str(parse_semantics("4.4-table_source_emits_on_change")) == (
        "4.4-table_source_emits_on_change-emit_on_change_disabled"
    )


def test_a_table_table_join_emits_nothing_for_an_idempotent_update_and_keeps_the_old_timestamp() -> None:
    dropping, forwarding = _run(TABLE_TABLE, "2.6.1"), _run(TABLE_TABLE, "2.6.3")
    assert [outs(step) for step in dropping] == TABLE_TABLE_2_6_1
    assert [outs(step) for step in forwarding] == TABLE_TABLE_2_6_3
    assert [(step.fate, step.reason) for step in dropping][1] == (Fate.DROPPED, Reason.IDEMPOTENT_UPDATE)
    assert [index for index, step in enumerate(dropping) if step.reason is Reason.IDEMPOTENT_UPDATE] == [1, 3, 4]
    assert "is an idempotent table update (the table holds A@1)" in dropping[1].explain
    # the store kept A@1: the dropped update changed no state
    assert dropping.state_at(1).table("left") == dropping.state_at(0).table("left")
    assert [row["ts"] for row in dropping.state_at(3).table("left")] == [1]
    assert [row["ts"] for row in forwarding.state_at(3).table("left")] == [2]


@pytest.mark.parametrize("variant", ["inner", "left", "outer"])
def test_a_value_is_the_same_when_its_bytes_are(variant: str) -> None:
    """Kafka compares serialized bytes: the string "1" and the number 1 are both the text 1 (kjoin.serde)."""
    events = [
        ev("L", "k", "1", 1),
        ev("L", "k", 1, 2),
        ev("L", "k", {"b": 1, "a": 2}, 3),
        ev("L", "k", {"a": 2, "b": 1}, 4),
    ]
    trace = run_events("table-table", variant, events, semantics="2.6.1")
    assert [step.reason is Reason.IDEMPOTENT_UPDATE for step in trace] == [False, True, False, True]


def test_a_stream_table_join_outputs_the_same_and_tells_the_table_records_fate() -> None:
    dropping, forwarding = _run(STREAM_TABLE, "2.6.1"), _run(STREAM_TABLE, "2.6.3")
    assert [outs(step) for step in dropping] == [outs(step) for step in forwarding]
    assert [outs(step) for step in dropping][2] == [("k", "L-a", 6)]
    assert [step.reason for step in dropping][:2] == [Reason.TABLE_UPDATE, Reason.IDEMPOTENT_UPDATE]
    assert dropping[3].reason is Reason.IDEMPOTENT_UPDATE  # a delete of an absent key
    assert [step.reason for step in forwarding][:2] == [Reason.TABLE_UPDATE, Reason.TABLE_UPDATE]


def test_a_foreign_key_join_sends_nothing_for_an_idempotent_update() -> None:
    dropping, forwarding = _run(FOREIGN_KEY, "2.6.1"), _run(FOREIGN_KEY, "2.6.3")
    inputs = [step for step in dropping if step.message is None]
    assert [step.reason for step in inputs][2:4] == [Reason.IDEMPOTENT_UPDATE] * 2
    assert [o.ts for o in forwarding.outputs] == [2, 3, 4, 4]
    rendered = [o.ts for o in dropping.outputs]
    assert rendered == [2, 1]  # o@2 joins C@1; o@1 joins the kept C@1


def test_a_materialized_foreign_key_result_drops_a_tombstone_for_a_row_without_a_result() -> None:
    dropping = _run(FOREIGN_KEY_RESULT, "2.7.0")
    assert dropping.outputs == []
    assert any(step.reason is Reason.IDEMPOTENT_UPDATE for step in dropping)
    assert [(o.key, o.tombstone) for o in _run(FOREIGN_KEY_RESULT, "2.7.1").outputs] == [("k6", True)]


def test_a_global_table_drops_it_too_and_its_join_outputs_the_same() -> None:
    document = {
        "join": "stream-globaltable",
        "variant": "left",
        "events": [ev("R", "k", "a", 1), ev("R", "k", "a", 2), ev("L", "k", "L", 3)],
    }
    dropping, forwarding = _run(document, "2.7.0"), _run(document, "2.7.1")
    assert [outs(step) for step in dropping] == [outs(step) for step in forwarding] == [[], [], [("k", "L-a", 3)]]
    assert dropping[1].reason is Reason.IDEMPOTENT_UPDATE and forwarding[1].fate is Fate.STORED


def test_a_cached_source_table_drops_before_its_cache() -> None:
    document = {**TABLE_TABLE, "caching": ["left"]}
    dropping = _run(document, "2.6.1")
    assert dropping[1].reason is Reason.IDEMPOTENT_UPDATE  # not held in the cache
    assert [outs(step) for step in dropping] == TABLE_TABLE_2_6_1  # the driver commits after every record


def test_a_topology_drops_in_a_source_table_and_in_a_to_table_only_a_join_materializes() -> None:
    """A source table keeps a store (the harness names it), read by a join or only turned into a stream; a stream's
    toTable keeps one only when a join or a named store materializes it."""
    events = [{"topic": "t", "key": "k", "value": "A", "ts": 1}, {"topic": "t", "key": "k", "value": "A", "ts": 2}]

    def outputs(to_table: bool, joined: bool) -> list:
        b = Topology(semantics="2.6.1")
        table = b.stream("t").to_table() if to_table else b.table("t")
        if joined:
            table.join(b.table("u")).to_stream().to("joined")
        table.to_stream().to("out")
        return [(o.key, o.value, o.ts) for o in b.run(events).outputs("out")]

    assert outputs(to_table=False, joined=False) == outputs(to_table=False, joined=True) == [("k", "A", 1)]
    assert outputs(to_table=True, joined=False) == [("k", "A", 1), ("k", "A", 2)]
    assert outputs(to_table=True, joined=True) == [("k", "A", 1)]


# -- against the real library ----------------------------------------------------------------------------------------
def test_the_idempotent_update_boundaries_are_judged() -> None:
    judges = {version.version for version in VERSIONS}
    assert {"2.5.1", "2.6.1", "2.6.2", "2.7.0", "2.7.1"} <= judges


@pytest.mark.parametrize("version", ["2.5.1", "2.6.1", "2.6.2", "2.6.3", "2.7.0", "2.7.1"])
def test_kafka_drops_an_idempotent_update_from_2_6_0_to_2_7_0_only(built, version: str) -> None:
    drops = parse_semantics(version).drops_idempotent_table_updates
    assert drops == (version in DROPPING)
    with Harness(version) as harness:
        table_table = kjoin.Scenario.from_dict({**TABLE_TABLE, "semantics": version})
        kafka = harness.run(table_table)
        assert kafka == kjoin_outputs(table_table)
        expected = TABLE_TABLE_2_6_1 if drops else TABLE_TABLE_2_6_3
        assert [[(k, v, ts) for k, v, ts in step] for step in kafka] == [
            [(k, v if v != "null" else None, ts) for k, v, ts in step] for step in expected
        ]
        stream_table = kjoin.Scenario.from_dict({**STREAM_TABLE, "semantics": version})
        assert (
            harness.run(stream_table)
            == kjoin_outputs(stream_table)
            == [[], [], [["k", "L-a", 6]], [], [["k", "M-a", 8]]]
        )
        for document in (FOREIGN_KEY, FOREIGN_KEY_RESULT):
            scenario = kjoin.Scenario.from_dict({**document, "semantics": version})
            assert harness.run(scenario) == kjoin_outputs(scenario), (version, document["variant"])


# -- kjoin diff ------------------------------------------------------------------------------------------------------
def test_kjoin_diff_charges_2_6_1_to_2_6_3_to_kafka_12508_alone() -> None:
    result = diff(TABLE_TABLE, from_="2.6.1", to="2.6.3")
    assert result.switches == ("emit_on_change_disabled",)
    assert {d.rules for d in result} == {("emit_on_change_disabled",)} and not any(d.together for d in result)
    # the two records 2.6.1 drops and that 2.6.3 forwards, and a@3, which joins at 5 instead of 3
    assert sorted({d.step for d in result}) == [1, 2, 3]
    assert diff(STREAM_TABLE, from_="2.6.1", to="2.6.3").switches == ("emit_on_change_disabled",)
    assert len(diff(STREAM_TABLE, from_="2.6.1", to="2.6.3")) == 0


def test_kjoin_diff_on_the_command_line_names_the_rule(tmp_path, capsys) -> None:
    import yaml

    from kjoin.cli import main

    path = tmp_path / "emit-on-change.yaml"
    path.write_text(yaml.safe_dump(TABLE_TABLE))
    assert main(["diff", str(path), "--from", "2.6.1", "--to", "2.6.3"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("table-table left join: 2.6.1 -> 2.6.3: ")
    assert "charged: emit_on_change_disabled (" in out
    assert "| left A@5 (key k)" in out and "| added" in out


# -- in a topology: which KTableSource Kafka materializes --------------------------------------------------------------
# A foreign-key join's result read only by a view (mapValues) has no store in Kafka: its KTableSource forwards the
# tombstone of a row that never joined. c1's update keeps its foreign key r1 (no region): before KAFKA-16407 the
# subscription asks for a tombstone when there is no region (PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE).
FK_RESULT_VIEW = [
    {"name": "customers", "table": "customers"},
    {"name": "addresses", "table": "addresses"},
    {"name": "regions", "table": "regions"},
    {"name": "j1", "outer_join": ["customers", "addresses"], "joiner": "object"},
    {"name": "j2", "join": ["j1", "regions"], "foreign_key": "left.r"},
    {"name": "checked", "map_values": {"fail_on": "3"}, "input": "j2"},
    {"name": "out", "to": "out", "input": "checked"},
]
FK_RESULT_EVENTS = [
    {"topic": "customers", "key": "c1", "value": {"r": "r1", "v": "C2"}, "ts": 17},
    {"topic": "addresses", "key": "c1", "value": "A3", "ts": 17},
    {"topic": "customers", "key": "c2", "value": {"r": "r2", "v": "C5"}, "ts": 18},
    {"topic": "addresses", "key": "c2", "value": "A4", "ts": 19},
]
# a source table keeps a store however it is read, named or not: it drops the repeated A and the delete of an
# absent key, read only by a sink or by a windowed count of its stream (the walk's minimal cases on 2.7.0)
SOURCE_ONLY_TO_STREAM = [
    {"name": "t2", "table": "t2"},
    {"name": "to-out1", "to": "out1", "input": "t2"},
    {"name": "t3", "table": "t3", "store": "t3-store"},
    {"name": "n3", "to_stream": True, "input": "t3"},
    {"name": "n4", "group_by_key": True, "input": "n3"},
    {"name": "n5", "windowed_by": {"size_ms": 10, "grace_ms": 0}, "input": "n4"},
    {"name": "n6", "count": True, "input": "n5"},
    {"name": "to-out2", "to": "out2", "input": "n6"},
]
SOURCE_EVENTS = [
    {"topic": "t2", "key": "k2", "value": "A-B", "ts": 746479},
    {"topic": "t2", "key": "k2", "value": "A-B", "ts": 860160},
    {"topic": "t2", "key": "k3", "value": None, "ts": 860161},
    {"topic": "t3", "key": "k22", "value": None, "ts": 397210},
]
# a stream's toTable read only by a view: no store, so it forwards the repeated A
TO_TABLE_VIEW = [
    {"name": "st", "stream": "st"},
    {"name": "t", "to_table": True, "input": "st"},
    {"name": "checked", "map_values": {"fail_on": "3"}, "input": "t"},
    {"name": "s", "to_stream": True, "input": "checked"},
    {"name": "out", "to": "out", "input": "s"},
]
TO_TABLE_EVENTS = [
    {"topic": "st", "key": "c1", "value": "A", "ts": 17},
    {"topic": "st", "key": "c1", "value": "A", "ts": 18},
    {"topic": "st", "key": "c2", "value": None, "ts": 18},
]


def _topology_scenario(nodes: list, events: list, version: str, partitions: int) -> TopologyScenario:
    return TopologyScenario.from_dict(
        {"partitions": partitions, "semantics": version, "topology": nodes, "events": events}
    )


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("version", ["2.6.1", "2.7.0", "2.7.1"])
def test_a_result_read_only_by_a_view_keeps_no_store_and_drops_nothing_as_in_kafka(built, version, partitions):
    """KIP-557 drops in a ``KTableSource`` with a store only: a foreign-key join's result or a ``toTable`` that no
    join, group-by or named store materializes forwards every update, the tombstone of a row that never joined too;
    named (``Materialized.as``), the result drops it on 2.6.0 to 2.7.0."""
    named = [{**node, "store": "j2-named"} if node["name"] == "j2" else node for node in FK_RESULT_VIEW]
    cases = [
        _topology_scenario(FK_RESULT_VIEW, FK_RESULT_EVENTS, version, partitions),
        _topology_scenario(named, FK_RESULT_EVENTS, version, partitions),
        _topology_scenario(TO_TABLE_VIEW, TO_TABLE_EVENTS, version, partitions),
        _topology_scenario(SOURCE_ONLY_TO_STREAM, SOURCE_EVENTS, version, partitions),
    ]
    answers = topology_oracle.run_batch(version, cases)
    for scenario, answer in zip(cases, answers):
        assert topology_oracle.difference(scenario, answer, version) is None
    view, named_result, to_table, source = (answer["outputs"] for answer in answers)
    assert view[1] == [["out", "c1", None, 17]] and view[3] == [["out", "c2", None, 19]]
    drops = parse_semantics(version).drops_idempotent_table_updates
    assert named_result[1] == ([] if drops else [["out", "c1", None, 17]])
    assert to_table[1] == [["out", "c1", "A", 18]] and to_table[2] == [["out", "c2", None, 18]]
    reasons = [step.reason for step in cases[1].run().steps]
    assert (Reason.IDEMPOTENT_UPDATE in reasons) is drops
    repeated, tombstone = [["out1", "k2", "A-B", 860160]], [["out1", "k3", None, 860161]]
    counted = [["out2", "[k22@397210/397220]", "1", 397210]]  # a windowed count counts a null value too
    assert source[1:] == ([[], [], []] if drops else [repeated, tombstone, counted])
