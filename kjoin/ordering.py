"""The order in which a Kafka task picks records from its input partitions."""

from __future__ import annotations

import heapq
from typing import Iterable

from .records import Record

__all__ = ["merge_by_timestamp"]


def merge_by_timestamp(*topics: Iterable[Record]) -> list[Record]:
    """Interleave topics the way a Kafka task picks records: always the partition whose
    head record has the lowest timestamp.

    Each topic's records keep their own order within a partition (a partition is a log);
    only the choice *between* partitions looks at timestamps, so an out-of-order record
    still arrives late. Ties go to the left topic, then to the lower partition.
    """
    queues: dict[tuple[int, int], list[Record]] = {}
    for rank, topic in enumerate(topics):
        for record in topic:
            queues.setdefault((record.partition, rank), []).append(record)
    heads = [(queue[0].ts, rank, partition, 0) for (partition, rank), queue in queues.items()]
    heapq.heapify(heads)
    merged: list[Record] = []
    while heads:
        _, rank, partition, index = heapq.heappop(heads)
        queue = queues[(partition, rank)]
        merged.append(queue[index])
        if index + 1 < len(queue):
            heapq.heappush(heads, (queue[index + 1].ts, rank, partition, index + 1))
    return merged
