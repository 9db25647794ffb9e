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
    joined with other settings (``options=``: ``{"grace_ms": 100}``, ``{"right": {"versioned": True,
    "history_retention_ms": 60000}}``, ``{"window": {"grace_ms": 0}}``: the run's scenario with those fields changed,
    as ``kjoin diff --set`` changes them) they do, and ``kjoin diff``'s attribution (:class:`kjoin.diff.Attribution`,
    on Spark :meth:`SparkRun.diff`) charges the outputs that differ to settings only;
``version``
    joined under another Kafka version's semantics (``semantics=``) they do, charged to rules of
    :mod:`kjoin.semantics` only;
``configuration+version``
    charged to settings and rules both (a difference only the two together make, or an output changed by two
    differences, one charged to each);
``unseen-records``
    a real output of a key kjoin's input topics never had: the application read records kjoin was not given (a
    snapshot taken earlier, a topic filtered on the way);
``unexplained``
    none of these: ask ``why`` of the records of its key.

``arrival=`` costs one more Spark run; ``options=`` and ``semantics=`` are one :meth:`SparkRun.diff` (one more run,
and one per switch when there are several: every rule that differs and every setting, each turned alone, so that each
difference is charged to the switches that make it). A lag is tried first: what it explains is ``arrival``. A
difference is a count per ``(key, value, ts)``: ``actual`` and ``predicted``, how many times the application and kjoin
wrote it; ``switches`` names the settings and rules charged (empty in the other categories).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from pyspark.sql import functions as F

from ...semantics import Semantics
from ..io.topic import SparkInputError
from .diff import spark_diff

if TYPE_CHECKING:
    from ..result import SparkRun

__all__ = ["Reconciliation", "reconcile", "setting_paths", "lags_to_try", "CATEGORIES", "DIFFERENCE_COLUMNS"]

CATEGORIES = ("arrival", "configuration", "version", "configuration+version", "unseen-records", "unexplained")
"""What a difference is put down to, in the order they are tried."""

CATEGORY_WORDS = {
    "arrival": "explained by the arrival given (a lagging partition): with it kjoin writes them as the app did",
    "configuration": "explained by the settings given (options=): with them kjoin writes them as the app did",
    "version": "explained by the Kafka version given (semantics=): with it kjoin writes them as the app did",
    "configuration+version": "explained by the settings and the Kafka version given together",
    "unseen-records": "written by the app from records kjoin never saw (they are not in the topics read)",
    "unexplained": "not explained by anything given: try an arrival (a lag), options= or semantics=",
}
"""What each category means, in the words :meth:`Reconciliation.__str__` prints."""

DIFFERENCE_COLUMNS = ["key", "value", "ts", "actual", "predicted", "category", "switches"]
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


def setting_paths(options: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``options=`` (scenario fields, as ``run_join`` takes them) as ``kjoin diff --set`` paths: ``{"right":
    {"versioned": True}}`` is ``right.versioned``, ``{"window": {"grace_ms": 0}}`` is ``window.grace_ms``."""
    paths: dict[str, Any] = {}
    for name, value in options.items():
        if not prefix and name == "arrival":
            raise SparkInputError(
                "reconcile: a lag is not a configuration; give it as arrival=, e.g. arrival={'right': {'lag_ms': 5000}}"
            )
        if isinstance(value, Mapping) and value:
            paths.update(setting_paths(value, f"{prefix}{name}."))
        else:
            paths[f"{prefix}{name}"] = value
    return paths


def _diff_deltas(run: "SparkRun", semantics: Any, settings: Mapping[str, Any]) -> Any:
    """Per ``(key, value, ts)``, how many more times the same topics joined under ``semantics`` with ``settings``
    write it than this run (``_diff``), and the switches :meth:`SparkRun.diff` charged its differences to
    (``_switches``): one row per output before (-1) and after (+1) a difference."""
    found = spark_diff(run, semantics, settings).differences

    def outputs(column: str, sign: int) -> Any:
        return found.where(F.col(column).isNotNull()).select(
            F.get_json_object(column, "$.key").alias("key"),
            F.get_json_object(column, "$.value").alias("value"),
            F.get_json_object(column, "$.ts").cast("long").alias("ts"),
            F.lit(sign).cast("long").alias("_diff"),
            F.col("rules").alias("_switches"),
        )

    return outputs("before", -1).unionByName(outputs("after", 1))


def _category(whatifs: list[str], settings: Mapping[str, Any]) -> Any:
    """The category of a differing ``(key, value, ts)``: the first of :data:`CATEGORIES` that explains it."""
    cases = []
    if "arrival" in whatifs:  # the lagging run writes it as often as the application did
        cases.append((F.col("_arrival") == F.col("actual"), F.lit("arrival")))
    if "diff" in whatifs:  # the diff's other run does, and its attribution says which switches make it
        named = F.array(*[F.lit(name) for name in settings]).cast("array<string>")
        by_settings = F.size(F.array_intersect("_switches", named))
        kind = (
            F.when(by_settings == F.size("_switches"), F.lit("configuration"))
            .when(by_settings == 0, F.lit("version"))
            .otherwise(F.lit("configuration+version"))
        )
        cases.append(((F.col("_diff") != 0) & (F.col("predicted") + F.col("_diff") == F.col("actual")), kind))
    cases.append(((F.col("actual") > F.col("predicted")) & F.col("_seen").isNull(), F.lit("unseen-records")))
    category = F.lit("unexplained")
    for condition, name in reversed(cases):
        category = F.when(condition, name).otherwise(category)
    return category


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
    switches: dict[str, int] = field(default_factory=dict)
    """Per setting (``kjoin diff --set`` path) or rule of :mod:`kjoin.semantics`, how many outputs differ that are
    charged to it (an output charged to two counts under both)."""
    lags_to_try: tuple[dict[str, Any], ...] = ()
    """When the arrival given explains some differences and others are left unexplained: the ``arrival=`` of the
    larger lags to try next (:func:`lags_to_try`), in order."""
    suggestion: str = ""
    """Why those lags, in a sentence (printed by :meth:`__str__`)."""

    @property
    def explained(self) -> bool:
        """Whether every difference has a cause (none is ``unexplained``)."""
        return not self.counts.get("unexplained")

    def __str__(self) -> str:
        differ = sum(self.counts.values())
        lines = [
            f"kjoin predicted {self.matched} of the {self.actual} outputs the app wrote (kjoin wrote "
            f"{self.predicted}); {differ} output{'s' if differ != 1 else ''} differ" + (":" if differ else ".")
        ]
        for category in CATEGORIES:
            if self.counts.get(category):
                example = self.examples[category][0]
                charged = f", charged to {', '.join(example['switches'])}" if example["switches"] else ""
                lines.append(
                    f"  {self.counts[category]} {CATEGORY_WORDS[category]} ({category}). For example key "
                    f"{example['key']!r}, value {example['value']!r}, ts {example['ts']}: the app wrote it "
                    f"{_times(example['actual'])}, kjoin {_times(example['predicted'])}{charged}."
                )
        if self.suggestion:
            lines.append(self.suggestion)
        return "\n".join(lines)


def _times(n: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(n, f"{n} times")


LAG_FACTORS = (2, 4, 8)
"""How much larger than the lag given the lags :func:`lags_to_try` suggests are."""


def lags_to_try(arrival: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``arrival=`` of the lags :data:`LAG_FACTORS` times those of ``arrival`` (every side and partition
    scaled together): what to try when a lag explains some differences and leaves others."""

    def scaled(value: Any, factor: int) -> Any:
        if isinstance(value, Mapping):
            return {name: scaled(inner, factor) for name, inner in value.items()}
        return value * factor if isinstance(value, int) and not isinstance(value, bool) else value

    return [scaled(arrival, factor) for factor in LAG_FACTORS]


def _lag_text(arrival: Mapping[str, Any]) -> str:
    from ...times import duration

    parts = []
    for side, lag in arrival.items():
        if not isinstance(lag, Mapping):
            continue
        if "lag_ms" in lag:
            parts.append(f"{side} {duration(lag['lag_ms'])}")
        for partition, ms in (lag.get("partitions") or {}).items():
            parts.append(f"{side} partition {partition} {duration(ms)}")
    return ", ".join(parts) or repr(dict(arrival))


def _lag_suggestion(arrival: Mapping[str, Any], explained: int, unexplained: int, joined_more: int) -> str:
    """Why to try larger lags: the lag given explains some differences, not all."""
    lags = lags_to_try(arrival)
    return (
        f"The lag given ({_lag_text(arrival)}) explains {explained} differing output{'s' if explained != 1 else ''} "
        f"and leaves {unexplained}. A lag explains a record only if its partner arrived less than the lag late, so "
        "the smallest lag that explains some records (smallest_lag's) can be too small for others"
        + (
            f": {joined_more} of those left are outputs kjoin still writes that the app did not (a partner found "
            "that the app's lagging task had not read yet), what a longer lag removes"
            if joined_more
            else ""
        )
        + ". Try larger lags next, in this order: "
        + "; ".join(f"arrival={lag} ({_lag_text(lag)})" for lag in lags)
        + " (reconcile(actual, arrival=...) with each; the differences a larger lag explains are arrival, and one "
        "that explains them all is the app's lag at least)."
    )


@dataclass(frozen=True)
class Tally:
    """What a reconciliation counts from its differing rows: per category and per switch (each row's difference in
    count), a few examples per category, the totals, and the rows themselves."""

    collected: list[Any]
    differences: Any
    counts: dict[str, int]
    per_switch: dict[str, int]
    found: dict[str, list[dict[str, Any]]]
    totals: Any

    @classmethod
    def of(cls, both: Any, differing: Any, category: Any, no_switches: Any, examples: int) -> "Tally":
        """``both``: every ``key, value, ts`` with its ``actual`` and ``predicted`` counts (and ``_switches``);
        ``differing``: those whose counts differ; ``category``: the column that names why each differs."""
        charged = F.when(category.isin("configuration", "version", "configuration+version"), F.col("_switches"))
        rows = differing.select(
            *_MATCH, "actual", "predicted", category.alias("category"),
            F.coalesce(charged, no_switches).alias("switches"),
        )  # fmt: skip
        collected = rows.orderBy("category", "key", "ts", "value").collect()
        counts: dict[str, int] = {}
        per_switch: dict[str, int] = {}
        found: dict[str, list[dict[str, Any]]] = {}
        for row in collected:
            differ = abs(row["actual"] - row["predicted"])
            counts[row["category"]] = counts.get(row["category"], 0) + differ
            for name in row["switches"]:
                per_switch[name] = per_switch.get(name, 0) + differ
            if len(found.setdefault(row["category"], [])) < examples:
                found[row["category"]].append(row.asDict())
        totals = both.agg(
            F.sum("actual").alias("actual"),
            F.sum("predicted").alias("predicted"),
            F.sum(F.least("actual", "predicted")).alias("matched"),
        ).first()
        spark = rows.sparkSession
        differences = spark.createDataFrame(collected if collected else [], rows.schema)
        return cls(collected, differences, counts, per_switch, found, totals)

    def reconciliation(self, suggested: tuple[dict[str, Any], ...] = (), suggestion: str = "") -> "Reconciliation":
        return Reconciliation(
            int(self.totals["matched"] or 0),
            int(self.totals["actual"] or 0),
            int(self.totals["predicted"] or 0),
            self.differences,
            self.counts,
            self.found,
            self.per_switch,
            suggested,
            suggestion,
        )


def reconcile(
    run: "SparkRun",
    actual: Any,
    arrival: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    semantics: "str | Semantics | None" = None,
    examples: int = 3,
) -> Reconciliation:
    """:meth:`SparkRun.reconcile` (see the module)."""
    if arrival is not None or options is not None or semantics is not None:
        if run.rejoin is None:
            raise SparkInputError("reconcile: what-ifs (arrival, options, semantics) need a run_join result")
    settings = setting_paths(options or {})
    # One union counted per (key, value, ts): a group treats null keys and values (tombstones) as equal, a join
    # would not. Every source fills its own columns, zeros (or no switches) in the others'.
    sources = [
        ("actual", _counted(_actual_frame(actual), "actual")),
        ("predicted", _counted(_predicted(run), "predicted")),
    ]
    if arrival is not None:
        sources.append(("_arrival", _counted(_predicted(run.rejoin.with_arguments(arrival=arrival)), "_arrival")))
    if options is not None or semantics is not None:
        sources.append(("_diff", _diff_deltas(run, semantics, settings)))
    names = [name for name, _ in sources]
    no_switches = F.array().cast("array<string>")
    counted = None
    for name, frame in sources:
        switches = F.col("_switches") if name == "_diff" else no_switches.alias("_switches")
        part = frame.select(*_MATCH, *(F.col(n) if n == name else F.lit(0).alias(n) for n in names), switches)
        counted = part if counted is None else counted.unionByName(part)
    both = counted.groupBy(*_MATCH).agg(
        *(F.sum(n).cast("long").alias(n) for n in names),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("_switches")))).alias("_switches"),
    )
    differing = both.filter(F.col("actual") != F.col("predicted"))
    keys = run.records.select(F.col("key").cast("string").alias("_key")).distinct().withColumn("_seen", F.lit(True))
    differing = differing.join(keys, differing["key"].eqNullSafe(keys["_key"]), "left")
    whatifs = ["arrival"] * (arrival is not None) + ["diff"] * ("_diff" in names)
    category = _category(whatifs, settings)
    tally = Tally.of(both, differing, category, no_switches, examples)
    counts, collected = tally.counts, tally.collected
    suggested: tuple[dict[str, Any], ...] = ()
    suggestion = ""
    if arrival is not None and counts.get("arrival") and counts.get("unexplained"):
        joined_more = sum(
            max(row["predicted"] - row["actual"], 0) for row in collected if row["category"] == "unexplained"
        )
        suggested = tuple(lags_to_try(arrival))
        suggestion = _lag_suggestion(arrival, counts["arrival"], counts["unexplained"], joined_more)
    return tally.reconciliation(suggested, suggestion)
