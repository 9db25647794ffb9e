"""The edge where bytes become a scenario document: reading a file, YAML without YAML 1.1's
surprises, and the bounds every document is checked against before any field is read.

Everything here refuses with a :class:`~kjoin.scenario.ScenarioError` that names the file, the
field (a path such as ``events[3].value.a``) and the fix; nothing lets a Python exception from
deep inside (``UnicodeDecodeError``, ``RecursionError``, ``TypeError`` of a date) through.

* :func:`read_document`: a regular file of at most :data:`MAX_FILE_BYTES`, UTF-8, parsed as
  JSON (``.json``) or YAML; a FIFO or a directory is refused before it is opened.
* YAML is read with the YAML 1.2 core schema (:class:`ScenarioLoader`, on libyaml's C loader
  where PyYAML has it): ``no``, ``off``, ``1:30``, ``012`` stay what 1.2 says they are (a
  string, a string, a string, the integer 12); a date, a binary or a set is refused; a field
  written twice is refused; aliases are refused beyond a handful (the "billion laughs").
* :func:`check_document`: plain data only (mappings with string keys, lists, strings, integers
  within Kafka's 64-bit long, finite floats, booleans, null), nested at most :data:`MAX_DEPTH`
  deep, walked without recursion.
* :func:`unknown_field`: the refusal of a misspelled field, with difflib's "did you mean".
"""

from __future__ import annotations

import difflib
import json
import math
import re
import stat
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from .fields import ScenarioError

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_DEPTH",
    "MAX_EVENTS",
    "MAX_PARTITIONS",
    "MIN_LONG",
    "MAX_LONG",
    "read_document",
    "parse_text",
    "check_document",
    "check_long",
    "unknown_field",
    "did_you_mean",
    "ScenarioLoader",
]

MAX_FILE_BYTES = 256 * 2**20
"""A scenario file's largest size (256 MiB: some 2 million events)."""
MAX_DEPTH = 64
"""How deep a document may nest (a value ``{a: {b: ...}}`` counts each level). Kafka's values
are any JSON, but kjoin renders, compares and prints them recursively: 64 is far beyond any
record and far below Python's recursion limit."""
MAX_EVENTS = 10_000_000
"""The most events one scenario may list: the reference engine keeps every step's trace in memory."""
MAX_PARTITIONS = 2**31 - 1
"""The most partitions a scenario may have: Kafka numbers partitions with Java ints. The engines
build only the tasks that have records, so the count costs nothing."""
MIN_LONG = -(2**63)
MAX_LONG = 2**63 - 1
"""Kafka's timestamps, windows, retentions, offsets and long keys are Java ``long``s."""
MAX_ALIASES = 100
MAX_ALIASED_VALUES = 100_000
"""How many values aliases may add to a document beyond those written out."""
"""YAML aliases (``*name``) one document may use: enough for shared snippets, too few for an
alias bomb that expands to billions of nodes."""


def join_window_span_problem(before_ms: int, after_ms: int) -> str | None:
    """Why Kafka's ``JoinWindows`` refuses a window of ``before_ms`` and ``after_ms`` (its span, before + after, must
    be a long from 0: Java adds the two longs, so a sum past 2^63 - 1 wraps negative), or ``None``."""
    span = before_ms + after_ms
    if 0 <= span <= MAX_LONG:
        return None
    where = "is negative" if span < 0 else f"exceeds {MAX_LONG} (Kafka's long)"
    return (
        f"before_ms + after_ms is {span}, which {where}: Kafka's JoinWindows refuses such a window; "
        f"keep the span from 0 to {MAX_LONG}"
    )


_JSON_TYPES = (str, int, float, bool, type(None))


def read_document(path: Path) -> Any:
    """The parsed YAML or JSON of a scenario file, checked by :func:`check_document`; a
    ScenarioError naming the file if it cannot be read."""
    source = str(path)
    try:
        info = path.stat()
    except (OSError, ValueError) as error:
        raise ScenarioError(f"cannot read the scenario: {getattr(error, 'strerror', None) or error}", source) from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (a pipe or a device)"
        raise ScenarioError(f"cannot read the scenario: it is {kind}; name a YAML or JSON file", source)
    if info.st_size > MAX_FILE_BYTES:
        raise ScenarioError(
            f"the file has {info.st_size} bytes, more than kjoin reads ({MAX_FILE_BYTES}); split the scenario", source
        )
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ScenarioError(f"cannot read the scenario: {error.strerror}", source) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ScenarioError(
            f"not UTF-8 text: byte {raw[error.start]:#04x} at offset {error.start}; save the file as UTF-8", source
        ) from None
    try:
        data = parse_text(text, json_text=path.suffix.lower() == ".json")
        check_document(data)
    except ScenarioError as error:
        raise ScenarioError(str(error), source) from None
    return data


def parse_text(text: str, json_text: bool = False) -> Any:
    """A document from text: JSON if ``json_text``, else YAML 1.2 (:class:`ScenarioLoader`)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if json_text:
        return _parse_json(text)
    try:
        loader = ScenarioLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_nodes(node)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except ScenarioError:
        raise
    except yaml.YAMLError as error:
        raise ScenarioError(_yaml_problem(error)) from None
    except RecursionError:
        raise ScenarioError(f"not a scenario: YAML nested deeper than kjoin reads ({MAX_DEPTH} levels)") from None


def _yaml_problem(error: yaml.YAMLError) -> str:
    """PyYAML's error as one sentence: where (line and column, from 1), what, and the fix."""
    problem = getattr(error, "problem", None) or str(error)
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    where = "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"
    context = getattr(error, "context", None)
    context_mark = getattr(error, "context_mark", None)
    if context and context_mark is not None and context_mark is not mark:
        problem += f" ({context} at line {context_mark.line + 1}, column {context_mark.column + 1})"
    elif context:
        problem += f" ({context})"
    text = " ".join(problem.split())
    return (
        f"not valid YAML{where}: {text}; fix the text there (close every bracket and quote, quote a value that holds "
        "': ' or ' #', indent with spaces)"
    )


def _parse_json(text: str) -> Any:
    depth = _bracket_depth(text)
    if depth > MAX_DEPTH:
        raise ScenarioError(f"not a scenario: JSON nested {depth} levels deep; kjoin reads at most {MAX_DEPTH}")

    def duplicate_check(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise ScenarioError(f"the field {key!r} is written twice in one mapping; keep one")
            result[key] = value
        return result

    def constant(name: str) -> Any:
        raise ScenarioError(f"not valid JSON: {name} is not a number JSON allows; write a finite number")

    try:
        return json.loads(text, object_pairs_hook=duplicate_check, parse_constant=constant)
    except ScenarioError:
        raise
    except json.JSONDecodeError as error:
        raise ScenarioError(f"not valid JSON: {error}") from None
    except ValueError:  # an integer too long for Python's int()
        raise ScenarioError(
            f"a number has more than 4300 digits; Kafka's numbers are 64-bit longs ({MIN_LONG} to {MAX_LONG})"
        ) from None
    except RecursionError:  # pragma: no cover - the bracket depth is checked first
        raise ScenarioError(f"not a scenario: JSON nested deeper than {MAX_DEPTH} levels") from None


def _bracket_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` outside strings (JSON's own nesting), computed without
    parsing so that a file nested 100,000 deep never reaches the recursive parser."""
    if "[" not in text and "{" not in text:
        return 0
    depth = deepest = 0
    for token in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        ch = token.group()
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


# -- YAML 1.2 ------------------------------------------------------------------------------
_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ScenarioLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """PyYAML's safe loader (libyaml's C parser where available) with the YAML 1.2 core schema:
    ``true``/``false`` (any case) are booleans, ``null``/``~``/empty is null, integers are decimal
    (``0o``/``0x`` prefixes), floats include ``.inf``/``.nan`` (refused later); everything else is
    a string. A mapping key written twice, a date, a binary, a set, a Python tag or more than
    :data:`MAX_ALIASES` aliases are refused."""

    yaml_implicit_resolvers: dict[Any, Any] = {}

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise ScenarioError("the YAML merge key << is not supported; write the fields out")
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: check_document names it
                continue
            if duplicate:
                line = key_node.start_mark.line + 1
                raise ScenarioError(
                    f"line {line}: the field {key!r} is written twice in one mapping (YAML keeps the last "
                    "silently; kjoin refuses): keep one"
                )
            seen[key] = True
        return super().construct_mapping(node, deep=deep)

    def construct_undefined(self, node: Any) -> Any:
        raise ScenarioError(
            f"line {node.start_mark.line + 1}: the YAML tag {node.tag} is not plain data; kjoin reads strings, "
            "numbers, booleans, null, lists and mappings"
        )

    def construct_yaml_int(self, node: Any) -> Any:
        text = self.construct_scalar(node)
        if len(text) > 40:
            raise ScenarioError(
                f"line {node.start_mark.line + 1}: the number {text[:20]}... has {len(text)} digits; Kafka's numbers "
                f"are 64-bit longs ({MIN_LONG} to {MAX_LONG})"
            )
        sign = -1 if text.startswith("-") else 1
        digits = text.lstrip("+-")
        if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
            raise ScenarioError(
                f"line {node.start_mark.line + 1}: {text} has a leading zero, an octal number in YAML 1.1 and a "
                f"decimal one in YAML 1.2; write {int(digits)} (decimal), 0o{digits.lstrip('0')} (octal) or quote it"
            )
        if digits.startswith("0o"):
            return sign * int(digits[2:], 8)
        if digits.startswith("0x"):
            return sign * int(digits[2:], 16)
        return sign * int(digits)

    def construct_yaml_float(self, node: Any) -> Any:
        text = self.construct_scalar(node).lower()
        if text.lstrip("+-") in (".inf", ".nan"):
            return float(text.replace(".", "", 1))
        return float(text)


ScenarioLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        list("-+0123456789."),
    ),
):
    ScenarioLoader.add_implicit_resolver(_tag, re.compile(_pattern), _first)
ScenarioLoader.add_constructor("tag:yaml.org,2002:int", ScenarioLoader.construct_yaml_int)
ScenarioLoader.add_constructor("tag:yaml.org,2002:float", ScenarioLoader.construct_yaml_float)
for _tag in ("timestamp", "binary", "set", "omap", "pairs"):
    ScenarioLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", ScenarioLoader.construct_undefined)
ScenarioLoader.add_constructor(None, ScenarioLoader.construct_undefined)


def _check_nodes(root: Any) -> None:
    """Refuse a YAML node graph nested deeper than :data:`MAX_DEPTH` or reusing nodes (aliases)
    more than :data:`MAX_ALIASES` times, before anything is constructed: an alias bomb is a
    handful of nodes that expands to billions."""
    seen: set[int] = set()
    aliases = 0
    stack = [(root, 0)]
    order = []
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ScenarioError(
                f"line {node.start_mark.line + 1}: YAML nested more than {MAX_DEPTH} levels deep; kjoin reads at most "
                "that"
            )
        if id(node) in seen:
            aliases += 1
            if aliases > MAX_ALIASES:
                raise ScenarioError(
                    f"the YAML reuses anchored values (*name) more than {MAX_ALIASES} times; kjoin refuses alias bombs "
                    "(a few lines that expand to billions of values): write the values out"
                )
            continue
        seen.add(id(node))
        order.append(node)
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.append((key, depth + 1))
                stack.append((value, depth + 1))
    if aliases:
        _check_expansion(order)


def _check_expansion(nodes: list[Any]) -> None:
    """Refuse a node graph whose aliases add more than :data:`MAX_ALIASED_VALUES` values. An alias
    refers to an anchor written earlier, so every node ends after each of its children (a nested one
    ends inside it, an aliased one before it starts): sizes are summed in the order nodes end."""
    size: dict[int, int] = {}
    for node in sorted(nodes, key=lambda n: (n.end_mark.index, -n.start_mark.index)):
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            children = []
        total = 1 + sum(size.get(id(child), 1) for child in children)
        if total > len(nodes) + MAX_ALIASED_VALUES:
            raise ScenarioError(
                f"the YAML's aliases (*name) add more than {MAX_ALIASED_VALUES} values to the {len(nodes)} written "
                "out; kjoin refuses alias bombs: write the values out"
            )
        size[id(node)] = total


# -- the document's bounds -----------------------------------------------------------------
def check_document(data: Any, where: str = "") -> None:
    """Refuse anything in ``data`` that is not plain data within kjoin's bounds (see the module
    docstring), naming its path. Walks iteratively: a document of any depth is refused, not
    overflowed."""
    stack: list[tuple[Any, str, int]] = [(data, where, 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ScenarioError(
                f"{_name(path)}: nested more than {MAX_DEPTH} levels deep; kjoin renders and compares values "
                "recursively and reads at most that"
            )
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, str):
            if has_lone_surrogate(value):
                raise ScenarioError(
                    f"{_name(path)}: the text has a lone surrogate (an invalid \\ud8xx escape), which no UTF-8 "
                    "serializer can write; fix the escape"
                )
            continue
        if isinstance(value, int):
            check_long(value, path)
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ScenarioError(f"{_name(path)}: {value} is not a number JSON can carry; write a finite number")
            continue
        if isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ScenarioError(
                        f"{_name(path)}: the mapping key {_short(key)} is of type {type(key).__name__}; field names "
                        "and the keys of a JSON value are strings (quote it)"
                    )
                stack.append((item, f"{path}.{key}" if path else key, depth + 1))
            continue
        if isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                stack.append((item, f"{path}[{index}]", depth + 1))
            continue
        raise ScenarioError(
            f"{_name(path)}: a {type(value).__name__} is not plain data; a scenario holds strings, numbers, "
            "booleans, null, lists and mappings (a date or time as a string or as epoch milliseconds)"
        )


def check_long(value: int, path: str) -> None:
    """Refuse an integer outside Kafka's 64-bit signed long."""
    if not MIN_LONG <= value <= MAX_LONG:
        what = "timestamp" if path.endswith(".ts") else "long"
        text = str(value) if value.bit_length() < 1000 else f"a number of {value.bit_length()} bits"
        raise ScenarioError(
            f"{_name(path)}: {text} does not fit Kafka's 64-bit signed {what}; the largest is {MAX_LONG} (2^63 - 1), "
            f"the smallest {MIN_LONG}"
        )


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (``"\\udcff"``), which no UTF-8 serializer can write."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _name(path: str) -> str:
    return path or "the document"


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # pragma: no cover - an int too long to print
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- misspelled fields ---------------------------------------------------------------------
def did_you_mean(name: Any, allowed: Iterable[str]) -> str:
    """`` (did you mean 'window'?)`` for a close match among ``allowed``; empty otherwise."""
    if not isinstance(name, str):
        return ""
    close = difflib.get_close_matches(name, sorted(allowed), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_field(where: str, data: Mapping[Any, Any], allowed: Iterable[str], what: str = "") -> None:
    """Refuse the first field of ``data`` that is not ``allowed`` (fields of any type, sorted by
    their text), with the allowed fields and a "did you mean"."""
    allowed = set(allowed)
    unknown = sorted((key for key in data if key not in allowed), key=lambda key: (str(type(key)), str(key)))
    if not unknown:
        return
    name = unknown[0]
    path = f"{where}.{name}" if where else str(name)
    if not isinstance(name, str):
        path = where or "the document"
        raise ScenarioError(f"{path}: the field name {_short(name)} is not text; the fields are {_list(allowed)}")
    head = f"{path}: unknown field" if where else f"unknown field {name!r}"
    raise ScenarioError(f"{head}{did_you_mean(name, allowed)}; {what or 'the fields are'} {_list(allowed)}")


def _list(names: Iterable[str]) -> str:
    return ", ".join(sorted(names))
