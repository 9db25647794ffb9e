"""One Kafka task on one Spark partition: the reference processors, run over a sorted batch.

How it works:

* The records frame is repartitioned by Kafka task ``(scenario, partition)`` (:mod:`kjoin.spark.placement`) and
  sorted within each Spark partition by processing position, so every Kafka task's records arrive together
  and in the order Kafka Streams would process them.
* :func:`task_function` returns the ``mapInArrow`` function. It walks the rows; when the
  ``(scenario, partition)`` group changes it starts a new join instance, built by the same
  factory the reference engine uses (:func:`kjoin.engine.new_join`), over a
  ``StateLog(keep_changes=False)`` that keeps the live stores but no per-step history.
  Each record goes through the reference engine's source stage (:mod:`kjoin.engine.source`)
  first. The join rules themselves are kjoin's processors: there is one copy of them.
* Each output becomes a row ``row = "output"``; each record whose fate is not ``joined``
  (dropped, buffered, stored, no match) becomes a row ``row = "step"`` with its reason.

Where the time goes (measured outside Spark on one task of 10^5 synthetic records, 2-core
machine under load): the processors themselves, about 16-20K records/s per core for a
stream-stream left join (window ±1 s), 30K for table-table, 50K for stream-table. A leaner
loop (row tuples transposed once per batch, enum texts from dicts) was measured and was no
faster within noise, so this loop stays the plain one. Stream-table and table-table joins
over unversioned tables run as vectorised array passes instead (:mod:`kjoin.spark.passes.vectorised`,
about 15x the processors' CPU throughput per record), or natively (:mod:`kjoin.spark.passes.native`); stream-stream
joins from 0.10.2 as a vectorised band join with a small loop over the outer-join buffer's events only
(:mod:`kjoin.spark.passes.vectorised_stream`); joins over versioned tables as a lean specialised loop over plain
values (:mod:`kjoin.spark.passes.vectorised_versioned`, 7-40x the processors' CPU throughput)."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator, Mapping

import pyarrow as pa

from ...engine import new_join
from ...engine.source import SourceStage, decoded_source_stage, source_stage
from ...joins import StepContext, default_joiner
from ...fates import Fate
from ...records import Record, Side, render_value
from ...scenario import Scenario
from .. import placement
from ..spec import JoinSpec
from ...state import StateLog

__all__ = ["group_by_task", "json_text", "task_function", "append_step_rows", "RESULT_FIELDS", "result_schema"]


RESULT_FIELDS: list[tuple[str, str]] = [
    ("row", "string"),
    ("scenario", "long"),
    ("partition", "int"),
    ("step", "long"),
    ("side", "string"),
    ("offset", "long"),
    ("key", "KEY"),
    ("left", "VALUE"),
    ("right", "VALUE"),
    ("value", "string"),
    ("ts", "long"),
    ("tombstone", "boolean"),
    ("kind", "string"),
    ("origin_step", "long"),
    ("fate", "string"),
    ("reason", "string"),
    ("until_ms", "long"),
]
"""The columns of the task's result rows; ``KEY``/``VALUE`` take the input's types."""


def result_schema(key_type: str, value_type: str) -> str:
    """The DDL schema of the result rows for keys and values of the given Spark types."""
    types = {"KEY": key_type, "VALUE": value_type}
    return ", ".join(f"`{name}` {types.get(kind, kind)}" for name, kind in RESULT_FIELDS)


_SIDES = {"left": Side.LEFT, "right": Side.RIGHT}


def json_text(value: Any) -> str | None:
    """A key or value as the JSON text the Spark frames carry (canonical: sorted keys, no
    spaces), ``None`` for null."""
    return None if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"))


def group_by_task(
    records: Any, partitioned: bool, spark_partitions: int | None, counts: Mapping[int, int] | None = None
) -> Any:
    """``records`` with every Kafka task ``(scenario, partition)`` in one Spark partition (as given when
    ``partitioned``: already placed that way), each in its own when ``counts`` (scenario id -> partition count)
    numbers them (:func:`kjoin.spark.placement.by_task`)."""
    if partitioned:
        return records
    return placement.by_task(records, spark_partitions, counts)


def task_function(
    configs: Mapping[int, JoinSpec | Scenario],
    joiner: Callable[[Any, Any], Any] | None = None,
    json_values: bool = False,
    json_keys: bool = False,
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function for the given joins (by scenario id): each Kafka task runs the reference
    engine's processors (:func:`kjoin.engine.new_join`, built from :meth:`JoinSpec.scenario`).

    Input batches have columns ``scenario, partition, side, key, value, ts, offset, position``
    sorted by processing position within ``(scenario, partition)``; ``position`` may be null,
    and then a record's step is its rank within its task. ``json_values`` decodes values
    from JSON text before the joiner sees them and encodes ``left``/``right`` back.
    """
    join_values = joiner or default_joiner
    scenarios = {scenario_id: JoinSpec.of(config).scenario() for scenario_id, config in configs.items()}
    stages: dict[int, SourceStage] = {
        scenario_id: decoded_source_stage() if json_keys else source_stage(scenario)
        for scenario_id, scenario in scenarios.items()
    }
    names = [name for name, _ in RESULT_FIELDS]
    encode_key = json_text if json_keys else _as_is
    encode_value = json_text if json_values else _as_is

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        group: tuple[int, int] | None = None
        join: Any = None
        rank = 0
        schema = None
        for batch in batches:
            if schema is None:
                schema = _arrow_schema(batch.schema)
            columns = {
                name: batch.column(name).to_pylist()
                for name in ("scenario", "partition", "side", "key", "value", "ts", "offset", "position")
            }
            out: dict[str, list[Any]] = {name: [] for name in names}
            for i in range(batch.num_rows):
                scenario_id = columns["scenario"][i]
                partition = columns["partition"][i]
                if (scenario_id, partition) != group:
                    group = (scenario_id, partition)
                    join = new_join(scenarios[scenario_id], StateLog(keep_changes=False), partition)
                    rank = 0
                position = columns["position"][i]
                step = rank if position is None else position
                rank += 1
                value = columns["value"][i]
                if json_values and value is not None:
                    value = json.loads(value)
                key = columns["key"][i]
                if json_keys and key is not None:
                    key = json.loads(key)
                record = Record(
                    _SIDES[columns["side"][i]], key, value, columns["ts"][i], partition, columns["offset"][i]
                )
                ctx = StepContext(step, record, join_values)
                join.process(stages[scenario_id](record), ctx)
                append_step_rows(out, scenario_id, step, record, columns["key"][i], ctx, encode_key, encode_value)
            yield pa.RecordBatch.from_arrays(
                [pa.array(out[name], type=schema.field(name).type) for name in names], schema=schema
            )

    return run


def append_step_rows(
    out: dict[str, list[Any]],
    scenario: int,
    step: int,
    record: Record,
    key: Any,
    settled: Any,
    encode_key: Callable[[Any], Any],
    encode_value: Callable[[Any], Any],
) -> None:
    """Append one step's result rows to ``out`` (columns in RESULT_FIELDS order): a row ``output`` per output, and
    a row ``step`` (with ``key`` as given) when the record's fate is not ``joined``.
    ``settled`` is the step's :class:`StepContext` or trace :class:`~kjoin.trace.Step`."""
    partition, side, offset = record.partition, record.side.value, record.offset
    for o in settled.outputs:
        value = o.value if o.value is None or isinstance(o.value, str) else render_value(o.value)
        cells = (
            "output",
            scenario,
            partition,
            step,
            side,
            offset,
            encode_key(o.key),
            encode_value(o.left),
            encode_value(o.right),
            value,
            o.ts,
            o.tombstone,
            o.kind.value,
            o.origin_step,
            None,
            None,
            None,
        )
        for column, cell in zip(out.values(), cells):
            column.append(cell)
    if settled.fate is not Fate.JOINED:
        reason = None if settled.reason is None else settled.reason.value
        cells = (
            "step",
            scenario,
            partition,
            step,
            side,
            offset,
            key,
            None,
            None,
            None,
            record.ts,
            None,
            None,
            None,
            settled.fate.value,
            reason,
            settled.until_ms,
        )
        for column, cell in zip(out.values(), cells):
            column.append(cell)


def _as_is(value: Any) -> Any:
    return value


def _arrow_schema(input_schema: Any) -> Any:
    fixed = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "boolean": pa.bool_()}
    fields = []
    for name, kind in RESULT_FIELDS:
        if kind == "KEY":
            arrow_type = input_schema.field("key").type
        elif kind == "VALUE":
            arrow_type = input_schema.field("value").type
        else:
            arrow_type = fixed[kind]
        fields.append(pa.field(name, arrow_type))
    return pa.schema(fields)
