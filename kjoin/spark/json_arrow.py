"""``kjoin.records``' rules for JSON values over Arrow arrays of their texts, with no Python call per record: the value
as the trace shows it and a field of it as a key, and where those are exactly the rules' results.

The rules (the chain pass's, :func:`kjoin.spark.passes.stage_chain._decoded_inputs`, and a
``select_key({"field": path})``'s function, :mod:`kjoin.topology.functions`): ``v = load_json(text)``; the value
shown is ``None`` for a null text or JSON ``null``, ``v`` for a string, else :func:`kjoin.records.render_value`
(``json`` with sorted keys, compact, ASCII); the key is ``string_serde_text(field_of(v, path))``.

Those rules are the text itself (or the text without its quotes) on a small grammar, which RE2's regular expressions
(``pyarrow.compute``) recognise at once:

* a string of printable ASCII (space to ``~``) without ``"`` or ``\\``: shown without its quotes (``ensure_ascii``
  escapes nothing in it);
* a canonical integer ``0|-?[1-9][0-9]*`` of at most :data:`MAX_DIGITS` digits (``-0`` renders ``0``; Python refuses
  to read or write integers of more than ``sys.get_int_max_str_digits()`` digits, never fewer than 640), ``true``,
  ``false``: shown as they are; ``null``: not shown (``None``);
* a compact flat object ``{"name":scalar,...}`` (names as the strings above, scalars the four above), ``{}``
  included, whose names strictly increase (byte order, which is code point order in ASCII): ``sort_keys`` keeps
  them where they are, and no name repeats (Python keeps a repeated name's last value); shown as it is.

Everything else (whitespace, escapes, fractions, exponents, characters outside ASCII, nesting, arrays, text that is
not JSON) is not :attr:`Decoded.exact`: its rows' arrays hold nothing meaningful and the caller runs the rules in
Python for them (``tests/test_json_arrow.py`` checks every exact row against the rules on random texts).

A key: over a flat object, the member named ``path`` (a one-part path); its string without quotes, ``null`` as
``None``, an integer or boolean as its text (``render_value``); ``None`` when no member has that name, for every
value that is not an object, and for every path of two parts or more (``field_of`` stops at a value that is not an
object, and no exact object holds one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Decoded", "decoded", "GRAMMAR", "MAX_DIGITS"]

MAX_DIGITS = 100
"""The most digits of an exact integer (Python reads and writes up to 640 whatever its configured limit)."""

_CHARS = r"[ !#-\[\]-~]*"
"""A string's or name's characters: printable ASCII (0x20-0x7e) without ``"`` (0x22) or ``\\`` (0x5c)."""
_SCALAR = rf'(?:"{_CHARS}"|0|-?[1-9][0-9]{{0,{MAX_DIGITS - 1}}}|true|false|null)'
_MEMBER = rf'"{_CHARS}":{_SCALAR}'
GRAMMAR = rf"^(?:{_SCALAR}|\{{\}}|\{{{_MEMBER}(?:,{_MEMBER})*\}})$"
"""The texts whose rows may be exact (RE2): a scalar, ``{}`` or a compact flat object of scalars; the order of its
names is checked apart (:func:`_names_increase`)."""

_NAME = frozenset(chr(c) for c in range(0x20, 0x7F)) - {'"', "\\"}

Texts = Union[pa.Array, pa.ChunkedArray]


@dataclass(frozen=True)
class Decoded:
    """Per text: the value as shown, the key (if a path was given), and where both are exactly the rules' results
    (a boolean numpy array; null texts are exact). ``shown`` and ``key`` are of the texts' type and meaningless
    where not exact."""

    shown: pa.Array
    key: pa.Array | None
    exact: np.ndarray


def decoded(texts: Texts, path: str | None = None) -> Decoded:
    """The values of ``texts`` (JSON, nulls allowed; ``pa.string`` or ``pa.large_string``, chunked or not) as shown,
    their keys by ``{"field": path}`` if ``path`` is given, and which rows are exact (see the module's docstring)."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks() if texts.num_chunks else pa.array([], texts.type)
    if texts.type not in (pa.string(), pa.large_string()):
        raise TypeError(f"json_arrow.decoded: expected an array of pa.string or pa.large_string, got {texts.type}")
    kind = texts.type
    valid = pc.is_valid(texts).to_numpy(zero_copy_only=False)
    grammar = pc.fill_null(pc.match_substring_regex(texts, GRAMMAR), False).to_numpy(zero_copy_only=False)
    exact = ~valid | grammar
    objects = np.flatnonzero(grammar & pc.fill_null(pc.starts_with(texts, "{"), False).to_numpy(zero_copy_only=False))
    key = None if path is None else pa.nulls(len(texts), kind)
    if len(objects):
        increase, object_keys = _members(texts.take(objects), path)
        exact[objects[~increase]] = False
        if object_keys is not None:  # the others' keys are null: a scalar has no field
            index = np.full(len(texts), len(objects), dtype=np.int64)
            index[objects] = np.arange(len(objects))
            key = pa.concat_arrays([object_keys, pa.nulls(1, kind)]).take(index)
    quoted = pc.fill_null(pc.starts_with(texts, '"'), False)
    null = pc.fill_null(pc.equal(texts, pa.scalar("null", kind)), False)
    shown = pc.if_else(quoted, pc.utf8_slice_codeunits(texts, 1, -1), pc.if_else(null, pa.nulls(1, kind)[0], texts))
    return Decoded(shown, key, exact)


def _members(objects: pa.Array, path: str | None) -> tuple[np.ndarray, pa.Array | None]:
    """For each text of the grammar's objects: whether its names strictly increase, and (given a path) the key.
    Quotes are structural in the grammar (no string holds one), so the pieces between them alternate outside and
    inside quotes; an inside piece is a name when the piece after it starts with ``:``, and then that piece is ``:``
    before a string value (the inside piece after it) or ``:`` + the scalar + ``,`` or ``}``."""
    kind = objects.type
    parts = pc.split_pattern(objects, '"')
    pieces = pc.list_flatten(parts)
    parent = pc.list_parent_indices(parts).to_numpy()
    offsets = parts.offsets.to_numpy()
    inside = np.flatnonzero((np.arange(len(pieces)) - offsets[parent]) % 2 == 1)
    after = pieces.take(inside + 1)
    is_name = pc.starts_with(after, ":").to_numpy(zero_copy_only=False)
    at = inside[is_name]
    names = pieces.take(at)
    rows = parent[at]
    increase = np.ones(len(objects), dtype=bool)
    if len(rows) > 1:
        ordered = pc.less(names.slice(0, len(names) - 1), names.slice(1)).to_numpy(zero_copy_only=False)
        same = rows[1:] == rows[:-1]
        increase[rows[1:][same & ~ordered]] = False
    if path is None:
        return increase, None
    keys = pa.nulls(len(objects), kind)
    if "." in path or not set(path) <= _NAME:
        return increase, keys  # no exact object has a member of that name, nor a nested object
    named = np.flatnonzero(pc.equal(names, pa.scalar(path, kind)).to_numpy(zero_copy_only=False))
    if not len(named):
        return increase, keys
    colon = pieces.take(at[named] + 1)
    string = pc.equal(colon, pa.scalar(":", kind))
    scalar = pc.utf8_slice_codeunits(colon, 1, -1)
    quoted = pieces.take(np.minimum(at[named] + 2, len(pieces) - 1))  # a string's (a scalar's last piece has none)
    value = pc.if_else(
        string, quoted, pc.if_else(pc.equal(scalar, pa.scalar("null", kind)), pa.nulls(1, kind)[0], scalar)
    )
    # a repeated name (not exact) may be found twice: any of its values will do
    index = np.full(len(objects), len(named), dtype=np.int64)
    index[rows[named]] = np.arange(len(named))
    return increase, pa.concat_arrays([value, pa.nulls(1, kind)]).take(index)
