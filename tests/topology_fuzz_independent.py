"""The second topology fuzzer: written apart from :mod:`tests.topology_fuzz`, with its own seeds and perturbations.

Its seeds are the pinned topologies (:mod:`tests.topology_pinned`), the walk cases (``tests/topology_walk_cases``)
and eight documents of its own (windows, versioned tables, hopping and session windows, merge and through, a table
aggregate, a foreign-key join, a re-key through a repartition with a partitioner). Each case is one of:

* ``doc``: a seed document with one perturbation (:data:`DOC_PERTURBATIONS`: a field, a number, a window, an input,
  a node's kind, a function spec, a partitioner, an event, a name, the document's shape), run with
  :class:`~kjoin.topology.document.TopologyScenario`;
* ``cli``: the same, written to a YAML file and run with ``kjoin run``: any message but one line of kjoin's is a
  crash;
* ``fn``: a builder program (:data:`FN_KINDS`, each user function of the DSL) whose function raises or returns
  something odd (:func:`bad_returns`);
* ``api``: a misuse of the builder (:func:`api_cases`); ``seed``: each seed as it is, which must run.

Each ends ``refused`` (kjoin's :class:`~kjoin.ScenarioError`), ``ran`` (outputs that Kafka's serdes could write),
``crash`` (any other exception, or a message of more than one line from ``kjoin run``), ``hang`` (past
:data:`SECONDS`) or ``silent`` (ran where a refusal was expected, or wrote a value no serde writes).

``python -m tests.topology_fuzz_independent N [SEED]`` runs N random cases after every ``api`` and ``seed`` case and
prints the counts by class and the cases that are not ``refused`` or ``ran`` (``make fuzz-inputs``);
:mod:`tests.test_topology_fuzz_independent` runs a sample.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import random
import signal
import sys
import tempfile
import traceback
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import yaml

import kjoin.cli
from kjoin.scenario.fields import ScenarioError
from kjoin.topology.builder import Topology
from kjoin.topology.document import TopologyScenario

from tests import topology_pinned

__all__ = ["seeds", "bad_returns", "api_cases", "case", "jobs", "main", "DOC_PERTURBATIONS", "FN_KINDS", "SECONDS"]

LONG = 2**63 - 1
SECONDS = 10
"""A case's time bound: past it, a ``hang``."""
WALK_CASES = Path(__file__).parent / "topology_walk_cases"


def _ev(topic: str, key: Any, value: Any, ts: Any) -> dict[str, Any]:
    return {"topic": topic, "key": key, "value": value, "ts": ts}


# -- seeds ------------------------------------------------------------------------------------------------------------
def seeds(rng):
    out = []
    for name in topology_pinned.CASES:
        case = topology_pinned.CASES[name]
        out.append(
            (
                name,
                {
                    "semantics": "4.4",
                    "partitions": rng.choice([1, 3]),
                    "topology": case["topology"],
                    "events": case["events"],
                },
            )
        )
    for path in sorted(WALK_CASES.glob("*.yaml")):
        d = yaml.safe_load(path.read_text())
        d.pop("description", None)
        out.append((path.name, d))
    out += [
        (
            "ss-window",
            {
                "partitions": 2,
                "topology": [
                    {"name": "a", "stream": "a"},
                    {"name": "b", "stream": "b"},
                    {"name": "j", "outer_join": ["a", "b"], "window": {"before_ms": 10, "after_ms": 5, "grace_ms": 3}},
                    {"name": "o", "to": "out", "input": "j"},
                ],
                "events": [_ev("a", "k", "A", 1), _ev("b", "k", "b", 4), _ev("a", "k", "A2", 30)],
            },
        ),
        (
            "versioned-st",
            {
                "semantics": "3.9",
                "topology": [
                    {"name": "s", "stream": "s"},
                    {"name": "t", "table": "t", "history_retention_ms": 100},
                    {"name": "j", "left_join": ["s", "t"], "grace_ms": 50},
                    {"name": "o", "to": "out", "input": "j"},
                ],
                "events": [_ev("t", "k", "T", 5), _ev("s", "k", "S", 3), _ev("s", "k", "S", 8)],
            },
        ),
        (
            "tumbling-count",
            {
                "partitions": 3,
                "topology": [
                    {"name": "s", "stream": "s"},
                    {"name": "g", "group_by_key": True, "input": "s"},
                    {"name": "w", "windowed_by": {"size_ms": 10, "advance_ms": 5, "grace_ms": 2}, "input": "g"},
                    {"name": "c", "count": True, "input": "w"},
                    {"name": "o", "to": "out", "input": "c"},
                ],
                "events": [_ev("s", "k", "a", 1), _ev("s", "k", "b", 7), _ev("s", "j", "c", 12)],
            },
        ),
        (
            "session-reduce",
            {
                "topology": [
                    {"name": "s", "stream": "s"},
                    {"name": "g", "group_by": {"field": "c"}, "input": "s"},
                    {"name": "w", "windowed_by": {"inactivity_gap_ms": 5}, "input": "g"},
                    {"name": "r", "reduce": "concat", "input": "w"},
                    {"name": "o", "to": "out", "input": "r"},
                ],
                "events": [_ev("s", "k", {"c": "x"}, 1), _ev("s", "k", {"c": "x"}, 3)],
            },
        ),
        (
            "merge-through-flat",
            {
                "partitions": 2,
                "topology": [
                    {"name": "a", "stream": "a"},
                    {"name": "b", "stream": "b"},
                    {"name": "m", "merge": ["a", "b"]},
                    {"name": "f", "flat_map": {"split": " "}, "input": "m"},
                    {"name": "th", "through": "mid", "input": "f"},
                    {"name": "fv", "flat_map_values": {"split": ",", "lower": True}, "input": "th"},
                    {"name": "o", "to": "out", "input": "fv"},
                ],
                "events": [_ev("a", "k", "x y", 1), _ev("b", "k2", "P,Q", 2)],
            },
        ),
        (
            "table-groupby-aggregate",
            {
                "topology": [
                    {"name": "t", "table": "t"},
                    {"name": "g", "group_by": {"field": "c"}, "input": "t"},
                    {"name": "a", "aggregate": "concat", "input": "g"},
                    {"name": "o", "to": "out", "input": "a"},
                ],
                "events": [_ev("t", "k", {"c": "x"}, 1), _ev("t", "k", {"c": "y"}, 2), _ev("t", "k", None, 3)],
            },
        ),
        (
            "fk-join-mat-filter",
            {
                "partitions": 2,
                "topology": [
                    {"name": "o", "table": "orders"},
                    {"name": "c", "table": "customers"},
                    {"name": "j", "left_join": ["o", "c"], "foreign_key": "cust", "joiner": "object"},
                    {"name": "f", "filter": {"value_not_null": True}, "input": "j", "materialized": True},
                    {"name": "mv", "map_values": {"append": "!"}, "input": "f"},
                    {"name": "out", "to": "out", "input": "mv"},
                ],
                "events": [
                    _ev("customers", "c1", "C", 1),
                    _ev("orders", "o1", {"cust": "c1"}, 2),
                    _ev("orders", "o1", None, 3),
                ],
            },
        ),
        (
            "rekey-repartition-totable",
            {
                "partitions": 2,
                "topics": {"s": {"partitions": 3}},
                "topology": [
                    {"name": "s", "stream": "s"},
                    {"name": "rk", "select_key": {"map": {"a": "b"}}, "input": "s", "partitioner": {"map": {"b": 1}}},
                    {"name": "r", "repartition": True, "partitions": 5, "input": "rk"},
                    {"name": "tt", "to_table": True, "input": "r"},
                    {"name": "ts", "to_stream": True, "input": "tt"},
                    {"name": "o", "to": "out", "input": "ts", "partitions": 2},
                ],
                "events": [_ev("s", "a", "1", 1), _ev("s", "c", "2", 2)],
            },
        ),
    ]
    return out


# -- weird values and document perturbations ------------------------------------------------------------------------
WEIRD = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    2.0,
    "2",
    "",
    "x" * 300,
    2**31,
    2**31 - 1,
    2**63,
    2**63 - 1,
    -(2**63) - 1,
    2**70,
    -(2**70),
    float("nan"),
    float("inf"),
    float("-inf"),
    [],
    [1, [2, [3]]],
    {},
    {"a": {"b": None}},
    "é中🙂",
    "\x00\xff",
    "\udcff",
    b"bytes",
    {1, 2},
    (1, 2),
    object(),
    1e308,
    -0.0,
]


def rand_weird(rng):
    return rng.choice(WEIRD)


def nodes_of(doc):
    return doc["topology"]


# Each perturbation: fn(rng, doc, internal_topics) -> (label, doc, must_refuse)
def p_top_field(rng, d, it):
    f = rng.choice(
        [
            "partitions",
            "semantics",
            "key_serde",
            "schedule",
            "topics",
            "topology",
            "events",
            "name",
            "description",
            "partitons",
            "extra",
        ]
    )
    v = rand_weird(rng)
    if f in ("topology", "events") and rng.random() < 0.3:
        d.pop(f, None)
        return f"del {f}", d, True
    d[f] = v
    must = f in ("partitons", "extra")
    if f == "partitions":
        must = not (isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 2**31 - 1)
    if f == "semantics":
        must = v is not None
    return f"doc.{f}={v!r:.40}", d, must


def p_semantics(rng, d, it):
    v = rng.choice(
        [
            3.1,
            4,
            "3.10",
            "99.0",
            "0.9",
            "garbage",
            "",
            "3.1+nope",
            "4.4-relaxed_null_keys",
            "2.0",
            "0.10.0",
            "3",
            "3.1.1",
        ]
    )
    d["semantics"] = v
    return f"semantics={v!r}", d, isinstance(v, (int, float)) or v in ("garbage", "", "99.0", "3.1+nope")


def p_node_numeric(rng, d, it):
    n = rng.choice(nodes_of(d))
    f = rng.choice(["partitions", "history_retention_ms", "grace_ms"])
    v = rng.choice([0, -1, 2**31, 2**31 - 1, 2**63, 2**63 - 1, 1.0, "3", True, float("nan"), float("inf"), 2**70, None])
    n[f] = v
    return f"node {n['name']}.{f}={v!r}", d, None


def p_window(rng, d, it):
    # add/alter windows anywhere
    targets = [n for n in nodes_of(d) if "window" in n or "windowed_by" in n]
    v = rng.choice([0, -1, 2**63, 2**63 - 1, 1.5, "10", True, float("inf"), 2**70, None])
    if not targets:
        n = rng.choice(nodes_of(d))
        n["window"] = {"before_ms": v, "after_ms": 1}
        return f"window on {n['name']}", d, True
    n = rng.choice(targets)
    key = "window" if "window" in n else "windowed_by"
    w = n[key] if isinstance(n[key], dict) else {}
    f = rng.choice(list(w) + ["grace_ms", "typo_ms"]) if w else "x"
    w[f] = v
    must = (
        f == "typo_ms" or not (isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= LONG)
        if f != "grace_ms" or v is not None
        else False
    )
    return f"{n['name']}.{key}.{f}={v!r}", d, must


def p_input(rng, d, it):
    ns = nodes_of(d)
    n = rng.choice(ns)
    names = [m["name"] for m in ns]
    choice = rng.choice(["self", "later", "missing", "any", "int", "list", "global", "grouped"])
    if choice == "self":
        v = n["name"]
    elif choice == "later":
        v = names[-1]
    elif choice == "missing":
        v = "nosuchnode"
    elif choice == "int":
        v = 3
    elif choice == "list":
        v = names[:2]
    else:
        kinds = {
            "global": [m["name"] for m in ns if "global_table" in m],
            "grouped": [m["name"] for m in ns if any(k in m for k in ("group_by", "group_by_key", "windowed_by"))],
        }
        v = rng.choice(kinds.get(choice) or names)
    for k in ("input", "join", "left_join", "outer_join", "merge"):
        if k in n:
            if isinstance(n[k], list) and n[k]:
                n[k][rng.randrange(len(n[k]))] = v
            else:
                n[k] = v
            return f"{n['name']}.{k}<-{v!r} ({choice})", d, choice in ("self", "missing", "int", "list")
    n["input"] = v
    return f"{n['name']}.input+={v!r}", d, True


def p_node_field(rng, d, it):
    n = rng.choice(nodes_of(d))
    r = rng.random()
    if r < 0.25:
        k = rng.choice([k for k in n if k != "name"] or ["name"])
        n[k[:-1] + "x" if len(k) > 1 else "zz"] = n.pop(k)
        return f"{n.get('name')}: misspell {k}", d, True
    if r < 0.4:
        n.pop("name")
        return "node without name", d, True
    if r < 0.55:
        op = rng.choice(
            [
                "stream",
                "to",
                "count",
                "join",
                "filter",
                "windowed_by",
                "merge",
                "foreign_key",
                "key_selector",
                "materialized",
                "joiner",
            ]
        )
        n[op] = rand_weird(rng)
        return f"{n['name']}: extra {op}={n[op]!r:.30}", d, None
    if r < 0.75:
        k = rng.choice([k for k in n if k != "name"])
        n[k] = rand_weird(rng)
        return f"{n['name']}.{k}={n[k]!r:.40}", d, None
    if r < 0.85:
        ns = nodes_of(d)
        ns.append(copy.deepcopy(n))
        return f"duplicate node {n['name']}", d, True
    ns = nodes_of(d)
    i = rng.randrange(len(ns))
    ns[i] = rand_weird(rng)
    return f"topology[{i}]={ns[i]!r:.30}", d, True


FUNCTION_FIELDS = (
    "select_key",
    "filter",
    "map_values",
    "flat_map",
    "flat_map_values",
    "group_by",
    "joiner",
    "key_selector",
    "partitioner",
    "reduce",
    "aggregate",
    "foreign_key",
)
"""The node fields that name a function: where a function spec can be perturbed."""


def p_function_spec(rng, d, it):
    fn_ops = [n for n in nodes_of(d) if any(k in n for k in FUNCTION_FIELDS)]
    specs = [
        {"field": ""},
        {"field": 3},
        {"field": "a..b"},
        {"map": {1: 2}},
        {"map": []},
        {"split": ""},
        {"split": None},
        {"key_in": "k"},
        {"key_in": [[1]]},
        {"append": 5},
        {"value": False},
        {"field": "a", "extra": 1},
        "concat",
        "object",
        "nope",
        7,
        None,
        {"map": {"k": 2**70}},
        {"map": {"k": -1}},
        {"map": {"k": 99999}},
        {"map": {"k": 1.5}},
        [],
        "",
    ]
    if not fn_ops:
        n = rng.choice(nodes_of(d))
        n["joiner"] = rng.choice(specs)
        return f"{n['name']}.joiner stray", d, None if any(k.endswith("join") for k in n) else True
    n = rng.choice(fn_ops)
    k = rng.choice([k for k in FUNCTION_FIELDS if k in n])
    n[k] = rng.choice(specs)
    return f"{n['name']}.{k}={n[k]!r:.50}", d, None


def p_partitioner(rng, d, it):
    cands = [
        n
        for n in nodes_of(d)
        if any(k in n for k in ("to", "select_key", "through", "repartition", "flat_map", "group_by"))
    ]
    if not cands:
        return p_function_spec(rng, d, it)
    n = rng.choice(cands)
    n["partitioner"] = {
        "map": {rng.choice(["k", "a", "b", "x", "o1", "c1"]): rng.choice([-1, 2**31, 2**63, 99, 1.0, "0", None, True])}
    }
    return f"{n['name']}.partitioner={n['partitioner']}", d, None


def p_event(rng, d, it):
    evs = d["events"]
    r = rng.random()
    if r < 0.3 and it:
        t = rng.choice(it)
        evs.append({"topic": t, "key": "k", "value": "v", "ts": 1})
        return f"event to internal {t}", d, True
    if r < 0.4:
        t = rng.choice(["nosuch", "", "out", None, 5])
        evs.append({"topic": t, "key": "k", "value": "v", "ts": 1})
        return f"event to topic {t!r}", d, t not in ("out",)
    if not evs:
        evs.append({"topic": "x", "key": "k", "value": "v", "ts": 1})
        return "event on empty", d, True
    e = rng.choice(evs)
    f = rng.choice(["key", "value", "ts", "partition", "ts", "value", "topik"])
    v = rand_weird(rng)
    if f == "value" and rng.random() < 0.5:
        v = rng.choice([{"c": v, "cust": v, "f": v, "g": v}, [v, v]])
    e[f] = v
    must = None
    if f == "ts":
        must = not (isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= LONG)
    if f == "partition" and v is not None:  # null: the partitioner chooses, as a ProducerRecord's null partition
        must = not (isinstance(v, int) and not isinstance(v, bool) and v >= 0) or v > 2**31
    if f == "topik":
        must = True
    return f"event.{f}={v!r:.40}", d, must


def p_events_shape(rng, d, it):
    v = rng.choice([None, {}, "events", [None], [[1]], [{"topic": "s"}], [1, 2], {"topic": "s"}])
    d["events"] = v
    return f"events={v!r:.40}", d, v not in ([],)


def p_topics(rng, d, it):
    v = rng.choice(
        [
            {},
            [],
            None,
            {"nosuch": {"partitions": 2}},
            {"s": 3},
            {"s": {"partitions": 0}},
            {"s": {"partitions": 2**31}},
            {"s": {"partitions": "2"}},
            {"s": {"partitions": 2, "x": 1}},
            {"out": {"partitions": 2**31 - 1}},
            {"orders": {"partitions": 2.0}},
            {1: {"partitions": 1}},
        ]
    )
    d["topics"] = v
    return f"topics={v!r:.50}", d, None


def p_cycle(rng, d, it):
    ns = nodes_of(d)
    if len(ns) < 3:
        return p_input(rng, d, it)
    a = ns[1]
    a_key = next((k for k in ("input",) if k in a), None)
    if a_key:
        a[a_key] = ns[-1]["name"]
    else:
        ns.insert(1, {"name": "cyc", "filter": {"value_not_null": True}, "input": "cyc"})
    return "cycle", d, True


def p_ts_edge(rng, d, it):
    v = rng.choice([LONG, LONG - 1, LONG - 3, 2**63, -1, 0])
    changed = False
    for e in d["events"]:
        if isinstance(e, dict) and rng.random() < 0.7:
            e["ts"] = v
            changed = True
    return f"ts ~ {v}", d, changed and (v > LONG or v < 0)


def p_schedule_serde(rng, d, it):
    d["schedule"] = rng.choice(["timestamp", "stages", "test-driver"])
    d["key_serde"] = rng.choice(["typed", "string"])
    if rng.random() < 0.5:
        d["partitions"] = rng.choice([1, 2, 3, 7])
    return f"schedule={d['schedule']} key_serde={d['key_serde']} partitions={d.get('partitions')}", d, None


def p_kafka_name(rng, d, it):
    n = rng.choice(nodes_of(d))
    old = n["name"]
    new = rng.choice(["a b", "r/x", "é", "x" * 250, "..", "a\nb", "tab\t"])
    for m in nodes_of(d):
        for k in ("input",):
            if m.get(k) == old:
                m[k] = new
        for k in ("join", "left_join", "outer_join", "merge"):
            if isinstance(m.get(k), list):
                m[k] = [new if x == old else x for x in m[k]]
    n["name"] = new
    return f"node name {old!r} -> {new!r:.20} (document names are kjoin-only)", d, None


def p_window_overflow(rng, d, it):
    ws = [n for n in nodes_of(d) if isinstance(n.get("window"), dict)]
    if not ws:
        return p_window(rng, d, it)
    n = rng.choice(ws)
    n["window"] = {"before_ms": LONG, "after_ms": rng.choice([1, LONG]), "grace_ms": rng.choice([0, LONG])}
    return f"{n['name']}.window={n['window']} (before+after overflows: Kafka refuses)", d, True


def p_event_partition(rng, d, it):
    evs = [e for e in d["events"] if isinstance(e, dict)]
    if not evs:
        return p_event(rng, d, it)
    e = rng.choice(evs)
    parts = d.get("partitions", 1)
    v = rng.choice([parts, parts + 1, 2**31 - 1, 2**31, -1, 0, 1])
    e["partition"] = v
    return f"event.partition={v} (partitions {parts})", d, v >= parts if isinstance(parts, int) else None


def p_kind_mismatch(rng, d, it):
    ns = nodes_of(d)
    kinds = {
        "global": [m["name"] for m in ns if "global_table" in m],
        "grouped": [m["name"] for m in ns if any(k in m for k in ("group_by", "group_by_key", "windowed_by"))],
        "table": [m["name"] for m in ns if any(k in m for k in ("table", "to_table", "count", "reduce", "aggregate"))],
        "stream": [m["name"] for m in ns if any(k in m for k in ("stream", "select_key", "to_stream", "merge"))],
    }
    kinds = {k: v for k, v in kinds.items() if v}
    kind = rng.choice(sorted(kinds))
    src = rng.choice(kinds[kind])
    idx = [m["name"] for m in ns].index(src)
    op = rng.choice(
        [
            "to",
            "filter",
            "select_key",
            "join0",
            "join1",
            "group_by_key",
            "count",
            "windowed_by",
            "merge",
            "to_table",
            "to_stream",
            "repartition",
            "fk",
        ]
    )
    new = {"name": "zz_" + op}
    if op == "to":
        new.update(to="zz", input=src)
    elif op == "filter":
        new.update(filter={"value_not_null": True}, input=src)
    elif op == "select_key":
        new.update(select_key={"value": True}, input=src)
    elif op == "join0":
        new.update(join=[src, ns[0]["name"]])
    elif op == "join1":
        new.update(left_join=[ns[0]["name"], src])
    elif op == "group_by_key":
        new.update(group_by_key=True, input=src)
    elif op == "count":
        new.update(count=True, input=src)
    elif op == "windowed_by":
        new.update(windowed_by={"size_ms": 5}, input=src)
    elif op == "merge":
        new.update(merge=[src, src])
    elif op == "to_table":
        new.update(to_table=True, input=src)
    elif op == "to_stream":
        new.update(to_stream=True, input=src)
    elif op == "repartition":
        new.update(repartition=True, input=src)
    elif op == "fk":
        new.update(join=[src, ns[0]["name"]], foreign_key="f")
    ns.insert(idx + 1, new)
    return f"{op} reads {kind} {src}", d, None


def p_yaml_shape(rng, d, it):
    v = rng.choice([[d], "just text", 42, None, [], {"topology": None}, {"events": []}])
    return f"document={v!r:.40}", v, True


DOC_PERTURBATIONS = [
    p_schedule_serde,
    p_schedule_serde,
    p_kafka_name,
    p_window_overflow,
    p_ts_edge,
    p_event_partition,
    p_kind_mismatch,
    p_kind_mismatch,
    p_yaml_shape,
    p_top_field,
    p_semantics,
    p_node_numeric,
    p_window,
    p_input,
    p_node_field,
    p_function_spec,
    p_partitioner,
    p_event,
    p_event,
    p_event,
    p_events_shape,
    p_topics,
    p_cycle,
]


# -- what Kafka's serdes could write --------------------------------------------------------------------------------
def bad_value(v, depth=0):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return "unencodable text"
        return None
    if isinstance(v, int):
        return None if -(2**63) <= v <= LONG else f"int beyond long {v}"
    if isinstance(v, float):
        return None if math.isfinite(v) else f"non-finite {v}"
    if isinstance(v, list):
        for x in v:
            b = bad_value(x, depth + 1)
            if b:
                return b
        return None
    if isinstance(v, dict):
        for k, x in v.items():
            if not isinstance(k, str):
                return f"non-text object key {k!r}"
            b = bad_value(x, depth + 1)
            if b:
                return b
        return None
    return f"non-JSON {type(v).__name__}"


def check_trace(trace):
    for r in trace.outputs():
        for what, v in (("key", r.key), ("value", r.value)):
            b = bad_value(v)
            if b:
                return f"output {r.topic} {what}: {b}"
        if not (isinstance(r.ts, int) and 0 <= r.ts <= LONG):
            return f"output ts {r.ts!r}"
        k = r.key
        if isinstance(k, str) and "@" in k and "/" in k:  # windowed key [k@start/end]
            try:
                end = int(k.rsplit("/", 1)[1].rstrip("]"))
                if end > LONG:
                    return f"window end beyond long: {k}"
            except ValueError:
                pass
    return None


def bad_returns():
    class Obj:
        pass

    def gen():
        yield ("a", "b")

    return [
        ("raise", None),
        ("None", None),
        ("set", {1}),
        ("bytes", b"x"),
        ("object", Obj()),
        ("nan", float("nan")),
        ("inf", float("inf")),
        ("2**70", 2**70),
        ("-2**70", -(2**70)),
        ("tuple1", ("a",)),
        ("tuple3", ("a", "b", "c")),
        ("list", ["a", "b"]),
        ("dict-setval", {"a": {1}}),
        ("dict-intkey", {1: "a"}),
        ("nested-nan", {"a": [float("nan")]}),
        ("ok-text", "ok"),
        ("int", 7),
        ("bool", True),
        ("float", 1.5),
        ("gen", gen()),
        ("list-of-sets", [{1}]),
        ("list-of-pairs-bad", [("k", {1})]),
        ("pair-nan-key", (float("nan"), "v")),
        ("huge-str", "x" * 100000),
        ("lone-surrogate", "\udcff"),
        ("tuple-value", (1, 2)),
    ]


def mkfn(label, val):
    def f(*args):
        if label == "raise":
            raise KeyError("boom")
        return val

    f.__name__ = f"user_{label}"
    return f


EV = [
    {"topic": "s", "key": "k", "value": {"c": "x", "f": "x"}, "ts": 1},
    {"topic": "t", "key": "x", "value": {"c": "k", "f": "x"}, "ts": 2},
    {"topic": "s", "key": "k2", "value": "v", "ts": 3},
    {"topic": "t", "key": "k", "value": "T", "ts": 4},
    {"topic": "s", "key": "k", "value": {"c": "x"}, "ts": 5},
]


def program(kind, fn):
    T = Topology(2)
    s = T.stream("s")
    t = T.table("t")
    if kind == "select_key":
        s.select_key(fn).to("out")
    elif kind == "filter":
        s.filter(fn).to("out")
    elif kind == "map_values":
        s.map_values(fn).to("out")
    elif kind == "map":
        s.map(fn).to("out")
    elif kind == "flat_map":
        s.flat_map(fn).to("out")
    elif kind == "flat_map_values":
        s.flat_map_values(fn).to("out")
    elif kind == "st-joiner":
        s.join(t, fn).to("out")
    elif kind == "ss-joiner":
        s.outer_join(T.stream("s2"), fn, window={"before_ms": 10, "after_ms": 10}).to("out")
    elif kind == "tt-joiner":
        t.outer_join(T.table("t2"), fn).to("out")
    elif kind == "fk-extractor":
        t.left_join(T.table("t2"), foreign_key=fn).to("out")
    elif kind == "fk-joiner":
        t.join(T.table("t2"), fn, foreign_key="c").to("out")
    elif kind == "table-filter":
        t.filter(fn, materialized=True).to("out")
    elif kind == "table-map_values":
        t.map_values(fn).to("out")
    elif kind == "group_by":
        s.group_by(fn).count().to("out")
    elif kind == "table-group_by":
        t.group_by(fn).count().to("out")
    elif kind == "reduce":
        s.group_by_key().reduce(fn).to("out")
    elif kind == "agg-init":
        s.group_by_key().aggregate(fn, lambda k, v, a: "x").to("out")
    elif kind == "agg-adder":
        s.group_by_key().aggregate(lambda: "", fn).to("out")
    elif kind == "win-agg-adder":
        s.group_by_key().windowed_by({"size_ms": 10}).aggregate(lambda: "", fn).to("out")
    elif kind == "table-agg-sub":
        t.group_by(lambda k, v: (k, v)).aggregate(lambda: "", lambda k, v, a: "x", fn).to("out")
    elif kind == "sink-partitioner":
        s.to("out", partitioner=fn)
    elif kind == "select-partitioner":
        s.select_key(lambda k, v: "k").join(t, partitioner=None).to("out") if False else s.select_key(
            lambda k, v: "z", partitioner=fn
        ).join(t).to("out")
    elif kind == "repartition-partitioner":
        s.repartition(partitioner=fn).to("out")
    elif kind == "global-key_selector":
        s.join(T.global_table("g"), key_selector=fn).to("out")
    elif kind == "fk-partitioner":
        t.join(T.table("t2"), foreign_key="c", partitioner=fn).to("out")
    elif kind == "fk-other-partitioner":
        t.join(T.table("t2"), foreign_key="c", other_partitioner=fn).to("out")
    events = EV + [
        {"topic": "s2", "key": "k", "value": "w", "ts": 2},
        {"topic": "t2", "key": "x", "value": "X", "ts": 2},
        {"topic": "g", "key": "k", "value": "G", "ts": 0},
        {"topic": "t2", "key": "k", "value": {"c": "x"}, "ts": 6},
        {"topic": "t", "key": "x", "value": {"c": "k2", "f": "y"}, "ts": 7},
        {"topic": "t2", "key": "x", "value": "X2", "ts": 8},
    ]
    present = set(T.graph.topics)
    return T, [e for e in events if e["topic"] in present]


FN_KINDS = [
    "select_key",
    "filter",
    "map_values",
    "map",
    "flat_map",
    "flat_map_values",
    "st-joiner",
    "ss-joiner",
    "tt-joiner",
    "fk-extractor",
    "fk-joiner",
    "table-filter",
    "table-map_values",
    "group_by",
    "table-group_by",
    "reduce",
    "agg-init",
    "agg-adder",
    "win-agg-adder",
    "table-agg-sub",
    "sink-partitioner",
    "select-partitioner",
    "repartition-partitioner",
    "global-key_selector",
    "fk-partitioner",
    "fk-other-partitioner",
]


# builder API misuse: (label, callable, must_refuse)
def api_cases():
    def mk(body, must=True):
        return body, must

    T = Topology
    c = {}
    c["Topology('2')"] = mk(lambda: T("2"))
    c["Topology(0)"] = mk(lambda: T(0))
    c["Topology(2**31)"] = mk(lambda: T(2**31))
    c["Topology(2.0)"] = mk(lambda: T(2.0))
    c["Topology(True)"] = mk(lambda: T(True))
    c["Topology(semantics=3.1)"] = mk(lambda: T(1, 3.1))
    c["Topology(key_serde='avro')"] = mk(lambda: T(1, None, "avro"))
    c["Topology(foo=1)"] = mk(lambda: T(foo=1))
    c["stream(5)"] = mk(lambda: T().stream(5))
    c["stream('')"] = mk(lambda: T().stream(""))
    c["stream(partitions=-1)"] = mk(lambda: T().stream("s", partitions=-1))
    c["stream(partitions=2**31)"] = mk(lambda: T().stream("s", partitions=2**31))
    c["stream(partitiosn=2)"] = mk(lambda: T().stream("s", partitiosn=2))
    c["table(history_retention_ms=-1)"] = mk(lambda: T().table("t", history_retention_ms=-1))
    c["table(history_retention_ms=2**63)"] = mk(lambda: T().table("t", history_retention_ms=2**63))
    c["table(history_retention_ms=1.5)"] = mk(lambda: T().table("t", history_retention_ms=1.5))
    c["table(history_retention_ms=nan)"] = mk(lambda: T().table("t", history_retention_ms=float("nan")))

    def two_topologies():
        a, b = T(), T()
        a.stream("s").join(b.table("t")).to("out")

    c["mix handles of two Topology"] = mk(two_topologies)

    def merge_two():
        a, b = T(), T()
        a.stream("s").merge(b.stream("s2")).to("out")

    c["merge handles of two Topology"] = mk(merge_two)

    def after_run():
        t = T()
        s = t.stream("s")
        s.to("out")
        t.run([{"topic": "s", "key": "k", "value": "v", "ts": 1}])
        s.filter(lambda k, v: True).to("o2")

    c["filter after run"] = mk(after_run)

    def after_run2():
        t = T()
        s = t.stream("s")
        s.to("out")
        t.run([])
        t.stream("z").to("o3")

    c["stream after run"] = mk(after_run2)

    def run_twice():
        t = T()
        s = t.stream("s")
        s.to("out")
        t.run([])
        t.run([{"topic": "s", "key": "k", "value": "v", "ts": 1}])

    c["run twice"] = mk(run_twice, False)
    c["join window negative"] = mk(
        lambda: T().stream("a").join(T().stream("b"), window={"before_ms": -1, "after_ms": 1})
    )

    def win(w):
        def f():
            t = T()
            t.stream("a").join(t.stream("b"), window=w).to("out")

        return f

    c["window before=2**63"] = mk(win({"before_ms": 2**63, "after_ms": 1}))
    c["window before='10'"] = mk(win({"before_ms": "10", "after_ms": 1}))
    c["window grace=inf"] = mk(win({"before_ms": 1, "after_ms": 1, "grace_ms": float("inf")}))
    c["window list"] = mk(win([1, 2]))
    c["window LONG/LONG/LONG"] = mk(win({"before_ms": LONG, "after_ms": LONG, "grace_ms": LONG}), False)

    def tw(w):
        def f():
            t = T()
            t.stream("a").group_by_key().windowed_by(w).count().to("out")

        return f

    c["tumbling size 0"] = mk(tw({"size_ms": 0}))
    c["tumbling size 2**63"] = mk(tw({"size_ms": 2**63}))
    c["hopping advance>size"] = mk(tw({"size_ms": 5, "advance_ms": 10}))
    c["session gap -1"] = mk(tw({"inactivity_gap_ms": -1}))
    c["sliding + size"] = mk(tw({"time_difference_ms": 5, "size_ms": 3}))
    c["windowed_by 5"] = mk(tw(5))
    c["to(partitions=0)"] = mk(lambda: T().stream("s").to("out", partitions=0))
    c["to(5)"] = mk(lambda: T().stream("s").to(5))
    c["to(topic=same as source)"] = mk(
        lambda: (lambda t: (t.stream("s").to("s"), t.run([{"topic": "s", "key": "k", "value": "v", "ts": 1}])))(T()),
        None,
    )
    c["repartition(partitions='3')"] = mk(lambda: T().stream("s").repartition(partitions="3"))
    c["through('')"] = mk(lambda: T().stream("s").through(""))
    c["join(None)"] = mk(lambda: T().stream("s").join(None))
    c["join(global, window=)"] = mk(
        lambda: (lambda t: t.stream("s").join(t.global_table("g"), window={"before_ms": 1, "after_ms": 1}))(T())
    )
    c["global.filter"] = mk(lambda: T().global_table("g").filter(lambda k, v: True))
    c["global.to"] = mk(lambda: T().global_table("g").to("out"))
    c["table.join(stream)"] = mk(lambda: (lambda t: t.table("t").join(t.stream("s")))(T()))
    c["grouped.to"] = mk(lambda: T().stream("s").group_by_key().to("out"))
    c["grouped.join"] = mk(lambda: (lambda t: t.stream("s").join(t.stream("s").group_by_key()))(T()))
    c["filter(5)"] = mk(lambda: T().stream("s").filter(5))
    c["filter(lambda:0 arity)"] = mk(
        lambda: (
            lambda t: (
                t.stream("s").filter(lambda: True).to("out"),
                t.run([{"topic": "s", "key": "k", "value": "v", "ts": 1}]),
            )
        )(T())
    )
    c["map_values(name=5)"] = mk(lambda: T().stream("s").map_values(lambda v: v, name=5))
    c["name collision"] = mk(
        lambda: (
            lambda t: (
                t.stream("s").filter(lambda k, v: True, name="x"),
                t.stream("s2").filter(lambda k, v: True, name="x"),
            )
        )(T())
    )
    c["same source topic twice"] = mk(lambda: (lambda t: (t.stream("s"), t.table("s")))(T()))
    c["fk foreign_key=5"] = mk(lambda: (lambda t: t.table("a").join(t.table("b"), foreign_key=5))(T()))
    c["reduce(None)"] = mk(lambda: T().stream("s").group_by_key().reduce(None))
    c["aggregate('concat', extra)"] = mk(
        lambda: T().stream("s").group_by_key().aggregate(lambda: "", lambda k, v, a: a, 3)
    )
    c["run(events='x')"] = mk(lambda: (lambda t: (t.stream("s").to("out"), t.run("x")))(T()))
    c["run(schedule='fast')"] = mk(lambda: (lambda t: (t.stream("s").to("out"), t.run([], "fast")))(T()))
    c["run(instances=0)"] = mk(lambda: (lambda t: (t.stream("s").to("out"), t.run([], instances=0)))(T()))
    c["run(assignment bad)"] = mk(lambda: (lambda t: (t.stream("s").to("out"), t.run([], assignment={"9_9": -1})))(T()))
    c["run event ts 2**63"] = mk(
        lambda: (lambda t: (t.stream("s").to("out"), t.run([{"topic": "s", "key": "k", "value": "v", "ts": 2**63}])))(
            T()
        )
    )
    c["run event value set"] = mk(
        lambda: (lambda t: (t.stream("s").to("out"), t.run([{"topic": "s", "key": "k", "value": {1}, "ts": 1}])))(T())
    )
    c["run event key nan"] = mk(
        lambda: (
            lambda t: (t.stream("s").to("out"), t.run([{"topic": "s", "key": float("nan"), "value": "v", "ts": 1}]))
        )(T())
    )
    c["run event partition 2**40"] = mk(
        lambda: (
            lambda t: (
                t.stream("s").to("out"),
                t.run([{"topic": "s", "key": "k", "value": "v", "ts": 1, "partition": 2**40}]),
            )
        )(T())
    )
    c["run event to repartition topic"] = mk(
        lambda: (
            lambda t: (
                t.stream("s").select_key(lambda k, v: v).group_by_key().count().to("out"),
                t.run(
                    [{"topic": n, "key": "k", "value": "v", "ts": 1} for n in t.graph.topics if "repartition" in n][:1]
                    or [{"topic": "zz", "key": 1, "value": 1, "ts": 1}]
                ),
            )
        )(T())
    )
    c["run event to changelog"] = mk(
        lambda: (
            lambda t: (
                t.stream("s").group_by_key().count(name="cnt").to("out"),
                t.run([{"topic": "cnt-changelog", "key": "k", "value": "v", "ts": 1}]),
            )
        )(T())
    )
    c["describe() after bad"] = mk(lambda: (lambda t: (t.stream("s"), t.describe()))(T()), None)
    c["stream-table grace on non-versioned"] = mk(lambda: (lambda t: t.stream("s").join(t.table("t"), grace_ms=5))(T()))
    c["grace > retention"] = mk(
        lambda: (lambda t: t.stream("s").join(t.table("t", history_retention_ms=5), grace_ms=50))(T())
    )
    c["nothing written"] = mk(lambda: (lambda t: (t.stream("s"), t.run([])))(T()))
    return c


# -- classification ---------------------------------------------------------------------------------------------------
class Timeout(Exception):
    """A case ran past :data:`SECONDS`."""


def _alarm(*_: Any) -> None:
    raise Timeout()


def classify_exc(error: BaseException) -> tuple[str, str]:
    if isinstance(error, Timeout):
        return "hang", "timeout"
    if isinstance(error, ScenarioError):
        return "refused", f"{type(error).__name__}: {str(error)[:300]}"
    where = traceback.format_exc().strip().splitlines()[-3][:200]
    return "crash", f"{type(error).__name__}: {str(error)[:200]} @ {where}"


def run_doc(doc: Any, must: bool | None) -> tuple[str, str]:
    trace = TopologyScenario.from_dict(doc).run()
    bad = check_trace(trace)
    if bad:
        return "silent", "implausible output: " + bad
    if must:
        outputs = [(r.topic, r.key, r.value, r.ts) for r in trace.outputs()][:4]
        return "silent", f"ran though expected refusal; outputs: {str(outputs)[:200]}"
    return "ran", f"{len(trace.outputs())} outputs"


def run_cli(doc: Any, must: bool | None) -> tuple[str, str] | None:
    try:
        text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    except Exception:  # noqa: BLE001 - a perturbed document YAML cannot write is skipped
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "app.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        err, out = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                code = kjoin.cli.main(["run", str(path), "--format", "jsonl"])
        except SystemExit as error:
            code = error.code
        except Timeout:
            raise
        except BaseException as error:  # noqa: BLE001 - whatever escaped kjoin run is the finding
            return "crash", f"kjoin run: uncaught {type(error).__name__}: {str(error)[:200]}; document {text[:300]!r}"
    message = err.getvalue().strip()
    if code == 0:
        if must:
            return "silent", f"kjoin run exit 0 though expected refusal; document {text[:300]!r}"
        if any("NaN" in line or "Infinity" in line for line in out.getvalue().splitlines()):
            return "silent", f"kjoin run wrote NaN/Infinity; document {text[:300]!r}"
        return "ran", "exit 0"
    if "Traceback" in message or len(message.splitlines()) > 1:
        return "crash", f"kjoin run rc={code} multi-line/traceback: {message[:200]}; document {text[:300]!r}"
    return "refused", f"rc={code} {message[:200]}"


def internal_topics(doc: Any) -> list[str]:
    try:
        topology = TopologyScenario.from_dict(doc).topology
    except Exception:  # noqa: BLE001 - a seed that does not build has no internal topics to aim at
        return []
    named = [name for name, topic in topology.graph.topics.items() if topic.internal]
    return named + [f"{name}-changelog" for name in topology.graph.nodes][:3]


def case(args: tuple[str, int, int]) -> tuple[str, str, str, str, str | None]:
    """One case: ``(kind, index, seed)`` to ``(kind, class, label, detail, document)`` (the document of a ``doc``
    case that is not refused or ran)."""
    kind, idx, seedval = args
    rng = random.Random(seedval)
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(SECONDS)
    label = "?"
    try:
        if kind in ("doc", "cli"):
            all_seeds = seeds(random.Random(seedval))
            sname, base = all_seeds[idx % len(all_seeds)]
            base = copy.deepcopy(base)
            aimed = internal_topics(base)
            perturbation = rng.choice(DOC_PERTURBATIONS)
            label, doc, must = perturbation(rng, base, aimed)
            label = f"[{sname}] {perturbation.__name__}: {label}"
            if kind == "cli":
                found = run_cli(doc, must)
                if found is None:
                    return kind, "skip", label, "not YAML-able", None
                return kind, found[0], label, found[1], None
            try:
                cls, info = run_doc(doc, must)
            except Exception as error:  # noqa: BLE001 - classified
                cls, info = classify_exc(error)
            return kind, cls, label, info, (repr(doc)[:3000] if cls in ("crash", "silent", "hang") else None)
        if kind == "fn":
            fk = FN_KINDS[idx % len(FN_KINDS)]
            returns = bad_returns()
            rl, rv = returns[rng.randrange(len(returns))]
            label = f"{fk} returns {rl}"
            try:
                topology, events = program(fk, mkfn(rl, rv))
                trace = topology.run(events)
                bad = check_trace(trace)
                if bad:
                    cls, info = "silent", bad
                else:
                    shown = str([(r.key, r.value) for r in trace.outputs()][:3])[:150]
                    cls, info = "ran", f"{len(trace.outputs())} outputs {shown}"
            except Exception as error:  # noqa: BLE001 - classified
                cls, info = classify_exc(error)
                if cls == "refused" and not any(word in info for word in ("node", "function", "user_")):
                    info = "REFUSED-BUT-VAGUE " + info
            return kind, cls, label, info, None
        if kind == "seed":
            sname, base = seeds(random.Random(0))[idx]
            label = "seed " + sname
            try:
                cls, info = run_doc(base, False)
            except Exception as error:  # noqa: BLE001 - classified
                cls, info = classify_exc(error)
            return kind, cls, label, info, None
        cases = api_cases()
        keys = sorted(cases)
        label = keys[idx % len(keys)]
        body, must = cases[label]
        try:
            body()
            cls, info = ("silent", "accepted") if must else ("ran", "ok")
        except Exception as error:  # noqa: BLE001 - classified
            cls, info = classify_exc(error)
        return kind, cls, label, info, None
    except Timeout:
        return kind, "hang", label, "timeout", None
    except Exception:  # noqa: BLE001 - the fuzzer's own failure, counted apart
        return kind, "fuzzer-error", label, traceback.format_exc()[-500:], None
    finally:
        signal.alarm(0)


def jobs(n: int, seed: int = 1, fixed: bool = True) -> list[tuple[str, int, int]]:
    """Every ``api`` and ``seed`` case (if ``fixed``), then ``n`` random cases: 55% ``doc``, 15% ``cli``, 30% ``fn``."""
    found = [("api", i, 0) for i in range(len(api_cases()))] + [
        ("seed", i, 0) for i in range(len(seeds(random.Random(0))))
    ]
    if not fixed:
        found = []
    for i in range(n):
        rng = random.Random(seed * 1_000_003 + i)
        kind = rng.choices(["doc", "cli", "fn"], [0.55, 0.15, 0.30])[0]
        found.append((kind, rng.randrange(10**6), rng.randrange(10**9)))
    return found


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 500
    seed = int(argv[1]) if len(argv) > 1 else 1
    workers = int(os.environ.get("KJOIN_FUZZ_JOBS", "2"))
    work = jobs(n, seed)
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(case, work, chunksize=4))
    else:
        results = [case(job) for job in work]
    total = Counter(cls for _, cls, *_ in results)
    by_kind = Counter(f"{kind}/{cls}" for kind, cls, *_ in results)
    print("independent", len(results), "cases", json.dumps(dict(sorted(total.items()))))
    print("  by kind", json.dumps(dict(sorted(by_kind.items()))))
    for kind, cls, label, info, _ in results:
        if cls not in ("refused", "ran", "skip"):
            print(f"  {cls} [{kind}] {label}: {info}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
