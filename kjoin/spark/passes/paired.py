"""Two joins of the same records in one per-task pass, compared right there: the Spark diff's differences, without
a shuffle.

``SparkRun.diff`` (:mod:`kjoin.spark.debug.diff`) compares a run with the same topics joined under other semantics
or settings. Joining the topics twice and grouping both runs' outputs per input record costs two shuffles and sorts
of the records and one of every output; this pass takes the records once (the input-partition sort of
:func:`kjoin.spark.api.run_join`, merged into processing order per task: :mod:`kjoin.spark.passes.merge`), runs
both joins' per-task functions over them (:attr:`kjoin.spark.passes.plans.Plan.function`), and compares their
outputs per input record right there, since a record's outputs in both runs are all in its task:

1. A 64-bit fingerprint per output (a hash of key, value, ts, tombstone and the values joined: each text column
   dictionary-encoded over both runs by Arrow, the codes mixed by splitmix64 in numpy, where hashing the texts with
   pandas cost twice the join itself), summed per input record ``(partition, side, offset)`` with the count, finds
   the input records whose outputs differ. Equal sums of different multisets of outputs would hide a difference;
   with 64-bit hashes that has a chance of about 2^-64 per input record.
2. Those records' outputs are compared as the reference engine compares them, in arrays
   (:func:`kjoin.spark.passes.comparison.compared_table`; the few records whose pairing the arrays cannot decide
   exactly go to the reference engine's comparison in Python, and are counted). The pass's rows are the
   differences (:data:`kjoin.spark.passes.comparison.DIFF_SCHEMA`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from .comparison import compared_table
from .merge import merged_batches

__all__ = ["paired_function", "Paired"]

_OUTPUT = ("scenario", "partition", "step", "side", "offset", "key", "left", "right", "value", "ts", "tombstone")
_OUTPUT += ("origin_step",)
_FINGERPRINTED = ("key", "value", "ts", "tombstone", "left", "right")


@dataclass(frozen=True)
class Paired:
    """The pass over a Spark frame: ``frame``, the differences, and ``fallbacks``, the Spark accumulator counting
    the records compared in Python as the frame is computed (``None`` where Spark has no accumulators)."""

    frame: Any
    fallbacks: Any


def paired_function(
    first: Callable[[Iterator[Any]], Iterator[Any]],
    second: Callable[[Iterator[Any]], Iterator[Any]],
    held_rank: int,
    spill_rows: int,
    json_keys: bool,
    json_values: bool,
    fallbacks: Any = None,
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A ``mapInArrow`` function over the input-partition sort (:class:`kjoin.spark.passes.plans.Feed`'s
    ``by_partition``): both per-task functions over the same records in processing order, the differences out
    (:data:`kjoin.spark.passes.comparison.DIFF_SCHEMA`). ``fallbacks``: a Spark accumulator that counts the records
    compared in Python."""

    def paired(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        ordered = list(merged_batches(batches, held_rank, spill_rows))
        if not ordered:
            return
        records = pa.Table.from_batches(ordered)
        outputs = [_outputs(function(iter(ordered))) for function in (first, second)]
        found = _differing(records, *outputs)
        if found is None:
            return
        differences, python = compared_table(*found, json_keys, json_values)
        if fallbacks is not None and python:
            fallbacks.add(python)
        yield from differences.to_batches()

    return paired


def _outputs(batches: Iterator[Any]) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    found = [batch for batch in batches if batch.num_rows]
    if not found:
        return None
    table = pa.Table.from_batches(found)
    return table.filter(pc.equal(table.column("row"), "output")).select(list(_OUTPUT))


def _identity(table: Any) -> Any:
    """Each row's input record as one int64: partition, side and offset (a run_join has one scenario)."""
    import pyarrow.compute as pc

    partition = table.column("partition").to_numpy(zero_copy_only=False).astype(np.int64)
    right = pc.equal(table.column("side"), "right").to_numpy(zero_copy_only=False).astype(np.int64)
    offset = table.column("offset").to_numpy(zero_copy_only=False).astype(np.int64)
    return (partition << 41) | (right << 40) | offset


def _mix(x: Any) -> Any:
    """splitmix64's finaliser over a uint64 array (wrapping)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _codes(column: Any) -> Any:
    """A column of both runs' outputs as uint64 codes, equal exactly where the values are: a text's index in the
    column's dictionary (built once over both runs, by Arrow), a number itself; null has a code of its own."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or pa.types.is_binary(column.type):
        column = pc.dictionary_encode(column.combine_chunks()).indices
    elif pa.types.is_boolean(column.type):
        column = pc.cast(column, pa.int64())
    values = pc.fill_null(pc.cast(column, pa.int64()), -(2**63)).to_numpy(zero_copy_only=False)
    return values.astype(np.int64).view(np.uint64)


def _fingerprints(first: Any, second: Any) -> Any:
    """Each output of both runs as ``i`` (its input record), ``h`` (a 64-bit hash of what the output topic shows
    and the values joined, negated, wrapping, for the second run) and ``n`` (1, -1 for the second run)."""
    import pandas as pd
    import pyarrow as pa

    tables = [t for t in (first, second) if t is not None]
    both = pa.concat_tables(tables)
    hashes = np.zeros(both.num_rows, dtype=np.uint64)
    for salt, name in enumerate(_FINGERPRINTED):
        hashes = _mix(hashes ^ _mix(_codes(both.column(name)) + np.uint64(salt)))
    signs = np.concatenate([np.full(t.num_rows, 1 if t is first else -1, dtype=np.int64) for t in tables])
    hashes = np.where(signs > 0, hashes, ~hashes + np.uint64(1))
    return pd.DataFrame({"i": np.concatenate([_identity(t) for t in tables]), "h": hashes, "n": signs})


def _differing(records: Any, first: Any, second: Any) -> tuple[Any, Any] | None:
    """The outputs of the input records whose outputs differ between the two runs (one sum per record: the first
    run's hashes minus the second's, and the count), with ``i`` (the record) and ``run``; and those records' ``i,
    input_key, input_value, input_ts``. ``None``: no record differs."""
    import pyarrow as pa

    if first is None and second is None:
        return None
    sums = _fingerprints(first, second).groupby("i", sort=False).agg({"h": "sum", "n": "sum"})
    changed = sums.index[(sums["h"].to_numpy() != 0) | (sums["n"].to_numpy() != 0)].to_numpy(dtype=np.int64)
    if not len(changed):
        return None
    inputs = records.filter(pa.array(np.isin(_identity(records), changed)))
    inputs = pa.table(
        {
            "i": _identity(inputs),
            "input_key": inputs.column("key"),
            "input_value": inputs.column("value"),
            "input_ts": inputs.column("ts"),
        }
    )
    found = []
    for run, table in enumerate((first, second)):
        if table is None:
            continue
        identity = _identity(table)
        mine = np.isin(identity, changed)
        rows = table.filter(pa.array(mine))
        found.append(
            rows.append_column("i", pa.array(identity[mine])).append_column(
                "run", pa.array(np.full(rows.num_rows, run, dtype=np.int32))
            )
        )
    return pa.concat_tables(found), inputs
