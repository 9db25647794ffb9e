"""Partition counts of internal topics, and the co-partitioning check, as Kafka does them.

How it works (Kafka's ``RepartitionTopics`` and ``CopartitionedTopicsEnforcer``):

* A repartition topic without a partition count of its own gets the largest count among the
  source topics of the sub-topology that writes to it.
* Every join is a *co-partition group*: the source topics both of its sides read within the
  join's sub-topology (a foreign-key join: its subscription topic with the right table's topics,
  its response topic with the left table's). In a group, the topics that are not internal must
  all have the same number of partitions, else the topology is refused ("Topics not
  co-partitioned"); the internal ones then take that number (or, in a group of internal topics
  only, the largest of theirs).
"""

from __future__ import annotations

from dataclasses import replace

from .graph import Graph, Node, TopologyError

__all__ = ["resolve_partitions", "copartition_groups"]


def resolve_partitions(graph: Graph) -> None:
    """Give every internal topic its partition count and check every co-partition group."""
    groups = _groups(graph)
    subtopology_of = graph.subtopology_of()
    sources_of: dict[int, list[str]] = {}
    for node in graph.nodes.values():
        if node.op in ("stream", "table", "repartition-source"):
            sources_of.setdefault(subtopology_of[node.name], []).append(node.topic)
    # internal topics first take the largest count of their writers' sources (in order: a writer's own
    # sources may be internal topics resolved just before); a writer that reads what it writes (a merge of a
    # stream with its own repartition()) never has all its counts: then, as Kafka's
    # RepartitionTopics.computePartitionCount skips a source whose count is not known yet, the largest known one

    def settle(partial: bool) -> bool:
        """One pass over the writers of internal topics without a count; whether it gave any a count."""
        changed = False
        for node in sorted(graph.nodes.values(), key=lambda n: n.order):
            for topic_name in _written_internal(node):
                topic = graph.topics[topic_name]
                if topic.partitions is not None:
                    continue
                counts = [graph.topics[t].partitions for t in sources_of.get(subtopology_of[node.name], [])]
                known = [count for count in counts if count is not None]
                if known and (partial or len(known) == len(counts)):
                    graph.topics[topic_name] = replace(topic, partitions=max(known))
                    changed = True
        return changed

    while settle(partial=False) or settle(partial=True):  # each pass that changes something gives a topic a count
        pass
    for join, names in groups:
        topics = [graph.topics[name] for name in names]
        external = [topic for topic in topics if not topic.internal]
        counts = {topic.partitions for topic in external}
        if len(counts) > 1:
            listed = ", ".join(f"{topic.name} has {topic.partitions}" for topic in external)
            raise TopologyError(
                f"join {join.name}: topics not co-partitioned: [{','.join(sorted(t.name for t in external))}] "
                f"({listed} partitions). Kafka refuses such a topology (TopologyException: Topics not co-partitioned): "
                "a join reads partition p of both sides in one task, so both sides need the same number of "
                "partitions; give the topics the same count, or re-key one side (select_key) so that it is "
                "written to a repartition topic with the other side's count"
            )
        internal = [topic for topic in topics if topic.internal]
        if not internal:
            continue
        if counts:
            target = counts.pop()
        else:
            target = max((topic.partitions or 1) for topic in internal)
        for topic in internal:
            graph.topics[topic.name] = replace(topic, partitions=target)
    for name, topic in list(graph.topics.items()):
        if topic.partitions is None:  # an internal topic nobody constrained (its writers have no sources)
            graph.topics[name] = replace(topic, partitions=1)


def copartition_groups(graph: Graph) -> list[tuple[Node, list[str]]]:
    """(join, the topics of its co-partition group) for every join of a resolved graph: the topics whose records
    must be in their key's partition for the join to find them (a whole app's audit reads them)."""
    return _groups(graph)


def _written_internal(node: Node) -> list[str]:
    if node.op == "repartition-sink":
        return [node.topic]  # type: ignore[list-item]
    if node.op == "fk":
        return [node.params["subscription_topic"], node.params["response_topic"]]
    return []


def _groups(graph: Graph) -> list[tuple[Node, list[str]]]:
    """(join, the topics of its co-partition group) for every join."""
    groups = []
    for node in graph.nodes.values():
        if node.op in ("stream-stream", "stream-table", "table-table", "cogroup"):
            names = [source.topic for parent in node.parents for source in graph.upstream_sources(parent)]
            groups.append((node, sorted(set(names))))  # type: ignore[arg-type]
        elif node.op == "fk":
            left, right = node.parents
            groups.append(
                (node, sorted({node.params["subscription_topic"], *(s.topic for s in graph.upstream_sources(right))}))
            )
            groups.append(
                (node, sorted({node.params["response_topic"], *(s.topic for s in graph.upstream_sources(left))}))
            )
    return groups  # type: ignore[return-value]
