"""Stages: the sub-topologies in the order their records can be processed whole (the ``stages`` schedule, and
the Spark engine's plan, :mod:`kjoin.spark.topology_run`).

A sub-topology *feeds* another when it writes a topic the other reads: a repartition topic (its sink is in the
writer, its source in the reader), a topic of the user's written by ``to`` and read back (``through``), or a
foreign-key join's subscription (left side to right side) and response (back) topics. A **stage** is a strongly
connected group of sub-topologies under "feeds": one sub-topology alone, or the two sides of a foreign-key join
(which feed each other). Stages come in dependency order (ties: the lowest sub-topology number first), so that
when a stage starts, every record of every topic it reads from an earlier stage is written. A stage is *cyclic*
when its records come back to it (a foreign-key join's two sides, or a sub-topology that reads what it writes):
its tasks must run together, in one loop; the tasks of an acyclic stage take only records that exist when it
starts, so each can run alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .graph import Graph

__all__ = ["Stage", "stages_of", "topic_readers", "topic_writers"]


@dataclass(frozen=True)
class Stage:
    """One stage: its sub-topologies (sorted) and whether its records come back to it."""

    number: int
    subtopologies: tuple[int, ...]
    cyclic: bool


def topic_readers(graph: Graph) -> dict[str, int]:
    """Topic -> the sub-topology that reads it (source topics, repartition topics, foreign-key topics); a global
    table's topic is read by the global thread, which is in no sub-topology (absent here)."""
    subs = graph.subtopology_of()
    readers = {topic: subs[node.name] for topic, node in graph.sources().items() if node.op != "global-table"}
    for node in graph.nodes.values():
        if node.op == "fk":
            readers[node.params["subscription_topic"]] = subs[node.parents[1].name]
            readers[node.params["response_topic"]] = subs[node.name]
    return readers


def topic_writers(graph: Graph) -> dict[str, set[int]]:
    """Topic -> the sub-topologies that write it (``to``, repartition sinks, foreign-key joins' two sides)."""
    subs = graph.subtopology_of()
    writers: dict[str, set[int]] = {}
    for node in graph.nodes.values():
        if node.op in ("to", "repartition-sink"):
            writers.setdefault(node.topic, set()).add(subs[node.name])  # type: ignore[arg-type]
        elif node.op == "fk":
            writers.setdefault(node.params["subscription_topic"], set()).add(subs[node.name])
            writers.setdefault(node.params["response_topic"], set()).add(subs[node.parents[1].name])
    return writers


def stages_of(graph: Graph) -> list[Stage]:
    """The stages of a built topology's graph, in dependency order (see the module)."""
    count = len(graph.subtopologies())
    feeds: dict[int, set[int]] = {sub: set() for sub in range(count)}
    readers = topic_readers(graph)
    for topic, writers in topic_writers(graph).items():
        if topic in readers:
            for writer in writers:
                feeds[writer].add(readers[topic])
    reach = {sub: _reachable(feeds, sub) for sub in feeds}
    groups: list[tuple[int, ...]] = []
    placed: set[int] = set()
    for sub in range(count):
        if sub not in placed:
            group = tuple(sorted(other for other in range(count) if other in reach[sub] and sub in reach[other]))
            group = group or (sub,)
            placed.update(group)
            groups.append(group)
    ordered: list[tuple[int, ...]] = []
    left = list(groups)
    while left:
        ready = [
            group
            for group in left
            if not any(sub in reach[other] for other_group in left if other_group != group for other in other_group
                       for sub in group)
        ]  # fmt: skip
        chosen = min(ready, key=lambda group: group[0])
        ordered.append(chosen)
        left.remove(chosen)
    return [
        Stage(number, group, len(group) > 1 or any(sub in feeds[sub] for sub in group))
        for number, group in enumerate(ordered)
    ]


def _reachable(feeds: dict[int, set[int]], start: int) -> set[int]:
    """The sub-topologies ``start``'s records reach (itself only if they come back)."""
    seen: set[int] = set()
    stack: list[Any] = list(feeds[start])
    while stack:
        sub = stack.pop()
        if sub not in seen:
            seen.add(sub)
            stack.extend(feeds[sub])
    return seen
