"""The stateless nodes: each record passes (or is filtered out) on its own. One small function per node kind, read
from :data:`HANDLERS` by the node's kind: a source, ``merge``, ``to_stream``, ``filter``, ``map_values``,
``select_key`` and ``group_by``, ``map``, ``flat_map_values`` and ``flat_map``."""

from __future__ import annotations

from itertools import islice
from typing import Any, Callable

from ...fates import Fate, Reason
from ...records import Side, render_value
from ..functions import Function, UserFunctionError
from ..plain import as_written, shown
from .base import NodeProcessor, Outcome, Rec, said

__all__ = ["StatelessNode", "HANDLERS", "PASS_OPS", "MAX_RECORDS_PER_RECORD"]


def _read(fn: Any, rec: Rec) -> Outcome:
    return Outcome(Fate.FORWARDED, None, lambda: f"read {said(rec)}.", [rec])


def _merge(fn: Any, rec: Rec) -> Outcome:
    return Outcome(Fate.FORWARDED, None, lambda: f"merged {said(rec)} into one stream.", [rec])


def _to_stream(fn: Any, rec: Rec) -> Outcome:
    plain = Rec(rec.key, rec.value, rec.ts)
    return Outcome(Fate.FORWARDED, None, lambda: f"the table's change {said(rec)} as a stream record.", [plain])


def _filter(fn: Function, rec: Rec) -> Outcome:
    if fn(rec.key, rec.value):
        return Outcome(Fate.FORWARDED, None, lambda: f"{fn.text}: kept.", [rec])
    return Outcome(Fate.DROPPED, Reason.FILTERED, lambda: f"{fn.text}: false for {said(rec)}, filtered out.")


def _map_values(fn: Function, rec: Rec) -> Outcome:
    new = Rec(rec.key, fn(rec.value), rec.ts)
    return Outcome(Fate.FORWARDED, None, lambda: f"{render_value(rec.value)} → {render_value(new.value)}.", [new])


def _select_key(fn: Function, rec: Rec) -> Outcome:
    new = Rec(fn(rec.key, rec.value), rec.value, rec.ts)
    return Outcome(
        Fate.FORWARDED, None, lambda: f"key {render_value(rec.key)} → {render_value(new.key)} ({fn.text}).", [new]
    )


def _map(fn: Function, rec: Rec) -> Outcome:
    pair = fn(rec.key, rec.value)
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise UserFunctionError(
            f"the map function ({fn.text})", f"returned {shown(pair)}", fix="return a pair (key, value)"
        )
    new = Rec(pair[0], as_written(pair[1]), rec.ts)
    return Outcome(Fate.FORWARDED, None, lambda: f"{said(rec)} → {said(new)}.", [new])


def _flat_map_values(fn: Function, rec: Rec) -> Outcome:
    return _made(fn, rec, [Rec(rec.key, as_written(value), rec.ts) for value in _many(fn(rec.value), fn, rec)])


def _flat_map(fn: Function, rec: Rec) -> Outcome:
    pairs = _pairs(fn(rec.key, rec.value), fn, rec)
    return _made(fn, rec, [Rec(key, as_written(value), rec.ts) for key, value in pairs])


def _made(fn: Function, rec: Rec, made: list[Rec]) -> Outcome:
    if not made:
        return Outcome(Fate.DROPPED, Reason.FILTERED, lambda: f"{fn.text}: no records from {said(rec)}.")
    return Outcome(Fate.FORWARDED, None, lambda: f"{fn.text}: {said(rec)} → " + ", ".join(map(said, made)) + ".", made)


HANDLERS: dict[str, Callable[[Any, Rec], Outcome]] = {
    "stream": _read,
    "repartition-source": _read,
    "filter": _filter,
    "map_values": _map_values,
    "select_key": _select_key,
    "map": _map,
    "to_stream": _to_stream,
    "merge": _merge,
    "group_by": _select_key,
    "flat_map_values": _flat_map_values,
    "flat_map": _flat_map,
}
"""Node kind -> ``(fn, rec) -> Outcome``: what the node does with one record (``fn``: the node's function, ``None``
for a node that has none)."""

PASS_OPS = tuple(HANDLERS)
"""Nodes that keep no state: each record passes (or is filtered out) on its own."""


class StatelessNode(NodeProcessor):
    """A stateless node's processor: its kind's handler from :data:`HANDLERS`, with the node's function."""

    def handle(self, port: Side | None, rec: Rec, step: int) -> Outcome:
        return HANDLERS[self.node.op](self.node.params.get("fn"), rec)


MAX_RECORDS_PER_RECORD = 100_000
"""The most records ``flat_map`` or ``flat_map_values`` makes of one record: more (an endless iterator, say) stops
the run at the node, with the record, rather than filling the memory."""


def _many(values: Any, fn: Function, rec: Rec, what: str = "flat_map_values", items: str = "values") -> list[Any]:
    if values is None or isinstance(values, (str, bytes, dict, set, frozenset)) or not hasattr(values, "__iter__"):
        raise UserFunctionError(
            f"the {what} function ({fn.text})", f"returned {shown(values)}", fix=f"return a list of {items}"
        )
    try:
        found = list(islice(values, MAX_RECORDS_PER_RECORD + 1))
    except Exception as error:  # noqa: BLE001 - an iterator the function returned raised while kjoin read it
        raise UserFunctionError(
            f"the {what} function ({fn.text})",
            f"returned an iterator that raised {type(error).__name__}: {error}",
            error,
        ) from error
    if len(found) > MAX_RECORDS_PER_RECORD:
        raise UserFunctionError(
            f"the {what} function ({fn.text})",
            f"returned more than {MAX_RECORDS_PER_RECORD:,} {items} for one record (an endless iterator?), kjoin's "
            "bound on the records one record makes",
            fix=f"return at most {MAX_RECORDS_PER_RECORD:,} {items} for a record",
        )
    return found


def _pairs(pairs: Any, fn: Function, rec: Rec) -> list[tuple[Any, Any]]:
    found = _many(pairs, fn, rec, "flat_map", "(key, value) pairs")
    if not all(isinstance(pair, (tuple, list)) and len(pair) == 2 for pair in found):
        raise UserFunctionError(
            f"the flat_map function ({fn.text})", f"returned {shown(found)}", fix="return a list of (key, value) pairs"
        )
    return [tuple(pair) for pair in found]  # type: ignore[misc]
