"""``Topology.from_describe(text)``: a real application's ``topology.describe()``, rebuilt as a kjoin topology.

Why one module of this size: it is one reader of one text format, a table from every processor name the DSL
gives to the kjoin node that rebuilds it, and the parser that walks the text; every part reads that table.

Paste what Kafka Streams prints for ``topology.describe()``::

    t = kjoin.Topology.from_describe(text, functions={
        "KSTREAM-KEY-SELECT-0000000003": lambda key, value: value["customer"],
        "KSTREAM-LEFTJOIN-0000000010": lambda order, customer: {**order, "customer": customer},
    })
    print(t.described)          # what was built, what it needs from you, what it cannot model, and why

``describe()`` names every processor and store, the topics and how the sub-topologies split, but no code: kjoin
recognises each processor by the name the DSL gave it (``KSTREAM-KEY-SELECT-…``, ``KSTREAM-LEFTJOIN-…``,
``KTABLE-FK-JOIN-OUTPUT-…``), groups the processors of one DSL operation back into that operation (a stream-stream
join is two ``WINDOWED``, a ``JOINTHIS``/``JOINOTHER`` pair and a ``MERGE``; a foreign-key join a dozen processors
over two internal topics; a re-key's repartition topic a filter, a sink and a source; a join the application
named, ``StreamJoined.withName("paid")``, by Kafka's suffixes: ``paid-this-windowed``, ``paid-outer-this-join``,
``paid-merge``, see :data:`_ROLES`), and calls the builder
(:mod:`kjoin.topology.builder`) in the order Kafka numbered them. What the text does not say, you fill in by the
processor's name in ``functions``: a function (key selector, value mapper, predicate, joiner), or for a join a mapping
``{joiner, variant, window, foreign_key, grace_ms}``. A table-table or foreign-key join's kind (inner, left, outer)
is not in the text (Kafka names the processors of all three alike): kjoin assumes ``inner`` and says so. A single
processor the application renamed (``selectKey(.., Named.as("by-customer"))``, a stream-table join under
``Joined.as``) has no sign of its operation left: declare it, ``{"op": "select_key", "fn": ...}`` (``filter``,
``map_values``, ``select_key``, ``map``, ``to_stream``, ``peek``, ``join``, ``left_join``).

Aggregates (``KSTREAM-AGGREGATE``/``-REDUCE`` after a grouping's repartition topic or on the stream's own key,
``KTABLE-SELECT`` then ``KTABLE-AGGREGATE``/``-REDUCE`` for a table's ``groupBy``) are built with the repartition
topics Kafka named; ``describe()`` names a count and an aggregate alike and prints no window, so an aggregate is filled
in as ``{"count": True}``, ``{"reduce": adder}`` or ``{"aggregate": initializer, "adder": ...}`` (a table's with its
``subtractor``) with ``"windows"`` when it is windowed. A stream's join with a global table lists no store and Kafka
names an inner one ``KSTREAM-LEFTJOIN`` too: ``{"variant", "key_selector"}`` (left and the stream's key unless
given). ``merge``, ``toTable``, ``repartition()`` and a user topic written and read back (``through``) are read from
the text alone.

A table's ``filter`` and ``mapValues`` (``KTABLE-FILTER``, ``KTABLE-MAPVALUES``) are built materialized when
they list a store; one without a store is read by a join through the store under it, so a stream-table join listing
that store may read either: kjoin takes the view nothing reads as a stream (``--> none``) and says so, or
``{"table": name}`` chooses. ``flatMapValues`` and ``flatMap`` are filled in like ``mapValues`` and ``map``.

``process`` and ``processValues`` (KIP-820) are built with the store the text lists, their processor
``(record, ctx)`` filled in (:mod:`kjoin.topology.custom`); ``split()`` and the legacy ``branch`` with their branches
as named, each branch's predicate filled in under the split's name (:meth:`_Importer.split`); ``filterNot`` is a
``KSTREAM-FILTER`` (a table's a ``KTABLE-FILTER``): ``{"op": "filter_not", "fn": predicate}``. A ``cogroup``
(KIP-150) is built at its ``COGROUPKSTREAM-MERGE`` (filled in with the initializer) over its
``COGROUPKSTREAM-AGGREGATE`` processors (each filled in with its grouped stream's aggregator
``(key, value, agg) -> agg``), with the repartition topics Kafka named
(``<store>-repartition``, or ``Grouped.as``).

What kjoin cannot model is listed with its reason, with everything downstream of it: custom processors
(``addProcessor``, ``transform``: their code and punctuations are not in the text), and the DSL
operations kjoin's builder does not have yet (``transformValues``). A ``suppress`` is filled in with its
options and buffer config (``describe()`` prints no ``Suppressed`` and no ``BufferConfig``); without them it is taken
as ``untilWindowCloses(unbounded())``. A ``max_bytes`` buffer counts each record's topic by its full name, and an
internal topic's is ``<application.id>-<name>``: give ``from_describe(..., application_id=...)`` (describe() does not
print it; the report lists it as a need; the default is the topology harness's). Internal topics keep the names the
text gives, counter names included, so a byte bound behind an unnamed grouping is counted as Kafka counts it.
:data:`OPERATIONS` is the table of what is recognised: adding an operation once the builder has it is one entry
there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

from . import functions as fns
from .graph import TopologyError
from .naming import DEFAULT_APPLICATION_ID

if TYPE_CHECKING:
    from .builder import Topology

__all__ = ["DescribedNode", "Description", "Need", "Refusal", "OPERATIONS", "parse_describe", "from_describe"]


# -- the text ---------------------------------------------------------------------------------------------------
@dataclass(eq=False)
class DescribedNode:
    """One line of ``describe()``: a ``Source``, ``Processor`` or ``Sink`` with its topics or stores."""

    name: str
    kind: str
    subtopology: str
    line: int
    topics: tuple[str, ...] = ()
    """A source's topics; a sink's one topic."""
    stores: tuple[str, ...] = ()
    children: list[str] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)
    pattern: str | None = None
    """A source of a topic pattern, or a sink whose topic an extractor chooses."""

    @property
    def number(self) -> int:
        """The DSL's counter (``-0000000012``): the order the application built its processors in."""
        match = re.search(r"-(\d{10})$", self.name)
        return int(match.group(1)) if match else -1

    def __repr__(self) -> str:
        return f"{self.kind}: {self.name}"


_HEADER = re.compile(r"^\s*Sub-topology:\s*(\S+)(.*)$")
_NODE = re.compile(r"^\s*(Source|Processor|Sink):\s+(\S+)\s*(?:\((.*)\))?\s*$")
_EDGE = re.compile(r"^\s*(-->|<--)\s*(.*)$")


def parse_describe(text: str) -> dict[str, DescribedNode]:
    """The nodes of a ``describe()`` text, in the order printed. A line that is none of Kafka's raises an error
    naming it."""
    if not isinstance(text, str) or not text.strip():
        raise TopologyError("from_describe: paste the text topology.describe() prints (it starts with 'Topologies:')")
    nodes: dict[str, DescribedNode] = {}
    current: DescribedNode | None = None
    subtopology = "0"
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line.strip() or line.strip() in ("Topologies:", "Global Stores:", "Global Stores: none"):
            continue
        if match := _HEADER.match(line):
            subtopology = match.group(1) + (" (global)" if "global" in match.group(2) else "")
            current = None
            continue
        if match := _NODE.match(line):
            kind, name, detail = match.group(1), match.group(2), match.group(3) or ""
            if name in nodes:
                raise TopologyError(f"from_describe, line {number}: {name} is listed twice")
            current = nodes[name] = DescribedNode(name, kind, subtopology, number)
            _details(current, detail, number)
            continue
        if (match := _EDGE.match(line)) and current is not None:
            names = [n.strip() for n in match.group(2).split(",") if n.strip() and n.strip() != "none"]
            (current.children if match.group(1) == "-->" else current.parents).extend(names)
            continue
        raise TopologyError(
            f"from_describe, line {number}: {line.strip()!r:.80} is not a line of topology.describe() (expected "
            "'Sub-topology: N', 'Source: …', 'Processor: …', 'Sink: …', '--> …' or '<-- …'); paste the text whole"
        )
    if not nodes:
        raise TopologyError("from_describe: the text lists no Source, Processor or Sink; paste topology.describe()")
    for node in nodes.values():
        for child in node.children:
            if child not in nodes:
                raise TopologyError(f"from_describe, line {node.line}: {node.name} --> {child}, which is not listed")
    return nodes


def _details(node: DescribedNode, detail: str, number: int) -> None:
    if node.kind == "Source":
        if match := re.match(r"topics:\s*\[(.*)\]", detail):
            node.topics = tuple(t.strip() for t in match.group(1).split(",") if t.strip())
        elif match := re.match(r"topic pattern:\s*(.*)", detail):
            node.pattern = match.group(1).strip()
    elif node.kind == "Sink":
        if match := re.match(r"topic:\s*(.*)", detail):
            node.topics = (match.group(1).strip(),)
        else:
            node.pattern = detail.strip() or "a topic chosen per record"
    elif match := re.match(r"stores:\s*\[(.*)\]", detail):
        node.stores = tuple(s.strip() for s in match.group(1).split(",") if s.strip())


# -- what is recognised -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Operation:
    """How kjoin reads one kind of processor: ``build(importer, node)`` returns the kjoin handle of its result
    (``None``: not built); ``refuse`` instead names why kjoin cannot model it yet."""

    prefix: str
    build: Callable[["_Importer", DescribedNode], Any] | None = None
    refuse: str | None = None


def _not_yet(what: str, builder: str) -> str:
    return f"{what}: kjoin.Topology has no {builder} yet, so neither this nor what follows it runs"


_CUSTOM = (
    "a custom processor (Topology.addProcessor, KStream.process/transform): its code and its punctuations are not in "
    "the text; model it as DSL operations"
)

OPERATIONS: tuple[Operation, ...] = ()
"""Filled in below: one entry per prefix of the DSL's processor names (the longest prefix that matches wins)."""


def _op_table() -> tuple[Operation, ...]:
    i = _Importer
    return (
        Operation("KSTREAM-SOURCE", i.source),
        Operation("KTABLE-SOURCE", i.table_source),
        Operation("KSTREAM-KEY-SELECT", i.select_key),
        Operation("KSTREAM-MAPVALUES", i.map_values),
        Operation("KSTREAM-MAP", i.map),
        Operation("KSTREAM-FILTER", i.filter),
        Operation("KSTREAM-PEEK", i.passes),
        Operation("KSTREAM-JOIN", i.stream_table),
        Operation("KSTREAM-LEFTJOIN", i.stream_table),
        Operation("KSTREAM-WINDOWED", i.inside),
        Operation("KSTREAM-JOINTHIS", i.inside),
        Operation("KSTREAM-JOINOTHER", i.inside),
        Operation("KSTREAM-OUTERTHIS", i.inside),
        Operation("KSTREAM-OUTEROTHER", i.inside),
        Operation("KSTREAM-MERGE", i.stream_merge),
        Operation("KSTREAM-AGGREGATE", i.aggregate),
        Operation("KSTREAM-REDUCE", i.aggregate),
        Operation("KTABLE-AGGREGATE", i.aggregate),
        Operation("KTABLE-REDUCE", i.aggregate),
        Operation("KTABLE-SELECT", i.table_group_by),
        Operation("KSTREAM-TOTABLE", i.to_table),
        Operation("KTABLE-JOINTHIS", i.inside),
        Operation("KTABLE-JOINOTHER", i.inside),
        Operation("KTABLE-MERGE", i.table_merge),
        Operation("KTABLE-FK-JOIN-OUTPUT", i.foreign_key),
        Operation("KTABLE-FK-JOIN-", i.inside),
        Operation("KTABLE-SINK", i.inside),
        Operation("KTABLE-TOSTREAM", i.to_stream),
        Operation("KSTREAM-SINK", i.sink),
        # Not in kjoin's builder yet: one entry each, turned into a ``build`` when the builder has the operation.
        Operation("KTABLE-FILTER", i.filter),
        Operation("KTABLE-MAPVALUES", i.map_values),
        Operation("KSTREAM-FLATMAPVALUES", i.flat_map_values),
        Operation("KSTREAM-FLATMAP", i.flat_map),
        Operation("KTABLE-SUPPRESS", i.suppress),
        Operation("COGROUPKSTREAM-AGGREGATE", i.inside),
        Operation("COGROUPKSTREAM-MERGE", i.cogroup),
        Operation("KTABLE-TRANSFORMVALUES", refuse=_CUSTOM),
        Operation("KSTREAM-BRANCH", i.split),
        Operation("KSTREAM-BRANCHCHILD", i.inside),
        Operation("KSTREAM-FOREACH", i.terminal),
        Operation("KSTREAM-PRINTER", i.terminal),
        Operation("KSTREAM-PROCESSOR", i.process),
        Operation("KSTREAM-PROCESSVALUES", i.process),
        Operation("KSTREAM-TRANSFORM", refuse=_CUSTOM),
        Operation("KSTREAM-FLATTRANSFORM", refuse=_CUSTOM),
    )


SINGLE_OPS = (
    "filter",
    "filter_not",
    "map_values",
    "select_key",
    "map",
    "flat_map_values",
    "flat_map",
    "to_stream",
    "peek",
    "join",
    "left_join",
)
"""What ``functions={name: {"op": ...}}`` can declare a renamed (``Named.as``) processor to be."""


# -- the report -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Need:
    """Something the text does not say that a processor needs: ``what`` it is and how to give it."""

    node: str
    what: str
    given: bool
    default: str | None = None


@dataclass(frozen=True)
class Refusal:
    node: str
    reason: str
    fillable: bool = False
    """Built once ``functions=`` gives what it lacks (an aggregate Kafka names like a count), or downstream of one:
    waiting for its fill-in, not a processor kjoin cannot model."""


@dataclass
class Description:
    """What :func:`from_describe` made of a ``describe()`` text (``topology.described``)."""

    nodes: dict[str, DescribedNode]
    built: dict[str, str] = field(default_factory=dict)
    """Kafka's processor -> the kjoin node that does its work (the processors of one join share one)."""
    needs: list[Need] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stores: dict[str, str] = field(default_factory=dict)
    """Store name -> the kjoin node that keeps it."""
    inside: list[str] = field(default_factory=list)
    """Processors kjoin does as part of another node (a join's windows and halves, a foreign-key join's protocol, a
    repartition topic's filter, sink and source, a table's topic source)."""

    @property
    def missing(self) -> list[Need]:
        """Needs not filled in (and without a default): running reaches them and stops with their name."""
        return [need for need in self.needs if not need.given and need.default is None]

    def report(self) -> str:
        inside = [name for name in self.inside if name not in self.built]
        refused = [r for r in self.refused if not r.fillable]
        waiting = [r for r in self.refused if r.fillable]
        lines = [
            f"from_describe: {len(self.nodes)} processors read: {len(self.built)} built as "
            f"{len(set(self.built.values()))} kjoin nodes, {len(inside)} inside them, {len(refused)} not modelled"
            + (f", {len(waiting)} waiting for functions=" if waiting else "")
        ]
        if self.needs:
            lines.append("fill in (functions={processor: ...}):")
            for need in self.needs:
                state = "given" if need.given else (f"not given: {need.default}" if need.default else "MISSING")
                lines.append(f"  {need.node}: {need.what} [{state}]")
        if waiting:
            lines.append("waiting for functions= (built once you fill them in):")
            lines += [f"  {r.node}: {r.reason}" for r in waiting]
        if refused:
            lines.append("not modelled:")
            lines += [f"  {r.node}: {r.reason}" for r in refused]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    __str__ = report

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.report())


# -- the processors of one join ----------------------------------------------------------------------------------
_ROLES = (
    # (role, DSL prefixes, suffixes of a join the application named: StreamJoined.withName, Named.as, TableJoined.as)
    ("ss-outer-this", ("KSTREAM-OUTERTHIS",), ("-outer-this-join",)),
    ("ss-outer-other", ("KSTREAM-OUTEROTHER",), ("-outer-other-join",)),
    ("ss-this", ("KSTREAM-JOINTHIS",), ("-this-join",)),
    ("ss-other", ("KSTREAM-JOINOTHER",), ("-other-join",)),
    ("ss-windowed", ("KSTREAM-WINDOWED",), ("-this-windowed", "-other-windowed")),
    ("tt-this", ("KTABLE-JOINTHIS",), ("-join-this",)),
    ("tt-other", ("KTABLE-JOINOTHER",), ("-join-other",)),
    ("fk-output", ("KTABLE-FK-JOIN-OUTPUT",), ()),
    ("fk-registration", ("KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION",), ("-subscription-registration-processor",)),
    ("fk-right", (), ("-foreign-join-subscription",)),
    ("fk-inside", ("KTABLE-FK-JOIN-", "KTABLE-SINK"),
     ("-subscription-receive", "-subscription-join-foreign", "-subscription-response-resolver",
      "-subscription-registration-sink", "-subscription-response-sink")),
    ("repartition-filter", (), ("-repartition-filter",)),
)  # fmt: skip
"""How the processors of one DSL operation are named, by Kafka's counter or after the name the application gave."""


def role(node: DescribedNode) -> str | None:
    """What part of a join (or of a repartition) a processor is, by its name; ``None``: none."""
    for name, prefixes, suffixes in _ROLES:
        if node.name.startswith(prefixes) or node.name.endswith(suffixes):
            return name
    if node.name.endswith("-result") and node.parents and node.parents[0].endswith("-subscription-response-resolver"):
        return "fk-output"  # a foreign-key join's result, named with TableJoined.as
    return None


# -- building -----------------------------------------------------------------------------------------------------
FK_TOPIC = re.compile(r"-SUBSCRIPTION-(REGISTRATION|RESPONSE)-\d+-topic$|-subscription-(registration|response)-topic$")


class _Importer:
    def __init__(self, topology: "Topology", nodes: dict[str, DescribedNode], fill: Mapping[str, Any]) -> None:
        self.topology = topology
        self.nodes = nodes
        self.fill = dict(fill)
        self.application_id_given = False
        """The application named its application.id (which describe() does not print)."""
        self.handles: dict[str, Any] = {}
        self.description = Description(nodes)
        self.writers: dict[str, list[DescribedNode]] = {}
        for node in nodes.values():
            if node.kind == "Sink":
                for topic in node.topics:
                    self.writers.setdefault(topic, []).append(node)
        read = {t for t in self.writers if self._reads(t)}
        self.internal = {t for t in read if t.endswith("-repartition") or FK_TOPIC.search(t)}
        """Kafka's own topics: repartition and foreign-key topics (kjoin makes its own)."""
        self.through_topics = read - self.internal
        """User topics the application writes and reads back (``to`` + ``stream``, ``through``)."""

    def _reads(self, topic: str) -> bool:
        return any(n.kind == "Source" and topic in n.topics for n in self.nodes.values())

    # -- order ------------------------------------------------------------------------------------------------
    def upstream(self, node: DescribedNode) -> list[DescribedNode]:
        """The processors a node depends on: its parents, the sinks writing what it reads, the tables it looks up."""
        found = [self.nodes[p] for p in node.parents if p in self.nodes]
        found += [self.nodes[p.name] for p in self.nodes.values() if node.name in p.children and p not in found]
        if node.kind == "Source":
            for topic in node.topics:
                found += self.writers.get(topic, [])
        if node.stores and not node.name.startswith(("KTABLE-SOURCE", "KSTREAM-WINDOWED")):
            found += [o for o in self.nodes.values() if o is not node and o.name.startswith("KTABLE-SOURCE")
                      and o.kind == "Processor" and set(o.stores) & set(node.stores)]  # fmt: skip
            # a view read through those stores (a table's filter or mapValues without a store of its own)
            found += [o for o in self.nodes.values() if o is not node and self._view(o) and o.parents
                      and node.name not in self._under(o) and self.getter_stores(o) & set(node.stores)]  # fmt: skip
        return found

    def _under(self, view: DescribedNode) -> set[str]:
        """The tables a view reads through, up to the first that keeps a store."""
        found: set[str] = set()
        while self._view(view) and len(view.parents) == 1:
            view = self.nodes[view.parents[0]]
            found.add(view.name)
        return found

    def order(self) -> list[DescribedNode]:
        """Every processor after what it depends on; ties in the order the application built them."""
        done: list[DescribedNode] = []
        seen: set[str] = set()
        visiting: set[str] = set()

        def visit(node: DescribedNode) -> None:
            if node.name in seen or node.name in visiting:
                return
            visiting.add(node.name)
            for other in sorted(self.upstream(node), key=lambda n: (n.number, n.line)):
                visit(other)
            visiting.discard(node.name)
            seen.add(node.name)
            done.append(node)

        for node in sorted(self.nodes.values(), key=lambda n: (n.number, n.line)):
            visit(node)
        return done

    # -- the run ----------------------------------------------------------------------------------------------
    def run(self) -> Description:
        unknown = sorted(set(self.fill) - set(self.nodes))
        if unknown:
            raise TopologyError(
                f"from_describe: functions names {unknown[0]}, which the text does not list; the processors are "
                + ", ".join(list(self.nodes)[:8])
                + ("…" if len(self.nodes) > 8 else "")
            )
        for node in self.order():
            blocked = next((r for r in self.description.refused if r.node in self._inputs(node)), None)
            if blocked is not None:
                if blocked.fillable:
                    self.description.refused.append(Refusal(node.name, f"downstream of {blocked.node}", True))
                else:
                    self.description.refused.append(Refusal(node.name, f"downstream of {blocked.node}, not modelled"))
                continue
            operation = self.operation(node)
            if operation is None:
                self.description.refused.append(Refusal(node.name, self._unknown(node)))
                continue
            if operation.refuse is not None:
                self.description.refused.append(Refusal(node.name, operation.refuse))
                continue
            try:
                handle = operation.build(self, node)  # type: ignore[misc]
            except _Refused as refused:
                self.description.refused.append(Refusal(node.name, str(refused), refused.fillable))
                continue
            if handle is not None:
                self.handles[node.name] = handle
                if hasattr(handle, "node"):
                    self.description.built[node.name] = handle.node.name
            elif node.name not in self.description.built:
                self.description.inside.append(node.name)
        return self.description

    def _inputs(self, node: DescribedNode) -> set[str]:
        return {n.name for n in self.upstream(node)}

    def operation(self, node: DescribedNode) -> Operation | None:
        spec = self.fill.get(node.name)
        if isinstance(spec, Mapping) and "op" in spec:
            if spec["op"] not in SINGLE_OPS:
                raise TopologyError(
                    f"from_describe: functions[{node.name!r}].op is one of {', '.join(SINGLE_OPS)}, got {spec['op']!r}"
                )
            i = _Importer
            build = {"filter": i.filter, "filter_not": i.filter, "map_values": i.map_values,
                     "select_key": i.select_key, "map": i.map, "flat_map_values": i.flat_map_values,
                     "flat_map": i.flat_map, "to_stream": i.to_stream,
                     "peek": i.passes, "join": i.stream_table, "left_join": i.stream_table}[spec["op"]]  # fmt: skip
            return Operation(spec["op"], build)
        part = role(node)
        if part == "fk-output":
            return Operation("fk-output", _Importer.foreign_key)
        if part == "repartition-filter":
            return Operation("repartition-filter", _Importer.filter)
        if part is not None:
            return Operation(part, _Importer.inside)
        if len(node.parents) == 1 and _splits(self.nodes[node.parents[0]]):
            return Operation("branch", _Importer.inside)  # built with its split
        if _splits(node):
            return Operation("split", _Importer.split)
        parts = {role(self.nodes[p]) for p in node.parents}
        if len(node.parents) == 2 and parts <= {"ss-this", "ss-outer-this", "ss-other", "ss-outer-other"}:
            return Operation("stream-stream join", _Importer.stream_merge)
        if len(node.parents) == 2 and parts == {"tt-this", "tt-other"}:
            return Operation("table-table join", _Importer.table_merge)
        matches = [op for op in OPERATIONS if node.name.startswith(op.prefix)]
        if node.kind == "Source" and not node.name.startswith(("KSTREAM-SOURCE", "KTABLE-SOURCE")):
            return Operation("source", _Importer.source)  # renamed (Consumed.as), or a repartition()'s source
        if node.kind == "Sink" and not node.name.startswith("KSTREAM-SINK"):
            return Operation("sink", _Importer.sink)  # renamed (Produced.as), or a repartition()'s sink
        return max(matches, key=lambda op: len(op.prefix)) if matches else None

    def _unknown(self, node: DescribedNode) -> str:
        if node.kind == "Processor" and node.stores:
            return f"{_CUSTOM} (it keeps stores {', '.join(node.stores)})"
        return (
            f"{_CUSTOM}; or a DSL operation renamed with Named.as: say which with functions={{{node.name!r}: "
            "{'op': 'map_values', 'fn': ...}}} (filter, map_values, select_key, map, flat_map_values, flat_map, "
            "to_stream, peek; join or left_join for a stream-table join, with its joiner as 'fn')"
        )

    # -- helpers --------------------------------------------------------------------------------------------------
    def parent(self, node: DescribedNode) -> Any:
        """The kjoin handle of a one-input processor's input."""
        parents = [p for p in node.parents if p in self.handles]
        if len(node.parents) != 1 or not parents:
            raise _Refused(f"expected one input built before it, found {', '.join(node.parents) or 'none'}")
        return self.handles[parents[0]]

    def function(self, node: DescribedNode, what: str, default: str | None = None) -> Any:
        spec = self.fill.get(node.name)
        if isinstance(spec, Mapping) and ("fn" in spec or "op" in spec):
            spec = spec.get("fn")
        given = spec is not None
        self.description.needs.append(Need(node.name, what, given, default))
        if given or default is not None:
            return spec
        return _placeholder(node.name, what)

    def join_options(self, node: DescribedNode, what: str, allowed: tuple[str, ...]) -> dict[str, Any]:
        spec = self.fill.get(node.name)
        if spec is None or callable(spec) or isinstance(spec, str):
            spec = {"joiner": spec}
        if not isinstance(spec, Mapping):
            raise TopologyError(f"from_describe: functions[{node.name!r}] is a joiner or a mapping, got {spec!r:.60}")
        unknown = sorted(set(spec) - set(allowed) - {"joiner"})
        if unknown:
            raise TopologyError(
                f"from_describe: functions[{node.name!r}] has {unknown[0]!r}; this join takes "
                + ", ".join(("joiner", *allowed))
            )
        self.description.needs.append(
            Need(node.name, f"{what}'s joiner (left, right) -> value", spec.get("joiner") is not None, "kjoin's concat")
        )
        return dict(spec)

    def table_of(self, stores: tuple[str, ...], node: DescribedNode, wanted: str | None = None) -> Any:
        """The table a stream-table join looks up: the one whose stores its processor lists. A table's filter or
        mapValues without a store of its own (a view) is read through the store under it, so the join lists that
        store whether it reads the table or the view: ``wanted`` (``functions={join: {"table": name}}``) says which;
        else kjoin takes the one view that nothing reads as a stream (``--> none``: kept only to be looked up), or the
        table that keeps the store, and says what it took."""
        if not stores and any(n.subtopology.endswith("(global)") for n in self.nodes.values()):
            raise _Refused("joins a global table (it lists no store), which was not built here")
        candidates: dict[str, Any] = {}
        for table_node, handle in self.handles.items():
            described = self.nodes[table_node]
            if handle.node.produces == "table" and described.kind == "Processor":
                if self.getter_stores(described) == set(stores):
                    candidates[table_node] = handle
        if not candidates:
            raise _Refused(f"looks up stores {', '.join(stores) or '(none listed)'}, which no table built here keeps")
        if wanted is not None:
            if wanted not in candidates:
                raise TopologyError(
                    f"from_describe: functions[{node.name!r}]['table'] is one of {', '.join(candidates)} (the tables "
                    f"that read {', '.join(stores)}), got {wanted!r}"
                )
            return candidates[wanted]
        if len(candidates) == 1:
            return next(iter(candidates.values()))
        views = [name for name in candidates if self._view(self.nodes[name]) and not self.nodes[name].children]
        chosen = views[0] if len(views) == 1 else next(n for n in candidates if not self._view(self.nodes[n]))
        self.description.needs.append(
            Need(node.name, f"table: which of {', '.join(candidates)} it looks up (all read {', '.join(stores)})",
                 False, chosen)
        )  # fmt: skip
        return candidates[chosen]

    @staticmethod
    def _view(node: DescribedNode) -> bool:
        """A table derived without a store (KTable.mapValues/filter/transformValues, not materialized): a join
        looking it up lists the store under it."""
        return node.name.startswith(("KTABLE-MAPVALUES", "KTABLE-FILTER", "KTABLE-TRANSFORMVALUES")) and not node.stores

    def getter_stores(self, node: DescribedNode) -> set[str]:
        """The stores a table's value getter reads (what a join that looks the table up lists)."""
        merge = {role(self.nodes[p]) for p in node.parents} == {"tt-this", "tt-other"}
        if self._view(node) and len(node.parents) == 1:
            return self.getter_stores(self.nodes[node.parents[0]])
        if node.name.startswith("COGROUPKSTREAM-MERGE"):  # KTablePassThrough: its aggregates' one store
            return set().union(*(self.nodes[p].stores for p in node.parents))
        if node.name.startswith("KTABLE-SOURCE") or (node.stores and not merge):
            return set(node.stores)
        if merge:
            if node.stores:
                return set(node.stores)
            return set().union(*(self.getter_stores(self.nodes[p]) for p in self.sides(node)))
        return set(node.stores)

    def sides(self, merge: DescribedNode) -> list[str]:
        """A table-table join's two inputs: the inputs of its JOINTHIS and JOINOTHER."""
        parents = sorted((self.nodes[p] for p in merge.parents), key=lambda n: role(n) == "tt-other")
        return [self.nodes[p].parents[0] for p in (n.name for n in parents)]

    # -- the operations -------------------------------------------------------------------------------------------
    def source(self, node: DescribedNode) -> Any:
        if node.pattern is not None:
            raise _Refused(f"reads the topic pattern {node.pattern}; kjoin reads named topics: list them")
        if node.topics and node.topics[0] in self.through_topics and len(node.topics) == 1:
            return self._through(node, node.topics[0])
        internal = [t for t in node.topics if t in self.internal]
        if internal:
            if FK_TOPIC.search(internal[0]):
                return None  # a foreign-key join's internal topic: its join is built at KTABLE-FK-JOIN-OUTPUT
            if len(node.topics) != 1:
                raise _Refused("reads an internal topic and others together")
            return self._repartitioned(node, internal[0])
        if len(node.topics) != 1:
            raise _Refused(f"reads {len(node.topics)} topics in one source; kjoin's sources read one topic each")
        children = [self.nodes[c] for c in node.children]
        if children and all(c.name.startswith("KTABLE-SOURCE") for c in children):
            return None  # a table (or a global table): built at its KTABLE-SOURCE, which keeps the store
        if node.subtopology.endswith("(global)"):
            raise _Refused("a global store of the application's own (addGlobalStore): its processor's code is not in "
                           "the text; model it as a global table (builder.globalTable)")  # fmt: skip
        return self.topology.stream(node.topics[0], name=node.name)

    def _through(self, node: DescribedNode, topic: str) -> Any:
        """A user topic the application writes and reads back (``to(topic)`` then ``stream(topic)``, or 2.x's
        ``through``): kjoin's ``through``, whose sink and source are both this topic's."""
        sinks = self.writers[topic]
        if len(sinks) != 1:
            raise _Refused(f"{topic} is written by {len(sinks)} sinks; kjoin's through(topic) has one writer")
        upstream = self.through_internal(sinks[0])
        if upstream is None:
            raise _Refused(f"{topic}: what writes it was not built")
        handle = upstream.through(topic, name=sinks[0].name)
        self.description.built[sinks[0].name] = sinks[0].name
        return handle

    def _repartitioned(self, node: DescribedNode, topic: str) -> Any:
        """A repartition topic's source: kjoin writes the re-keyed stream to its own repartition topic before the
        join that reads it, so the handle is the stream that went in."""
        sinks = self.writers[topic]
        if len(sinks) != 1:
            raise _Refused(f"{topic} is written by {len(sinks)} sinks; kjoin's repartition topics have one writer")
        upstream = self.through_internal(sinks[0])
        if upstream is None:
            raise _Refused(f"{topic}: what writes it was not built")
        for consumer in (self.nodes[c] for c in node.children):
            operation = self.operation(consumer)
            if operation is None or operation.refuse is not None:
                reason = self._unknown(consumer) if operation is None else operation.refuse
                raise _Refused(f"{topic} feeds {consumer.name}, {reason}")
        if sinks[0].name.endswith("-repartition-sink") and not _is_grouped(upstream):
            # the application's own repartition() (Repartitioned.as names the topic): a source of its own
            return upstream.repartition(name=topic.removesuffix("-repartition"))
        if _is_grouped(upstream) or all(self._aggregates(self.nodes[c]) for c in node.children):
            return upstream  # a grouping's topic: the aggregate names it (see aggregate)
        if upstream.node.key_changed:
            upstream.node.params["repartition_topic"] = topic
        else:
            self.description.notes.append(
                f"{topic}: Kafka repartitions a stream whose key did not change here; kjoin reads it in place"
            )
        return upstream

    def through_internal(self, sink: DescribedNode) -> Any:
        """The handle of what a repartition sink writes: past Kafka's own null-key filter in front of it."""
        for name in sink.parents:
            if name in self.handles:
                return self.handles[name]
        return None

    @staticmethod
    def _aggregates(node: DescribedNode) -> bool:
        return node.name.startswith(
            ("KSTREAM-AGGREGATE", "KSTREAM-REDUCE", "KTABLE-AGGREGATE", "KTABLE-REDUCE", "COGROUPKSTREAM-AGGREGATE")
        )

    def table_source(self, node: DescribedNode) -> Any:
        if node.kind == "Source":  # a foreign-key join's response or subscription topic (a KTABLE-SOURCE-named source)
            return self.source(node)
        parent = self.nodes[node.parents[0]] if node.parents else None
        if parent is None or parent.kind != "Source" or len(parent.topics) != 1:
            raise _Refused("a table source without its topic's source")
        if parent.subtopology.endswith("(global)"):
            handle = self.topology.global_table(parent.topics[0], name=node.name)
        else:
            handle = self.topology.table(parent.topics[0], name=node.name)
        self.handles[parent.name] = handle
        self.description.built[parent.name] = node.name
        for store in node.stores:
            handle.node.params["store"] = store
            self.description.stores[store] = node.name
        # a table describe() lists without a store sends old values only when forced (KAFKA-10077's filter asks not)
        handle.node.params["materialized"] = bool(node.stores) or parent.subtopology.endswith("(global)")
        return handle

    def select_key(self, node: DescribedNode) -> Any:
        fn = self.function(node, "key selector (key, value) -> new key")
        return self.parent(node).select_key(fn, name=node.name)

    def map(self, node: DescribedNode) -> Any:
        fn = self.function(node, "mapper (key, value) -> (new key, new value)")
        if isinstance(fn, Mapping) or fn is None:
            raise _Refused("map takes a Python function (key, value) -> (key, value)")
        return self.parent(node).map(fn, name=node.name)

    def map_values(self, node: DescribedNode) -> Any:
        fn = self.function(node, "value mapper (value) -> new value")
        parent = self.parent(node)
        if parent.node.produces == "table":  # KTable.mapValues: materialized when it lists a store of its own
            return self._stored(node, parent.map_values(fn, name=node.name, materialized=bool(node.stores)))
        return parent.map_values(fn, name=node.name)

    def flat_map_values(self, node: DescribedNode) -> Any:
        fn = self.function(node, "value mapper (value) -> a list of values")
        return self.parent(node).flat_map_values(fn, name=node.name)

    def flat_map(self, node: DescribedNode) -> Any:
        fn = self.function(node, "mapper (key, value) -> a list of (key, value)")
        if fn is None:
            raise _Refused("flatMap takes a Python function (key, value) -> [(key, value), ...]")
        return self.parent(node).flat_map(fn, name=node.name)

    def filter(self, node: DescribedNode) -> Any:
        children = [self.nodes[c] for c in node.children]
        if (
            len(children) == 1
            and children[0].kind == "Sink"
            and children[0].topics
            and children[0].topics[0] in self.internal
            and children[0].topics[0].endswith("-repartition")
            and node.name not in self.fill
        ):
            return self.parent(node)  # Kafka's own filter in front of a repartition topic (null keys)
        fn = self.function(node, "predicate (key, value) -> keep?")
        parent = self.parent(node)
        spec = self.fill.get(node.name)
        negated = isinstance(spec, Mapping) and spec.get("op") == "filter_not"  # filterNot: the same processor
        build = parent.filter_not if negated else parent.filter
        if parent.node.produces == "table":  # KTable.filter: materialized when it lists a store of its own
            return self._stored(node, build(fn, name=node.name, materialized=bool(node.stores)))
        return build(fn, name=node.name)

    def passes(self, node: DescribedNode) -> Any:
        self.description.notes.append(f"{node.name}: peek, which passes records on unchanged")
        spec = self.fill.get(node.name)
        action = spec.get("fn") if isinstance(spec, Mapping) else spec
        return self.parent(node).peek(True if action is None else action, name=node.name)

    def process(self, node: DescribedNode) -> Any:
        """``process`` / ``processValues`` (KIP-820): the processor ``(record, ctx)`` is the user's; its store is the
        one the text lists (kjoin gives a processor one store of its own)."""
        op = "process_values" if node.name.startswith("KSTREAM-PROCESSVALUES") else "process"
        if len(node.stores) > 1:
            raise _Refused(f"a processor with stores {', '.join(node.stores)}: kjoin gives a processor one store")
        fn = self.function(node, "processor (record, ctx): ctx.forward(...), ctx.store (kjoin.topology.custom)")
        for store in node.stores:
            self.description.stores[store] = node.name
        try:
            return getattr(self.parent(node), op)(fn, store=node.stores[0] if node.stores else None, name=node.name)
        except TopologyError as error:
            raise _Refused(str(error)) from None

    def split(self, node: DescribedNode) -> Any:
        """``split()`` (its children ``<split name><branch name>``) or the legacy ``branch`` (its children
        ``KSTREAM-BRANCHCHILD-…``). The text names the branches but neither their predicates nor their order:
        ``functions={split: {branch: predicate or "default", ...}}`` in the order the application adds them (else
        the order listed, an unnamed default ``<split name>0`` last)."""
        spec = self.fill.get(node.name)
        given = isinstance(spec, Mapping)
        children = list(spec) if given else sorted(node.children, key=lambda child: child == f"{node.name}0")
        unknown = [child for child in children if child not in node.children]
        if unknown:
            raise TopologyError(
                f"from_describe: functions[{node.name!r}] names {unknown[0]!r}, which is not one of its branches "
                f"({', '.join(node.children)})"
            )
        self.description.needs.append(
            Need(node.name, "branches: {branch: predicate (key, value) -> bool, or 'default'}, in order", given)
        )
        parent = self.parent(node)
        predicates = {
            child: spec[child] if given else ("default" if child == f"{node.name}0" else None) for child in children
        }
        for child, predicate in predicates.items():
            if predicate is None:
                predicates[child] = _placeholder(child, "branch predicate")
        try:
            if all(child.startswith("KSTREAM-BRANCHCHILD") for child in children):  # the legacy branch
                made = dict(zip(children, parent.branch(*predicates.values(), name=node.name)))
            else:
                split = parent.split(name=node.name)
                made = {}
                for child, predicate in predicates.items():
                    suffix = child[len(node.name) :] if child.startswith(node.name) else child
                    if predicate == "default":
                        made.update(split.default_branch(name=suffix))
                    else:
                        split.branch(predicate, name=suffix)
                made.update(split.no_default_branch())
        except TopologyError as error:
            raise _Refused(str(error)) from None
        for child, stream in zip(children, made.values()):
            self.handles[child] = stream
            self.description.built[child] = stream.node.name
            self.description.built[node.name] = stream.node.parents[0].name
        return None

    def terminal(self, node: DescribedNode) -> Any:
        self.description.notes.append(f"{node.name}: foreach/print, which writes nothing kjoin follows")
        return None

    def inside(self, node: DescribedNode) -> Any:
        return None  # a processor of a join: the join is built where its result leaves (MERGE, FK-JOIN-OUTPUT)

    def stream_table(self, node: DescribedNode) -> Any:
        spec = self.fill.get(node.name)
        declared = spec.get("op") if isinstance(spec, Mapping) else None
        variant = "left" if node.name.startswith("KSTREAM-LEFTJOIN") or declared == "left_join" else "inner"
        if declared is not None:
            spec = {key: value for key, value in spec.items() if key != "op"}
            joiner = spec.pop("fn", spec.get("joiner"))
            self.fill[node.name] = {**spec, "joiner": joiner}
        globals_ = list({h.node.name: h for h in self.handles.values()
                         if getattr(getattr(h, "node", None), "op", "") == "global-table"}.values())  # fmt: skip
        if not node.stores and globals_:
            return self._global_join(node, globals_)
        options = self.join_options(node, f"stream-table {variant} join", ("grace_ms", "table"))
        right = self.table_of(node.stores, node, options.pop("table", None))
        left = self.parent(node)
        method = left.left_join if variant == "left" else left.join
        return method(right, options.pop("joiner", None), name=node.name, **options)

    def _global_join(self, node: DescribedNode, globals_: list[Any]) -> Any:
        """A stream joined with a global table: its processor lists no store (the global store is every task's), and
        Kafka names an inner join KSTREAM-LEFTJOIN too, so the kind and the lookup key are filled in."""
        options = self.join_options(node, "stream-global-table join", ("variant", "key_selector", "global_table"))
        wanted = options.pop("global_table", None)
        if wanted is not None:
            globals_ = [h for h in globals_ if wanted == h.node.name or wanted == h.node.params.get("store")]
        if len(globals_) != 1:
            raise _Refused(
                f"joins a global table, and describe() does not say which of {len(globals_)}: "
                f"functions={{{node.name!r}: {{'global_table': <its store or KTABLE-SOURCE>}}}}"
            )
        variant = options.pop("variant", None)
        self.description.needs.append(
            Need(node.name, "variant (inner, left): Kafka names both KSTREAM-LEFTJOIN", variant is not None, "left")
        )
        if variant not in (None, "inner", "left"):
            raise TopologyError(f"from_describe: functions[{node.name!r}]['variant'] is inner or left, got {variant!r}")
        selector = options.pop("key_selector", None)
        self.description.needs.append(
            Need(node.name, "key_selector (key, value) -> the global table's key", selector is not None,
                 "the stream's key")
        )  # fmt: skip
        left = self.parent(node)
        method = left.join if variant == "inner" else left.left_join
        return method(globals_[0], options.pop("joiner", None), key_selector=selector, name=node.name)

    def stream_merge(self, node: DescribedNode) -> Any:
        parents = [self.nodes[p] for p in node.parents]
        this = [p for p in parents if role(p) in ("ss-this", "ss-outer-this")]
        other = [p for p in parents if role(p) in ("ss-other", "ss-outer-other")]
        if not this and not other:  # KStream.merge: one stream of its inputs' records
            inputs = [self.handles.get(p.name) for p in parents]
            if len(inputs) < 2 or any(h is None or getattr(h.node, "produces", None) != "stream" for h in inputs):
                raise _Refused(f"a merge of {', '.join(node.parents)}, not all built as streams")
            merged = inputs[0]
            for index, other_stream in enumerate(inputs[1:], start=2):
                merged = merged.merge(other_stream, name=node.name if index == len(inputs) else None)
            return merged
        if len(parents) != 2 or len(this) != 1 or len(other) != 1:
            raise _Refused("a KSTREAM-MERGE of a stream-stream join's halves and other streams")
        variant = (
            "outer" if role(this[0]) == "ss-outer-this"
            else "left" if role(other[0]) == "ss-outer-other" else "inner"
        )  # fmt: skip
        options = self.join_options(node, f"stream-stream {variant} join", ("window",))
        window = options.pop("window", None)
        self.description.needs.append(
            Need(node.name, "window {before_ms, after_ms, grace_ms} (JoinWindows)", window is not None)
        )
        if window is None:
            raise _Refused(
                f"a stream-stream {variant} join needs its window, which describe() does not print: "
                f"functions={{{node.name!r}: {{'window': {{'before_ms': .., 'after_ms': .., 'grace_ms': ..}}}}}}"
            )
        left = self.handles[self.nodes[this[0].parents[0]].parents[0]]
        right = self.handles[self.nodes[other[0].parents[0]].parents[0]]
        method = {"inner": left.join, "left": left.left_join, "outer": left.outer_join}[variant]
        # StreamJoined.withStoreName(name): the window stores are <name>-this-join-store, <name>-outer-other-...
        named = [_JOIN_STORE.sub("", s) for s in self.nodes[this[0].parents[0]].stores if _JOIN_STORE.search(s)]
        store = named[0] if named and not GENERATED.search(named[0]) else None
        return method(right, options.pop("joiner", None), window=window, name=node.name, store=store)

    def table_merge(self, node: DescribedNode) -> Any:
        parents = [self.nodes[p] for p in node.parents]
        if not (len(parents) == 2 and {role(p) for p in parents} == {"tt-this", "tt-other"}):
            raise _Refused("a KTABLE-MERGE that is not a table-table join's")
        left_name, right_name = self.sides(node)
        options = self.join_options(node, "table-table join", ("variant",))
        variant = self._variant(node, options, ("inner", "left", "outer"))
        left, right = self.handles[left_name], self.handles[right_name]
        method = {"inner": left.join, "left": left.left_join, "outer": left.outer_join}[variant]
        return self._stored(node, method(right, options.pop("joiner", None), name=node.name))

    def _variant(self, node: DescribedNode, options: dict[str, Any], allowed: tuple[str, ...]) -> str:
        variant = options.pop("variant", None)
        self.description.needs.append(
            Need(node.name, f"variant ({', '.join(allowed)}): describe() names them alike", variant is not None,
                 "inner")
        )  # fmt: skip
        if variant is None:
            return "inner"
        if variant not in allowed:
            raise TopologyError(
                f"from_describe: functions[{node.name!r}]['variant'] is one of {allowed}, got {variant!r}"
            )
        return variant

    def foreign_key(self, node: DescribedNode) -> Any:
        left_name, right_name = self._fk_sides(node)
        options = self.join_options(node, "foreign-key join", ("variant", "foreign_key"))
        variant = self._variant(node, options, ("inner", "left"))
        extractor = options.pop("foreign_key", None)
        self.description.needs.append(
            Need(node.name, "foreign_key: a field path (a.b) or a function (left value) -> key", extractor is not None)
        )
        if extractor is None:
            raise _Refused(
                "a foreign-key join needs its foreign-key extractor, which describe() does not print: "
                f"functions={{{node.name!r}: {{'foreign_key': 'field' or lambda value: ...}}}}"
            )
        left, right = self.handles[left_name], self.handles[right_name]
        method = left.left_join if variant == "left" else left.join
        return self._stored(node, method(right, options.pop("joiner", None), foreign_key=extractor, name=node.name))

    def _fk_sides(self, output: DescribedNode) -> tuple[str, str]:
        """A foreign-key join's left table (what feeds its SUBSCRIPTION-REGISTRATION) and right table (what feeds
        the SUBSCRIPTION-PROCESSOR next to the subscription store), found by walking up through its topics."""
        left = right = None
        stack, seen = [output], set()
        while stack:
            current = stack.pop()
            if current.name in seen:
                continue
            seen.add(current.name)
            for upper in self.upstream(current):
                inside = (
                    role(upper) in ("fk-inside", "fk-registration", "fk-right")  # not another join's result: a table
                ) or (upper.kind == "Source" and any(FK_TOPIC.search(t) for t in upper.topics))
                if inside:
                    stack.append(upper)
                elif role(current) == "fk-registration" and upper.name in current.parents:
                    left = upper.name
                elif role(current) in ("fk-inside", "fk-right") and upper.name in current.parents:
                    right = upper.name
        if left is None or right is None or left not in self.handles or right not in self.handles:
            raise _Refused("its left and right tables could not be traced through its subscription topics")
        return left, right

    def table_group_by(self, node: DescribedNode) -> Any:
        """``KTable.groupBy``: a re-key of the table's rows, written to the repartition topic its aggregate reads."""
        fn = self.function(node, "selector (key, value) -> (new key, new value)")
        sinks = [self.nodes[c] for c in node.children if self.nodes[c].kind == "Sink"]
        if len(sinks) != 1 or not sinks[0].topics or sinks[0].topics[0] not in self.internal:
            raise _Refused("a table's group-by that writes no repartition topic")
        grouped = self.parent(node).group_by(fn, name=sinks[0].topics[0].removesuffix("-repartition"))
        self.description.built[node.name] = grouped.stream.node.name
        return grouped

    def aggregate(self, node: DescribedNode) -> Any:
        """count, reduce or aggregate of a grouped stream (windowed or not) or of a grouped table. Kafka names count
        and aggregate alike (KSTREAM-AGGREGATE) and prints no window: both are filled in, as
        ``{"count": True}``, ``{"reduce": adder, "subtractor": ..}`` or ``{"aggregate": initializer, "adder": ..,
        "subtractor": ..}`` (``"concat"``: text joined with ``+``), and ``"windows"`` when it is windowed."""
        spec = self.fill.get(node.name)
        reduce = node.name.startswith(("KSTREAM-REDUCE", "KTABLE-REDUCE"))
        if callable(spec) or isinstance(spec, str):
            spec = {"reduce" if reduce else "aggregate": spec}
        spec = dict(spec or {})
        kinds = [kind for kind in ("count", "reduce", "aggregate") if kind in spec]
        unknown = sorted(
            set(spec) - {"count", "reduce", "aggregate", "adder", "subtractor", "windows", "emit_strategy"}
        )
        if unknown or len(kinds) > 1 or (reduce and kinds not in ([], ["reduce"])):
            raise TopologyError(
                f"from_describe: functions[{node.name!r}] is {{'count': True}}, {{'reduce': adder, 'subtractor': ..}} "
                f"or {{'aggregate': initializer, 'adder': .., 'subtractor': ..}}, with 'windows' if windowed; got "
                f"{spec!r:.80}"
            )
        kind = kinds[0] if kinds else ("reduce" if reduce else None)
        table_side = node.name.startswith("KTABLE-")
        self.description.needs.append(
            Need(node.name, "count or aggregate: Kafka names them alike (KSTREAM-AGGREGATE)", bool(kinds))
            if kind is None or kind == "count" or (kind == "aggregate" and not reduce)
            else Need(node.name, "reducer (aggregate, value) -> aggregate" + (" and subtractor" if table_side else ""),
                      spec.get("reduce") is not None or spec.get("adder") is not None)
        )  # fmt: skip
        windows = spec.get("windows")
        if not table_side:
            self.description.needs.append(
                Need(node.name, "windows (windowed_by), which describe() does not print", windows is not None,
                     "not windowed")
            )  # fmt: skip
        if kind is None:
            raise _Refused(
                f"count or aggregate, which describe() names alike: functions={{{node.name!r}: {{'count': True}}}} "
                "or {'aggregate': initializer, 'adder': (key, value, agg) -> agg}, with 'windows' if windowed",
                fillable=True,
            )
        grouped = self._grouped(node)
        if windows is not None:
            grouped = grouped.windowed_by(windows)
            if spec.get("emit_strategy") is not None:  # KIP-825: describe() prints no emit strategy either
                grouped = grouped.emit_strategy(spec["emit_strategy"])
        if kind == "count":
            return self._stored(node, grouped.count(name=node.name))
        first = spec.get(kind)
        if first == "concat":
            args: tuple[Any, ...] = ("concat",)
        elif kind == "reduce":
            args = (first if callable(first) else spec.get("adder") or _placeholder(node.name, "reducer"),)
        else:
            args = (first, spec.get("adder") or _placeholder(node.name, "aggregate's adder"))
        if table_side and first != "concat":
            args += (spec.get("subtractor") or _placeholder(node.name, "subtractor"),)
        method = grouped.reduce if kind == "reduce" else grouped.aggregate
        return self._stored(node, method(*args, name=node.name))

    def cogroup(self, node: DescribedNode) -> Any:
        """``cogroup(...).aggregate(...)`` (KIP-150): the merge (``COGROUPKSTREAM-MERGE``) over one
        ``COGROUPKSTREAM-AGGREGATE`` per grouped stream, all listing one store. Each aggregate's aggregator is filled
        in by its processor's name, the initializer by the merge's (``"concat"``: ``agg+value`` from ``""``)."""
        aggregates = [self.nodes[p] for p in node.parents]
        if not aggregates or not all(a.name.startswith("COGROUPKSTREAM-AGGREGATE") for a in aggregates):
            raise _Refused(f"a cogroup merge of {', '.join(node.parents) or 'nothing'}, not of its aggregates")
        cogrouped: Any = None
        for aggregate in aggregates:
            adder = self.function(aggregate, "aggregator (key, value, aggregate) -> aggregate")
            grouped = self._grouped(aggregate)
            cogrouped = grouped.cogroup(adder) if cogrouped is None else cogrouped.cogroup(grouped, adder)
        initializer = self.function(node, "initializer () -> aggregate")
        table = cogrouped.aggregate(initializer, name=node.name)
        for aggregate in aggregates:
            self.description.built[aggregate.name] = node.name
            self._stored(aggregate, table)
        return table

    def _stored(self, node: DescribedNode, table: Any) -> Any:
        """``table`` keeps the store ``node`` lists: its name kept when the application gave it
        (``Materialized.as``), so kjoin's ``describe()`` lists it as Kafka's does."""
        for store in node.stores:
            self.description.stores[store] = node.name
            if not GENERATED.search(store) and not getattr(table, "grouped", False):
                table.node.params["store"] = store
        return table

    def _grouped(self, node: DescribedNode) -> Any:
        """What an aggregate reads, grouped: a grouped table as its group-by made it; a stream grouped by its key,
        through the repartition topic Kafka named (``<store>-repartition``, or ``Grouped.as``) when it was re-keyed."""
        handle = self.parent(node)
        if _is_grouped(handle):
            return handle
        source = self.nodes[node.parents[0]]
        topics = [t for t in source.topics if t in self.internal] if source.kind == "Source" else []
        if topics and handle.node.key_changed:
            return handle.group_by_key(name=topics[0].removesuffix("-repartition"))
        if handle.node.key_changed:
            raise _Refused("aggregates a re-keyed stream without a repartition topic")
        return handle.group_by_key()

    def to_table(self, node: DescribedNode) -> Any:
        return self.parent(node).to_table(name=node.name)

    def suppress(self, node: DescribedNode) -> Any:
        """``KTable#suppress`` (``KTABLE-SUPPRESS``, its buffer ``KTABLE-SUPPRESS-STATE-STORE``): describe() prints
        neither the ``Suppressed`` nor its buffer config, so they are filled in as the builder's options
        (``{"until": "time_limit", "time_limit_ms": 10, "max_records": 100, "when_full": "emit_early"}``); without
        them a windowed table's is taken as ``untilWindowCloses(unbounded())``, the final-results pattern."""
        spec = self.fill.get(node.name)
        if spec is not None and not isinstance(spec, Mapping):
            raise TopologyError(
                f"from_describe: functions[{node.name!r}] is the suppression's options, e.g. {{'until': "
                f"'window_closes'}} or {{'until': 'time_limit', 'time_limit_ms': 10}}; got {spec!r:.80}"
            )
        self.description.needs.append(
            Need(node.name, "suppression (until window_closes or time_limit) and its buffer config (max_records, "
                 "max_bytes, when_full), which describe() does not print: {'until': 'time_limit', 'time_limit_ms': "
                 "10, 'max_bytes': 1000, 'when_full': 'emit_early'}", spec is not None, "until window_closes, "
                 "unbounded")
        )  # fmt: skip
        if spec is not None and spec.get("max_bytes") is not None:
            # BufferValue + ProcessorRecordContext: each entry counts the characters of its record's topic, an
            # internal topic by its full name <application.id>-<name> (kjoin.topology.suppress)
            self.description.needs.append(
                Need(node.name, "the application.id, which describe() does not print and max_bytes counts in each "
                     "internal topic's full name (<application.id>-<topic>): from_describe(..., application_id=...)",
                     self.application_id_given,
                     f"{DEFAULT_APPLICATION_ID}, the topology harness's")
            )  # fmt: skip
        for store in node.stores:
            self.description.stores[store] = node.name
        return self.parent(node).suppress(name=node.name, **dict(spec or {}))

    def to_stream(self, node: DescribedNode) -> Any:
        return self.parent(node).to_stream(name=node.name)

    def sink(self, node: DescribedNode) -> Any:
        if node.pattern is not None:
            raise _Refused(f"writes to {node.pattern}; kjoin writes to named topics")
        topic = node.topics[0]
        if topic in self.internal or topic in self.through_topics:
            return None  # a repartition or foreign-key topic (kjoin writes its own), or through: built at its source
        self.parent(node).to(topic, name=node.name)
        self.description.built[node.name] = node.name
        return None


GENERATED = re.compile(r"-\d{10}(-|$)")
"""A name Kafka made with its counter (``KSTREAM-AGGREGATE-STATE-STORE-0000000004``), not the application."""
_JOIN_STORE = re.compile(r"-(outer-)?(this|other)-join-store$")
"""The suffixes a stream-stream join's window stores take after the name ``StreamJoined.withStoreName`` gives."""


def _is_grouped(handle: Any) -> bool:
    """Is ``handle`` a grouped stream or table (:class:`kjoin.topology.builder.KGroupedStream`)? Asked by its
    ``grouped`` mark: the builder imports this module, so this one does not import the builder."""
    return getattr(type(handle), "grouped", False) is True


class _Refused(Exception):
    """A processor kjoin cannot build (the message says why); ``fillable``: it can once ``functions=`` fills it in."""

    def __init__(self, message: str, fillable: bool = False) -> None:
        super().__init__(message)
        self.fillable = fillable


def _splits(node: DescribedNode) -> bool:
    """Is ``node`` a ``split()`` (its children all ``<its name><branch name>``, named or not) or a legacy
    ``branch`` (``KSTREAM-BRANCH-…`` with ``KSTREAM-BRANCHCHILD-…`` children)?"""
    if node.kind != "Processor" or not node.children:
        return False
    if all(child.startswith("KSTREAM-BRANCHCHILD-") for child in node.children):
        return node.name.startswith("KSTREAM-BRANCH-")
    return all(child != node.name and child.startswith(node.name) for child in node.children)


def _placeholder(node: str, what: str) -> Any:
    def missing(*args: Any) -> Any:
        raise TopologyError(
            f"{node} needs its {what}, which describe() does not print: "
            f"Topology.from_describe(text, functions={{{node!r}: ...}})"
        )

    return fns.Function(missing, None, f"{node}'s {what} (not filled in)")


OPERATIONS = _op_table()


def from_describe(
    topology: "Topology", text: str, functions: Mapping[str, Any] | None = None, *, application_id_given: bool = False
) -> Description:
    """Build ``text``'s processors into ``topology`` (empty); returns what was built, needed and refused.
    ``application_id_given``: the application named its ``application.id`` (``topology.application_id``)."""
    if functions is not None and not isinstance(functions, Mapping):
        raise TopologyError(
            f"from_describe: functions is a mapping from processor name to function, got {functions!r:.60}"
        )
    nodes = parse_describe(text)
    importer = _Importer(topology, nodes, functions or {})
    importer.application_id_given = application_id_given
    return importer.run()
