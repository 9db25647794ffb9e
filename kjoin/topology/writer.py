"""Writing a topology out as a document's ``topology:`` part (:mod:`kjoin.topology.document` reads it back).

Below the builder: it reads only the graph, so :meth:`kjoin.topology.Topology.to_dict` can call it without the
reader (which builds topologies) importing the builder back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .graph import TopologyError

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
    graph = topology.graph
    nodes: list[dict[str, Any]] = []
    topics: dict[str, Any] = {}

    def logical(node: Any) -> str:
        if node.op == "repartition-source" and "repartition" in node.params:  # the user's repartition()
            return node.params["repartition"]["name"]
        if node.op == "repartition-source":
            sink = next(n for n in graph.nodes.values() if n.op == "repartition-sink" and n.topic == node.topic)
            return sink.parents[0].name
        if node.op == "stream":  # a through's source: read back under the through's name
            writer = next((n for n in graph.nodes.values() if n.op == "to" and n.topic == node.topic), None)
            if writer is not None:
                return writer.name
        return node.name

    def spec(node: Any, key: str = "fn") -> Any:
        fn = node.params.get(key)
        if fn is None:
            return None
        if fn.spec is None:
            raise TopologyError(
                f"node {node.name}: its function is a Python function ({fn.text}), which a document cannot carry; "
                "name it from kjoin.topology.functions' vocabulary to write the topology out"
            )
        return fn.spec

    for node in sorted(graph.nodes.values(), key=lambda n: n.order):
        if node.op == "stream" and any(n.op == "to" and n.topic == node.topic for n in graph.nodes.values()):
            continue  # a through's source: the through entry reads it back
        entry: dict[str, Any] = {"name": node.name}
        if node.op in ("stream", "table"):
            entry[node.op] = node.topic
            topic = graph.topics[node.topic]
            if topic.partitions != topology.partitions:
                topics[node.topic] = {"partitions": topic.partitions}
            if node.params.get("history_retention_ms") is not None:
                entry["history_retention_ms"] = node.params["history_retention_ms"]
            if topic.partitioner is not None:
                raise TopologyError(f"topic {node.topic}: its producer's partitioner is a Python function")
        elif node.op in ("filter", "map_values", "select_key"):
            entry[node.op] = spec(node)
            entry["input"] = logical(node.parents[0])
            if node.op == "select_key" and node.params.get("partitioner") is not None:
                entry["partitioner"] = spec(node, "partitioner")
        elif node.op == "map":
            spec(node)
        elif node.op in ("stream-stream", "stream-table", "table-table", "fk"):
            p = node.params
            op = {"inner": "join", "left": "left_join", "outer": "outer_join"}[p["variant"]]
            entry[op] = [logical(parent) for parent in node.parents]
            if p["joiner"].spec != "concat":
                entry["joiner"] = spec(node, "joiner")
            if node.op == "stream-table" and p.get("grace_ms") is not None:
                entry["grace_ms"] = p["grace_ms"]
            if node.op == "stream-stream":
                w = p["window"]
                entry["window"] = {"before_ms": w.before_ms, "after_ms": w.after_ms, "grace_ms": w.grace_ms}
            if node.op == "fk":
                if not isinstance(p["foreign_key"], str):
                    raise TopologyError(f"node {node.name}: its foreign-key extractor is a Python function")
                entry["foreign_key"] = p["foreign_key"]
                for key, topic_key in (("partitioner", "response_topic"), ("other_partitioner", "subscription_topic")):
                    fn = graph.topics[p[topic_key]].partitioner
                    if fn is not None:
                        if fn.spec is None:
                            raise TopologyError(f"node {node.name}: its {key} is a Python function")
                        entry[key] = fn.spec
        elif node.op == "to_stream":
            entry["to_stream"] = True
            entry["input"] = logical(node.parents[0])
        elif node.op == "global-table":
            entry["global_table"] = node.topic
            topic = graph.topics[node.topic]
            if topic.partitions != topology.partitions:
                entry["partitions"] = topic.partitions
        elif node.op == "stream-global":
            p = node.params
            entry["join" if p["variant"] == "inner" else "left_join"] = [logical(parent) for parent in node.parents]
            if p["joiner"].spec != "concat":
                entry["joiner"] = spec(node, "joiner")
            if p.get("key_selector") is not None:
                entry["key_selector"] = spec(node, "key_selector")
        elif node.op == "merge":
            entry["merge"] = [logical(parent) for parent in node.parents]
        elif node.op == "to_table":
            entry["to_table"] = True
            entry["input"] = logical(node.parents[0])
        elif node.op == "repartition-source" and "repartition" in node.params:
            given = node.params["repartition"]
            sink = next(n for n in graph.nodes.values() if n.op == "repartition-sink" and n.topic == node.topic)
            entry["name"] = given["name"]
            entry["repartition"] = True
            entry["input"] = logical(sink.parents[0])
            if given["partitions"] is not None:
                entry["partitions"] = given["partitions"]
            if given["partitioner"] is not None:
                entry["partitioner"] = spec_of_partitioner(node, graph.topics[node.topic])
        elif node.op in ("group_by", "table-group-by"):
            entry["name"] = node.params.get("grouped_name") or node.name
            entry["group_by"] = spec(node)
            entry["input"] = logical(node.parents[0])
            if node.params.get("partitioner") is not None and node.op == "group_by":
                entry["partitioner"] = spec(node, "partitioner")
        elif node.op in ("aggregate", "table-aggregate"):
            source = logical(node.parents[0])
            parent = graph.nodes[source]
            if parent.op in ("group_by", "table-group-by"):
                grouped = parent.params.get("grouped_name") or parent.name
            else:
                grouped = node.params.get("grouped_name") or f"{node.name}-grouped"
                nodes.append({"name": grouped, "group_by_key": True, "input": source})
            windows = node.params.get("windows")
            if windows is not None:
                if hasattr(windows, "gap_ms"):
                    form = {"inactivity_gap_ms": windows.gap_ms, "grace_ms": windows.grace_ms}
                elif hasattr(windows, "difference_ms"):
                    form = {"time_difference_ms": windows.difference_ms, "grace_ms": windows.grace_ms}
                else:
                    form = {"size_ms": windows.size_ms, "advance_ms": windows.advance, "grace_ms": windows.grace_ms}
                nodes.append({"name": f"{node.name}-windows", "windowed_by": form, "input": grouped})
                grouped = f"{node.name}-windows"
            kind, given = node.params["doc"]
            if given is None:
                raise TopologyError(f"node {node.name}: its {kind} functions are Python functions")
            entry[kind] = given
            entry["input"] = grouped
        elif node.op == "to" and node.topic in graph.sources():  # through: written here, read by its source
            entry["through"] = node.topic
            entry["input"] = logical(node.parents[0])
            topic = graph.topics[node.topic]
            if topic.partitions != topology.partitions:
                entry["partitions"] = topic.partitions
            if topic.partitioner is not None:
                entry["partitioner"] = spec_of_partitioner(node, topic)
        elif node.op == "to":
            entry["to"] = node.topic
            entry["input"] = logical(node.parents[0])
            topic = graph.topics[node.topic]
            if topic.partitions != topology.partitions:
                entry["partitions"] = topic.partitions
            if topic.partitioner is not None:
                if topic.partitioner.spec is None:
                    raise TopologyError(f"node {node.name}: its partitioner is a Python function")
                entry["partitioner"] = topic.partitioner.spec
        else:
            continue  # repartition sinks and sources: Kafka adds them, and so does kjoin
        nodes.append(entry)
    data: dict[str, Any] = {"partitions": topology.partitions, "semantics": str(topology.semantics)}
    if topics:
        data["topics"] = topics
    data["topology"] = nodes
    return data
