"""The scenario itself: a join, its options and its events, as one frozen object.

A field is declared here once; the parser (:mod:`kjoin.scenario.parsing`) reads it from a
document and writes it back, and the cross-field rules (:mod:`kjoin.scenario.rules`) run on
every scenario however it was built.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Iterable, Mapping

from ..join_model import JoinWindows
from ..records import Record
from ..semantics import Semantics, parse_semantics
from . import builders, parsing
from .fields import (
    Arrival,
    ChainedJoin,
    Deliver,
    Delivery,
    Event,
    JoinKind,
    ScenarioError,
    TableOptions,
    Variant,
    VersionedMode,
)
from .rules import check_scenario

__all__ = ["Scenario", "DOCUMENT_FIELDS"]


@dataclass(frozen=True)
class Scenario:
    """A join to run and the events to run through it, in processing order.

    ``join`` and ``variant`` take the strings of :data:`~kjoin.scenario.JoinKind` and
    :data:`~kjoin.scenario.Variant`; any other value is refused with a :class:`ScenarioError`.
    """

    join: JoinKind
    variant: Variant
    events: tuple[Event | Deliver, ...]
    semantics: Semantics = field(default_factory=lambda: parse_semantics(None))
    window: JoinWindows | None = None
    partitions: int = 1
    left: TableOptions = TableOptions()
    right: TableOptions = TableOptions()
    name: str | None = None
    foreign_key: str | None = None
    grace_ms: int | None = None
    delivery: Delivery = Delivery()
    hash_check: bool = True
    versioned_mode: VersionedMode = "final"
    self_join: bool = False
    optimize: bool = False
    then: tuple[ChainedJoin, ...] = ()
    materialized: bool = False
    send_old_values: bool = False
    caching: tuple[str, ...] = ()
    """The caching stores: ``left``/``right`` (source tables), ``result`` (a materialized result)."""
    commit_every: int = 1
    arrival: Arrival | None = None
    """A lagging side (:class:`~kjoin.scenario.fields.Arrival`): the processing order is computed
    from the listed partitions; ``None``: the events run in their listed order."""

    def __post_init__(self) -> None:
        check_scenario(self)

    # -- building -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> "Scenario":
        """Validate a parsed scenario document (see :mod:`kjoin.scenario`)."""
        try:
            return cls(**parsing.parse_document(data, DOCUMENT_FIELDS))
        except ScenarioError as error:
            raise ScenarioError(str(error), source) from None

    @classmethod
    def from_records(
        cls,
        join: JoinKind,
        variant: Variant,
        records: Iterable[Record | Mapping[str, Any]],
        *,
        semantics: str | Semantics | None = None,
        window: JoinWindows | Mapping[str, Any] | None = None,
        partitions: int = 1,
    ) -> "Scenario":
        """A scenario from records (or dicts with side, key, value, ts[, partition, offset]).

        A :class:`Record` carries its partition and offset; a dict may leave them out, and
        kjoin assigns them as Kafka would (the default partitioner, offsets counting up).
        """
        return cls.from_dict(builders.records_document(join, variant, records, semantics, window, partitions))

    @classmethod
    def from_notation(
        cls,
        join: JoinKind,
        variant: Variant,
        *,
        left: str = "",
        right: str = "",
        key: Any = "k",
        semantics: str | Semantics | None = None,
        window: JoinWindows | Mapping[str, Any] | None = None,
    ) -> "Scenario":
        """A one-key scenario from the wiki's notation, processed in timestamp order::

        Scenario.from_notation("stream-stream", "left", left="1:null, 3:A", right="2:null, 4:a",
                               window={"before_ms": 15, "after_ms": 15, "grace_ms": 5})
        """
        events = builders.notation_events(left, right, key)
        return cls.from_records(join, variant, events, semantics=semantics, window=window)

    @classmethod
    def from_frame(cls, frame: Any, join: JoinKind, variant: Variant, **options: Any) -> "Scenario":
        """A scenario from a pandas DataFrame with columns side, key, value, ts[, partition, offset]."""
        return cls.from_records(join, variant, builders.frame_records(frame), **options)

    def with_variant(self, variant: Variant) -> "Scenario":
        return replace(self, variant=variant)

    def with_semantics(self, semantics: str | Semantics) -> "Scenario":
        return replace(self, semantics=parse_semantics(semantics))

    # -- running ----------------------------------------------------------------------
    def records(self) -> list[Record]:
        """The events as records, with Kafka's default partition and per-partition offsets filled in."""
        return [item for item in self.script() if isinstance(item, Record)]

    def script(self) -> list[Record | Deliver]:
        """The events in processing order: records (as :meth:`records`) and ``deliver``
        instructions. With ``arrival``, the order in which each task takes its records (see
        :func:`kjoin.ordering.arrival_order`)."""
        script = builders.assign_offsets(self.events, self.partitions, self.foreign_key)
        if self.arrival is None:
            return script
        from ..ordering import arrival_order

        return [record for record, _ in arrival_order(script, self.arrival)]

    def key_function(self) -> Any:
        """The function from a key (or a foreign key) to the key kjoin stores: see
        :func:`kjoin.scenario.builders.key_function`."""
        return builders.key_function(self.events, self.foreign_key)

    def arrival_waits(self) -> list[Any]:
        """Per record of :meth:`records`: ``None``, or (with ``arrival``) the
        :class:`~kjoin.ordering.Waiting` records of the other side the task did not have yet
        although their timestamps are earlier."""
        if self.arrival is None:
            return [None] * len(self.records())
        from ..ordering import arrival_order

        return [
            waiting
            for _, waiting in arrival_order(
                builders.assign_offsets(self.events, self.partitions, self.foreign_key), self.arrival
            )
        ]

    def to_dict(self) -> dict[str, Any]:
        """The scenario as a document that :meth:`from_dict` reads back."""
        return parsing.write_document(self)


DOCUMENT_FIELDS = frozenset(f.name for f in fields(Scenario)) | {"description"}
"""The top-level fields of a scenario document: the dataclass's fields, and a free-text description."""
