"""Differential tests: seed 000's aggregates and WTable joins on Spark give the reference
engine's outputs and per-record fates exactly, on random scenarios of all six joins."""

from __future__ import annotations

import random

import pytest

from kjoin.scenario import AGGREGATE_JOINS, AggregateSpec
from kjoin.engine.aggregates import DAY_MS, WEEK_MS
from kjoin.spark.passes.aggregates import aggregate_scenarios, reference_results, run_aggregate, scenario_rows

from .test_wtable import BEHIND_RETENTION

KEYS = ["a", "b", "c", "d", "e"]


def _windows(rng: random.Random) -> dict:
    size = rng.choice([5, 10, 20])
    advance = rng.choice([a for a in (size, size // 2, 5) if a <= size and a > 0])
    return {"size_ms": size, "advance_ms": advance, "grace_ms": rng.choice([0, 3, 10])}


def _stores(rng: random.Random, window: dict) -> dict:
    if rng.random() < 0.5:
        return {}
    floor = window["size_ms"] + window["grace_ms"]
    return {"retention_ms": floor + rng.choice([0, 10, 40]), "segments": rng.choice([2, 3])}


def _key(rng: random.Random) -> str | None:
    return None if rng.random() < 0.04 else rng.choice(KEYS)


def _stream_value(rng: random.Random, ts: int) -> dict | None:
    return None if rng.random() < 0.05 else {"n": rng.randint(0, 9), "seen_at": max(0, ts - rng.randint(0, 30))}


def _table_value(rng: random.Random) -> dict | None:
    return None if rng.random() < 0.2 else {"g": rng.choice(["x", "y", "z", None]), "n": rng.randint(0, 9)}


def random_spec(join: str, rng: random.Random) -> dict:
    """A random valid scenario of ``join``: several keys and partitions, out-of-order timestamps,
    late records, deletes, null keys and values."""
    count = rng.randint(5, 30)
    stamps = [max(0, i * 3 + rng.randint(-25, 10)) for i in range(count)]
    spec: dict = {"join": join, "partitions": rng.randint(1, 3), "events": []}
    aggregate = rng.choice(["count", {"sum": "n"}])
    if join == "table-aggregate":
        spec.update(group_by="g", aggregate=aggregate)
        spec["events"] = [{"key": _key(rng), "value": _table_value(rng), "ts": ts} for ts in stamps]
        return spec
    window = _windows(rng)
    spec.update(window=window, aggregate=aggregate, **_stores(rng, window))
    # Kafka 3.4+ hides a window behind its store's retention from a lookup; 3.3 and 2.8 find it
    spec["semantics"] = rng.choice(["4.3", "3.3", "2.8"])
    if join == "window-aggregate":
        spec["events"] = [{"key": _key(rng), "value": _stream_value(rng, ts), "ts": ts} for ts in stamps]
        return spec
    if join in ("stream-wtable", "table-wtable"):
        spec["selector"] = rng.choice(["timestamp", {"field": "seen_at"}])
    if join == "wtable-wtable":
        spec["variant"] = rng.choice(["inner", "left", "outer"])
        if spec["variant"] == "left" and rng.random() < 0.5:
            spec["window_shift_ms"] = -window["advance_ms"] * rng.randint(1, 3)
            spec["self_join"] = rng.random() < 0.5
            spec["retention_ms"] = window["size_ms"] + window["grace_ms"] + 3 * window["advance_ms"] + 20
            spec["segments"] = rng.choice([2, 3])
    for ts in stamps:
        side = "left" if spec.get("self_join") else rng.choice(["left", "right"])
        tabular = (join == "wtable-table" and side == "right") or (join == "table-wtable" and side == "left")
        value = _table_value(rng) if tabular else _stream_value(rng, ts)
        if tabular and value is not None:
            value["seen_at"] = max(0, ts - rng.randint(0, 30))
        spec["events"].append({"side": side, "key": _key(rng), "value": value, "ts": ts})
    return spec


def _scenarios(seed: int, per_join: int) -> dict[int, dict]:
    rng = random.Random(seed)
    specs = {}
    for join in AGGREGATE_JOINS:
        for _ in range(per_join):
            specs[len(specs)] = random_spec(join, rng)
    return specs


def test_random_scenarios_cover_every_join_and_its_paths():
    specs = _scenarios(7, 6)
    assert {spec["join"] for spec in specs.values()} == set(AGGREGATE_JOINS) and len(AGGREGATE_JOINS) == 6
    fates: dict[str, set] = {}
    for spec in specs.values():
        AggregateSpec.from_dict(spec)
        for step in reference_results(spec)["steps"]:
            fates.setdefault(spec["join"], set()).add(step["reason"])
    # the random inputs reach late drops, null keys and the joined path, in three eras
    assert "expired-window" in fates["window-aggregate"]
    assert {spec.get("semantics") for spec in specs.values()} == {None, "4.3", "3.3", "2.8"}
    assert any("null-key" in reasons for reasons in fates.values())
    assert all(None in reasons for reasons in fates.values())


@pytest.mark.parametrize("seed", [7, 2026])
def test_spark_equals_reference_on_random_scenarios_of_all_six_joins(spark, seed):
    specs = _scenarios(seed, 6)
    got = aggregate_scenarios(spark, specs, spark_partitions=3).collect()
    assert sorted(got) == sorted(specs)
    compared = 0
    for sid, spec in specs.items():
        expected = reference_results(spec)
        assert got[sid]["steps"] == expected["steps"], f"scenario {sid} ({spec['join']}): fates differ"
        assert got[sid]["outputs"] == expected["outputs"], f"scenario {sid} ({spec['join']}): outputs differ"
        assert len(expected["steps"]) == len(spec["events"])  # every input record is accounted for
        compared += len(expected["outputs"])
    assert compared > 100


def test_per_task_joins_split_by_kafka_partition_and_table_aggregates_run_whole(spark):
    window = {
        "join": "window-aggregate",
        "window": {"size_ms": 10},
        "partitions": 3,
        "events": [{"key": k, "value": 1, "ts": i} for i, k in enumerate(KEYS)],
    }
    table = {
        "join": "table-aggregate",
        "group_by": "g",
        "partitions": 3,
        "events": [{"key": k, "value": {"g": g}, "ts": i} for i, (k, g) in enumerate(zip(KEYS, "xyxyz"))],
    }
    run = aggregate_scenarios(spark, {0: window, 1: table})
    units = {(r["scenario"], r["unit"]) for r in run.records.select("scenario", "unit").distinct().collect()}
    partitions = {row[1] for row in scenario_rows(0, window)}
    assert len(partitions) > 1
    assert units == {(0, p) for p in partitions} | {(1, 0)}
    # a table aggregate's outputs still name the aggregate task of their group
    outputs = run.collect()[1]["outputs"]
    assert outputs == reference_results(table)["outputs"]
    assert len({o["partition"] for o in outputs}) > 1


def test_page_views_today_against_last_week_on_spark(spark):
    views = [{"key": "home", "value": "v", "ts": day * DAY_MS + 1000} for day in (0, 0, 7, 7, 7)]
    spec = {
        "join": "wtable-wtable",
        "variant": "left",
        "self_join": True,
        "window_shift_ms": -WEEK_MS,
        "window": {"size_ms": DAY_MS},
        "retention_ms": 8 * DAY_MS,
        "events": views,
    }
    got = run_aggregate(spark, spec).collect()[0]
    assert got == reference_results(spec)
    last = got["outputs"][-1]
    assert last["key"] == "home" and last["window"] == {"start_ms": 7 * DAY_MS, "end_ms": 8 * DAY_MS}
    assert (last["left"], last["right"]) == (3, 2)


def test_a_failing_aggregator_fails_the_spark_job_naming_the_event(spark):
    spec = {
        "join": "window-aggregate",
        "window": {"size_ms": 10},
        "aggregate": {"sum": "n"},
        "events": [{"key": "a", "value": {"n": 1}, "ts": 1}, {"key": "a", "value": {"n": "two"}, "ts": 2}],
    }
    with pytest.raises(Exception, match=r"events\[1\]"):
        run_aggregate(spark, spec).collect()


def test_a_lookup_behind_the_retention_and_a_counted_null_value_on_spark(spark):
    """The left store saw window start 35 and keeps 5 ms: Kafka 3.4+ hides window [10, 15) from the right update's
    lookup (a left join: no output, reason behind-retention; outer: null-1), 3.3 still finds it (1-1). A windowed
    count counts a null value. Spark gives the reference engine's outputs and fates."""
    events = BEHIND_RETENTION["events"]
    base = {"join": "wtable-wtable", "window": {"size_ms": 5}, "events": events}
    specs = {
        0: {**base, "variant": "left"},
        1: {**base, "variant": "outer"},
        2: {**base, "variant": "left", "semantics": "3.3"},
        3: {
            "join": "window-aggregate",
            "window": {"size_ms": 10},
            "events": [{**e, "ts": 1 + i} for i, e in enumerate(events)],
        },
    }
    got = aggregate_scenarios(spark, specs).collect()
    for sid, spec in specs.items():
        assert got[sid] == reference_results(spec), sid
    last = {
        sid: [(o["left"], o["right"], o["window"]["start_ms"]) for o in got[sid]["outputs"][2:]] for sid in (0, 1, 2)
    }
    assert last == {0: [], 1: [(None, 1, 10)], 2: [(1, 1, 10)]}
    assert got[0]["steps"][2]["reason"] == "behind-retention"
    assert [(o["key"], o["value"]) for o in got[3]["outputs"]] == [("k3", 1), ("k1", 1), ("k3", 2)]
    assert [step["fate"] for step in got[3]["steps"]] == ["joined", "joined", "joined"]


def test_a_table_aggregate_update_that_keeps_its_group_on_spark_on_both_sides_of_kafka_3_5(spark):
    """tests/test_table_aggregate_eras.py's scenario, judged there by Kafka: two outputs for the update in one group
    before 3.5 (the subtract, then the add), one from 3.5; on several partitions too."""
    from .test_table_aggregate_eras import keeps_its_group

    specs = {
        sid: {**keeps_its_group(version, {"sum": "v"}).data, "partitions": partitions}
        for sid, (version, partitions) in enumerate([("3.4.0", 1), ("3.5.2", 1), ("2.4.1", 3), ("4.4.0", 3)])
    }
    got = aggregate_scenarios(spark, specs).collect()
    for sid, spec in specs.items():
        assert got[sid]["outputs"] == reference_results(spec)["outputs"], f"scenario {sid}"
        assert got[sid]["steps"] == reference_results(spec)["steps"], f"scenario {sid}"
    same_group = [[o for o in got[sid]["outputs"] if o["origin_step"] == 2] for sid in specs]
    assert [[o["value"] for o in outputs] for outputs in same_group] == [[2, 3], [3], [2, 3], [3]]
