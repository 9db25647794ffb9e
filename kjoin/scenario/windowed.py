"""The windowed aggregates today's Kafka ships beyond tumbling and hopping windows, as scenario fields of
``join: window-aggregate``::

    window: {inactivity_gap_ms: 5, grace_ms: 2}     # SessionWindows.ofInactivityGapAndGrace
    window: {time_difference_ms: 10, grace_ms: 2}   # SlidingWindows.ofTimeDifferenceAndGrace (2.7+)
    window: {size_ms: 10, advance_ms: 5, grace_ms: 2}   # TimeWindows (tumbling, hopping), as before
    emit: final                 # emitStrategy(EmitStrategy.onWindowClose()) (3.3+); default: updates
    suppress: until-window-closes   # .suppress(Suppressed.untilWindowCloses(unbounded())) (2.1+)

:func:`window_kind` tells the three window mappings apart, :func:`parse_windows` reads the session and sliding
ones, :func:`check_final_results` the ``emit`` and ``suppress`` fields; :func:`kjoin.engine.windowed.windowed_factory`
builds one task's processor from them (:mod:`kjoin.joins.session_aggregate`, :mod:`kjoin.joins.sliding_aggregate`,
:mod:`kjoin.joins.final_results`).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..joins.session_aggregate import SessionWindows
from ..joins.sliding_aggregate import SlidingWindows
from ..semantics import Semantics
from .fields import ScenarioError
from .inputs import did_you_mean, unknown_field

__all__ = [
    "window_kind",
    "parse_windows",
    "check_final_results",
    "needs_windowed_runner",
    "EMITS",
    "SUPPRESSIONS",
]

EMITS = ("updates", "final")
SUPPRESSIONS = ("until-window-closes",)
_SESSION = {"inactivity_gap_ms", "grace_ms"}
_SLIDING = {"time_difference_ms", "grace_ms"}


def window_kind(spec: Any) -> str:
    """``session``, ``sliding`` or ``time`` (tumbling and hopping), by the fields of a ``window:`` mapping."""
    if isinstance(spec, Mapping):
        if "inactivity_gap_ms" in spec:
            return "session"
        if "time_difference_ms" in spec:
            return "sliding"
    return "time"


def parse_windows(name: str, spec: Mapping[str, Any]) -> SessionWindows | SlidingWindows:
    """A session or sliding ``window:`` mapping, every field checked."""
    kind = window_kind(spec)
    allowed = _SESSION if kind == "session" else _SLIDING
    unknown_field(name, spec, allowed)
    for part, value in spec.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise ScenarioError(f"{name}.{part}: integer milliseconds, not {value!r}")
    try:
        if kind == "session":
            return SessionWindows(spec["inactivity_gap_ms"], spec.get("grace_ms", 0))
        return SlidingWindows(spec["time_difference_ms"], spec.get("grace_ms", 0))
    except ValueError as error:
        raise ScenarioError(f"{name}: {error}") from None


def check_final_results(data: Mapping[str, Any], join: str, semantics: Semantics) -> None:
    """``emit`` and ``suppress``: their values, the join that has them, and the Kafka versions that do; session and
    sliding windows only in a ``window-aggregate`` with Kafka's default store."""
    kind = window_kind(data.get("window"))
    if kind != "time" and join != "window-aggregate":
        raise ScenarioError(
            f"window: {kind} windows exist here for window-aggregate only; a {join} scenario takes {{size_ms, "
            "advance_ms, grace_ms}}"
        )
    if kind != "time":
        for field in ("retention_ms", "segments"):
            if field in data:
                raise ScenarioError(
                    f"{field}: kjoin models {kind} windows with Kafka's default store (retention "
                    f"{'gap + grace' if kind == 'session' else '2 x time difference + grace'}); remove the field"
                )
    if kind == "sliding" and not semantics.sliding_windows:
        raise ScenarioError(f"window: sliding windows exist since Kafka 2.7 (KIP-450); semantics {semantics} has none")
    emit = data.get("emit", "updates")
    if not isinstance(emit, str) or emit not in EMITS:
        raise ScenarioError(f"emit: one of {' | '.join(EMITS)}, not {emit!r}{did_you_mean(emit, EMITS)}")
    suppress = data.get("suppress")
    if suppress is not None and suppress not in SUPPRESSIONS:
        raise ScenarioError(
            f"suppress: {' | '.join(SUPPRESSIONS)} (Suppressed.untilWindowCloses), not {suppress!r}"
            f"{did_you_mean(suppress, SUPPRESSIONS)}"
        )
    if emit == "final" and not semantics.emit_on_window_close:
        raise ScenarioError(
            f"emit: final (emitStrategy(onWindowClose())) exists since Kafka 3.3 (KIP-825); semantics {semantics} "
            "has none (suppress: until-window-closes is the older way)"
        )
    if suppress is not None and not semantics.suppress_until_window_closes:
        raise ScenarioError(f"suppress: exists since Kafka 2.1 (KIP-328); semantics {semantics} has none")
    if emit == "final" and suppress is not None:
        raise ScenarioError(
            "emit, suppress: choose one way to see final results (emit: final inside the aggregate, or suppress: "
            "until-window-closes after it)"
        )


def needs_windowed_runner(data: Mapping[str, Any]) -> bool:
    """Does this ``window-aggregate`` use a session or sliding window, emit-final or suppress?"""
    return window_kind(data.get("window")) != "time" or data.get("emit", "updates") != "updates" or "suppress" in data
