"""The Spark diff's comparison in arrays (:func:`kjoin.spark.passes.comparison.compared_table`) gives exactly the
rows of the reference engine's comparison of each record (:func:`compared_rows`, :func:`kjoin.diff.compare_outputs`)
on random outputs of two runs: ties, duplicates, null values and keys, tombstones, unicode, quotes and JSON texts,
string, long and double columns. No Spark: the comparison is the pass's Arrow code. CI draws 60 tasks;
``make diff-check`` 2000 (``KJOIN_COMPARISON_EXAMPLES``)."""

from __future__ import annotations

import math
import os
from collections import Counter

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kjoin.spark.passes.comparison import ORDER, compared_rows, compared_table, diff_arrow_schema

TEXTS = ["a", "b", "", "null", 'say "hi"', "a,b", "back\\slash", "é", "日本", "tab\there", "\x7f", "😀"]
JSON_TEXTS = ["null", "1", "1.0", '"a"', '"null"', '{"a":1,"b":2}', '{"b": 2, "a": 1}', "[1,2]", "[1, 2]", '"é"']
JSON_KEYS = [*JSON_TEXTS, "NaN", '{"n":NaN}']
TYPES = {"string": pa.string(), "bigint": pa.int64(), "double": pa.float64()}


def columns(draw, kind: str, decoded: bool, keys: bool = False):
    """A few values of a column's kind (each task draws its own few, so that outputs share keys and joined
    values: the same result, and changed outputs, are common)."""
    if kind == "bigint":
        every = list(range(-2, 3))
    elif kind == "double":
        every = [0.0, -0.0, 1.5, -1.0, math.nan, math.inf]
    else:
        every = (JSON_KEYS if keys else JSON_TEXTS) if decoded else TEXTS
    few = draw(st.lists(st.sampled_from(every), min_size=1, max_size=3, unique_by=repr))
    return st.sampled_from([*few, None])


@st.composite
def task(draw):
    """Both runs' outputs of a few records: each output drawn from a small pool, so that equal outputs, the same
    result and ties are common."""
    key_type = draw(st.sampled_from(["string", "bigint"]))
    value_type = draw(st.sampled_from(["string", "bigint", "double"]))
    json_keys = key_type == "string" and draw(st.booleans())
    json_values = value_type == "string" and draw(st.booleans())
    key = columns(draw, key_type, json_keys, keys=True)
    value = columns(draw, value_type, json_values)
    pool = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "ts": st.one_of(st.none(), st.integers(0, 3)),
                    "origin_step": st.integers(0, 2),
                    "key": key,
                    "value": st.one_of(st.none(), st.sampled_from(TEXTS)),
                    "tombstone": st.one_of(st.booleans(), st.none()),
                    "left": value,
                    "right": value,
                }
            ),
            min_size=2,
            max_size=6,
        )
    )
    rows, inputs = [], []
    for i in range(draw(st.integers(1, 4))):
        identity = {"scenario": 0, "partition": i % 2, "side": draw(st.sampled_from(["left", "right"])), "offset": i}
        inputs.append({"i": i, "input_key": draw(key), "input_value": draw(value), "input_ts": draw(st.integers(0, 9))})
        for run in (0, 1):
            for output in draw(st.lists(st.sampled_from(pool), max_size=7)):
                rows.append({**identity, **output, "step": draw(st.integers(0, 3)), "run": run, "i": i})
    if not rows:
        rows.append({"scenario": 0, "partition": 0, "side": "left", "offset": 0, **pool[0], "step": 0, "run": 1})
        rows[-1]["i"] = 0
    return rows, inputs, key_type, value_type, json_keys, json_values


def tables(rows, inputs, key_type, value_type):
    kinds = {
        "scenario": pa.int64(),
        "partition": pa.int32(),
        "step": pa.int64(),
        "side": pa.string(),
        "offset": pa.int64(),
        "key": TYPES[key_type],
        "left": TYPES[value_type],
        "right": TYPES[value_type],
        "value": pa.string(),
        "ts": pa.int64(),
        "tombstone": pa.bool_(),
        "origin_step": pa.int64(),
        "run": pa.int32(),
        "i": pa.int64(),
    }
    records = pa.schema(
        [
            ("i", pa.int64()),
            ("input_key", TYPES[key_type]),
            ("input_value", TYPES[value_type]),
            ("input_ts", pa.int64()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=pa.schema(kinds)), pa.Table.from_pylist(inputs, schema=records)


def spark_order(output: dict) -> tuple:
    """Spark's ascending order of the struct: nulls first, texts by code point (UTF-8 bytes), NaN last."""

    def field(value):
        if value is None:
            return (False,)
        if isinstance(value, float):
            return (True, math.isnan(value), 0.0 if math.isnan(value) else value + 0.0)
        return (True, value)

    return tuple(field(output[name]) for name in ORDER)


def reference(rows, inputs, json_keys, json_values) -> list[dict]:
    """Each record grouped as the diff's other path groups it, compared by the reference engine's comparison."""
    found = []
    for record in inputs:
        mine = [r for r in rows if r["i"] == record["i"]]
        if not mine:
            continue
        runs = [[r for r in mine if r["run"] == run] for run in (0, 1)]
        steps = [min((r["step"] for r in outputs), default=None) for outputs in runs]
        row = {
            **{name: mine[0][name] for name in ("scenario", "partition", "side", "offset")},
            **{name: record[name] for name in ("input_key", "input_value", "input_ts")},
            "before": sorted(({n: r[n] for n in ORDER} for r in runs[0]), key=spark_order),
            "after": sorted(({n: r[n] for n in ORDER} for r in runs[1]), key=spark_order),
            "from_step": steps[0],
            "to_step": steps[1],
        }
        found += compared_rows(row, json_keys, json_values)
    return found


def as_rows(table) -> Counter:
    return Counter(tuple(row.values()) for row in table.to_pylist())


@settings(
    max_examples=int(os.environ.get("KJOIN_COMPARISON_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(task())
def test_the_comparison_in_arrays_gives_the_reference_engines_rows(drawn) -> None:
    rows, inputs, key_type, value_type, json_keys, json_values = drawn
    outputs, records = tables(rows, inputs, key_type, value_type)
    found, fallbacks = compared_table(outputs, records, json_keys, json_values)
    assert found.schema == diff_arrow_schema()
    expected = pa.Table.from_pylist(reference(rows, inputs, json_keys, json_values), schema=diff_arrow_schema())
    assert as_rows(found) == as_rows(expected)
    assert 0 <= fallbacks <= len(inputs)


def _output(key: str, left: str | None, right: str | None, ts: int) -> dict:
    return {"key": key, "left": left, "right": right, "value": f"{left}+{right}", "ts": ts, "tombstone": False}


def _compare(before: list[dict], after: list[dict]):
    identity = {"scenario": 0, "partition": 0, "side": "right", "offset": 7, "step": 3, "origin_step": 0, "i": 7}
    rows = [{**identity, **o, "run": 0} for o in before] + [{**identity, **o, "run": 1} for o in after]
    inputs = [{"i": 7, "input_key": "k", "input_value": "R", "input_ts": 5}]
    outputs, records = tables(rows, inputs, "string", "string")
    found, fallbacks = compared_table(outputs, records, False, False)
    expected = pa.Table.from_pylist(reference(rows, inputs, False, False), schema=diff_arrow_schema())
    assert as_rows(found) == as_rows(expected)
    return found, fallbacks


def test_outputs_sharing_a_joined_value_pair_in_order_by_arrays() -> None:
    found, fallbacks = _compare(
        [_output("k", "L1", "R", 1), _output("k", "L2", "R", 2), _output("j", "L3", None, 0)],
        [_output("k", "L3", "R", 1), _output("k", "L9", "R", 4)],
    )
    assert fallbacks == 0
    assert sorted(found.column("change").to_pylist()) == ["changed", "changed", "removed"]
    first = found.to_pylist()[0]
    assert first["before"] == '{"key": "k", "tombstone": false, "ts": 1, "value": "L1+R"}'


def test_a_record_whose_same_result_is_no_equivalence_is_compared_in_python() -> None:
    # (L1, R) shares R with (L2, R) and L1 with (L1, null): the greedy order decides, so Python does
    found, fallbacks = _compare(
        [_output("k", "L1", "R", 1), _output("k", "L2", None, 2)],
        [_output("k", "L1", None, 1), _output("k", "L2", "R", 2)],
    )
    assert fallbacks == 1 and len(found) == 2
