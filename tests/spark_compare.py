"""Helpers for the Spark differential tests: random scenario batches for every join type,
variant and era (primary-key, versioned, foreign-key), and both engines' results as
comparable rows, per (scenario, partition), in emission order."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

from kjoin import Fate, Scenario, ScenarioError, run
from kjoin.ordering import merge_by_timestamp
from kjoin.records import Record
from kjoin.scenario import VARIANTS, VERSIONED_MODES

ERAS = ("0.10.0", "0.10.2", "2.3", "3.1", "latest")
"""Every behaviour boundary of the primary-key joins: 0.10.0 (old rules), 0.10.2 (KIP-77),
2.3 (output timestamps are the max of both sides: stream-stream from 2.0, table-table from
2.3), 3.1 (the spurious-result fix) and the latest (KIP-962 null keys, from 3.7)."""
STREAM_STREAM_ERAS = ("0.10.0", "0.10.2", "2.3", "3.1", "3.4", "latest")
"""The stream-stream joins add 3.4: window stores hide records behind their retention from 3.4 (before, a record is
found until its 60 s segment drops), and from 3.7 a skipped null key or value moves stream time (3.1 to 3.6 check
first): 3.1 has the old rule of both, 3.4 one of each, the latest the new rule of both. The outer-join buffer's
sweep differs in all three too: 3.1 (3.1.0) gates by the after, 3.4 by the look-back (3.1.1 to 3.7), both walking
to the first open entry; the latest (3.8+) judges each entry by its own side."""
SPREAD_TIMESTAMP_SHARE = 0.4
"""The share of stream-stream scenarios whose timestamps cluster around 0, 60 s and 120 s, so that window stores'
segments drop and records meet closed windows and records behind the retention."""
VERSIONED_ERAS = ("3.5", "latest")
"""Versioned tables exist from 3.5 (KIP-914); the latest adds KIP-962's null-key rules."""
GRACE_ERAS = ("3.6", "latest")
"""The stream-table grace period exists from 3.6 (KIP-923)."""
FK_ERAS = ("2.4", "latest")
"""Foreign-key joins exist from 2.4 (KIP-213); the latest has the 3.7 left-join rules."""

KINDS = ("stream-stream", "stream-table", "table-table", "versioned-stream-table", "versioned-table-table", "fk")
"""The join types of the differential suite."""


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"))


# -- both engines' rows ---------------------------------------------------------------------------
def reference_rows(scenario_id: int, scenario: Scenario) -> tuple[list[tuple], list[tuple]]:
    """The reference engine's outputs and non-joined steps, in the Spark frames' columns."""
    outputs, steps = [], []
    for step in run(scenario).steps:
        r = step.record
        for o in step.outputs:
            outputs.append(
                (
                    scenario_id,
                    r.partition,
                    step.index,
                    r.side.value,
                    r.offset,
                    _json(o.key),
                    _json(o.left),
                    _json(o.right),
                    o.value,
                    o.ts,
                    o.tombstone,
                    o.kind.value,
                    o.origin_step,
                )
            )
        if step.fate is not Fate.JOINED:
            steps.append(
                (
                    scenario_id,
                    r.partition,
                    step.index,
                    r.side.value,
                    r.offset,
                    _json(r.key),
                    r.ts,
                    step.fate.value,
                    None if step.reason is None else step.reason.value,
                    step.until_ms,
                )
            )
    return outputs, steps


def by_task(rows: Iterable[tuple]) -> dict[tuple[int, int], list[tuple]]:
    """Rows grouped by (scenario, partition), keeping their order."""
    grouped: dict[tuple[int, int], list[tuple]] = {}
    for row in rows:
        grouped.setdefault((row[0], row[1]), []).append(tuple(row))
    return grouped


def _clean(row: Any) -> tuple:
    return tuple(None if (isinstance(c, float) and c != c) else c for c in row)


def spark_rows(frame: Any) -> list[tuple]:
    """Collect a small result frame in its emission order (no sort: order is what is tested)."""
    return [_clean(row) for row in frame.collect()]


def spark_results(result: Any) -> tuple[list[tuple], list[tuple]]:
    """A run's outputs and steps from one collect of its results (one Spark job, not two),
    each in emission order."""
    from kjoin.spark import OUTPUT_COLUMNS, STEP_COLUMNS

    columns = list(dict.fromkeys(["row", *OUTPUT_COLUMNS, *STEP_COLUMNS]))
    outputs, steps = [], []
    for row in result.results.select(*columns).collect():
        if row["row"] == "output":
            outputs.append(_clean(row[c] for c in OUTPUT_COLUMNS))
        else:
            steps.append(_clean(row[c] for c in STEP_COLUMNS))
    return outputs, steps


@contextmanager
def small_arrow_batches(spark: Any, rows: int = 7) -> Iterator[None]:
    """Arrow batches of ``rows`` records inside ``mapInArrow``: a Kafka task then spans many batches and a batch
    several tasks, so whatever a per-task pass carries from batch to batch (its stores, its step count) is
    exercised."""
    name = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(name)
    spark.conf.set(name, str(rows))
    try:
        yield
    finally:
        spark.conf.set(name, before)


def assert_same(scenarios: list[Scenario], spark_outputs: list[tuple], spark_steps: list[tuple]) -> None:
    """Outputs and steps of every (scenario, partition) equal the reference engine's, in order."""
    expected_outputs, expected_steps = [], []
    for scenario_id, scenario in enumerate(scenarios):
        outputs, steps = reference_rows(scenario_id, scenario)
        expected_outputs += outputs
        expected_steps += steps
    got_o, want_o = by_task(spark_outputs), by_task(expected_outputs)
    got_s, want_s = by_task(spark_steps), by_task(expected_steps)
    for task in sorted(set(got_o) | set(want_o)):
        assert got_o.get(task, []) == want_o.get(task, []), (
            f"outputs differ for (scenario, partition) {task}: {scenarios[task[0]].to_dict()}"
        )
    for task in sorted(set(got_s) | set(want_s)):
        assert got_s.get(task, []) == want_s.get(task, []), (
            f"steps differ for (scenario, partition) {task}: {scenarios[task[0]].to_dict()}"
        )


# -- topics: run_join against the reference engine ----------------------------------------------
def reference_outputs(
    left: list[Record],
    right: list[Record],
    join: str,
    variant: str,
    partitions: int,
    window: Any = None,
    options: dict | None = None,
) -> dict[int, list[tuple]]:
    """Per partition (Kafka task): the reference engine's outputs as ``(step, key, value, ts,
    tombstone)``, the task's records (by offset within each input partition) taken in
    Kafka's processing order, :func:`kjoin.ordering.merge_by_timestamp` (ties as Kafka's
    ``PartitionGroup`` takes them). ``options``: more
    scenario fields (versioned tables, grace …)."""
    expected: dict[int, list[tuple]] = {}
    for partition in range(partitions):
        logs = [sorted((r for r in side if r.partition == partition), key=lambda r: r.offset) for side in (left, right)]
        ordered = merge_by_timestamp(*logs)
        scenario = Scenario.from_records(join, variant, ordered, window=window, partitions=partitions)
        if options:
            scenario = Scenario.from_dict({**scenario.to_dict(), **options})
        rows = [(step.index, o.key, o.value, o.ts, o.tombstone) for step in run(scenario).steps for o in step.outputs]
        if rows:
            expected[partition] = rows
    return expected


def spark_outputs(result: Any) -> dict[int, list[tuple]]:
    """Per partition: a ``run_join`` result's outputs ``(step, key, value, ts, tombstone)`` in
    emission order. The processor and vectorised paths yield each task's rows in emission
    order; the native path (``method="native"``) yields one row per step, unsorted. A stable
    sort by ``step`` of the collected rows is the emission order on every path."""
    got: dict[int, list[tuple]] = {}
    for row in result.outputs.select("partition", "step", "key", "value", "ts", "tombstone").collect():
        got.setdefault(row["partition"], []).append(
            (row["step"], row["key"], row["value"], row["ts"], row["tombstone"])
        )
    return {partition: sorted(rows, key=lambda row: row[0]) for partition, rows in got.items()}


# -- random scenarios -----------------------------------------------------------------------------
def combos(kind: str) -> list[dict[str, Any]]:
    """The (variant, era, …) combinations of one join type: each gets the same number of
    scenarios in a batch."""
    if kind in ("stream-stream", "stream-table", "table-table"):
        return [
            {"variant": v, "semantics": e}
            for v in VARIANTS[kind]
            for e in (STREAM_STREAM_ERAS if kind == "stream-stream" else ERAS)
            if not (kind == "stream-table" and v == "inner" and e == "0.10.0")
        ]
    if kind == "versioned-stream-table":
        return [
            {"variant": v, "semantics": e, "grace": False} for v in VARIANTS["stream-table"] for e in VERSIONED_ERAS
        ] + [{"variant": v, "semantics": e, "grace": True} for v in VARIANTS["stream-table"] for e in GRACE_ERAS]
    if kind == "versioned-table-table":
        return [
            {"variant": v, "semantics": e, "versioned_mode": "final"}
            for v in VARIANTS["table-table"]
            for e in VERSIONED_ERAS
        ] + [
            {"variant": "inner", "semantics": e, "versioned_mode": m}
            for m in VERSIONED_MODES
            if m != "final"
            for e in VERSIONED_ERAS
        ]
    if kind == "fk":
        return [{"variant": v, "semantics": e} for v in VARIANTS["fk"] for e in FK_ERAS]
    raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")


def combo_label(scenario: Scenario) -> str:
    """``variant × era`` (plus grace / versioned mode / delivery where they apply), for the counts."""
    era = str(scenario.semantics)
    parts = [scenario.variant, era]
    if scenario.join == "stream-table" and scenario.right.versioned:
        parts.append("grace" if scenario.grace_ms is not None else "no grace")
    if scenario.join == "table-table" and (scenario.left.versioned or scenario.right.versioned):
        parts.append(scenario.versioned_mode)
    return " × ".join(parts)


def combo_counts(scenarios: Iterable[Scenario]) -> Counter:
    return Counter(combo_label(s) for s in scenarios)


def _pk_events(rng: random.Random, max_events: int, max_ts: int = 80) -> list[dict[str, Any]]:
    keys = ["k1", "k2", "k3", "k4", "k5", 7, None]
    events = []
    for _ in range(rng.randint(0, max_events)):
        side = rng.choice(["left", "right"])
        value = None if rng.random() < 0.2 else f"{side[0].upper()}{rng.randint(0, 9)}"
        events.append({"side": side, "key": rng.choice(keys), "value": value, "ts": rng.randint(0, max_ts)})
    return events


def _fk_events(rng: random.Random, max_events: int, explicit: bool) -> list[dict[str, Any]]:
    pks, fks = ["a", "b", "c", "d", 1], ["X", "Y", "Z", 7]
    events: list[dict[str, Any]] = []
    for _ in range(rng.randint(0, max_events)):
        if explicit and rng.random() < 0.3:
            events.append({"deliver": rng.choice(["next", "next", "all", "subscription", "response"])})
            continue
        if rng.random() < 0.55:
            fk = None if rng.random() < 0.1 else rng.choice(fks)
            value = None if rng.random() < 0.2 else {"fk": fk, "v": rng.randint(0, 3)}
            key = None if rng.random() < 0.05 else rng.choice(pks)
            events.append({"side": "left", "key": key, "value": value, "ts": rng.randint(0, 40)})
        else:
            draw = rng.random()  # now and then "": zero bytes, which a response delivers as null (kjoin.serde)
            value = None if draw < 0.2 else "" if draw < 0.27 else f"r{rng.randint(0, 4)}"
            key = None if rng.random() < 0.05 else rng.choice(fks)
            events.append({"side": "right", "key": key, "value": value, "ts": rng.randint(0, 40)})
    return events


_DELIVER_ERROR = re.compile(r"events\[(\d+)\]\.deliver")


def _runnable(data: dict[str, Any]) -> Scenario:
    """An explicit-delivery scenario whose every ``deliver`` finds a message: a ``deliver``
    that the reference engine refuses (nothing of that kind in flight) becomes ``all``,
    which never fails."""
    for _ in range(len(data["events"]) + 1):
        scenario = Scenario.from_dict(data)
        try:
            run(scenario)
            return scenario
        except ScenarioError as error:
            found = _DELIVER_ERROR.search(str(error))
            if not found:
                raise
            data["events"][int(found.group(1))] = {"deliver": "all"}
    raise AssertionError("unreachable: every deliver event is 'all'")  # pragma: no cover


def random_scenario(rng: random.Random, kind: str, combo: dict[str, Any], max_events: int = 30) -> Scenario:
    """One random scenario of ``kind`` for ``combo`` (see :func:`combos`): several
    partitions, out-of-order timestamps, null keys and values (tombstones)."""
    join = kind.replace("versioned-", "")
    data: dict[str, Any] = {
        "join": join,
        "variant": combo["variant"],
        "semantics": combo["semantics"],
        "partitions": rng.randint(1, 3),
    }
    if kind == "fk":
        mode = rng.choice(["immediate", "explicit", "random"])
        data["foreign_key"] = "fk"
        data["events"] = _fk_events(rng, max_events, mode == "explicit")
        data["delivery"] = (
            {"mode": "random", "seed": rng.randint(0, 10_000), "wait_for_row": rng.random() < 0.5}
            if mode == "random"
            else mode
        )
        if rng.random() < 0.15:
            data["hash_check"] = False
        if rng.random() < 0.2:  # a materialized result store, cached or not; commits count deliveries too
            data["materialized"] = True
            if rng.random() < 0.5:
                data["caching"] = ["result"]
                data["commit_every"] = rng.choice([1, 1, 2, 3])
        if data["semantics"] == "latest":
            for side in ("left", "right"):
                if rng.random() < 0.2:
                    data[side] = {"versioned": True, "history_retention_ms": rng.randint(0, 30)}
        return _runnable(data) if mode == "explicit" else Scenario.from_dict(data)
    data["events"] = _pk_events(rng, max_events)
    if kind == "stream-stream":
        if rng.random() < SPREAD_TIMESTAMP_SHARE:
            for event in data["events"]:
                event["ts"] += rng.choice([0, 60_000, 120_000]) - 40
                event["ts"] = max(event["ts"], 0)
        data["window"] = {
            "before_ms": rng.randint(0, 12),
            "after_ms": rng.randint(0, 12),
            "grace_ms": None if rng.random() < 0.25 else rng.randint(0, 10),
        }
    elif kind == "versioned-stream-table":
        retention = rng.randint(0, 40)
        data["right"] = {"versioned": True, "history_retention_ms": retention}
        if combo["grace"]:
            data["grace_ms"] = rng.randint(0, retention)
    elif kind == "versioned-table-table":
        sides = (
            ["left", "right"]
            if combo["versioned_mode"] != "final"
            else rng.choice([["left"], ["right"], ["left", "right"], ["left", "right"]])
        )
        for side in sides:
            data[side] = {"versioned": True, "history_retention_ms": rng.randint(0, 40)}
        if combo["versioned_mode"] != "final":
            data["versioned_mode"] = combo["versioned_mode"]
    return Scenario.from_dict(data)


def random_batch(seed: int, kind: str, per_combo: int, max_events: int = 30) -> list[Scenario]:
    """``per_combo`` random scenarios of ``kind`` for every one of its combinations
    (:func:`combos`), shuffled, from one seed (hypothesis draws the seed: a whole batch is
    too large for one hypothesis example's buffer)."""
    rng = random.Random(seed)
    batch = [random_scenario(rng, kind, combo, max_events) for combo in combos(kind) for _ in range(per_combo)]
    rng.shuffle(batch)
    return batch


def kafka_assigned(rows: Iterable[tuple], partitions: int) -> list[tuple]:
    """What a producer does without an explicit partition: rows ``(key, value, ts, _, _)``
    get the default partitioner (a null key to partition 0, as kjoin's readers do) and
    offsets counting up per partition."""
    from kjoin.partitioner import default_partition

    offsets: dict[int, int] = {}
    assigned = []
    for k, v, ts, _, _ in rows:
        partition = 0 if k is None else default_partition(k, partitions)
        assigned.append((k, v, ts, partition, offsets.get(partition, 0)))
        offsets[partition] = offsets.get(partition, 0) + 1
    return assigned
