"""What happened to a step's record, in the words every view uses.

:func:`fate_label` turns a step's fate, reason and outputs into one short phrase: the stepper's
header, :func:`~kjoin_viz.show_step`, the log and the predict widget all print it, so a record
is described the same way everywhere. The phrase says exactly what happened:

- ``joined: 2 results``: the joiner was called with partners from the other side;
- ``emitted eagerly with null``: a left/outer result with null for the missing side, emitted at
  once (before 3.1, or with the deprecated window API); a later partner is emitted too;
- ``emitted with null at once: its window had already closed``: 3.1+, a record that arrived
  after stream time had passed its window end;
- ``emitted with null: a delete on the right, the joiner got null for it``: a table-table
  left/outer result when the other side deletes its row (Kafka calls the joiner; it
  gets null for that side, also when there was no row to delete);
- ``joined: 1 result (its null value went to the joiner)``: 0.10.0 and 0.10.1, a stream record with a null value
  looked up the other side and found a partner (a stream's null value is not a delete);
- ``tombstone: the join result is deleted``;
- ``held until stream time passes 60`` (outer-join buffer), ``held in the grace buffer until
  buffer time 15``, ``held in the record cache until the next commit``;
- ``stored: its result was replaced in the result cache by an earlier record's``: with record
  caching, a commit flushed an earlier record's update whose result replaced this record's; what
  the step forwards belongs to earlier records (the headline says "also emitted for earlier records");
- ``stored: …`` and ``not lost: stored as an older version, no result``: state changed, no
  output, and nothing is lost;
- ``no match: no output``;
- ``dropped: null value``, ``dropped: late (…)``: the record is skipped.

Each label has a ``tone``: the answer's category in the predict widget and the colour of the
label. Only ``dropped`` is drawn red.
"""

from __future__ import annotations

from typing import Any

import html
from dataclasses import dataclass

from kjoin.fates import Fate, Reason
from kjoin.records import OutputKind
from kjoin.trace import Step

from .values import show_value

__all__ = ["FateLabel", "fate_label", "TONES", "AGGREGATE_TONES", "tones_for", "TONE_COLOURS", "label_html"]

TONES = {
    "joined": "joins: emits result(s) with partner(s) from the other side",
    "null-result": "emits a result with null for the missing side",
    "tombstone": "emits a tombstone: a join result is deleted",
    "held": "is held back in a buffer or cache: no result of its own yet",
    "stored": "only updates state (or passes a message on): no result of its own",
    "no-match": "looks up the other side, finds no partner: no result of its own",
    "dropped": "is dropped: skipped, nothing is stored or emitted for it",
}
"""The categories of what a record does, in plain words (the predict widget's choices). They speak of
the record's *own* result: the step that holds a record may still emit an earlier record's
(``T@60`` is held while its step emits ``null-s@45``), so no choice says the step emits nothing."""

AGGREGATE_TONES = {
    **TONES,
    "aggregated": "updates aggregate(s): emits the new aggregate of every group or window it changed",
}
"""The choices for an aggregate's trace (``table-aggregate``, ``window-aggregate``): an aggregate
update is not a join result."""

AGGREGATE_JOINS = ("table-aggregate", "window-aggregate")


def tones_for(trace: object) -> dict[str, str]:
    """The tones a record of ``trace`` can have: :data:`TONES`, plus ``aggregated`` for an aggregate."""
    scenario = getattr(trace, "scenario", None)
    return AGGREGATE_TONES if getattr(scenario, "join", None) in AGGREGATE_JOINS else TONES


TONE_COLOURS = {
    "aggregated": "#0b6e4f",
    "joined": "#1a6b1a",
    "null-result": "#2b6f8a",
    "tombstone": "#6b3fa0",
    "held": "#a66d00",
    "stored": "#444",
    "no-match": "#666",
    "dropped": "#b22",
}

_HELD = {
    Reason.WINDOW_OPEN: "held until stream time passes {until}",
    Reason.GRACE_PERIOD: "held in the grace buffer until buffer time {until}",
    Reason.RECORD_CACHE: "held in the record cache until the next commit",
}
_STORED = {
    Reason.TABLE_UPDATE: "stored: a table update triggers no output",
    Reason.NOT_A_TRIGGER: "stored only: in a 0.10.0 left join a right record does not look up",
    Reason.NOTHING_TO_DELETE: "stored: there was no result to delete, no tombstone",
    Reason.REPLACED_IN_CACHE: "stored: its result was replaced in the result cache by an earlier record's",
    Reason.SUBSCRIPTION_SENT: "stored: subscription sent to the right side",
    Reason.NULL_FOREIGN_KEY_UNSUBSCRIBED: "stored: null foreign key, unsubscribed (the old result is deleted)",
    Reason.RESPONSE_SENT: "stored: response sent to the left side",
    Reason.NO_SUBSCRIBER: "stored: no left row subscribes to this key",
    Reason.NO_PROPAGATE: "subscription stored: no response",
    Reason.OUT_OF_ORDER_VERSION: "not lost: stored as an older version, no result",
    Reason.NULL_GROUP_KEY: "stored: the group-by gives a null group key, no aggregate changes",
}
_DROPPED = {
    Reason.NULL_KEY: "dropped: null key",
    Reason.NULL_VALUE: "dropped: null value",
    Reason.EXPIRED: "dropped: late (older than its window store keeps; no partner found)",
    Reason.EXPIRED_PUT: "dropped: late (older than the table's history retention)",
    Reason.NULL_FOREIGN_KEY: "dropped: null foreign key (no subscription)",
    Reason.STALE_RESPONSE: "dropped: stale response (the left row changed since)",
    Reason.NULL_KEY_IN_GRACE_BUFFER: "dropped: null key (Kafka's task would fail here)",
    Reason.IDEMPOTENT_UPDATE: "dropped: an idempotent table update (KIP-557, Kafka 2.6.0 to 2.7.0)",
    Reason.EXPIRED_WINDOW: "dropped: late (every window it belongs to has closed)",
}


@dataclass(frozen=True)
class FateLabel:
    """``text``: the phrase; ``tone``: its category (a key of :data:`TONES`); ``lost``: the
    record is gone for good (dropped)."""

    text: str
    tone: str

    @property
    def lost(self) -> bool:
        return self.tone == "dropped"

    def __str__(self) -> str:
        return self.text

    def html(self) -> str:
        return label_html(self)


def label_html(label: FateLabel) -> str:
    colour = TONE_COLOURS[label.tone]
    return f'<b class="kjoin-fate kjoin-fate-{label.tone}" style="color:{colour}">{html.escape(label.text)}</b>'


def _aggregated(updates: list) -> FateLabel:
    """An aggregate's updates: the windows it changed, or the halves of a table update."""
    windows = [o for o in updates if o.window is not None and not o.tombstone]
    merged = [o for o in updates if o.window is not None and o.tombstone]  # sessions merged away
    if windows or merged:

        def span(o: Any) -> str:
            return f"[{o.window[0]}, {o.window[1]}{']' if getattr(o, 'inclusive', False) else ')'}"

        text = f"aggregated into window{'s' if len(windows) != 1 else ''} {', '.join(map(span, windows))}"
        if merged:
            text += f" (merging session{'s' if len(merged) != 1 else ''} {', '.join(map(span, merged))})"
        return FateLabel(text, "aggregated")
    said = {"subtract": "subtracted from", "add": "added to", "both": "subtracted and added again in"}
    parts = [f"{said.get(o.half, o.half)} {show_value(o.key)}" for o in updates]
    return FateLabel("aggregated: " + ", ".join(parts), "aggregated")


def own_outputs(step: Step) -> list:
    """The outputs of ``step`` that come from its own record (not released for earlier ones). A
    foreign-key join's delivery step owns everything it emits (its outputs name the input record
    that started the chain of messages as their origin)."""
    if step.message is not None:
        return list(step.outputs)
    return [o for o in step.outputs if o.origin_step == step.index]


def fate_label(step: Step) -> FateLabel:
    """The phrase for what ``step``'s record (or delivered message) did."""
    fate, reason = step.fate, step.reason
    mine = own_outputs(step)
    if fate is Fate.JOINED or (fate is not Fate.DROPPED and mine):
        return _emitted(step, mine)
    if fate is Fate.BUFFERED:
        text = _HELD.get(reason, "held until {until}")
        return FateLabel(text.format(until=step.until_ms), "held")
    if fate is Fate.STORED or reason is Reason.OUT_OF_ORDER_VERSION:
        return FateLabel(_STORED.get(reason, "stored: no output"), "stored")
    if fate is Fate.NO_MATCH:
        if reason is Reason.EXPIRED:
            return FateLabel(_DROPPED[reason], "dropped")
        if reason is Reason.BEHIND_RETENTION:
            return FateLabel("no match: the window looked up is behind its store's retention", "no-match")
        return FateLabel("no match: no output", "no-match")
    name = "" if reason is None else reason.value.replace("-", " ")
    return FateLabel(_DROPPED.get(reason, f"dropped: {name}".rstrip(": ")), "dropped")


def _null_partner(output) -> bool:
    """A result the joiner computed with null for one side (not a tombstone)."""
    return not output.tombstone and (output.left is None or output.right is None)


def _emitted(step: Step, mine: list) -> FateLabel:
    updates = [o for o in mine if getattr(o, "half", None) is not None]  # an aggregate's Change(new, old)
    if updates:
        return _aggregated(updates)
    joined = [o for o in mine if o.kind is OutputKind.JOINED and not _null_partner(o)]
    tombstones = [o for o in mine if o.tombstone]
    nulls = [o for o in mine if o.kind in (OutputKind.UNMATCHED, OutputKind.WINDOW_CLOSED, OutputKind.NULL_KEY)]
    deleted = [o for o in mine if o.kind is OutputKind.JOINED and _null_partner(o)]
    if joined:
        count = len(joined)
        return FateLabel(f"joined: {count} result{'s' if count != 1 else ''}", "joined")
    if tombstones:
        return FateLabel("tombstone: the join result is deleted", "tombstone")
    if nulls:
        if any(o.kind is OutputKind.NULL_KEY for o in nulls):
            return FateLabel("emitted with null: null key, joined without a lookup", "null-result")
        if "window ended" in step.explain:  # 3.1+: the record came after its window had closed
            return FateLabel("emitted with null at once: its window had already closed", "null-result")
        if "eager" in step.explain or "joiner called with null" in step.explain:  # stream-stream before 3.1
            return FateLabel("emitted eagerly with null", "null-result")
        return FateLabel("emitted with null: no partner, the joiner got null", "null-result")
    if deleted and _stream_null_value(step):  # 0.10.0: a stream's null value looks up, its partner joins it
        count = len(deleted)
        return FateLabel(
            f"joined: {count} result{'s' if count != 1 else ''} (its null value went to the joiner)", "joined"
        )
    if deleted:  # a table row was deleted (or has no value) while the other side still has one
        return FateLabel(_deleted_partner_text(step, deleted[0]), "null-result")
    # the joiner was called without a partner found in a store (a response delivered, …): a result
    if mine:
        return FateLabel(f"joined: {len(mine)} result{'s' if len(mine) != 1 else ''}", "joined")
    return FateLabel("joined: result emitted later by the topology", "joined")


def _stream_null_value(step: Step) -> bool:
    """Is the step a stream record with a null value that looked up the other side (0.10.0 and 0.10.1, before
    KIP-77) and found a partner? A stream's null value is an event without a value, never a delete: the joiner pairs
    it with the partner it found. (A table's null value is a delete: :func:`_deleted_partner_text`.)"""
    if step.message is not None or step.record is None or step.record.value is not None:
        return False
    return "triggers a lookup in 0.10.0" in step.explain or "looked up the table and found" in step.explain


def _deleted_partner_text(step: Step, output) -> str:
    missing = "left" if output.left is None else "right"
    record = step.record
    if step.message is None and record is not None and record.value is None and record.side.value == missing:
        return f"emitted with null: a delete on the {missing}, the joiner got null for it"
    return f"emitted with null: the {missing} side has no value, the joiner got null for it"
