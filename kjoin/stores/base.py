"""What every store has: a kind that describes its rows, and a place in the state log.

A store writes each change through the run's :class:`~kjoin.state.StateLog` as
``entry key -> stored value``. Its *kind* (a :class:`StoreKind`) turns those logged entries
into display rows: a ``header`` of column names and one tuple per entry in the store's own
order. The same description serves the live store (:meth:`Store.rows`), the trace
(:class:`~kjoin.trace.StateSnapshot`) and the widgets (:mod:`kjoin_viz.store_view`), which
only have the logged entries: the id of every store (:class:`~kjoin.state.StoreId`) names its
kind, and every change and snapshot carries those ids.

Adding a store: subclass :class:`Store` with a ``kind`` name, a ``header`` and a ``row``
(or ``items`` when a row needs its neighbours); it is registered by being defined.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, ClassVar, Iterable, Mapping

from ..state import StateLog, StoreId

__all__ = ["StoreKind", "Store", "STORE_KINDS", "kind_of", "owned", "sort_key", "type_then_value"]

STORE_KINDS: dict[str, type["StoreKind"]] = {}
"""Every kind of store by its ``kind`` name, filled as the store modules are imported."""

Item = tuple[Any, Any]  # (entry key, stored value)


class StoreKind:
    """The description of one kind of store's logged entries.

    ``header`` names the columns of a display row; :meth:`row` builds the row of one entry
    (raw values: rendering them is the view's job); :meth:`order` is the store's own order of
    entries. ``default_names`` are the names the store gets when nobody renames it: the view
    uses them to recognise stores of a hand-built state that carries no kinds.
    """

    kind: ClassVar[str] = ""
    header: ClassVar[tuple[str, ...]] = ()
    default_names: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:
            STORE_KINDS[cls.kind] = cls

    @classmethod
    def row(cls, entry_key: Any, stored: Any) -> tuple:
        raise NotImplementedError(f"{cls.__name__} describes no row")

    @classmethod
    def order(cls, item: Item) -> Any:
        """The sort key of an entry: by default its entry key, values of one type in their
        natural order, numbers before text, ``None`` first."""
        return sort_key(item[0])

    @classmethod
    def items(cls, entries: Mapping[Any, Any], limit: int | None = None) -> list[tuple[Any, tuple]]:
        """``(entry key, row)`` in the store's order; only the first ``limit`` if given."""
        return [(key, cls.row(key, stored)) for key, stored in ordered(entries, cls.order, limit)]

    @classmethod
    def rows_of(cls, entries: Mapping[Any, Any]) -> list[tuple]:
        """Every row of these entries, in the store's order."""
        return [row for _, row in cls.items(entries)]

    @classmethod
    def records_of(cls, entries: Mapping[Any, Any]) -> list[dict[str, Any]]:
        """Every row as a dict from column name to cell."""
        return [dict(zip(cls.header, row)) for row in cls.rows_of(entries)]

    @classmethod
    def summary(cls, record: Mapping[str, Any], stored: Any = None) -> tuple[Any, Any, Any, Any]:
        """``(key, ts, value, detail)`` of a row (``record``: the row by column name,
        ``stored``: the logged value), for the state's long table."""
        return record.get("key"), record.get("ts"), record.get("value"), None

    @classmethod
    def summaries(cls, entries: Mapping[Any, Any]) -> list[tuple[Any, Any, Any, Any]]:
        """Every entry as ``(key, ts, value, detail)``, in the store's order
        (:meth:`~kjoin.trace.StateSnapshot.frame`)."""
        return [cls.summary(dict(zip(cls.header, row)), entries[key]) for key, row in cls.items(entries)]

    @classmethod
    def entry_label(cls, entry_key: Any) -> str | None:
        """How to name an entry the store no longer holds; ``None``: the view renders the key."""
        return None


class Store(StoreKind):
    """A store of one task, declared in the state log under its kind."""

    def __init__(self, log: StateLog, task: int, name: str) -> None:
        self._log = log
        self.store = StoreId(task, name, self.kind)
        log.declare(self.store)

    @property
    def name(self) -> str:
        return self.store.name

    def rows(self) -> list[tuple]:
        """The store's rows now, in header order and the store's order."""
        return self.rows_of(self._log.live.get(self.store, {}))

    def parts(self) -> tuple["Store", ...]:
        """This store and the stores it keeps for itself (a versioned store's clock), each declared in the log."""
        return (self,)


def owned(*stores: "Store | None") -> tuple[Store, ...]:
    """The stores a processor keeps, from the stores it holds (``None``: one it does not have): each store's
    :meth:`Store.parts`, each store once (by its id), in the order given."""
    found: dict[StoreId, Store] = {}
    for store in stores:
        for part in store.parts() if store is not None else ():
            found.setdefault(part.store, part)
    return tuple(found.values())


def kind_of(store: StoreId) -> type[StoreKind] | None:
    """The kind of a store: the one its id names, or for an id made by hand (no kind), the
    kind whose default names include the store's name; ``None`` when neither says."""
    named = getattr(store, "kind", None)
    if named is not None:
        return STORE_KINDS.get(named)
    return next((kind for kind in STORE_KINDS.values() if store.name in kind.default_names), None)


def type_then_value(value: Any) -> tuple[str, Any]:
    """An order over the keys of the windowed-table design's stores (aggregates, window stores): by type name, then
    value (``None``
    as 0)."""
    return (type(value).__name__, value if value is not None else 0)


def sort_key(value: Any) -> Any:
    """An order over entry keys of mixed types: tuples part by part, ``None`` first, numbers
    by value, anything else by type name and text."""
    if isinstance(value, tuple):
        return tuple(sort_key(part) for part in value)
    if value is None:
        return ("", "")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ("0", value)
    return (type(value).__name__, str(value))


def ordered(entries: Mapping[Any, Any], order: Callable[[Item], Any], limit: int | None = None) -> list[Item]:
    """The entries sorted by ``order``; of a large store only the first ``limit`` (a heap
    keeps that cheap). Entry keys that ``order`` cannot compare fall back to their text."""
    items: Iterable[Item] = entries.items()
    pick = sorted if limit is None or len(entries) <= 4 * limit else lambda xs, key: heapq.nsmallest(limit, xs, key=key)
    try:
        result = pick(items, key=order)
    except TypeError:  # entry keys of different shapes
        result = pick(entries.items(), key=lambda item: repr(item[0]))
    return result if limit is None else result[:limit]
