"""``kjoin.records``' JSON rules as Spark expressions (:mod:`kjoin.spark.json_text`) against the reference engine's
Python: random JSON texts (nested objects and arrays, fields in any order, integers of any size, floats, strings with
escapes, control characters and letters outside ASCII, any spacing) and texts chosen for each rule of the module's
table. Wherever :func:`~kjoin.spark.json_text.exact` holds, the value as shown, two fields as keys and the default
joiner's result are Python's; and it holds on every value outside the table's rules (so the fast path is taken
where it can be)."""

from __future__ import annotations

import json
import random
import re

import pytest

from kjoin.joins.context import default_joiner
from kjoin.records import load_json, render_value
from kjoin.spark.json_text import FieldPathError, field_path
from kjoin.topology.functions import field_of, key_selector

PATHS = ("c", "a.b")
KEYS = ["c", "a", "b", "d", "é", "x y", 'q"', "n\\u", "0"]
STRINGS = ["c1", "C42", "", "x y", 'say "hi"', "back\\slash", "a/b", "tab\there", "line\nnext", "é", "日本",
           "\x01", "\x7f", "~", "\\u0041"]  # fmt: skip


def _value(rng: random.Random, depth: int = 0) -> object:
    roll = rng.random()
    if depth < 3 and roll < 0.3:
        return {rng.choice(KEYS): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 3 and roll < 0.4:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice(
        [
            lambda: rng.randint(-1000, 1000),
            lambda: rng.randint(-(10**30), 10**30),
            lambda: rng.choice([10**38 - 1, -(10**38) + 1, 10**38, 10**45]),
            lambda: rng.choice([0.5, 2.0, -0.0, 1e-7, 1e21, 3.25]),
            lambda: rng.choice(STRINGS),
            lambda: rng.choice([True, False, None]),
        ]
    )()


def _top(rng: random.Random) -> object:
    if rng.random() < 0.8:
        value = {rng.choice(KEYS): _value(rng, 1) for _ in range(rng.randint(0, 4))}
        if rng.random() < 0.5:
            value["c"] = _value(rng, 2)
        if rng.random() < 0.3:
            value["a"] = {"b": _value(rng, 2)}
        return value
    return _value(rng, 3)


def _text(rng: random.Random, value: object) -> str:
    return json.dumps(value, ensure_ascii=rng.random() < 0.5, separators=rng.choice([(",", ":"), (", ", ": ")]))


def _plain(value: object) -> bool:
    """Outside every rule of the module's table: no float, no integer of 39 or more digits, and shown as printable
    ASCII without ``\\u`` escapes."""
    if isinstance(value, float):
        return False
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return len(str(abs(value))) <= 38
    if isinstance(value, str):
        text = json.dumps(value)
        return all(" " <= c <= "~" for c in text) and "\\u" not in text
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    return all(_plain(key) and _plain(item) for key, item in value.items())


HARD = [
    '{"c":1.0}', '{"c":2.0}', "1e5", '{"c":-0.0}', '{"c":1e-7}', "1E400", '{"c":"é"}', '{"c":"\\u00e9"}',
    '{"c":"\\u007f"}', '{"c":"\\u0001"}', '{"c":1,"c":2}', '{"c":' + "9" * 39 + "}", "not json", '{"c":', "null",
    '{"c":null}', '"just text"', "  {\"c\" : \"x\" }  ", "[1,2]", '{"c":{"z":1,"y":[true,null]}}', "12", "true",
]  # fmt: skip


OBJECT_TEXTS = ['"{\\"c\\":\\"x\\"}"', ' "{\\"c\\": \\"x\\"}"']
"""Strings that hold a JSON object's text: a String-serde app reads their fields (``functions.as_read``)."""


def _python(text: str | None) -> tuple[object, ...] | None:
    """The reference engine's shown value, keys and joined value for a text (``None`` when it is not JSON)."""
    if text is None:
        return (None, None, None, "null-null")
    try:
        value = load_json(text)
    except ValueError:
        return None
    shown = None if value is None else value if isinstance(value, str) else render_value(value)
    keys = tuple(key_selector({"field": path}).call(None, value) for path in PATHS)
    return (shown, *keys, default_joiner(value, field_of(value, "c")))


@pytest.mark.spark
def test_the_expressions_show_keys_and_join_as_the_reference_engine_does_where_exact(spark):
    from pyspark.sql import functions as F

    from kjoin.spark.json_text import concat_joined, exact, field, parsed, shown

    rng = random.Random(30)
    generated = [_top(rng) for _ in range(500)]
    texts = [_text(rng, value) for value in generated] + HARD + [None] + OBJECT_TEXTS
    frame = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, t string")
    value = parsed(F.col("t"))
    rows = frame.select(
        "i", exact("t", value).alias("exact"), shown(value).alias("shown"),
        *[field(value, path).alias(f"k{n}") for n, path in enumerate(PATHS)],
        concat_joined(shown(value), field(value, "c")).alias("joined"),
    ).collect()  # fmt: skip
    got = {row["i"]: row for row in rows}
    exact_count = 0
    for i, text in enumerate(texts):
        row = got[i]
        if i < len(generated):  # exact on every value outside the table's rules, and only there
            assert row["exact"] == _plain(generated[i]), (text, row)
        if not row["exact"]:
            continue
        exact_count += 1
        expected = _python(text)
        assert expected is not None, f"{text!r}: exact, but not JSON"
        assert (row["shown"], row["k0"], row["k1"], row["joined"]) == expected, text
    assert exact_count > 150  # the fast path is the common one
    by_text = {text: got[i]["exact"] for i, text in enumerate(texts) if i >= len(generated)}
    never = HARD[:14]  # each rule of the module's table
    assert [text for text in never if by_text[text]] == []
    always = [*HARD[14:], None]
    assert [text for text in always if not by_text[text]] == []
    assert [text for text in OBJECT_TEXTS if by_text[text]] == []  # the reference reads their fields: Python
    assert [_python(text)[1] for text in OBJECT_TEXTS] == ["x", "x"]


def test_a_field_path_is_a_variant_path_of_object_fields():
    assert field_path("c") == "$['c']"
    assert field_path("a.b") == "$['a']['b']"
    assert field_path("x y.0") == "$['x y']['0']"
    for bad in ("", "a..b", "it's", "a[0]", "back\\slash"):
        with pytest.raises(FieldPathError, match=re.escape(repr(bad))):
            field_path(bad)
