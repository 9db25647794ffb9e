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

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Mapping

from ..joins import JoinWindows
from ..records import Side
from ..scenario import ChainedJoin, Scenario, ScenarioError, TableOptions
from ..scenario.builders import records_document
from ..semantics import Semantics

__all__ = ["JoinSpec", "Variant", "join_scenario", "specs_of"]


class Variant(StrEnum):
    """A join's variant. A member equals its text (``Variant.LEFT == "left"``), so a spec reads as a scenario."""

    INNER = "inner"
    """Only matches come out."""
    LEFT = "left"
    """A left record without a partner comes out with a null right value."""
    OUTER = "outer"
    """A record of either side without a partner comes out with a null partner."""

    def outer(self, side: str | Side) -> bool:
        """Does a record of ``side`` without a partner come out (with a null partner)?"""
        return self is Variant.OUTER or (self is Variant.LEFT and Side(side) is Side.LEFT)


@dataclass(frozen=True)
class JoinSpec:
    """One primary-key or foreign-key join as the Spark passes run it (no events)."""

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

    @classmethod
    def of(cls, scenario: "Scenario | JoinSpec") -> "JoinSpec":
        """The join of ``scenario`` (a spec is returned as it is)."""
        if isinstance(scenario, JoinSpec):
            return scenario
        return cls(
            join=scenario.join,
            variant=Variant(scenario.variant),
            semantics=scenario.semantics,
            window=scenario.window,
            partitions=scenario.partitions,
            left=scenario.left,
            right=scenario.right,
            grace_ms=scenario.grace_ms,
            versioned_mode=scenario.versioned_mode,
            self_join=scenario.self_join,
            optimize=scenario.optimize,
            then=scenario.then,
            materialized=scenario.materialized,
            send_old_values=scenario.send_old_values,
            caching=scenario.caching,
            commit_every=scenario.commit_every,
        )

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

    def scenario(self) -> Scenario:
        """The events-less scenario of this join: what the reference engine builds its processors from."""
        return Scenario(
            join=self.join,  # type: ignore[arg-type]
            variant=self.variant.value,  # type: ignore[arg-type]
            events=(),
            semantics=self.semantics,
            window=self.window,
            partitions=self.partitions,
            left=self.left,
            right=self.right,
            grace_ms=self.grace_ms,
            versioned_mode=self.versioned_mode,  # type: ignore[arg-type]
            self_join=self.self_join,
            optimize=self.optimize,
            then=self.then,
            materialized=self.materialized,
            send_old_values=self.send_old_values,
            caching=self.caching,
            commit_every=self.commit_every,
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
