"""The vectorised stream-stream pass (:mod:`kjoin.spark.passes.vectorised_stream`) agrees with the reference engine.

Random scenarios of every variant and every era the pass accepts (0.10.2 to the latest: output timestamps
before and from 2.0, window segments before 3.4, the outer-join buffer's three sweeps, stream time after a
skipped record before and from 3.7, KIP-962's null keys, the deprecated window API), with several partitions,
out-of-order timestamps, null keys and values, asymmetric windows, grace, and timestamps spread over 0, 60 s
and 120 s so that records fall behind their stores' retention and segments drop. They run with
``method="vectorised"`` in Arrow batches of 1, 3 and 10^4 records (every task spans batches, or many tasks
share one), and long single tasks run in batches of 50 so that the carried stores and outer-join buffer
are exercised over many batches. The pass joins small input batches into large ones
(:data:`~kjoin.spark.passes.vectorised_stream.COALESCE_ROWS`); these tests set that to 1 so that every input batch is a
pass of its own, except where they check the default. Outputs and steps must equal the reference engine's, in
order within every Kafka task.
"""

from __future__ import annotations

import random
import re

import pytest

import kjoin
from kjoin import Scenario
from kjoin.spark import SparkInputError, Topic, run_join, run_scenarios
from tests.spark_compare import assert_same, random_batch, small_arrow_batches, spark_results, spark_rows
from tests.test_spark_native import VALUES

pytestmark = pytest.mark.spark


@pytest.fixture(autouse=True)
def one_pass_per_batch(monkeypatch):
    from kjoin.spark.passes import vectorised_stream

    monkeypatch.setattr(vectorised_stream, "COALESCE_ROWS", 1)


ERAS = ["0.10.2", "1.1", "2.3", "3.0", "3.1.0", "3.1.1", "3.3", "3.4", "3.6", "3.7", "3.8", "latest"]
"""Every boundary the pass reproduces: 2.0 (output ts), 3.1.0 and 3.1.1 (the sweep's gate), 3.4 (expired
records hidden), 3.7 (skipped records move stream time, null keys joined), 3.8 (the per-side sweep)."""


def _batch(seed: int, per_combo: int) -> list[Scenario]:
    """``random_batch``'s stream-stream scenarios (its 0.10.0 ones left out: the pass refuses them), each re-drawn
    in one of :data:`ERAS`; a third of the windows asymmetric with one side 0, a third of the scenarios with values of
    every JSON kind (strings that need escaping, numbers, objects, lists)."""
    rng = random.Random(seed)
    batch = []
    for scenario in random_batch(seed, "stream-stream", per_combo):
        if not scenario.semantics.kip77:
            continue
        data = scenario.to_dict()
        data["semantics"] = rng.choice(ERAS)
        if rng.random() < 0.3:
            data["window"][rng.choice(["before_ms", "after_ms"])] = 0
        if rng.random() < 0.3:
            for event in data["events"]:
                if event["value"] is not None:
                    event["value"] = rng.choice(VALUES)
        batch.append(Scenario.from_dict(data))
    return batch


def _long_task(seed: int, variant: str, semantics: str, records: int = 1500) -> Scenario:
    """One task of ``records`` records over a few keys: timestamps rising with jitter and jumps (records behind
    retention, closed windows), null keys and values, a grace period."""
    rng = random.Random(seed)
    events, now = [], 0
    for _ in range(records):
        now += rng.choice([0, 0, 1, 2, 5]) + (rng.random() < 0.01) * rng.randint(20, 70_000)
        side = rng.choice(["left", "right"])
        events.append(
            {
                "side": side,
                "key": None if rng.random() < 0.03 else f"k{rng.randint(0, 6)}",
                "value": None if rng.random() < 0.05 else f"{side[0].upper()}{rng.randint(0, 99)}",
                "ts": max(0, now - rng.randint(0, 25)),
            }
        )
    window = {"before_ms": rng.randint(0, 15), "after_ms": rng.randint(0, 15), "grace_ms": rng.randint(0, 10)}
    return Scenario.from_dict(
        {"join": "stream-stream", "variant": variant, "semantics": semantics, "window": window, "events": events}
    )


@pytest.mark.parametrize("rows", [1, 3, 10_000])
def test_vectorised_stream_stream_joins_equal_the_reference_engine(spark, rows):
    batch = _batch(rows, 12)
    assert {s.variant for s in batch} == {"inner", "left", "outer"}
    assert {str(s.semantics) for s in batch} >= {"0.10.2", "3.1", "3.1.1", "3.4", "3.7", "4.4"}
    with small_arrow_batches(spark, rows):
        result = run_scenarios(spark, batch, method="vectorised")
        assert result.method == "vectorised"
        outputs, steps = spark_results(result)
    kinds = {row[11] for row in outputs}
    assert kinds == {"joined", "unmatched", "window-closed", "null-key"}, kinds
    assert {(row[7], row[8]) for row in steps} >= {
        ("dropped", "null-key"),
        ("dropped", "null-value"),
        ("no-match", "no-partner"),
        ("no-match", "expired"),
        ("buffered", "window-open"),
    }
    assert_same(batch, outputs, steps)


@pytest.mark.parametrize(
    "variant, semantics, coalesce",
    [
        ("inner", "latest", 1),
        ("left", "3.4", 1),
        ("left", "latest", 1),
        ("outer", "latest", 1),
        ("outer", "3.1.0", 1),
        ("left", "3.7", 400),
    ],
)
def test_long_tasks_carry_their_stores_and_buffer_across_many_batches(spark, monkeypatch, variant, semantics, coalesce):
    """Batches of 50 records, each a pass, or joined into passes of 400 (tasks then start and end within a pass)."""
    from kjoin.spark.passes import vectorised_stream

    monkeypatch.setattr(vectorised_stream, "COALESCE_ROWS", coalesce)
    scenarios = [_long_task(seed, variant, semantics) for seed in range(3)]
    with small_arrow_batches(spark, 50):
        result = run_scenarios(spark, scenarios, method="vectorised")
        assert result.method == "vectorised"
        outputs, steps = spark_results(result)
    assert len(outputs) > 1000
    assert_same(scenarios, outputs, steps)


def test_the_band_join_by_time_rank_equals_the_reference_engine(spark, monkeypatch):
    """The band join's other numbering (times by rank, for spans too wide for distances), forced on every pass."""
    from kjoin.spark.passes import vectorised_stream

    monkeypatch.setattr(vectorised_stream, "BAND_KEY_LIMIT", 0)
    scenarios = [_long_task(seed, variant, "latest", 400) for seed, variant in enumerate(["inner", "left", "outer"])]
    with small_arrow_batches(spark, 50):
        outputs, steps = spark_results(run_scenarios(spark, scenarios, method="vectorised"))
    assert len(outputs) > 300
    assert_same(scenarios, outputs, steps)


def test_the_carried_stores_are_bounded_by_the_retention_not_by_the_task():
    """Outside Spark: after 40 batches of 500 records with timestamps rising 1 ms per record, what a task carries
        is the records of its last retention (about 2 x 31 ms here), and the buffer only records whose window closed
    lately."""
    import pyarrow as pa

    from kjoin.spark.passes import vectorised_stream

    scenario = Scenario.from_dict(
        {
            "join": "stream-stream",
            "variant": "outer",
            "window": {"before_ms": 10, "after_ms": 20, "grace_ms": 1},
            "events": [{"side": "left", "key": "k", "value": "A", "ts": 1}],
        }
    )
    rules = vectorised_stream._Rules.of(scenario)
    task = vectorised_stream._Task()
    schema = None
    for b in range(40):
        ts = list(range(b * 500, (b + 1) * 500))
        batch = pa.RecordBatch.from_pydict(
            {
                "scenario": pa.array([0] * 500, pa.int64()),
                "partition": pa.array([0] * 500, pa.int32()),
                "side": ["left" if t % 2 else "right" for t in ts],
                "key": [f"k{t % 97}" for t in ts],
                "value": [f"v{t}" for t in ts],
                "ts": pa.array(ts, pa.int64()),
                "offset": pa.array(ts, pa.int64()),
                "position": pa.nulls(500, pa.int64()),
            }
        )
        if schema is None:
            from kjoin.spark.passes.task import _arrow_schema

            schema = _arrow_schema(batch.schema)
        out = vectorised_stream._segment(
            batch, rules, task, schema, json_keys=False, json_values=False, band_limit=vectorised_stream.BAND_KEY_LIMIT
        )
        assert out.num_rows >= 500
        assert len(task.stored[3]) <= 2 * (rules.retention + 1)
        # A record waits until stream time passes its close (ts + look-ahead + grace) and a sweep passes the gate.
        assert 0 < len(task.buffer.waiting) <= max(rules.look_ahead) + max(rules.gate) + 2 * rules.grace + 2
    assert task.rank == 20_000


def test_run_join_vectorised_equals_processors_on_topics(spark):
    """Topics (no ``position``, keys and values as they are, integer values): three partitions of out-of-order
    records, Arrow batches of 13; the vectorised rows equal the processors' row for row."""
    rng = random.Random(13)
    topics = []
    for side in ("left", "right"):
        rows = []
        for partition in range(3):
            for offset in range(rng.randint(150, 250)):
                key = None if rng.random() < 0.03 else f"k{rng.randint(0, 15)}"
                value = None if rng.random() < 0.05 else rng.randint(0, 99)
                rows.append((key, value, rng.randint(0, 400), partition, offset))
        frame = spark.createDataFrame(rows, "key string, value bigint, ts long, partition int, offset long")
        topics.append(Topic(frame, partitions=3))
    window = {"before_ms": 20, "after_ms": 5, "grace_ms": 3}
    order = ("partition", "step")
    for variant in ("inner", "left", "outer"):
        processors = run_join(*topics, "stream-stream", variant, window=window, method="processors")
        expected = processors.results.orderBy(*order).collect()
        with small_arrow_batches(spark, 13):
            vectorised = run_join(*topics, "stream-stream", variant, window=window, method="vectorised")
            assert vectorised.method == "vectorised"
            assert vectorised.results.orderBy(*order).collect() == expected


def test_auto_picks_the_vectorised_pass_for_large_stream_stream_tasks(spark):
    scenario = _long_task(7, "left", "latest", records=400)
    auto = run_scenarios(spark, [scenario])
    assert auto.method == "vectorised"
    assert_same([scenario], spark_rows(auto.outputs), spark_rows(auto.steps))


WINDOW = {"before_ms": 5, "after_ms": 5, "grace_ms": 0}


@pytest.mark.parametrize(
    "data, joiner, named",
    [
        ({"semantics": "0.10.1"}, None, "0.10.1 semantics"),
        ({"self_join": True}, None, "a self-join"),
        ({"then": [{"variant": "left"}]}, None, "chained joins"),
        ({}, lambda left, right: f"{left}+{right}", "custom joiner"),
    ],
)
def test_vectorised_refuses_what_it_cannot_run_exactly_and_auto_falls_back(spark, data, joiner, named):
    """Tasks of 300 records: ``auto`` would pick the vectorised pass if it could run them."""
    events = [
        {"side": "left" if i % 2 or data.get("self_join") else "right", "key": f"k{i % 5}", "value": f"v{i}", "ts": i}
        for i in range(300)
    ]
    scenario = Scenario.from_dict(
        {"join": "stream-stream", "variant": "left", "window": WINDOW, "events": events, **data}
    )
    with pytest.raises(SparkInputError, match=re.escape(named)):
        run_scenarios(spark, [scenario], joiner=joiner, method="vectorised")
    assert run_scenarios(spark, [scenario], joiner=joiner).method == "processors"


SWEEP_STOPS_INSIDE_A_LIST = {
    "join": "stream-stream",
    "variant": "outer",
    "window": {"before_ms": 2, "after_ms": 1, "grace_ms": 6},
    "events": [
        {"side": "left", "key": "k1", "value": "L0", "ts": 225},
        {"side": "left", "key": "k1", "value": "L1", "ts": 228},
        {"side": "left", "key": "k1", "value": "L2", "ts": 228},
        {"side": "right", "key": "k2", "value": "R0", "ts": 227},
        {"side": "right", "key": "k3", "value": "R1", "ts": 231},
        {"side": "right", "key": "k2", "value": "R2", "ts": 234},
        {"side": "left", "key": "k3", "value": "L3", "ts": 236},
    ],
}
"""The sweep reads value by value (``tests/test_kafka_oracle.py`` checks it against Kafka 3.8.1 and the latest):
R2's sweep stops at L2, the second value of the list <228, left, k1>, leaving the min time at 228, so L3@236 passes
the gate and releases R0, L1 and L2."""


def _repeated_groups(seed: int) -> Scenario:
    """One dense task where records often repeat the last one's side, key and ts: the outer-join buffer holds lists of
    several values under one ``<ts, side, key>``, and 3.8+ sweeps stop inside them."""
    rng = random.Random(seed)
    events, now = [], 0
    for i in range(150):
        if events and rng.random() < 0.3:
            events.append({**events[-1], "value": f"{events[-1]['side'][0].upper()}{i}"})
            continue
        now += rng.choice([0, 1, 2, 3, 12])
        side = rng.choice(["left", "right"])
        value = None if rng.random() < 0.15 else f"{side[0].upper()}{i}"
        ts = now if rng.random() < 0.6 else max(0, now - rng.randint(0, 20))
        events.append({"side": side, "key": f"k{rng.randint(1, 4)}", "value": value, "ts": ts})
    window = {"before_ms": rng.randint(0, 8), "after_ms": rng.randint(0, 8), "grace_ms": rng.randint(0, 8)}
    variant = rng.choice(["left", "outer"])
    return Scenario.from_dict({"join": "stream-stream", "variant": variant, "window": window, "events": events})


def test_a_sweep_stops_inside_a_list_of_one_ts_side_and_key_as_in_the_reference_engine(spark):
    """The walker reads the buffer value by value, as Kafka's ListValueStore iterator does: the min time a
    3.8+ sweep leaves is the ts of the record after the second side's first open one, even one of the same group."""
    pinned = Scenario.from_dict(SWEEP_STOPS_INSIDE_A_LIST)
    scenarios = [pinned] + [_repeated_groups(seed) for seed in range(8)]
    steps = kjoin.run(pinned).steps
    sweeps = [step.index for step in steps if any(o.kind.value == "window-closed" for o in step.outputs)]
    assert sweeps == [5, 6]
    with small_arrow_batches(spark, 3):
        result = run_scenarios(spark, scenarios, method="vectorised")
        assert result.method == "vectorised"
        outputs, steps = spark_results(result)
    assert_same(scenarios, outputs, steps)


def test_before_2_5_1_a_null_value_advances_its_window_store_in_the_vectorised_pass_too(spark):
    """``join_window_store_skips_null_values`` (KAFKA-9921): before 2.5.1 a null value's put advances its side's
    observed time, so A@100 falls into a dropped segment and a@100 finds nothing; from 2.5.1 A-a is joined. The
    pass agrees with the reference engine on both sides of the boundary, over batches of one record."""
    events = [
        {"side": "left", "key": "k", "value": None, "ts": 200_000},
        {"side": "left", "key": "k", "value": "A", "ts": 100},
        {"side": "right", "key": "k", "value": "a", "ts": 100},
        {"side": "right", "key": "k", "value": None, "ts": 300_000},
        {"side": "left", "key": "k", "value": "B", "ts": 150_000},
    ]
    window = {"before_ms": 1000, "after_ms": 1000, "grace_ms": 0}
    scenarios = [
        Scenario.from_dict(
            {"join": "stream-stream", "variant": variant, "semantics": semantics, "window": window, "events": events}
        )
        for semantics in ("2.4", "2.5.1", "latest")
        for variant in ("inner", "outer")
    ]
    assert [len(kjoin.run(s).outputs) for s in scenarios[:2]] == [0, 3]  # 2.4: no A-a; outer: A, a, B with null
    with small_arrow_batches(spark, 1):
        result = run_scenarios(spark, scenarios, method="vectorised")
        assert result.method == "vectorised"
        outputs, steps = spark_results(result)
    assert_same(scenarios, outputs, steps)
