"""A table aggregate's update that keeps its group, judged by the real Kafka Streams library on both sides of KIP-904
(3.5): before, ``KTableRepartitionMap`` writes the subtract half and then the add half to the one group and the
aggregate forwards twice; from 3.5 it writes one ``Change(new, old)`` and the aggregate forwards once. One JVM per
version, kjoin run with that version's semantics (reference engine; ``tests/test_spark_aggregates.py`` runs the
same scenario on Spark)."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_oracle.oracle_check import Harness, kjoin_outputs
from kjoin.scenario.aggregate import AggregateSpec

BEFORE, FROM = ("2.4.1", "2.8.2", "3.4.0"), ("3.5.2", "4.4.0")
"""Judges before KIP-904 (the oldest, a 2.x and the last 3.4 before 3.4.1) and from it."""


def keeps_its_group(version: str, aggregate: dict[str, Any] | None = None) -> AggregateSpec:
    """k1 moves within X (X 5 -> 1), then k2 leaves X for Y."""
    data: dict[str, Any] = {
        "join": "table-aggregate",
        "group_by": "g",
        "semantics": version,
        "events": [
            {"side": "left", "key": "k1", "value": {"g": "X", "v": 5}, "ts": 1},
            {"side": "left", "key": "k2", "value": {"g": "X", "v": 2}, "ts": 2},
            {"side": "left", "key": "k1", "value": {"g": "X", "v": 1}, "ts": 3},
            {"side": "left", "key": "k2", "value": {"g": "Y", "v": 2}, "ts": 4},
        ],
    }
    if aggregate is not None:
        data["aggregate"] = aggregate
    return AggregateSpec.from_dict(data)


SUM_BEFORE = [[["X", "5", 1]], [["X", "7", 2]], [["X", "2", 3], ["X", "3", 3]], [["X", "1", 4], ["Y", "2", 4]]]
SUM_FROM = [[["X", "5", 1]], [["X", "7", 2]], [["X", "3", 3]], [["X", "1", 4], ["Y", "2", 4]]]
COUNT_BEFORE = [[["X", "1", 1]], [["X", "2", 2]], [["X", "1", 3], ["X", "2", 3]], [["X", "1", 4], ["Y", "1", 4]]]
COUNT_FROM = [[["X", "1", 1]], [["X", "2", 2]], [["X", "2", 3]], [["X", "1", 4], ["Y", "1", 4]]]


@pytest.mark.parametrize("version", BEFORE + FROM)
def test_an_update_that_keeps_its_group_is_two_outputs_before_kafka_3_5_and_one_from_it(built, version):
    summed, counted = keeps_its_group(version, {"sum": "v"}), keeps_its_group(version)
    before = version in BEFORE
    with Harness(version) as kafka:  # one JVM for both scenarios
        assert kafka.run(summed) == kjoin_outputs(summed) == (SUM_BEFORE if before else SUM_FROM)
        assert kafka.run(counted) == kjoin_outputs(counted) == (COUNT_BEFORE if before else COUNT_FROM)


def repeated(version: str) -> AggregateSpec:
    """k1 written twice with the same value (an idempotent update), far apart in time."""
    value = {"g": "Z", "v": 7}
    return AggregateSpec.from_dict(
        {
            "join": "table-aggregate",
            "group_by": "g",
            "semantics": version,
            "events": [{"side": "left", "key": "k1", "value": value, "ts": ts} for ts in (0, 43_200_000)],
        }
    )


@pytest.mark.parametrize("version", ["2.6.1", "2.7.0", "2.7.1", "3.4.0"])
def test_an_idempotent_update_is_dropped_by_the_source_on_2_6_0_to_2_7_0_only(built, version):
    """KIP-557: the group-by asks its source table for old values, which gives it a store, and 2.6.0-2.7.0 drop an
    update that changes nothing there (KAFKA-12508 undid it in 2.6.2 and 2.7.1); later versions subtract and add
    again (two outputs before 3.5). The seed-000 judge found it on 2.7.0."""
    scenario = repeated(version)
    dropped = version in ("2.6.1", "2.7.0")
    second = [] if dropped else [["Z", "0", 43_200_000], ["Z", "1", 43_200_000]]
    with Harness(version) as kafka:
        assert kafka.run(scenario) == kjoin_outputs(scenario) == [[["Z", "1", 0]], second]
