"""Feedback for a wrong answer, computed from the trace: the rule that decides the step, in its join's words.

The predict widget answers a wrong check in three stages, each on request after the first:

1. a **question** that points at the rule (what to look at, without the answer);
2. the **rule** that decides this step for this join kind and this era, with the step's own numbers (the window
   the record looks in, the time it is held until, the table row it finds);
3. the **answer**: the engine's fate and outputs, and why (:class:`~kjoin_viz.predict.Verdict`).

The rule is read from the step itself: its fate and reason (:mod:`kjoin.fates`), the join kind and variant of the
scenario, and its era (:attr:`kjoin.semantics.Semantics.era`). Each join speaks its own vocabulary: only a
stream-stream join has a join window and an outer-join buffer; a stream-table join has a grace buffer only when
it is given a grace period; a table-table, foreign-key or table-aggregate join has neither windows, grace nor
stream time. :data:`VOCABULARY` lists the words each kind never uses (the course's test holds every rule to it).

How it works:

- :func:`situation` names what decided the step (``"joined"``, ``"held-outer-buffer"``, ``"eager-null"``, …);
- :func:`rule` states that rule for the trace's join, era and step;
- :func:`question` asks the question that leads to it, aimed at the learner's answer where the answer shows a
  misconception (a drop where nothing is dropped, a tombstone where there was no result to delete).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kjoin.fates import Fate, Reason
from kjoin.records import OutputKind
from kjoin.trace import Trace

from .labels import fate_label, own_outputs
from .values import show_output, show_value

__all__ = ["Feedback", "feedback", "release_feedback", "situation", "rule", "question", "join_kind", "VOCABULARY"]

VOCABULARY = {
    "table-table": ("window", "grace", "stream time", "outer-join buffer", "None"),
    "fk": ("window", "grace", "stream time", "outer-join buffer", "None"),
    "table-aggregate": ("window", "grace", "stream time", "outer-join buffer", "None"),
    "stream-table": ("window", "outer-join buffer", "None"),
    "stream-table (no grace)": ("window", "grace", "stream time", "outer-join buffer", "None"),
    "stream-stream 0.10": ("outer-join buffer", "held until", "None"),
    "stream-stream": ("None",),
    "window-aggregate": ("outer-join buffer", "None"),
    "wtable-wtable": ("outer-join buffer", "grace", "None"),
}
"""Per kind of join (as :func:`join_kind` names it): words its feedback never uses. A table join has no window, no
grace and no stream time; a stream-table join without a grace period has no grace buffer either; a stream-stream
join before 3.1 holds nothing back; no feedback ever prints Python's ``None``."""


@dataclass(frozen=True)
class Feedback:
    """The first two stages of the feedback on a wrong answer: a question, then the rule."""

    question: str
    rule: str


def join_kind(trace: Trace) -> str:
    """The kind of join of ``trace`` in :data:`VOCABULARY`'s terms."""
    scenario = trace.scenario
    join = scenario.join
    if join.startswith("versioned-"):
        join = join.removeprefix("versioned-")
    if join == "stream-table":
        return "stream-table" if _grace_ms(trace) is not None else "stream-table (no grace)"
    if join == "stream-stream" and _era(trace) != "3.1":
        return "stream-stream 0.10"
    if join == "stream-globaltable":
        return "stream-table (no grace)"
    if join.startswith("wtable"):
        return "wtable-wtable"
    return join


def _era(trace: Trace) -> str:
    """The era of the trace's semantics (``3.1`` for joins without eras: aggregates, windowed tables)."""
    semantics = getattr(trace.scenario, "semantics", None)
    return getattr(semantics, "era", "3.1")


def _era_words(trace: Trace) -> str:
    return {"0.10.0": "0.10.0 and 0.10.1", "0.10.2": "0.10.2 to 3.0 (KIP-77)", "3.1": "3.1 and newer"}[_era(trace)]


def _grace_ms(trace: Trace) -> int | None:
    """A stream-table join's grace period (its grace buffer), ``None`` without one."""
    return getattr(trace.scenario, "grace_ms", None)


def _eager(trace: Trace) -> bool:
    """Does this stream-stream left/outer join emit a record without partner with null at once?"""
    window = trace.join_window
    deprecated = window is not None and getattr(window, "grace_ms", 0) is None
    return _era(trace) != "3.1" or deprecated


_SITUATION_OF_REASON: dict[Reason, str] = {
    **dict.fromkeys(
        (Reason.NULL_KEY, Reason.NULL_VALUE, Reason.NULL_FOREIGN_KEY, Reason.NULL_JOIN_KEY), "skipped-null"
    ),
    Reason.TABLE_UPDATE: "table-update",
    Reason.NOT_A_TRIGGER: "not-a-trigger",
    Reason.WINDOW_OPEN: "held-outer-buffer",
    Reason.GRACE_PERIOD: "held-grace-buffer",
    Reason.RECORD_CACHE: "held-cache",
    Reason.OUT_OF_ORDER_VERSION: "out-of-order-version",
    Reason.NOTHING_TO_DELETE: "nothing-to-delete",
    **dict.fromkeys((Reason.SUBSCRIPTION_SENT, Reason.NULL_FOREIGN_KEY_UNSUBSCRIBED), "fk-subscription-sent"),
    Reason.RESPONSE_SENT: "fk-response-sent",
    Reason.NO_SUBSCRIBER: "fk-no-subscriber",
    **dict.fromkeys((Reason.EXPIRED, Reason.EXPIRED_PUT, Reason.BEHIND_RETENTION), "expired"),
    Reason.REPLACED_IN_CACHE: "replaced-in-cache",
}
"""The situation a step's reason decides alone (a primary-key join's step, checked in :func:`situation`'s order)."""


def situation(trace: Trace, index: int) -> str:
    """What decided step ``index``: one of the keys :func:`rule` explains."""
    step = trace.steps[index]
    join, fate, reason = trace.scenario.join, step.fate, step.reason
    label = fate_label(step)
    if join in ("table-aggregate", "window-aggregate"):
        if reason is Reason.EXPIRED_WINDOW:
            return "expired-window"
        if reason is Reason.NULL_GROUP_KEY:
            return "null-group-key"
        if fate is Fate.BUFFERED:
            return "suppressed"
        return "aggregated"
    if step.message is not None:
        if reason is Reason.STALE_RESPONSE:
            return "fk-stale"
        if reason is Reason.NO_PROPAGATE:
            return "fk-no-propagate"
        return "fk-response" if step.message.topic != "subscription" else "fk-subscription"
    if reason in _SITUATION_OF_REASON:
        return _SITUATION_OF_REASON[reason]
    if label.tone == "tombstone":
        return (
            "tombstone-0.10.0"
            if join == "table-table" and _era(trace) == "0.10.0" and _had_no_result(trace, index)
            else "tombstone"
        )
    if label.tone == "null-result":
        if join == "stream-stream":
            return "eager-null" if _eager(trace) else "window-closed-null"
        if join == "table-table":
            return "table-null"
        if join == "fk":
            return "fk-response"
        return "stream-left-null"
    if label.tone == "joined":
        if join == "stream-stream" and step.record.value is None:
            return "null-value-joins"
        if join in ("stream-table", "stream-globaltable") and step.record.value is None:
            return "null-value-joins"
        return "joined"
    if label.tone == "no-match":
        return "no-match"
    return "other"


def _had_no_result(trace: Trace, index: int) -> bool:
    """Was there no join result for the step's key before the step (a tombstone deletes nothing)?"""
    key = trace.steps[index].record.key
    latest = None
    for s in trace.steps[:index]:
        for o in s.outputs:
            if o.key == key:
                latest = o
    return latest is None or latest.tombstone


# -- the words ---------------------------------------------------------------------------------------------
def _a(variant: str) -> str:
    """``variant`` with its article: ``an inner``, ``a left``, ``an outer``."""
    return ("an " if variant[:1] in "aeiou" else "a ") + variant


def _other(side: str) -> str:
    return "right" if side == "left" else "left"


def _record(step: Any) -> str:
    r = step.record
    return f"{r.side.value} {show_value(r.value)}@{r.ts}"


def _window_range(trace: Trace, step: Any) -> str:
    window = trace.join_window
    r = step.record
    if window is None:
        return ""
    before, after = (
        (window.before_ms, window.after_ms) if r.side.value == "left" else (window.after_ms, window.before_ms)
    )
    return f"[{max(0, r.ts - before)}, {r.ts + after}]"


def _found(trace: Trace, index: int) -> str:
    """The partners the step's own joined outputs name (``p@6``), or ``""``."""
    step = trace.steps[index]
    side = step.record.side.value
    partners = []
    for o in own_outputs(step):
        value = o.right if side == "left" else o.left
        if o.kind is OutputKind.JOINED and value is not None:
            partners.append(show_value(value))
    return ", ".join(dict.fromkeys(partners))


def rule(trace: Trace, index: int) -> str:
    """The rule that decides step ``index``, in its join's words, with the step's numbers."""
    step = trace.steps[index]
    join = trace.scenario.join
    for joins, rule_of in _RULES:
        if join in joins or join.startswith(joins):
            text = rule_of(trace, index, situation(trace, index))
            if text:
                return text
    return f"Look at what the record found in the state before the step: {show_value(step.explain)}"


def _stream_stream_rule(trace: Trace, index: int, kind: str) -> str | None:
    """The rules of a stream-stream join: the window it looks in, the era's null values and outer results."""
    step = trace.steps[index]
    variant = getattr(trace.scenario, "variant", "")
    side = step.record.side.value
    other = _other(side)
    r = step.record
    era = _era(trace)
    window = _window_range(trace, step)
    looks = (
        f"A {side} record at {r.ts} looks up the {other} window store for records of its key with timestamps in "
        f"{window}, both ends included, and the joiner pairs it with each one found."
    )
    if kind == "joined":
        late = " A late record is not dropped: it joins whatever the store still holds."
        return looks + late
    if kind == "null-value-joins":
        return (
            f"In {_era_words(trace)}, before KIP-77, a stream record with a null value is not skipped: it looks "
            f"up the other side like any record and the joiner gets null for its value. {looks} A stream's null "
            "value is an event without a value, not a delete; it never enters a window store itself."
        )
    if kind == "skipped-null":
        what = "key" if step.reason is Reason.NULL_KEY else "value"
        return (
            f"Since KIP-77 (0.10.2) a stream-stream join skips a record with a null {what}: no lookup, nothing "
            "stored, no result (before, a null value looked up the other side)."
        )
    if kind == "not-a-trigger":
        return (
            "In 0.10.0 and 0.10.1 a left join is driven by the left side only: a right record only enters the "
            "right window store and looks nothing up, so it never emits; left records find it later. KIP-77 "
            "(0.10.2) made both sides trigger."
        )
    if kind == "eager-null":
        which = "with the deprecated JoinWindows.of API" if era == "3.1" else f"in {_era_words(trace)}"
        return (
            f"{looks} Found none: {which}, {_a(variant)} join emits the record with null at once (eagerly); if a "
            "partner comes later, that pair is emitted too. Nothing is held back in this era."
        )
    if kind == "held-outer-buffer":
        return (
            f"{looks} Found none: since 3.1 (KAFKA-10847) {_a(variant)} join holds the record in the outer-join "
            f"buffer until stream time passes its window end plus grace ({step.until_ms}); it is emitted with "
            "null then, unless a partner joins it first. Its step may still emit results released for earlier "
            "records."
        )
    if kind == "window-closed-null":
        return (
            f"{looks} Found none, and stream time had already passed this record's window end plus grace when it "
            f"arrived: {_a(variant)} join (3.1+) emits it with null at once, nothing being left to wait for."
        )
    if kind == "no-match":
        because = (
            "an inner join emits only pairs"
            if variant == "inner"
            else "a left join gives a result with null only to left records; a right record without partner "
            "emits nothing"
        )
        return f"{looks} Found none, and {because}."
    if kind == "expired":
        return (
            "A record older than its window store's retention (before + after + grace behind the newest "
            "timestamp the store has seen) still looks up, but it never becomes visible in the store."
        )
    return None


def _stream_table_rule(trace: Trace, index: int, kind: str) -> str | None:
    """The rules of a stream-table join: only stream records look up; the grace buffer when it has one."""
    step = trace.steps[index]
    table = "versioned table as of the record's own timestamp" if _versioned(trace) else "table's current row"
    looks = (
        f"In a stream-table join only stream (left) records look up: a stream record reads the {table} for its "
        "key, and the joiner pairs it with that row."
    )
    if kind == "table-update":
        return (
            "In a stream-table join a table update only changes the table: it looks nothing up and emits nothing, "
            "even a delete; only stream records trigger the join. Stream records that arrive later see the new "
            "row."
        )
    if kind in ("joined", "null-value-joins"):
        extra = (
            " A plain table has only its latest row, whatever that row's timestamp."
            if not _versioned(trace)
            else " A versioned table keeps older rows: the one valid at the record's timestamp is found."
        )
        return looks + extra
    if kind == "stream-left-null":
        return (
            f"{looks} When the table has no row for the key, a left join emits the record with null at once "
            "(the joiner gets null for the table side); an inner join emits nothing."
        )
    if kind == "no-match":
        return f"{looks} When the table has no row for the key, an inner join emits nothing."
    if kind == "skipped-null":
        return "A stream-table join skips a stream record with a null key or (since KIP-77) a null value."
    if kind == "held-grace-buffer":
        return (
            f"With a grace period a stream record waits in the grace buffer until the buffer's stream time (the "
            f"largest stream timestamp it has seen) reaches its ts + grace ({step.until_ms}); then it looks up "
            "the versioned table as of its own timestamp. A record that moves the buffer's time releases earlier "
            "records first."
        )
    return None


def _table_table_rule(trace: Trace, index: int, kind: str) -> str | None:
    """The rules of a table-table join: every update looks up, results are replaced or deleted."""
    step = trace.steps[index]
    variant = getattr(trace.scenario, "variant", "")
    side = step.record.side.value
    other = _other(side)
    r = step.record
    if kind == "joined":
        return (
            f"In a table-table join every update looks up the other table's current row of its key: a {side} "
            f"update {show_value(r.value)} for {show_value(r.key)} replaces the key's result with the joiner of "
            f"the new value and the {other} row ({_found(trace, index) or 'none'})."
        )
    if kind == "table-null":
        return (
            f"A {'delete' if r.value is None else 'update'} on the {side} in {_a(variant)} table-table join: the "
            f"{other} row stays, and {_a(variant)} join keeps a result for it, so the result becomes "
            f"{', '.join(show_output(o) for o in own_outputs(step))} (the joiner gets null for the {side} side); "
            "the result is replaced, not deleted."
        )
    if kind == "tombstone":
        return (
            f"When the result row of a key goes away (in {_a(variant)} join: "
            + {
                "inner": "either row deleted",
                "left": "the left row deleted",
                "outer": "both rows gone",
            }.get(variant, "its rows deleted")
            + "), the join emits a tombstone, null, for the key; the result table forgets it."
        )
    if kind == "tombstone-0.10.0":
        return (
            "In 0.10.0 and 0.10.1, before KIP-77, a table-table join sends a tombstone for every update whose "
            "join has no result, whether or not a result existed: here no result existed, and the tombstone goes "
            "out all the same (KIP-77, 0.10.2, stopped these unnecessary tombstones)."
        )
    if kind == "nothing-to-delete":
        return (
            "Since KIP-77 (0.10.2) a table-table join sends a tombstone only where a result existed: an update "
            "whose join has no result, for a key that had none, emits nothing."
        )
    if kind == "no-match":
        return (
            f"A {side} update looks up the {other} table: it has no row of key {show_value(r.key)}. "
            + (
                "An inner join needs both rows"
                if variant == "inner"
                else f"{_a(variant).capitalize()} join emits a result with null only for a key the "
                + ("left" if variant == "left" else "other")
                + " table holds"
            )
            + ", so nothing is emitted."
        )
    if kind == "out-of-order-version":
        return (
            "A versioned table keeps every version with its timestamp: an update older than the key's latest "
            "version is stored as an older version, and a table-table join emits nothing for it (KIP-914): the "
            "latest result stays right."
        )
    if kind == "held-cache":
        return (
            "A caching table store holds an update until the next commit and then forwards only the newest update "
            "of each key (KIP-63); lookups see the new value at once."
        )
    if kind == "replaced-in-cache":
        return "A caching result store keeps only the newest result of a key until the commit."
    return None


def _fk_rule(trace: Trace, index: int, kind: str) -> str | None:
    """The rules of a foreign-key join: results are made on the left side, when responses arrive."""
    if kind == "fk-response":
        return (
            "In a foreign-key join results are made on the left side, when a response is delivered: the left "
            "task joins its current left row with the right value the response carries (null when the right "
            "side has no row: a left join emits the row with null, an inner join deletes its result)."
        )
    if kind == "fk-stale":
        return (
            "A response carries the hash of the left value that sent the subscription; if the left row changed "
            "since, the hashes differ and the response is dropped as stale."
        )
    if kind == "fk-response-sent":
        return (
            "A right update emits nothing itself: the right side finds the left rows that subscribe to its key "
            "(a prefix scan of the subscription store) and sends each a response; the results come when those "
            "responses are delivered to the left side."
        )
    if kind == "fk-no-subscriber":
        return (
            "A right update is joined only for the left rows that subscribe to its key now: a row that moved to "
            "another foreign key unsubscribed, so a right update with no subscriber emits nothing."
        )
    if kind in ("fk-subscription-sent", "fk-subscription", "fk-no-propagate"):
        return (
            "A left update emits nothing itself: it stores the row and sends a subscription to the task of its "
            "foreign key; the result comes back with the response."
        )
    if kind == "skipped-null":
        return "A left row whose foreign key is null cannot subscribe: it is skipped."
    return None


def _aggregate_rule(trace: Trace, index: int, kind: str) -> str | None:
    """The rules of an aggregate: groups and windows, late records, suppression."""
    join = trace.scenario.join
    if kind == "expired-window":
        return (
            "A window is closed once its end plus grace is at or behind stream time; a record whose every window "
            "is closed is dropped as late: it changes no aggregate and nothing is forwarded."
        )
    if kind == "null-group-key":
        return "A record whose group-by gives a null key is in no group: its old group loses it, no group gains it."
    if kind == "suppressed":
        return (
            "With suppress or emit-final a window's result is forwarded once, when the window closes (its end "
            "plus grace behind stream time); the record's own update waits until then, and the step forwards "
            "every window it closes, whatever key."
        )
    if join == "table-aggregate":
        return (
            "A table aggregate's update first subtracts the row's old value from its old group, then adds the new "
            "value to its new group; a delete only subtracts. Each group that changes forwards its new aggregate."
        )
    return (
        "A record is added to every window of its key that holds its timestamp; each window that changes forwards "
        "its new aggregate (a session that merges forwards a tombstone for each merged session first)."
    )
    return None


def _wtable_rule(trace: Trace, index: int, kind: str) -> str | None:
    """The rule of a join of windowed tables (seed 000): a window looked up in the other table."""
    return (
        "A windowed table's update looks up the other windowed table for the window its selector names, still "
        "kept by that store; the joiner pairs the two aggregates (a left or outer join with null when none)."
    )
    return None


_RULES = (
    (("stream-stream",), _stream_stream_rule),
    (("stream-table", "stream-globaltable", "versioned-stream-table"), _stream_table_rule),
    (("table-table", "versioned-table-table"), _table_table_rule),
    (("fk",), _fk_rule),
    (("table-aggregate", "window-aggregate"), _aggregate_rule),
    (("wtable",), _wtable_rule),
)
"""Which function states the rules of which joins (a join whose name starts with one listed is that kind)."""


def _versioned(trace: Trace) -> bool:
    """Does the join read a versioned table (KIP-914)?"""
    scenario = trace.scenario
    return any(getattr(getattr(scenario, side, None), "versioned", False) for side in ("left", "right"))


def question(trace: Trace, index: int, said_tone: str | None = None) -> str:
    """The question that points at the rule of step ``index``; aimed at the answer ``said_tone`` (a fate) when it
    shows a misconception."""
    step = trace.steps[index]
    kind = situation(trace, index)
    join = trace.scenario.join
    side = step.record.side.value
    other = _other(side)
    era = _era(trace)
    if said_tone == "dropped" and kind not in ("skipped-null", "expired", "expired-window", "fk-stale"):
        if join == "stream-stream" and era == "0.10.0" and step.record.value is None:
            return (
                "Before KIP-77 (0.10.2), does a stream-stream join skip a record with a null value, or does it look "
                "up the other side?"
            )
        if join == "stream-stream":
            return "Which records does a stream-stream join skip? Is this record's key or value null?"
        return "Is anything about this record skipped: its key, its value? What does this join do with it instead?"
    if said_tone == "tombstone" and kind not in ("tombstone", "tombstone-0.10.0"):
        if join in ("table-table", "fk"):
            return "A tombstone deletes a result: after this step, does the key still have a result, and which?"
        return "Does a stream join delete results? Which joins emit tombstones?"
    questions = {
        "joined": (
            f"Which {other} records of key {show_value(step.record.key)} are within reach of {_record(step)}?"
            if join == "stream-stream"
            else "What does the record find on the other side for its key, in the state before the step?"
        ),
        "null-value-joins": (
            f"In {_era_words(trace)}, what does a stream-stream join do with a record whose value is null?"
        ),
        "skipped-null": "Look at the record itself: is its key or its value null, and what does this era do with it?",
        "not-a-trigger": f"In a {era} left join, which side's records look the other side up?",
        "eager-null": f"In {_era_words(trace)}, does a left or outer join wait for a partner, or emit at once?",
        "held-outer-buffer": "Since 3.1, when does a left or outer join emit a record that has no partner yet?",
        "window-closed-null": "When the record arrives, is its window (end plus grace) still open?",
        "held-grace-buffer": "With a grace period, when does a stream record look the table up?",
        "held-cache": "With a record cache, when is an update forwarded?",
        "table-update": "In a stream-table join, which side's records look the other side up?",
        "stream-left-null": "What does the table hold for this key, and what does a left join do without a row?",
        "table-null": (
            f"After this step, does the {other} table still have a row for the key, and what does "
            f"{_a(getattr(trace.scenario, 'variant', ''))} join keep then?"
        ),
        "tombstone": "Did a result exist for this key before the step, and does one exist after it?",
        "tombstone-0.10.0": "Before KIP-77 (0.10.2), when does a table-table join send a tombstone?",
        "nothing-to-delete": "Did a result exist for this key before the step? What would a tombstone delete?",
        "no-match": f"What does the {other} side hold for this key, and does this variant emit anything without a "
        "partner?",
        "out-of-order-version": "Is this update the newest version of its key, or an older one?",
        "fk-response": "Where are a foreign-key join's results made, and what does this response carry?",
        "fk-stale": "Does the hash the response carries still match the left row's current value?",
        "fk-response-sent": "Where are a foreign-key join's results made: on the right side or the left?",
        "fk-no-subscriber": "Which left rows subscribe to this right key now?",
        "fk-subscription-sent": "Where are a foreign-key join's results made: on the left side at once, or later?",
        "fk-subscription": "Where are a foreign-key join's results made: on the left side at once, or later?",
        "fk-no-propagate": "What does this subscription's instruction ask the right side to do?",
        "expired-window": "Is any window of this record still open: its end plus grace, against stream time?",
        "expired": "Is the record within what its store still keeps?",
        "null-group-key": "Which group does the record's group-by give it?",
        "suppressed": "With suppress or emit-final, when is a window's result forwarded?",
        "aggregated": "Which groups or windows does the record change, and what is each one's new aggregate?",
        "replaced-in-cache": "What does the result cache hold for this key at the commit?",
    }
    return questions.get(kind, "What does the record find in the state before the step, and what does it change?")


def feedback(trace: Trace, index: int, said_tone: str | None = None) -> Feedback:
    """The question and the rule for a wrong answer at step ``index`` (``said_tone``: the fate the learner chose)."""
    return Feedback(question(trace, index, said_tone), rule(trace, index))


def release_feedback(trace: Trace, index: int, leaves: int, said: int, stream_time: Any) -> Feedback:
    """The question and the rule for a wrong release step ``said`` (``-1``: still waiting at the end; ``index``
    itself: at once) of the record held at ``index``, which leaves at ``leaves``."""
    step = trace.steps[index]
    kind = situation(trace, index)
    if said == index:
        ask = question(trace, index)
    elif said == -1:
        ask = "Does a later record join it, or move the clock that releases it far enough?"
    else:
        now = stream_time(said)
        clock = "" if now is None else f" After step {said}, stream time is {now}."
        ask = (clock + " Is that far enough, or does an earlier step already get there?").strip()
        if kind == "held-cache":
            ask = "When is the next commit?"
    if kind == "held-outer-buffer":
        text = (
            f"A record held in the outer-join buffer leaves when a {_other(step.record.side.value)} record joins it "
            f"(a partner within its window), or when stream time passes its window end plus grace ({step.until_ms}): "
            "the step that moves stream time there emits it with null. Stream time moves only with new records."
        )
    elif kind == "held-grace-buffer":
        text = (
            f"A record in the grace buffer leaves when the buffer's stream time reaches its ts + grace "
            f"({step.until_ms}): the record that moves it there releases it, and it then looks the table up as of "
            "its own timestamp."
        )
    elif kind == "suppressed":
        text = rule(trace, index)
    else:
        text = f"It is {fate_label(step)}. A held record leaves at the next commit (a record cache)."
    return Feedback(ask, text)
