"""Two joins of the same records in one per-task pass: what the Spark diff compares, without a second shuffle.

``SparkRun.diff`` (:mod:`kjoin.spark.debug.diff`) compares a run with the same topics joined under other semantics
or settings. Joining the topics twice and grouping both runs' outputs per input record costs two shuffles and sorts
of the records and one of every output; this pass takes the records once (the input-partition sort of
:func:`kjoin.spark.api.run_join`, merged into processing order per task: :mod:`kjoin.spark.passes.merge`), runs
both joins' per-task functions over them (:attr:`kjoin.spark.passes.plans.Plan.function`), and compares their
outputs per input record right there: a 64-bit fingerprint per output (a hash of key, value, ts, tombstone and the
values joined: each text column dictionary-encoded over both runs by Arrow, the codes mixed by splitmix64 in
numpy, where hashing the texts with pandas cost twice the join itself), summed per input record ``(partition,
side, offset)`` with the count. Only the outputs of the
input records whose fingerprints or counts differ leave the pass (:data:`PAIRED_FIELDS`, tagged with their run,
each with its input record's key, value and timestamp). Equal sums of different multisets of outputs would hide a
difference; with 64-bit hashes that has a chance of about 2^-64 per input record.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from .merge import merged_batches
from .task import RESULT_FIELDS

__all__ = ["paired_function", "paired_schema", "PAIRED_FIELDS"]

_OUTPUT = ("scenario", "partition", "step", "side", "offset", "key", "left", "right", "value", "ts", "tombstone")
_OUTPUT += ("origin_step",)
PAIRED_FIELDS: list[tuple[str, str]] = [
    *[(name, kind) for name, kind in RESULT_FIELDS if name in _OUTPUT],
    ("run", "int"),
    ("input_key", "KEY"),
    ("input_value", "VALUE"),
    ("input_ts", "long"),
]
"""The pass's rows: an output of a differing input record, ``run`` 0 (the first join) or 1 (the second), and the
input record's key, value and timestamp; ``KEY``/``VALUE`` take the input's types."""
_FINGERPRINTED = ("key", "value", "ts", "tombstone", "left", "right")


def paired_schema(key_type: str, value_type: str) -> str:
    types = {"KEY": key_type, "VALUE": value_type}
    return ", ".join(f"`{name}` {types.get(kind, kind)}" for name, kind in PAIRED_FIELDS)


def paired_function(
    first: Callable[[Iterator[Any]], Iterator[Any]],
    second: Callable[[Iterator[Any]], Iterator[Any]],
    held_rank: int,
    spill_rows: int,
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A ``mapInArrow`` function over the input-partition sort (:class:`kjoin.spark.passes.plans.Feed`'s
    ``by_partition``): both per-task functions over the same records in processing order, the differing input
    records' outputs out."""

    def paired(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        ordered = list(merged_batches(batches, held_rank, spill_rows))
        if not ordered:
            return
        records = pa.Table.from_batches(ordered)
        outputs = [_outputs(function(iter(ordered))) for function in (first, second)]
        yield from _differing(records, *outputs)

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


def _differing(records: Any, first: Any, second: Any) -> Iterator[Any]:
    """The outputs of the input records whose outputs differ between the two runs (one sum per record: the first
    run's hashes minus the second's, and the count)."""
    import pyarrow as pa

    if first is None and second is None:
        return
    sums = _fingerprints(first, second).groupby("i", sort=False).agg({"h": "sum", "n": "sum"})
    changed = sums.index[(sums["h"].to_numpy() != 0) | (sums["n"].to_numpy() != 0)].to_numpy(dtype=np.int64)
    if not len(changed):
        return
    inputs = records.filter(pa.array(np.isin(_identity(records), changed)))
    inputs = pa.table(
        {
            "i": _identity(inputs),
            "input_key": inputs.column("key"),
            "input_value": inputs.column("value"),
            "input_ts": inputs.column("ts"),
        }
    )
    for run, table in enumerate((first, second)):
        if table is None:
            continue
        rows = table.filter(pa.array(np.isin(_identity(table), changed)))
        if not rows.num_rows:
            continue
        rows = rows.append_column("i", pa.array(_identity(rows))).append_column(
            "run", pa.array(np.full(rows.num_rows, run, dtype=np.int32))
        )
        joined = rows.join(inputs, keys="i", join_type="left outer").drop_columns(["i"])
        names = [name for name, _ in PAIRED_FIELDS]
        yield from joined.select(names).to_batches()
