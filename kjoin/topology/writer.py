"""Writing a topology out as a document's ``topology:`` part (:mod:`kjoin.topology.document` reads it back).

Below the builder: it reads only the graph, so :meth:`kjoin.topology.Topology.to_dict` can call it without the
reader (which builds topologies) importing the builder back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .graph import VIEW_OPS, TopologyError
from .naming import DEFAULT_APPLICATION_ID

if TYPE_CHECKING:
    from .builder import Topology

__all__ = ["topology_to_dict"]


def spec_of_partitioner(node: Any, topic: Any) -> Any:
    if topic.partitioner.spec is None:
        raise TopologyError(f"node {node.name}: its partitioner is a Python function")
    return topic.partitioner.spec


def topology_to_dict(topology: Topology) -> dict[str, Any]:
    """The nodes of ``topology`` as a document's ``topology:`` list, plus ``partitions``,
    ``semantics`` and ``topics``. A node with a Python function cannot be written (a document
    names its functions from the vocabulary of :mod:`kjoin.topology.functions`)."""
    writer = _Writer(topology)
    for node in sorted(topology.graph.nodes.values(), key=lambda n: n.order):
        writer.write(node)
    data: dict[str, Any] = {"partitions": topology.partitions, "semantics": str(topology.semantics)}
    if topology.key_serde != "string":
        data["key_serde"] = topology.key_serde
    data.update(topology.exception_handling.to_dict())
    if topology.application_id != DEFAULT_APPLICATION_ID:
        data["application_id"] = topology.application_id
    dead_letters = topology.graph.topics.get(topology.exception_handling.dead_letter_queue or "")
    if dead_letters is not None and dead_letters.partitions != 1:  # a dead-letter queue has one unless declared
        writer.topics[dead_letters.name] = {"partitions": dead_letters.partitions}
    if writer.topics:
        data["topics"] = writer.topics
    data["topology"] = writer.nodes
    return data


_JOIN_OPS = ("stream-stream", "stream-table", "table-table", "fk", "stream-global")


class _Writer:
    """A topology's nodes written out one by one as a document's entries (:func:`topology_to_dict`)."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.graph = topology.graph
        self.nodes: list[dict[str, Any]] = []
        self.topics: dict[str, Any] = {}

    def write(self, node: Any) -> None:
        graph = self.graph
        if node.op == "stream" and any(n.op == "to" and n.topic == node.topic for n in graph.nodes.values()):
            return  # a through's source: the through entry reads it back
        entry: dict[str, Any] = {"name": node.name}
        if node.op in ("stream", "table", "global-table"):
            self.source(node, entry)
        elif node.op in _JOIN_OPS:
            self.join(node, entry)
        elif node.op in ("group_by", "table-group-by", "aggregate", "table-aggregate"):
            self.grouped(node, entry)
        elif node.op == "cogroup":
            self.cogroup(node, entry)
        elif node.op in ("to", "repartition-source") and (node.op == "to" or "repartition" in node.params):
            self.sink(node, entry)
        elif node.op == "split":
            self.split(node, entry)
        elif node.op == "suppress":
            entry["suppress"] = node.params["suppressed"].to_dict()
            entry["input"] = self.logical(node.parents[0])
        elif node.op == "map":
            self.spec(node)  # a Python map cannot be written: refused with its name
            self.nodes.append(entry)
            return
        elif node.op in ("filter", "map_values", "select_key", "to_stream", "merge", "to_table", "flat_map_values",
                         "flat_map", "peek", "process_values", "process", *VIEW_OPS):  # fmt: skip
            self.stateless(node, entry)
        else:
            return  # repartition sinks and sources: Kafka adds them, and so does kjoin
        if node.params.get("store") is not None and node.op not in ("process_values", "process"):
            entry["store"] = node.params["store"]  # Materialized.as, StreamJoined.withStoreName
        self.nodes.append(entry)

    # -- names and functions ----------------------------------------------------------------------
    def logical(self, node: Any) -> str:
        """The name a document gives the node another node reads."""
        graph = self.graph
        if node.op == "repartition-source" and "repartition" in node.params:  # the user's repartition()
            return node.params["repartition"]["name"]
        if node.op == "repartition-source":
            sink = next(n for n in graph.nodes.values() if n.op == "repartition-sink" and n.topic == node.topic)
            return sink.parents[0].name
        if node.op == "branch" and node.parents[0].params.get("legacy"):  # read back as <split>-predicate-<i>
            split = node.parents[0]
            index = [child for _, child in split.params["branches"]].index(node.name)
            return f"{split.name}-predicate-{index}"
        if node.op == "stream":  # a through's source: read back under the through's name
            writer = next((n for n in graph.nodes.values() if n.op == "to" and n.topic == node.topic), None)
            if writer is not None:
                return writer.name
        return node.name

    def spec(self, node: Any, key: str = "fn") -> Any:
        fn = node.params.get(key)
        if fn is None:
            return None
        if fn.spec is None:
            raise TopologyError(
                f"node {node.name}: its function is a Python function ({fn.text}), which a document cannot carry; "
                "name it from kjoin.topology.functions' vocabulary to write the topology out"
            )
        return fn.spec

    # -- the nodes, by kind -----------------------------------------------------------------------
    def source(self, node: Any, entry: dict[str, Any]) -> None:
        topic = self.graph.topics[node.topic]
        if node.op == "global-table":
            entry["global_table"] = node.topic
            if topic.partitions != self.topology.partitions:
                entry["partitions"] = topic.partitions
            return
        entry[node.op] = node.topic
        if topic.partitions != self.topology.partitions:
            self.topics[node.topic] = {"partitions": topic.partitions}
        if node.params.get("history_retention_ms") is not None:
            entry["history_retention_ms"] = node.params["history_retention_ms"]
        if node.op == "table" and node.params.get("materialized") is False:  # builder.table without Materialized
            entry["materialized"] = False
        if topic.partitioner is not None:
            raise TopologyError(f"topic {node.topic}: its producer's partitioner is a Python function")

    def stateless(self, node: Any, entry: dict[str, Any]) -> None:
        if node.op == "merge":
            parents = [self.logical(parent) for parent in node.parents]
            entry["merge"] = parents * 2 if len(parents) == 1 else parents  # a stream merged with itself
            return
        if node.op in ("to_stream", "to_table"):
            entry[node.op] = True
        elif node.op in VIEW_OPS:  # a table's filter or map_values: the document tells them by their input
            op = "filter" if node.op == "table-filter" else "map_values"
            entry["filter_not" if node.params.get("negated") else op] = self.spec(node)
        elif node.op == "filter" and node.params.get("negated"):
            entry["filter_not"] = self.spec(node)
        else:
            entry[node.op] = self.spec(node)
        if node.op in ("process_values", "process") and node.params["store"] != f"{node.name}-store":
            entry["store"] = node.params["store"]
        entry["input"] = self.logical(node.parents[0])
        if node.op in VIEW_OPS and node.params["materialized"]:
            entry["materialized"] = True
        if node.op in ("select_key", "flat_map") and node.params.get("partitioner") is not None:
            entry["partitioner"] = self.spec(node, "partitioner")

    def split(self, node: Any, entry: dict[str, Any]) -> None:
        """A split and its branches, one entry (the branch nodes are written with it)."""
        p = node.params
        if p.get("legacy"):
            entry["branch"] = [self.spec_of(fn, node) for fn, _ in p["branches"]]
        else:
            branches = [
                {"name": child[len(node.name) :], "filter": self.spec_of(fn, node)} for fn, child in p["branches"]
            ]
            if p.get("default") is not None:
                branches.append({"name": p["default"][len(node.name) :], "default": True})
            entry["split"] = branches
        entry["input"] = self.logical(node.parents[0])

    def spec_of(self, fn: Any, node: Any) -> Any:
        if fn.spec is None:
            raise TopologyError(
                f"node {node.name}: a branch's predicate is a Python function ({fn.text}), which a document cannot "
                "carry; name it from kjoin.topology.functions' vocabulary to write the topology out"
            )
        return fn.spec

    def join(self, node: Any, entry: dict[str, Any]) -> None:
        p = node.params
        if node.op == "stream-global":
            op = "join" if p["variant"] == "inner" else "left_join"
        else:
            op = {"inner": "join", "left": "left_join", "outer": "outer_join"}[p["variant"]]
        entry[op] = [self.logical(parent) for parent in node.parents]
        if p["joiner"].spec != "concat":
            entry["joiner"] = self.spec(node, "joiner")
        if node.op == "stream-global" and p.get("key_selector") is not None:
            entry["key_selector"] = self.spec(node, "key_selector")
        if node.op == "stream-table" and p.get("grace_ms") is not None:
            entry["grace_ms"] = p["grace_ms"]
        if node.op == "stream-stream":
            w = p["window"]
            entry["window"] = {"before_ms": w.before_ms, "after_ms": w.after_ms, "grace_ms": w.grace_ms}
        if node.op == "fk":
            extractor = p["foreign_key"]
            if not isinstance(extractor, str) and getattr(extractor, "spec", None) is None:
                raise TopologyError(f"node {node.name}: its foreign-key extractor is a Python function")
            entry["foreign_key"] = extractor if isinstance(extractor, str) else extractor.spec
            for key, topic_key in (("partitioner", "response_topic"), ("other_partitioner", "subscription_topic")):
                fn = self.graph.topics[p[topic_key]].partitioner
                if fn is not None:
                    if fn.spec is None:
                        raise TopologyError(f"node {node.name}: its {key} is a Python function")
                    entry[key] = fn.spec

    def grouped(self, node: Any, entry: dict[str, Any]) -> None:
        if node.op in ("group_by", "table-group-by"):
            entry["name"] = node.params.get("grouped_name") or node.name
            if node.params.get("grouped_name") is not None:
                entry["as"] = node.params["grouped_name"]  # Grouped.as: the repartition topic's name
            entry["group_by"] = self.spec(node)
            entry["input"] = self.logical(node.parents[0])
            if node.params.get("partitioner") is not None and node.op == "group_by":
                entry["partitioner"] = self.spec(node, "partitioner")
            return
        named = node.params.get("grouped_name")
        grouped = self.grouping(node.parents[0], named or f"{node.name}-grouped", named is not None)
        windows = node.params.get("windows")
        if windows is not None:
            if hasattr(windows, "gap_ms"):
                form = {"inactivity_gap_ms": windows.gap_ms, "grace_ms": windows.grace_ms}
            elif hasattr(windows, "difference_ms"):
                form = {"time_difference_ms": windows.difference_ms, "grace_ms": windows.grace_ms}
            else:
                form = {"size_ms": windows.size_ms, "advance_ms": windows.advance, "grace_ms": windows.grace_ms}
            windowed = {"name": f"{node.name}-windows", "windowed_by": form, "input": grouped}
            if node.params.get("emit") == "final":
                windowed["emit_strategy"] = "on_window_close"
            self.nodes.append(windowed)
            grouped = f"{node.name}-windows"
        kind, given = node.params["doc"]
        if given is None:
            raise TopologyError(f"node {node.name}: its {kind} functions are Python functions")
        entry[kind] = given
        entry["input"] = grouped

    def grouping(self, parent: Any, unnamed: str, named: bool = False) -> str:
        """The grouped node an aggregate reads ``parent`` through: its group_by (behind its repartition topic), or a
        ``group_by_key`` entry named ``unnamed``, written here (``named``: that name is the grouping's own,
        ``Grouped.as``, which names the repartition topic)."""
        source = self.logical(parent)
        # the node the document names (a grouping behind its repartition topic), or, for the user's repartition(),
        # whose name is no node's, the repartition topic's source
        found = self.graph.nodes.get(source, parent)
        if found.op in ("group_by", "table-group-by"):
            return found.params.get("grouped_name") or found.name
        entry = {"name": unnamed, "group_by_key": True, "input": source}
        if named:
            entry["as"] = unnamed
        self.nodes.append(entry)
        return unnamed

    def cogroup(self, node: Any, entry: dict[str, Any]) -> None:
        _, adders, initializer = node.params["doc"]
        if initializer != "concat" or any(adder != "concat" for adder in adders):
            raise TopologyError(f"node {node.name}: its cogroup functions are Python functions")
        entry["cogroup"] = [
            self.grouping(parent, f"{node.name}-grouped-{index}") for index, parent in enumerate(node.parents)
        ]

    def sink(self, node: Any, entry: dict[str, Any]) -> None:
        """to, through (a to whose topic a source reads back) and the user's repartition()."""
        graph = self.graph
        if node.op == "repartition-source":
            given = node.params["repartition"]
            sink = next(n for n in graph.nodes.values() if n.op == "repartition-sink" and n.topic == node.topic)
            entry["name"] = given["name"]
            entry["repartition"] = True
            if given.get("as") is not None:
                entry["as"] = given["as"]  # Repartitioned.as: the topic's name
            entry["input"] = self.logical(sink.parents[0])
            if given["partitions"] is not None:
                entry["partitions"] = given["partitions"]
            if given["partitioner"] is not None:
                entry["partitioner"] = spec_of_partitioner(node, graph.topics[node.topic])
            return
        through = node.topic in graph.sources()
        entry["through" if through else "to"] = node.topic
        entry["input"] = self.logical(node.parents[0])
        topic = graph.topics[node.topic]
        if topic.partitions != self.topology.partitions:
            entry["partitions"] = topic.partitions
        if topic.partitioner is not None:
            if through:
                entry["partitioner"] = spec_of_partitioner(node, topic)
            elif topic.partitioner.spec is None:
                raise TopologyError(f"node {node.name}: its partitioner is a Python function")
            else:
                entry["partitioner"] = topic.partitioner.spec
