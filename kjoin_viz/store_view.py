"""The stores of a snapshot as small tables, with what a step changed marked.

Every store in ``snapshot.stores`` (``StoreId(task, name) -> {entry_key: row}``) becomes a
:class:`StoreTable`. The stores kjoin knows get named columns:

- a window store (``left window``, ``right window``): ``key | ts | value``;
- a table store (``left table``, ``right table``): ``key | value | ts | old_value``;
- the outer-join buffer: ``ts | side | key | value | closes_at_ms`` (the close time is
  when the record leaves as a ``…-null`` result);
- the clock: one row per clock (``stream time``, …).

Any other store (foreign-key subscriptions, versioned tables, …) is shown as
``entry | <fields of the row>``: a dataclass row by its fields, a tuple by position, any
other value as ``value``. So a new store shows up without a change here.
"""

from __future__ import annotations

import dataclasses
import enum
import heapq
import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from kjoin.records import render_value

__all__ = ["StoreTable", "store_tables", "MAX_ROWS_SHOWN"]

MAX_ROWS_SHOWN = 40
"""Rows shown per store; the rest are counted (``… 12 more``) so a step stays cheap."""

Change = tuple[Any, Any, bool]  # (StoreId, entry key, put?)


@dataclass(frozen=True)
class StoreTable:
    """One store after a step: its header, its rows, and which rows the step touched.

    ``changed`` holds the positions of rows put during the step; ``deleted`` the entry keys
    (rendered) the step removed; ``hidden`` how many rows were left out.
    """

    task: int
    name: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    changed: frozenset[int]
    deleted: tuple[str, ...]
    hidden: int

    @property
    def title(self) -> str:
        return f"task {self.task}: {self.name}"


def store_tables(stores: Mapping[Any, Mapping[Any, Any]], changes: Iterable[Change] = ()) -> list[StoreTable]:
    """Every store as a :class:`StoreTable`, ordered by task and then by name."""
    put: dict[Any, set[Any]] = {}
    removed: dict[Any, list[Any]] = {}
    for store, entry_key, is_put in changes:
        if is_put:
            put.setdefault(store, set()).add(entry_key)
            if entry_key in removed.get(store, ()):
                removed[store].remove(entry_key)
        else:
            put.get(store, set()).discard(entry_key)
            removed.setdefault(store, []).append(entry_key)
    tables = []
    for store in sorted(stores, key=lambda s: (s.task, _store_order(s.name), s.name)):
        entries = stores[store]
        header, to_row = _layout(store.name, entries)
        ordered = _sorted_entries(entries)
        shown = ordered[:MAX_ROWS_SHOWN]
        touched = put.get(store, set())
        rows = tuple(to_row(key, row) for key, row in shown)
        changed = frozenset(i for i, (key, _) in enumerate(shown) if key in touched)
        gone = tuple(_render_entry(key) for key in removed.get(store, ()) if key not in entries)
        tables.append(StoreTable(store.task, store.name, header, rows, changed, gone, len(ordered) - len(shown)))
    return tables


# -- layouts of the known stores -------------------------------------------------------------
def _store_order(name: str) -> int:
    order = ("clock", "left window", "right window", "outer-join buffer", "left table", "right table")
    return order.index(name) if name in order else len(order)


def _layout(name: str, entries: Mapping[Any, Any]):
    if name.endswith(" window"):
        return ("key", "ts", "value"), lambda k, v: (_r(k[0]), str(k[1]), _r(v))
    if name.endswith(" table") and _all_triples(entries):
        return ("key", "value", "ts", "old_value"), lambda k, v: (_r(k), _r(v[0]), str(v[1]), _r(v[2]))
    if name == "outer-join buffer":
        return ("ts", "side", "key", "value", "closes_at_ms"), lambda k, r: (
            str(r.ts), str(r.side), _r(r.key), _r(r.value), str(r.closes_at_ms))
    if name == "clock":
        return ("clock", "ms"), lambda k, v: (str(k), _r(v))
    return _generic_layout(entries)


def _all_triples(entries: Mapping[Any, Any]) -> bool:
    return all(isinstance(v, tuple) and len(v) == 3 for v in entries.values())


def _generic_layout(entries: Mapping[Any, Any]):
    """``entry | fields…`` for a store this module has no layout for."""
    sample = next(iter(entries.values()), None)
    if dataclasses.is_dataclass(sample) and not isinstance(sample, type):
        fields = tuple(f.name for f in dataclasses.fields(sample))
        return ("entry", *fields), lambda k, v: (_render_entry(k), *(_r(getattr(v, f, None)) for f in fields))
    if isinstance(sample, tuple):
        width = max(len(v) for v in entries.values())
        return ("entry", *(f"{i}" for i in range(width))), lambda k, v: (
            _render_entry(k), *(_r(v[i]) if i < len(v) else "" for i in range(width)))
    return ("entry", "value"), lambda k, v: (_render_entry(k), _r(v))


# -- rendering helpers ------------------------------------------------------------------------
def _r(value: Any) -> str:
    """A cell: strings bare, ``null`` for ``None``, anything else as compact JSON; enums by
    their value and dataclasses by their fields, so new kinds of rows render without code."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, enum.Enum):
        return _r(value.value)
    if value is None or isinstance(value, str):
        return render_value(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return repr(value)


def _render_entry(key: Any) -> str:
    if isinstance(key, tuple):
        return "(" + ", ".join(_r(part) for part in key) + ")"
    return _r(key)


def _sort_key(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_sort_key(part) for part in value)
    if value is None:
        return ("", "")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ("0", value)
    return (type(value).__name__, str(value))


def _sorted_entries(entries: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """All entries in key order; of a large store only the first rows shown, in order."""
    pick = sorted if len(entries) <= 4 * MAX_ROWS_SHOWN else _first_shown
    try:
        ordered = pick(entries.items(), key=lambda item: _sort_key(item[0]))
    except TypeError:  # entry keys of different shapes: fall back to their text
        ordered = pick(entries.items(), key=lambda item: repr(item[0]))
    return ordered + [None] * (len(entries) - len(ordered))


def _first_shown(items: Iterable[tuple[Any, Any]], key) -> list[tuple[Any, Any]]:
    return heapq.nsmallest(MAX_ROWS_SHOWN, items, key=key)
