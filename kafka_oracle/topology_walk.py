"""A second topology generator: a random walk over the whole DSL a topology document can say, judged by the real
Kafka Streams library through :mod:`kafka_oracle.topology_oracle`'s harness (its ``run_batch`` and ``difference``).

It is written apart from ``kafka_oracle/topology_oracle.py``'s generator so as not to share its blind spots: no fixed
shapes. A walk starts from one to three sources (streams, tables, versioned tables, global tables; more when a join
needs one) and takes 2 to 10 steps; each step applies any operation the handle it stands on allows (a stream:
filter, map_values, flat_map_values, flat_map, select_key, merge, repartition, through, to_table, group_by_key,
group_by, joins with a stream, a table or a global table; a table: filter, map_values (materialized or not),
to_stream, joins with a table, foreign-key joins, group_by; a grouped stream: windows of the four kinds, count,
reduce, aggregate; ...), drawing its function, joiner and window per node, and it may write any intermediate result
to a topic of its own. A join's other side is any handle of the right kind, or a new source when there is none. Only
what the judged version has is drawn (:class:`kjoin.semantics.Semantics`).

The events (10 to 300) have equal, out-of-order, late and far-jumping timestamps, tombstones, null keys, empty
strings, unicode, numbers and JSON objects as values, and keys that collide once serialized (``1`` and ``"1"``,
``true`` and ``"true"``); a walk has a few keys or many. A topology runs on 1 to 4 partitions when the harness can
judge it so (it keeps no time, its outputs per event compared as a multiset; or ``task_groups`` cuts it into one
driver per task), else on one.

A sweep's mismatches are sorted into classes (:func:`classify`): keys given as text, numbers and booleans in values
given as text, object joiners replaced by concat; the first change after which kjoin and Kafka agree names the class
(``other`` when none does). A mismatch is shrunk (:func:`shrink`): events, nodes, fields and partitions are taken
away while the same kind of mismatch stays, each round's candidates judged in one JVM.

``python -m kafka_oracle.topology_walk N [--seed S] [--out DIR]`` judges N walks per version (``KJOIN_ORACLE_VERSIONS``
chooses them; default: every judge of topologies) and prints ``kafka-streams <version>: <N> topologies, <M>
mismatches, <S> s``; each mismatch, shrunk (``--sample-classes``: three of each named class, every ``other``), is
printed and written to DIR (default ``topology-walk-mismatches``) as YAML with Kafka's outputs and kjoin's.
``tests/topology_walk_cases/`` keeps the minimal cases found so far (``tests/test_topology_walk.py`` judges each
against Kafka 4.4.0). ``make topology-check`` runs it after ``kafka_oracle.topology_oracle``.

A task that fails on an event is judged by :func:`kafka_oracle.topology_oracle.difference` (kjoin's run must stop
on the same event, after the same outputs) when its exception is one kjoin models (:data:`FAILURES_KJOIN_MODELS`);
any other exception of Kafka's is a ``kafka-error``.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import os
import random
import re
import sys
import time
import traceback
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import yaml

from kjoin.scenario.fields import ScenarioError
from kjoin.semantics import Semantics, parse_semantics
from kjoin.topology.document import TopologyScenario
from kjoin.topology.graph import TopologyError
from kafka_oracle.oracle_check import HarnessError, KafkaVersion
from kafka_oracle.topology_oracle import (
    JUDGES,
    SentBatch,
    difference,
    kjoin_outputs,
    receive_batch,
    send_batch,
    without_full_stops,
    task_groups,
)

__all__ = [
    "Walk",
    "draw",
    "walks",
    "judge",
    "shrink",
    "Verdict",
    "EVENT_ODDITIES",
    "OPERATIONS",
    "main",
]

# -- what a walk may draw ------------------------------------------------------------------------------------------
OPERATIONS = (
    "stream", "table", "versioned-table", "global-table",
    "filter(stream)", "filter(table)", "filter(table, materialized)",
    "map_values(stream)", "map_values(table)", "map_values(table, materialized)",
    "flat_map_values", "flat_map", "select_key", "merge", "repartition", "through", "to_table", "to_stream",
    "group_by_key", "group_by(stream)", "group_by(table)",
    "windowed_by(tumbling)", "windowed_by(hopping)", "windowed_by(session)", "windowed_by(sliding)",
    "count", "reduce", "aggregate", "count(table)", "reduce(table)", "aggregate(table)",
    "count(windowed)", "reduce(windowed)", "aggregate(windowed)",
    "join(stream-stream)", "left_join(stream-stream)", "outer_join(stream-stream)",
    "join(stream-table)", "left_join(stream-table)", "join(stream-versioned-table)",
    "join(stream-global)", "left_join(stream-global)",
    "join(table-table)", "left_join(table-table)", "outer_join(table-table)",
    "join(foreign-key)", "left_join(foreign-key)",
    "join(foreign-key, windowed table)", "left_join(foreign-key, windowed table)",
    "joiner(object)", "joiner(concat)", "to(middle)", "to(end)",
    "filter_not", "peek", "process_values", "process", "split",
    "joiner(keyed)", "joiner(both keys)", "foreign_key(key_or_field)",
    "emit_strategy(on_window_close)", "suppress(window_closes)", "suppress(time_limit)", "select_key(window_key)",
    "suppress(max_bytes)",
    "join(windowed-tables)", "cogroup", "store(aggregate)",
    "store(table)", "store(view)", "store(join)", "store(cogroup)", "as(repartition)", "read(suppressed table)",
    "filter(windowed table)", "filter_not(windowed table)", "view(windowed table, materialized)",
    "filter(windowed stream)", "filter_not(windowed stream)",
    "store(windowed view)", "store(windowed join)",
    "read(suppressed window)", "group_by(suppressed table)", "foreign-key(suppressed table)", "foreign-key(view)",
    "group_by(suppressed window)",
    "unmaterialized(table)",
)  # fmt: skip
"""Every kind of node a walk draws (the coverage test counts them over many walks)."""

EVENT_ODDITIES = (
    "equal-ts", "out-of-order-ts", "late-ts", "far-jump-ts", "tombstone", "null-key", "empty-string", "unicode",
    "number-value", "json-object-value", "colliding-keys", "few-keys", "many-keys",
)  # fmt: skip
"""Every kind of event oddity the events draw."""

_FIELDS = ("f", "g", "left.f", "right.f", "left.left.f", "right.g")
"""Field paths a function reads: a source's JSON values have ``f`` (a key) and ``g``; an object joiner's values
nest them under ``left`` and ``right``."""

_TIME_KEEPING = ("window", "windowed_by", "history_retention_ms", "grace_ms", "suppress", "process_values", "process")
"""Fields of nodes that keep time (stream-stream joins, windowed aggregates, versioned tables, suppressions) or state
per task that TopologyTestDriver's one task would share (a processor's store): on several partitions only a topology
``task_groups`` cuts can be judged."""


@dataclass
class _Handle:
    name: str
    kind: str  # stream | table | global | grouped | grouped-table | windowed
    windowed: bool = False  # keys are Kafka's Windowed (only value operations and sinks may follow)
    versioned: bool = False  # a versioned source table
    rekeyed: bool = False  # a key change no repartition has followed yet
    view: bool = False  # a table's filter or map_values
    suppressed: bool = False  # a window's suppression (read as a stream, by a windowed join, or regrouped)
    held: bool = False  # a time-limit suppression, or a view of one (read as a table, grouped or foreign-key joined)
    windows: Any = None  # a windowed aggregate's windows (another aggregate in the same ones joins it)
    subscribed: bool = False  # a windowed table's foreign-key join, or below one (no window closes: the right table)


_WINDOW_KINDS = {"inactivity_gap_ms": "session", "time_difference_ms": "sliding", "advance_ms": "hopping",
                 "size_ms": "tumbling"}  # fmt: skip
"""A window's kind by the first of its fields found here."""


@dataclass
class Walk:
    """One drawn topology: its document (with ``semantics``, ``partitions`` and ``events``) and the kinds of node
    and event oddities it drew."""

    document: dict[str, Any]
    operations: Counter = field(default_factory=Counter)
    oddities: Counter = field(default_factory=Counter)

    def scenario(self) -> TopologyScenario:
        return TopologyScenario.from_dict(copy.deepcopy(self.document))


class _Walker:
    """Builds one document node by node."""

    def __init__(self, rng: random.Random, semantics: Semantics, version: tuple[int, int, int]) -> None:
        self.rng, self.semantics, self.version = rng, semantics, version
        self.nodes: list[dict[str, Any]] = []
        self.pool: list[_Handle] = []
        self.ops: Counter = Counter()
        self.topics: dict[str, str] = {}  # input topic -> stream | table | global
        self.sinks = 0
        self.joined_rekeyed: set[str] = set()
        self.count = 0

    # -- naming and adding ---------------------------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def add(self, node: dict[str, Any], handle: _Handle | None, op: str) -> _Handle | None:
        self.nodes.append(node)
        self.ops[op] += 1
        if handle is not None:
            self.pool.append(handle)
        return handle

    def source(self, kind: str) -> _Handle:
        topic = self.fresh({"stream": "s", "table": "t", "global": "g"}[kind])
        self.topics[topic] = kind
        if kind == "stream":
            return self.add({"name": topic, "stream": topic}, _Handle(topic, "stream"), "stream")
        if kind == "global":
            return self.add({"name": topic, "global_table": topic}, _Handle(topic, "global"), "global-table")
        node = {"name": topic, "table": topic}
        if self.semantics.versioned_joins and self.rng.random() < 0.25:
            node["history_retention_ms"] = self.rng.choice([0, 20, 100, 5000])
            return self.add(node, _Handle(topic, "table", versioned=True), "versioned-table")
        return self.add(node, _Handle(topic, "table"), "table")

    def of_kind(self, kind: str, *, plain: bool = True) -> list[_Handle]:
        return [h for h in self.pool if h.kind == kind and not (plain and h.windowed)]

    def other(self, kind: str, exclude: _Handle | None = None, **conditions: Any) -> _Handle:
        """A handle of ``kind`` to join with (sometimes a new source)."""
        found = [
            h
            for h in self.of_kind(kind)
            if h is not exclude and all(getattr(h, key) == value for key, value in conditions.items())
        ]
        if found and self.rng.random() < 0.7:
            return self.rng.choice(found)
        if kind == "table" and conditions.get("versioned"):
            while True:
                handle = self.source("table")
                if handle.versioned:
                    return handle
                self.pool.remove(handle)
                self.pool.append(handle)
        return self.source(kind)

    # -- functions -----------------------------------------------------------------------------------------------
    def key_spec(self, keys: list[Any]) -> dict[str, Any]:
        roll = self.rng.random()
        if roll < 0.6:
            return {"field": self.rng.choice(_FIELDS)}
        if roll < 0.75:
            return {"value": True}
        text = [k for k in keys if isinstance(k, str)] or ["k1"]
        return {"map": {self.rng.choice(text): self.rng.choice(text) for _ in range(self.rng.randint(1, 3))}}

    def predicate(self, keys: list[Any]) -> dict[str, Any]:
        if self.rng.random() < 0.3:
            return {"value_not_null": True}
        text = [k for k in keys if isinstance(k, str)] or ["k1"]
        chosen = sorted(set(self.rng.choice(text) for _ in range(self.rng.randint(1, 3))))
        return {self.rng.choice(["key_in", "key_not_in"]): chosen}

    def mapper(self) -> dict[str, Any]:
        if self.rng.random() < 0.1:  # a mapper that throws for some values (the processing exception handler decides)
            return {"fail_on": self.rng.choice(["1", "a", "é", '"v"'])}
        if self.rng.random() < 0.55:
            return {"append": self.rng.choice(["!", "", "·é", "-x"])}
        return {"field": self.rng.choice(_FIELDS)}  # null when the field is absent

    def joiner(self, node: dict[str, Any], keys: int = 0) -> None:
        """An object or concat joiner; a stream's join (``keys`` 1; 2 with a global table) now and then one that
        sees the key (``keyed_concat``, KIP-149) or both keys (``keys_concat``, KIP-1340), where the version has it."""
        roll = self.rng.random()
        if roll < 0.4:
            node["joiner"] = "object"
            self.ops["joiner(object)"] += 1
        elif 0.7 <= roll < 0.85 and keys and self.semantics.value_joiner_with_key:
            both = keys == 2 and self.semantics.global_joiner_with_both_keys and roll < 0.78
            node["joiner"] = "keys_concat" if both else "keyed_concat"
            self.ops["joiner(both keys)" if both else "joiner(keyed)"] += 1
        else:
            if roll < 0.7:
                node["joiner"] = "concat"
            self.ops["joiner(concat)"] += 1

    def window(self) -> dict[str, Any]:
        window = {"before_ms": self.rng.choice([0, 5, 20, 100]), "after_ms": self.rng.choice([0, 5, 20, 100])}
        if self.rng.random() < 0.7:
            window["grace_ms"] = self.rng.choice([0, 10, 50, 1000])
        return window

    def time_windows(self) -> tuple[dict[str, Any], str]:
        kinds = ["tumbling", "hopping", "session"] + (["sliding"] if self.semantics.sliding_windows else [])
        kind = self.rng.choice(kinds)
        grace = self.rng.choice([0, 10, 100])
        if kind == "tumbling":
            return {"size_ms": self.rng.choice([10, 50, 100]), "grace_ms": grace}, kind
        if kind == "hopping":
            size = self.rng.choice([20, 60, 100])
            return {"size_ms": size, "advance_ms": self.rng.choice([5, 10, size // 2]), "grace_ms": grace}, kind
        if kind == "session":
            return {"inactivity_gap_ms": self.rng.choice([5, 30, 100]), "grace_ms": grace}, kind
        return {"time_difference_ms": self.rng.choice([5, 30, 100]), "grace_ms": grace}, kind

    # -- one step ------------------------------------------------------------------------------------------------
    def step(self, at: _Handle, keys: list[Any]) -> _Handle | None:
        """Apply one operation to ``at`` (or, for a windowed result, a value operation); the new handle."""
        rng = self.rng
        name = self.fresh("n")
        if at.windowed:
            if at.kind == "table" and self.windowed_foreign_keys():
                apart = random.Random(repr(rng.getstate()) + "fk")  # drawn apart: every other draw stays as it was
                if apart.random() < 0.15:
                    return self.windowed_foreign_key(name, at, apart)
            if at.kind == "table" and not at.suppressed and self.semantics.suppress_until_window_closes:
                roll = rng.random()
                if roll < 0.25:
                    suppress = self.suppression(windowed=not at.subscribed)
                    node = self.by_bytes({"name": name, "suppress": suppress, "input": at.name})
                    return self.add(node,
                                    _Handle(name, "table", windowed=True, suppressed=True, windows=at.windows,
                                            subscribed=at.subscribed),
                                    f"suppress({'window_closes' if roll < 0.15 else 'time_limit'})")  # fmt: skip
                if roll < 0.35 and at.windows is not None:
                    return self.windowed_join(name, at)
            if at.kind == "stream" and rng.random() < 0.3:  # final results back to their own key, for a join below
                node = {"name": name, "select_key": {"window_key": True}, "input": at.name}
                return self.add(node, _Handle(name, "stream", rekeyed=True), "select_key(window_key)")
            if at.kind == "table" and at.suppressed:
                apart = random.Random(repr(rng.getstate()))  # drawn apart: every other draw stays as it was
                if at.windows is not None and "size_ms" in at.windows and apart.random() < 0.8:
                    # read as a table by a windowed table's join (the suppression's value getter over its buffer
                    # and the window store)
                    self.ops["read(suppressed window)"] += 1
                    return self.windowed_join(name, at)
                if apart.random() < 0.3:  # regrouped by the window's key (Windowed.key()): what it forwards
                    node = {"name": name, "group_by": {"window_key": True}, "input": at.name}
                    self.ops["group_by(suppressed window)"] += 1
                    return self.add(node, _Handle(name, "grouped-table"), "group_by(table)")
                if apart.random() < 0.6:  # a view, through the suppression's value getter
                    self.ops["read(suppressed window)"] += 1
                    return self.windowed_view(name, at, keys, apart)
                return self.add({"name": name, "to_stream": True, "input": at.name},
                                _Handle(name, "stream", windowed=True, windows=at.windows), "to_stream")  # fmt: skip
            if at.kind == "table":
                if rng.random() < 0.5:
                    return self.windowed_view(name, at, keys)
                return self.add({"name": name, "to_stream": True, "input": at.name},
                                _Handle(name, "stream", windowed=True, windows=at.windows), "to_stream")  # fmt: skip
            apart = random.Random(repr(rng.getstate()))  # drawn apart: every other draw stays as it was
            if at.windows is not None and apart.random() < 0.5:  # a stream's predicate over windowed keys
                op = apart.choice(["filter", "filter_not"])
                node = {"name": name, op: self.windowed_predicate(apart, at.windows, keys), "input": at.name}
                return self.add(node, _Handle(name, "stream", windowed=True, windows=at.windows),
                                f"{op}(windowed stream)")  # fmt: skip
            node = {"name": name, "map_values": self.mapper(), "input": at.name}
            return self.add(node, _Handle(name, "stream", windowed=True, windows=at.windows), "map_values(stream)")
        if at.kind == "stream":
            return self.stream_step(name, at, keys)
        if at.kind == "table":
            return self.table_step(name, at, keys)
        if at.kind in ("grouped", "grouped-table", "windowed"):
            return self.aggregate(name, at)
        raise AssertionError(at.kind)

    def custom_step(self, op: str, name: str, at: _Handle, keys: list[Any]) -> _Handle | None:
        """filter_not, peek, process_values/process (the harness's processors), split (the legacy branch before
        Kafka 2.8, and now and then before 4.0): the walk goes on from one branch, the others join the pool."""
        rng, rekeyed = self.rng, at.rekeyed
        if op == "filter_not":
            node = {"name": name, "filter_not": self.predicate(keys), "input": at.name}
            return self.add(node, _Handle(name, "stream", rekeyed=rekeyed), op)
        if op == "peek":
            return self.add(
                {"name": name, "peek": True, "input": at.name}, _Handle(name, "stream", rekeyed=rekeyed), op
            )
        if op in ("process_values", "process"):
            kinds = ["count_per_key", "dedupe"] + (["swap"] if op == "process" else [])
            node = {"name": name, op: {rng.choice(kinds): True}, "input": at.name}
            if rng.random() < 0.3:
                node["store"] = f"{name}-kept"
            return self.add(node, _Handle(name, "stream", rekeyed=rekeyed or op == "process"), op)
        legacy = not self.semantics.split or (not self.semantics.legacy_branch_removed and rng.random() < 0.5)
        predicates = [self.predicate(keys) for _ in range(rng.randint(1, 3))]
        if legacy:
            node = {"name": name, "branch": predicates, "input": at.name}
            names = [f"{name}-predicate-{i}" for i in range(len(predicates))]
        else:
            branches: list[dict[str, Any]] = [
                {"name": rng.choice(["", "x", "é"]) + str(i + 1), "filter": predicate}
                for i, predicate in enumerate(predicates)
            ]
            if rng.random() < 0.6:
                branches.append({"name": "default", "default": True})
            node = {"name": name, "split": branches, "input": at.name}
            names = [name + branch["name"] for branch in branches]
        handles = [_Handle(branch, "stream", rekeyed=rekeyed) for branch in names]
        first = self.add(node, handles[0], "split")
        self.pool.extend(handles[1:])
        return first

    def stream_step(self, name: str, at: _Handle, keys: list[Any]) -> _Handle | None:
        rng = self.rng
        choices = [
            "filter", "map_values", "flat_map_values", "flat_map", "select_key", "merge", "through", "to_table",
            "group_by_key", "group_by", "join-stream", "join-table", "join-global",
            "select_key", "join-stream", "join-table",
        ]  # fmt: skip
        if self.version < (2, 5):
            choices.remove("to_table")  # KStream.toTable: KIP-523, 2.5
        if self.version >= (2, 6):
            choices.append("repartition")
        choices += ["filter_not", "peek"]
        if self.semantics.process_values:
            choices += ["process_values", "process"]
        if self.semantics.split or not self.semantics.legacy_branch_removed:
            choices.append("split")
        op = rng.choice(choices)
        rekeyed = at.rekeyed
        if op in ("filter_not", "peek", "process_values", "process", "split"):
            return self.custom_step(op, name, at, keys)
        if op == "filter":
            node = {"name": name, "filter": self.predicate(keys), "input": at.name}
            return self.add(node, _Handle(name, "stream", rekeyed=rekeyed), "filter(stream)")
        if op == "map_values":
            node = {"name": name, "map_values": self.mapper(), "input": at.name}
            return self.add(node, _Handle(name, "stream", rekeyed=rekeyed), "map_values(stream)")
        if op == "flat_map_values":
            spec = {"split": rng.choice([" ", "-", "é"])} | ({"lower": True} if rng.random() < 0.3 else {})
            node = {"name": name, "flat_map_values": spec, "input": at.name}
            return self.add(node, _Handle(name, "stream", rekeyed=rekeyed), "flat_map_values")
        if op == "flat_map":
            spec = {"split": rng.choice([" ", "-"])} | ({"lower": True} if rng.random() < 0.3 else {})
            node = {"name": name, "flat_map": spec, "input": at.name}
            self.partitioner(node, keys)
            return self.add(node, _Handle(name, "stream", rekeyed=True), "flat_map")
        if op == "select_key":
            node = {"name": name, "select_key": self.key_spec(keys), "input": at.name}
            self.partitioner(node, keys)
            return self.add(node, _Handle(name, "stream", rekeyed=True), "select_key")
        if op == "merge":
            other = self.other("stream", exclude=at)
            sides = [at.name, other.name] if rng.random() < 0.5 else [other.name, at.name]
            handle = _Handle(name, "stream", rekeyed=rekeyed or other.rekeyed)
            return self.add({"name": name, "merge": sides}, handle, "merge")
        if op == "repartition":
            node = {"name": name, "repartition": True, "input": at.name}
            if rng.random() < 0.3:
                node["partitions"] = self.partitions_hint
            return self.add(node, _Handle(name, "stream"), "repartition")
        if op == "through":
            topic = self.fresh("thru")
            node = {"name": name, "through": topic, "input": at.name}
            return self.add(node, _Handle(name, "stream"), "through")
        if op == "to_table":
            return self.add({"name": name, "to_table": True, "input": at.name}, _Handle(name, "table"), "to_table")
        if op == "group_by_key":
            return self.add({"name": name, "group_by_key": True, "input": at.name}, _Handle(name, "grouped"),
                            "group_by_key")  # fmt: skip
        if op == "group_by":
            node = {"name": name, "group_by": self.key_spec(keys), "input": at.name}
            return self.add(node, _Handle(name, "grouped"), "group_by(stream)")
        variant = rng.choice(["join", "left_join"] + (["outer_join"] if op == "join-stream" else []))
        if op == "join-global":
            other = self.other("global")
            node = {"name": name, variant: [at.name, other.name]}
            if rng.random() < 0.5:
                node["key_selector"] = {"field": rng.choice(_FIELDS)}
            self.joiner(node, keys=2)
            return self.add(node, _Handle(name, "stream", rekeyed=rekeyed), f"{variant}(stream-global)")
        if rekeyed and not self.semantics.rekeyed_stream_joined_twice and at.name in self.joined_rekeyed:
            return self.add({"name": name, "repartition": True, "input": at.name}, _Handle(name, "stream"),
                            "repartition") if self.version >= (2, 6) else None  # fmt: skip
        if rekeyed:
            self.joined_rekeyed.add(at.name)
        if op == "join-table":
            versioned = self.semantics.versioned_joins and rng.random() < 0.3
            other = self.other("table", versioned=True) if versioned else self.other("table")
            node = {"name": name, variant: [at.name, other.name]}
            label = f"{variant}(stream-table)"
            if other.versioned and self.semantics.stream_table_grace and rng.random() < 0.5:
                history = next(n for n in self.nodes if n["name"] == other.name)["history_retention_ms"]
                node["grace_ms"] = rng.choice([g for g in (0, 10, 100) if g <= history])
            if other.versioned and variant == "join":
                label = "join(stream-versioned-table)"
            self.joiner(node, keys=1)
            return self.add(node, _Handle(name, "stream"), label)
        other = self.other("stream", exclude=None if rng.random() < 0.1 else at)
        if other.rekeyed:
            if not self.semantics.rekeyed_stream_joined_twice and other.name in self.joined_rekeyed:
                other = self.source("stream")
            self.joined_rekeyed.add(other.name)
        node = {"name": name, variant: [at.name, other.name], "window": self.window()}
        self.joiner(node, keys=1)
        return self.add(node, _Handle(name, "stream"), f"{variant}(stream-stream)")

    def partitioner(self, node: dict[str, Any], keys: list[Any]) -> None:
        """A placement by key (one partition only: on several the harness's one driver could not judge it)."""
        if self.partitions_hint == 1 and self.rng.random() < 0.1:
            text = [k for k in keys if isinstance(k, str)] or ["k1"]
            node["partitioner"] = {"map": {self.rng.choice(text): 0}}

    def table_step(self, name: str, at: _Handle, keys: list[Any]) -> _Handle | None:
        rng = self.rng
        if at.suppressed:  # read as a stream only
            return self.add({"name": name, "to_stream": True, "input": at.name}, _Handle(name, "stream"), "to_stream")
        if self.semantics.suppress_until_window_closes and not at.versioned and rng.random() < 0.08:  # a time limit
            node = self.by_bytes({"name": name, "suppress": self.suppression(False), "input": at.name})
            return self.add(node, _Handle(name, "table", held=True), "suppress(time_limit)")
        choices = ["filter", "map_values", "to_stream", "join-table", "join-table", "group_by"]
        if self.semantics.foreign_key_joins:
            choices += ["foreign-key", "foreign-key"]
        if at.versioned:  # a versioned table's filter or map_values: kjoin refuses it (not modelled)
            choices = [choice for choice in choices if choice not in ("filter", "map_values")]
        op = rng.choice(choices)
        if at.held and op in ("filter", "map_values", "join-table"):  # through the suppression's value getter
            self.ops["read(suppressed table)"] += 1
        if at.held and op == "group_by":  # what the suppression forwards, Change(new, old)
            self.ops["group_by(suppressed table)"] += 1
        if op in ("filter", "map_values"):
            spec = self.predicate(keys) if op == "filter" else self.mapper()
            node = {"name": name, op: spec, "input": at.name}
            label = f"{op}(table)"
            if rng.random() < 0.35:
                node["materialized"] = True
                label = f"{op}(table, materialized)"
            return self.add(node, _Handle(name, "table", view=True, held=at.held), label)
        if op == "to_stream":
            return self.add({"name": name, "to_stream": True, "input": at.name}, _Handle(name, "stream"), "to_stream")
        if op == "group_by":
            if at.versioned and not self.semantics.versioned_joins:
                return None
            node = {"name": name, "group_by": {"field": rng.choice(_FIELDS)}, "input": at.name}
            return self.add(node, _Handle(name, "grouped-table"), "group_by(table)")
        if op == "foreign-key":
            others = [h for h in self.of_kind("table") if h is not at]
            other = rng.choice(others) if others and rng.random() < 0.6 else self.source("table")
            if at.held or other.held:  # the subscriptions follow its evictions; the joins ask its value getter
                self.ops["foreign-key(suppressed table)"] += 1
            if at.view or other.view:  # the subscriptions follow its Change(new, old); the joins ask its value getter
                self.ops["foreign-key(view)"] += 1
            variant = rng.choice(["join", "left_join"])
            node = {"name": name, variant: [at.name, other.name], "foreign_key": rng.choice(_FIELDS)}
            if self.semantics.fk_extractor_with_key and rng.random() < 0.3:  # KIP-1104's BiFunction
                node["foreign_key"] = {"key_or_field": node["foreign_key"]}
                self.ops["foreign_key(key_or_field)"] += 1
            self.joiner(node)
            return self.add(node, _Handle(name, "table"), f"{variant}(foreign-key)")
        variant = rng.choice(["join", "left_join", "outer_join"])
        other = self.other("table", exclude=None if rng.random() < 0.1 else at)
        sides = [at.name, other.name] if rng.random() < 0.75 else [other.name, at.name]
        node = {"name": name, variant: sides}
        self.joiner(node)
        return self.add(node, _Handle(name, "table"), f"{variant}(table-table)")

    def aggregate(self, name: str, at: _Handle) -> _Handle:
        rng = self.rng
        windows = None
        if at.kind == "grouped" and rng.random() < 0.45:
            windows, kind = self.time_windows()
            node = {"name": name, "windowed_by": windows, "input": at.name}
            self.add(node, _Handle(name, "windowed"), f"windowed_by({kind})")
            if self.semantics.emit_on_window_close and rng.random() < 0.2:  # KIP-825
                node["emit_strategy"] = "on_window_close"
                self.ops["emit_strategy(on_window_close)"] += 1
            at, name = self.pool[-1], self.fresh("n")
        elif at.kind == "grouped" and self.semantics.cogroup and rng.random() < 0.25:
            return self.cogroup(name, at)
        kind = rng.choice(["count", "reduce", "aggregate"])
        node = {"name": name, kind: True if kind == "count" else "concat", "input": at.name}
        if rng.random() < 0.3:  # Materialized.as: names the store (and an unnamed grouping's repartition topic)
            node["store"] = f"{name}-store"
            self.ops["store(aggregate)"] += 1
        label = {"grouped": kind, "grouped-table": f"{kind}(table)", "windowed": f"{kind}(windowed)"}[at.kind]
        return self.add(node, _Handle(name, "table", windowed=at.kind == "windowed", windows=windows), label)

    def cogroup(self, name: str, at: _Handle) -> _Handle:
        """KIP-150: ``at`` cogrouped with one or two streams grouped by their own key (none re-keyed: a document's
        groupings are unnamed, and two re-keyed ones would share the store's repartition topic name)."""
        grouped = [at.name]
        for _ in range(self.rng.randint(1, 2)):
            stream = self.other("stream", rekeyed=False)
            grouped.append(self.fresh("n"))
            self.add({"name": grouped[-1], "group_by_key": True, "input": stream.name}, None, "group_by_key")
        return self.add({"name": name, "cogroup": grouped}, _Handle(name, "table"), "cogroup")

    def suppression(self, windowed: bool) -> dict[str, Any]:
        """A suppression's options: until its window closes (a windowed table) or a time limit, a buffer unbounded or
        bounded (never one that fills with shut_down: the task would stop)."""
        rng = self.rng
        if windowed and rng.random() < 0.6:
            return {"until": "window_closes"} | ({"max_records": 10_000} if rng.random() < 0.2 else {})
        options: dict[str, Any] = {"until": "time_limit", "time_limit_ms": rng.choice([0, 5, 30, 100])}
        if rng.random() < 0.5:
            options["max_records"] = rng.choice([1, 2, 5])
        return options

    def by_bytes(self, node: dict[str, Any]) -> dict[str, Any]:
        """Now and then a suppression bounded by bytes too (``BufferConfig.maxBytes``, drawn apart from the walk's
        own draws): around one to a few entries' size, so that it fills; ``shut_down`` stops the task on the same
        event in kjoin and in Kafka. Left out where kjoin refuses it (records that reach it from a repartition topic
        Kafka names with its counter)."""
        rng = random.Random(repr(self.rng.getstate()))
        if rng.random() < 0.6:
            return node
        options = {**node["suppress"], "max_bytes": rng.choice([30, 50, 80, 120, 200, 500])}
        if options["until"] == "window_closes" or rng.random() < 0.25:
            options["when_full"] = "shut_down"
        bounded = {**node, "suppress": options}
        try:
            TopologyScenario.from_dict(
                {"semantics": str(self.semantics), "topology": [*self.nodes, bounded], "events": []}
            )
        except (ScenarioError, TopologyError):
            return node
        self.ops["suppress(max_bytes)"] += 1
        return bounded

    def windowed_view(self, name: str, at: _Handle, keys: list[Any], apart: random.Random | None = None) -> _Handle:
        """A view of the windowed table ``at`` (a ``KTable<Windowed<K>, V>``): a mapValues, or (drawn apart, so that
        the walk's own draws stay as they were) a filter or filterNot whose keys are windowed keys' text
        (``[key@start/end]``); materialized now and then (a ``KeyValueStore`` of ``Windowed`` keys). It keeps
        ``at``'s windows, so a windowed table's join may read it. ``apart``: the draws to take its own from."""
        apart = apart or random.Random(repr(self.rng.getstate()))
        op = apart.choice(["map_values", "map_values", "filter", "filter_not"])
        if op == "map_values" or at.windows is None:
            node, label = {"name": name, "map_values": self.mapper(), "input": at.name}, "map_values(table)"
        else:
            predicate = self.windowed_predicate(apart, at.windows, keys)
            node, label = {"name": name, op: predicate, "input": at.name}, f"{op}(windowed table)"
        if apart.random() < 0.35:
            node["materialized"] = True
            self.ops["view(windowed table, materialized)"] += 1
        handle = _Handle(name, "table", windowed=True, view=True, windows=at.windows, subscribed=at.subscribed)
        return self.add(node, handle, label)

    def windowed_predicate(self, rng: random.Random, windows: dict[str, Any], keys: list[Any]) -> dict[str, Any]:
        """A predicate over windowed keys: their text ``[key@start/end]`` (a source's key, a window near where the
        events' timestamps start), or value_not_null."""
        if rng.random() < 0.2:
            return {"value_not_null": True}
        text = [k for k in keys if isinstance(k, str)] or ["k1"]
        texts = set()
        for _ in range(rng.randint(1, 3)):
            start = rng.choice([0, 1000, 1_000_000]) + rng.randint(0, 80)
            if "size_ms" in windows:
                start -= start % windows.get("advance_ms", windows["size_ms"])
                end = start + windows["size_ms"]
            else:
                end = start + rng.randint(0, windows.get("inactivity_gap_ms", windows.get("time_difference_ms", 1)))
            texts.add(f"[{rng.choice(text)}@{start}/{end}]")
        return {rng.choice(["key_in", "key_not_in"]): sorted(texts)}

    def windowed_join(self, name: str, at: _Handle) -> _Handle | None:
        """``at`` joined with a new stream counted in the same windows: two windowed tables join by window."""
        source, grouped, windows = self.source("stream"), self.fresh("n"), self.fresh("n")
        self.add({"name": grouped, "group_by_key": True, "input": source.name}, None, "group_by_key")
        kind = next(k for f, k in _WINDOW_KINDS.items() if f in at.windows)
        self.add({"name": windows, "windowed_by": at.windows, "input": grouped}, None, f"windowed_by({kind})")
        other = self.fresh("n")
        self.add({"name": other, "count": True, "input": windows}, None, "count(windowed)")
        variant = self.rng.choice(["join", "left_join", "outer_join"])
        node = {"name": name, variant: [at.name, other] if self.rng.random() < 0.5 else [other, at.name]}
        return self.add(node, _Handle(name, "table", windowed=True, subscribed=at.subscribed), "join(windowed-tables)")

    def windowed_foreign_keys(self) -> bool:
        """May a windowed table subscribe by a foreign key: on one partition from 2.4, on several from 3.3, where a
        response goes back to its row's partition (before, to its windowed key's: kjoin refuses it, KAFKA-13769)."""
        semantics = self.semantics
        return semantics.foreign_key_joins and (
            self.partitions_hint == 1 or semantics.fk_responses_to_primary_partition
        )

    def windowed_foreign_key(self, name: str, at: _Handle, rng: random.Random) -> _Handle:
        """``at``, a windowed table, joined by a foreign key of its values with a table: each window's row subscribes,
        and the result keeps the ``Windowed`` keys (a foreign key's subscribers in their windowed serde's order)."""
        other = self.rng.choice(self.of_kind("table") or [self.source("table")])
        variant = rng.choice(["join", "left_join"])
        node = {"name": name, variant: [at.name, other.name], "foreign_key": rng.choice(_FIELDS)}
        if self.semantics.fk_extractor_with_key and rng.random() < 0.3:  # KIP-1104's BiFunction reads Windowed<K>
            node["foreign_key"] = {"key_or_field": node["foreign_key"]}
            self.ops["foreign_key(key_or_field)"] += 1
        self.joiner(node)
        handle = _Handle(name, "table", windowed=True, windows=at.windows, subscribed=True)
        return self.add(node, handle, f"{variant}(foreign-key, windowed table)")

    def sink(self, at: _Handle, where: str) -> None:
        if at.kind not in ("stream", "table"):
            return
        self.sinks += 1
        topic = f"out{self.sinks}"
        self.add({"name": f"to-{topic}", "to": topic, "input": at.name}, None, f"to({where})")

    def name_stores(self) -> None:
        """Name some stores and repartition topics as applications do, which changes the names ``describe()`` lists
        (and whether a filter below a foreign-key join's named result gets old values): ``store`` (Materialized.as,
        StreamJoined.withStoreName) on a source table, a table's filter or map_values, a join and a cogroup; ``as``
        (Repartitioned.as) on a repartition. A name kjoin (as Kafka) refuses, a stream's join with a table, is left
        out by building the document with it. A windowed table's view or join names a store of ``Windowed`` keys. A
        document kjoin refuses (a branch name Kafka's Named rejects) stays as it is."""

        def builds() -> bool:
            try:
                TopologyScenario.from_dict({"semantics": str(self.semantics), "topology": self.nodes, "events": []})
            except (ScenarioError, TopologyError):
                return False
            return True

        if not builds():
            return
        handles = {handle.name: handle for handle in self.pool}
        for node in self.nodes:
            handle = handles.get(node["name"])
            skip = self.rng.random() < (0.3 if handle is not None and handle.windowed else 0.7)  # those are rare
            if skip or handle is None or handle.versioned:
                continue
            if "repartition" in node:
                field, label = "as", "as(repartition)"
            elif "table" in node:
                field, label = "store", "store(table)"
            elif handle.view:
                field, label = "store", "store(windowed view)" if handle.windowed else "store(view)"
            elif "cogroup" in node:
                field, label = "store", "store(cogroup)"
            elif any(variant in node for variant in ("join", "left_join", "outer_join")):
                field, label = "store", "store(windowed join)" if handle.windowed else "store(join)"
            else:
                continue
            node[field] = f"{node['name']}-{'topic' if field == 'as' else 'store'}"
            if builds():
                self.ops[label] += 1
            else:
                del node[field]

    def unmaterialize_tables(self) -> None:
        """Build some source tables as ``builder.table(topic, consumed)`` alone (``materialized: false``): with the
        default (a store the harness names) and ``store: name`` (:meth:`name_stores`), the three forms an
        application writes. Without ``Materialized`` a table keeps a store only when a node reads it, which decides
        where KIP-557 drops idempotent updates and whether a filter below forwards tombstones for keys it never
        held (KAFKA-10077). A versioned table is materialized through its versioned store, a named one by its
        name: both stay as they are. The forms come from a random stream of their own, seeded by the topology, so
        a seed's walks and events stay what they were and only the tables' forms are added."""
        forms = random.Random(json.dumps(self.nodes, sort_keys=True))
        for node in self.nodes:
            if "table" in node and "store" not in node and "history_retention_ms" not in node:
                if forms.random() < 0.4:
                    node["materialized"] = False
                    self.ops["unmaterialized(table)"] += 1

    partitions_hint = 1


def _version_numbers(version: str) -> tuple[int, int, int]:
    parts = [int(part) for part in version.split(".")]
    return (parts + [0, 0, 0])[0], (parts + [0, 0, 0])[1], (parts + [0, 0, 0])[2]


def draw(rng: random.Random, version: str) -> Walk:
    """One random walk over the DSL, for Kafka ``version`` (only what it has), with its events."""
    semantics = parse_semantics(version)
    walker = _Walker(rng, semantics, _version_numbers(version))
    walker.partitions_hint = rng.choice([1, 1, 2, 3, 4])
    keys, key_oddities = _key_pool(rng)
    for _ in range(rng.randint(1, 3)):
        walker.source(rng.choice(["stream", "stream", "table", "global"]))
    if not walker.of_kind("stream") and not walker.of_kind("table"):
        walker.source(rng.choice(["stream", "table"]))
    at = rng.choice([h for h in walker.pool if h.kind != "global"])
    for _ in range(rng.randint(2, 10)):
        if rng.random() < 0.2:  # jump elsewhere in the walk: a branch
            at = rng.choice([h for h in walker.pool if h.kind != "global"])
        nxt = walker.step(at, keys)
        if nxt is None:
            continue
        at = nxt
        if rng.random() < 0.25:
            walker.sink(at, "middle")
    while at.kind not in ("stream", "table"):
        at = walker.step(at, keys) or at
    walker.sink(at, "end")
    walker.name_stores()
    walker.unmaterialize_tables()
    document: dict[str, Any] = {
        "semantics": version,
        "partitions": walker.partitions_hint,
        "topology": walker.nodes,
    }
    if semantics.processing_exception_handler and rng.random() < 0.5:
        document["processing_exception_handler"] = "continue"
        without_full_stops(walker.nodes)
    if semantics.dead_letter_queue and rng.random() < 0.5:
        document["dead_letter_queue"] = "walk-dead-letters"
    events, oddities = _events(rng, walker.topics, keys)
    oddities.update(key_oddities)
    document["events"] = events
    return Walk(document, walker.ops, oddities)


# -- events --------------------------------------------------------------------------------------------------------
_COLLIDING = [1, "1", True, "true", 0, "0", False, "false"]
_ODD_KEYS = ["", "ü", "k 1", "ключ", "😀"]


def _key_pool(rng: random.Random) -> tuple[list[Any], Counter]:
    oddities: Counter = Counter()
    if rng.random() < 0.4:
        size = rng.randint(1, 3)
        oddities["few-keys"] += 1
    else:
        size = rng.randint(6, 40)
        oddities["many-keys"] += 1
    keys: list[Any] = [f"k{i}" for i in range(1, size + 1)]
    if rng.random() < 0.5:
        pair = rng.choice([(1, "1"), (True, "true"), (0, "0"), (False, "false")])
        keys += list(pair)
    if rng.random() < 0.4:
        keys += rng.sample(_ODD_KEYS, rng.randint(1, 2))
    rng.shuffle(keys)
    return keys[: max(size, 1) + 4], oddities


def _value(rng: random.Random, keys: list[Any], oddities: Counter) -> Any:
    roll = rng.random()
    if roll < 0.12:
        oddities["tombstone"] += 1
        return None
    if roll < 0.18:
        oddities["empty-string"] += 1
        return ""
    if roll < 0.25:
        oddities["unicode"] += 1
        return rng.choice(["é", "Ünïcödé ✓", "日本 語", "😀-x"])
    if roll < 0.33:
        oddities["number-value"] += 1
        return rng.choice([0, 7, -3, 2.5, 100000])
    if roll < 0.65:
        oddities["json-object-value"] += 1
        value: dict[str, Any] = {}
        if rng.random() < 0.85:
            value["f"] = rng.choice(keys + [None])
        if rng.random() < 0.5:
            value["g"] = rng.choice(["x", "y", 3, "z w"])
        return value
    return rng.choice(["A", "B", "C", "a b", "A-B", "x y z", "Q"])


def _events(rng: random.Random, topics: dict[str, str], keys: list[Any]) -> tuple[list[dict[str, Any]], Counter]:
    oddities: Counter = Counter()
    count = rng.choice([rng.randint(10, 40), rng.randint(10, 80), rng.randint(40, 300)])
    ts = rng.choice([0, 1000, 1_000_000])
    names = sorted(topics)
    events = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.2:
            oddities["equal-ts"] += 1
        elif roll < 0.6:
            ts += rng.randint(1, 40)
        elif roll < 0.75:
            oddities["out-of-order-ts"] += 1
            ts = max(0, ts - rng.randint(1, 30))
        elif roll < 0.88:
            oddities["late-ts"] += 1
            ts = max(0, ts - rng.randint(200, 5000))
        elif roll < 0.95:
            oddities["far-jump-ts"] += 1
            ts += rng.randint(5000, 200_000)
        else:
            ts += rng.randint(1, 5)
        key = rng.choice(keys)
        if rng.random() < 0.05:
            key = None
            oddities["null-key"] += 1
        if not isinstance(key, str) and key is not None:
            oddities["colliding-keys"] += 1
        events.append({"topic": rng.choice(names), "key": key, "value": _value(rng, keys, oddities), "ts": ts})
    return events, oddities


# -- judging -------------------------------------------------------------------------------------------------------
@dataclass
class Verdict:
    """What one walk came to on one version: ``kind`` None (agreed), ``describe``, ``outputs``, ``kafka-error``
    (Kafka refused what kjoin ran), ``crash`` (kjoin raised something other than its own error) or ``refused``
    (kjoin refused the document: not judged); ``text`` the first difference."""

    kind: str | None
    text: str = ""
    kafka: Any = None
    kjoin: Any = None


def _judgeable(walk: Walk) -> Walk:
    """The walk on as many partitions as the harness can judge it: one, unless it keeps no time and chains no
    foreign-key joins (compared as a multiset per event) or ``task_groups`` cuts it."""
    doc = walk.document
    if doc.get("partitions", 1) == 1 or not (_keeps_time(doc) or _chains_foreign_keys(doc)):
        return walk
    try:
        scenario = _prepare(doc)[0]
        if scenario is not None and task_groups(scenario) is not None:
            return walk
    except Exception:  # noqa: BLE001 - a crash shows again on one partition, where it is judged
        pass
    doc = {**doc, "partitions": 1}
    for node in doc["topology"]:
        node.pop("partitions", None)
    return Walk(doc, walk.operations, walk.oddities)


_PREPARED: OrderedDict[str, tuple[TopologyScenario | None, Verdict | None]] = OrderedDict()
"""The last documents :func:`_prepare` read, by their ``repr`` (which tells ``1``, ``"1"`` and ``True`` apart): a
walk is read when drawn, when judged and when shrunk, and reading it (checking the document, building the topology)
costs as much as running it."""


def _prepare(document: dict[str, Any]) -> tuple[TopologyScenario | None, Verdict | None]:
    """The scenario of a document, or the verdict that stops it (kjoin refused it, or crashed building it); the same
    scenario object for an equal document among the last 256 read (its runs are kept by
    :func:`kafka_oracle.topology_oracle.kjoin_run`)."""
    key = repr(document)
    found = _PREPARED.get(key)
    if found is None:
        found = _PREPARED[key] = _read(document)
        while len(_PREPARED) > 256:
            _PREPARED.popitem(last=False)
    _PREPARED.move_to_end(key)
    return found


def _read(document: dict[str, Any]) -> tuple[TopologyScenario | None, Verdict | None]:
    try:
        scenario = TopologyScenario.from_dict(copy.deepcopy(document))
        scenario.topology.to_dict()  # what the harness sends to Kafka
        if _keeps_time(document) and scenario.topology.partitions > 1 and task_groups(scenario) is None:
            return None, Verdict("refused", "keeps time on several partitions and task_groups cannot cut it")
        return scenario, None
    except ScenarioError as error:
        return None, Verdict("refused", str(error))
    except Exception:  # noqa: BLE001 - kjoin's crash is the finding
        return None, Verdict("crash", _crash_text())


def _chains_foreign_keys(document: dict[str, Any]) -> bool:
    """A foreign-key join downstream of another. Its hash check drops a response as stale or not depending on whether
    the other join's response reached the row first, an order that differs between kjoin's several partitions and the
    driver's one: not only the order of one event's outputs but how many there are, which a multiset cannot judge."""
    nodes = {node["name"]: node for node in document["topology"]}

    def parents(node: dict[str, Any]) -> set[str]:
        found = set()
        for name, value in node.items():
            for item in value if isinstance(value, list) else [value]:
                if name != "name" and isinstance(item, str) and item in nodes and item != node["name"]:
                    found.add(item)
        return found

    def ancestors(name: str, seen: set[str]) -> set[str]:
        for parent in parents(nodes[name]) - seen:
            seen.add(parent)
            ancestors(parent, seen)
        return seen

    foreign = {name for name, node in nodes.items() if "foreign_key" in node}
    return any(foreign & ancestors(name, set()) for name in foreign)


def _keeps_time(document: dict[str, Any]) -> bool:
    return any(key in node for node in document["topology"] for key in _TIME_KEEPING)


def _crash_text() -> str:
    lines = traceback.format_exc().strip().splitlines()
    return "\n".join(lines[-6:])


def _signature(verdict: Verdict) -> str:
    """What a shrunk case must keep: the kind of difference, and for a crash its exception and where it rose."""
    if verdict.kind != "crash":
        return str(verdict.kind)
    lines = verdict.text.splitlines()
    where = next((line.strip() for line in reversed(lines) if line.strip().startswith("File ")), "")
    return f"crash {lines[-1].split(':')[0]} {where}"


def judge(version: str, documents: list[dict[str, Any]]) -> list[Verdict]:
    """Each document's verdict on Kafka ``version`` (the version's kept-up JVM)."""
    return _finish(_start(version, documents))


@dataclass
class _Judging:
    """Documents sent to Kafka and not yet compared (:func:`_start`, :func:`_finish`)."""

    version: str
    verdicts: list[Verdict | None]  # a document's verdict when it stopped before Kafka (refused, crashed)
    scenarios: list[TopologyScenario]
    sent: SentBatch | None


def _start(version: str, documents: list[dict[str, Any]]) -> _Judging:
    """Read the documents and send what kjoin runs to Kafka, without waiting for its answers."""
    verdicts: list[Verdict | None] = []
    scenarios: list[TopologyScenario] = []
    for document in documents:
        scenario, verdict = _prepare(document)
        verdicts.append(verdict)
        if scenario is not None:
            scenarios.append(scenario)
    return _Judging(version, verdicts, scenarios, send_batch(version, scenarios) if scenarios else None)


def _finish(judging: _Judging) -> list[Verdict]:
    """Kafka's answers to the documents :func:`_start` sent, compared with kjoin's runs."""
    answers = iter(receive_batch(judging.sent) if judging.sent is not None else [])
    found = iter(judging.scenarios)
    result: list[Verdict] = []
    for verdict in judging.verdicts:
        if verdict is not None:
            result.append(verdict)
            continue
        scenario, answer = next(found), next(answers)
        result.append(_compare(scenario, answer, judging.version))
    return result


FAILURES_KJOIN_MODELS = (
    "IllegalArgumentException: fail_on",  # the vocabulary's throwing mapper
    "NullPointerException: key cannot be null",  # a null key in a left stream-table join's grace buffer (3.7+)
    "buffer exceeded its max capacity",  # a full suppression buffer that shuts down (SuppressionBufferFull)
)
"""The exceptions of a failed task that kjoin's run reproduces as its ``ProcessingError`` (docs/semantics.md
section 10, item 18)."""


def _compare(scenario: TopologyScenario, answer: dict[str, Any], version: str) -> Verdict:
    if "error" in answer:
        if not any(failure in answer["error"] for failure in FAILURES_KJOIN_MODELS):  # those: difference() judges
            return Verdict("kafka-error", f"Kafka {version} raised {answer['error']}", answer)
    try:
        text = difference(scenario, answer, version)
    except Exception:  # noqa: BLE001 - kjoin's crash while running is the finding
        return Verdict("crash", _crash_text(), answer)
    if text is None:
        return Verdict(None)
    kind = "describe" if text.startswith("Topology.describe()") else "outputs"
    try:
        mine = kjoin_outputs(scenario)
    except Exception:  # noqa: BLE001
        mine = None
    return Verdict(kind, text, answer, mine)


# -- shrinking -----------------------------------------------------------------------------------------------------
def _consumers(nodes: list[dict[str, Any]], name: str) -> list[int]:
    return [i for i, node in enumerate(nodes) if node.get("input") == name or name in _sides(node)]


def _sides(node: dict[str, Any]) -> list[str]:
    for op in ("join", "left_join", "outer_join", "merge"):
        if op in node:
            return list(node[op])
    return []


def _rename(node: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    node = copy.deepcopy(node)
    if node.get("input") == old:
        node["input"] = new
    for op in ("join", "left_join", "outer_join", "merge"):
        if op in node:
            node[op] = [new if side == old else side for side in node[op]]
    return node


def _sources(node: dict[str, Any]) -> str | None:
    for op in ("stream", "table", "global_table"):
        if op in node:
            return node[op]
    return None


def _without_node(document: dict[str, Any], index: int, replacement: str | None) -> dict[str, Any] | None:
    """The document with node ``index`` removed, its readers reading ``replacement`` instead (None: it has none)."""
    nodes = document["topology"]
    node = nodes[index]
    readers = _consumers(nodes, node["name"])
    if readers and replacement is None:
        return None
    kept = [_rename(other, node["name"], replacement) if replacement else other for i, other in enumerate(nodes)
            if i != index]  # fmt: skip
    if not any("to" in other for other in kept):
        return None
    result = {**document, "topology": kept}
    topic = _sources(node)
    if topic is not None:
        result["events"] = [event for event in document["events"] if event["topic"] != topic]
    return result


def _node_candidates(document: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = document["topology"]
    out: list[dict[str, Any]] = []
    for index in range(len(nodes) - 1, -1, -1):
        node = nodes[index]
        options: list[str | None] = [None]
        if node.get("input"):
            options.append(node["input"])
        options += _sides(node)
        for replacement in options:
            candidate = _without_node(document, index, replacement)
            if candidate is not None:
                out.append(candidate)
    return out


_SIMPLER_FIELDS = ("joiner", "materialized", "history_retention_ms", "grace_ms", "key_selector", "partitioner",
                   "partitions")  # fmt: skip


def _field_candidates(document: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    if document.get("partitions", 1) > 1:
        out.append({**document, "partitions": document["partitions"] - 1})
    for index, node in enumerate(document["topology"]):
        for name in _SIMPLER_FIELDS:
            if name in node:
                nodes = list(document["topology"])
                nodes[index] = {key: value for key, value in node.items() if key != name}
                out.append({**document, "topology": nodes})
    return out


def _event_candidates(document: dict[str, Any], chunks: int) -> list[dict[str, Any]]:
    events = document["events"]
    size = max(1, -(-len(events) // chunks))
    return [{**document, "events": events[:start] + events[start + size :]} for start in range(0, len(events), size)]


def _used_topics(document: dict[str, Any]) -> dict[str, Any]:
    topics = {_sources(node) for node in document["topology"]}
    return {**document, "events": [event for event in document["events"] if event["topic"] in topics]}


def shrink(
    version: str,
    document: dict[str, Any],
    signature: str,
    judge_batch: Callable[..., list[Verdict]] | None = None,
    seconds: float = 180.0,
) -> tuple[dict[str, Any], Verdict]:
    """The smallest document found whose verdict on ``version`` still has ``signature`` (:func:`_signature`), and
    that verdict: events are cut
    in halves, then smaller chunks, down to one at a time; nodes are removed (their readers rewired to an input);
    fields and partitions are taken away; each round's candidates are judged together, for at most ``seconds``."""
    judge_batch = judge_batch or judge
    ends = time.monotonic() + seconds
    current = _used_topics(document)
    best = judge_batch(version, [current])[0]
    if _signature(best) != signature:
        return document, best
    first = re.match(r"event (\d+) ", best.text)
    if first:  # what follows the first differing event cannot matter to it
        cut = {**current, "events": current["events"][: int(first.group(1)) + 1]}
        verdict = judge_batch(version, [cut])[0]
        if _signature(verdict) == signature:
            current, best = cut, verdict
    while time.monotonic() < ends:
        progressed = False
        chunks = 2  # events first: every later candidate runs on fewer
        while len(current["events"]) > 1 and chunks <= len(current["events"]) and time.monotonic() < ends:
            candidates = _event_candidates(current, chunks)
            verdicts = judge_batch(version, candidates)
            hit = next((i for i, v in enumerate(verdicts) if _signature(v) == signature), None)
            if hit is not None:
                current, best, progressed = candidates[hit], verdicts[hit], True
                chunks = max(2, chunks - 1)
                continue
            if chunks >= len(current["events"]):
                break
            chunks = min(len(current["events"]), chunks * 2)
        for make in (_node_candidates, _field_candidates):
            candidates = make(current)
            for start in range(0, len(candidates), 24):
                if time.monotonic() >= ends:
                    break
                part = candidates[start : start + 24]
                verdicts = judge_batch(version, part)
                hit = next((i for i, v in enumerate(verdicts) if _signature(v) == signature), None)
                if hit is not None:
                    current, best, progressed = part[hit], verdicts[hit], True
                    break
        if not progressed:
            break
    return current, best


# -- the sweep -----------------------------------------------------------------------------------------------------
def walks(count: int, seed: int, version: str) -> list[Walk]:
    """``count`` walks for ``version``, each judgeable as drawn (kjoin refuses none of them)."""
    return list(itertools.islice(_walk_stream(seed, version), count))


def _walk_stream(seed: int, version: str) -> Iterator[Walk]:
    """The walks of :func:`walks`, one at a time (a sweep judges each batch while the scenarios it read are kept)."""
    rng = random.Random(f"{seed}-{version}")
    while True:
        walk = _judgeable(draw(rng, version))
        verdict = _prepare(walk.document)[1]
        if verdict is not None and verdict.kind == "refused":
            continue  # kjoin's own error: a combination it does not model
        yield walk


def coverage(count: int, seed: int, version: str) -> tuple[Counter, Counter]:
    """How often each operation and each event oddity appears in ``count`` drawn walks (kjoin refusing none)."""
    operations: Counter = Counter()
    oddities: Counter = Counter()
    for walk in walks(count, seed, version):
        operations.update(walk.operations)
        oddities.update(walk.oddities)
    return operations, oddities


def _textual(value: Any) -> Any:
    """A value with every number and boolean inside it turned into its text (what the String serde would carry)."""
    if isinstance(value, dict):
        return {key: _textual(item) for key, item in value.items()}
    if isinstance(value, (bool, int, float)):
        return json.dumps(value)
    return value


_SURGERIES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "key types": lambda doc: {
        **doc,
        "events": [{**e, "key": e["key"] if e["key"] is None else _textual(e["key"])} for e in doc["events"]],
    },
    "value types": lambda doc: {**doc, "events": [{**e, "value": _textual(e["value"])} for e in doc["events"]]},
    "object joiners": lambda doc: {
        **doc,
        "topology": [{k: v for k, v in n.items() if not (k == "joiner" and v == "object")} for n in doc["topology"]],
    },
}
"""Changes that name a class of mismatch when they make it go away: keys given as text (``1`` and ``"1"`` no longer
differ in Python), numbers and booleans in values given as text, object joiners replaced by concat."""


def classify(version: str, documents: list[dict[str, Any]]) -> list[str]:
    """For each mismatching document, the first of :data:`_SURGERIES` after which kjoin and Kafka agree (``other``
    when none does): a sweep's mismatches sorted into classes, each class's members judged in one JVM."""
    labels = ["other"] * len(documents)
    pending = list(range(len(documents)))
    for label, surgery in _SURGERIES.items():
        if not pending:
            break
        verdicts = judge(version, [surgery(documents[i]) for i in pending])
        for index, verdict in zip(list(pending), verdicts):
            if verdict.kind is None:
                labels[index] = label
                pending.remove(index)
    return labels


def _report(
    out: Path, version: str, number: int, document: dict[str, Any], verdict: Verdict, label: str, seed: Any = None
) -> Path:
    """Write a mismatch to ``out``, named by its version, its run's seed (when given: a later run's mismatches do not
    overwrite it) and its number in the run."""
    out.mkdir(parents=True, exist_ok=True)
    run = f"{number}" if seed is None else f"{seed}-{number}"
    path = out / f"kafka-{version}-walk-{run}.yaml"
    kafka = (verdict.kafka or {}).get("outputs") if isinstance(verdict.kafka, dict) else None
    record = {
        "difference": verdict.kind,
        "class": label,
        "first": verdict.text,
        "kafka_outputs": kafka,
        "kjoin_outputs": verdict.kjoin,
        "document": document,
    }
    plain = json.loads(json.dumps(record, default=str))  # a windowed key is a str of its own type: its text
    path.write_text(yaml.safe_dump(plain, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
    return path


def sweep(
    version: KafkaVersion,
    count: int,
    seed: int,
    out: Path,
    shrink_seconds: float = 120.0,
    shrink_all: bool = True,
    differences: list[str] | None = None,
) -> tuple[int, int, float]:
    """Judge ``count`` walks on ``version``; sort the mismatches into classes (:func:`classify`), shrink and write
    each (or, without ``shrink_all``, three of each class a surgery names and every other). Topologies,
    mismatches, seconds; each mismatch's first difference (as drawn) is appended to ``differences``."""
    started = time.monotonic()
    stream = _walk_stream(seed, version.version)
    drawn: list[Walk] = []
    verdicts: list[Verdict] = []
    judging: _Judging | None = None
    while len(drawn) < count or judging is not None:
        # 50 at a time, the scenarios read when drawn judged while they are kept; Kafka runs each batch while
        # the next is drawn and the one before is compared
        batch = list(itertools.islice(stream, min(50, count - len(drawn))))
        drawn += batch
        following = _start(version.version, [walk.document for walk in batch]) if batch else None
        if judging is not None:
            verdicts += _finish(judging)
        judging = following
    mismatches = [(walk, verdict) for walk, verdict in zip(drawn, verdicts) if verdict.kind not in (None, "refused")]
    if differences is not None:
        differences += [verdict.text for _, verdict in mismatches]
    labels = classify(version.version, [walk.document for walk, _ in mismatches])
    classes = Counter(
        label if verdict.kind == "outputs" else verdict.kind for label, (_, verdict) in zip(labels, mismatches)
    )
    print(f"  {len(mismatches)} mismatches: {dict(sorted(classes.items()))}", file=sys.stderr, flush=True)
    seen: Counter = Counter()
    for number, ((walk, verdict), label) in enumerate(zip(mismatches, labels), 1):
        label = label if verdict.kind == "outputs" else str(verdict.kind)
        seen[label] += 1
        if shrink_all is False and label != "other" and seen[label] > 3:
            continue  # a class already named by a surgery: three shrunk members show it
        if shrink_seconds > 0:
            document, verdict = shrink(version.version, walk.document, _signature(verdict), seconds=shrink_seconds)
        else:
            document = walk.document
        path = _report(out, version.version, number, document, verdict, label, seed)
        print(
            f"  {label}: {path}\n    {json.dumps(document, ensure_ascii=False, default=str)}",
            file=sys.stderr,
            flush=True,
        )
    return len(drawn), len(mismatches), time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafka_oracle.topology_walk", description=__doc__.split("\n\n")[0])
    parser.add_argument("count", type=int, nargs="?", default=200, help="walks per Kafka version (default 200)")
    parser.add_argument("--seed", type=int, default=None, help="repeat a run (default: a new seed, printed)")
    parser.add_argument("--out", default="topology-walk-mismatches", help="where shrunk mismatches are written")
    parser.add_argument(
        "--sample-classes", action="store_true", help="shrink three mismatches of each named class, all others"
    )
    parser.add_argument(
        "--shrink-seconds", type=float, default=120.0, help="time to shrink each mismatch (0: write it as drawn)"
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    print(f"topology walk seed {seed}", flush=True)
    # KJOIN_ORACLE_VERSIONS names judges of topologies (the era judges and the dead-letter releases), or all
    names = {name.strip() for name in os.environ.get("KJOIN_ORACLE_VERSIONS", "").split(",") if name.strip()}
    unknown = sorted(names - {version.version for version in JUDGES} - {"all"})
    if unknown:
        parser.error(
            f"KJOIN_ORACLE_VERSIONS names {', '.join(unknown)}, which judge no topology; the judges are "
            f"{', '.join(version.version for version in JUDGES)} (or all)"
        )
    judges = [version for version in JUDGES if not names or "all" in names or version.version in names]
    failed = 0
    try:
        for version in judges:
            drawn, found, seconds = sweep(
                version, args.count, seed, Path(args.out), args.shrink_seconds, not args.sample_classes
            )
            print(f"kafka-streams {version.version}: {drawn} topologies, {found} mismatches, {seconds:.0f} s",
                  flush=True)  # fmt: skip
            failed += found
    except HarnessError as error:
        print(error, file=sys.stderr)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
