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
    """The kind of join: ``stream-stream``, ``stream-table``, ``table-table``, ``fk`` (a KTable-KTable foreign-key
    join) or ``stream-globaltable``."""
    variant: Variant
    """``inner``, ``left`` or ``outer``, as the join kind has them (:data:`~kjoin.scenario.fields.VARIANTS`)."""
    events: tuple[Event | Deliver, ...]
    """The input records (``{side, key, value, ts}``, optionally ``partition`` and ``offset``; key and value may be
    null), in processing order; with explicit delivery also ``{deliver: next | all | subscription | response | m3}``."""
    semantics: Semantics = field(default_factory=lambda: parse_semantics(None))
    """The Kafka version whose semantics run, as text (``"3.1"``, ``"0.10.0"``), optionally with rules switched:
    ``"3.0+spurious_result_fix"``; default: the latest Kafka kjoin models."""
    window: JoinWindows | None = None
    """A stream-stream join's window: ``{before_ms, after_ms, grace_ms}``; ``grace_ms: null`` is the deprecated
    ``JoinWindows.of`` API."""
    partitions: int = 1
    """The partitions of each input topic: one Kafka task per partition, each with its own stream time."""
    left: TableOptions = TableOptions()
    """The left table's options: ``{versioned: true, history_retention_ms: 100}`` makes it a versioned table."""
    right: TableOptions = TableOptions()
    """The right table's options, as ``left``."""
    name: str | None = None
    """A name for the scenario, shown in its trace."""
    foreign_key: str | None = None
    """A foreign-key join's field path into the left value (``fk``, or ``a.b`` for a nested field)."""
    grace_ms: int | None = None
    """A stream-table join over a versioned table: the grace period of its stream-side buffer (KIP-923)."""
    delivery: Delivery = Delivery()
    """When a foreign-key join's messages between tasks are delivered: ``immediate`` (default), ``explicit`` (by
    ``deliver`` events) or ``{mode: random, seed: 7, wait_for_row: true}``."""
    hash_check: bool = True
    """A foreign-key join's check of each response against the left row's hash; ``false`` is a teaching switch that
    lets stale responses through."""
    versioned_mode: VersionedMode = "final"
    """A table-table join over two versioned tables: ``final`` (KIP-914 as shipped), or ``attempt1`` / ``attempt2``,
    the designs seed 003 rejected."""
    self_join: bool = False
    """A stream-stream join of a stream with itself (``s.join(s)``): every event is a left record."""
    optimize: bool = False
    """A self-join with Kafka's single-store rewrite (inner joins, Kafka 3.4+)."""
    then: tuple[ChainedJoin, ...] = ()
    """Chained joins: ``[{variant: left}]`` joins the result with the right input again (``a.join(b).leftJoin(b)``)."""
    materialized: bool = False
    """A table-table or foreign-key join whose result is a store (``Materialized.as``)."""
    send_old_values: bool = False
    """A table-table join whose outputs carry the old value of each change."""
    caching: tuple[str, ...] = ()
    """The record caches: ``true``, or a list of ``left``/``right`` (source tables) and ``result`` (a materialized
    result)."""
    commit_every: int = 1
    """With caching, a task commits (and flushes its caches) after every N of its records."""
    one_instance: bool = False
    """Every task runs in one ``KafkaStreams`` instance (as the broker harness runs several partitions), where
    Kafka shares state between tasks (``Semantics.outer_join_time_per_task``); ``False``: each task in an instance of
    its own, as TopologyTestDriver runs it. The events' listed order is then the instance's order across tasks."""
    arrival: Arrival | None = None
    """A lagging side (:class:`~kjoin.scenario.fields.Arrival`), ``{right: {lag_ms: 5000}}``: the processing order is
    computed from the listed partitions; ``None``: the events run in their listed order."""

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
        """A one-key scenario from the wiki's notation, processed in timestamp order:

        ::

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

    @property
    def tasks_share_time(self) -> bool:
        """Whether one task's outputs depend on another task's records: a left/outer stream-stream join holding
        unmatched records (3.1+, a window with a grace) whose tasks share an instance's time tracker (``one_instance``
        before KAFKA-14862, ``Semantics.outer_join_time_per_task``). Then the order across tasks (the events' listed
        order) decides the results, and a scenario runs whole, not task by task."""
        semantics = self.semantics
        if not (self.one_instance and self.join == "stream-stream" and self.window is not None):
            return False
        if not semantics.spurious_result_fix or semantics.outer_join_time_per_task or self.optimize:
            return False
        variants = [(self.variant, self.window), *((c.variant, c.window or self.window) for c in self.then)]
        return any(variant != "inner" and not window.deprecated_api for variant, window in variants)

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
