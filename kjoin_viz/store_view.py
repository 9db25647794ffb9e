"""The stores of a snapshot as small tables, with what a step changed marked.

Every store in ``snapshot.stores`` (``StoreId(task, name) -> {entry_key: row}``) becomes a
:class:`StoreTable`. The stores kjoin knows get named columns:

- a window store (``left window``, ``right window``): ``key | ts | value``;
- a table store (``left table``, ``right table``): ``key | value | ts | old_value``;
- the outer-join buffer: ``ts | side | key | value | closes_at_ms`` (the close time is
  when the record leaves as a ``…-null`` result);
- the clock: one row per clock (``stream time``, …);
- a versioned table (``left versioned table``, ``right versioned table``): its history,
  ``key | valid from | valid to | value``, one row per version (``valid to`` is the next
  version's timestamp, ``latest`` for the newest; a null value is a tombstone version);
- the stream-table grace buffer: ``ts | key | value | from step | leaves at``, in eviction
  order (``leaves at``: the buffer time at which the record is joined, ts + grace);
- a foreign-key join's subscription store: ``fk | pk | hash | instruction | ts``, in Kafka's
  CombinedKey byte order (the order of a prefix scan);
- a foreign-key join's messages in flight: ``id | topic | to task | key | carries | hash | ts
  | sent at step``, oldest first;
- in a foreign-key join the left table also shows the ``hash`` of each row's value: the
  hash a response must carry to pass the hash check.

A versioned table and the grace buffer get a one-line ``note`` when the scenario is given:
the history retention and what has expired, the grace and the buffer time.

Any other store is shown as ``entry | <fields of the row>``: a dataclass row by its fields,
a tuple by position, any other value as ``value``. So a new store shows up without a change
here.
"""

from __future__ import annotations

import dataclasses
import enum
import heapq
import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from kjoin.joins.fk_protocol import CombinedKey, Message, SubscriptionWrapper, short_hash, value_hash
from kjoin.records import render_value
from kjoin.stores import GRACE_BUFFER, IN_FLIGHT, SUBSCRIPTIONS, GraceBuffered

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

    @property
    def title(self) -> str:
        return f"task {self.task}: {self.name}"


def store_tables(
    stores: Mapping[Any, Mapping[Any, Any]], changes: Iterable[Change] = (), scenario: Any = None, focus_key: Any = None
) -> list[StoreTable]:
    """Every store as a :class:`StoreTable`, ordered by task and then by name.

    ``scenario`` (optional) adds what the stores alone do not say: the grace period, the
    history retention, and whether a left table belongs to a foreign-key join.
    ``focus_key`` (optional, the key the step looked up): its rows come first in every
    store, so a big store never hides them behind ``… N more``.
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
    for store in sorted(stores, key=lambda s: (s.task, _store_order(s.name), s.name)):
        entries = stores[store]
        if _replaced_by_versions(stores, store):
            continue
        clock = _clock_of(stores, store.task)
        header, to_row, order = _layout(store.name, entries, scenario)
        ordered = _sorted_entries(entries, order)
        if focus_key is not None:
            first = [e for e in ordered if _holds_key(e, focus_key)]
            ordered = first + [e for e in ordered if not _holds_key(e, focus_key)]
        shown = ordered[:MAX_ROWS_SHOWN]
        touched = put.get(store, set())
        rows = tuple(to_row(key, row) for key, row in shown)
        changed = frozenset(i for i, (key, _) in enumerate(shown) if key in touched)
        gone = tuple(_render_gone(store.name, key) for key in removed.get(store, ()) if key not in entries)
        note = _note(store.name, entries, clock, scenario)
        tables.append(StoreTable(store.task, store.name, header, rows, changed, gone, len(ordered) - len(shown), note))
    return tables


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
    if not store.name.endswith(" table") or store.name.endswith(" versioned table") or stores[store]:
        return False
    versioned = store.name[: -len(" table")] + " versioned table"
    return any(other.task == store.task and other.name == versioned for other in stores)


def _clock_of(stores: Mapping[Any, Mapping[Any, Any]], task: int) -> Mapping[str, Any]:
    for store, entries in stores.items():
        if store.task == task and store.name == "clock":
            return entries
    return {}


# -- layouts of the known stores -------------------------------------------------------------
STORE_ORDER = ("clock", "left window", "right window", "outer-join buffer", "left table", "left versioned table",
               "right table", "right versioned table", GRACE_BUFFER, SUBSCRIPTIONS, IN_FLIGHT)
"""The order of a task's stores: a foreign-key join reads left table, right table,
subscription store, then the messages on their way."""


def _store_order(name: str) -> int:
    return STORE_ORDER.index(name) if name in STORE_ORDER else len(STORE_ORDER)


def _layout(name: str, entries: Mapping[Any, Any], scenario: Any = None):
    """``(header, entry -> row, sort key or None)`` of a store."""
    if name.endswith(" window"):
        return ("key", "ts", "value"), lambda k, v: (_r(k[0]), str(k[1]), _r(v)), None
    if name.endswith(" table") and not name.endswith(" versioned table") and _all_triples(entries):
        if name == "left table" and getattr(scenario, "join", None) == "fk":
            return ("key", "value", "ts", "old_value", "hash"), lambda k, v: (
                _r(k), _r(v[0]), str(v[1]), _r(v[2]), short_hash(value_hash(v[0]))), None
        return ("key", "value", "ts", "old_value"), lambda k, v: (_r(k), _r(v[0]), str(v[1]), _r(v[2])), None
    if name.endswith(" cache") and all(isinstance(v, tuple) and len(v) == 4 for v in entries.values()):
        return ("key", "new value", "ts", "from step", "replaced"), lambda k, v: (_r(k), _r(v[0]), str(v[1]), str(v[2]), str(v[3])), None
    if name.endswith("outer-join buffer"):
        return ("ts", "side", "key", "value", "closes_at_ms"), lambda k, r: (
            str(r.ts), str(r.side), _r(r.key), _r(r.value), str(r.closes_at_ms)), None
    if name.endswith("clock"):
        return ("clock", "ms"), lambda k, v: (str(k), _r(v)), None
    if name.endswith(" versioned table") and all(isinstance(k, tuple) and len(k) == 2 for k in entries):
        return _versioned_layout(entries)
    if name == GRACE_BUFFER and all(isinstance(r, GraceBuffered) for r in entries.values()):
        grace = getattr(scenario, "grace_ms", None)
        header = ("ts", "key", "value", "from step") + (() if grace is None else ("leaves at",))
        return header, lambda k, r: (str(r.ts), _r(r.key), _r(r.value), str(r.origin_step),
                                     *(() if grace is None else (f"buffer time {r.ts + grace}",))), lambda item: item[0]
    if name == SUBSCRIPTIONS and all(isinstance(k, CombinedKey) and isinstance(v, tuple) and isinstance(v[0], SubscriptionWrapper) for k, v in entries.items()):
        return ("fk", "pk", "hash", "instruction", "ts"), lambda k, v: (
            _r(k.fk), _r(k.pk), short_hash(v[0].hash), v[0].instruction.value, str(v[1])), lambda item: item[0].sort_key()
    if name == IN_FLIGHT and all(isinstance(m, Message) for m in entries.values()):
        return ("id", "topic", "to task", "key", "carries", "hash", "ts", "sent at step"), lambda k, m: (
            m.id, m.topic, str(m.partition), _r(m.key), carries(m), short_hash(m.value.hash), str(m.ts), str(m.sent_step)), lambda item: item[1].seq
    return (*_generic_layout(entries), None)


def carries(message: Message) -> str:
    """What a message asks or answers: ``(Y, A) PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE`` for a
    subscription (its combined key and instruction), ``A ← bar`` for a response."""
    value = message.value
    if isinstance(value, SubscriptionWrapper):
        return f"({_r(message.key)}, {_r(value.pk)}) {value.instruction.value}"
    return f"{_r(message.key)} ← {_r(value.foreign_value)}"


def _versioned_layout(entries: Mapping[Any, Any]):
    """A versioned table's history: each version valid from its ts to the next version's ts."""
    by_key: dict[Any, list[int]] = {}
    for key, ts in entries:
        by_key.setdefault(key, []).append(ts)
    valid_to = {}
    for key, times in by_key.items():
        times.sort()
        for i, ts in enumerate(times):
            valid_to[(key, ts)] = str(times[i + 1]) if i + 1 < len(times) else "latest"

    def row(k: Any, v: Any) -> tuple[str, ...]:
        return (_r(k[0]), str(k[1]), valid_to[k], "null (tombstone)" if v is None else _r(v))

    return ("key", "valid from", "valid to", "value"), row, None


def _note(name: str, entries: Mapping[Any, Any], clock: Mapping[str, Any], scenario: Any) -> str:
    """One line on what to read in a store at this step, from the scenario and the clock."""
    if scenario is None:
        return ""
    if name.endswith(" versioned table"):
        side = name.split(" ")[0]
        retention = getattr(getattr(scenario, side, None), "history_retention_ms", None)
        if retention is None:
            return ""
        observed = clock.get(f"{name} observed")
        if observed is None:
            return f"history retention {retention} ms"
        horizon = observed - retention
        if horizon <= 0:
            return f"history retention {retention} ms; newest ts put {observed}: nothing has expired yet"
        return (f"history retention {retention} ms; newest ts put {observed}: a put older than {horizon} is refused, "
                f"and a lookup as of a time before {horizon} can only see the latest version")
    if name == GRACE_BUFFER:
        grace = getattr(scenario, "grace_ms", None)
        if grace is None:
            return ""
        buffer_time = clock.get("grace buffer stream time")
        if buffer_time is None:
            return f"grace {grace} ms"
        return (f"grace {grace} ms; buffer time {buffer_time} (the largest ts accepted): records with ts <= {buffer_time - grace} "
                f"are released; an arriving record with ts < {buffer_time - grace} is joined at once")
    return ""


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


def _sorted_entries(entries: Mapping[Any, Any], order: Any = None) -> list[tuple[Any, Any]]:
    """All entries in key order (or ``order``, a key of ``(entry, row)``); of a large store
    only the first rows shown, in order."""
    pick = sorted if len(entries) <= 4 * MAX_ROWS_SHOWN else _first_shown
    if order is not None:
        ordered = pick(entries.items(), key=order)
    else:
        try:
            ordered = pick(entries.items(), key=lambda item: _sort_key(item[0]))
        except TypeError:  # entry keys of different shapes: fall back to their text
            ordered = pick(entries.items(), key=lambda item: repr(item[0]))
    return ordered + [None] * (len(entries) - len(ordered))


def _render_gone(name: str, key: Any) -> str:
    """A deleted entry as the step's ``deleted`` list names it."""
    if isinstance(key, CombinedKey):
        return str(key)
    if name == GRACE_BUFFER and isinstance(key, tuple) and len(key) == 3 and isinstance(key[1], bytes):
        return f"{_r(key[1])}@{key[0]}"
    return _render_entry(key)


def _first_shown(items: Iterable[tuple[Any, Any]], key) -> list[tuple[Any, Any]]:
    return heapq.nsmallest(MAX_ROWS_SHOWN, items, key=key)
