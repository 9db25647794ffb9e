"""``SparkRun.diff(semantics="4.3")``: ``kjoin diff`` over the same topics on Spark.

The topics are joined again under the other semantics (and, to charge each difference, under the first
semantics with each differing rule switched, as :class:`kjoin.diff.Attribution` asks). Each run's outputs
are grouped per input record ``(scenario, partition, side, offset)`` in Spark, the two runs' groups
joined, and only the input records whose outputs differ come to the driver, where
:func:`kjoin.diff.compare_outputs` tells added, removed and changed outputs apart as the reference engine
does. Spark does not keep the order of one record's outputs, so it reports no ``reordered`` change.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping

from pyspark.sql import functions as F

from ...diff import Attribution, Diff, Difference, Outputs, compare_outputs
from ...records import Record, Side, render_value
from ...semantics import Semantics, parse_semantics
from ..io.topic import SparkInputError

if TYPE_CHECKING:  # pragma: no cover
    from ..result import SparkRun

__all__ = ["spark_diff"]

_IDENTITY = ["scenario", "partition", "side", "offset"]


def spark_diff(run: "SparkRun", semantics: "str | Semantics | None") -> Diff:
    """The differences from ``run`` to the same topics joined under ``semantics``, each charged to the rules
    that change it (see :mod:`kjoin.diff`)."""
    rerun = getattr(run, "_rerun", None)
    if rerun is None:
        raise SparkInputError(
            "diff: only a run_join result knows its topics to join them again; diff run_scenarios' scenarios one by "
            "one with kjoin.diff(scenario, from_=..., to=...)"
        )
    config = run.scenarios[0]
    first = config.semantics
    try:
        second = parse_semantics(semantics)
    except ValueError as error:
        raise SparkInputError(f"semantics: {error}") from None
    base = _grouped(run)
    decode_key, decode_value = run._decoders()

    def differences_of(switched: Semantics, settings: Mapping[str, Any]) -> list[Difference] | None:
        assert not settings  # the Spark diff switches rules only
        return _differences(run, base, rerun(switched), decode_key, decode_value)

    target = differences_of(second, {})
    assert target is not None
    switches = [(name, getattr(second, name)) for name in first.switched(second)]
    attribution = Attribution(first, switches, differences_of)
    charged = attribution.charge(target)
    names = tuple(name for name, _ in switches)
    title = f"{config.join} {config.variant} join (Spark)"
    return Diff(title, str(first), str(second), charged, names, attribution.runs)


def _grouped(run: "SparkRun") -> Any:
    """Per input record, its outputs (sorted: Spark keeps no order within a record) and its step."""
    outputs = run.outputs
    fields = F.struct("key", "value", "ts", "tombstone", "left", "right")
    return outputs.groupBy(*_IDENTITY).agg(
        F.sort_array(F.collect_list(fields)).alias("outputs"), F.min("step").alias("step")
    )


def _differences(run: "SparkRun", base: Any, other: "SparkRun", decode_key: Any, decode_value: Any) -> list[Difference]:
    before = base.select(*_IDENTITY, F.col("outputs").alias("before"), F.col("step").alias("from_step"))
    after = _grouped(other).select(*_IDENTITY, F.col("outputs").alias("after"), F.col("step").alias("to_step"))
    changed = before.join(after, on=_IDENTITY, how="full_outer").where(~F.col("before").eqNullSafe(F.col("after")))
    records = run.records.select(*_IDENTITY, F.col("key").alias("input_key"), F.col("value").alias("input_value"), "ts")
    rows = changed.join(records, on=_IDENTITY, how="left").collect()
    found: list[tuple[tuple, list[Difference]]] = []
    for row in rows:
        record = Record(
            Side(row["side"]),
            decode_key(row["input_key"]),
            decode_value(row["input_value"]),
            row["ts"],
            row["partition"],
            row["offset"],
        )
        step = row["to_step"] if row["to_step"] is not None else row["from_step"]
        from_step = row["from_step"] if row["from_step"] is not None else step
        old = _outputs(row["before"], row["partition"], record, from_step, decode_key, decode_value)
        new = _outputs(row["after"], row["partition"], record, step, decode_key, decode_value)
        found.append(
            (
                (row["scenario"], row["partition"], step, row["side"], row["offset"]),
                compare_outputs(old, new, step, from_step),
            )
        )
    return [difference for _, differences in sorted(found, key=lambda item: item[0]) for difference in differences]


def _outputs(rows: Any, partition: int, record: Record, step: int, decode_key: Any, decode_value: Any) -> Outputs:
    """One input record's outputs as :func:`kjoin.diff.compare_outputs` reads them."""
    outputs, results = [], []
    for row in rows or []:
        key = decode_key(row["key"])
        value = None if row["tombstone"] else row["value"]
        outputs.append({"key": key, "value": value, "ts": row["ts"], "tombstone": row["tombstone"]})
        joined = (_canon(decode_value(row["left"])), _canon(decode_value(row["right"])))
        results.append((_canon([key, None]), joined))
    return Outputs(step, record, outputs, results)


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=render_value)
