"""What a record of a topology may carry: a key the String serde writes, a value that is JSON.

A user function may return anything Python has; Kafka's serdes write only some of it. kjoin refuses the rest at the
node that made it (:class:`kjoin.topology.runtime.ProcessingError`), as a serializer would fail there, rather than
carry it on to a store or a topic where it fails later or compares wrongly:

* a key: null, text (with no lone surrogate, which no UTF-8 serializer writes), a boolean, a finite number, an
  integer within Kafka's 64-bit long (a windowed aggregate's ``[key@start/end]`` is text);
* a value: the same, or a list or a mapping with text keys of such values, at most
  :data:`~kjoin.scenario.inputs.MAX_DEPTH` deep. A tuple is a list: JSON writes both as an array, and kjoin turns a
  returned tuple into a list where the function returns it (:func:`as_written`), so that a store, a comparison and
  the output hold what a consumer reads back.
"""

from __future__ import annotations

import math
from typing import Any

from ..scenario.inputs import MAX_DEPTH, MAX_LONG, MIN_LONG, has_lone_surrogate

__all__ = ["as_written", "not_a_key", "not_a_value", "shown"]


def _scalar(value: Any) -> str | None:
    """``None`` for a plain scalar; what is wrong otherwise; ``""`` for a container (not a scalar)."""
    kind = type(value)
    if kind is str or isinstance(value, str):
        return _not_utf8(value)
    if kind is bool or value is None:
        return None
    if kind is int or (isinstance(value, int) and not isinstance(value, bool)):
        if MIN_LONG <= value <= MAX_LONG:
            return None
        return f"{value.bit_length()}-bit integer {shown(value)}, beyond Kafka's 64-bit long"
    if kind is float:
        return None if math.isfinite(value) else f"{value}, which JSON cannot carry"
    return ""


def _not_utf8(text: str) -> str | None:
    if has_lone_surrogate(text):
        return f"the text {shown(text)} with a lone surrogate, which no UTF-8 serializer can write"
    return None


def not_a_key(key: Any) -> str | None:
    """``None`` if the String serde can write ``key``; else what it is."""
    problem = _scalar(key)
    if problem == "":
        return f"{shown(key)} (a {type(key).__name__}); a key is text, a number, a boolean or null"
    return problem


def not_a_value(value: Any) -> str | None:
    """``None`` if ``value`` is JSON within kjoin's bounds; else what is not."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        problem = _scalar(item)
        if problem is None:
            continue
        if problem:
            return problem
        if depth >= MAX_DEPTH:
            return f"a value nested more than {MAX_DEPTH} levels deep"
        if type(item) is dict or type(item) is list or type(item) is tuple:
            if type(item) is dict:
                for name, inner in item.items():
                    if not isinstance(name, str):
                        return f"a mapping with the key {shown(name)} (a {type(name).__name__}); JSON's keys are text"
                    if has_lone_surrogate(name):
                        return f"a mapping with the key {_not_utf8(name)}"
                    stack.append((inner, depth + 1))
            else:
                stack.extend((inner, depth + 1) for inner in item)
            continue
        return f"{shown(item)} (a {type(item).__name__}), which is not JSON"
    return None


def as_written(value: Any) -> Any:
    """``value`` as JSON reads it back: every tuple in it a list (``(1, 2)`` is ``[1, 2]``); ``value`` itself when
    it holds no tuple. Past :data:`MAX_DEPTH` it is left as it is (:func:`not_a_value` refuses it)."""
    return _as_written(value, 0) if _holds_tuple(value, 0) else value


def _holds_tuple(value: Any, depth: int) -> bool:
    kind = type(value)
    if kind is tuple:
        return True
    if depth >= MAX_DEPTH or (kind is not list and kind is not dict):
        return False
    inner = value.values() if kind is dict else value
    return any(_holds_tuple(item, depth + 1) for item in inner)


def _as_written(value: Any, depth: int) -> Any:
    kind = type(value)
    if depth >= MAX_DEPTH:
        return value
    if kind is tuple or kind is list:
        return [_as_written(item, depth + 1) for item in value]
    if kind is dict:
        return {name: _as_written(item, depth + 1) for name, item in value.items()}
    return value


def shown(value: Any) -> str:
    """``value`` as an error message names it: its ``repr``, cut to 60 characters (a type name if ``repr`` fails)."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - an object whose repr fails is still named
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."
