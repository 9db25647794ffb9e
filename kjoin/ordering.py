"""The order in which a Kafka task picks records from its input partitions."""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from .records import Record, key_identity

__all__ = ["merge_by_timestamp", "arrival_order", "Waiting"]


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


@dataclass(frozen=True)
class Waiting:
    """At a step taken out of timestamp order: the other side's records the task did not have yet."""

    side: str
    lag_ms: int
    head: Record
    """The next record of the other side's partition: its timestamp is earlier (or equal, and
    it is the left side), so with both partitions buffered it would have come first."""
    partner: Record | None
    """The first not-yet-arrived record of the other side with this record's key and a
    timestamp no later than this one's, if any: the partner the record missed."""

    def explain(self, record: Record) -> str:
        head, partner = self.head, self.partner
        whose = "this record's partner" if partner is head else "its next record"
        text = (
            f"The {self.side} partition lagged (arrival.{self.side}.lag_ms = {self.lag_ms}): {whose} "
            f"(offset {head.offset}, key {head.key!r}, ts {head.ts}) has an earlier timestamp but had not arrived yet, "
            "and with max.task.idle.ms = 0 the task processed what it had"
        )
        if partner is not None and partner is not head:
            text += f"; this record's partner (offset {partner.offset}, ts {partner.ts}) had not arrived yet either"
        return text + ". Had the task waited (max.task.idle.ms), it would have taken them first."


def arrival_order(records: Sequence[Any], arrival: Any) -> list[tuple[Any, Waiting | None]]:
    """The order in which Kafka tasks take ``records`` when a side lags (``arrival``: a
    :class:`kjoin.scenario.Arrival`), with, per record, what it did not wait for.

    A record of side ``s`` reaches its task at ``ts + lag_s``, or when the record ahead of it in
    its partition did if that is later (a partition is delivered in order). The clock is the
    records' own time: whenever something has arrived, the task takes, of its partitions that
    have a record, the one whose next record has the lowest timestamp (ties: left, then the lower
    partition); when nothing has, time moves to the next arrival. Each (side, partition) keeps
    its listed order. With both lags 0 this is :func:`merge_by_timestamp`."""
    queues: dict[tuple[int, int], list[tuple[int, Any]]] = {}
    for record in records:
        side = record.side.value
        queue = queues.setdefault((record.partition, 0 if side == "left" else 1), [])
        arrives = record.ts + arrival.lag_ms(side)
        queue.append((max(arrives, queue[-1][0]) if queue else arrives, record))
    heads = {where: 0 for where in queues}
    positions: dict[tuple[int, int], dict[Any, list[int]]] = {}  # each queue's positions of each key
    for where, queue in queues.items():
        by_key = positions[where] = {}
        for position, (_, record) in enumerate(queue):
            if record.key is not None:
                by_key.setdefault(key_identity(record.key), []).append(position)
    now = None
    out: list[tuple[Any, Waiting | None]] = []
    while heads:
        ready = [
            (queues[w][i][1].ts, w[1], w[0]) for w, i in heads.items() if now is not None and queues[w][i][0] <= now
        ]
        if not ready:
            now = min(queues[w][i][0] for w, i in heads.items())
            continue
        _, rank, partition = min(ready)
        record = queues[(partition, rank)][heads[(partition, rank)]][1]
        out.append((record, _waiting(record, queues, heads, positions, (partition, 1 - rank), arrival)))
        heads[(partition, rank)] += 1
        if heads[(partition, rank)] == len(queues[(partition, rank)]):
            del heads[(partition, rank)]
    return out


def _waiting(
    record: Any, queues: dict, heads: dict, positions: dict, other: tuple[int, int], arrival: Any
) -> Waiting | None:
    if other not in heads:
        return None
    queue, start = queues[other], heads[other]
    head = queue[start][1]
    if not (head.ts < record.ts or (head.ts == record.ts and other[1] == 0)):
        return None
    partner = None
    if record.key is not None:  # the first record of this key not taken yet with a timestamp no later
        same_key = positions[other].get(key_identity(record.key), ())
        for position in same_key[bisect.bisect_left(same_key, start) :]:
            if queue[position][1].ts <= record.ts:
                partner = queue[position][1]
                break
    side = "left" if other[1] == 0 else "right"
    return Waiting(side, arrival.lag_ms(side), head, partner)
