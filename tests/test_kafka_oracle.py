"""kjoin against the real Kafka Streams library, on random scenarios, in every run (issue 10).

For each Kafka version in ``tests.oracle_check.VERSIONS`` hypothesis generates 1,000 scenarios (a fresh seed each
run) that the version can judge, runs them through kjoin and, in one batch JVM for the version, through
TopologyTestDriver, and requires the same output records, in the same order, with the same timestamps, after every
input record. A failure prints the smallest failing scenario, shrunk event by event, in kjoin's YAML format.
The harness is built by the set-up of `make test` (``make kafka-oracle``); without Java, Maven or the jars
these tests fail, they never skip.
"""

from __future__ import annotations

import pytest

import kjoin
from tests.oracle_check import VERSIONS, Harness, build, check, kjoin_outputs, known_gap, scenario_yaml, shrink

EXAMPLES = int(__import__("os").environ.get("KJOIN_ORACLE_EXAMPLES", "1000"))


@pytest.fixture(scope="module")
def built() -> None:
    build()


@pytest.fixture(scope="module", params=[v.version for v in VERSIONS], ids=lambda v: f"kafka-{v}")
def harness(request, built):
    with Harness(request.param) as running:
        yield running


def test_kjoin_agrees_with_kafka_streams(harness: Harness) -> None:
    version = next(v for v in VERSIONS if v.version == harness.version)
    batch, mismatches = check(version, EXAMPLES)
    assert len(batch) >= EXAMPLES * 0.95, f"hypothesis generated only {len(batch)} scenarios"
    if mismatches:
        scenario, found = min(mismatches, key=lambda pair: len(pair[0].events))
        smaller = shrink(scenario, harness)
        pytest.fail(
            f"{len(mismatches)} of {len(batch)} scenarios differ from Kafka {version.version}; the smallest, shrunk "
            f"(kjoin run it.yaml):\n{scenario_yaml(smaller)}\nfirst difference: {found}"
        )


def test_the_harness_sees_what_kjoin_sees(harness: Harness) -> None:
    """A fixed scenario per version, so a harness that printed nothing could not pass: a left join's result."""
    scenario = kjoin.Scenario.from_dict(
        {
            "join": "stream-table",
            "variant": "left",
            "semantics": harness.version,
            "events": [
                {"side": "right", "key": "k", "value": "a", "ts": 1},
                {"side": "left", "key": "k", "value": "A", "ts": 2},
                {"side": "left", "key": "j", "value": "B", "ts": 3},
            ],
        }
    )
    assert harness.run(scenario) == [[], [["k", "A-a", 2]], [["j", "B-null", 3]]]
    assert kjoin_outputs(scenario) == harness.run(scenario)


def test_a_scenario_with_two_tasks_is_compared_task_by_task(harness: Harness) -> None:
    """Keys k1 and k3 fall on different partitions of two: each task has its own stream time."""
    scenario = kjoin.Scenario.from_dict(
        {
            "join": "stream-stream",
            "variant": "inner",
            "semantics": harness.version,
            "partitions": 2,
            "window": {"before_ms": 1, "after_ms": 1, "grace_ms": 0},
            "events": [
                {"side": "left", "key": "k1", "value": "A", "ts": 50},
                {"side": "right", "key": "k3", "value": "b", "ts": 2},
                {"side": "left", "key": "k3", "value": "B", "ts": 2},
            ],
        }
    )
    assert kjoin.run(scenario).steps[1].task != kjoin.run(scenario).steps[0].task
    assert harness.run(scenario) == kjoin_outputs(scenario) == [[], [], [["k3", "B-b", 2]]]


# -- the known gaps: what kjoin does not model, pinned against the real library --------------------------------
def _run(version: str, data: dict) -> tuple[list, list]:
    scenario = kjoin.Scenario.from_dict({**data, "semantics": version})
    with Harness(version) as harness:
        return harness.run(scenario), kjoin_outputs(scenario)


LATE_LEFT = {
    "join": "stream-stream",
    "variant": "left",
    "window": {"before_ms": 2, "after_ms": 0, "grace_ms": 1},
    "events": [
        {"side": "left", "key": "k", "value": None, "ts": 16},
        {"side": "left", "key": "k", "value": "L4", "ts": 9},
        {"side": "left", "key": "k", "value": "L5", "ts": 40},
        {"side": "right", "key": "k", "value": "R", "ts": 9},
    ],
}


def test_gap_a_late_left_record_waits_in_the_outer_buffer_in_kafka_3_3(built) -> None:
    """Known gap late-outer-record-3.3: L4@9 arrives after its window closed (stream time 16). Kafka 3.3 buffers
    it, emits it at the next record and still joins it with R@9; kjoin (and Kafka 4.3) emit it at once."""
    kafka, ours = _run("3.3.2", LATE_LEFT)
    assert kafka == [[], [], [["k", "L4-null", 9]], [["k", "L4-R", 9]]]
    assert ours == [[], [["k", "L4-null", 9]], [], []] != kafka
    assert _run("4.3.1", LATE_LEFT)[0] == ours
    assert known_gap(
        next(v for v in VERSIONS if v.version == "3.3.2"), kjoin.Scenario.from_dict({**LATE_LEFT, "semantics": "3.3.2"})
    )


SELF_EXPIRED = {
    "join": "stream-stream",
    "variant": "left",
    "self_join": True,
    "window": {"before_ms": 6, "after_ms": 5, "grace_ms": 2},
    "events": [
        {"side": "left", "key": "k3", "value": "L8", "ts": 20},
        {"side": "left", "key": "k1", "value": "L1", "ts": 4},
    ],
}


def test_gap_window_stores_before_3_5_find_records_older_than_their_retention(built) -> None:
    """Known gap window-retention-before-3.5: L1@4 is older than the retention (13 ms) behind L8@20. Kafka 2.8 and
    3.3 still store and find it (its 60 s segment lives), so it joins itself; kjoin hides it, as 4.3 does."""
    for version in ("2.8.2", "3.3.2"):
        kafka, ours = _run(version, SELF_EXPIRED)
        assert kafka[1] == [["k1", "L1-null", 4], ["k1", "L1-L1", 4]]
        assert ours[1] == [["k1", "L1-null", 4]]
        assert known_gap(
            next(v for v in VERSIONS if v.version == version),
            kjoin.Scenario.from_dict({**SELF_EXPIRED, "semantics": version}),
        )
    kafka, ours = _run("4.3.1", SELF_EXPIRED)
    assert kafka == ours


FK_SAME_KEY = {
    "join": "fk",
    "variant": "inner",
    "foreign_key": "fk",
    "events": [
        {"side": "left", "key": "A", "value": {"fk": "X", "v": 7}, "ts": 4},
        {"side": "left", "key": "A", "value": {"fk": "X", "v": 7}, "ts": 9},
    ],
}


def test_gap_kafka_3_9_fk_inner_join_sends_no_tombstone_for_an_update_keeping_its_foreign_key(built) -> None:
    """Known gap fk-inner-3.9: row A never joined (no X). Its update keeping the foreign key makes kjoin (and Kafka
    3.3) send a tombstone; Kafka 4.3 asks only for an existing result and sends nothing."""
    kafka, ours = _run("4.3.1", FK_SAME_KEY)
    assert kafka == [[], []]
    assert ours == [[], [["A", None, 9]]]
    assert _run("3.3.2", FK_SAME_KEY)[0] == ours
    assert known_gap(VERSIONS[0], kjoin.Scenario.from_dict({**FK_SAME_KEY, "semantics": "4.3.1"})) == "fk-inner-3.9"
