"""Which Kafka Streams release judges a scenario, and what that release's DSL has.

A judge is a release ``kafka_oracle/`` runs; :attr:`KafkaJudge.semantics` is that release's
:class:`~kjoin.semantics.Semantics`, so what the exported test may use (versioned stores, a stream-table grace,
the optimized self-join, the newer ``JoinWindows`` API, the cache config's name) is read from its rules and features,
never from version numbers here. Every judge, 4.4.0 included, still has the deprecated ``JoinWindows.of`` and
``JoinWindows.grace``: Kafka 4.0 removed the other windows' deprecated builders but kept these two (KAFKA-16332,
apache/kafka#17126), because they are the only way to switch the spurious-result fix off (KAFKA-13813).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..scenario import ScenarioError
from ..semantics import Semantics, parse_semantics

__all__ = ["ExportError", "KafkaJudge", "JUDGES", "WINDOWED_TABLE_JUDGE", "judge_of"]


class ExportError(ScenarioError):
    """A scenario that cannot be exported as a Kafka Streams test: the message says why and what to change."""


@dataclass(frozen=True)
class KafkaJudge:
    """A Kafka Streams version that judges one of kjoin's eras (the versions ``kafka_oracle/`` runs)."""

    version: str
    era: str
    """:attr:`kjoin.Semantics.era`: ``0.10.2`` (KIP-77) or ``3.1`` (the spurious-result fix)."""

    @property
    def semantics(self) -> Semantics:
        """The rules and features of this release."""
        return parse_semantics(self.version)


JUDGES = (
    KafkaJudge("3.0.2", "0.10.2"),
    KafkaJudge("3.3.2", "3.1"),
    KafkaJudge("4.4.0", "3.1"),
)
"""Oldest first. Era 0.10.0 (Kafka 0.10.0 and 0.10.1) has none: TopologyTestDriver arrived in Kafka 1.1."""

WINDOWED_TABLE_JUDGE = JUDGES[-1]
"""The judge of an exported windowed-table design's aggregate or WTable join: the latest. A scenario whose outputs
under its own semantics differ from this judge's (a table aggregate's update within a group before 3.5, KIP-904) is
refused (:func:`kjoin.export.checks.check_aggregate`)."""


def judge_of(semantics: Semantics) -> KafkaJudge:
    """The version that judges ``semantics``: of its era's judges, the oldest at least as new as it, else the newest."""
    if not semantics.is_release:
        raise ExportError(
            f"semantics {semantics} switches rules away from Kafka {semantics.release}: no Kafka release behaves so, "
            f'so no Kafka Streams test can check it; export with semantics "{semantics.release}"'
        )
    era = semantics.era
    judges = [judge for judge in JUDGES if judge.era == era]
    if not judges:
        raise ExportError(
            f"semantics {semantics} (era {era}) cannot be exported: Kafka 0.10.0 and 0.10.1 have no "
            "TopologyTestDriver (it arrived in Kafka 1.1), so no Kafka Streams test can check this era; "
            'export the scenario with semantics "0.10.2" or newer'
        )
    for judge in judges:
        if not judge.semantics < semantics:
            return judge
    return judges[-1]
