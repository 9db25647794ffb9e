"""Where records sit: scenarios whose records are, or are no longer, co-partitioned.

Two topics are **co-partitioned** when a key lands on the same partition number in both: the
same partition count, and records placed by the same partitioner on the same key bytes. A
join's task ``n`` reads partition ``n`` of both topics, so only co-partitioned records can
meet. These helpers change where one side's records sit and leave everything else (keys,
values, timestamps, processing order) as it was:

- :func:`round_robin`: the side's records placed on partitions in turn, as a producer whose
  partitioner ignores the key would place them: the topic is no longer co-partitioned;
- :func:`repartition`: the side's records placed by Kafka's default partitioner on their key,
  as ``KStream#repartition()`` (or a join after ``selectKey``) places them by writing them
  through a repartition topic. (Through a real repartition topic records of different
  partitions can also interleave differently; kjoin keeps the scenario's processing order.)
"""

from __future__ import annotations

import dataclasses

from kjoin.records import Side
from kjoin.scenario import Event, Scenario

__all__ = ["round_robin", "repartition"]


def round_robin(scenario: Scenario, side: str) -> Scenario:
    """``scenario`` with the records of ``side`` (``left`` or ``right``) on partitions 0, 1,
    2, … in turn, whatever their keys; their offsets are assigned anew."""
    chosen = Side(side)
    events, turn = [], 0
    for event in scenario.events:
        if isinstance(event, Event) and event.side is chosen:
            event = dataclasses.replace(event, partition=turn % scenario.partitions, offset=None)
            turn += 1
        events.append(event)
    return dataclasses.replace(scenario, events=tuple(events))


def repartition(scenario: Scenario, side: str | None = None) -> Scenario:
    """``scenario`` with the records of ``side`` (or of both sides) placed by the default
    partitioner on their keys (their ``partition`` and ``offset`` are assigned anew)."""
    chosen = None if side is None else Side(side)
    events = tuple(
        dataclasses.replace(event, partition=None, offset=None)
        if isinstance(event, Event) and (chosen is None or event.side is chosen)
        else event
        for event in scenario.events
    )
    return dataclasses.replace(scenario, events=events)
