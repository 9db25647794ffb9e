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
    """The record waits: in the outer-join buffer until its window closes plus grace, in the
    grace buffer, or in a record cache until the next commit."""
    STORED = "stored"
    """The record updated state but, by the join's rules, triggered no output."""
    NO_MATCH = "no-match"
    """The record was looked up against the other side and found nothing to join."""
    DROPPED = "dropped"
    """The record was skipped: it neither joined nor entered state."""
    FORWARDED = "forwarded"
    """A topology's record that was passed on without a join: a source, filter, mapper or re-key
    handed it to the next node, or it was written to a topic (an output topic, or a repartition
    topic whose task processes it later) (:mod:`kjoin.topology`)."""


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
    TIME_LIMIT = "time-limit"
    """``suppress(untilTimeLimit)``: the update waits in the buffer until the suppression's stream time is its key's
    first buffered timestamp plus the time limit (or the buffer is full and emits early)."""
    TABLE_UPDATE = "table-update"
    """A table update only changes the table; in a stream-table join it never triggers output."""
    NOT_A_TRIGGER = "not-a-trigger"
    """Old semantics (0.10.0/0.10.1): a right record of a stream-stream left join only enters
    the right window store; it does not look up the left side."""
    NOTHING_TO_DELETE = "nothing-to-delete"
    """A table-table delete (or a null update) for a key that had no join result: no tombstone
    is needed (KIP-77 removed these "unnecessary" tombstones)."""
    IDEMPOTENT_UPDATE = "idempotent-update"
    """Kafka 2.6.0, 2.6.1 and 2.7.0 (KIP-557, disabled again by KAFKA-12508): a source table update whose value
    serializes to the bytes the table already holds for the key, at a timestamp no older (or a delete of an absent
    key), is dropped: the store keeps the old value and timestamp, nothing is forwarded (the
    ``idempotent-update-skip`` metric counts it)."""
    EXPIRED = "expired"
    """The record is older than its own window store's retention (Kafka 3.4+), or falls in a segment
    the store already dropped (before 3.4): it was joined on arrival but never becomes visible in
    the store."""
    NULL_FOREIGN_KEY = "null-foreign-key"
    """Foreign-key join: the extractor returned null where Kafka cannot subscribe (inner joins,
    and left joins before 3.7): skipped with WARN and ``dropped-records``."""
    NULL_FOREIGN_KEY_UNSUBSCRIBED = "null-foreign-key-unsubscribed"
    """Foreign-key inner join, 3.9.1 and 4.0.1+ (KAFKA-16434): the left row's foreign key became
    null. There is nothing to subscribe to (Kafka still logs "Skipping record due to null foreign
    key" and counts it in ``dropped-records``), but the left table keeps the update and the row
    unsubscribes from its old foreign key with ``DELETE_KEY_AND_PROPAGATE``: the answer deletes the
    row's old result, if it had one. Before, the update was skipped and the old result stayed."""
    SUBSCRIPTION_SENT = "subscription-sent"
    """Foreign-key join: the left update is stored and sent subscriptions to the right side;
    its result, if any, comes back with a response."""
    RESPONSE_SENT = "response-sent"
    """Foreign-key join: the right side stored the subscription or the right update and sent
    responses to the left side; results come when they are delivered."""
    NO_SUBSCRIBER = "no-subscriber"
    """Foreign-key join: a right update whose foreign key no left row subscribes to."""
    NO_PROPAGATE = "no-propagate"
    """Foreign-key join: the subscription's instruction only updates the subscription store
    (``DELETE_KEY_NO_PROPAGATE``), or asks for an answer only if the right value exists and it
    does not (``PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE``)."""
    STALE_RESPONSE = "stale-response"
    """Foreign-key join: the response's hash no longer matches the hash of the current left
    value, so the left row changed after the subscription was sent: dropped as stale."""
    OUT_OF_ORDER_VERSION = "out-of-order-version"
    """Versioned table: the update is stored as an older version but is not the latest, so a
    table-table or foreign-key join emits nothing for it (KIP-914; INFO "Skipping out-of-order
    record from versioned table while performing table-table join.")."""
    EXPIRED_PUT = "expired-put"
    """Versioned table: the update is older than observed stream time minus history retention;
    the store refuses it (WARN "Skipping record for expired put.") and nothing is forwarded."""
    GRACE_PERIOD = "grace-period"
    """Stream-table join with a grace period: the stream record waits in the grace buffer until
    the buffer's stream time reaches its ts + grace, then joins the table version of its ts."""
    RECORD_CACHE = "record-cache"
    """A caching table store holds the update until the next commit, then forwards only the
    newest update of each key (KIP-63); reads see the new value at once."""
    REPLACED_IN_CACHE = "replaced-in-cache"
    """A caching result store keeps only the newest result of a key until the commit: this
    record's result was replaced there by a later result for the same key (one computed from
    an earlier record's update, flushed from a source table's cache in the same commit), so
    whatever the step forwards belongs to earlier records."""
    NULL_KEY_IN_GRACE_BUFFER = "null-key-in-grace-buffer"
    """Stream-table left join with a grace period: a null-key record reaches ``buffer.put``,
    where Kafka throws a NullPointerException and the task fails. kjoin skips it to go on. Under a processing
    exception handler that continues, Kafka's handler catches it: :attr:`PROCESSING_EXCEPTION`."""
    NULL_GROUP_KEY = "null-group-key"
    """Aggregate: the group-by mapper returned a null key (or a null value) for the record, so
    nothing is written to the repartition topic for it (Kafka's ``KTableRepartitionMap`` skips
    such pairs); the record still updates its source table."""
    BEHIND_RETENTION = "behind-retention"
    """WTable join: the lookup found nothing because the window it asked for is behind its window
    store's retention (it starts at or before the store's observed time minus the retention).
    Kafka 3.4+ hides such a window from reads though its segment still lives; the update itself
    is stored, only no output follows."""
    FILTERED = "filtered"
    """Topology: a ``filter``'s predicate returned false for the record, which goes no further."""
    NOT_FORWARDED = "not-forwarded"
    """Topology: a ``process`` or ``process_values`` processor forwarded nothing for the record (its own decision,
    as a de-duplicator drops a repeat), or a ``split`` sent it to no branch (no predicate held, no default)."""
    NULL_KEY_NOT_REPARTITIONED = "null-key-not-repartitioned"
    """Topology: a re-keyed record with a null key reached a repartition topic; Kafka filters null
    keys out before writing one (``createRepartitionedSource``'s ``k != null`` filter). Since 3.7
    (KIP-962) it keeps them when a join that takes null keys (a left stream-table join, a left or
    outer stream-stream join) is downstream (``NodesWithRelaxedNullKeyJoinDownstream``)."""

    NULL_JOIN_KEY = "null-join-key"
    """KStream-GlobalKTable join: the key selector gave null for the stream record, so there is no table key to
    look up. From 2.7 (KAFKA-10277) Kafka skips the record ("Skipping record due to null join key or value"),
    in a left join too; before, an inner join emitted nothing and a left join joined it with null."""
    EXPIRED_WINDOW = "expired-window"
    """Windowed aggregate: every window the record belongs to is closed, that is
    ``window end + grace <= stream time`` (Kafka logs "Skipping record for expired window." and
    counts it in ``dropped-records``); the record changes no aggregate."""
    PROCESSING_EXCEPTION = "processing-exception"
    """Topology, 3.9+ (KIP-1033): a user function threw while this node handled the record, and the processing
    exception handler is ``continue`` (``LogAndContinueProcessingExceptionHandler``): the record goes no further from
    this node (its other branches still get it) and counts in ``dropped-records``; with a dead-letter queue
    (KIP-1034, 4.2) the record the task took is written there. The default handler, ``fail``, stops the run
    instead."""
