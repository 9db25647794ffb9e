"""The reference engine's comparison of an input record's outputs in two runs (:func:`kjoin.diff.compare_outputs`),
for every differing input record of a Spark task at once: the rows the Spark diff reports (:data:`DIFF_SCHEMA`).

:func:`compared_rows` compares one record in Python, as the reference engine does; :func:`compared_table` gives
the very same rows (the same texts, byte for byte) for all the differing records of a task with numpy and Arrow,
and hands :func:`compared_rows` only the records whose outputs it cannot pair exactly by arrays.

``compare_outputs``' rules, and how the arrays follow them:

1. Each run's outputs of a record come in the order Spark's ``sort_array`` gives the struct :data:`ORDER`
   (nulls first, texts by their UTF-8 bytes): the order the diff's other path groups them in.
2. Equal outputs (the key, the value shown, ts, tombstone, and the values joined, as their JSON texts) match first,
   as multisets: the first ``min(before, after)`` occurrences of each in each run go.
3. Of the rest, each output before, in order, takes the first remaining output after with the *same result*
   (:func:`kjoin.diff._same_result`: the same key and one of the values joined equal and not null) as ``changed``;
   the rest are ``removed`` and ``added``. The relation R is not an equivalence in general; it is the union of
   two that are: L (same key, same non-null left value) and R' (same key, same non-null right value). Where R is
   transitive its classes are cliques, and the greedy pairing pairs the k-th output before of a class with its
   k-th output after. R is transitive exactly when every L-class A and R'-class B that meet nest (A within B or B
   within A): then the class of an output is the larger of its two (an output with one non-null value: that
   one's; with none: no class, it pairs with nothing). A record where some A and B meet without nesting is
   compared by :func:`compared_rows` (counted: the *fallbacks*), as is one whose key text contains ``NaN``
   (decoded JSON keys: ``NaN`` is not equal to itself, so equal texts would not be equal outputs).
4. The texts are the reference engine's: ``json.dumps(..., sort_keys=True)`` (:func:`canon`), built from the
   columns (each distinct value encoded once, printable ASCII texts escaped by Arrow's string kernels).

Tests: ``tests/test_spark_comparison.py`` (hypothesis: random outputs of both runs, ties, duplicates, nulls,
tombstones, unicode and JSON texts, against :func:`compared_rows`).
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any, Mapping

import numpy as np

from ...diff import Outputs, compare_outputs
from ...records import Record, Side, render_value

__all__ = ["DIFF_SCHEMA", "ORDER", "canon", "compared_rows", "compared_table", "diff_arrow_schema"]

DIFF_SCHEMA = (
    "scenario bigint, partition int, side string, offset bigint, input_key string, input_value string, "
    "input_ts bigint, step bigint, from_step bigint, change string, key string, before string, after string"
)
"""One difference per row, before attribution: the input record (its key and value as JSON text), its step in the
second run (``from_step``: in the first), the change, the output's key (JSON text) and the outputs before and after
(JSON objects: ``key, value, ts, tombstone``; null where there is none). What makes two runs' differences the same
difference (the attribution's ``identity``: the record, the change, before and after) is computed in Spark where the
attribution needs it (:func:`kjoin.spark.debug.diff.identity_column`), not carried by every row."""

ORDER = ("ts", "origin_step", "key", "value", "tombstone", "left", "right")
"""An output's fields in the order they sort a record's outputs in each run (Spark's ``sort_array`` of this
struct): by timestamp, then by the step whose record they carry (a grace buffer or an outer join's sweep emits in
timestamp order, then arrival)."""


def canon(value: Any) -> str:
    """A value's JSON text as the reference engine's diff writes it."""
    return json.dumps(value, sort_keys=True, default=render_value)


def diff_arrow_schema() -> Any:
    import pyarrow as pa

    types = {"bigint": pa.int64(), "int": pa.int32(), "string": pa.string()}
    return pa.schema([(name, types[kind]) for name, kind in (part.split() for part in DIFF_SCHEMA.split(", "))])


# -- one record, in Python ----------------------------------------------------------------------
def compared_rows(row: Mapping[str, Any], json_keys: bool, json_values: bool) -> list[dict[str, Any]]:
    """One input record's outputs in both runs (``before`` and ``after``: lists of :data:`ORDER` structs in that
    order, with the record's ``scenario, partition, side, offset, input_key, input_value, input_ts`` and its
    ``from_step``/``to_step`` in each run), compared as the reference engine does: its differences as rows."""

    def key_of(k: Any) -> Any:
        return json.loads(k) if json_keys and k is not None else k

    def value_of(v: Any) -> Any:
        return json.loads(v) if json_values and v is not None else v

    record = Record(
        Side(row["side"]),
        key_of(row["input_key"]),
        value_of(row["input_value"]),
        row["input_ts"],
        row["partition"],
        row["offset"],
    )
    step = row["to_step"] if row["to_step"] is not None else row["from_step"]
    from_step = row["from_step"] if row["from_step"] is not None else step

    def outputs(found: Any, at: int) -> Outputs:
        listed, results = [], []
        for o in found or []:
            key = key_of(o["key"])
            listed.append(
                {
                    "key": key,
                    "value": None if o["tombstone"] else o["value"],
                    "ts": o["ts"],
                    "tombstone": o["tombstone"],
                }
            )
            results.append((canon([key, None]), (canon(value_of(o["left"])), canon(value_of(o["right"])))))
        return Outputs(at, record, listed, results)

    differences = compare_outputs(outputs(row["before"], from_step), outputs(row["after"], step), step, from_step)
    return [  # the same outputs, only their origin steps differ: Spark reports no reordered outputs
        {
            "scenario": row["scenario"],
            "partition": row["partition"],
            "side": row["side"],
            "offset": row["offset"],
            "input_key": canon(record.key),
            "input_value": canon(record.value),
            "input_ts": record.ts,
            "step": d.step,
            "from_step": d.from_step,
            "change": d.change,
            "key": canon(d.key),
            "before": None if d.before is None else canon(d.before),
            "after": None if d.after is None else canon(d.after),
        }
        for d in differences
        if d.change != "reordered"
    ]


# -- every differing record of a task, in arrays ------------------------------------------------------
def compared_table(outputs: Any, inputs: Any, json_keys: bool, json_values: bool) -> tuple[Any, int]:
    """The differences (:data:`DIFF_SCHEMA`, an Arrow table) of the records whose outputs are in ``outputs`` (an
    Arrow table of both runs' outputs of the differing records: ``i`` the record's id, ``run`` 0 or 1, and
    ``scenario, partition, side, offset, step`` and :data:`ORDER`), each record's ``input_key, input_value,
    input_ts`` in ``inputs`` (by ``i``); and how many records :func:`compared_rows` compared (the fallbacks)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = diff_arrow_schema()
    if not outputs.num_rows:
        return schema.empty_table(), 0
    outputs = outputs.combine_chunks().take(pa.array(_spark_order(outputs)))
    column = outputs.column
    record = column("i").to_numpy()
    run = column("run").to_numpy(zero_copy_only=False).astype(np.int8)
    keys = canon_texts(column("key"), json_keys)
    key = _codes(keys)
    left, left_null = _equality(column("left"), json_values)
    right, right_null = _equality(column("right"), json_values)
    tombstone = column("tombstone")
    shown = pc.if_else(pc.fill_null(tombstone, False), pa.scalar(None, column("value").type), column("value"))
    ts = column("ts")

    # 2. equal outputs match first, the first occurrences in each run
    item = _group(
        record,
        key,
        _codes(shown),
        pc.fill_null(ts, 0).to_numpy(zero_copy_only=False),
        pc.is_null(ts).to_numpy(zero_copy_only=False),
        _codes(tombstone),
        left,
        right,
    )
    occurrence = _occurrence(item, run)
    counts = [np.bincount(item[run == r], minlength=item.max() + 1) for r in (0, 1)]
    rest = np.flatnonzero(occurrence >= np.minimum(*counts)[item])

    # 3. the rest paired by class where the same-result relation is an equivalence, else in Python
    r_record, r_key, r_run = record[rest], key[rest], run[rest]
    has_left, has_right = ~left_null[rest], ~right_null[rest]
    r_left, r_right = np.where(has_left, left[rest], -1), np.where(has_right, right[rest], -1)
    a, b, ab = (
        _group(r_record, r_key, r_left),
        _group(r_record, r_key, r_right),
        _group(r_record, r_key, r_left, r_right),
    )
    in_a, in_b, in_ab = (np.bincount(g)[g] for g in (a, b, ab))
    both = has_left & has_right
    crossing = both & (in_ab != in_a) & (in_ab != in_b)
    fallback = np.unique(r_record[crossing])
    if json_keys:
        fallback = np.union1d(
            fallback, np.unique(record[pc.match_substring(keys, "NaN").to_numpy(zero_copy_only=False)])
        )
    by_left = np.where(both, in_a >= in_b, has_left)
    side = np.where(by_left, 0, np.where(has_right, 1, 2))
    label = np.where(side == 0, r_left, np.where(side == 1, r_right, -1 - rest))
    kept = ~np.isin(r_record, fallback)
    rest, r_record, r_run = rest[kept], r_record[kept], r_run[kept]
    cls = _group(r_record, r_key[kept], side[kept], label[kept])
    rank = _occurrence(cls, r_run)
    per_run = [np.bincount(cls[r_run == r], minlength=cls.max() + 1 if len(cls) else 0) for r in (0, 1)]
    paired = rank < np.minimum(*per_run)[cls] if len(cls) else np.zeros(0, dtype=bool)
    old, new = (paired & (r_run == r) for r in (0, 1))
    old_order = np.lexsort((rank[old], cls[old]))
    new_order = np.lexsort((rank[new], cls[new]))
    changed_before = rest[old][old_order]
    changed_after = rest[new][new_order]
    removed = rest[~paired & (r_run == 0)]
    added = rest[~paired & (r_run == 1)]

    owner = np.concatenate([changed_before, removed, added])
    before = np.concatenate([changed_before, removed, np.full(len(added), -1)])
    after = np.concatenate([changed_after, np.full(len(removed), -1), added])
    kind = np.concatenate([np.zeros(len(changed_before)), np.ones(len(removed)), np.full(len(added), 2)])
    order = np.lexsort((owner, kind, record[owner]))  # per record: changed, removed, added, each in run order
    owner, before, after, kind = owner[order], before[order], after[order], kind[order].astype(np.int64)
    found = _rows(outputs, inputs, record, run, keys, shown, owner, before, after, kind, json_keys, json_values)
    if len(fallback):
        rows = _python_rows(outputs, inputs, record, fallback, json_keys, json_values)
        found = pa.concat_tables([found, pa.Table.from_pylist(rows, schema=schema)])
    return found, len(fallback)


_CHANGES = ("changed", "removed", "added")


def _rows(
    outputs: Any,
    inputs: Any,
    record: Any,
    run: Any,
    keys: Any,
    shown: Any,
    owner: Any,
    before: Any,
    after: Any,
    kind: Any,
    json_keys: bool,
    json_values: bool,
) -> Any:
    """The rows of the differences found by arrays: ``owner`` the output whose record and key each names,
    ``before``/``after`` the outputs (-1: none), ``kind`` an index into :data:`_CHANGES`."""
    import pyarrow as pa

    column = outputs.column
    texts = _join(
        '{"key": ',
        keys,
        ', "tombstone": ',
        _literals(column("tombstone")),
        ', "ts": ',
        _numbers(column("ts")),
        ', "value": ',
        json_strings(shown),
        "}",
    )

    def taken(array: Any, at: Any) -> Any:
        return array.take(pa.array(at, mask=at < 0))

    steps = _steps(record, run, column("step").to_numpy(zero_copy_only=False))
    of_record = record[owner]
    to_step, from_step = steps(of_record, 1), steps(of_record, 0)
    step = np.where(to_step >= 0, to_step, from_step)
    from_step = np.where(from_step >= 0, from_step, step)
    at_input = _lookup(inputs.column("i").to_numpy(), of_record)
    input_keys = canon_texts(inputs.column("input_key"), json_keys)
    input_values = canon_texts(inputs.column("input_value"), json_values)
    scenario, partition, side, offset = (
        column(name).take(pa.array(owner)) for name in ("scenario", "partition", "side", "offset")
    )
    change = pa.array(np.array(_CHANGES, dtype=object)[kind], pa.string())
    before_text, after_text = taken(texts, before), taken(texts, after)
    return pa.table(
        {
            "scenario": scenario.cast(pa.int64()),
            "partition": partition.cast(pa.int32()),
            "side": side,
            "offset": offset.cast(pa.int64()),
            "input_key": _or_null_text(taken(input_keys, at_input)),
            "input_value": _or_null_text(taken(input_values, at_input)),
            "input_ts": taken(inputs.column("input_ts").combine_chunks(), at_input).cast(pa.int64()),
            "step": pa.array(step, pa.int64()),
            "from_step": pa.array(from_step, pa.int64()),
            "change": change,
            "key": keys.take(pa.array(owner)),
            "before": before_text,
            "after": after_text,
        },
        schema=diff_arrow_schema(),
    )


def _python_rows(outputs: Any, inputs: Any, record: Any, chosen: Any, json_keys: bool, json_values: bool) -> list:
    """The differences of the ``chosen`` records by :func:`compared_rows`, fed as the diff's other path feeds it."""
    import pyarrow as pa

    rows = outputs.filter(pa.array(np.isin(record, chosen))).to_pylist()
    wanted = pa.array(np.isin(inputs.column("i").to_numpy(), chosen))
    carried = {row["i"]: row for row in inputs.filter(wanted).to_pylist()}
    grouped: dict[int, dict[str, Any]] = {}
    for row in rows:  # in Spark's order per record and run
        found = grouped.get(row["i"])
        if found is None:
            given = carried.get(row["i"], {})
            found = grouped[row["i"]] = {
                **{name: row[name] for name in ("scenario", "partition", "side", "offset")},
                **{name: given.get(name) for name in ("input_key", "input_value", "input_ts")},
                "before": [],
                "after": [],
                "from_step": None,
                "to_step": None,
            }
        at = "from_step" if row["run"] == 0 else "to_step"
        found[at] = row["step"] if found[at] is None else min(found[at], row["step"])
        found["before" if row["run"] == 0 else "after"].append({name: row[name] for name in ORDER})
    return [out for row in grouped.values() for out in compared_rows(row, json_keys, json_values)]


# -- orders, codes and groups ----------------------------------------------------------------------
def _spark_order(outputs: Any) -> Any:
    """The rows' order: per record and run, :data:`ORDER` ascending as Spark sorts it."""
    keys = [outputs.column("i").to_numpy(), outputs.column("run").to_numpy(zero_copy_only=False)]
    for name in ORDER:
        keys += _ascending(outputs.column(name))
    return np.lexsort(keys[::-1])


def _ascending(column: Any) -> list[Any]:
    """Sort keys (most significant first) that order ``column`` as Spark's ascending order does: nulls first,
    texts by their UTF-8 bytes, doubles with NaN last and -0.0 equal to 0.0."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    valid = pc.is_valid(column).to_numpy(zero_copy_only=False)
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind):
        encoded = pc.dictionary_encode(column)
        dictionary = encoded.dictionary
        rank = np.empty(len(dictionary), dtype=np.int64)
        rank[pc.sort_indices(dictionary).to_numpy()] = np.arange(len(dictionary))  # by bytes
        indices = pc.fill_null(encoded.indices, 0).to_numpy(zero_copy_only=False)
        return [valid, rank[indices] if len(dictionary) else np.zeros(len(column), dtype=np.int64)]
    if pa.types.is_floating(kind):
        values = pc.fill_null(column, 0.0).to_numpy(zero_copy_only=False).astype(np.float64)
        nan = np.isnan(values)
        return [valid, nan, np.where(nan, 0.0, values) + 0.0]
    return [valid, pc.fill_null(pc.cast(column, pa.int64()), 0).to_numpy(zero_copy_only=False)]


def _codes(column: Any) -> Any:
    """int64 codes equal exactly where the values are (null: -1)."""
    import pyarrow.compute as pc

    column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    indices = pc.dictionary_encode(column).indices
    return pc.fill_null(indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def _equality(column: Any, decode: bool) -> tuple[Any, Any]:
    """A joined value's codes, equal exactly where their JSON texts are, and where the text is ``null``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    if _is_text(column.type) and not decode:  # json.dumps of a string is one to one
        return _codes(column), pc.is_null(column).to_numpy(zero_copy_only=False)
    texts = canon_texts(column, decode)
    return _codes(texts), pc.equal(texts, pa.scalar("null")).to_numpy(zero_copy_only=False)


def _group(*arrays: Any) -> Any:
    """One int64 id per distinct tuple of the arrays' values."""
    import pandas as pd

    if not len(arrays[0]):
        return np.zeros(0, dtype=np.int64)
    frame = pd.DataFrame({str(n): np.asarray(a) for n, a in enumerate(arrays)})
    return frame.groupby(list(frame.columns), sort=False).ngroup().to_numpy(dtype=np.int64)


def _occurrence(group: Any, run: Any) -> Any:
    """Each row's index among the earlier rows of its group and run."""
    import pandas as pd

    if not len(group):
        return np.zeros(0, dtype=np.int64)
    return pd.DataFrame({"g": group, "r": run}).groupby(["g", "r"], sort=False).cumcount().to_numpy(dtype=np.int64)


def _steps(record: Any, run: Any, step: Any) -> Any:
    """``steps(records, r)``: the lowest step of each record's outputs in run ``r`` (-1: none)."""
    import pandas as pd

    lowest = pd.DataFrame({"i": record, "r": run, "s": step}).groupby(["r", "i"])["s"].min()

    def steps(records: Any, r: int) -> Any:
        if r not in lowest.index.get_level_values(0):
            return np.full(len(records), -1, dtype=np.int64)
        found = lowest.loc[r]
        return found.reindex(records).fillna(-1).to_numpy(dtype=np.int64)

    return steps


def _lookup(ids: Any, wanted: Any) -> Any:
    """The index in ``ids`` of each wanted id (-1: not there)."""
    if not len(ids):
        return np.full(len(wanted), -1, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    at = np.minimum(np.searchsorted(ids[order], wanted), len(ids) - 1)
    found = order[at]
    return np.where(ids[found] == wanted, found, -1)


# -- JSON texts ---------------------------------------------------------------------------------------
def canon_texts(column: Any, decode: bool) -> Any:
    """Each value's :func:`canon` text (null: ``null``); ``decode``: the values are JSON texts, decoded first."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    kind = column.type
    if _is_text(kind) and decode:
        encoded = pc.dictionary_encode(column)
        texts = pa.array([canon(json.loads(text)) for text in encoded.dictionary.to_pylist()], pa.string())
        return pc.fill_null(texts.take(encoded.indices), "null")
    if _is_text(kind):
        return json_strings(column)
    if pa.types.is_integer(kind):
        return _numbers(column)
    if pa.types.is_boolean(kind):
        return _literals(column)
    values = column.to_pylist()  # doubles and the rest: each distinct value once (-0.0 is not 0.0)
    distinct: dict[Any, str] = {}
    for value in values:
        marker = (type(value), repr(value))
        if marker not in distinct:
            distinct[marker] = canon(value)
    return pa.array([distinct[(type(value), repr(value))] for value in values], pa.string())


def json_strings(column: Any) -> Any:
    """Each string's ``json.dumps`` (ASCII, escaped; null: ``null``): printable ASCII texts by Arrow's kernels,
    the others one by one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    filled = pc.fill_null(column, "")
    escaped = pc.replace_substring(pc.replace_substring(filled, "\\", "\\\\"), '"', '\\"')
    quoted = _join('"', escaped, '"')
    other = pc.match_substring_regex(filled, "[^ -~]")
    if pc.any(other).as_py():
        mask = other.to_numpy(zero_copy_only=False)
        texts = [encode_basestring_ascii(text) for text in filled.filter(other).to_pylist()]
        quoted = pc.replace_with_mask(quoted, pa.array(mask), pa.array(texts, pa.string()))
    return pc.if_else(pc.is_null(column), pa.scalar("null"), quoted)


def _numbers(column: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.fill_null(pc.cast(column, pa.string()), "null")


def _literals(column: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    texts = pc.if_else(column, pa.scalar("true"), pa.scalar("false"))
    return pc.fill_null(texts, "null")


def _or_null_text(column: Any) -> Any:
    import pyarrow.compute as pc

    return pc.fill_null(column, "null")


def _join(*parts: Any) -> Any:
    """The parts (texts, or arrays of texts without nulls) concatenated row by row."""
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(*parts, "")


def _is_text(kind: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind)
