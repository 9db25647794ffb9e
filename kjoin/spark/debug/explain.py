"""Every result with its reason, for all results at once (:attr:`kjoin.spark.SparkRun.explained_outputs`).

A result with both sides is ``matched``; a tombstone ``tombstone``; a null-key record forwarded with null
(KIP-962) ``null-key``. A result with a null partner, and a table lookup that may have found a stale value, get
the verdict :meth:`kjoin.spark.SparkRun.why` would give them, computed in one Spark join of the results with the
other side's records of their key, in every partition. The stages:

1. :func:`_subjects`: the record each result is about (a null result's is the record whose value it carries, a
   lookup's the record that looked up) and where it stands in its task's processing order;
2. :func:`_partner_counts`: per result, the other side's records of the key, in its partition (before, after,
   inside the window) and elsewhere (the latest one at the subject's time, the first one);
3. :func:`_verdict`: the reason, by the rules of the join's kind (windowed or table);
4. :func:`_causes`: the record behind the reason (:data:`kjoin.spark.frames.CAUSE_COLUMNS`): the misrouted one,
   or the null-key record that names the key (:func:`_with_null_key_candidates`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from ..frames import CAUSE_COLUMNS, CAUSE_TYPES, OUTPUT_COLUMNS
from ..ties import PROCESSING_ORDER
from .audit import expected_partition_column

if TYPE_CHECKING:
    from ..result import SparkRun

__all__ = ["explain_outputs", "KEY_TOKENS"]

KEY_TOKENS = r"[^A-Za-z0-9_\-]+"
"""What separates the words of a null-key record's value, one of which may be the key it lost."""


def explain_outputs(run: "SparkRun") -> Any:
    """Every output with its ``reason`` (see :attr:`SparkRun.explained_outputs`). A foreign-key
    scenario's results carry theirs from the group that ran it (:mod:`kjoin.spark.passes.fk_task`)."""
    fk_ids = sorted(i for i, s in run.scenarios.items() if s.join == "fk")
    pk_ids = sorted(i for i in run.scenarios if i not in fk_ids)
    if fk_ids:
        results = run.results
        fk_part = results.filter((results.row == "output") & results.scenario.isin(fk_ids)).select(
            *OUTPUT_COLUMNS, "reason", *_no_cause()
        )
        if not pk_ids:
            return fk_part
        return _explain_primary_key_outputs(
            run, run.outputs.filter(F.col("scenario").isin(pk_ids)), pk_ids
        ).unionByName(fk_part)
    return _explain_primary_key_outputs(run, run.outputs, pk_ids)


def _no_cause() -> list[Any]:
    return [F.lit(None).cast(t).alias(c) for c, t in zip(CAUSE_COLUMNS, CAUSE_TYPES)]


def _explain_primary_key_outputs(run: "SparkRun", outputs: Any, ids: list[int]) -> Any:
    """Every result's reason, looking at every partition of the other side first (see
    :attr:`SparkRun.explained_outputs`): one join of the results with the other side's records of their key."""
    config = run.scenarios[min(ids)] if ids else None
    window = None if config is None else config.window
    partitions = 1 if config is None else config.partitions
    kind = F.col("kind")
    null_partner = kind.isin("unmatched", "window-closed")
    looked_up = kind == "joined" if window is None else F.lit(False)  # a lookup that may have found a stale value
    plain = (
        outputs.filter(~null_partner & ~looked_up)
        .withColumn(
            "reason",
            F.when(kind == "tombstone", "tombstone").when(kind == "null-key", "null-key").otherwise("matched"),
        )
        .select(*OUTPUT_COLUMNS, "reason", *_no_cause())
    )
    records = run.records.select(
        "scenario",
        "partition",
        "side",
        "key",
        "ts",
        "offset",
        "value",
        F.struct(*PROCESSING_ORDER).alias("_order"),
    )
    base = _subjects(outputs.filter(null_partner | looked_up), records)
    verdicts = _partner_counts(base, records, window)
    rows = base.join(verdicts, "_id", "left")
    rows = _with_null_key_candidates(rows, run.records, run._json_keys)
    verdict, culprit = _verdict(config, window)
    rows = rows.withColumn("reason", verdict).withColumn("_culprit", culprit)
    expected = expected_partition_column(F.col("key"), partitions, run._json_keys, run.partitioner)
    explained = rows.select(
        *OUTPUT_COLUMNS,
        "reason",
        *(c.cast(t).alias(n) for c, n, t in zip(_causes(expected), CAUSE_COLUMNS, CAUSE_TYPES)),
    )
    return plain.unionByName(explained)


def _subjects(analysed: Any, records: Any) -> Any:
    """The analysed results, each with an ``_id`` and its subject: ``_subject`` (the side), ``_at`` (its place in
    processing order), ``_subject_offset`` and ``_sts`` (its timestamp). A null result's subject is the record whose
    value it carries, a lookup's the record that looked up (the one processed)."""
    kind = F.col("kind")
    analysed = analysed.withColumn("_id", F.monotonically_increasing_id())
    analysed = analysed.withColumn(
        "_subject",
        F.when(kind == "joined", F.col("side")).when(F.col("right").isNull(), F.lit("left")).otherwise(F.lit("right")),
    )
    subject = records.select(
        F.col("scenario").alias("s_scenario"),
        F.col("partition").alias("s_partition"),
        F.col("side").alias("s_side"),
        F.col("key").alias("s_key"),
        F.col("ts").alias("s_ts"),
        F.col("offset").alias("s_offset"),
        F.col("_order").alias("s_order"),
    )
    nulls = analysed.filter(kind != "joined")
    by_value = (
        nulls.join(
            subject,
            (nulls.scenario == subject.s_scenario)
            & (nulls.partition == subject.s_partition)
            & (nulls._subject == subject.s_side)
            & (nulls.key == subject.s_key)
            & (nulls.ts == subject.s_ts),
            "left",
        )
        .groupBy("_id")
        .agg(
            F.min("s_order").alias("_at"),
            F.min_by("s_offset", "s_order").alias("_subject_offset"),
            F.first("ts").alias("_sts"),
        )
    )
    lookups = analysed.filter(kind == "joined")
    by_lookup = lookups.join(
        subject,
        (lookups.scenario == subject.s_scenario)
        & (lookups.partition == subject.s_partition)
        & (lookups.side == subject.s_side)
        & (lookups["offset"] == subject.s_offset),
        "left",
    ).select(
        "_id", F.col("s_order").alias("_at"), F.col("offset").alias("_subject_offset"), F.col("s_ts").alias("_sts")
    )
    return analysed.join(by_value.unionByName(by_lookup), "_id", "left")


def _partner_counts(base: Any, records: Any, window: Any) -> Any:
    """Per result (``_id``), the other side's records of its key: how many in its partition (``_same``) and
    elsewhere (``_elsewhere``), the last one before the subject (deleted? its ts), the first one after it, the
    latest one elsewhere at the subject's time (``_missed``) and the first one elsewhere; for a windowed join,
    those inside the subject's window (``_inside``, ``_inside_elsewhere``)."""
    partners = records.select(
        F.col("scenario").alias("p_scenario"),
        F.col("partition").alias("p_partition"),
        F.col("side").alias("p_side"),
        F.col("key").alias("p_key"),
        F.col("ts").alias("p_ts"),
        F.col("offset").alias("p_offset"),
        F.col("value").alias("p_value"),
        F.col("_order").alias("p_order"),
    )
    joined = base.join(
        partners,
        (base.scenario == partners.p_scenario) & (base.key == partners.p_key) & (base._subject != partners.p_side),
        "left",
    )
    same = F.col("p_partition") == F.col("partition")
    elsewhere = F.col("p_partition").isNotNull() & ~same
    before = same & (F.col("p_order") < F.col("_at"))
    after = same & (F.col("p_order") > F.col("_at"))
    partner = F.struct(
        F.col("p_partition").alias("partition"),
        F.col("p_offset").alias("offset"),
        F.col("p_ts").alias("ts"),
        F.col("p_value").isNull().alias("deleted"),
    )
    by_time = F.struct("p_ts", "p_offset")
    aggregates = [
        F.sum(F.when(same, 1).otherwise(0)).alias("_same"),
        F.sum(F.when(elsewhere, 1).otherwise(0)).alias("_elsewhere"),
        F.max_by(F.col("p_value").isNull(), F.when(before, F.col("p_order"))).alias("_last_before_deleted"),
        F.max_by(F.col("p_ts"), F.when(before, F.col("p_order"))).alias("_last_before_ts"),
        F.min_by(F.col("p_ts"), F.when(after & F.col("p_value").isNotNull(), F.col("p_order"))).alias(
            "_first_after_ts"
        ),
        # The other side's latest record of the key in another partition at the subject's time: what the task
        # would have seen last had every record of the key been in one partition.
        F.max_by(partner, F.when(elsewhere & (F.col("p_ts") <= F.col("_sts")), by_time)).alias("_missed"),
        F.min_by(partner, F.when(elsewhere, by_time)).alias("_first_elsewhere"),
    ]
    if window is not None:
        left_subject = F.col("_subject") == "left"
        lo = F.col("_sts") - F.when(left_subject, window.before_ms).otherwise(window.after_ms)
        hi = F.col("_sts") + F.when(left_subject, window.after_ms).otherwise(window.before_ms)
        inside = (F.col("p_ts") >= lo) & (F.col("p_ts") <= hi) & F.col("p_value").isNotNull()
        aggregates += [
            F.sum(F.when(same & inside, 1).otherwise(0)).alias("_inside"),
            F.min_by(partner, F.when(elsewhere & inside, by_time)).alias("_inside_elsewhere"),
        ]
    return joined.groupBy("_id").agg(*aggregates)


def _verdict(config: Any, window: Any) -> tuple[Any, Any]:
    """The ``reason`` column and the ``_culprit`` column (the partner found elsewhere that the reason names)."""
    kind = F.col("kind")
    none_here = F.col("_same") == 0
    missed = F.col("_missed")
    newer_elsewhere = missed.isNotNull() & (
        F.col("_last_before_ts").isNull() | (missed["ts"] > F.col("_last_before_ts"))
    )
    nowhere = none_here & (F.col("_elsewhere") == 0)
    if window is not None:
        assert config is not None
        eager = (
            not config.semantics.spurious_result_fix or window.grace_ms is None or window.spurious_result_fix is False
        )
        verdict = (
            F.when(F.col("_inside_elsewhere").isNotNull(), "partner-other-partition")
            .when(nowhere & F.col("_null_key").isNotNull(), "partner-null-key")
            .when(nowhere, "partner-never")
            .when(F.col("_inside") == 0, "partner-outside-window")
            .otherwise("partner-later" if eager else "partner-expired")
        )
        culprit = F.when(F.col("_inside_elsewhere").isNotNull(), F.col("_inside_elsewhere"))
        return verdict, culprit
    verdict = (
        F.when((kind == "joined") & newer_elsewhere & missed["deleted"], "joined-deleted")
        .when((kind == "joined") & newer_elsewhere, "joined-stale")
        .when(kind == "joined", "matched")
        .when(newer_elsewhere & ~missed["deleted"], "partner-other-partition")
        .when(newer_elsewhere, "partner-deleted")
        .when(none_here & (F.col("_elsewhere") > 0), "partner-other-partition")
        .when(nowhere & F.col("_null_key").isNotNull(), "partner-null-key")
        .when(nowhere, "partner-never")
        .when(F.col("_last_before_deleted") == F.lit(True), "partner-deleted")
        .when(F.col("_first_after_ts") >= F.col("_sts"), "partner-later")
        .when(F.col("_first_after_ts").isNotNull(), "partner-processed-later")
        .otherwise("unexplained")
    )
    culprit = F.when(newer_elsewhere, missed).when(none_here & (F.col("_elsewhere") > 0), F.col("_first_elsewhere"))
    return verdict, culprit


def _causes(expected: Any) -> list[Any]:
    """The cause columns (side, partition, offset). The misrouted record: the partner found elsewhere if it is not
    in its key's partition (``expected``), else the subject; for ``partner-null-key``, the null-key record."""
    partner_misrouted = F.col("_culprit.partition") != expected
    subject_misrouted = F.col("partition") != expected
    names_partner = F.col("_culprit").isNotNull() & (partner_misrouted | ~subject_misrouted)
    names_subject = F.col("_culprit").isNotNull() & ~names_partner
    other_side = F.when(F.col("_subject") == "left", F.lit("right")).otherwise(F.lit("left"))
    null_key = F.col("reason") == "partner-null-key"
    return [
        F.when(null_key, other_side).when(names_partner, other_side).when(names_subject, F.col("_subject")),
        F.when(null_key, F.col("_null_key.partition"))
        .when(names_partner, F.col("_culprit.partition"))
        .when(names_subject, F.col("partition")),
        F.when(null_key, F.col("_null_key.offset"))
        .when(names_partner, F.col("_culprit.offset"))
        .when(names_subject, F.col("_subject_offset")),
    ]


def _with_null_key_candidates(rows: Any, records: Any, json_keys: bool) -> Any:
    """``_null_key``: the first null-key record of the other side whose value names the result's key as a word
    (``partition``, ``offset``), for ``partner-null-key``."""
    words = records.filter(F.col("key").isNull() & F.col("value").isNotNull()).select(
        F.col("scenario").alias("n_scenario"),
        F.col("side").alias("n_side"),
        F.explode(F.split(F.col("value").cast("string"), KEY_TOKENS)).alias("n_word"),
        F.struct(F.col("partition").alias("partition"), F.col("offset").alias("offset")).alias("n_where"),
    )
    firsts = (
        words.filter(F.col("n_word") != "")
        .groupBy("n_scenario", "n_side", "n_word")
        .agg(F.min("n_where").alias("_null_key"))
    )
    key_text = F.col("key").cast("string")
    if json_keys:  # a scenario run's keys are JSON text: a string key "\"C1\"" is the word C1
        key_text = F.regexp_replace(key_text, '^"|"$', "")
    other_side = F.when(F.col("_subject") == "left", F.lit("right")).otherwise(F.lit("left"))
    return rows.join(
        firsts,
        (rows.scenario == firsts.n_scenario) & (other_side == firsts.n_side) & (key_text == firsts.n_word),
        "left",
    ).drop("n_scenario", "n_side", "n_word")
