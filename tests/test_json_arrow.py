"""``kjoin.spark.json_arrow``: on random texts within and outside its grammar, every row it marks exact is what the
chain pass's Python rules give (the value shown, a ``{"field": path}`` key selector's key), texts that are not JSON
are never exact, and the grammar's own cases (the bench's texts among them) are exact."""

from __future__ import annotations

import json
import random
import string
from typing import Any

import pyarrow as pa
import pytest

from kjoin.records import load_json, render_value
from kjoin.spark.json_arrow import MAX_DIGITS, decoded
from kjoin.serde import string_serde_text
from kjoin.topology.functions import field_of

PATHS = ["c", "v", "a", "a.c", "c.a", "", ":b", ",", 'a"b', "é", "{", "b c"]
NAMES = ["a", "b", "c", "v", "", ":b", ":", ",", "a,", "{", "}", "b c", "é", 'a"b', "a\\b", "c.a", "A", "~"]


def rules(text: str | None, path: str) -> tuple[Any, Any]:
    """The chain pass's rules: the value shown (``_decoded_inputs``) and the key (``select_key({"field": path})``)."""
    if text is None:
        return None, None
    value = load_json(text)
    shown = value if value is None or type(value) is str else render_value(value)
    return shown, string_serde_text(field_of(value, path))


def _string(rng: random.Random) -> str:
    pool = rng.choice([string.ascii_letters + string.digits, string.printable, ' ,:{}[]"\\.', "éü\u2028\x7f\x00\t"])
    return "".join(rng.choice(pool) for _ in range(rng.randint(0, 6)))


def _scalar(rng: random.Random) -> Any:
    return rng.choice([
        lambda: _string(rng), lambda: rng.randint(-1000, 1000), lambda: rng.choice([True, False, None]),
        lambda: rng.choice([0.5, -0.0, 2.0, 1e-7, 1e300]), lambda: int("9" * rng.choice([18, 19, 99, 100, 101, 700])),
        lambda: rng.choice(["c123", "O5", "", 0]),
    ])()  # fmt: skip


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if roll < 0.3 or depth > 1:
        return _scalar(rng)
    if roll < 0.85:
        return {rng.choice(NAMES): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def _flat_text(rng: random.Random) -> str:
    """A compact flat object written by hand: names in any order, repeated now and then."""
    names = [rng.choice(NAMES[:12]) for _ in range(rng.randint(0, 4))]
    if rng.random() < 0.5:
        names = sorted(set(names))
    members = []
    for name in names:
        value = rng.choice(['"x"', '"c,1}"', '":"', "0", "-3", "12", "true", "false", "null", '""', "-0", "01", "1.5"])
        members.append(f"{json.dumps(name)}:{value}")
    return "{" + ",".join(members) + "}"


def _mutated(rng: random.Random, text: str) -> str:
    at = rng.randint(0, len(text))
    return rng.choice([
        lambda: text[:at] + rng.choice(' \n\t,:{}[]"\\-0e.é') + text[at:],
        lambda: text[:at] + text[at + 1:],
        lambda: f" {text}", lambda: f"{text} ", lambda: f"{text}\n",
    ])()  # fmt: skip


def random_text(rng: random.Random) -> str | None:
    roll = rng.random()
    if roll < 0.05:
        return None
    if roll < 0.1:
        return rng.choice(["", "null", "-0", "01", "1e5", "1E5", "NaN", "Infinity", "-", "[]", "{}", '"', "{,}", "nul"])
    if roll < 0.45:
        text = _flat_text(rng)
    else:
        value = _value(rng)
        compact = rng.random() < 0.8
        text = json.dumps(value, sort_keys=rng.random() < 0.7, ensure_ascii=rng.random() < 0.7,
                          separators=(",", ":") if compact else None)  # fmt: skip
    return _mutated(rng, text) if rng.random() < 0.15 else text


def _array(texts: list[str | None], kind: pa.DataType, rng: random.Random) -> pa.ChunkedArray:
    cuts = sorted(rng.sample(range(len(texts) + 1), 3))
    return pa.chunked_array([pa.array(texts[a:b], kind) for a, b in zip([0, *cuts], [*cuts, len(texts)])], kind)


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
@pytest.mark.parametrize("seed", range(3))
def test_exact_rows_are_the_python_rules(kind: pa.DataType, seed: int) -> None:
    rng = random.Random(seed)
    texts = [random_text(rng) for _ in range(3000)]
    chunked = _array(texts, kind, rng)
    checked = 0
    for path in PATHS:
        result = decoded(chunked if path != "c" else chunked.combine_chunks(), path)
        assert result.shown.type == kind and result.key.type == kind and len(result.exact) == len(texts)
        shown, keys = result.shown.to_pylist(), result.key.to_pylist()
        for at in result.exact.nonzero()[0].tolist():
            try:
                expected = rules(texts[at], path)
            except ValueError as error:  # not JSON, or an integer Python will not read
                pytest.fail(f"{texts[at]!r} is marked exact but the rules raise {error!r}")
            assert (shown[at], keys[at]) == expected, (texts[at], path)
            checked += 1
    assert checked > 1000
    # the generator reaches both sides of the grammar
    exact = decoded(chunked, "c").exact
    assert 0.2 < exact.mean() < 0.8


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_the_grammars_cases_are_exact(kind: pa.DataType) -> None:
    cases = {
        '{"c":"c123","v":"O5"}': ('{"c":"c123","v":"O5"}', "c123"),
        '{"c":7,"v":"O5"}': ('{"c":7,"v":"O5"}', "7"),
        '{"c":true}': ('{"c":true}', "true"),
        '{"c":null,"d":1}': ('{"c":null,"d":1}', None),
        '{"b":1}': ('{"b":1}', None),
        '{"":0,"c":-12,"c ":"x"}': ('{"":0,"c":-12,"c ":"x"}', "-12"),
        '{"a":"c","b":"{\\"c\\":1}"}': None,  # escapes: not exact
        "{}": ("{}", None),
        '"c123"': ("c123", None),
        '""': ("", None),
        '" ~!#"': (" ~!#", None),
        "0": ("0", None),
        "-42": ("-42", None),
        "9" * MAX_DIGITS: ("9" * MAX_DIGITS, None),
        "true": ("true", None),
        "false": ("false", None),
        "null": (None, None),
        None: (None, None),
    }
    texts = list(cases)
    result = decoded(pa.array(texts, kind), "c")
    for at, text in enumerate(texts):
        expected = cases[text]
        if expected is None:
            assert not result.exact[at], text
            continue
        assert result.exact[at], text
        assert (result.shown[at].as_py(), result.key[at].as_py()) == expected == rules(text, "c")


@pytest.mark.parametrize(
    "text",
    ["-0", "01", "1.0", "1e5", "1E5", "NaN", " 1", "1 ", "1\n", "", "nul", '"é"', '"\\n"', '"a"b"', "[1]",
     '{"c":1,"c":2}', '{"d":1,"c":2}', '{"c":{"d":1}}', '{"c" :1}', '{"c":1,}', "{,}", '{"c":[1]}', '{"c":1.5}',
     "9" * (MAX_DIGITS + 1), "9" * 5000, '{"c":"\x7f"}', '"\x1f"'],
)  # fmt: skip
def test_texts_outside_the_grammar_are_not_exact(text: str) -> None:
    assert not decoded(pa.array([text]), "c").exact[0]


def test_a_path_of_two_parts_over_a_flat_object_is_no_key() -> None:
    result = decoded(pa.array(['{"a":1,"a.c":2}', '{"a":{"c":1}}']), "a.c")
    assert result.exact.tolist() == [True, False]
    assert result.key[0].as_py() is None
    assert rules('{"a":1,"a.c":2}', "a.c") == ('{"a":1,"a.c":2}', None)


def test_no_path_no_keys_and_other_types_refused() -> None:
    assert decoded(pa.array(['{"c":1}']), None).key is None
    assert decoded(pa.chunked_array([], pa.string())).exact.tolist() == []
    with pytest.raises(TypeError, match="pa.string or pa.large_string"):
        decoded(pa.array([b"1"]))
