"""Which record a task takes next: Kafka's ``PartitionGroup``, with Java's ``PriorityQueue``.

How it works (``PartitionGroup.nextRecord``, ``addRawRecords``): a task keeps one FIFO queue per
input partition (``RecordQueue``) and a priority queue of the *non-empty* ones, ordered by the
timestamp of their head record. The next record is the head of the queue with the smallest head
timestamp; that queue goes back into the priority queue if records remain. A queue enters the
priority queue when a record arrives while it is empty.

Two queues whose heads have the same timestamp are ordered as ``java.util.PriorityQueue`` (a binary
heap) leaves them; its ``offer`` and ``poll`` are reproduced here step for step (Python's ``heapq``
pops differently), so that kjoin takes records in TopologyTestDriver's order even on ties.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Generic, TypeVar

__all__ = ["PartitionGroup", "JavaPriorityQueue"]

T = TypeVar("T")


class JavaPriorityQueue(Generic[T]):
    """``java.util.PriorityQueue`` with a comparator given as a key function: ``offer``, ``poll``, ``peek``."""

    def __init__(self, key: Callable[[T], Any]) -> None:
        self._key = key
        self._items: list[T] = []

    def __len__(self) -> int:
        return len(self._items)

    def peek(self) -> T | None:
        return self._items[0] if self._items else None

    def offer(self, item: T) -> None:  # siftUpUsingComparator
        items = self._items
        items.append(item)
        k = len(items) - 1
        key = self._key(item)
        while k > 0:
            parent = (k - 1) >> 1
            if key >= self._key(items[parent]):
                break
            items[k] = items[parent]
            k = parent
        items[k] = item

    def poll(self) -> T | None:  # siftDownUsingComparator
        items = self._items
        if not items:
            return None
        result = items[0]
        last = items.pop()
        n = len(items)
        if n:
            k, key, half = 0, self._key(last), n >> 1
            while k < half:
                child = 2 * k + 1
                right = child + 1
                if right < n and self._key(items[child]) > self._key(items[right]):
                    child = right
                if key <= self._key(items[child]):
                    break
                items[k] = items[child]
                k = child
            items[k] = last
        return result


class PartitionGroup:
    """One task's input queues: ``add`` a record to its partition's queue, ``next`` takes the next record."""

    def __init__(self) -> None:
        self._queues: dict[tuple[str, int], deque[Any]] = {}
        self._by_time: JavaPriorityQueue[deque[Any]] = JavaPriorityQueue(lambda queue: queue[0].ts)
        self.buffered = 0

    def add(self, record: Any) -> None:
        queue = self._queues.setdefault((record.topic, record.partition), deque())
        queue.append(record)
        self.buffered += 1
        if len(queue) == 1:
            self._by_time.offer(queue)

    def head_ts(self) -> int | None:
        queue = self._by_time.peek()
        return None if queue is None else queue[0].ts

    def next(self) -> Any:
        queue = self._by_time.poll()
        if queue is None:
            return None
        record = queue.popleft()
        self.buffered -= 1
        if queue:
            self._by_time.offer(queue)
        return record
