"""A fuzzer of kjoin's topology boundary: valid topologies of every kind, as documents (``TopologyScenario``,
files, ``kjoin run``) and as builder programs (``kjoin.Topology`` with Python functions), each with one
perturbation.

Each case ends in one of:

* ``refused``: kjoin's own error (:class:`~kjoin.ScenarioError`, of which a topology's ``TopologyError`` is one),
  its message naming what is wrong;
* ``ran``: a trace in which every input record is a step (every record accounted for);
* ``crash``: any other exception (a traceback from inside kjoin, or a user function's exception passed on bare);
* ``hang``: more than the time bound;
* ``silent``: accepted where it must not be: the perturbation put something Kafka cannot carry (a number beyond
  64 bits, NaN, a value that is not JSON, a key the String serde cannot write, a non-positive partition count, an
  event written straight to an internal topic, a function that raised or returned such a thing) and the run went
  on, or the trace's records hold such a thing.

``python -m tests.topology_fuzz N`` prints the counts of N random cases plus :data:`PROBES` (``make
fuzz-inputs``); :mod:`tests.test_topology_fuzz` runs a sample.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import kjoin
from kjoin.topology.document import TopologyScenario

from tests import input_fuzz

__all__ = ["base_documents", "programs", "cases", "run_case", "PROBES", "main"]


# -- valid documents of every kind ---------------------------------------------------------------
def _events(rng: random.Random, topics: dict[str, Callable[[int], Any]], n: int = 6) -> list[dict[str, Any]]:
    events = []
    for i in range(n):
        topic = rng.choice(sorted(topics))
        events.append({"topic": topic, "key": rng.choice(["c1", "c2", "o1"]), "value": topics[topic](i), "ts": i * 3})
    return events


def _order(i: int) -> Any:
    return {"customer": ["c1", "c2"][i % 2], "v": i}


def _text(i: int) -> Any:
    return f"T{i}"


def base_documents(rng: random.Random) -> list[dict[str, Any]]:
    """One valid document of each kind of node."""
    return [
        input_fuzz._topology(rng),
        input_fuzz._word_count(rng),
        {  # stream-stream join, outer, with a window
            "partitions": 2,
            "topology": [
                {"name": "a", "stream": "a"},
                {"name": "b", "stream": "b"},
                {"name": "ab", "outer_join": ["a", "b"], "window": {"before_ms": 5, "after_ms": 5, "grace_ms": 2}},
                {"name": "out", "to": "out", "input": "ab", "partitions": 2},
            ],
            "events": _events(rng, {"a": _text, "b": _text}),
        },
        {  # table-table join, then a foreign-key join, then filter and map_values of a table
            "semantics": "3.6",
            "topology": [
                {"name": "orders", "table": "orders"},
                {"name": "customers", "table": "customers"},
                {"name": "notes", "table": "notes"},
                {"name": "with-notes", "left_join": ["orders", "notes"], "joiner": "object"},
                {"name": "fk", "join": ["orders", "customers"], "foreign_key": "customer"},
                {"name": "kept", "filter": {"value_not_null": True}, "input": "fk"},
                {"name": "out", "to": "out", "input": "kept"},
                {"name": "out2", "to": "out2", "input": "with-notes"},
            ],
            "events": _events(rng, {"orders": _order, "customers": _text, "notes": _text}),
        },
        {  # a global table joined by a field of the value
            "partitions": 2,
            "topology": [
                {"name": "orders", "stream": "orders"},
                {"name": "customers", "global_table": "customers"},
                {"name": "joined", "left_join": ["orders", "customers"], "key_selector": {"field": "customer"}},
                {"name": "out", "to": "out", "input": "joined", "partitioner": {"map": {"o1": 1}}},
            ],
            "events": _events(rng, {"orders": _order, "customers": _text}),
        },
        {  # windowed aggregates: tumbling, then a session window of a re-keyed stream
            "topology": [
                {"name": "s", "stream": "s"},
                {"name": "g", "group_by_key": True, "input": "s"},
                {"name": "w", "windowed_by": {"size_ms": 10, "advance_ms": 5, "grace_ms": 1}, "input": "g"},
                {"name": "c", "count": True, "input": "w"},
                {"name": "out", "to": "out", "input": "c"},
                {"name": "rk", "group_by": {"field": "customer"}, "input": "s"},
                {"name": "sw", "windowed_by": {"inactivity_gap_ms": 4}, "input": "rk"},
                {"name": "r", "reduce": "concat", "input": "sw"},
                {"name": "out2", "to": "out2", "input": "r"},
            ],
            "events": _events(rng, {"s": _order}),
        },
        {  # a table grouped and aggregated; a stream through a topic, repartitioned, merged, made a table
            "partitions": 2,
            "topology": [
                {"name": "t", "table": "t"},
                {"name": "gt", "group_by": {"field": "customer"}, "input": "t"},
                {"name": "agg", "aggregate": "concat", "input": "gt"},
                {"name": "out", "to": "out", "input": "agg"},
                {"name": "s", "stream": "s"},
                {"name": "thru", "through": "mid", "input": "s", "partitions": 3},
                {"name": "rep", "repartition": True, "input": "s", "partitions": 2},
                {"name": "m", "merge": ["thru", "rep"]},
                {"name": "tt", "to_table": True, "input": "m"},
                {"name": "ts", "to_stream": True, "input": "tt"},
                {"name": "out2", "to": "out2", "input": "ts"},
            ],
            "events": _events(rng, {"t": _order, "s": _text}),
        },
        {  # a versioned table and a stream-table join with a grace period; a sliding window
            "semantics": "3.6",
            "topology": [
                {"name": "s", "stream": "s"},
                {"name": "v", "table": "v", "history_retention_ms": 20},
                {"name": "j", "join": ["s", "v"], "grace_ms": 5},
                {"name": "out", "to": "out", "input": "j"},
                {"name": "g", "group_by_key": True, "input": "s"},
                {"name": "sl", "windowed_by": {"time_difference_ms": 5, "grace_ms": 0}, "input": "g"},
                {"name": "c", "count": True, "input": "sl"},
                {"name": "out2", "to": "out2", "input": "c"},
            ],
            "events": _events(rng, {"s": _text, "v": _text}),
        },
    ]


# -- builder programs ----------------------------------------------------------------------------
def _keep(key: Any, value: Any) -> bool:
    return True


def _customer(key: Any, value: Any) -> Any:
    return value.get("customer") if isinstance(value, dict) else key


def _same(value: Any) -> Any:
    return value


def _pair(left: Any, right: Any) -> Any:
    return {"l": left, "r": right}


def _program_rekey(p: dict[str, Any]) -> Any:
    b = kjoin.Topology(partitions=p["partitions"], semantics=p["semantics"])
    orders = b.stream("orders", partitions=p["source_partitions"])
    customers = b.table("customers")
    s = orders.filter(p["filter"]).select_key(p["selector"], partitioner=p["partitioner"]).map_values(p["mapper"])
    s.join(customers, p["joiner"], **p["join_kw"]).to("out", partitions=p["out_partitions"], **p["to_kw"])
    return b


def _program_windows(p: dict[str, Any]) -> Any:
    b = kjoin.Topology(partitions=p["partitions"], semantics=p["semantics"])
    a, c = b.stream("a"), b.stream("b")
    a.map(p["map"]).join(c, p["joiner"], window=p["window"], **p["join_kw"]).to("out")
    grouped = c.group_by(p["selector"]).windowed_by(p["windows"])
    grouped.aggregate(p["initializer"], p["adder"]).to_stream().to("out2")
    return b


def _program_tables(p: dict[str, Any]) -> Any:
    b = kjoin.Topology(partitions=p["partitions"], semantics=p["semantics"])
    orders = b.table("orders", history_retention_ms=p["retention"])
    customers = b.table("customers")
    orders.join(customers, p["joiner"], foreign_key=p["foreign_key"], **p["join_kw"]).to("out")
    grouped = orders.group_by(p["group"])
    grouped.reduce(p["adder"], p["subtractor"]).to("out2")
    return b


def _program_global(p: dict[str, Any]) -> Any:
    b = kjoin.Topology(partitions=p["partitions"], semantics=p["semantics"])
    orders = b.stream("orders")
    customers = b.global_table("customers")
    joined = orders.flat_map_values(p["flat"]).left_join(customers, p["joiner"], key_selector=p["selector"])
    joined.flat_map(p["flat_map"]).group_by_key().count().to_stream().to("out")
    return b


def _program_versioned(p: dict[str, Any]) -> Any:
    b = kjoin.Topology(partitions=p["partitions"], semantics=p["semantics"])
    s = b.stream("s")
    v = b.table("v", history_retention_ms=p["retention"])
    s.join(v, p["joiner"], grace_ms=p["grace_ms"]).to("out")
    s.group_by_key().windowed_by(p["windows"]).reduce(p["adder"]).to_stream().to("out2")
    return b


def _common() -> dict[str, Any]:
    return {"partitions": 2, "semantics": None, "joiner": _pair, "join_kw": {}}


def programs(rng: random.Random) -> list[tuple[Callable[[dict[str, Any]], Any], dict[str, Any]]]:
    """Valid builder programs and their arguments (each a place a perturbation can go)."""
    return [
        (
            _program_rekey,
            {
                **_common(),
                "source_partitions": None,
                "filter": _keep,
                "selector": _customer,
                "partitioner": None,
                "mapper": _same,
                "out_partitions": None,
                "to_kw": {},
                "events": _events(rng, {"orders": _order, "customers": _text}),
            },
        ),
        (
            _program_windows,
            {
                **_common(),
                "map": lambda key, value: (key, value),
                "window": {"before_ms": 5, "after_ms": 5, "grace_ms": 0},
                "selector": _customer,
                "windows": {"size_ms": 10},
                "initializer": lambda: 0,
                "adder": lambda key, value, agg: agg + 1,
                "events": _events(rng, {"a": _order, "b": _order}),
            },
        ),
        (
            _program_tables,
            {
                **_common(),
                "retention": None,
                "foreign_key": lambda value: value.get("customer") if isinstance(value, dict) else None,
                "group": lambda key, value: (_customer(key, value), 1),
                "adder": lambda agg, value: agg + value,
                "subtractor": lambda agg, value: agg - value,
                "events": _events(rng, {"orders": _order, "customers": _text}),
            },
        ),
        (
            _program_global,
            {
                **_common(),
                "flat": lambda value: [value],
                "selector": _customer,
                "flat_map": lambda key, value: [(key, value)],
                "events": _events(rng, {"orders": _order, "customers": _text}),
            },
        ),
        (
            _program_versioned,
            {
                **_common(),
                "semantics": "3.6",
                "retention": 20,
                "grace_ms": 5,
                "windows": {"inactivity_gap_ms": 3},
                "adder": lambda agg, value: value,
                "events": _events(rng, {"s": _text, "v": _text}),
            },
        ),
    ]


class _Calls:
    """Counts the calls of a perturbed function (a raising function never called is no silent acceptance)."""

    def __init__(self) -> None:
        self.count = 0


class Boom(Exception):
    """What a raising user function raises."""


def _raising(calls: _Calls) -> Callable[..., Any]:
    def fn(*args: Any) -> Any:
        calls.count += 1
        raise Boom("the user's function failed")

    return fn


def _returning(calls: _Calls, result: Any) -> Callable[..., Any]:
    def fn(*args: Any) -> Any:
        calls.count += 1
        return result

    return fn


class _Opaque:
    pass


BAD_RESULTS: list[Any] = [
    {1, 2},
    ["x", "y"],
    {"a": {1, 2}},
    _Opaque(),
    2**70,
    float("nan"),
    float("inf"),
    b"bytes",
    (1, 2, 3),
    None,
]
"""What an ill-returning user function returns: each but the last two is no plain data; ``(1, 2, 3)`` is no pair
(``map``) and ``None`` is no record list (``flat_map``) nor a pair."""

ODD_NUMBERS: list[Any] = [0, -1, 2**31, 2**31 - 1, 2**63, 2**64 + 1, "2", 2.0, True, None, float("nan")]
ODD_ARGUMENTS: list[Any] = ODD_NUMBERS + ["banana", 3.1, "3.10", {}, [], {"size_ms": 2**63}, object()]


def _must_refuse(value: Any) -> bool:
    """Is ``value`` something no Kafka topology could take as written (a number or text is judged by its field)?"""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return False
    if isinstance(value, int):
        return not -(2**63) <= value < 2**63
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_must_refuse(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_must_refuse(item) for item in value)
    return True  # a set, bytes, an object


def _program_case(rng: random.Random) -> tuple[str, Callable[[], Any], Callable[[], bool]]:
    program, params = rng.choice(programs(rng))
    params = dict(params)
    field = rng.choice(sorted(params))
    calls = _Calls()
    must = lambda: False  # noqa: E731
    action = rng.randrange(5)
    original = params[field]
    if field == "events":
        params["events"] = [dict(event) for event in params["events"]]
        event = rng.choice(params["events"])
        part = rng.choice(["key", "value", "ts", "topic", "partition"])
        odd = rng.choice(ODD_ARGUMENTS + BAD_RESULTS + [f"{rng.choice(['orders', 'a', 's'])}-repartition"])
        event[part] = odd
        what = f"{program.__name__} events.{part}={odd!r:.40}"
        must = lambda: _must_refuse(odd)  # noqa: E731
    elif callable(original) and action < 3:
        if action == 0:
            params[field] = _raising(calls)
            what = f"{program.__name__} {field} raises"
        else:
            bad = rng.choice(BAD_RESULTS)
            params[field] = _returning(calls, bad)
            what = f"{program.__name__} {field} returns {bad!r:.40}"
            must_bad = _must_refuse(bad) or (field == "map" and bad in (None, (1, 2, 3)))
            must = lambda: calls.count > 0 and must_bad  # noqa: E731
        if action == 0:
            must = lambda: calls.count > 0  # noqa: E731
    elif field.endswith("_kw"):
        names = ["window", "grace_ms", "key_selector", "foreign_key", "partitioner", "colour", "windows"]
        passed = {_program_tables: "foreign_key", _program_windows: "window"}.get(program)  # Python's own TypeError
        name = rng.choice([name for name in names if name != passed])
        params[field] = {**original, name: rng.choice(ODD_ARGUMENTS + [_keep, {"before_ms": 1, "after_ms": 1}])}
        what = f"{program.__name__} {field}: {name}={params[field][name]!r:.40}"
    elif isinstance(original, dict) and original and action < 4:
        inner = dict(original)
        key = rng.choice(sorted(inner))
        odd = rng.choice(ODD_ARGUMENTS)
        inner[key] = odd
        params[field] = inner
        what = f"{program.__name__} {field}.{key}={odd!r:.40}"
        must = lambda: _must_refuse(odd) or (isinstance(odd, int) and not isinstance(odd, bool) and odd < 0)  # noqa: E731
    else:
        odd = rng.choice(ODD_ARGUMENTS + BAD_RESULTS)
        params[field] = odd
        what = f"{program.__name__} {field}={odd!r:.40}"
        counts = field in ("partitions", "source_partitions", "out_partitions")
        numeric = counts or field in ("retention", "grace_ms")
        bad_number = isinstance(odd, (str, float)) or (isinstance(odd, int) and (odd < 0 or (counts and odd >= 2**31)))
        must = lambda: _must_refuse(odd) or (numeric and bad_number)  # noqa: E731

    def call() -> Any:
        topology = program(params)
        return topology.run(params["events"], rng_schedule)

    rng_schedule = rng.choice(["test-driver", "timestamp", "stages"])
    return what, call, must


# -- document perturbations -----------------------------------------------------------------------
def _node_names(doc: dict[str, Any]) -> list[str]:
    return [node["name"] for node in doc.get("topology", []) if isinstance(node, dict) and "name" in node]


def perturb_document(doc: dict[str, Any], rng: random.Random) -> tuple[dict[str, Any], str, bool]:
    """``doc`` with one change, what it was, and whether Kafka could not take it as written."""
    doc = copy.deepcopy(doc)
    choice = rng.randrange(4)
    nodes = [node for node in doc["topology"] if isinstance(node, dict)]
    if choice == 0:  # a node's input or a join's side names another node
        node = rng.choice(nodes)
        other = rng.choice(_node_names(doc))
        for field in ("input", "join", "left_join", "outer_join", "merge"):
            if field in node:
                if isinstance(node[field], list):
                    node[field][rng.randrange(len(node[field]))] = other
                else:
                    node[field] = other
                return doc, f"{node['name']}.{field} -> {other}", False
        node["input"] = other
        return doc, f"{node['name']}.input -> {other} (added)", False
    if choice == 1:  # a number field: odd
        node = rng.choice(nodes)
        fields = [f for f in ("partitions", "history_retention_ms", "grace_ms") if f in node]
        fields += [f"window.{f}" for f in node.get("window", {})] + [
            f"windowed_by.{f}" for f in node.get("windowed_by", {})
        ]
        field = rng.choice(fields or ["partitions"])
        odd = rng.choice(ODD_NUMBERS)
        target = node
        if "." in field:
            outer, field = field.split(".")
            target = node[outer]
        target[field] = odd
        must = isinstance(odd, (str, float)) or (isinstance(odd, int) and not isinstance(odd, bool) and odd < 0)
        must = must or (isinstance(odd, int) and odd >= 2**63) or (field == "partitions" and odd in (0, 2**31))
        return doc, f"{node['name']}.{field}={odd!r}", bool(must)
    if choice == 2:  # an event to an internal topic, or an odd key or value
        internal = [f"{name}-repartition" for name in _node_names(doc)]
        internal += [f"{name}-subscription-registration-topic" for name in _node_names(doc)]
        events = doc["events"]
        if not events:
            return doc, "no events", False
        event = rng.choice(events)
        graph_topics = _internal_topics(doc)
        if graph_topics and rng.random() < 0.5:
            event["topic"] = rng.choice(graph_topics)
            return doc, f"event to {event['topic']}", True
        part = rng.choice(["key", "value"])
        odd = rng.choice([1, True, 1.0, -0.0, "", 2**63 - 1, float("nan"), 2**64, [1], {"a": None}])
        event[part] = odd
        return doc, f"event {part}={odd!r}", _must_refuse(odd) or (part == "key" and isinstance(odd, (list, dict)))
    perturbed = input_fuzz.perturb(doc, rng)
    return perturbed, "a field perturbed", False


def _through_cli(text: bytes, suffix: str) -> Callable[[], Any]:
    """``kjoin run`` on the document's text: its exit code 2 (kjoin's error) is a refusal."""

    def call() -> Any:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"topology{suffix}"
            path.write_bytes(text)
            from kjoin.cli import main

            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                code = main(["run", str(path)])
            if code == 2:
                raise SystemExit(2)
            return code

    return call


def _internal_topics(doc: dict[str, Any]) -> list[str]:
    try:
        topology = TopologyScenario.from_dict(doc).topology
    except Exception:  # noqa: BLE001 - a base document is valid; this only lists its topics
        return []
    return [topic.name for topic in topology.graph.topics.values() if topic.internal]


def _document_case(rng: random.Random, index: int) -> tuple[str, Callable[[], Any], Callable[[], bool]]:
    doc, what, must = perturb_document(rng.choice(base_documents(rng)), rng)
    if index % 5 == 0:
        suffix = rng.choice([".yaml", ".json"])
        text = input_fuzz.dump(doc, suffix)
        if text is not None:
            return f"cli {what}", _through_cli(text, suffix), lambda: must
    return f"document {what}", input_fuzz.through_api(doc), lambda: must


# -- the cases and their outcomes -----------------------------------------------------------------
def cases(n: int, seed: int = 0) -> list[tuple[str, Callable[[], Any], Callable[[], bool]]]:
    """``n`` cases: half documents (every fifth through ``kjoin run``), half builder programs."""
    rng = random.Random(seed)
    return [_document_case(rng, index) if index % 2 == 0 else _program_case(rng) for index in range(n)]


def run_case(call: Callable[[], Any], must_refuse: Callable[[], bool], seconds: float = 10.0) -> tuple[str, str]:
    """``(outcome, detail)``: refused, ran, crash, hang or silent (see the module docstring)."""
    outcome, detail = input_fuzz.run_case(_checked(call), seconds)
    if outcome == "crash" and detail.startswith(("TopologyError", "FunctionError")):
        outcome = "refused"  # kjoin's error, raised from the builder
    if outcome == "crash" and detail.startswith("NotPlain"):
        return "silent", detail
    if outcome == "ran":
        if must_refuse():
            return "silent", "ran"
    return outcome, detail


class NotPlain(Exception):
    """A trace whose topics hold a record no serde could write."""


def _checked(call: Callable[[], Any]) -> Callable[[], Any]:
    def checked() -> Any:
        result = call()
        if hasattr(result, "topics") and hasattr(result, "steps"):
            problem = _plain_trace(result)
            if problem:
                raise NotPlain(problem)
        return result

    return checked


def _plain_trace(trace: Any) -> str:
    """``""`` if every record a topology wrote is plain data a serde could write; else what is not."""
    for topic, partitions in trace.topics.items():
        for records in partitions.values():
            for record in records:
                if record.message is None and (_must_refuse(record.key) or _must_refuse(record.value)):
                    return f"{topic}: {record.key!r:.40}:{record.value!r:.40}"
    return ""


# -- probes: the answers each documented example must get ------------------------------------------
def _probe_run(build: Callable[[], Any], events: list[dict[str, Any]]) -> Callable[[], Any]:
    def call() -> Any:
        trace = build().run(events)
        problem = _plain_trace(trace)
        if problem:
            raise AssertionError(f"not plain data written: {problem}")
        return trace

    return call


def _doc(nodes: list[dict[str, Any]], events: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {"topology": nodes, "events": events, **more}


_S = [{"name": "s", "stream": "s"}]
_E = [{"topic": "s", "key": "k", "value": "v", "ts": 1}]


def _builder(fn: Callable[[Any], Any], partitions: Any = 1, semantics: Any = None) -> Callable[[], Any]:
    def build() -> Any:
        b = kjoin.Topology(partitions=partitions, semantics=semantics)
        fn(b)
        return b

    return build


def _built(fn: Callable[[Any], Any], semantics: Any = None) -> Callable[[], Any]:
    """A builder program run over one event (a program the builder must refuse never gets there)."""
    return lambda: _builder(fn, semantics=semantics)().run(_E)


PROBES: list[tuple[str, Callable[[], Any], str]] = [
    # (name, call, "refuse" or "run")
    (
        "global table on the left of a join",
        input_fuzz.through_api(
            _doc(
                _S
                + [
                    {"name": "g", "global_table": "g"},
                    {"name": "j", "join": ["g", "s"]},
                    {"name": "o", "to": "o", "input": "j"},
                ],
                _E,
            )
        ),
        "refuse",
    ),
    (
        "grouped stream as a to: input",
        input_fuzz.through_api(
            _doc(_S + [{"name": "g", "group_by_key": True, "input": "s"}, {"name": "o", "to": "o", "input": "g"}], _E)
        ),
        "refuse",
    ),
    (
        "grouped stream on the left of a join",
        input_fuzz.through_api(
            _doc(
                _S
                + [
                    {"name": "t", "table": "t"},
                    {"name": "g", "group_by_key": True, "input": "s"},
                    {"name": "j", "join": ["g", "t"]},
                    {"name": "o", "to": "o", "input": "j"},
                ],
                _E,
            )
        ),
        "refuse",
    ),
    (
        "grace_ms on a table-table join",
        input_fuzz.through_api(
            _doc(
                [
                    {"name": "a", "table": "a"},
                    {"name": "b", "table": "b"},
                    {"name": "j", "join": ["a", "b"], "grace_ms": 5},
                    {"name": "o", "to": "o", "input": "j"},
                ],
                [],
            )
        ),
        "refuse",
    ),
    (
        "key_selector on a table-table join",
        input_fuzz.through_api(
            _doc(
                [
                    {"name": "a", "table": "a"},
                    {"name": "b", "table": "b"},
                    {"name": "j", "join": ["a", "b"], "key_selector": {"field": "x"}},
                    {"name": "o", "to": "o", "input": "j"},
                ],
                [],
            )
        ),
        "refuse",
    ),
    (
        "map partitioner on a to node, null key",
        input_fuzz.through_api(
            _doc(
                _S + [{"name": "o", "to": "o", "input": "s", "partitions": 2, "partitioner": {"map": {"k": 1}}}],
                [{"topic": "s", "key": None, "value": "v", "ts": 1}],
            )
        ),
        "run",
    ),
    *[
        (
            f"to partitions {count!r}",
            input_fuzz.through_api(_doc(_S + [{"name": "o", "to": "o", "input": "s", "partitions": count}], _E)),
            "refuse",
        )
        for count in ("2", 0, -1, 2**31)
    ],
    (
        "partitions 2^31-1 with a few records",
        input_fuzz.through_api(
            _doc(
                _S
                + [
                    {"name": "t", "table": "t"},
                    {"name": "r", "select_key": {"field": "c"}, "input": "s"},
                    {"name": "j", "join": ["r", "t"]},
                    {"name": "o", "to": "o", "input": "j"},
                ],
                [
                    {"topic": "t", "key": "c1", "value": "C", "ts": 1},
                    {"topic": "s", "key": "k", "value": {"c": "c1"}, "ts": 2},
                ],
                partitions=2**31 - 1,
            )
        ),
        "run",
    ),
    (
        "topics: []",
        input_fuzz.through_api(_doc(_S + [{"name": "o", "to": "o", "input": "s"}], _E, topics=[])),
        "refuse",
    ),
    (
        "an event to a repartition topic",
        input_fuzz.through_api(
            _doc(
                _S
                + [
                    {"name": "t", "table": "t"},
                    {"name": "r", "select_key": {"field": "c"}, "input": "s"},
                    {"name": "j", "join": ["r", "t"]},
                    {"name": "o", "to": "o", "input": "j"},
                ],
                [{"topic": "r-repartition", "key": "c1", "value": "x", "ts": 1}],
            )
        ),
        "refuse",
    ),
    ("Topology(semantics='banana')", _built(lambda b: b.stream("s").to("o"), semantics="banana"), "refuse"),
    ("Topology(semantics=3.1)", _built(lambda b: b.stream("s").to("o"), semantics=3.1), "refuse"),
    (
        "window=2^63 in the builder",
        _built(lambda b: b.stream("a").join(b.stream("b"), window={"before_ms": 2**63, "after_ms": 1}).to("o")),
        "refuse",
    ),
    (
        "windowed_by size 2^63 in the builder",
        _built(lambda b: b.stream("a").group_by_key().windowed_by({"size_ms": 2**63}).count().to("o")),
        "refuse",
    ),
    (
        "history_retention_ms 2^63 in the builder",
        _built(lambda b: b.table("t", history_retention_ms=2**63).to_stream().to("o")),
        "refuse",
    ),
    ("window= on a table join", _built(lambda b: b.table("a").join(b.table("b"), window={}).to("o")), "refuse"),
    (
        "joining a grouped stream",
        _built(lambda b: b.stream("a").join(b.stream("c").group_by_key(), window={"before_ms": 1, "after_ms": 1})),
        "refuse",
    ),
    ("b.table() after run", lambda: _table_after_run(), "refuse"),
    (
        "a window ending past 2^63-1",
        _probe_run(
            _builder(lambda b: b.stream("s").group_by_key().windowed_by({"size_ms": 10}).count().to("o")),
            [{"topic": "s", "key": "k", "value": 1, "ts": 2**63 - 3}],
        ),
        "refuse",
    ),
    (
        "a window ending at 2^63-1",
        _probe_run(
            _builder(lambda b: b.stream("s").group_by_key().windowed_by({"size_ms": 10}).count().to("o")),
            [{"topic": "s", "key": "k", "value": 1, "ts": 2**63 - 11}],
        ),
        "run",
    ),
    (
        "topics: a typo",
        input_fuzz.through_api(
            _doc(_S + [{"name": "o", "to": "o", "input": "s"}], _E, topics={"ss": {"partitions": 2}})
        ),
        "refuse",
    ),
]


def _table_after_run() -> Any:
    b = kjoin.Topology()
    b.stream("s").to("o")
    b.run([])
    b.table("late")
    return b.run([])


for _name, _fn, _result in [
    ("select_key raises", lambda b: b.stream("s").select_key(_raising(_Calls())).to("o"), "refuse"),
    ("filter raises", lambda b: b.stream("s").filter(_raising(_Calls())).to("o"), "refuse"),
    ("map_values raises", lambda b: b.stream("s").map_values(_raising(_Calls())).to("o"), "refuse"),
    ("partitioner raises", lambda b: b.stream("s").to("o", partitions=2, partitioner=_raising(_Calls())), "refuse"),
    ("map returns None", lambda b: b.stream("s").map(lambda k, v: None).to("o"), "refuse"),
    (
        "a source's partitioner raises",
        lambda b: b.stream("s", partitions=2, partitioner=_raising(_Calls())).to("o"),
        "refuse",
    ),
    (
        "a partitioner names no partition",
        lambda b: b.stream("s").to("o", partitions=2, partitioner=lambda k, n: 5),
        "refuse",
    ),
    ("map returns a 3-tuple", lambda b: b.stream("s").map(lambda k, v: (k, v, 1)).to("o"), "refuse"),
    ("select_key returns a set", lambda b: b.stream("s").select_key(lambda k, v: {1}).to("o"), "refuse"),
    ("select_key returns a list", lambda b: b.stream("s").select_key(lambda k, v: [1]).to("o"), "refuse"),
    ("select_key returns a dict", lambda b: b.stream("s").select_key(lambda k, v: {"a": 1}).to("o"), "refuse"),
    ("select_key returns an object", lambda b: b.stream("s").select_key(lambda k, v: _Opaque()).to("o"), "refuse"),
    ("select_key returns 2**70", lambda b: b.stream("s").select_key(lambda k, v: 2**70).to("o"), "refuse"),
    ("select_key returns NaN", lambda b: b.stream("s").select_key(lambda k, v: float("nan")).to("o"), "refuse"),
    ("map_values returns a set", lambda b: b.stream("s").map_values(lambda v: {1}).to("o"), "refuse"),
    ("map_values returns bytes", lambda b: b.stream("s").map_values(lambda v: b"x").to("o"), "refuse"),
    ("map_values returns inf", lambda b: b.stream("s").map_values(lambda v: float("inf")).to("o"), "refuse"),
    ("map_values returns 2**70", lambda b: b.stream("s").map_values(lambda v: 2**70).to("o"), "refuse"),
    (
        "a joiner raises",
        lambda b: b.stream("s").join(b.table("t"), _raising(_Calls())).to("o"),
        "refuse",
    ),
    (
        "a foreign-key extractor raises",
        lambda b: b.table("s").join(b.table("t"), foreign_key=_raising(_Calls())).to("o"),
        "refuse",
    ),
]:
    _events_of = (
        [{"topic": "t", "key": "k", "value": "T", "ts": 0}, {"topic": "s", "key": "k", "value": "v", "ts": 1}]
        if "joiner" in _name or "extractor" in _name
        else _E
    )
    PROBES.append((_name, _probe_run(_builder(_fn), _events_of), _result))


def probe(call: Callable[[], Any], expect: str) -> tuple[str, str]:
    """``("ok", detail)`` when the probe got its answer; else the outcome (crash, hang, silent, or a refusal of a
    valid input: ``wrongly-refused``)."""
    outcome, detail = run_case(call, lambda: expect == "refuse", 20.0)
    if outcome == "crash" and "not plain data written" in detail and expect == "refuse":
        return "silent", detail
    if outcome in ("crash", "hang", "silent"):
        return outcome, detail
    if expect == "refuse":
        return ("ok", detail) if outcome == "refused" else ("silent", detail)
    return ("ok", detail) if outcome == "ran" else ("wrongly-refused", detail)


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 400
    seed = int(argv[1]) if len(argv) > 1 else 0
    counts: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    started = time.monotonic()
    for label, call, must in cases(n, seed):
        outcome, detail = run_case(call, must)
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome in ("crash", "hang", "silent"):
            examples.setdefault(outcome, []).append(f"{label}: {detail}")
    for name, call, expect in PROBES:
        result, detail = probe(call, expect)
        key = "probe-ok" if result == "ok" else f"probe-{result}"
        counts[key] = counts.get(key, 0) + 1
        if result != "ok":
            examples.setdefault(key, []).append(f"{name}: {detail}")
    print("topologies", json.dumps(counts, sort_keys=True), f"{time.monotonic() - started:.1f} s")
    for outcome, lines in examples.items():
        for line in sorted(set(lines))[:25]:
            print(f"  {outcome}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
