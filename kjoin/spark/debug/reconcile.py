"""Reconcile kjoin's prediction with what the application really wrote.

``result.reconcile(actual)`` takes the application's output topic (``from_kafka``/``from_files``, or a DataFrame with
``key, value, ts``) and matches every real output with one of kjoin's (:attr:`SparkRun.outputs`) by ``(key, value,
ts)``: a join writes the same result whenever it processes the same records the same way, whatever the partition or
the moment. What is left over, on either side, is a *difference*, and each is classified:

``arrival``
    the same topics joined with the arrival lag given (``arrival=``, e.g. ``{"right": {"partitions": {1: 5000}}}``,
    found with :meth:`SparkRun.smallest_lag`) write it as the application did: the application's tasks took their
    records in another order than with every partition buffered (``max.task.idle.ms = 0``, a lagging partition);
``configuration``
    joined with other scenario options (``options=``: ``{"grace_ms": 100}``, versioned tables ...) they do;
``version``
    joined under another Kafka version's semantics (``semantics=``) they do;
``unseen-records``
    a real output of a key kjoin's input topics never had: the application read records kjoin was not given (a
    snapshot taken earlier, a topic filtered on the way);
``unexplained``
    none of these: ask ``why`` of the records of its key.

Each what-if given costs one more Spark run; the first that explains a difference names it. A difference is a count
per ``(key, value, ts)``: ``actual`` and ``predicted``, how many times the application and kjoin wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from pyspark.sql import functions as F

from ..io.topic import SparkInputError

if TYPE_CHECKING:
    from ..result import SparkRun

__all__ = ["Reconciliation", "reconcile", "CATEGORIES", "DIFFERENCE_COLUMNS"]

CATEGORIES = ("arrival", "configuration", "version", "unseen-records", "unexplained")
"""What a difference is put down to, in the order they are tried."""

DIFFERENCE_COLUMNS = ["key", "value", "ts", "actual", "predicted", "category"]
"""Columns of :attr:`Reconciliation.differences`."""

_MATCH = ["key", "value", "ts"]


def _counted(frame: Any, name: str) -> Any:
    """``key, value, ts`` with how many times each occurs, as ``name`` (a null value is a tombstone)."""
    texts = frame.select(
        F.col("key").cast("string").alias("key"), F.col("value").cast("string").alias("value"), F.col("ts").cast("long")
    )
    return texts.groupBy(*_MATCH).agg(F.count(F.lit(1)).alias(name))


def _predicted(run: "SparkRun") -> Any:
    outputs = run.outputs
    value = F.when(F.col("tombstone"), F.lit(None)).otherwise(F.col("value"))
    return outputs.select("key", value.alias("value"), "ts")


def _actual_frame(actual: Any) -> Any:
    frame = getattr(actual, "frame", actual)
    if not hasattr(frame, "columns"):
        raise SparkInputError(
            f"reconcile: expected the application's output topic (from_kafka or from_files) or a DataFrame with "
            f"key, value, ts; got {type(actual).__name__}"
        )
    missing = [c for c in _MATCH if c not in frame.columns]
    if missing:
        raise SparkInputError(
            f"reconcile: the application's output has no {', '.join(missing)} column (it has "
            f"{', '.join(frame.columns)}); read the output topic with from_kafka, or name the columns key, value, ts"
        )
    return frame


@dataclass(frozen=True)
class Reconciliation:
    """What :func:`reconcile` found."""

    matched: int
    """Real outputs that kjoin predicted."""
    actual: int
    """Real outputs in all."""
    predicted: int
    """kjoin's outputs in all."""
    differences: Any
    """One row per ``(key, value, ts)`` written a different number of times (:data:`DIFFERENCE_COLUMNS`)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Per category, how many outputs differ (the sum of ``|actual - predicted|``)."""
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Per category, a few differences as dicts."""

    @property
    def explained(self) -> bool:
        """Whether every difference has a cause (none is ``unexplained``)."""
        return not self.counts.get("unexplained")

    def __str__(self) -> str:
        lines = [f"{self.matched} of {self.actual} real outputs predicted ({self.predicted} predicted)"]
        for category in CATEGORIES:
            if self.counts.get(category):
                example = self.examples[category][0]
                lines.append(
                    f"  {category}: {self.counts[category]} (e.g. key {example['key']!r}, value {example['value']!r}, "
                    f"ts {example['ts']}: written {example['actual']}x by the app, {example['predicted']}x by kjoin)"
                )
        return "\n".join(lines)


def reconcile(
    run: "SparkRun",
    actual: Any,
    arrival: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    semantics: str | None = None,
    examples: int = 3,
) -> Reconciliation:
    """:meth:`SparkRun.reconcile` (see the module)."""
    whatifs: list[tuple[str, Any]] = []
    if arrival is not None or options is not None or semantics is not None:
        if run._rerun_with is None:
            raise SparkInputError("reconcile: what-ifs (arrival, options, semantics) need a run_join result")
    if arrival is not None:
        whatifs.append(("arrival", run._rerun_with(arrival=arrival)))
    if options is not None:
        whatifs.append(("configuration", run._rerun_with(options=options)))
    if semantics is not None:
        whatifs.append(("version", run._rerun_with(semantics=semantics)))
    # One union counted per (key, value, ts): a group treats null keys and values (tombstones) as equal, a join
    # would not.
    sources = [("actual", _actual_frame(actual)), ("predicted", _predicted(run))]
    sources += [(f"_{name}", _predicted(other)) for name, other in whatifs]
    names = [name for name, _ in sources]
    counted = None
    for name, frame in sources:
        part = _counted(frame, name).select(*_MATCH, *(F.col(n) if n == name else F.lit(0).alias(n) for n in names))
        counted = part if counted is None else counted.unionByName(part)
    both = counted.groupBy(*_MATCH).agg(*(F.sum(n).cast("long").alias(n) for n in names))
    differing = both.filter(F.col("actual") != F.col("predicted"))
    category = None
    for name, _ in whatifs:
        fits = F.col(f"_{name}") == F.col("actual")
        category = F.when(fits, F.lit(name)) if category is None else category.when(fits, F.lit(name))
    keys = run.records.select(F.col("key").cast("string").alias("_key")).distinct().withColumn("_seen", F.lit(True))
    differing = differing.join(keys, differing["key"].eqNullSafe(keys["_key"]), "left")
    unseen = (F.col("actual") > F.col("predicted")) & F.col("_seen").isNull()
    category = F.when(unseen, F.lit("unseen-records")) if category is None else category.when(unseen, "unseen-records")
    rows = differing.select(*_MATCH, "actual", "predicted", category.otherwise(F.lit("unexplained")).alias("category"))
    collected = rows.orderBy("category", "key", "ts", "value").collect()
    counts: dict[str, int] = {}
    found: dict[str, list[dict[str, Any]]] = {}
    for row in collected:
        counts[row["category"]] = counts.get(row["category"], 0) + abs(row["actual"] - row["predicted"])
        if len(found.setdefault(row["category"], [])) < examples:
            found[row["category"]].append(row.asDict())
    totals = both.agg(
        F.sum("actual").alias("actual"),
        F.sum("predicted").alias("predicted"),
        F.sum(F.least("actual", "predicted")).alias("matched"),
    ).first()
    spark = rows.sparkSession
    differences = spark.createDataFrame(collected, rows.schema) if collected else spark.createDataFrame([], rows.schema)
    return Reconciliation(
        int(totals["matched"] or 0),
        int(totals["actual"] or 0),
        int(totals["predicted"] or 0),
        differences,
        counts,
        found,
    )
