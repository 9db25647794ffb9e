"""The stores of a snapshot as small tables, with what a step changed marked.

Every store in ``snapshot.stores`` (``StoreId(task, name) -> {entry_key: row}``) becomes a
:class:`StoreTable`. A store's columns and rows come from its kind (:mod:`kjoin.stores`:
each kind declares its ``header`` and builds its rows); this module only renders the cells
and adds what the entries alone do not say:

- hashes are shown short (``#3f2a9c01``); a versioned table's ``valid to`` of the newest
  version reads ``latest`` and a null value ``null (tombstone)``;
- the outer-join buffer leaves out the step a record came from (the close time says when
  it leaves as a ``…-null`` result);
- with the scenario given, the grace buffer gets a ``leaves at`` column (the buffer time at
  which a record is joined, ts + grace), a foreign-key join's left table the ``hash`` of
  each row's value (the hash a response must carry to pass the hash check), and a
  versioned table and the grace buffer a one-line ``note``: the history retention and what
  has expired, the grace and the buffer time.

A store of no known kind is shown as ``entry | <fields of the row>``: a dataclass row by
its fields, a tuple by position, any other value as ``value``.

Kafka's internals (``internals=False``, what the stepper and ``show_step`` show until the learner
ticks "show Kafka's internals"): the table's ``old_value`` (unless the join sends old values), the
clock's bookkeeping rows (each store's observed time, the outer-join
buffer's min time: only stream time stays), a windowed store's segment arithmetic; and a deleted
entry is named by its value and timestamp (``E@40``) rather than by its store key
(``(40, 1, k, 1)``). Each table says what it left out (:attr:`StoreTable.hidden_internals`). A
foreign-key join's hashes stay: the hash check is what notebook 05 teaches with them.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from kjoin.joins.fk_protocol import short_hash, value_hash
from kjoin.records import Side
from kjoin.state import StoreId
from kjoin.stores import (
    CLOCK,
    GRACE_STREAM_TIME,
    STREAM_TIME,
    StoreKind,
    kind_of,
    observed_time_name,
    store_order,
    table_store_name,
    versioned_store_name,
)
from kjoin.stores.base import ordered
from .values import show_value

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
    note: str = ""
    """What to read in this store at this step (retention, grace, …); empty for most stores."""
    hidden_internals: tuple[str, ...] = ()
    """Kafka's internals left out of this table (``internals=False``): columns and clock rows, by name."""

    @property
    def title(self) -> str:
        return f"task {self.task}: {self.name}"


INTERNAL_COLUMNS = {"table": ("old_value",)}
"""Columns of a kind that are Kafka's bookkeeping, not what a learner reads the join by."""
LEARNER_CLOCK_ROWS = (STREAM_TIME, GRACE_STREAM_TIME)
"""The clock rows shown without the internals: the stream time that decides windows and releases."""


def store_tables(
    stores: Mapping[Any, Mapping[Any, Any]],
    changes: Iterable[Change] = (),
    scenario: Any = None,
    focus_key: Any = None,
    internals: bool = True,
    before: Mapping[Any, Mapping[Any, Any]] | None = None,
) -> list[StoreTable]:
    """Every store as a :class:`StoreTable`, ordered by task and then by name.

    A store's id names its kind; an id made by hand (no kind) is recognised by its default
    name. ``scenario`` (optional) adds what the stores alone do not say: the grace period,
    the history retention, and whether a left table belongs to a foreign-key join.
    ``focus_key`` (optional, the key the step looked up): its rows come first in every
    store, so a big store never hides them behind ``… N more``. ``internals=False`` leaves out
    Kafka's internals (the module docstring); ``before`` (the stores before the step) names
    deleted entries by their value and timestamp then.
    """
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
    for store in sorted(stores, key=store_order):
        entries = stores[store]
        if _replaced_by_versions(stores, store):
            continue
        kind = kind_of(store)
        parts = _focused(entries, focus_key)
        layout = _layout(store, kind, parts, scenario, declared=getattr(store, "kind", None) is not None)
        header, shown = layout.header, layout.items
        touched = put.get(store, set())
        gone_keys = [key for key in removed.get(store, ()) if key not in entries]
        hidden_internals: tuple[str, ...] = ()
        if internals:
            gone = tuple(_render_gone(layout.kind, key) for key in gone_keys)
            note = _note(store, kind, stores, scenario)
        else:
            header, shown, hidden_internals = _without_internals(store, layout, scenario)
            old = (before or {}).get(store, {})
            gone = tuple(_learner_gone(layout.kind, key, old.get(key)) for key in gone_keys)
            note = "" if store.name.endswith("segments") else _note(store, kind, stores, scenario)
        rows = tuple(row for _, row in shown)
        changed = frozenset(i for i, (key, _) in enumerate(shown) if key in touched)
        hidden = len(entries) - len(layout.items)
        tables.append(StoreTable(store.task, store.name, header, rows, changed, gone, hidden, note, hidden_internals))
    return tables


def _without_internals(store: Any, layout: "_Layout", scenario: Any):
    """A layout's header and rows without Kafka's internals, and the names of what was left out."""
    kind = getattr(layout.kind, "kind", None)
    header, items = layout.header, layout.items
    if kind == "clock":
        kept = [(key, row) for key, row in items if key in LEARNER_CLOCK_ROWS]
        left_out = tuple(str(key) for key, _ in items if key not in LEARNER_CLOCK_ROWS)
        return header, kept, left_out
    internal = set(INTERNAL_COLUMNS.get(kind, ()))
    if kind == "table" and getattr(scenario, "send_old_values", False):
        internal.discard("old_value")  # what the join sends: part of what is taught
    drop = [i for i, column in enumerate(header) if column in internal]
    if not drop:
        return header, items, ()
    keep = [i for i in range(len(header)) if i not in drop]
    rows = [(key, tuple(row[i] for i in keep)) for key, row in items]
    return tuple(header[i] for i in keep), rows, tuple(header[i] for i in drop)


def _learner_gone(kind: Any, key: Any, row: Any) -> str:
    """A deleted entry by what it held: ``E@40`` for a window's or the outer-join buffer's record, the key for
    a table's row; Kafka's store key when the row is not known."""
    name = getattr(kind, "kind", None)
    if row is not None and name == "outer-join buffer":
        return f"{show_value(row.value)}@{row.ts}"
    if row is not None and name == "window" and isinstance(key, tuple) and len(key) >= 2:
        return f"{show_value(row)}@{key[1]}"
    if name == "table":
        return _r(key)
    return _render_gone(kind, key)


def _focused(entries: Mapping[Any, Any], focus_key: Any) -> list[Mapping[Any, Any]]:
    """A store's entries in the groups shown one after the other: those of ``focus_key``
    first (when given), then the others."""
    if focus_key is None:
        return [entries]
    first = {key: row for key, row in entries.items() if _holds_key((key, row), focus_key)}
    return [first, {key: row for key, row in entries.items() if key not in first}]


def _holds_key(entry: tuple[Any, Any], key: Any) -> bool:
    """Whether a store entry belongs to record key ``key``: a table's key, the key of a window
    or versioned store's ``(key, ts, ...)``, or a buffered record's ``key``."""
    entry_key, row = entry
    if isinstance(entry_key, tuple):
        return bool(entry_key) and entry_key[0] == key
    return entry_key == key or getattr(row, "key", None) == key


def _replaced_by_versions(stores: Mapping[Any, Mapping[Any, Any]], store: Any) -> bool:
    """An empty ``left table``/``right table`` next to the same side's versioned table: the
    join keeps that side versioned, and the plain store is never written."""
    if stores[store]:
        return False
    return any(
        store.name == table_store_name(side) and StoreId(store.task, versioned_store_name(side)) in stores
        for side in Side
    )


def _clock_of(stores: Mapping[Any, Mapping[Any, Any]], task: int) -> Mapping[str, Any]:
    return stores.get(StoreId(task, CLOCK), {})


# -- layouts: a kind's header and rows, rendered --------------------------------------------
@dataclass(frozen=True)
class _Layout:
    header: tuple[str, ...]
    items: list[tuple[Any, tuple[str, ...]]]  # (entry key, rendered row), the rows shown
    kind: Any = None


HIDDEN = {"outer-join buffer": ("origin_step",)}
"""Columns of a kind the tables leave out."""

CELLS: dict[str, Callable[[Any], str]] = {"hash": short_hash}
"""How a column of a known kind is rendered when not with :func:`_r`."""

KIND_CELLS: dict[str, dict[str, Callable[[Any], str]]] = {
    "versioned table": {
        "valid to": lambda ts: "latest" if ts is None else str(ts),
        "value": lambda v: "null (tombstone)" if v is None else _r(v),
    },
}


def _layout(store: Any, kind: Any, parts: list[Mapping[Any, Any]], scenario: Any, declared: bool) -> _Layout:
    """The rendered rows of a store (its entries in ``parts``, shown one group after the
    other): its kind's, or the generic ones when it has no kind (or when a store recognised by
    name only holds rows of another shape)."""
    if kind is not None:
        try:
            return _kind_layout(store, kind, parts, scenario)
        except (AttributeError, TypeError, ValueError, IndexError, KeyError):
            if declared:
                raise
    header, to_row = _generic_layout({key: row for part in parts for key, row in part.items()})
    items = [(key, to_row(key, row)) for part in parts for key, row in _sorted_entries(part)]
    return _Layout(header, items[:MAX_ROWS_SHOWN])


def _kind_layout(store: Any, kind: Any, parts: list[Mapping[Any, Any]], scenario: Any) -> _Layout:
    hidden = HIDDEN.get(kind.kind, ())
    columns = [i for i, column in enumerate(kind.header) if column not in hidden]
    formats = {**CELLS, **KIND_CELLS.get(kind.kind, {})}
    render = [formats.get(kind.header[i], _r) for i in columns]
    header = tuple(kind.header[i] for i in columns)
    extra_header, extra = _extra_columns(store, kind, scenario)
    items = []
    for part in parts:
        for key, row in kind.items(part, MAX_ROWS_SHOWN - len(items)):
            cells = tuple(cell(row[i]) for cell, i in zip(render, columns))
            items.append((key, cells + tuple(add(row) for add in extra)))
    return _Layout(header + extra_header, items, kind)


def _extra_columns(store: Any, kind: Any, scenario: Any) -> tuple[tuple[str, ...], list[Callable[[tuple], str]]]:
    """Columns the scenario adds: the hash of a foreign-key join's left values, and when a
    grace-buffered record leaves."""
    if kind.kind == "table" and store.name == table_store_name(Side.LEFT) and getattr(scenario, "join", None) == "fk":
        return ("hash",), [lambda row: short_hash(value_hash(row[kind.header.index("value")]))]
    grace = getattr(scenario, "grace_ms", None)
    if kind.kind == "grace buffer" and grace is not None:
        return ("leaves at",), [lambda row: f"buffer time {row[kind.header.index('ts')] + grace}"]
    return (), []


def _note(store: Any, kind: Any, stores: Mapping[Any, Mapping[Any, Any]], scenario: Any) -> str:
    """One line on what to read in a store at this step, from the scenario and the clock."""
    if scenario is not None and store.name.endswith(("window aggregate store", "window aggregate store segments")):
        return _window_store_note(store.name, scenario)
    if scenario is None or kind is None:
        return ""
    clock = _clock_of(stores, store.task)
    if kind.kind == "versioned table":
        side = next((side for side in Side if store.name == versioned_store_name(side)), None)
        retention = getattr(getattr(scenario, str(side), None), "history_retention_ms", None)
        if retention is None:
            return ""
        observed = clock.get(observed_time_name(store.name))
        if observed is None:
            return f"history retention {retention} ms"
        horizon = observed - retention
        if horizon <= 0:
            return f"history retention {retention} ms; newest ts put {observed}: nothing has expired yet"
        return (
            f"history retention {retention} ms; newest ts put {observed}: a put older than {horizon} is refused, "
            f"and a lookup as of a time before {horizon} can only see the latest version"
        )
    if kind.kind == "grace buffer":
        grace = getattr(scenario, "grace_ms", None)
        if grace is None:
            return ""
        buffer_time = clock.get(GRACE_STREAM_TIME)
        if buffer_time is None:
            return f"grace {grace} ms"
        return (
            f"grace {grace} ms; buffer time {buffer_time} (the largest ts accepted): "
            f"records with ts <= {buffer_time - grace} are released; "
            f"an arriving record with ts < {buffer_time - grace} is joined at once"
        )
    return ""


def _window_store_note(name: str, scenario: Any) -> str:
    """A windowed aggregate's windows (when one closes) or its store's segments (when one is dropped)."""
    options = getattr(scenario, "options", None) or {}
    right = name.startswith("right ")
    windows = (options.get("right_windows") if right else None) or options.get("windows")
    layout = options.get("right_layout" if right else "layout")
    if not name.endswith("segments"):
        if windows is None:
            return ""
        return f"{windows.describe()}; a window [start, end) takes records until stream time reaches end + grace"
    if layout is None:
        return ""
    return (
        f"retention {layout.retention_ms} ms in segments of {layout.segment_interval_ms} ms: a segment is dropped "
        f"whole once all of it is older than the newest window start - retention; at most "
        f"{layout.max_live_segments} live, storage up to {layout.overhead:g}x the retention"
    )


def _generic_layout(entries: Mapping[Any, Any]):
    """``entry | fields…`` for a store this module has no layout for."""
    sample = next(iter(entries.values()), None)
    if dataclasses.is_dataclass(sample) and not isinstance(sample, type):
        fields = tuple(f.name for f in dataclasses.fields(sample))
        return ("entry", *fields), lambda k, v: (_render_entry(k), *(_r(getattr(v, f, None)) for f in fields))
    if isinstance(sample, tuple):
        width = max(len(v) for v in entries.values())
        return ("entry", *(f"{i}" for i in range(width))), lambda k, v: (
            _render_entry(k),
            *(_r(v[i]) if i < len(v) else "" for i in range(width)),
        )
    return ("entry", "value"), lambda k, v: (_render_entry(k), _r(v))


# -- rendering helpers ------------------------------------------------------------------------
def _r(value: Any) -> str:
    """A cell: a value as a value (:func:`kjoin_viz.values.show_value`: strings bare, ``null`` for ``None``,
    ``{customer: C2}``); enums by their value and dataclasses by their fields, so new kinds of rows render
    without code."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, enum.Enum):
        return _r(value.value)
    if value is None or isinstance(value, str):
        return show_value(value)
    return show_value(json.loads(json.dumps(value, sort_keys=True, default=_plain)))


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


def _sorted_entries(entries: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """The first entries shown of a store of no known kind, in key order."""
    return ordered(entries, StoreKind.order, MAX_ROWS_SHOWN)


def _render_gone(kind: Any, key: Any) -> str:
    """A deleted entry as the step's ``deleted`` list names it."""
    label = None if kind is None else kind.entry_label(key)
    return _render_entry(key) if label is None else label
