"""Hints for a wrong answer's outputs in the predict widget: aimed at the misconception the answer shows.

The predict widget's first stage of feedback on a wrong check holds the hints computed here from the
difference between the outputs answered and the trace (none of them gives the answer away), next to the
question :mod:`kjoin_viz.feedback` asks about the rule that decides the step. Each hint addresses one likely
misconception, in the words of the trace's join (no window, grace or stream time where the join has none):

- a wrong output timestamp: the rule of the join's output timestamps (a joined output takes the
  larger of its records' timestamps; a result with null keeps its record's own);
- a missed result with null, released for an earlier record: stream time after the step, and
  when a held record leaves (a window's end plus grace; a grace buffer's ts plus grace);
- a missing or extra joined result in a windowed join: the window's bounds, computed for the
  record (both ends included);
- a missed or extra tombstone;
- a wrong aggregate (``home=4`` for ``home=5``): which records count, null group keys first;
- a windowed aggregate's windows: a session's merge (the tombstone of every session it merges, then the merged
  session), a sliding window's left and right windows, and, with ``suppress`` or emit-final, when a window closes
  (nothing leaves before; then each closed window once, whatever record closes it);
- outputs in another order, where the exercise asks for the order.

Every function reads a finished trace and returns sentences; the widget shows them as a list.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from kjoin.fates import Reason
from kjoin.records import Output
from kjoin.trace import Trace

from .values import plain

__all__ = ["output_hints", "split_ts", "TIMESTAMP_RULES"]

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


def output_hints(trace: Trace, index: int, said: list[str], order: bool = True) -> list[str]:
    """Hints for outputs ``said`` (parsed items) that differ from what step ``index`` emitted; ``order``: whether
    the exercise asks for their order."""
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
        if said_values != values and order:
            hints.append(
                "The outputs are right, their order is not. A step first emits what it releases for earlier "
                "records (oldest first), then its own results, in the order of the partners' timestamps."
            )
        return hints
    missing = list((Counter(values) - Counter(said_values)).elements())
    extra = list((Counter(said_values) - Counter(values)).elements())
    if trace.scenario.join in _AGGREGATES:  # an aggregate's update: no sides, no windows to join
        return _windowed_hints(trace, index, missing, extra) or [_aggregate_hint(trace, index)]
    join = trace.scenario.join
    tables = join in ("table-table", "fk") or join.startswith("versioned-table")
    missing_outputs = [o for o in emitted if plain(o.render()) in missing]
    released = [o for o in missing_outputs if _with_null(o) and o.origin_step != index and step.message is None]
    if released:
        hints.append(_released_hint(trace, index))
    if any(_with_null(o) and o.origin_step == index for o in missing_outputs):
        if step.message is None and step.record.value is None and join.startswith("stream"):
            hints.append("A result of the record's own is missing: its null value, paired with what it finds.")
        else:
            hints.append("A result with null is missing: the record's own result, with null for the side it lacks.")
    if any(o.tombstone for o in missing_outputs):
        era = getattr(getattr(trace.scenario, "semantics", None), "era", "3.1")
        hints.append(
            "A tombstone (null) for the key is missing: in this era, when does a table join send one?"
            if era == "0.10.0"
            else "A tombstone is missing: when a key's join result goes away, the join emits null for its key."
        )
    if "null" in extra:
        hints.append(
            "A tombstone (null) deletes a result: is there one to delete, by this join's rules, at this step?"
            if tables
            else "A stream join deletes no results: it never emits a tombstone."
        )
    extra_joined = [e for e in extra if e != "null" and not e.endswith("-null") and not e.startswith("null-")]
    if any(_joined(o) for o in missing_outputs) or extra_joined:
        window = _window_hint(trace, index)
        if window:
            hints.append(window)
        else:
            hints.append("Look at the other side's rows in the state before the step: which of them match its key?")
    if any(e.endswith("-null") or e.startswith("null-") for e in extra) and not released:
        hints.append(_extra_null_hint(trace))
    if not hints:
        hints.append("Compare with the state before the step: what does the record find, and what does it change?")
    return hints


def _released_hint(trace: Trace, index: int) -> str:
    """A result this step releases for an earlier, held record: what moved, in the join's words."""
    step = trace.steps[index]
    join = trace.scenario.join
    if join in ("stream-table", "stream-globaltable"):
        return (
            "A result is missing that this step releases for an earlier record from the grace buffer: this record "
            "moves the buffer's stream time. Which waiting record's ts plus grace does it reach?"
        )
    if join == "stream-stream":
        now = trace.state_at(index).stream_time(step.task)
        return (
            f"A result is missing that this step releases for an earlier record: after this step stream time is "
            f"{now}. Which held record's window closes (its end plus grace) before that? It is emitted now, with null "
            "for the side that never came."
        )
    return "A result is missing that belongs to an earlier record: which earlier update does this step complete?"


def _extra_null_hint(trace: Trace) -> str:
    """Too many results with null: which records get one, by this join's rules and era."""
    join, variant = trace.scenario.join, getattr(trace.scenario, "variant", "")
    era = getattr(getattr(trace.scenario, "semantics", None), "era", "3.1")
    if join == "stream-stream" and era == "3.1":
        return (
            "Not every record without a partner gets a result with null at once: since 3.1 a left or outer join "
            "holds it until its window closes (end plus grace), and an inner join never gives it one."
        )
    if join == "stream-stream":
        return (
            "Which records get a result with null in this era? A left join gives one only to left records without "
            "a partner, an outer join to both sides, an inner join to none."
        )
    return (
        f"Which records get a result with null? A {variant} join keeps a record without partner only on its "
        + ("left side" if variant == "left" else "both sides" if variant == "outer" else "no side: inner")
        + "."
    )


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
    if trace.scenario.join == "window-aggregate":
        return (
            "Count again which records are in each window of the key, and whether the record's window is still open "
            "(its end plus grace against stream time): a record whose every window has closed changes none."
        )
    return (
        "Count again which records are in each group: an update first subtracts the row's old value from its old "
        "group, then adds the new value to its new group; a delete only subtracts."
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
