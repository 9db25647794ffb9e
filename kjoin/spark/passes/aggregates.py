"""KTable aggregates, windowed aggregates and the WTable joins on Spark, record for record
as the reference engine (:mod:`kjoin.engine.aggregates`) runs them.

    >>> from kjoin.spark import local_session
    >>> from kjoin.spark.passes.aggregates import run_aggregate
    >>> run = run_aggregate(local_session(), {"join": "window-aggregate", "window": {"size_ms": 10},
    ...                                       "events": [{"key": "p1", "value": 1, "ts": 5}]})
    >>> [o["window"] for o in run.collect()[0]["outputs"]]
    [{'end_ms': 10, 'start_ms': 0}]

How it works:

* A scenario (the data :class:`kjoin.scenario.AggregateSpec` validates) becomes one
  row per event: ``scenario, partition, side, key, value, ts, offset, position``, the key and
  value as JSON text, ``partition`` Kafka's default partition of the key (or the event's own),
  ``position`` the event's index, which is its step in the reference trace.
* A windowed aggregate and every WTable join keep per-task state only (each task its own
  window stores, stream time and table): the rows are repartitioned by ``(scenario,
  partition)`` and sorted by ``position`` within each Spark partition, and ``mapInArrow``
  runs each Kafka task through the reference engine's own processors, built by the same
  factories (:func:`kjoin.engine.aggregates.aggregate_processors`). There is one copy of the rules.
* A table aggregate crosses tasks: an update that moves a record from one group to another
  subtracts in the old group's task and adds in the new group's, through the repartition
  topic. Here the unit of work is the whole scenario (as for foreign-key joins,
  :mod:`kjoin.spark.passes.fk_task`): all its rows go to one Spark group, sorted by position, and
  one :class:`~kjoin.joins.aggregate.TableAggregate` runs all its tasks. The limit: one table
  aggregate scenario uses one core and its stores live in one Python worker's memory, fine
  for scenarios and tests, not a way to aggregate a large topic. Many scenarios still run in
  parallel, one per group.
* Each output becomes a row ``row = "output"`` whose ``output`` column is the JSON text of
  :func:`kjoin.trace.output_to_dict` (a windowed key as ``key`` plus ``window``), and
  every input record a row ``row = "step"`` with its fate, reason and ``until_ms``.

A failing aggregator (a sum over a text field) fails the Spark job with the reference
engine's message, which names the event and the value.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator, Mapping

from pyspark.sql import functions as F
import pyarrow as pa

from ...engine.aggregates import aggregate_processors
from ...engine.aggregates import run_aggregate as run_reference
from ...joins import StepContext, default_joiner
from ...records import Record, Side, render_value
from ...scenario.aggregate import AggregateSpec
from ...state import StateLog
from ...trace import output_to_dict
from ..placement import task_numbers

__all__ = [
    "AGGREGATE_RESULT_SCHEMA",
    "AggregateSparkRun",
    "aggregate_scenarios",
    "run_aggregate",
    "reference_results",
    "scenario_rows",
]

AGGREGATE_RESULT_SCHEMA = (
    "`row` string, `scenario` long, `partition` int, `step` long, `seq` int, `side` string, `offset` long, "
    "`key` string, `output` string, `fate` string, `reason` string, `until_ms` long"
)
"""The result rows: ``seq`` orders a step's outputs; ``output`` is JSON text (outputs only),
``fate``/``reason``/``until_ms`` say what became of the input record (steps only)."""

_RECORD_COLUMNS = ("scenario", "partition", "side", "key", "value", "ts", "offset", "position")


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"), default=render_value)


def _spec(spec: AggregateSpec | Mapping[str, Any]) -> AggregateSpec:
    return spec if isinstance(spec, AggregateSpec) else AggregateSpec.from_dict(spec)


def scenario_rows(scenario_id: int, spec: AggregateSpec | Mapping[str, Any]) -> list[tuple]:
    """The records rows of one scenario (columns ``scenario, partition, side, key, value, ts,
    offset, position``), each event on the partition the reference engine gives it."""
    spec = _spec(spec)
    records = spec.records()
    return [
        (scenario_id, r.partition, r.side.value, _json(r.key), _json(r.value), r.ts, r.offset, position)
        for position, r in enumerate(records)
    ]


def task_function(specs: Mapping[int, Mapping[str, Any]]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: batches hold rows sorted by ``(scenario, unit, position)``,
    where ``unit`` is the Kafka task (per-task joins) or 0 (a table aggregate, run whole)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        types = {"string": pa.string(), "long": pa.int64(), "int": pa.int32()}
        parts = [part.split() for part in AGGREGATE_RESULT_SCHEMA.split(", ")]
        schema = pa.schema([pa.field(name.strip("`"), types[kind]) for name, kind in parts])
        built: dict[int, AggregateSpec] = {}
        group: tuple[int, int] | None = None
        processor: Any = None
        for batch in batches:
            columns = {name: batch.column(name).to_pylist() for name in (*_RECORD_COLUMNS, "unit")}
            out: dict[str, list[Any]] = {name: [] for name in schema.names}
            for i in range(batch.num_rows):
                scenario_id, unit = columns["scenario"][i], columns["unit"][i]
                if (scenario_id, unit) != group:
                    group = (scenario_id, unit)
                    spec = built.setdefault(scenario_id, AggregateSpec.from_dict(specs[scenario_id]))
                    how, factory = aggregate_processors(spec)
                    log = StateLog(keep_changes=False)
                    processor = factory(log) if how == "scenario" else factory(log, unit)
                key, value = columns["key"][i], columns["value"][i]
                record = Record(
                    Side(columns["side"][i]),
                    None if key is None else json.loads(key),
                    None if value is None else json.loads(value),
                    columns["ts"][i],
                    columns["partition"][i],
                    columns["offset"][i],
                )
                step = columns["position"][i]
                ctx = StepContext(step, record, default_joiner)
                processor.process(record, ctx)
                rows = []
                for seq, output in enumerate(ctx.outputs):
                    data = output_to_dict(output)
                    rows.append(("output", seq, output.partition, _json(data["key"]), _json(data), None, None, None))
                reason = None if ctx.reason is None else ctx.reason.value
                rows.append(("step", None, record.partition, key, None, ctx.fate.value, reason, ctx.until_ms))
                for row, seq, partition, row_key, output, fate, why, until in rows:
                    cells = (
                        row,
                        scenario_id,
                        partition,
                        step,
                        seq,
                        record.side.value,
                        record.offset,
                        row_key,
                        output,
                        fate,
                        why,
                        until,
                    )
                    for name, cell in zip(schema.names, cells):
                        out[name].append(cell)
            yield pa.RecordBatch.from_arrays(
                [pa.array(out[name], type=schema.field(name).type) for name in schema.names], schema=schema
            )

    return run


class AggregateSparkRun:
    """The lazy result of :func:`aggregate_scenarios`: ``results`` (outputs and steps in one
    frame, told apart by ``row``), ``outputs`` and ``steps``; :meth:`collect` brings them home."""

    def __init__(self, records: Any, results: Any, specs: Mapping[int, AggregateSpec]) -> None:
        self.records = records
        self.results = results
        self.specs = specs

    @property
    def outputs(self) -> Any:
        return self.results.filter(self.results.row == "output").drop("fate", "reason", "until_ms")

    @property
    def steps(self) -> Any:
        return self.results.filter(self.results.row == "step").drop("seq", "output")

    def collect(self) -> dict[int, dict[str, list[dict[str, Any]]]]:
        """Per scenario: ``outputs`` (as :func:`kjoin.trace.output_to_dict` gives them, in
        step order) and ``steps`` (``step, fate, reason, until_ms`` of every input record)."""
        found: dict[int, dict[str, list[Any]]] = {sid: {"outputs": [], "steps": []} for sid in self.specs}
        rows = self.results.orderBy("scenario", "step", "row", "seq").collect()
        for r in rows:
            if r["row"] == "output":
                found[r["scenario"]]["outputs"].append(json.loads(r["output"]))
            else:
                found[r["scenario"]]["steps"].append(
                    {"step": r["step"], "fate": r["fate"], "reason": r["reason"], "until_ms": r["until_ms"]}
                )
        return found


def aggregate_scenarios(
    spark: Any, specs: Mapping[int, AggregateSpec | Mapping[str, Any]], spark_partitions: int | None = None
) -> AggregateSparkRun:
    """Run windowed-table scenarios (by id) on Spark; nothing is computed until an action."""
    checked = {sid: _spec(spec) for sid, spec in specs.items()}
    rows = [row for sid, spec in checked.items() for row in scenario_rows(sid, spec)]
    schema = "scenario long, partition int, side string, key string, value string, ts long, offset long, position long"
    records = spark.createDataFrame(rows, schema)
    whole = [sid for sid, spec in checked.items() if aggregate_processors(spec)[0] == "scenario"]
    unit = F.col("partition")
    if whole:
        unit = F.when(F.col("scenario").isin(whole), F.lit(0)).otherwise(unit)
    records = records.withColumn("unit", unit.cast("int"))
    if spark_partitions:  # each (scenario, unit) in a Spark partition of its own when there are enough
        units = {
            sid: 1 if sid in whole else max((row[1] for row in rows if row[0] == sid), default=0) + 1 for sid in checked
        }
        grouped = records.repartitionById(spark_partitions, task_numbers(units, F.col("unit")))
    else:
        grouped = records.repartition("scenario", "unit")
    ordered = grouped.sortWithinPartitions("scenario", "unit", "position")
    data = {sid: dict(spec.data) for sid, spec in checked.items()}
    results = ordered.select(*_RECORD_COLUMNS, "unit").mapInArrow(task_function(data), AGGREGATE_RESULT_SCHEMA)
    return AggregateSparkRun(records, results, checked)


def run_aggregate(spark: Any, spec: AggregateSpec | Mapping[str, Any]) -> AggregateSparkRun:
    """One windowed-table scenario on Spark (scenario id 0)."""
    return aggregate_scenarios(spark, {0: spec})


def reference_results(spec: AggregateSpec | Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The reference engine's outputs and per-record fates of a scenario, in the shape of
    :meth:`AggregateSparkRun.collect` (what a differential test compares)."""
    trace = run_reference(_spec(spec))
    return {
        "outputs": [json.loads(_json(output_to_dict(o))) for step in trace.steps for o in step.outputs],
        "steps": [
            {
                "step": step.index,
                "fate": step.fate.value,
                "reason": None if step.reason is None else step.reason.value,
                "until_ms": step.until_ms,
            }
            for step in trace.steps
        ],
    }
