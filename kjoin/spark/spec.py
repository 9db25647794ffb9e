"""The join a Spark run computes, as one typed, frozen value: :class:`JoinSpec`.

A :class:`~kjoin.scenario.Scenario` is a join *and* its events, plus what only the reference engine
needs (foreign-key delivery, arrival lags, a name). The Spark passes need the join alone: which join,
which :class:`Variant`, which semantics, the window, the tables, grace and the versioned mode, and the
topology options they refuse. :func:`kjoin.spark.run_join` builds one from its arguments (one scenario
document, parsed and checked once by :mod:`kjoin.scenario`), :func:`kjoin.spark.run_scenarios` one per
scenario (:meth:`JoinSpec.of`); the dispatcher (:mod:`kjoin.spark.passes.plans`) and every pass take
specs, never scenarios. The reference engine keeps its own interface: :meth:`JoinSpec.scenario` is the
events-less scenario its processors are built from.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Any, Iterable, Mapping

from ..join_model import JoinWindows, TableOptions, Variant
from ..scenario import ChainedJoin, Scenario, ScenarioError
from ..scenario.builders import records_document
from ..semantics import Semantics

__all__ = ["JoinSpec", "Variant", "SCENARIO_FIELDS", "join_scenario", "specs_of", "refuse_unknown_fields"]


@dataclass(frozen=True)
class JoinSpec:
    """One primary-key or foreign-key join as the Spark passes run it (no events).

    Its fields are the scenario's fields of the same names (:meth:`of` reads them by name): a field a pass does not
    handle is refused by that pass (:meth:`set_fields`, each pass's ``FIELDS``), and a scenario field Spark does not
    know at all is refused before any pass (:data:`SCENARIO_FIELDS`)."""

    join: str
    """``stream-stream``, ``stream-table``, ``table-table`` or ``fk``."""
    variant: Variant
    semantics: Semantics
    window: JoinWindows | None = None
    """The stream-stream window; ``None`` for the table joins."""
    partitions: int = 1
    left: TableOptions = TableOptions()
    right: TableOptions = TableOptions()
    """Each side's table options (versioned, history retention)."""
    grace_ms: int | None = None
    """The stream-table join's grace period (KIP-923); ``None``: none."""
    versioned_mode: str = "final"
    # The topology around the join: the array passes and the native plan refuse all but a plain join.
    self_join: bool = False
    optimize: bool = False
    then: tuple[ChainedJoin, ...] = ()
    materialized: bool = False
    send_old_values: bool = False
    caching: tuple[str, ...] = ()
    commit_every: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "variant", Variant(self.variant))  # a scenario's text, as its member

    @classmethod
    def of(cls, scenario: "Scenario | JoinSpec") -> "JoinSpec":
        """The join of ``scenario`` (a spec is returned as it is): its fields of this class's names. A scenario field
        that Spark does not know (:data:`SCENARIO_FIELDS`) and that is not at its default is refused with a
        :class:`ScenarioError` naming it."""
        if isinstance(scenario, JoinSpec):
            return scenario
        refuse_unknown_fields(scenario)
        return cls(**{name: getattr(scenario, name) for name in SPEC_FIELDS})

    @property
    def versioned(self) -> bool:
        """Is this a primary-key join over at least one versioned table? (A stream-table join's stream side
        has no store, so only its table counts.)"""
        if self.join == "stream-table":
            return self.right.versioned
        return self.join == "table-table" and (self.left.versioned or self.right.versioned)

    @property
    def plain(self) -> bool:
        """A single join, with no chain, self-join, materialized result, old values or caches around it."""
        return not (
            self.then or self.self_join or self.optimize or self.materialized or self.send_old_values or self.caching
        )

    def set_fields(self) -> list[str]:
        """The fields of this spec that are not at their defaults (``join``, ``variant`` and ``semantics``, which
        every spec sets, aside): what a pass must handle to run it."""
        return [
            f.name
            for f in fields(self)
            if f.default is not MISSING and getattr(self, f.name) != f.default  # type: ignore[misc]
        ]

    def unhandled(self, handled: Iterable[str]) -> list[str]:
        """The fields of :meth:`set_fields` not in ``handled`` (a pass's ``FIELDS``)."""
        known = set(handled)
        return [name for name in self.set_fields() if name not in known]

    def scenario(self) -> Scenario:
        """The events-less scenario of this join: what the reference engine builds its processors from."""
        values: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        values["variant"] = self.variant.value
        return Scenario(events=(), **values)


SPEC_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(JoinSpec))
"""The scenario fields a :class:`JoinSpec` carries, by name."""

SCENARIO_FIELDS: Mapping[str, str] = {
    **{name: "the join's specification (a JoinSpec field of the same name)" for name in SPEC_FIELDS},
    "events": "the records frame: run_scenarios writes scenario.records(), in processing order",
    "arrival": "the records frame: scenario.records() is in the arrival's processing order already",
    "name": "a label: it changes nothing in the join",
    "foreign_key": "a foreign-key join's: its scenario runs whole on the reference engine (passes/fk_task)",
    "delivery": "a foreign-key join's: its scenario runs whole on the reference engine (passes/fk_task)",
    "hash_check": "a foreign-key join's: its scenario runs whole on the reference engine (passes/fk_task)",
    "one_instance": "tasks sharing an instance's time tracker (tasks_share_time) run whole, as a foreign-key join's "
    "scenario does (passes/fk_task); otherwise each task runs alone, as without it",
}
"""Every field of :class:`~kjoin.scenario.Scenario` and where the Spark engine handles it. A field missing here is
refused at the door (:func:`refuse_unknown_fields`); ``tests/test_spark_spec.py`` fails when the scenario has a field
this table does not name."""


def refuse_unknown_fields(scenario: Scenario) -> None:
    """Raise a :class:`ScenarioError` naming the first field of ``scenario`` that Spark does not know
    (:data:`SCENARIO_FIELDS`) and that is not at its default: Spark would otherwise ignore it."""
    for f in fields(scenario):
        if f.name in SCENARIO_FIELDS:
            continue
        default = f.default_factory() if f.default_factory is not MISSING else f.default  # type: ignore[misc]
        if default is MISSING or getattr(scenario, f.name) != default:
            raise ScenarioError(
                f"{f.name}: the Spark engine does not handle this scenario field (kjoin.spark.spec.SCENARIO_FIELDS); "
                "run the scenario with kjoin.run, or leave the field out"
            )


def specs_of(configs: Mapping[int, "Scenario | JoinSpec"]) -> dict[int, JoinSpec]:
    """Specs by scenario id, from scenarios or specs (the passes' entry points accept both)."""
    return {scenario_id: JoinSpec.of(config) for scenario_id, config in configs.items()}


def join_scenario(
    join: str,
    variant: str,
    semantics: str | None,
    window: JoinWindows | Mapping[str, Any] | None,
    partitions: int,
    options: Mapping[str, Any] | None,
) -> Scenario:
    """:func:`kjoin.spark.run_join`'s arguments as one scenario document without events, parsed and checked
    once. A :class:`ScenarioError` names its field; one that only ``options`` causes starts with ``options:``."""
    document = records_document(join, variant, [], semantics, window, partitions)
    if not options:
        return Scenario.from_dict(document)
    try:
        return Scenario.from_dict({**document, **options})
    except ScenarioError as error:
        Scenario.from_dict(document)  # the arguments alone: their own error, without the prefix
        raise ScenarioError(f"options: {error}") from None
