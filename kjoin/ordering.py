"""The order in which a Kafka task picks records from its input partitions."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .records import Record, key_identity
from .times import lag_text, when

__all__ = [
    "merge_by_timestamp",
    "arrival_order",
    "Waiting",
    "PartitionGroup",
    "next_task",
    "TakenFirst",
    "ties_taken_first",
]


class PartitionGroup:
    """One Kafka task's input partitions, as ``org.apache.kafka.streams.processor.internals.PartitionGroup``
    keeps them: a queue of buffered records per partition, and the non-empty queues in a
    ``java.util.PriorityQueue`` ordered by the timestamp of their head record.

    A binary heap has no tie order of its own; this one is Java's exactly (``offer`` sifts up only
    past a strictly greater parent, ``poll`` moves the last element to the root and sifts it down
    past a strictly smaller child). So on equal head timestamps the task takes from the partition
    it did *not* take its last record from: ``nextRecord`` polls the queue, takes its head and
    offers the queue again, behind an equal one that was waiting; a queue that had nothing buffered
    joins behind too. Which queue goes first when several are offered at once (the first fetch) is
    the order they are offered in: kjoin offers them by rank, left before right (Kafka adds a
    poll's partitions in the order of the consumer's record map, a ``HashMap`` of the topic-
    partitions: an accident of the topic names, left before right for kjoin's oracle's topics)."""

    def __init__(self) -> None:
        self._queues: dict[Any, list[Any]] = {}
        self._taken: dict[Any, int] = {}
        self._heap: list[Any] = []  # the non-empty queues' names, java.util.PriorityQueue's array
        self.buffered = 0  # records added and not taken yet, over every partition

    def _head_ts(self, name: Any) -> int:
        return self._queues[name][self._taken[name]].ts

    def _buffered(self, name: Any) -> int:
        return len(self._queues[name]) - self._taken[name]

    def add(self, name: Any, records: Iterable[Any]) -> None:
        """``addRawRecords``: buffer ``records`` in partition ``name``'s queue; a queue that was empty
        is offered to the heap (behind any queue with the same head timestamp)."""
        queue = self._queues.setdefault(name, [])
        self._taken.setdefault(name, 0)
        was_empty = self._buffered(name) == 0
        before = len(queue)
        queue.extend(records)
        self.buffered += len(queue) - before
        if was_empty and self._buffered(name):
            self._offer(name)

    def peek(self) -> Any | None:
        """The record :meth:`next_record` would return, or None when nothing is buffered."""
        return self._queues[self._heap[0]][self._taken[self._heap[0]]] if self._heap else None

    def peek_partition(self) -> Any | None:
        return self._heap[0] if self._heap else None

    def next_record(self) -> Any:
        """``nextRecord``: poll the queue with the lowest head timestamp, take its head, offer it
        again if it still has records."""
        name = self._poll()
        record = self._queues[name][self._taken[name]]
        self._taken[name] += 1
        self.buffered -= 1
        if self._buffered(name):
            self._offer(name)
        return record

    def _offer(self, name: Any) -> None:  # java.util.PriorityQueue.siftUpUsingComparator
        heap, key = self._heap, self._head_ts(name)
        heap.append(name)
        k = len(heap) - 1
        while k > 0:
            parent = (k - 1) >> 1
            if key >= self._head_ts(heap[parent]):
                break
            heap[k] = heap[parent]
            k = parent
        heap[k] = name

    def _poll(self) -> Any:  # java.util.PriorityQueue.poll and siftDownUsingComparator
        heap = self._heap
        result, last = heap[0], heap.pop()
        if heap:
            key, k, n = self._head_ts(last), 0, len(heap)
            while k < n >> 1:
                child = 2 * k + 1
                if child + 1 < n and self._head_ts(heap[child]) > self._head_ts(heap[child + 1]):
                    child += 1
                if key <= self._head_ts(heap[child]):
                    break
                heap[k] = heap[child]
                k = child
            heap[k] = last
        return result


def next_task(groups: Mapping[Any, PartitionGroup]) -> Any | None:
    """Of the tasks with buffered records, the one whose next record has the lowest timestamp (then
    the lower task: a partition, or a topology's ``(sub-topology, partition)``): tasks are
    independent, this only fixes one interleaving of them."""
    ready = [(group.peek().ts, task) for task, group in groups.items() if group.peek() is not None]
    return min(ready)[1] if ready else None


def merge_by_timestamp(*topics: Iterable[Record]) -> list[Record]:
    """Interleave topics the way Kafka tasks pick records with every record buffered: each task
    (partition number) takes from the input partition whose head record has the lowest timestamp
    (:class:`PartitionGroup`).

    Each topic's records keep their own order within a partition (a partition is a log); only the
    choice *between* partitions looks at timestamps, so an out-of-order record still arrives late.
    On equal head timestamps a task takes from the partition it did not take its last record from
    (at the start: the left topic, then the next), as Kafka's ``PartitionGroup`` does (judged by a
    running application: ``kafka_oracle/broker_check.py``; ``kjoin.spark`` follows the same rule,
    :mod:`kjoin.spark.ties`). Tasks are interleaved by the timestamp of their next record, then
    partition.
    """
    logs: dict[int, dict[int, list[Record]]] = {}
    for rank, topic in enumerate(topics):
        for record in topic:
            logs.setdefault(record.partition, {}).setdefault(rank, []).append(record)
    groups: dict[int, PartitionGroup] = {}
    for partition, by_rank in sorted(logs.items()):
        group = groups[partition] = PartitionGroup()
        for rank in sorted(by_rank):
            group.add(rank, by_rank[rank])
    merged: list[Record] = []
    while (task := next_task(groups)) is not None:
        merged.append(groups[task].next_record())
    return merged


@dataclass(frozen=True)
class Waiting:
    """At a step taken out of timestamp order: the other side's records the task did not have yet."""

    side: str
    lag_ms: int
    head: Record
    """The next record of the other side's partition: its timestamp is earlier, so with both
    partitions buffered it would have come first."""
    partner: Record | None
    """The first not-yet-arrived record of the other side with this record's key and a
    timestamp no later than this one's, if any: the partner the record missed."""
    partition: int | None = None
    """The lagging partition, when the lag is its own (``arrival: {right: {partitions: {1: ...}}}``); ``None``: the
    whole side lags."""

    def explain(self, record: Record) -> str:
        head, partner = self.head, self.partner
        whose = "this record's partner" if partner is head else "its next record"
        lagged = lag_text(self.side, self.lag_ms, self.partition)
        text = (
            f"{lagged[0].upper()}{lagged[1:]}: {whose} (offset {head.offset}, key {head.key!r}, {when(head.ts)}) has "
            f"an earlier timestamp but had not arrived yet (it reaches the task at {when(head.ts + self.lag_ms)} at "
            "the earliest), and with max.task.idle.ms = 0 the task processed what it had"
        )
        if partner is not None and partner is not head:
            text += f"; this record's partner (offset {partner.offset}, {when(partner.ts)}) had not arrived yet either"
        return text + ". Had the task waited (max.task.idle.ms), it would have taken them first."


class KeyPositions:
    """One key's records in one queue: their positions in the queue and their timestamps, with the question both
    :func:`arrival_order` and :func:`ties_taken_first` ask per record: which is the first of them at or after a
    position whose timestamp is no later than a given one. A min segment tree over the timestamps answers it in
    O(log n); scanning the key's later records (as kjoin did) made a run of n records O(n^2 / keys)."""

    __slots__ = ("positions", "_size", "_tree", "_stamps")

    def __init__(self) -> None:
        self.positions: list[int] = []
        self._size = 0
        self._tree: list[float] = []
        self._stamps: list[int] = []

    def append(self, position: int, ts: int) -> None:
        self.positions.append(position)
        self._stamps.append(ts)

    def freeze(self) -> "KeyPositions":
        """Build the tree once every record is in."""
        size = 1
        while size < len(self._stamps):
            size *= 2
        tree = [float("inf")] * (2 * size)
        tree[size : size + len(self._stamps)] = self._stamps
        for node in range(size - 1, 0, -1):
            tree[node] = min(tree[2 * node], tree[2 * node + 1])
        self._size, self._tree = size, tree
        del self._stamps
        return self

    def first_no_later(self, start: int, ts: int) -> int | None:
        """The queue position of the first of these records at position ``start`` or after whose timestamp is no
        later than ``ts``, or ``None``."""
        index = bisect.bisect_left(self.positions, start)
        if index >= len(self.positions):
            return None
        tree, node = self._tree, index + self._size
        while tree[node] > ts:  # climb to the next subtree to the right that holds a timestamp no later than ts
            while node & 1:
                node >>= 1
            if node == 0:
                return None
            node += 1
        while node < self._size:  # then down to its first such leaf
            node = 2 * node if tree[2 * node] <= ts else 2 * node + 1
        return self.positions[node - self._size]


def key_positions(log: Iterable[Any]) -> dict[Any, KeyPositions]:
    """Per key (by :func:`kjoin.records.key_identity`) of the records of ``log`` (one queue, in order), its
    :class:`KeyPositions`; null keys have none."""
    by_key: dict[Any, KeyPositions] = {}
    for position, record in enumerate(log):
        if record.key is not None:
            key = key_identity(record.key)
            (by_key.get(key) or by_key.setdefault(key, KeyPositions())).append(position, record.ts)
    return {key: found.freeze() for key, found in by_key.items()}


def arrival_order(records: Sequence[Any], arrival: Any) -> list[tuple[Any, Waiting | None]]:
    """The order in which Kafka tasks take ``records`` when a side lags (``arrival``: a
    :class:`kjoin.scenario.Arrival`), with, per record, what it did not wait for.

    A record of side ``s`` reaches its task at ``ts + lag_s`` (the lag of its partition, when it has one of its
    own), or when the record ahead of it in
    its partition did if that is later (a partition is delivered in order). The clock is the
    records' own time: whenever something has arrived, it is buffered in its task's
    :class:`PartitionGroup` (queues that become non-empty at one moment are offered left first, the
    one the task took its last record from last: so with both lags 0 this is the merge with every
    record buffered), and the task takes, of its partitions that have a record, the one whose next record
    has the lowest timestamp (on a tie: not the one it took its last record from; a partition that
    had nothing buffered joins behind); when nothing has arrived, time moves to the next arrival.
    Each (side, partition) keeps its listed order. With both lags 0 this is
    :func:`merge_by_timestamp`."""
    queues: dict[tuple[int, int], list[tuple[int, Any]]] = {}
    for record in records:
        side = record.side.value
        queue = queues.setdefault((record.partition, 0 if side == "left" else 1), [])
        arrives = record.ts + arrival.lag_ms(side, record.partition)
        queue.append((max(arrives, queue[-1][0]) if queue else arrives, record))
    heads = {where: 0 for where in queues}  # each queue's next record not taken yet
    delivered = {where: 0 for where in queues}  # each queue's records buffered in its task so far
    positions = {where: key_positions(record for _, record in queue) for where, queue in queues.items()}
    groups = {partition: PartitionGroup() for partition, _ in queues}
    last_taken: dict[int, int] = {}  # per task, the side (rank) it took its last record from
    now = None
    out: list[tuple[Any, Waiting | None]] = []
    while heads:
        if now is not None:  # buffer what has arrived: left first, the partition taken from last behind
            for where in sorted(queues, key=lambda w: (w[0], last_taken.get(w[0]) == w[1], w[1])):
                queue, first = queues[where], delivered[where]
                last = first
                while last < len(queue) and queue[last][0] <= now:
                    last += 1
                if last > first:
                    groups[where[0]].add(where[1], [record for _, record in queue[first:last]])
                    delivered[where] = last
        task = next_task(groups)
        if task is None:
            now = min(queues[w][delivered[w]][0] for w in queues if delivered[w] < len(queues[w]))
            continue
        rank = last_taken[task] = groups[task].peek_partition()
        record = groups[task].next_record()
        other = (task, 1 - rank)
        out.append((record, _waiting(record, queues, heads, delivered, positions, other, arrival)))
        heads[(task, rank)] += 1
        if heads[(task, rank)] == len(queues[(task, rank)]):
            del heads[(task, rank)]
    return out


def _waiting(
    record: Any, queues: dict, heads: dict, delivered: dict, positions: dict, other: tuple[int, int], arrival: Any
) -> Waiting | None:
    """What ``record`` did not wait for: the other side's next record, when it had not arrived and has
    an earlier timestamp. (On an equal timestamp waiting changes nothing: a partition that had
    nothing buffered joins the :class:`PartitionGroup` behind one with the same head timestamp.)"""
    if other not in heads or delivered[other] > heads[other]:
        return None
    queue, start = queues[other], heads[other]
    head = queue[start][1]
    if head.ts >= record.ts:
        return None
    partner = None
    same_key = None if record.key is None else positions[other].get(key_identity(record.key))
    if same_key is not None:  # the first record of this key not taken yet with a timestamp no later
        position = same_key.first_no_later(start, record.ts)
        partner = None if position is None else queue[position][1]
    side = "left" if other[1] == 0 else "right"
    own = other[0] if other[0] in arrival.partition_lags(side) else None
    return Waiting(side, arrival.lag_ms(side, other[0]), head, partner, own)


TIE_AT_START = (
    "it is the task's first record, and on a tie at the start kjoin takes the left partition first (Kafka takes "
    "whichever the consumer's HashMap of topic-partitions lists first: an accident of the topic names)"
)


@dataclass(frozen=True)
class TakenFirst:
    """A record taken before a record of the other side with the same timestamp, its key's partner among them:
    the tie the verdict turned on."""

    side: str
    """The other side (whose partition waited)."""
    head: Record
    """The other partition's next record: its timestamp equals this record's."""
    partner: Record
    """The first record of the other side with this record's key and a timestamp no later, taken after it."""
    previous: Record | None
    """The task's record before this one (``None``: this is the task's first)."""
    lag_ms: int = 0
    """The other side's ``arrival`` lag (0: every record buffered)."""
    by_arrival: bool = False
    """Whether the order came from an ``arrival`` model (else: the scenario's own order of events)."""
    partition: int | None = None
    """The lagging partition, when ``lag_ms`` is its own lag; ``None``: the whole side's."""

    def explain(self, record: Record) -> str:
        head, partner, previous = self.head, self.partner, self.previous
        whose = "this record's partner" if partner is head else "its next record"
        text = (
            f"The {self.side} partition's next record ({whose}: offset {head.offset}, key {head.key!r}, "
            f"{when(head.ts)}) had the same timestamp as this one, and Kafka's PartitionGroup took this one first: "
        )
        if self.lag_ms > 0:
            text += (
                f"{lag_text(self.side, self.lag_ms, self.partition)}, so it had not been fetched yet (its record "
                f"arrives at {when(head.ts + self.lag_ms)}); with max.task.idle.ms = 0 the task does not wait for "
                "records not produced yet, and a partition that joins the queue goes behind one with the same head "
                "timestamp"
            )
        elif previous is None:
            text += TIE_AT_START
        elif previous.side.value == self.side:
            text += (
                "on equal timestamps it takes the partition it did not take its last record from, and it had just "
                f"taken the {self.side} record at offset {previous.offset}"
            )
        elif self.by_arrival:
            text += (
                f"the {self.side} partition had nothing buffered when this record's partition was queued, and a "
                "partition that joins the queue goes behind one with the same head timestamp"
            )
        else:
            text = (
                f"The {self.side} partition's next record ({whose}: offset {head.offset}, key {head.key!r}, ts "
                f"{head.ts}) had the same timestamp as this one, and the scenario lists this one first; with both "
                f"partitions buffered Kafka's PartitionGroup would take the {self.side} one first here (the task had "
                "just taken from this record's partition): kjoin.merge_by_timestamp gives Kafka's order"
            )
        if partner is not head:
            text += f"; this record's partner (offset {partner.offset}, ts {partner.ts}) was behind it"
        return text + ". So the partner was processed after this record."


def ties_taken_first(records: Sequence[Any], arrival: Any = None) -> list[TakenFirst | None]:
    """Per record of ``records`` (in processing order): the tie with the other side it was taken on, when its
    key's partner (a record of the other side, same key, timestamp no later) was among the records it went
    before (:class:`TakenFirst`), else ``None``. ``arrival``: the scenario's lags, named in the sentence."""
    logs: dict[tuple[int, str], list[Any]] = {}
    for record in records:
        logs.setdefault((record.partition, record.side.value), []).append(record)
    positions = {where: key_positions(log) for where, log in logs.items()}
    taken = {where: 0 for where in logs}
    previous: dict[int, Any] = {}
    out: list[TakenFirst | None] = []
    for record in records:
        side = record.side.value
        other = (record.partition, "right" if side == "left" else "left")
        found = None
        start = taken.get(other, 0)
        log = logs.get(other, [])
        if record.key is not None and start < len(log) and log[start].ts == record.ts:
            same_key = positions[other].get(key_identity(record.key))
            position = None if same_key is None else same_key.first_no_later(start, record.ts)
            if position is not None:
                lag = arrival.lag_ms(other[1], record.partition) if arrival is not None else 0
                own = arrival is not None and record.partition in arrival.partition_lags(other[1])
                found = TakenFirst(
                    other[1],
                    log[start],
                    log[position],
                    previous.get(record.partition),
                    lag,
                    arrival is not None,
                    record.partition if own else None,
                )
        out.append(found)
        taken[(record.partition, side)] += 1
        previous[record.partition] = record
    return out
