"""The table lookups' kind of verdicts (:data:`TABLE`): stream-table and table-table joins, plain or versioned, which
look up the other side's latest value, so a record that joined may have joined a stale value. Its two hooks of
:class:`~kjoin.spark.debug.diagnosis.JoinVerdicts`: the key's latest value before the record in another partition,
and the partners in the record's own partition (deleted before it, or processed after it)."""

from __future__ import annotations

from ...times import when
from .diagnosis import Case, Diagnosis, JoinVerdicts, processed_later

__all__ = ["TABLE", "TABLE_NULL_VERDICTS"]

TABLE_NULL_VERDICTS = (
    "partner-later",
    "partner-processed-later",
    "partner-deleted",
    "partner-never",
    "partner-null-key",
    "partner-other-partition",
    "unexplained",
)


def _co_partitioning(case: Case, joined: bool) -> Diagnosis | None:
    """A table lookup: the key's latest value before the record (by timestamp) in another partition, which it missed
    (a null partner, a stale or deleted value joined)."""
    record, other_side, who, task_step = case.record, case.other_side, case.who, case.task_step
    elsewhere = case.elsewhere
    seen = [p for p in case.same if p.step is not None and task_step is not None and p.step < task_step]
    last = max(seen, key=lambda p: p.step) if seen else None
    earlier = [p for p in elsewhere if p.ts <= record.ts]
    if not earlier:
        if case.same or not joined and not any(p.value is not None for p in elsewhere):
            return None
        first = min(elsewhere, key=lambda p: (p.ts, p.partition, p.offset))
        return case.verdict(
            "partner-other-partition",
            "Not co-partitioned: " + case.placement(first) + f"No {other_side} record with key {record.key!r} is in "
            f"partition {record.partition}, the {who}'s.",
            (case.culprit(first), *(p for p in elsewhere if p is not first)),
            cause=case.culprit(first),
        )
    missed = max(earlier, key=lambda p: (p.ts, p.offset))
    if last is not None and missed.ts <= last.ts:
        return None
    cause = case.culprit(missed)
    if joined:
        found = f"the {last.describe()}" if last is not None else "an older value"
        if missed.value is None:
            return case.verdict(
                "joined-deleted",
                "Not co-partitioned: "
                + case.placement(missed)
                + f"It deleted the key before the {who} (by timestamp), "
                f"but the {who} joined {found}, a value that no longer existed.",
                (cause, *([last] if last is not None else [])),
                cause=cause,
            )
        return case.verdict(
            "joined-stale",
            "Not co-partitioned: " + case.placement(missed) + f"It was the key's latest {other_side} value before the "
            f"{who} (by timestamp), but the {who} joined {found}, an older one.",
            (cause, *([last] if last is not None else [])),
            cause=cause,
        )
    if missed.value is None:
        return case.verdict(
            "partner-deleted",
            f"The key's latest {other_side} record before the {who} is a tombstone in another partition "
            f"({missed.describe()}): the key was deleted, so a null partner is what one partition would have "
            "given too; the topics are still not co-partitioned for this key.",
            (cause,),
            cause=cause,
        )
    return case.verdict(
        "partner-other-partition",
        "Not co-partitioned: "
        + case.placement(missed)
        + f"It was the key's latest {other_side} value before the {who} "
        "(by timestamp), so in one partition the record would have joined it.",
        (cause, *(p for p in elsewhere if p is not missed)),
        cause=cause,
    )


def _partners(case: Case) -> Diagnosis:
    """A table lookup's partners in the record's partition: deleted before the record, or processed after it."""
    record, task_step, same = case.record, case.task_step, case.same
    before = [p for p in same if p.step is not None and task_step is not None and p.step < task_step]
    after = [
        p for p in same if p.step is not None and task_step is not None and p.step > task_step and p.value is not None
    ]
    if before:
        last = max(before, key=lambda p: p.step)
        if last.value is None:
            return case.verdict(
                "partner-deleted",
                f"The {case.other_side} record with key {record.key!r} was deleted before the {case.who} was "
                "processed: a tombstone "
                f"(offset {last.offset}, {when(last.ts)}) came {task_step - last.step - 1} record(s) earlier.",
                (last,),
            )
    if after:
        return processed_later(case, min(after, key=lambda p: p.step))
    return case.verdict("no-result", f"The {case.who}: {case.step.explain}", same)


TABLE = JoinVerdicts(
    "table",
    serves=lambda config: config.window is None,
    null_verdicts=lambda config: TABLE_NULL_VERDICTS,
    lookup_verdicts=("joined-stale", "joined-deleted"),
    looks_up_latest=True,
    co_partitioning=_co_partitioning,
    partners=_partners,
)
"""Stream-table and table-table joins (a lookup of the table's latest value, plain or versioned)."""
