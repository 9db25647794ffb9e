"""``run_topology(...).reconcile(actual, topic=...)``: what the application really wrote to one of its output
topics, matched with what kjoin's run of the whole app wrote there.

As for a join run (:mod:`kjoin.spark.debug.reconcile`), every real record is matched with one of kjoin's by ``(key,
value, ts)`` and what is left over on either side is a difference, put down to the first of:

``configuration`` / ``version`` / ``configuration+version``
    the same topics run through the topology with ``set=`` (node settings, ``{"per_hour.grace_ms": 0}``) and under
    ``semantics=`` write it as the application did; :meth:`TopologyRun.diff` (:mod:`kjoin.spark.debug.app_diff`)
    charges each such record to the settings and rules that make it;
``unexplained``
    none of these.

A lagging input partition is not a what-if of a whole app's run on Spark: where a lag is suspected, the text says to
read the topic the join reads (a repartition topic: ``run.topics``) and reconcile the join alone, which takes
``arrival=`` and names the larger lags to try when one explains only part (:func:`reconcile`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from pyspark.sql import functions as F

from ..io.topic import SparkInputError
from .app_diff import app_diff
from .reconcile import CATEGORIES, Reconciliation, Tally, _actual_frame, _category, _counted

if TYPE_CHECKING:  # pragma: no cover
    from ..topology_run import TopologyRun

__all__ = ["app_reconcile"]

_MATCH = ["key", "value", "ts"]

NO_LAG = (
    "A lag is not a what-if of a whole app's run: if a lagging partition may explain the rest, read the topic a join "
    "reads (run.topics, its repartition topic) and reconcile that join alone: run_join(...).reconcile(actual, "
    "arrival=...), which names larger lags to try when one explains only part."
)


def app_reconcile(
    run: "TopologyRun",
    actual: Any,
    topic: str | None = None,
    semantics: Any = None,
    settings: Mapping[str, Any] | None = None,
    examples: int = 3,
) -> Reconciliation:
    """:meth:`kjoin.spark.topology_run.TopologyRun.reconcile` (see the module)."""
    frame = _actual_frame(actual)
    topic = _topic(run, frame, topic)
    if "topic" in frame.columns:
        frame = frame.where(F.col("topic") == topic)
    predicted = run.outputs.where(F.col("topic") == topic)
    sources = [("actual", _counted(frame, "actual")), ("predicted", _counted(predicted, "predicted"))]
    if semantics is not None or settings:
        sources.append(("_diff", _diff_deltas(run, topic, semantics, dict(settings or {}))))
    names = [name for name, _ in sources]
    no_switches = F.array().cast("array<string>")
    counted = None
    for name, source in sources:
        switches = F.col("_switches") if name == "_diff" else no_switches.alias("_switches")
        part = source.select(*_MATCH, *(F.col(n) if n == name else F.lit(0).alias(n) for n in names), switches)
        counted = part if counted is None else counted.unionByName(part)
    both = counted.groupBy(*_MATCH).agg(  # type: ignore[union-attr]
        *(F.sum(n).cast("long").alias(n) for n in names),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("_switches")))).alias("_switches"),
    )
    differing = both.filter(F.col("actual") != F.col("predicted")).withColumn("_seen", F.lit(True))
    category = _category(["diff"] * ("_diff" in names), dict(settings or {}))
    tally = Tally.of(both, differing, category, no_switches, examples)
    assert set(tally.counts) <= set(CATEGORIES)
    return tally.reconciliation(suggestion=NO_LAG if tally.counts.get("unexplained") else "")


def _topic(run: "TopologyRun", frame: Any, topic: str | None) -> str:
    if topic is None:
        if len(run.output_topics) != 1:
            raise SparkInputError(
                f"reconcile: name the output topic the application's records are of: topic=... (one of "
                f"{', '.join(run.output_topics)})"
            )
        return run.output_topics[0]
    if topic not in run.output_topics:
        raise SparkInputError(
            f"reconcile: topic={topic!r} is not an output topic of the topology; they are "
            f"{', '.join(run.output_topics)}"
        )
    return topic


def _diff_deltas(run: "TopologyRun", topic: str, semantics: Any, settings: Mapping[str, Any]) -> Any:
    """Per ``(key, value, ts)`` of ``topic``, +1 for a record the app's diff adds, -1 for one it removes, with the
    switches charged (``_diff``, ``_switches``)."""
    found = app_diff(run, semantics, settings)
    rows = []
    for d in found:
        record, sign = (d.after, 1) if d.change == "added" else (d.before, -1)
        if record["topic"] == topic:
            rows.append((record["key"], record["value"], int(record["ts"]), sign, list(d.rules)))
    schema = "key string, value string, ts long, _diff long, _switches array<string>"
    return run.outputs.sparkSession.createDataFrame(rows, schema)
