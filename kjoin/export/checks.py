"""What an exported test asserts and what it can express: kjoin's records of the output topic after each input
record, and the checks that refuse a scenario Kafka Streams' DSL or TopologyTestDriver cannot build (or whose
outputs the judging release would not give)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..engine import run
from ..records import render_value
from ..scenario import AggregateSpec, Scenario, ScenarioError
from ..trace import output_to_dict
from .judges import WINDOWED_TABLE_JUDGE, ExportError, KafkaJudge

__all__ = [
    "text",
    "kjoin_outputs",
    "aggregate_outputs",
    "check_aggregate",
    "check_expressible",
    "check_fields",
    "EXPORTED_FIELDS",
    "check_judge_agrees",
]


def text(value: Any) -> str | None:
    """A key or value as the string serde carries it: a string as is, null as null, anything else as kjoin's
    JSON (keys sorted, no spaces)."""
    return None if value is None else render_value(value)


def kjoin_outputs(scenario: Scenario) -> list[list[tuple[str | None, str | None, int]]]:
    """``(key, value, ts)`` of every record kjoin writes to the output topic, per input record (a foreign-key
    join's deliveries count with the input record that sent them); a tombstone's value is None."""
    per_input: list[list[tuple[str | None, str | None, int]]] = []
    for step in run(scenario).steps:
        if step.message is None:
            per_input.append([])
        for output in step.outputs:
            per_input[-1].append((text(output.key), None if output.tombstone else text(output.value), output.ts))
    return per_input


def aggregate_outputs(spec: AggregateSpec) -> list[list[tuple[str | None, str | None, int]]]:
    per_event = []
    for step in run(spec).steps:
        records = []
        for output in step.outputs:
            data = output_to_dict(output)
            key = text(data["key"])
            if "window" in data:
                key = f"{key}@[{data['window']['start_ms']}, {data['window']['end_ms']})"
            records.append((key, None if output.tombstone else text(output.value), output.ts))
        per_event.append(records)
    return per_event


# -- what the DSL and TopologyTestDriver can express ------------------------------------------------------------
def check_aggregate(spec: AggregateSpec) -> None:
    """Raise an ExportError for what of the windowed-table design today's DSL cannot build, or the harness has not
    proved."""
    join, data = spec.join, spec.data
    if data.get("window_shift_ms") is not None or join not in ("window-aggregate", "table-aggregate", "wtable-wtable"):
        what = "a window shifter" if join == "wtable-wtable" else "a window selector"
        raise ExportError(
            f"join {join}: {what} (the windowed-table design) never shipped in Kafka Streams; no Kafka Streams test "
            "can build it"
        )
    for name, why in (
        ("right_window", "two WTables of different windows"),
        ("right_aggregate", "a right WTable that is not a count"),
        ("retention_ms", "a window store's retention_ms"),
        ("segments", "the seed's rolling segments"),
    ):
        if data.get(name) is not None:
            raise ExportError(f"{name}: {why} is not exported; the export builds what kafka_oracle/ checks")
    if data.get("partitions", 1) != 1:
        raise ExportError(
            f"partitions: {data['partitions']}: TopologyTestDriver runs one task, one partition per topic; export "
            "each task on its own (its records, partitions: 1)"
        )
    if join == "wtable-wtable" and data.get("aggregate", "count") != "count":
        raise ExportError("aggregate: a wtable-wtable join is exported over two windowed counts only")
    judge = WINDOWED_TABLE_JUDGE
    if str(spec.semantics()) != judge.version:
        as_judged = AggregateSpec.from_dict({**data, "semantics": judge.version})
        if aggregate_outputs(spec) != aggregate_outputs(as_judged):
            raise ExportError(
                f"semantics {spec.semantics()}: kjoin's outputs differ from Kafka {judge.version}'s, which judges an "
                f"exported aggregate (e.g. a table aggregate's update within a group is two outputs before 3.5, "
                f'KIP-904); export with semantics "{judge.version}"'
            )


EXPORTED_FIELDS = frozenset(
    {
        "join", "variant", "events", "semantics", "window", "partitions", "left", "right", "name", "foreign_key",
        "grace_ms", "delivery", "hash_check", "versioned_mode", "self_join", "optimize", "then", "materialized",
        "send_old_values", "caching", "commit_every", "arrival", "one_instance",
    }
)  # fmt: skip
"""The scenario fields the exporter writes into a test or refuses below. A field it does not name is refused when
set (:func:`check_fields`): an exported test would otherwise check Kafka against a scenario without it.
``one_instance`` changes nothing on the one partition an exported test has (more are refused below)."""


def check_fields(scenario: Scenario) -> None:
    """Raise an ExportError naming the first field of ``scenario`` the exporter does not know that is set."""
    for f in dataclasses.fields(scenario):
        if f.name in EXPORTED_FIELDS:
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if default is dataclasses.MISSING or getattr(scenario, f.name) != default:
            raise ExportError(f"{f.name}: the exporter does not write this scenario field into a Kafka Streams test")


def check_expressible(scenario: Scenario, judge: KafkaJudge) -> None:
    """Raise an ExportError naming the first thing of ``scenario`` that ``judge``'s DSL or TopologyTestDriver
    cannot express."""
    check_fields(scenario)
    version = f"Kafka {judge.version}"
    if scenario.partitions != 1:
        raise ExportError(
            f"partitions: {scenario.partitions}: TopologyTestDriver runs one task, one partition per topic; export "
            "each task on its own (its records, partitions: 1)"
        )
    if scenario.delivery.mode != "immediate" or any(not hasattr(event, "side") for event in scenario.events):
        raise ExportError(
            f"delivery: {scenario.delivery.mode}: TopologyTestDriver delivers a foreign-key join's messages at once, "
            "after each input record; export the scenario with delivery: immediate and no deliver events"
        )
    if not scenario.hash_check:
        raise ExportError("hash_check: false is a teaching switch; Kafka Streams always checks the hash")
    if scenario.versioned_mode != "final":
        raise ExportError(
            f"versioned_mode: {scenario.versioned_mode} is a design KIP-914 rejected; Kafka Streams has only final"
        )
    if scenario.send_old_values:
        raise ExportError("send_old_values: the output topic carries only new values; export without it")
    if scenario.commit_every != 1:
        raise ExportError(f"commit_every: {scenario.commit_every}: TopologyTestDriver commits after every record")
    if (scenario.left.versioned or scenario.right.versioned) and not judge.semantics.versioned_joins:
        raise ExportError(f"versioned tables arrived in Kafka 3.5; {version} judges semantics {scenario.semantics}")
    if scenario.grace_ms is not None and not judge.semantics.stream_table_grace:
        raise ExportError(
            f"a stream-table grace period arrived in Kafka 3.6; {version} judges semantics {scenario.semantics}"
        )
    if scenario.optimize and not judge.semantics.optimized_self_join:
        raise ExportError(f"the optimized self-join arrived in Kafka 3.4; {version} judges {scenario.semantics}")
    if scenario.join == "stream-table" and scenario.grace_ms is not None:
        for event in scenario.events:
            if event.side.value == "left" and event.key is None:
                raise ExportError(
                    f"a null-key stream record (ts {event.ts}) in a stream-table join with a grace period: "
                    f"{version} throws a NullPointerException for it; drop the record or the grace_ms"
                )


def check_judge_agrees(scenario: Scenario, judge: KafkaJudge, expected: list) -> None:
    """The exported expectations are kjoin's outputs for the scenario's semantics; they must also be kjoin's
    outputs for the judging version, or the test would check a version against another version's rules."""
    try:
        judged = kjoin_outputs(scenario.with_semantics(judge.version))
    except ScenarioError as error:
        raise ExportError(f"kjoin cannot run the scenario as Kafka {judge.version}: {error}") from None
    for index, (mine, theirs) in enumerate(zip(expected, judged)):
        if mine != theirs:
            raise ExportError(
                f"semantics {scenario.semantics} and Kafka {judge.version} (which judges its era) emit different "
                f"records for input {index}: {_records(mine)} against {_records(theirs)}; export with semantics "
                f'"{judge.version}", or with the semantics of a version kafka_oracle/ runs'
            )


def _records(records: list) -> str:
    return "[" + ", ".join(f"{key}:{value}@{ts}" for key, value, ts in records) + "]"
