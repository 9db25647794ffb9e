"""What happened to an input record: its fate, and the named reason behind it.

Every input record is accounted for. It produced results (``JOINED``), waits in a
buffer until a known time (``BUFFERED``), changed state only (``STORED``), found no
partner (``NO_MATCH``), or was skipped (``DROPPED``) — the last three always with a
:class:`Reason` the user can read.
"""

from __future__ import annotations

import enum

__all__ = ["Fate", "Reason"]


class Fate(enum.Enum):
    """The fate of one input record."""

    JOINED = "joined"
    """The record produced at least one output of its own."""
    BUFFERED = "buffered"
    """The record waits in the outer-join buffer until its window closes plus grace."""
    STORED = "stored"
    """The record updated state but, by the join's rules, triggered no output."""
    NO_MATCH = "no-match"
    """The record was looked up against the other side and found nothing to join."""
    DROPPED = "dropped"
    """The record was skipped: it neither joined nor entered state."""


class Reason(enum.Enum):
    """Why a record produced no output of its own."""

    NULL_KEY = "null-key"
    """A null key cannot be joined or stored (Kafka logs "Skipping record due to null key")."""
    NULL_VALUE = "null-value"
    """A stream record with a null value is skipped (since KIP-77, 0.10.2)."""
    NO_PARTNER = "no-partner"
    """The lookup in the other side's store found nothing to join with."""
    WINDOW_OPEN = "window-open"
    """Left/outer join, 3.1+: no partner yet; held until the window closes plus grace."""
    TABLE_UPDATE = "table-update"
    """A table update only changes the table; in a stream-table join it never triggers output."""
    NOT_A_TRIGGER = "not-a-trigger"
    """Old semantics (0.10.0/0.10.1): a right record of a stream-stream left join only enters
    the right window store; it does not look up the left side."""
    NOTHING_TO_DELETE = "nothing-to-delete"
    """A table-table delete (or a null update) for a key that had no join result: no tombstone
    is needed (KIP-77 removed these "unnecessary" tombstones)."""
    EXPIRED = "expired"
    """The record is older than its own window store's retention: it was joined on arrival but
    never becomes visible in the store."""
