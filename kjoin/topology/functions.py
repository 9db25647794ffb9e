"""The functions a topology calls: key selectors, value mappers, predicates, joiners, partitioners.

In Python any function will do (``lambda key, value: value["customer"]``). A topology written as a
document (:mod:`kjoin.topology.document`) names its functions from a small vocabulary instead, which
the Kafka Streams harness (``kafka_oracle/``, ``TopologyOracle.java``) implements too, so that a
document can be judged by the real library:

==============  ==============================================================================
select_key      ``{field: path}`` the text of a field of the JSON value (``null`` if absent);
                ``{map: {old: new}}`` a lookup of the key (a key not listed keeps its key);
                ``{value: true}`` the value's text (WordCount's ``groupBy((key, word) -> word)``)
map_values      ``{append: text}`` the value's text with ``text`` appended (null stays null);
                ``{field: path}`` the text of a field of the JSON value;
                ``{fail_on: text}`` the value unchanged, but a value whose text contains ``text`` makes it throw
                Java's ``IllegalArgumentException`` (a function that fails, for the processing exception handler)
filter          ``{key_in: [..]}``, ``{key_not_in: [..]}``, ``{value_not_null: true}`` (a stream's or a
                table's)
flat_map_values ``{split: text}`` the value's text cut at every ``text`` as Java's ``String.split`` cuts it
                (trailing empty parts dropped; ``lower: true`` lower-cases it first); a null value: none
flat_map        ``{split: text}`` as ``flat_map_values``, each part a record keyed by itself: ``(part, part)``
joiner          ``concat`` (the default: ``A-a``, null as ``null``); ``keyed_concat`` (``key/A-a``) and
                ``keys_concat`` (``stream key/mapped key/A-a``, a global-table join's); ``object``:
                ``{"left": left, "right": right}`` (a JSON object a foreign-key join further down
                can read a field of), each side as a String-serde app reads it: an object's text
                parsed, a number or boolean as its text
partitioner     ``{map: {key: partition}}`` (a key not listed: murmur2, as Kafka's default)
group_by        (a stream) as ``select_key``; (a table) ``{field: path}``: the new key is that field's
                text and the value stays
aggregation     ``count``; ``reduce: concat`` (adder ``agg+value``, subtractor ``agg-value``, as text);
                ``aggregate: concat`` (initializer ``""``, then the same adder and subtractor)
key_selector    (a global-table join) ``{field: path}``; leave it out: the stream key
==============  ==============================================================================
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..joins.context import default_joiner
from ..partitioner import default_partition
from ..records import render_value
from ..serde import string_serde_text
from ..scenario.fields import ScenarioError
from .plain import as_written, not_a_key, not_a_value

__all__ = [
    "Function",
    "key_selector",
    "value_mapper",
    "predicate",
    "joiner",
    "partitioner",
    "FunctionError",
    "field_of",
    "as_read",
    "aggregation",
    "table_group_by",
    "AGGREGATIONS",
    "flat_value_mapper",
    "flat_mapper",
    "java_split",
    "UserFunctionError",
    "guarded",
]


class FunctionError(ScenarioError):
    """A function spec that is not in the vocabulary (the message says what is)."""


class UserFunctionError(Exception):
    """A function of the topology raised, or returned what its node cannot pass on. Not kjoin's error yet: the
    runtime, which knows the node and the record, turns it into one (:meth:`kjoin.topology.runtime` ``_failed``),
    the one place a processing exception handler decides (Kafka's KIP-1033)."""

    def __init__(
        self, function: str, problem: str, original: BaseException | None = None, fix: str | None = None
    ) -> None:
        super().__init__(f"{function} {problem}")
        self.function = function
        self.problem = problem
        self.original = original
        self.fix = fix
        """What to do instead (``None``: kjoin's default advice for a raise or a return)."""


@dataclass(frozen=True)
class Function:
    """A function of the topology: ``call`` does the work; ``spec`` is its document form (``None``
    for a Python function, which no document and no harness can carry); ``text`` names it in
    explanations."""

    call: Callable[..., Any]
    spec: Any
    text: str
    check: Callable[[Any], str | None] | None = None
    """What the result must be (:mod:`kjoin.topology.plain`: a key, a JSON value): ``None`` if it is, else what it
    is; checked when it is returned, since the joins show and store a result before any node forwards it."""
    keys: int = 0
    """How many keys a joiner takes before its two values: 0 (Kafka's ``ValueJoiner``), 1 (``ValueJoinerWithKey``,
    KIP-149: the key first) or 2 (a global-table join's ``ValueJoinerWithStreamAndMappedKey``, KIP-1340: the stream
    key, then the key the selector mapped it to)."""
    written: Callable[[Any], Any] | None = None
    """The checked result as the serde writes it (:func:`~kjoin.topology.plain.as_written`: a tuple is a list)."""

    def __call__(self, *args: Any) -> Any:
        try:
            result = self.call(*args)
        except UserFunctionError:
            raise
        except Exception as error:  # noqa: BLE001 - whatever the user's function raised, reported with its node
            raise UserFunctionError(self.text, f"raised {type(error).__name__}: {error}", error) from error
        if self.check is not None:
            problem = self.check(result)
            if problem is not None:
                raise UserFunctionError(self.text, f"returned {problem}")
        return result if self.written is None else self.written(result)


def _python(fn: Callable[..., Any], check: Callable[[Any], str | None] | None = None) -> Function:
    """A Python function of the topology, its result held to ``check`` (a value's then written as JSON reads it)."""
    written = as_written if check is not_a_value else None
    return Function(fn, None, function_name(fn), check, written=written)


def guarded(fn: Callable[..., Any], text: str) -> Callable[..., Any]:
    """``fn`` whose exceptions come back as :class:`UserFunctionError` naming it ``text``, and whose result must be
    JSON (an aggregator: its aggregate is stored and shown before any node forwards it)."""

    def call(*args: Any) -> Any:
        try:
            result = fn(*args)
        except UserFunctionError:
            raise
        except Exception as error:  # noqa: BLE001 - whatever the user's function raised, reported with its node
            raise UserFunctionError(text, f"raised {type(error).__name__}: {error}", error) from error
        problem = not_a_value(result)
        if problem is not None:
            raise UserFunctionError(text, f"returned {problem}")
        return as_written(result)

    return call


def as_read(value: Any) -> Any:
    """``value`` as an app whose values are text (the String serde) reads it back: a JSON object's text parsed (an
    object that went through ``map_values {append: ""}`` or ``flat_map_values`` is its text, and Kafka holds nothing
    else), any other value as its text (``3`` is ``"3"``, ``true`` is ``"true"``), null as null. An object's text
    that is no JSON (``{"f":1}-B``) stays text."""
    if value is None or type(value) is dict or isinstance(value, Mapping):
        return value
    text = string_serde_text(value)
    if not text.startswith("{"):
        return text
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    return parsed if type(parsed) is dict else text


def field_of(value: Any, path: str) -> Any:
    """The field at ``path`` (``a.b``) of a JSON value, or of the text of a JSON object (:func:`as_read`); ``None``
    when a part is missing or the value is not an object."""
    if type(value) is str:
        value = as_read(value)
    for part in path.split("."):
        if type(value) is not dict and not isinstance(value, Mapping):  # dict first: typing's check is slow
            return None
        value = value.get(part)
        if value is None:
            return None
    return value


def text_key(fn: Function) -> Function:
    """``fn`` (``(key, value) -> key``) giving its key as the String serde carries it (a topology's keys are its
    bytes: ``1`` and ``"1"`` are one key, ``true`` is not ``1``)."""
    call = fn  # called through its checks (Function.__call__)
    return Function(lambda key, value: string_serde_text(call(key, value)), fn.spec, fn.text)


def _text_pair(pair: Any) -> Any:
    """A ``(key, value)`` pair with its key as the String serde carries it; anything else as it is (the processor
    that called the function says what is wrong with it)."""
    if type(pair) in (tuple, list) and len(pair) == 2:
        return type(pair)((string_serde_text(pair[0]), pair[1]))
    return pair


def text_pairs(fn: Function) -> Function:
    """``fn`` (``(key, value) -> (key, value)``) giving its key as the String serde carries it."""
    call = fn  # called through its checks (Function.__call__)
    return Function(lambda key, value: _text_pair(call(key, value)), fn.spec, fn.text)


def text_pair_lists(fn: Function) -> Function:
    """``fn`` (``(key, value) -> [(key, value), ...]``) giving its keys as the String serde carries them."""
    call = fn  # called through its checks (Function.__call__)

    def texts(key: Any, value: Any) -> Any:
        found = call(key, value)
        if isinstance(found, (str, bytes, dict, set, frozenset)) or not hasattr(found, "__iter__"):
            return found
        return map(_text_pair, found)  # lazily: the flat_map node bounds how many it reads

    return Function(texts, fn.spec, fn.text)


def key_value_mapper(mapper: Any) -> Function:
    """``map``'s function ``(key, value) -> (new key, new value)``: a Python function."""
    return mapper if isinstance(mapper, Function) else Function(mapper, None, function_name(mapper))


def _one_entry(spec: Any, what: str, allowed: tuple[str, ...]) -> tuple[str, Any]:
    if not isinstance(spec, Mapping) or len(spec) != 1 or next(iter(spec)) not in allowed:
        forms = ", ".join(f"{{{name}: ...}}" for name in allowed)
        raise FunctionError(f"{what}: expected one of {forms} or a Python function, got {spec!r:.80}")
    name = next(iter(spec))
    return name, spec[name]


def key_selector(spec: Any) -> Function:
    """``select_key``'s function ``(key, value) -> new key`` (a document's: the key as the String serde carries it;
    a Python function's as it returns it, :func:`text_key` makes it the String serde's)."""
    if isinstance(spec, Function):
        return spec
    if callable(spec):
        return _python(spec, not_a_key)
    name, arg = _one_entry(spec, "select_key", ("field", "map", "value", "window_key"))
    if name == "window_key":  # a windowed aggregate's [key@start/end] back to its key (Kafka's Windowed.key())
        if arg is not True:
            raise FunctionError(f"select_key.window_key: expected true, got {arg!r}")
        return Function(lambda key, value: getattr(key, "key", key), {"window_key": True}, "the window's key")
    if name == "value":
        if arg is not True:
            raise FunctionError(f"select_key.value: expected true, got {arg!r}")
        return Function(lambda key, value: string_serde_text(value), {"value": True}, "the value")
    if name == "field":
        if not isinstance(arg, str) or not arg:
            raise FunctionError(f"select_key.field: expected a field path such as customer or a.b, got {arg!r}")
        return Function(
            lambda key, value: string_serde_text(field_of(value, arg)), {"field": arg}, f"the value's {arg}"
        )
    if not isinstance(arg, Mapping):
        raise FunctionError(f"select_key.map: expected a mapping from old key to new key, got {arg!r:.80}")
    table = dict(arg)
    by_text = {string_serde_text(old): new for old, new in table.items()}  # a document's keys are text

    def look_up(key: Any, value: Any) -> Any:
        return table.get(key, by_text.get(string_serde_text(key), key))

    return Function(look_up, {"map": table}, "a lookup of the key")


def value_mapper(spec: Any) -> Function:
    """``map_values``'s function ``value -> new value``."""
    if isinstance(spec, Function):
        return spec
    if callable(spec):
        return _python(spec, not_a_value)
    name, arg = _one_entry(spec, "map_values", ("append", "field", "fail_on"))
    if not isinstance(arg, str):
        raise FunctionError(f"map_values.{name}: expected text, got {arg!r:.80}")
    if name == "fail_on":
        return Function(lambda value: _fail_on(value, arg), {"fail_on": arg}, f"fail on {arg!r}")
    if name == "append":
        return Function(
            lambda value: None if value is None else render_value(value) + arg, {"append": arg}, f"append {arg!r}"
        )
    return Function(lambda value: string_serde_text(field_of(value, arg)), {"field": arg}, f"the value's {arg} as text")


class IllegalArgumentException(ValueError):
    """What ``map_values {fail_on: text}`` throws: Java's exception, as the harness's mapper throws it, so that the
    dead-letter queue's ``__streams.errors.exception`` header names the same class."""

    java_class = "java.lang.IllegalArgumentException"


def _fail_on(value: Any, text: str) -> Any:
    """``value``, unless its text contains ``text``: then the mapper throws (a null value passes)."""
    if value is not None and text in render_value(value):
        raise IllegalArgumentException(f"fail_on: the value {render_value(value)} contains {text}")
    return value


def predicate(spec: Any) -> Function:
    """``filter``'s function ``(key, value) -> keep?``."""
    if isinstance(spec, Function):
        return spec
    if callable(spec):
        return _python(spec, not_a_value)
    name, arg = _one_entry(spec, "filter", ("key_in", "key_not_in", "value_not_null"))
    if name == "value_not_null":
        if arg is not True:
            raise FunctionError(f"filter.value_not_null: expected true, got {arg!r}")
        return Function(lambda key, value: value is not None, {"value_not_null": True}, "value is not null")
    if not isinstance(arg, list):
        raise FunctionError(f"filter.{name}: expected a list of keys, got {arg!r:.80}")
    keys = list(arg)
    texts = {string_serde_text(key) for key in keys}  # the keys as the String serde carries them
    if name == "key_in":
        return Function(lambda key, value: string_serde_text(key) in texts, {"key_in": keys}, f"key in {keys}")
    return Function(lambda key, value: string_serde_text(key) not in texts, {"key_not_in": keys}, f"key not in {keys}")


def _object_joiner(left: Any, right: Any) -> dict[str, Any]:
    """Both sides as the harness's String-serde joiner reads them (:func:`as_read`): ``2.5`` joins as ``"2.5"``,
    an object's text as the object."""
    return {"left": as_read(left), "right": as_read(right)}


CONCAT = Function(default_joiner, "concat", "left-right")
OBJECT = Function(_object_joiner, "object", '{"left": left, "right": right}')


def _keyed_concat(key: Any, left: Any, right: Any) -> str:
    return f"{render_value(key)}/{default_joiner(left, right)}"


def _keys_concat(stream_key: Any, mapped_key: Any, left: Any, right: Any) -> str:
    return f"{render_value(stream_key)}/{render_value(mapped_key)}/{default_joiner(left, right)}"


KEYED_CONCAT = Function(_keyed_concat, "keyed_concat", "key/left-right", keys=1)
KEYS_CONCAT = Function(_keys_concat, "keys_concat", "stream key/mapped key/left-right", keys=2)


def joiner(spec: Any) -> Function:
    """A join's ``(left, right) -> value``; ``None`` is ``concat``. ``keyed_concat``: ``key/left-right`` (a stream
    join's ``ValueJoinerWithKey``); ``keys_concat``: ``stream key/mapped key/left-right`` (a global-table join's
    ``ValueJoinerWithStreamAndMappedKey``, 4.4). A Python joiner sees the keys its parameters ask for."""
    if spec is None or spec == "concat":
        return CONCAT
    if spec == "object":
        return OBJECT
    if spec == "keyed_concat":
        return KEYED_CONCAT
    if spec == "keys_concat":
        return KEYS_CONCAT
    if isinstance(spec, Function):
        return spec
    if callable(spec):
        return Function(spec, None, function_name(spec), not_a_value, _keys_taken(spec), written=as_written)
    raise FunctionError(
        "joiner: expected concat, keyed_concat, keys_concat, object or a Python function (left, right) -> value, "
        f"got {spec!r:.80}"
    )


def _keys_taken(fn: Callable[..., Any]) -> int:
    """How many keys a Python joiner takes, by its positional parameters: ``(left, right)`` none, ``(key, left,
    right)`` one (Kafka's ``ValueJoinerWithKey``), ``(stream_key, mapped_key, left, right)`` two."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return 0
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return 0
    positional = [
        p for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        and p.default is inspect.Parameter.empty
    ]  # fmt: skip
    return len(positional) - 2 if len(positional) in (3, 4) else 0


def partitioner(spec: Any) -> Function | None:
    """A topic's ``(key, partitions) -> partition``; ``None``: Kafka's default (murmur2 of the key's bytes)."""
    if spec is None or isinstance(spec, Function):
        return spec
    if callable(spec):
        return _python(spec)
    name, arg = _one_entry(spec, "partitioner", ("map",))
    if not isinstance(arg, Mapping) or not all(isinstance(p, int) and not isinstance(p, bool) for p in arg.values()):
        raise FunctionError(f"partitioner.map: expected a mapping from key to partition number, got {arg!r:.80}")
    table = dict(arg)
    lookup = {string_serde_text(key): partition for key, partition in table.items()}

    def by_map(key: Any, partitions: int) -> int:
        if key is None:
            return 0  # a null key: as the default partitioner
        found = lookup.get(string_serde_text(key))
        return found if found is not None else default_partition(key, partitions)

    return Function(by_map, {"map": table}, "a partition per key")


def spec_text(spec: Any) -> str:
    """A spec as one line of JSON (for error messages)."""
    return json.dumps(spec, sort_keys=True)


AGGREGATIONS = ("count", "reduce", "aggregate")


def _concat_adder(agg: Any, value: Any) -> str:
    return f"{render_value(agg)}+{render_value(value)}"


concat = _concat_adder
"""``agg+value``: the ``concat`` vocabulary's adder."""


def _concat_subtractor(agg: Any, value: Any) -> str:
    return f"{render_value(agg)}-{render_value(value)}"


def aggregation(kind: str, spec: Any = None) -> Any:
    """An aggregation (:class:`kjoin.joins.aggregate.Aggregation`) from the vocabulary: ``count``; ``reduce`` with
    ``concat`` or ``(adder, subtractor)``; ``aggregate`` with ``concat`` or ``(initializer, adder, subtractor)``
    (Python functions; a subtractor is needed by a table's aggregate only)."""
    from ..joins.aggregate import Aggregation

    if kind == "count":
        return Aggregation("count", lambda: 0, lambda k, v, agg: agg + 1, lambda k, v, agg: agg - 1)
    if kind not in AGGREGATIONS:
        raise FunctionError(f"aggregation: expected one of {', '.join(AGGREGATIONS)}, got {kind!r}")
    if spec == "concat":
        if kind == "reduce":
            return Aggregation("reduce concat", None, _concat_adder, _concat_subtractor)
        return Aggregation(
            "aggregate concat",
            lambda: "",
            lambda k, v, agg: _concat_adder(agg, v),
            lambda k, v, agg: _concat_subtractor(agg, v),
        )
    parts = tuple(spec) if isinstance(spec, (tuple, list)) else (spec,)
    wanted = (1, 2) if kind == "reduce" else (2, 3)
    if len(parts) not in wanted or not all(callable(part) for part in parts):
        form = "adder[, subtractor]" if kind == "reduce" else "initializer, adder[, subtractor]"
        raise FunctionError(f"{kind}: expected concat or Python functions ({form}), got {spec!r:.80}")
    names = ("adder", "subtractor") if kind == "reduce" else ("initializer", "adder", "subtractor")
    calls = [guarded(part, f"the {kind} {name} ({_name_of(part)})") for part, name in zip(parts, names)]
    if kind == "reduce":
        return Aggregation("reduce", None, calls[0], calls[1] if len(calls) > 1 else None)
    return Aggregation("aggregate", calls[0], calls[1], calls[2] if len(calls) > 2 else None)


def _name_of(fn: Any) -> str:
    return function_name(fn)


def function_name(fn: Any) -> str:
    """How texts name a user's Python function: its name (``by_customer``), or, for a lambda or another function
    without one, where it was defined: ``the lambda at app.py:12``, in a notebook ``the lambda at line 6 of its
    cell`` (a cell's file name changes with every kernel; its line does not)."""
    import os

    name = getattr(fn, "__name__", None)
    if isinstance(name, str) and name.isidentifier():
        return name
    code = getattr(fn, "__code__", None)
    what = "the lambda" if name == "<lambda>" else "the function"
    if code is None:
        return f"{what} {type(fn).__name__}" if name is None else f"{what} {name}"
    path = code.co_filename
    if "ipykernel_" in path or path.startswith("<ipython-input"):
        return f"{what} at line {code.co_firstlineno} of its cell"
    where = path if path.startswith("<") else os.path.basename(path)
    return f"{what} at {where}:{code.co_firstlineno}"


def table_group_by(spec: Any) -> Function:
    """A table's ``group_by`` function ``(key, value) -> (new key, new value)``: a Python function,
    ``{field: path}`` (the new key is the field's text, the value stays) or ``{window_key: true}`` (a windowed table's
    ``[key@start/end]`` back to its key, Kafka's ``Windowed.key()``, the value kept)."""
    if isinstance(spec, Function):
        return spec
    if callable(spec):
        return _python(spec)
    name, arg = _one_entry(spec, "group_by", ("field", "window_key"))
    if name == "window_key":
        if arg is not True:
            raise FunctionError(f"group_by.window_key: expected true, got {arg!r}")
        return Function(lambda key, value: (getattr(key, "key", key), value), {"window_key": True}, "the window's key")
    if not isinstance(arg, str) or not arg:
        raise FunctionError(f"group_by.field: expected a field path such as customer or a.b, got {arg!r}")
    return Function(
        lambda key, value: (string_serde_text(field_of(value, arg)), value),
        {"field": arg},
        f"the value's {arg}, value kept",
    )


def java_split(text: str, separator: str) -> list[str]:
    """``text.split(Pattern.quote(separator))`` as Java does it: no separator in the text gives the text itself (even
    ``""``); otherwise the parts, trailing empty ones dropped (``" ".split(" ")`` has none)."""
    parts = text.split(separator)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _split_spec(spec: Any, what: str) -> tuple[str, bool]:
    if not isinstance(spec, Mapping) or "split" not in spec or set(spec) - {"split", "lower"}:
        raise FunctionError(
            f"{what}: expected {{split: text}} (with lower: true to lower-case first) or a Python function, got "
            f"{spec!r:.80}"
        )
    separator, lower = spec["split"], spec.get("lower", False)
    if not isinstance(separator, str) or not separator:
        raise FunctionError(f"{what}.split: expected the non-empty text to cut at, got {separator!r}")
    if not isinstance(lower, bool):
        raise FunctionError(f"{what}.lower: expected true or false, got {lower!r}")
    return separator, lower


def _words(value: Any, separator: str, lower: bool) -> list[str]:
    if value is None:
        return []
    text = render_value(value)
    return java_split(text.lower() if lower else text, separator)


def flat_value_mapper(spec: Any) -> Function:
    """``flat_map_values``'s function ``value -> values`` (each becomes a record with the same key)."""
    if isinstance(spec, Function):
        return spec
    if callable(spec):
        return _python(spec)
    separator, lower = _split_spec(spec, "flat_map_values")
    text = f"split at {separator!r}" + (", lower-cased" if lower else "")
    return Function(lambda value: _words(value, separator, lower), dict(spec), text)


def flat_mapper(spec: Any) -> Function:
    """``flat_map``'s function ``(key, value) -> [(key, value), ...]`` (a re-key: each record gets a key of its own)."""
    if isinstance(spec, Function):
        return spec
    if callable(spec):
        return _python(spec)
    separator, lower = _split_spec(spec, "flat_map")
    text = f"split at {separator!r}" + (", lower-cased" if lower else "") + ", each part keyed by itself"
    return Function(lambda key, value: [(word, word) for word in _words(value, separator, lower)], dict(spec), text)


def foreign_key_extractor(spec: Any) -> Function:
    """A foreign-key join's extractor: a Python function ``(value)`` (Kafka's ``Function<V, KO>``) or ``(key,
    value)`` (``BiFunction<K, V, KO>``, KIP-1104, 4.0: ``keys`` is 1), or ``{key_or_field: path}``: the text of a
    field of the JSON value, or the left row's key when the field is absent (a ``BiFunction``)."""
    if callable(spec):
        takes_key = _positional_count(spec) == 2
        return Function(spec, None, function_name(spec), keys=1 if takes_key else 0)
    name, path = _one_entry(spec, "foreign_key", ("key_or_field",))
    if not isinstance(path, str) or not path:
        raise FunctionError(f"foreign_key.{name}: expected a field path such as customer or a.b, got {path!r:.60}")

    def key_or_field(key: Any, value: Any) -> Any:
        found = string_serde_text(field_of(value, path))
        return string_serde_text(key) if found is None else found

    return Function(key_or_field, {"key_or_field": path}, f"the value's {path}, else the key", keys=1)


def _positional_count(fn: Callable[..., Any]) -> int:
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return 1
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return 1
    return sum(
        p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        and p.default is inspect.Parameter.empty
        for p in parameters
    )
