"""Foreign-key joins on Spark: each scenario runs whole, in one Spark group.

The limitation, stated plainly. A KTable-KTable foreign-key join is not a per-task
computation: a left record on partition ``p`` sends a subscription to the partition of its
*foreign key*, which answers with a response back to ``p`` (KIP-213, :mod:`kjoin.joins.
fk_protocol`). What a task emits depends on messages from other tasks and on when they are
delivered, so the Kafka tasks of one scenario cannot run independently as the primary-key
joins do (:mod:`kjoin.spark.passes.task`, one Spark group per ``(scenario, partition)``). Here the
unit of parallelism is the whole scenario: every record and ``deliver`` instruction of one
scenario goes to one Spark group, sorted by its position in the scenario, and that group
runs the reference engine's foreign-key driver (:func:`kjoin.engine.run`: all tasks, the
subscription and response topics, and the scenario's delivery mode) record by record. So:

* many FK scenarios run in parallel (one per group), but one FK scenario uses one core,
  however many partitions it declares;
* one scenario's records, the state of all its tasks and its trace history live in one
  Python worker's memory: fine for scenarios, examples and tests (:func:`run_scenarios`),
  not a way to join two large topics by a foreign key;
* :meth:`SparkRun.trace` of an FK scenario is the whole scenario's trace (the partition
  argument cannot select a task whose result depends on the others).

A primary-key scenario whose tasks share state runs here too (:func:`runs_whole`): a left/outer stream-stream
join's tasks in one instance before KAFKA-14862 share its time tracker, so the order across tasks decides the
results (:attr:`kjoin.Scenario.tasks_share_time`).

Rows have the schema of :mod:`kjoin.spark.passes.task`'s results (``row = "output"`` or
``"step"``), so an FK scenario's results sit in the same frames as the primary-key ones; an
output row's ``reason`` is already filled here (:func:`kjoin.spark.debug.fk.output_reasons`), as
the whole trace is at hand, and :attr:`SparkRun.explained_outputs` reads it.
A row's ``partition`` is the task of its step (for a message delivery, the partition it was
delivered to) and ``step`` its index in the trace, where message deliveries are steps too.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Callable, Iterator, Mapping

from pyspark.sql import functions as F
import pyarrow as pa

from ...engine import run
from ...joins import default_joiner
from ...records import Side
from ...scenario import Deliver, Event, Scenario
from ..debug.fk import output_reasons
from ..placement import task_numbers
from .task import RESULT_FIELDS, append_step_rows, json_text, result_schema

__all__ = ["DELIVER", "runs_whole", "script_rows", "fk_results", "fk_trace", "fk_task_function"]

DELIVER = "deliver"
"""The ``side`` of a records row that is a ``{deliver: ...}`` instruction (explicit delivery);
its ``value`` is the selector as JSON text (``"next"``, ``"m3"`` …)."""


def runs_whole(scenario: Scenario) -> bool:
    """Whether ``scenario`` runs whole here rather than task by task: a foreign-key join, or a primary-key join
    whose tasks share an instance's state (:attr:`kjoin.Scenario.tasks_share_time`: the order across its tasks,
    the events' listed order, decides its results). Either way the reference engine runs every task."""
    return scenario.join == "fk" or getattr(scenario, "tasks_share_time", False)


def script_rows(scenario_id: int, scenario: Scenario) -> list[tuple]:
    """The records rows of one FK scenario, in the columns of :func:`run_scenarios`'s records
    frame (``scenario, partition, side, key, value, ts, offset, position``): every record of
    the script with its partition and offset, and every deliver instruction, ``position``
    their index in the script."""
    rows = []
    for position, item in enumerate(scenario.script()):
        if isinstance(item, Deliver):
            rows.append((scenario_id, 0, DELIVER, None, json_text(item.which), 0, None, position))
        else:
            rows.append(
                (
                    scenario_id,
                    item.partition,
                    item.side.value,
                    json_text(item.key),
                    json_text(item.value),
                    item.ts,
                    item.offset,
                    position,
                )
            )
    return rows


def _rebuild(config: Scenario, rows: list[tuple[str, Any, Any, int, int, int]]) -> Scenario:
    """The scenario from its options and its rows ``(side, key, value, ts, partition, offset)``
    as JSON text, in position order."""
    events: list[Event | Deliver] = []
    for side, key, value, ts, partition, offset in rows:
        if side == DELIVER:
            events.append(Deliver(json.loads(value)))
            continue
        events.append(
            Event(
                Side(side),
                None if key is None else json.loads(key),
                None if value is None else json.loads(value),
                ts,
                partition,
                offset,
            )
        )
    return replace(config, events=tuple(events))


def fk_task_function(
    scenarios: Mapping[int, Scenario], joiner: Callable[[Any, Any], Any] | None = None
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: input batches hold whole FK scenarios sorted by
    ``(scenario, position)``; each scenario, once all its rows are in, runs through the
    reference engine and becomes result rows."""
    join_values = joiner or default_joiner
    options = {scenario_id: replace(config, events=()) for scenario_id, config in scenarios.items()}
    names = [name for name, _ in RESULT_FIELDS]

    def results(scenario_id: int, rows: list[tuple]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {name: [] for name in names}
        trace = run(_rebuild(options[scenario_id], rows), join_values)
        # A foreign-key result's reason comes from its chain of messages; a primary-key join's is explained as the
        # per-task pass's are (SparkRun.explained_outputs).
        reasons = (
            output_reasons(trace)
            if options[scenario_id].join == "fk"
            else [[None] * len(s.outputs) for s in trace.steps]
        )
        for step in trace.steps:  # a DeliveryStep's record is its row: the message's partition, key, ts
            row = step.record
            first = len(out["row"])
            append_step_rows(out, scenario_id, step.index, row, json_text(row.key), step, json_text, json_text)
            # An output row's reason (SparkRun.explained_outputs): matched, tombstone, or its null result's verdict.
            out["reason"][first : first + len(step.outputs)] = reasons[step.index]
        return out

    def task(batches: Iterator[Any]) -> Iterator[Any]:
        schema = pa.schema(
            [
                pa.field(
                    name,
                    {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "boolean": pa.bool_()}.get(
                        kind, pa.string()
                    ),
                )
                for name, kind in RESULT_FIELDS
            ]
        )

        def batch_of(out: dict[str, list[Any]]) -> Any:
            return pa.RecordBatch.from_arrays(
                [pa.array(out[name], type=schema.field(name).type) for name in names], schema=schema
            )

        current: int | None = None
        rows: list[tuple] = []
        for batch in batches:
            columns = {
                name: batch.column(name).to_pylist()
                for name in ("scenario", "partition", "side", "key", "value", "ts", "offset")
            }
            for i in range(batch.num_rows):
                scenario_id = columns["scenario"][i]
                if scenario_id != current:
                    if current is not None:
                        yield batch_of(results(current, rows))
                    current, rows = scenario_id, []
                rows.append(
                    (
                        columns["side"][i],
                        columns["key"][i],
                        columns["value"][i],
                        columns["ts"][i],
                        columns["partition"][i],
                        columns["offset"][i],
                    )
                )
        if current is not None:
            yield batch_of(results(current, rows))

    return task


def fk_results(
    records: Any,
    scenarios: Mapping[int, Scenario],
    joiner: Callable[[Any, Any], Any] | None = None,
    spark_partitions: int | None = None,
) -> Any:
    """The result frame of the FK scenarios whose rows are in ``records``: repartitioned by
    ``scenario`` only (one group per scenario, each in a Spark partition of its own when there are at least as many
    as scenarios: :mod:`kjoin.spark.placement`) and sorted by position within it."""
    if spark_partitions:
        grouped = records.repartitionById(spark_partitions, task_numbers(dict.fromkeys(scenarios, 1), F.lit(0)))
    else:
        grouped = records.repartition("scenario")
    ordered = grouped.sortWithinPartitions("scenario", "position")
    return ordered.select("scenario", "partition", "side", "key", "value", "ts", "offset", "position").mapInArrow(
        fk_task_function(scenarios, joiner), result_schema("string", "string")
    )


def fk_trace(records: Any, scenario_id: int, config: Scenario, joiner: Callable[[Any, Any], Any] | None = None) -> Any:
    """Drill down: collect one FK scenario's rows (only those) and return the reference
    engine's trace of the whole scenario."""
    rows = (
        records.filter(F.col("scenario") == scenario_id)
        .orderBy("position")
        .select("side", "key", "value", "ts", "partition", "offset")
        .collect()
    )
    scenario = _rebuild(config, [(r["side"], r["key"], r["value"], r["ts"], r["partition"], r["offset"]) for r in rows])
    return run(scenario, joiner or default_joiner)
