"""Times in the user's terms: a record timestamp as a date (an application's) or ``ts 40`` (a scenario's), a span of
milliseconds as a duration, and a lagging side or partition as a sentence. The reference engine's explanations and
the Spark ``why`` texts both write them."""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["DATE_FROM_MS", "when", "moment", "stamp", "at", "span", "duration", "lag_text"]

DATE_FROM_MS = 10**11
"""Timestamps from this one on (March 1973) are written as dates: an application's; smaller ones (a
scenario's 3, 40 ...) stay milliseconds."""
DATE_UNTIL_MS = 253_402_300_799_999
"""The last millisecond of the year 9999, the last a date can be written for; later timestamps (up to Kafka's
largest, ``Long.MAX_VALUE``) stay milliseconds."""


def _dated(ts: int | None) -> bool:
    return ts is not None and DATE_FROM_MS <= abs(ts) <= DATE_UNTIL_MS


def when(ts: int) -> str:
    """A record timestamp in the user's terms: ``2026-11-25 09:14:03.120 UTC (ts 1795...)`` or ``ts 40``."""
    if not _dated(ts):
        return f"ts {ts}"
    moment = datetime.fromtimestamp(ts / 1000, timezone.utc)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{ts % 1000:03d} UTC"


def moment(ts: int) -> str:
    """A point in time inside a sentence that already says what it is (``stream time 40``, ``until stream time
    passes 2026-11-25 09:14:03.120 UTC``): a scenario's number bare, an application's as a date."""
    if not _dated(ts):
        return f"{ts}"
    return when(ts)


def stamp(ts: int) -> str:
    """A timestamp alone, as :func:`at` appends it: ``@40`` (a scenario's), ``at 2026-11-25 09:14:03.120 UTC`` (an
    application's)."""
    if not _dated(ts):
        return f"@{ts}"
    return f"at {when(ts)}"


def at(text: str, ts: int) -> str:
    """A value with its timestamp, as the explanations name it: ``A@40`` (a scenario's), ``Ann at 2026-11-25
    09:14:03.120 UTC`` (an application's)."""
    return f"{text}{stamp(ts)}" if not _dated(ts) else f"{text} {stamp(ts)}"


def span(start: int, end: int) -> str:
    """A window of timestamps, both ends inclusive: ``[30, 50]``, or ``[2026-11-25 09:14:03.120 UTC, 09:14:05.120
    UTC]`` (the end's date left out when it is the start's)."""
    if not _dated(start) and not _dated(end):
        return f"[{start}, {end}]"
    first, last = when(start), when(end)
    if first[:11] == last[:11]:
        last = last[11:]
    return f"[{first}, {last}]"


def duration(ms: int) -> str:
    """A span of milliseconds in the user's terms: ``15 ms``, ``4.250 s``, ``2 h 30 min 42.983 s``."""
    sign, ms = ("-" if ms < 0 else ""), abs(int(ms))
    if ms < 1000:
        return f"{sign}{ms} ms"
    parts = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000)):
        if ms >= size:
            parts.append(f"{ms // size} {unit}")
            ms %= size
    if ms:
        parts.append(f"{ms // 1000}.{ms % 1000:03d} s" if ms % 1000 else f"{ms // 1000} s")
    return sign + " ".join(parts)


def lag_text(side: str, lag_ms: int, partition: int | None = None) -> str:
    """A lag as a sentence's subject: ``the right topic's partition 1 lagged 1.001 s (arrival: {right: {partitions:
    {1: 1001}}})`` for one partition's own lag, ``the right partition lagged 5 s (arrival: {right: {lag_ms: 5000}})``
    for a whole side's."""
    if partition is None:
        return f"the {side} partition lagged {duration(lag_ms)} (arrival: {{{side}: {{lag_ms: {lag_ms}}}}})"
    return (
        f"the {side} topic's partition {partition} lagged {duration(lag_ms)} (arrival: {{{side}: {{partitions: "
        f"{{{partition}: {lag_ms}}}}}}})"
    )
