"""What an engine needs of a join processor: :class:`Processor`.

Every engine drives one task's join the same way (:func:`kjoin.engine.new_join` builds it, the record loop or a
Spark task calls :meth:`Processor.process` for each record after the source stage), and reads the same declarations
from it: the reasons it may give a record that did not join (``REASONS``), which the Spark summary's columns and the
exporter read instead of keeping lists of their own, and the stores it keeps (:meth:`Processor.state_stores`), each
described by its kind (:class:`kjoin.stores.base.StoreKind`), the same description the state log's ids carry.
"""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable

from ..fates import Reason
from ..records import Record
from ..state import StoreId
from ..stores.base import Store, StoreKind
from .context import StepContext

__all__ = ["Processor", "reasons_of", "store_kinds"]


@runtime_checkable
class Processor(Protocol):
    """One Kafka task's join processor."""

    REASONS: ClassVar[frozenset[Reason]]
    """Every reason :meth:`process` may settle a record with (besides joining it), in any era: the summary shows a
    column per reason, so a new reason is declared here and nowhere else."""

    def process(self, record: Record, ctx: StepContext) -> None:
        """Take one record of the task: update state, look up, call the joiner, and settle the record's fate in
        ``ctx`` (every record is joined, buffered, stored, or dropped with a reason)."""
        ...

    def state_stores(self) -> tuple[Store, ...]:
        """The stores this processor keeps, each once (:func:`kjoin.stores.base.owned`): every store it writes
        through the state log, a store another processor owns (a chain's shared source table) included once."""
        ...


def store_kinds(processor: Processor) -> dict[StoreId, type[StoreKind]]:
    """The stores ``processor`` keeps, by id, with the kind that describes their rows."""
    return {store.store: type(store) for store in processor.state_stores()}


def reasons_of(*processors: type) -> frozenset[Reason]:
    """The reasons any of ``processors`` (classes) may give."""
    found: frozenset[Reason] = frozenset()
    for processor in processors:
        found |= processor.REASONS  # type: ignore[attr-defined]
    return found
