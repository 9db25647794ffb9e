"""A windowed aggregate's store keeps a session ``gap + grace`` past its end, a window ``size + grace``, from Kafka
3.0; one day before.

KAFKA-7106 (3.0, apache/kafka#10378) removed the Windows API KIP-328 deprecated: before it, an application's
``SessionWindows.with(gap).grace(g)`` kept ``SessionWindows.maintainMs()`` (one day, or the gap if larger) as its
store's retention (``SessionWindowedKStreamImpl.materialize`` without ``Materialized.withRetention``), as time
windows kept ``Windows.maintainMs()`` (``Semantics.window_retention_size_and_grace``). A session table's getter (a
windowed table's join) then finds a session long after its grace; and a gap plus grace longer than a day is refused.
A single ``wtable-wtable`` scenario (two windowed counts joined) follows the same rule for time windows.
"""

from __future__ import annotations

import pytest

from kjoin import TopologyError, parse_semantics
from kjoin.engine.aggregates import TimeWindows, run_window_aggregate
from kjoin.joins.session_aggregate import SessionWindows
from kjoin.scenario.aggregate import AggregateSpec
from kjoin.topology.document import TopologyScenario
from kafka_oracle import topology_oracle
from kafka_oracle.oracle_check import Harness, kjoin_outputs


def _counted(n: int, windows: dict) -> list[dict]:
    return [
        {"name": f"s{n}", "stream": f"s{n}"},
        {"name": f"g{n}", "group_by_key": True, "input": f"s{n}"},
        {"name": f"w{n}", "windowed_by": windows, "input": f"g{n}"},
        {"name": f"c{n}", "count": True, "input": f"w{n}"},
    ]


def _joined(windows: dict) -> list[dict]:
    """Two session-windowed counts joined window by window (a windowed table join: each side's getter looks the
    other's session up)."""
    return [*_counted(1, windows), *_counted(2, windows), {"name": "j", "join": ["c1", "c2"]},
            {"name": "o", "to": "out", "input": "j"}]  # fmt: skip


# k's session [0, 0] on s1; x at 200 s moves s1's store past k's segment (segments of 60 s when the retention is
# gap + grace); then k at 0 on s2 (s2's own stream time is 0: not late) looks k's session [0, 0] up on s1's side
EVENTS = [
    {"topic": "s1", "key": "k", "value": "a", "ts": 0},
    {"topic": "s1", "key": "x", "value": "b", "ts": 200_000},
    {"topic": "s2", "key": "k", "value": "c", "ts": 0},
]
SESSIONS = {"inactivity_gap_ms": 10, "grace_ms": 0}


def _scenario(version: str, windows: dict = SESSIONS) -> TopologyScenario:
    return TopologyScenario.from_dict({"semantics": version, "topology": _joined(windows), "events": EVENTS})


def test_before_3_0_a_session_store_keeps_a_day_or_the_gap() -> None:
    windows = SessionWindows(gap_ms=10, grace_ms=5)
    assert windows.store_retention_ms(parse_semantics("2.8")) == 24 * 60 * 60 * 1000
    assert SessionWindows(gap_ms=2 * 86_400_000).store_retention_ms(parse_semantics("2.8")) == 2 * 86_400_000
    assert windows.store_retention_ms(parse_semantics("3.0")) == 15


def test_a_session_table_is_found_after_its_grace_before_3_0_only() -> None:
    assert [(str(o.key), o.value) for o in _scenario("2.8").run().outputs("out")] == [("[k@0/0]", "1-1")]
    assert _scenario("3.0").run().outputs("out") == []


def test_before_3_0_a_gap_and_grace_beyond_a_day_are_refused() -> None:
    long_grace = {"inactivity_gap_ms": 10, "grace_ms": 86_400_000}
    with pytest.raises(TopologyError, match=r"more than the session store's retention 86400000 .* semantics 3.0"):
        _scenario("2.8", long_grace).run()
    # 3.0 keeps gap + grace, a day and 10 ms: k's session is found
    assert [(str(o.key), o.value) for o in _scenario("3.0", long_grace).run().outputs("out")] == [("[k@0/0]", "1-1")]


def test_before_3_0_a_time_window_size_and_grace_beyond_a_day_are_refused() -> None:
    long_grace = {"size_ms": 10, "grace_ms": 86_400_000}
    with pytest.raises(
        TopologyError, match=r"c1: window size 10 \+ grace 86400000 .*\(Windows.maintainMs before 3.0"
    ) as e:
        _scenario("2.8", long_grace).run()
    assert "retention_ms" not in str(e.value)  # a topology node has no retention field to set
    # a single windowed aggregate has one: its refusal names it
    with pytest.raises(ValueError, match=r"refuses it; set retention_ms, choose a shorter grace"):
        run_window_aggregate(
            [{"key": "k", "value": "v", "ts": 0}], TimeWindows(10, grace_ms=86_400_000), semantics="2.8"
        )
    # 3.0 keeps size + grace; 2.8 keeps a day when size + grace fits in it
    assert [(str(o.key), o.value) for o in _scenario("3.0", long_grace).run().outputs("out")] == [("[k@0/10]", "1-1")]
    assert [(str(o.key), o.value) for o in _scenario("2.8", {"size_ms": 10}).run().outputs("out")] == [
        ("[k@0/10]", "1-1")
    ]


# -- against the real library ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("version, found", [("2.5.1", True), ("2.8.2", True), ("3.0.2", False), ("4.4.0", False)])
def test_kafka_finds_an_old_session_before_3_0_only(built, version: str, found: bool) -> None:
    long_grace = {"inactivity_gap_ms": 10, "grace_ms": 86_400_000}
    cases = [_scenario(version), _scenario(version, long_grace)]
    joined, refused = topology_oracle.run_batch(version, cases)
    assert topology_oracle.difference(cases[0], joined, version) is None
    assert joined["outputs"][2] == ([["out", "[k@0/0]", "1-1", 0]] if found else [])
    if found:  # Kafka refuses the topology; kjoin with its reason
        assert "retention period of the session store" in refused["error"]
        with pytest.raises(TopologyError, match="SessionWindows.maintainMs before 3.0"):
            cases[1].run()
    else:
        assert topology_oracle.difference(cases[1], refused, version) is None


# -- a single wtable-wtable join: the same rule for time windows -----------------------------------------------------
# Two windowed counts joined window by window as one scenario (the harness's ``wtable-wtable``): before 3.0 each
# count's store keeps Windows.maintainMs(), so right k at 0 finds left k's window [0, 10) after left moved 200 s on.
WTABLE = {
    "join": "wtable-wtable",
    "variant": "inner",
    "window": {"size_ms": 10},
    "events": [
        {"side": "left", "key": "k", "value": "a", "ts": 0},
        {"side": "left", "key": "x", "value": "b", "ts": 200_000},
        {"side": "right", "key": "k", "value": "c", "ts": 0},
    ],
}


def test_a_wtable_joins_stores_keep_a_day_before_3_0() -> None:
    found = [["k", "1-1", 0, {"start_ms": 0, "end_ms": 10}]]
    assert kjoin_outputs(AggregateSpec.from_dict({**WTABLE, "semantics": "2.8"}))[2] == found
    assert kjoin_outputs(AggregateSpec.from_dict({**WTABLE, "semantics": "3.0"}))[2] == []
    # an explicit retention_ms (Materialized.withRetention) is kept on every version
    kept = AggregateSpec.from_dict({**WTABLE, "semantics": "3.0", "retention_ms": 86_400_000})
    assert kjoin_outputs(kept)[2] == found


@pytest.mark.parametrize("version, found", [("2.8.2", True), ("3.0.2", False)])
def test_kafka_finds_an_old_window_of_a_wtable_join_before_3_0_only(built, version: str, found: bool) -> None:
    spec = AggregateSpec.from_dict({**WTABLE, "semantics": version})
    with Harness(version) as harness:
        kafka = harness.run(spec)
    assert kafka == kjoin_outputs(spec)
    assert bool(kafka[2]) is found
