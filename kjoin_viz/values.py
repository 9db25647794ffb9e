"""Values as a learner reads them in the views: values, not JSON strings.

kjoin's notation (:func:`kjoin.records.render_value`, what the seeds, the CLI and the exported tests print) writes a
JSON value as compact JSON, and the default joiner concatenates those texts: a foreign-key join's result reads
``{"customer":"C2"}-Alice``, a string of JSON. The views show the same values as values:

* :func:`show_value`: ``{customer: C2, v: 2}``: a mapping's keys and plain strings bare, a space after each
  separator; a string that a reader could take for something else (a number, ``null``, one with spaces, commas,
  colons or brackets) keeps its JSON quotes;
* :func:`show_text`: a text (an explanation, a foreign-key message) with the JSON in it shown so;
* :func:`show_output`: an output's value the same way; a join result of the default joiner as its two values
  (``{customer: C2}-Alice``, ``{customer: C2}-null``), a windowed aggregate's as ``home@[0, 10)=3``.

The predict widget reads either form back (:func:`plain`: quotes and spaces aside).
"""

from __future__ import annotations

import json
import re
from typing import Any

from kjoin.records import render_value

__all__ = ["show_value", "show_output", "show_text", "plain"]

_PLAIN = re.compile(r"^[A-Za-z_][\w.\-#/]*$")
_WORDS = frozenset({"null", "true", "false"})


def _show_string(text: str, nested: bool) -> str:
    if not nested or (_PLAIN.match(text) and text not in _WORDS):
        return text
    return json.dumps(text)


_DECODER = json.JSONDecoder()


def show_text(text: str) -> str:
    """A text with every JSON object or array in it shown as a value: an explanation such as ``the left row is
    {"customer":"C2"}: joiner called`` or a foreign-key message ``response m2 o1 ← {"name":"Alice"}``."""
    if "{" not in text and "[" not in text:
        return text
    parts, at = [], 0
    while at < len(text):
        starts = [i for i in (text.find("{", at), text.find("[", at)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        try:
            value, end = _DECODER.raw_decode(text, start)
        except ValueError:
            parts.append(text[at : start + 1])
            at = start + 1
            continue
        if isinstance(value, (dict, list)):
            parts.append(text[at:start] + show_value(value))
        else:
            parts.append(text[at:end])
        at = end
    parts.append(text[at:])
    return "".join(parts)


def show_value(value: Any, nested: bool = False) -> str:
    """A value as the views show it: ``null``, a string as is, a mapping as ``{key: value, ...}`` (sorted keys, as
    kjoin's notation sorts them), a list as ``[a, b]``; numbers and booleans as JSON."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return _show_string(value, nested) if nested else show_text(value)
    if isinstance(value, dict):
        items = (f"{_show_string(str(k), True)}: {show_value(v, True)}" for k, v in sorted(value.items()))
        return "{" + ", ".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show_value(v, True) for v in value) + "]"
    return render_value(value)


def show_output(output: Any) -> str:
    """An output as the views show it: ``null`` for a tombstone; a default joiner's result as its two values."""
    if getattr(output, "tombstone", False):
        return output.render()
    window = getattr(output, "window", "no window")
    if window != "no window":  # an aggregate's update: key@[start, end)=value, or key=value
        text = output.render()
        return text.rsplit("=", 1)[0] + "=" + show_value(output.value)
    left, right, value = getattr(output, "left", None), getattr(output, "right", None), output.value
    if isinstance(value, str) and (left is not None or right is not None):
        if value == f"{render_value(left)}-{render_value(right)}":
            return f"{show_value(left)}-{show_value(right)}"
    return show_value(value)


def plain(text: str) -> str:
    """An output's text without spaces and double quotes: both notations of one output give the same text
    (``{"customer":"C2"}-null`` and ``{customer: C2}-null``), so an answer may be written in either."""
    return text.replace(" ", "").replace('"', "")
