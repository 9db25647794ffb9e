"""Bigger topologies on Spark: self-joins, chained joins, materialized and cached results run
per Kafka task through the same processors and equal the reference engine, record for
record (the native path refuses them and ``auto`` falls back)."""

from __future__ import annotations

import random

import pytest

from kafka_oracle.oracle_check import rotation
from kjoin import Scenario
from kjoin.spark import SparkInputError, run_scenarios
from tests.spark_compare import assert_same, spark_results

pytestmark = pytest.mark.spark

PER_KIND = 60


def _events(rng: random.Random, sides: tuple[str, ...], count: int) -> list[dict]:
    keys = ["k1", "k2", "k3", 7, None]
    return [
        {
            "side": rng.choice(sides),
            "key": rng.choice(keys),
            "value": None if rng.random() < 0.2 else f"V{rng.randint(0, 9)}",
            "ts": rng.randint(0, 60),
        }
        for _ in range(rng.randint(0, count))
    ]


def topology_batch(seed: int) -> list[Scenario]:
    rng = random.Random(seed)
    batch = []
    for _ in range(PER_KIND):
        window = {"before_ms": rng.randint(0, 10), "after_ms": rng.randint(0, 10), "grace_ms": rng.randint(0, 10)}
        partitions = rng.randint(1, 3)
        batch.append(
            Scenario.from_dict(
                {
                    "join": "stream-stream",
                    "variant": rng.choice(["inner", "left", "outer"]),
                    "semantics": rng.choice(["3.1", "latest"]),
                    "window": window,
                    "partitions": partitions,
                    "then": [{"variant": rng.choice(["inner", "left", "outer"])}],
                    "events": _events(rng, ("left", "right"), 25),
                }
            )
        )
        optimize = rng.random() < 0.5
        batch.append(
            Scenario.from_dict(
                {
                    "join": "stream-stream",
                    "variant": "inner" if optimize else rng.choice(["inner", "left", "outer"]),
                    "window": window,
                    "partitions": partitions,
                    "self_join": True,
                    "optimize": optimize,
                    "events": _events(rng, ("left",), 25),
                }
            )
        )
        table = {
            "join": "table-table",
            "variant": rng.choice(["inner", "left", "outer"]),
            "partitions": partitions,
            "materialized": rng.random() < 0.7,
            "send_old_values": rng.random() < 0.5,
            "events": _events(rng, ("left", "right"), 25),
        }
        if rng.random() < 0.5:
            table["then"] = [{"variant": rng.choice(["inner", "left", "outer"])}]
        if rng.random() < 0.7:
            table["caching"] = True
            table["commit_every"] = rng.randint(1, 4)
        batch.append(Scenario.from_dict(table))
    return batch


COMMIT_SEED = random.Random(rotation()).randint(1, 2**32 - 1)
"""A second batch's seed, new at every commit and the same for one commit on every machine, so that a commit collects
the same tests everywhere and a failure's test id names the batch to run again."""


@pytest.mark.parametrize("seed", [0, COMMIT_SEED])
def test_topologies_on_spark_equal_the_reference_engine(spark, seed):
    batch = topology_batch(seed)
    outputs, steps = spark_results(run_scenarios(spark, batch))
    assert outputs and steps
    assert_same(batch, outputs, steps)


def test_the_native_path_refuses_topologies(spark):
    chained = Scenario.from_dict(
        {"join": "table-table", "variant": "inner", "then": [{"variant": "inner"}], "events": []}
    )
    with pytest.raises(SparkInputError, match="chained"):
        run_scenarios(spark, [chained], method="native")
