"""The run's summary: per scenario, partition and key, how many results had each reason and how many records
of each side produced no result of their own, and why (:meth:`kjoin.spark.SparkRun.summary`).

Only the columns that can be non-zero for the join at hand: the reasons a result can have
(:func:`result_reasons`: matched, tombstones, KIP-962's null-key results, the verdicts of
:mod:`kjoin.spark.debug.explain`) and the reasons the join's processors can give a record
(:func:`step_columns`, from :class:`kjoin.fates.Reason`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from ...fates import Reason
from ...joins import StreamStreamJoin, StreamTableJoin, TableTableJoin
from ...joins.versioned import VersionedStreamTableJoin, VersionedTableTableJoin
from ...scenario import Scenario
from .kinds import kind_of
from .table import TABLE_NULL_VERDICTS
from .windowed import WINDOWED_NULL_VERDICTS

if TYPE_CHECKING:
    from ..result import SparkRun

__all__ = ["summary_frame", "result_reasons", "step_columns"]


def summary_frame(run: "SparkRun") -> Any:
    """:meth:`kjoin.spark.SparkRun.summary`: per scenario, partition and key, the results per reason and the
    records per side and reason (only the columns the join at hand can fill)."""
    config = run.scenarios[min(run.scenarios)] if run.scenarios else None
    explained = run.explained_outputs.select(
        F.lit("output").alias("row"), "scenario", "partition", "side", "key", "kind", "reason"
    )
    steps = run.steps.select(
        F.lit("step").alias("row"),
        "scenario",
        "partition",
        "side",
        "key",
        F.lit(None).cast("string").alias("kind"),
        "reason",
    )
    audit = run.partitioning_audit() if config is not None and kind_of(config).audited else None
    if audit is not None:
        misrouted = audit.filter(F.col("problem") == "misrouted").select(
            F.lit("misrouted").alias("row"),
            "scenario",
            "partition",
            "side",
            "key",
            F.lit(None).cast("string").alias("kind"),
            F.lit(None).cast("string").alias("reason"),
        )
        steps = steps.union(misrouted)
    reason, side = F.col("reason"), F.col("side")
    output = F.col("row") == "output"
    step = F.col("row") == "step"

    def count(condition: Any, name: str) -> Any:
        return F.sum(F.when(condition, 1).otherwise(0)).cast("bigint").alias(name)

    counts = [
        count(output & F.col("kind").isin("unmatched", "window-closed", "null-key"), "null-results"),
    ]
    counts += [
        count(output & (reason == name), "tombstones" if name == "tombstone" else name)
        for name in result_reasons(config)
    ]
    counts += [
        count(step & (reason == name), name)
        if which is None
        else count(step & (side == which) & (reason == name), f"{which}-{name}")
        for which, name in step_columns(config)
    ]
    if audit is not None:
        counts.append(count(F.col("row") == "misrouted", "misrouted"))
    return explained.union(steps).groupBy("scenario", "partition", "key").agg(*counts)


_SUMMARISED = ("stream-stream", "stream-table", "table-table", "fk")
"""The joins whose reasons the summary narrows to what their processors declare (others: every reason)."""


def _processor(config: Scenario) -> type:
    """The processor class :func:`kjoin.engine.new_join` builds for a plain primary-key join: its ``REASONS`` are the
    reasons a record of the join can get."""
    if config.join == "stream-stream":
        return StreamStreamJoin
    if config.join == "stream-table":
        return VersionedStreamTableJoin if config.right.versioned else StreamTableJoin
    return VersionedTableTableJoin if config.left.versioned or config.right.versioned else TableTableJoin


def _null_verdicts(config: Scenario | None) -> tuple[str, ...]:
    """The verdicts a null-partner result can have: none for an inner join."""
    if config is None or config.variant == "inner":
        return ()
    return kind_of(config).null_verdicts(config)


def result_reasons(config: Scenario | None) -> list[str]:
    """The reasons :attr:`SparkRun.explained_outputs` can give a result of the join at hand."""
    if config is None:
        return ["matched", "tombstone", "null-key", *TABLE_NULL_VERDICTS, *WINDOWED_NULL_VERDICTS]
    kind = kind_of(config)
    reasons = ["matched", "tombstone"]
    if kind.forwards_null_keys and config.variant != "inner" and config.semantics.relaxed_null_keys:
        reasons.append("null-key")
    reasons += kind.lookup_verdicts
    return reasons + [v for v in _null_verdicts(config) if v not in reasons]


_STREAM_ONLY = {"no-partner", "window-open", "not-a-trigger", "grace-period", "null-key-in-grace-buffer", "expired"}
_TABLE_ONLY = {"table-update", "out-of-order-version", "idempotent-update"}


def step_columns(config: Scenario | None) -> list[tuple[str | None, str]]:
    """``(side, reason)`` of the summary's record columns: a stream-table join's table side never waits for a
    partner, its stream side never updates a table. A foreign-key join's steps are input records and message
    deliveries, counted per reason (side ``None``: the column is the reason)."""
    if config is not None and config.join == "fk":
        return [(None, name) for name in _step_reasons(config)]
    pairs: list[tuple[str | None, str]] = []
    for name in _step_reasons(config):
        for which in ("left", "right"):
            if config is not None and config.join == "stream-table":
                if (which == "right" and name in _STREAM_ONLY) or (which == "left" and name in _TABLE_ONLY):
                    continue
            pairs.append((which, name))
    return pairs


def _step_reasons(config: Scenario | None) -> list[str]:
    """The reasons the join's processors can give a record that did not join (in Reason's order)."""
    if config is None or config.join not in _SUMMARISED or config.then or getattr(config, "caching", ()):
        return [member.value for member in Reason]
    if config.join == "fk":
        return [member.value for member in Reason if member in _fk_step_reasons(config)]
    possible = set(_processor(config).REASONS)
    if config.semantics.drops_idempotent_table_updates:  # KIP-557: 2.6.0 to 2.7.0
        possible.add(Reason.IDEMPOTENT_UPDATE)
    return [member.value for member in Reason if member in possible]


def _fk_step_reasons(config: Scenario) -> set[Reason]:
    """The reasons a foreign-key join's steps (input records and message deliveries) can have."""
    possible = {
        Reason.NULL_KEY,
        Reason.SUBSCRIPTION_SENT,
        Reason.NOTHING_TO_DELETE,
        Reason.NO_PROPAGATE,
        Reason.RESPONSE_SENT,
        Reason.NO_SUBSCRIBER,
    }
    semantics = config.semantics
    if not (config.variant == "left" and semantics.relaxed_null_keys):  # KIP-962 subscribes a null foreign key
        possible.add(Reason.NULL_FOREIGN_KEY)
    if config.variant == "inner" and semantics.fk_inner_follows_null_foreign_keys:
        possible.add(Reason.NULL_FOREIGN_KEY_UNSUBSCRIBED)
    if config.hash_check and config.delivery.mode != "immediate":  # a row can change while its messages travel
        possible.add(Reason.STALE_RESPONSE)
    if config.left.versioned or config.right.versioned:
        possible |= {Reason.EXPIRED_PUT, Reason.OUT_OF_ORDER_VERSION}
    if semantics.drops_idempotent_table_updates:  # KIP-557: 2.6.0 to 2.7.0
        possible.add(Reason.IDEMPOTENT_UPDATE)
    return possible
