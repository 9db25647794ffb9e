"""The stream-stream join's kind of verdicts (:data:`WINDOWED`): a join window, both sides stored in window stores,
so a record's partners are the other side's records inside its window. Its two hooks of
:class:`~kjoin.spark.debug.diagnosis.JoinVerdicts`: a partner inside the window in another partition, and what the
partners in the record's own partition say (outside the window, expired, processed later)."""

from __future__ import annotations

from ...fates import Reason
from ...records import OutputKind
from ...times import duration, when
from .diagnosis import Case, Diagnosis, JoinVerdicts, Partner, arrival_note, processed_later, span, window_bounds

__all__ = ["WINDOWED", "WINDOWED_NULL_VERDICTS"]

WINDOWED_NULL_VERDICTS = (
    "partner-never",
    "partner-null-key",
    "partner-other-partition",
    "partner-outside-window",
    "partner-later",
    "partner-expired",
    "unexplained",
)


def _co_partitioning(case: Case, joined: bool) -> Diagnosis | None:
    """A stream-stream record without a partner: one inside its window in another partition, or none inside it
    anywhere (``None`` for a record that joined: a window holds every partner, so another partition's changes
    nothing it found)."""
    if joined:
        return None
    record, elsewhere = case.record, case.elsewhere
    lo, hi = window_bounds(record, case.config.window)
    inside = [p for p in elsewhere if lo <= p.ts <= hi and p.value is not None]
    if inside:
        first = min(inside, key=lambda p: (p.ts, p.partition, p.offset))
        return case.verdict(
            "partner-other-partition",
            "Not co-partitioned: "
            + case.placement(first)
            + f"It is inside the join window {span(lo, hi)} of the {case.who} "
            f"({len(inside)} {case.other_side} record(s) of the key are, all in other partitions).",
            (case.culprit(first), *(p for p in inside if p is not first)),
            cause=case.culprit(first),
        )
    if not case.same:
        nearest = min(elsewhere, key=lambda p: min(abs(p.ts - lo), abs(p.ts - hi)))
        distance = lo - nearest.ts if nearest.ts < lo else nearest.ts - hi
        return case.verdict(
            "partner-outside-window",
            f"Two reasons: every {case.other_side} record with key {record.key!r} is in another partition than the "
            f"{case.who} (" + ", ".join(p.describe() for p in elsewhere[:3]) + "), and all lie outside its join "
            f"window {span(lo, hi)}; the nearest is {duration(distance)} outside it, so even in one partition they "
            "would not join.",
            (nearest, *(p for p in elsewhere if p is not nearest)),
            delay_ms=distance,
            cause=case.culprit(nearest),
        )
    return None


def _partners(case: Case) -> Diagnosis:
    """A stream-stream record's partners in its partition: all outside its window, expired before they were
    processed, processed later, or inside it without joining."""
    record, other_side, task_step, window = case.record, case.other_side, case.task_step, case.config.window
    lo, hi = window_bounds(record, window)
    inside = [p for p in case.same if lo <= p.ts <= hi and p.value is not None]
    if not inside:
        nearest = min(case.same, key=lambda p: min(abs(p.ts - lo), abs(p.ts - hi)))
        distance = lo - nearest.ts if nearest.ts < lo else nearest.ts - hi
        return case.verdict(
            "partner-outside-window",
            f"The {other_side} records with key {record.key!r} are all outside the join window {span(lo, hi)} "
            f"of the {case.who}; the nearest "
            f"(offset {nearest.offset}, {when(nearest.ts)}) is {duration(distance)} outside it.",
            (nearest,),
            delay_ms=distance,
        )
    late = [p for p in inside if p.step is not None and task_step is not None and p.step > task_step]
    partner_steps = {s.record.offset: s for s in case.trace.key_steps() if s.record.side.value == other_side}
    expired = [
        p
        for p in late
        if p.offset in partner_steps and partner_steps[p.offset].reason in (Reason.EXPIRED, Reason.EXPIRED_PUT)
    ]
    if expired or (late and len(late) == len(inside) and _closed_before(case, late[0])):
        p = (expired or late)[0]
        blocker = case.blocker(p, p.ts)
        held = (
            f" It was written out of order: the {blocker.describe()} is ahead of it in partition "
            f"{blocker.partition} with a timestamp {duration(blocker.ts - p.ts)} later, so the task reached it "
            "only after stream time had passed its window."
            if blocker is not None
            else " " + arrival_note(case.config, other_side, p.partition, p.ts)
        )
        return case.verdict(
            "partner-expired",
            f"The {other_side} record (offset {p.offset}, {when(p.ts)}) is inside the window of the {case.who} but "
            "was processed after the window "
            f"closed plus grace ({duration(window.effective_grace_ms)}): the {record.side.value} record had "
            "left the window store." + held,
            (p,),
            blocker=blocker,
        )
    if late:
        return processed_later(case, late[0])
    return case.verdict(
        "no-result", f"The {case.who} has partners inside its window but none joined: {case.step.explain}", inside
    )


def _closed_before(case: Case, partner: Partner) -> bool:
    """Whether the record's held null result was emitted (its window closed) before the partner came."""
    trace = case.trace
    emitted = [
        s
        for s in trace.steps
        for o in s.outputs
        if o.origin_step == case.step.index and o.kind is OutputKind.WINDOW_CLOSED
    ]
    if not emitted:
        return False
    at = trace.task_steps[emitted[0].index]
    return at is None or partner.step is None or at < partner.step


WINDOWED = JoinVerdicts(
    "windowed",
    serves=lambda config: config.window is not None,
    null_verdicts=lambda config: WINDOWED_NULL_VERDICTS,
    co_partitioning=_co_partitioning,
    partners=_partners,
)
"""Stream-stream joins (a join window, both sides stored in window stores)."""
