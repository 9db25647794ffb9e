"""The per-task pass for joins over versioned tables (:mod:`kjoin.spark.passes.vectorised_versioned`) agrees with the
reference engine and with the processors, row for row.

Most random checking runs outside Spark, which is cheap: the pass is called directly on Arrow batches built as
``run_scenarios`` builds its rows (keys and values as JSON text, every task's records in processing order), cut
into batches of 1, 3, 7 records or random sizes, so that every task spans batches and batches hold several tasks.
Scenarios: every variant of the versioned stream-table join (with and without a grace period) and of the versioned
table-table join (one or both sides versioned, every ``versioned_mode``), each re-drawn in one of :data:`ERAS`,
several partitions, out-of-order timestamps, null keys and values, tombstones, integer keys beside strings, random
history retention and grace; long tasks of 2,000 records whose timestamps rise past the retention, so that
puts and lookups expire and the store drops versions; and dense tasks over two keys (timestamps 0-1 ms apart,
retention 0-5 ms, batches of 1-17) for ties between versions and the edges of the retention. Every check runs the
array forms (stream-table without grace, table-table in ``final`` mode) and the loop alike. A few cases run
through Spark (``method="vectorised"``, small Arrow batches, ``run_join`` on topics), and ``auto`` is shown to
pick the pass.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from kjoin import Scenario, run
from kjoin.spark import OUTPUT_COLUMNS, STEP_COLUMNS, SparkInputError, run_scenarios
from kjoin.spark.passes import vectorised_versioned as vv
from kjoin.spark.passes.task import RESULT_FIELDS, json_text, task_function
from tests.spark_compare import assert_same, random_batch, small_arrow_batches, spark_results

ERAS = ["3.5", "3.6", "3.7", "4.0", "latest"]
"""From the oldest era with versioned tables (3.5, KIP-914) through the grace period (3.6, KIP-923) and KIP-962's
null keys (3.7) to the latest; a grace period is drawn only from 3.6."""

KINDS = ("versioned-stream-table", "versioned-table-table")


def _redrawn(seed: int, kind: str, per_combo: int, max_events: int = 30) -> list[Scenario]:
    rng = random.Random(seed)
    batch = []
    for scenario in random_batch(seed, kind, per_combo, max_events):
        data = scenario.to_dict()
        data["semantics"] = rng.choice(ERAS[1:] if data.get("grace_ms") is not None else ERAS)
        batch.append(Scenario.from_dict(data))
    return batch


def _long_task(seed: int, kind: str, variant: str, semantics: str = "latest", records: int = 2000) -> Scenario:
    """One task over a few keys: timestamps rising with jitter and jumps past the retention, null keys and values."""
    rng = random.Random(seed)
    events, now = [], 0
    for _ in range(records):
        now += rng.choice([0, 1, 1, 2, 3]) + (rng.random() < 0.01) * rng.randint(20, 200)
        side = "right" if rng.random() < (0.3 if kind == "versioned-stream-table" else 0.5) else "left"
        events.append(
            {
                "side": side,
                "key": None if rng.random() < 0.02 else rng.choice([f"k{rng.randint(0, 8)}", rng.randint(0, 3)]),
                "value": None if rng.random() < 0.08 else f"{side[0].upper()}{rng.randint(0, 99)}",
                "ts": max(0, now - rng.randint(0, 30)),
            }
        )
    data = {"join": kind.removeprefix("versioned-"), "variant": variant, "semantics": semantics, "events": events}
    retention = rng.randint(5, 40)
    if kind == "versioned-stream-table":
        data["right"] = {"versioned": True, "history_retention_ms": retention}
        if rng.random() < 0.5:
            data["grace_ms"] = rng.randint(0, retention)
    else:
        for side in rng.choice([["left"], ["right"], ["left", "right"]]):
            data[side] = {"versioned": True, "history_retention_ms": retention}
    return Scenario.from_dict(data)


# -- outside Spark ---------------------------------------------------------------------------------------------
def _input_batches(scenarios: list[Scenario], sizes: Any) -> list[Any]:
    """The records of ``scenarios`` as ``run_scenarios`` writes them, every task's together in processing order,
    cut into Arrow batches of the sizes ``sizes()`` draws."""
    import pyarrow as pa

    rows = []
    for scenario_id, scenario in enumerate(scenarios):
        for position, record in enumerate(scenario.records()):
            rows.append(
                (
                    scenario_id,
                    record.partition,
                    record.side.value,
                    json_text(record.key),
                    json_text(record.value),
                    record.ts,
                    record.offset,
                    position,
                )
            )
    rows.sort(key=lambda row: (row[0], row[1], row[7]))
    names = ("scenario", "partition", "side", "key", "value", "ts", "offset", "position")
    types = (pa.int64(), pa.int32(), pa.string(), pa.string(), pa.string(), pa.int64(), pa.int64(), pa.int64())
    schema = pa.schema(list(zip(names, types)))
    batches, start = [], 0
    while start < len(rows):
        size = sizes()
        chunk = rows[start : start + size]
        batches.append(
            pa.RecordBatch.from_arrays([pa.array([r[i] for r in chunk], t) for i, t in enumerate(types)], schema=schema)
        )
        start += size
    return batches


def _rows(function: Any, batches: list[Any]) -> list[tuple]:
    names = [name for name, _ in RESULT_FIELDS]
    out = []
    for result in function(iter(batches)):
        columns = [result.column(name).to_pylist() for name in names]
        out += [dict(zip(names, row)) for row in zip(*columns)]
    return out


def _check(scenarios: list[Scenario], sizes: Any) -> list[dict]:
    """The pass's rows equal the processors' (every column, in order) and the reference engine's; table-table
    joins in ``final`` mode and stream-table joins without grace both as arrays and through the loop
    (:data:`~kjoin.spark.passes.vectorised_versioned.ARRAY_TABLE_TABLE`, ``ARRAY_STREAM_TABLE``), stream-table
    batches alternating between the two (``WALK_LIMIT`` 0), and the array form's lookups by sorting
    (``ID_TIME_KEY_LIMIT`` 0)."""
    configs = dict(enumerate(scenarios))
    batches = _input_batches(scenarios, sizes)
    want = _rows(task_function(configs, json_keys=True, json_values=True), batches)
    walk_limit, key_limit = vv.WALK_LIMIT, vv.ID_TIME_KEY_LIMIT
    # WALK_LIMIT 0: every stream-table batch with a put runs the loop, the history moved in and out;
    # ID_TIME_KEY_LIMIT 0: the array form's lookups sort the history with them instead of searching it.
    for arrays, limit, keys in ((True, walk_limit, key_limit), (True, 0, key_limit), (True, walk_limit, 0),
                                (False, walk_limit, key_limit)):  # fmt: skip
        vv.ARRAY_TABLE_TABLE = vv.ARRAY_STREAM_TABLE = arrays
        vv.WALK_LIMIT, vv.ID_TIME_KEY_LIMIT = limit, keys
        try:
            got = _rows(vv.versioned_function(configs, json_keys=True, json_values=True), batches)
        finally:
            vv.ARRAY_TABLE_TABLE = vv.ARRAY_STREAM_TABLE = True
            vv.WALK_LIMIT, vv.ID_TIME_KEY_LIMIT = walk_limit, key_limit
        assert len(got) == len(want)
        for index, (g, w) in enumerate(zip(got, want)):
            assert g == w, f"row {index} differs (arrays: {arrays}): {scenarios[g['scenario']].to_dict()}"
    outputs = [tuple(r[c] for c in OUTPUT_COLUMNS) for r in got if r["row"] == "output"]
    steps = [tuple(r[c] for c in STEP_COLUMNS) for r in got if r["row"] == "step"]
    assert_same(scenarios, outputs, steps)
    return got


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_versioned_joins_equal_the_reference_engine(kind, seed):
    scenarios = _redrawn(seed, kind, 8)
    rng = random.Random(seed)
    sizes = [lambda: 1, lambda: 3, lambda: 7, lambda: rng.randint(1, 60)][seed % 4]
    got = _check(scenarios, sizes)
    assert {str(s.semantics) for s in scenarios} >= {"3.5", "3.6", "4.4"}
    reasons = {(r["fate"], r["reason"]) for r in got if r["row"] == "step"}
    kinds = {r["kind"] for r in got if r["row"] == "output"}
    if kind == "versioned-stream-table":
        assert {s.variant for s in scenarios} == {"inner", "left"}
        assert any(s.grace_ms is not None for s in scenarios) and any(s.grace_ms is None for s in scenarios)
        assert kinds == {"joined", "unmatched", "null-key"}
        assert reasons >= {
            ("dropped", "null-key"),
            ("dropped", "null-value"),
            ("dropped", "null-key-in-grace-buffer"),
            ("stored", "table-update"),
            ("no-match", "no-partner"),
            ("buffered", "grace-period"),
        }
    else:
        assert {s.variant for s in scenarios} == {"inner", "left", "outer"}
        assert {s.versioned_mode for s in scenarios} == {"final", "attempt1", "attempt2"}
        assert kinds == {"joined", "unmatched", "tombstone"}
        assert reasons >= {
            ("dropped", "null-key"),
            ("dropped", "out-of-order-version"),
            ("no-match", "no-partner"),
            ("stored", "nothing-to-delete"),
        }


@pytest.mark.parametrize("kind", KINDS)
def test_long_tasks_expire_puts_lookups_and_versions_across_batches(kind):
    variants = ("inner", "left") if kind == "versioned-stream-table" else ("inner", "left", "outer")
    scenarios = [
        _long_task(seed, kind, variant, semantics)
        for seed, (variant, semantics) in enumerate((v, e) for v in variants for e in ("3.6", "latest"))
    ]
    rng = random.Random(5)
    got = _check(scenarios, lambda: rng.choice([1, 50, 333]))
    assert ("dropped", "expired-put") in {(r["fate"], r["reason"]) for r in got}


def _dense(seed: int, kind: str, variant: str, retention: int, records: int = 600) -> Scenario:
    """Two keys, timestamps rising by 0 or 1 ms and up to 8 ms out of order, retention 0-5 ms: puts at the same ts
    as an earlier version (in the batch or carried), lookups just behind the retention limit, versions dropped
    just as they stop being returnable."""
    rng = random.Random(seed)
    events, now = [], 0
    for _ in range(records):
        now += rng.choice([0, 0, 1])
        side = "right" if rng.random() < 0.4 else "left"
        value = None if rng.random() < 0.1 else f"{side[0]}{rng.randint(0, 999)}"
        events.append(
            {"side": side, "key": rng.choice(["a", "b"]), "value": value, "ts": max(0, now - rng.randint(0, 8))}
        )
    versioned = {"versioned": True, "history_retention_ms": retention}
    tables = {"right": versioned} if kind == "versioned-stream-table" else {"left": versioned, "right": versioned}
    return Scenario.from_dict({"join": kind.removeprefix("versioned-"), "variant": variant, "events": events, **tables})


@pytest.mark.parametrize("kind", KINDS)
def test_dense_ties_and_retention_edges(kind):
    variants = ("inner", "left") if kind == "versioned-stream-table" else ("inner", "left", "outer")
    scenarios = [_dense(seed, kind, v, r) for seed in range(4) for v in variants for r in (0, 2, 5)]
    rng = random.Random(11)
    _check(scenarios, lambda: rng.choice([1, 2, 5, 17]))


@pytest.mark.parametrize("join", ["stream-table", "table-table"])
@pytest.mark.parametrize("arrays", [True, False])
def test_the_store_drops_versions_behind_the_retention(monkeypatch, join, arrays):
    """Outside Spark: 200 batches of 100 records over 50 keys, timestamps rising 1 ms per record, retention 30 ms:
    the loop's store keeps per key the versions a lookup may still return (here the latest and the one before),
    not the task's 20,000; the array forms keep, for table-table, one latest version per key, for stream-table the
    same as the loop."""
    import pyarrow as pa

    from kjoin.spark.passes.task import _arrow_schema

    monkeypatch.setattr(vv, "ARRAY_TABLE_TABLE", arrays)
    monkeypatch.setattr(vv, "ARRAY_STREAM_TABLE", arrays)
    versioned = {"versioned": True, "history_retention_ms": 30}
    tables = {"right": versioned} if join == "stream-table" else {"left": versioned, "right": versioned}
    scenario = Scenario.from_dict({"join": join, "variant": "left", "events": [], **tables})
    task = vv._Task(scenario)
    schema = None
    for b in range(200):
        ts = list(range(b * 100, (b + 1) * 100))
        batch = pa.RecordBatch.from_pydict(
            {
                "scenario": pa.array([0] * 100, pa.int64()),
                "partition": pa.array([0] * 100, pa.int32()),
                "side": ["left" if t % 2 else "right" for t in ts],
                "key": [f"k{t % 50}" for t in ts],
                "value": [f"v{t}" for t in ts],
                "ts": pa.array(ts, pa.int64()),
                "offset": pa.array(ts, pa.int64()),
                "position": pa.nulls(100, pa.int64()),
            }
        )
        schema = schema or _arrow_schema(batch.schema)
        assert vv.segment_rows(batch, scenario, task, schema).num_rows == 100
        sides = task.stores[1:] if join == "stream-table" else task.stores
        for side, store in enumerate(sides):
            loop_versions = sum(len(times) for times, _ in store.versions.values())
            if not arrays:
                # each side updates half the keys, each every 50 ms: its latest version and the one before
                assert 25 <= loop_versions <= 50
            elif join == "table-table":
                # the task's 50 keys once, each side's latest value for the 25 it updates
                values = task.tables.values[side]
                assert len(task.tables.keys) == 50 and len(values) - values.null_count == 25 and loop_versions == 0
            else:
                assert 25 <= len(task.history.ids) <= 50 and loop_versions == 0
    assert task.rank == 20_000


# -- through Spark ---------------------------------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize("rows", [3, 10_000])
def test_vectorised_versioned_joins_through_spark(spark, rows):
    scenarios = _redrawn(rows, "versioned-stream-table", 3) + _redrawn(rows, "versioned-table-table", 2)
    scenarios += [_long_task(9, "versioned-stream-table", "left", records=400)]
    with small_arrow_batches(spark, rows):
        result = run_scenarios(spark, scenarios, method="vectorised")
        assert result.method == "vectorised"
        outputs, steps = spark_results(result)
    assert_same(scenarios, outputs, steps)


@pytest.mark.spark
def test_auto_picks_the_pass_for_large_versioned_tasks(spark):
    scenario = _long_task(4, "versioned-table-table", "outer", records=400)
    auto = run_scenarios(spark, [scenario])
    assert auto.method == "vectorised"
    outputs, steps = spark_results(auto)
    assert_same([scenario], outputs, steps)


@pytest.mark.spark
@pytest.mark.parametrize(
    "data, joiner, named",
    [
        ({"materialized": True}, None, "a materialized result"),
        ({}, lambda left, right: f"{left}+{right}", "custom joiner"),
    ],
)
def test_vectorised_versioned_refuses_what_it_cannot_run_and_auto_falls_back(spark, data, joiner, named):
    """Tasks of 300 records: ``auto`` would pick the pass if it could run them."""
    events = [{"side": "left" if i % 2 else "right", "key": f"k{i % 5}", "value": f"v{i}", "ts": i} for i in range(300)]
    scenario = Scenario.from_dict(
        {
            "join": "table-table",
            "variant": "left",
            "right": {"versioned": True, "history_retention_ms": 10},
            "events": events,
            **data,
        }
    )
    with pytest.raises(SparkInputError, match=re.escape(named)):
        run_scenarios(spark, [scenario], joiner=joiner, method="vectorised")
    assert run_scenarios(spark, [scenario], joiner=joiner).method == "processors"


@pytest.mark.spark
def test_run_join_vectorised_versioned_equals_processors_on_topics(spark):
    """Topics (no ``position``, keys and values as they are, integer values): three partitions of out-of-order
    records, Arrow batches of 13; the pass's rows equal the processors' row for row, for the stream-table join
    with a grace period and the table-table join with its left table versioned."""
    from kjoin.spark import Topic, run_join

    rng = random.Random(17)
    topics = []
    for side in ("left", "right"):
        rows = []
        for partition in range(3):
            now = 0
            for offset in range(rng.randint(150, 250)):
                now += rng.randint(0, 3)
                key = None if rng.random() < 0.03 else f"k{rng.randint(0, 15)}"
                value = None if rng.random() < 0.08 else rng.randint(0, 99)
                rows.append((key, value, max(0, now - rng.randint(0, 20)), partition, offset))
        frame = spark.createDataFrame(rows, "key string, value bigint, ts long, partition int, offset long")
        topics.append(Topic(frame, partitions=3))
    runs = [
        ("stream-table", variant, {"right": {"versioned": True, "history_retention_ms": 15}, "grace_ms": 6})
        for variant in ("inner", "left")
    ] + [
        ("table-table", variant, {"left": {"versioned": True, "history_retention_ms": 10}})
        for variant in ("inner", "left", "outer")
    ]
    # Emission order within a task is checked by the tests above; here every column breaks ties within a step.
    order = ("partition", "step", "row", "origin_step", "ts", "key", "left", "right", "value")
    for join, variant, options in runs:
        processors = run_join(*topics, join, variant, options=options, method="processors")
        expected = processors.results.orderBy(*order).collect()
        with small_arrow_batches(spark, 13):
            vectorised = run_join(*topics, join, variant, options=options, method="vectorised")
            assert vectorised.method == "vectorised"
            assert vectorised.results.orderBy(*order).collect() == expected


@pytest.mark.parametrize("kind", KINDS)
def test_a_tombstone_at_the_latest_versions_own_ts_forgets_or_keeps_it_as_the_loop_does(kind):
    """``versioned_same_ts_tombstone_leaves_no_trace``: the stream-table array form keeps no history walk, so its
    batch with a tombstone at its key's latest value's own ts runs the loop, the tables moved in (with where each
    key's segments end) and back out; the table-table array form cuts such a batch at the tombstone and sets the
    key's latest value as the loop's store would hold it. Batches of 1, 2 and 5 records put the tombstone after
    array batches and before them. k
    forgets its tombstone (R1@2 becomes the latest and the left record @3 joins it); j, whose segments end at 3,
    keeps it (R1@2 is out-of-order); the last records run as arrays again after the loop."""
    right = {"versioned": True, "history_retention_ms": 100}
    events = []
    for key, older in (("k", []), ("j", [("Q", 1)])):
        for value, ts in [*older, ("R0", 3), (None, 3), ("R1", 2)]:
            events.append({"side": "right", "key": key, "value": value, "ts": ts})
        events.append({"side": "left", "key": key, "value": "L", "ts": 3})
    events += [
        {"side": "right", "key": "k", "value": "R2", "ts": 4},
        {"side": "left", "key": "k", "value": "M", "ts": 5},
    ]
    data: dict[str, Any] = {
        "join": kind.removeprefix("versioned-"),
        "variant": "left",
        "right": right,
        "events": events,
    }
    if kind == "versioned-table-table":
        data["left"] = dict(right)
    scenario = Scenario.from_dict(data)
    joined = [(o.key, o.render()) for step in run(scenario) for o in step.outputs if o.kind.value == "joined"]
    assert ("k", "L-R1") in joined and ("j", "L-R1") not in joined, joined
    for size in (1, 2, 5):
        _check([scenario], lambda: size)
