"""Orders counted and payments concatenated per key in windows of 10 ms, the payments' windowed table left-joined with
the order counts: the topology that tests/test_topology_suppressed_windows.py reads through a window-close suppression
and tests/test_diff.py plants for ``Semantics.window_retention_size_and_grace`` (KAFKA-7106)."""

from __future__ import annotations

from typing import Any

WINDOW_MS = 10

JUMP_EVENTS: list[dict[str, Any]] = [
    {"topic": "orders", "key": "k1", "value": "a", "ts": 1},
    {"topic": "pays", "key": "k1", "value": "P", "ts": 2},
    {"topic": "orders", "key": "k2", "value": "b", "ts": 100000},  # a jump of 100 s: k1's window closes
    {"topic": "pays", "key": "k1", "value": "R", "ts": 5},  # reads k1's count, if its store still keeps the window
]
"""``k1``'s window counted, closed by a jump of 100 s of the orders, and read again by a payment: whether the read
finds the count is whether the count's store kept the window. The payment is in time whatever the payments' grace:
each windowed aggregate keeps a stream time of its own, and the payments' is 2 (the real library agrees on 2.8.2 and
3.0.1 with a grace of 0 as of 200 s)."""


def orders_counts_joined(*, pays_grace_ms: int = 0, suppressed: bool = True) -> list[dict[str, Any]]:
    """The topology's nodes, written to ``out``: ``c1`` counts the orders (grace 0), ``c2`` concatenates the payments
    (grace ``pays_grace_ms``), and ``j`` left-joins ``c2`` with the counts, read through ``final`` (suppressed until
    their window closes) when ``suppressed``, else ``c1`` itself."""
    counts = "final" if suppressed else "c1"
    return [
        {"name": "orders", "stream": "orders"},
        {"name": "pays", "stream": "pays"},
        {"name": "g1", "group_by_key": True, "input": "orders"},
        {"name": "w1", "windowed_by": {"size_ms": WINDOW_MS, "grace_ms": 0}, "input": "g1"},
        {"name": "c1", "count": True, "input": "w1"},
        *([{"name": "final", "suppress": {"until": "window_closes"}, "input": "c1"}] if suppressed else []),
        {"name": "g2", "group_by_key": True, "input": "pays"},
        {"name": "w2", "windowed_by": {"size_ms": WINDOW_MS, "grace_ms": pays_grace_ms}, "input": "g2"},
        {"name": "c2", "reduce": "concat", "input": "w2"},
        {"name": "j", "left_join": ["c2", counts]},
        {"name": "out", "to": "out", "input": "j"},
    ]
