"""Hints for a wrong answer in the predict widget: aimed at the misconception the answer shows.

The predict widget answers a wrong check in two stages: first the hints computed here from the
difference between the answer and the trace (none of them gives the answer away), then, on
request, the engine's answer and the stepper. Each hint addresses one likely misconception:

- a wrong output timestamp: the rule of the join's output timestamps (a joined output takes the
  larger of its records' timestamps; a result with null keeps its record's own);
- a missed result with null, released for an earlier record: stream time after the step, and
  that a held record's window closes at its end plus grace;
- a missing or extra joined result in a windowed join: the window's bounds, computed for the
  record (both ends included);
- a missed or extra tombstone;
- a wrong aggregate (``home=4`` for ``home=5``): which records count, null group keys first;
- a windowed aggregate's windows: a session's merge (the tombstone of every session it merges, then the merged
  session), a sliding window's left and right windows, and, with ``suppress`` or emit-final, when a window closes
  (nothing leaves before; then each closed window once, whatever record closes it);
- a wrong fate: what the engine's kind of fate depends on, without naming it;
- a wrong release step: when a held record leaves (its window's close, or a partner).

Every function reads a finished trace and returns sentences; the widget shows them as a list.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from kjoin.fates import Reason
from kjoin.records import Output
from kjoin.trace import Trace

from .labels import fate_label
from .values import plain

__all__ = ["output_hints", "fate_hints", "release_hints", "split_ts", "TIMESTAMP_RULES"]

_TS = re.compile(r"^(.*)@(-?\d+)$")
_AGGREGATES = ("table-aggregate", "window-aggregate")

TIMESTAMP_RULES = {
    "stream-stream": (
        "An output takes the larger of its two records' timestamps; a result with null keeps its own "
        "record's timestamp, however late it is emitted."
    ),
    "stream-table": "An output takes the stream record's timestamp (never the table row's).",
    "table-table": (
        "An output takes the larger timestamp of the update and the other side's row (the update's own "
        "when the other side has no row)."
    ),
    "fk": (
        "An output takes the larger of the left and right timestamps when the left side triggers it, "
        "the right record's timestamp when the right side does."
    ),
    "aggregate": "An aggregate's update takes the larger of the record's and the aggregate's timestamps.",
}


def split_ts(item: str) -> tuple[str, int | None]:
    """``A-a@4`` into ``("A-a", 4)``; ``home@[0,10)=2`` has no timestamp (its ``@`` opens a window)."""
    match = _TS.match(item)
    return (match.group(1), int(match.group(2))) if match else (item, None)


def _rule_key(trace: Trace) -> str:
    join = trace.scenario.join
    if join in _AGGREGATES:
        return "aggregate"
    if join.startswith("versioned-"):
        join = join.removeprefix("versioned-")
    return join if join in TIMESTAMP_RULES else "table-table"


def _with_null(output: Output) -> bool:
    return not output.tombstone and (output.left is None or output.right is None)


def _joined(output: Output) -> bool:
    return not output.tombstone and output.left is not None and output.right is not None


def _window_hint(trace: Trace, index: int) -> str | None:
    window = trace.join_window
    if trace.scenario.join != "stream-stream" or window is None:
        return None
    r = trace.steps[index].record
    before, after = (
        (window.before_ms, window.after_ms) if r.side.value == "left" else (window.after_ms, window.before_ms)
    )
    other = "right" if r.side.value == "left" else "left"
    return (
        f"Check the window: a {r.side.value} record at {r.ts} joins the {other} records of its key with timestamps in "
        f"[{max(0, r.ts - before)}, {r.ts + after}], both ends included, that the {other} window store still holds."
    )


def output_hints(trace: Trace, index: int, said: list[str]) -> list[str]:
    """Hints for outputs ``said`` (parsed items) that differ from what step ``index`` emitted."""
    step = trace.steps[index]
    emitted = step.outputs
    said_values = [plain(split_ts(item)[0]) for item in said]
    said_ts = [split_ts(item)[1] for item in said]
    values = [plain(o.render()) for o in emitted]
    hints: list[str] = []
    if Counter(said_values) == Counter(values):
        wrong_ts = any(ts is not None and ts != o.ts for ts, o in zip(said_ts, _in_said_order(emitted, said_values)))
        if wrong_ts:
            hints.append("The outputs are right; a timestamp is not. " + TIMESTAMP_RULES[_rule_key(trace)])
        if said_values != values:
            hints.append(
                "The outputs are right, their order is not. A step first emits what it releases for earlier "
                "records (oldest first), then its own results, in the order of the partners' timestamps."
            )
        return hints
    missing = list((Counter(values) - Counter(said_values)).elements())
    extra = list((Counter(said_values) - Counter(values)).elements())
    if trace.scenario.join in _AGGREGATES:  # an aggregate's update: no sides, no windows to join
        return _windowed_hints(trace, index, missing, extra) or [_aggregate_hint(trace, index)]
    missing_outputs = [o for o in emitted if plain(o.render()) in missing]
    released = [o for o in missing_outputs if _with_null(o) and o.origin_step != index]
    if released:
        now = trace.state_at(index).stream_time(step.task)
        hints.append(
            f"A result is missing that this step releases for an earlier record: after this step stream time is "
            f"{now}. Which held record's window closes (its end plus grace) before that? It is emitted now, with null "
            "for the side that never came."
        )
    if any(_with_null(o) and o.origin_step == index for o in missing_outputs):
        hints.append(
            "A result with null is missing: the record found no partner, and a left or outer join gives it a result "
            "with null at once when its window has already closed (or in an era that emits eagerly)."
        )
    if any(o.tombstone for o in missing_outputs):
        hints.append("A tombstone is missing: when a result row is deleted, the join emits null for its key.")
    if "null" in extra:
        hints.append("A tombstone is emitted only where there was a result to delete.")
    extra_joined = [e for e in extra if e != "null" and not e.endswith("-null") and not e.startswith("null-")]
    if any(_joined(o) for o in missing_outputs) or extra_joined:
        window = _window_hint(trace, index)
        if window:
            hints.append(window)
        else:
            hints.append("Look at the other side's rows in the state before the step: which of them match its key?")
    if any(e.endswith("-null") or e.startswith("null-") for e in extra) and not released:
        hints.append(
            "Not every record without a partner gets a result with null at once: since 3.1 a left or outer join "
            "holds it until its window closes, and an inner join never gives it one."
        )
    if not hints:
        hints.append("Compare with the state before the step: what does the record find, and what does it change?")
    return hints


def _in_said_order(emitted: Any, said_values: list[str]) -> list[Output]:
    """The emitted outputs matched to the said ones (same value, first unused)."""
    pool = list(emitted)
    matched = []
    for value in said_values:
        for o in pool:
            if plain(o.render()) == value:
                matched.append(o)
                pool.remove(o)
                break
    return matched


def _null_group_key(trace: Trace, step: Any) -> bool:
    """Does the group-by give ``step``'s record a null group key (a value without the field)?"""
    if step.reason == Reason.NULL_GROUP_KEY:
        return True
    field = (getattr(trace.scenario, "options", None) or {}).get("group_by")
    value = step.record.value
    if not isinstance(field, str) or not isinstance(value, dict):
        return False
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value is None


def _aggregate_hint(trace: Trace, index: int) -> str:
    if any(_null_group_key(trace, s) for s in trace.steps[: index + 1]):
        return (
            "Count again which records are in each group: a record whose group-by gives a null key is in no group "
            "(it changes no aggregate), and a row that moves leaves its old group first."
        )
    return (
        "Count again which records are in each group or window: an update first subtracts the row's old value "
        "from its old group, then adds the new value to its new group; a delete only subtracts."
    )


def _windowed_options(trace: Trace) -> tuple[Any, bool]:
    """A windowed aggregate's windows (None for a table aggregate) and whether it forwards only final results."""
    options = getattr(trace.scenario, "options", None) or {}
    final = options.get("emit") == "final" or options.get("suppress") is not None
    return options.get("windows"), final


def _aggregate_stream_time(trace: Trace, index: int) -> int | None:
    """The stream time of a windowed aggregate's task after step ``index`` (its clock store's, whatever the kind)."""
    state = trace.state_at(index)
    task = trace.steps[index].task
    for store, rows in state.stores.items():
        if store.task == task and store.name.endswith("aggregate clock") and "stream time" in rows:
            return rows["stream time"]
    return state.stream_time(task)


def _close_rule(windows: Any) -> str:
    from kjoin.joins.session_aggregate import SessionWindows

    if isinstance(windows, SessionWindows):
        return (
            f"a session closes once its end is behind stream time minus the grace ({windows.grace_ms} ms) minus the "
            f"gap ({windows.gap_ms} ms)"
        )
    return f"a window closes once its end is behind stream time minus the grace ({windows.grace_ms} ms)"


def _windowed_hints(trace: Trace, index: int, missing: list[str], extra: list[str]) -> list[str]:
    """Hints for a windowed aggregate's wrong outputs: the kind of window, then final results."""
    from kjoin.joins.session_aggregate import SessionWindows
    from kjoin.joins.sliding_aggregate import SlidingWindows

    windows, final = _windowed_options(trace)
    if windows is None:
        return []
    hints: list[str] = []
    if final:
        now = _aggregate_stream_time(trace, index)
        rule = _close_rule(windows)
        if missing and not extra:
            hints.append(
                f"With suppress or emit-final a window is forwarded once, when it closes: {rule}. After this step "
                f"stream time is {now}: which windows close now? The record that closes them may belong to another "
                "key or window."
            )
        elif extra and not missing:
            hints.append(
                f"Nothing leaves before its window closes: {rule}. After this step stream time is {now}; is any "
                "window's end far enough behind it?"
            )
        else:
            hints.append(
                f"A final result counts every record its window took before it closed ({rule}), merges and records "
                "within the grace included, and it is forwarded once."
            )
        return hints
    if isinstance(windows, SessionWindows):
        if any(item.endswith("=null") for item in missing):
            hints.append(
                "A record within the inactivity gap of a session merges with it: the old session is deleted (a "
                "tombstone key@[start, end]=null for every session it merges), then the merged session is "
                "forwarded with the sum."
            )
        hints.append(
            f"A session is [first record, last record], both ends included; a record at ts joins every session of its "
            f"key that ends at ts - {windows.gap_ms} or later and starts at ts + {windows.gap_ms} or earlier."
        )
        return hints
    if isinstance(windows, SlidingWindows):
        diff = windows.difference_ms
        hints.append(
            f"A sliding window spans {diff} ms, both ends included, and exists only where its set of records changes: "
            f"a record at ts makes its left window [ts - {diff}, ts]; an earlier record at t within {diff} ms gets its "
            f"right window [t + 1, t + 1 + {diff}]; and the record is added to every existing window that holds it."
        )
        return hints
    return []


_FATE_HINTS = {
    "held": (
        "Does anything come out for the record itself now? Look at the buffers and caches: a left or outer join "
        "(3.1+) holds a record without a partner until its window closes; a grace buffer or a record cache holds "
        "records too."
    ),
    "null-result": (
        "Look at stream time before the step: if the record's window has already closed (its end plus grace) when "
        "it arrives, nothing is left to wait for."
    ),
    "joined": "Look at the other side's store before the step: is a record with the same key within reach?",
    "no-match": "Is the partner you expect really there, within the window and still in the store?",
    "stored": "Which records look the other side up? Some records only update state (a table's side, for one).",
    "tombstone": "Did a result exist for this key before the step? Deleting a row deletes its join result.",
    "dropped": ("Look at the record itself: its key, its value, and its timestamp against what the stores still keep."),
    "aggregated": "Does the record change a group's (or a window's) aggregate?",
}


def fate_hints(trace: Trace, index: int, said: str) -> list[str]:
    """Hints for a wrong fate ``said`` (a tone) at step ``index``, without naming the right one."""
    truth = fate_label(trace.steps[index]).tone
    hints = []
    if said == "dropped" and trace.scenario.join == "stream-stream":
        hints.append(
            "A stream-stream join drops no record for coming late: a late record still looks up the other side. "
            "Only a null key or a null value is skipped."
        )
    elif trace.scenario.join in _AGGREGATES and _windowed_options(trace)[1] and "held" in (said, truth):
        windows = _windowed_options(trace)[0]
        hints.append(
            "With suppress or emit-final the record's own update is held: its window is forwarded once, when it "
            f"closes ({_close_rule(windows)}). Is the record's window closed already when it arrives?"
        )
    elif said == "null-result" and truth == "held":
        hints.append(
            "Not yet: since 3.1, a left or outer join emits a result with null only once the record's window has "
            "closed (its end plus grace)."
        )
    else:
        hints.append(_FATE_HINTS.get(truth, "Look again at the state before the step."))
    return hints


def release_hints(trace: Trace, index: int, leaves: int, said: int, stream_time: Any) -> list[str]:
    """Hints for a wrong release step ``said`` (``-1``: still waiting) of the record held at ``index``;
    ``stream_time(step)`` reads a step's stream time."""
    label = fate_label(trace.steps[index])
    rule = (
        f"It is {label}. A held record leaves when a partner joins it, or when stream time passes its window's "
        "close (a cache: at the next commit)."
    )
    if said == -1:
        return [rule + " Does a later record move stream time far enough, or join it?"]
    now = stream_time(said)
    clock = "" if now is None else f" After step {said}, stream time is {now}."
    if leaves == -1 or said < leaves:
        return [rule + clock + " Is that far enough?"]
    return [rule + clock + " Does an earlier step already get there?"]
