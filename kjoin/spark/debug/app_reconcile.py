"""``run_topology(...).reconcile(actual, topic=...)``: what the application really wrote to one of its output
topics, matched with what kjoin's run of the whole app wrote there.

As for a join run (:mod:`kjoin.spark.debug.reconcile`), every real record is matched with one of kjoin's by ``(key,
value, ts)`` and what is left over on either side is a difference, put down to the first of:

``arrival``
    the same input records run through the app with some partitions lagging (``arrival=``, by topic:
    ``{"customers": {"partitions": {1: 1_800_000}}}``, :mod:`kjoin.topology.arrival`) write it as the application did:
    its tasks took a lagging partition's records late (``max.task.idle.ms = 0``). The lagging run is the reference
    engine's over the run's input records (collected, as :meth:`TopologyRun.debug` collects them). When the lag
    explains some differences and leaves others, the text names the larger lags to try next and why
    (:func:`~kjoin.spark.debug.reconcile.lags_to_try`); when it explains them all, it names the lagging partitions;
``configuration`` / ``version`` / ``configuration+version``
    the same topics run through the topology with ``set=`` (node settings, ``{"per_hour.grace_ms": 0}``) and under
    ``semantics=`` write it as the application did; :meth:`TopologyRun.diff` (:mod:`kjoin.spark.debug.app_diff`)
    charges each such record to the settings and rules that make it;
``unexplained``
    none of these.

Without ``arrival=``, differences left unexplained get a suggestion: try a lag of the partitions the app's tasks
read (its input and repartition topics).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from pyspark.sql import functions as F

from ..io.topic import SparkInputError
from .app_diff import app_diff
from ...topology.arrival import lagging_topics
from .reconcile import CATEGORIES, Reconciliation, Tally, _actual_frame, _category, _counted, _lag_text, lags_to_try

if TYPE_CHECKING:  # pragma: no cover
    from ..topology_run import TopologyRun

__all__ = ["app_reconcile"]

_MATCH = ["key", "value", "ts"]

NO_LAG = (
    "If a lagging partition may explain them (an application with max.task.idle.ms = 0 takes what it has fetched: a "
    "partition that reaches it late, or a repartition topic, whose records come only once the tasks upstream wrote "
    "them), try a lag of the partitions the app's tasks read: reconcile(actual, arrival={{'TOPIC': {{'partitions': "
    "{{P: LAG_MS}}}}}}) or {{'TOPIC': {{'lag_ms': LAG_MS}}}}, with TOPIC one of {topics}."
)


def app_reconcile(
    run: "TopologyRun",
    actual: Any,
    topic: str | None = None,
    semantics: Any = None,
    settings: Mapping[str, Any] | None = None,
    examples: int = 3,
    arrival: Mapping[str, Any] | None = None,
) -> Reconciliation:
    """:meth:`kjoin.spark.topology_run.TopologyRun.reconcile` (see the module)."""
    frame = _actual_frame(actual)
    topic = _topic(run, frame, topic)
    if "topic" in frame.columns:
        frame = frame.where(F.col("topic") == topic)
    predicted = run.outputs.where(F.col("topic") == topic)
    sources = [("actual", _counted(frame, "actual")), ("predicted", _counted(predicted, "predicted"))]
    if arrival is not None:
        sources.append(("_arrival", _counted(_lagged_outputs(run, topic, arrival), "_arrival")))
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
    whatifs = ["arrival"] * ("_arrival" in names) + ["diff"] * ("_diff" in names)
    category = _category(whatifs, dict(settings or {}))
    tally = Tally.of(both, differing, category, no_switches, examples)
    counts = tally.counts
    assert set(counts) <= set(CATEGORIES)
    if arrival is not None and counts.get("arrival"):
        if counts.get("unexplained"):
            lags = tuple(lags_to_try(arrival))
            return tally.reconciliation(lags, _larger_lags(arrival, counts["arrival"], counts["unexplained"], lags))
        return tally.reconciliation(suggestion=_lag_found(arrival, counts["arrival"]))
    if counts.get("unexplained") and arrival is None:
        return tally.reconciliation(suggestion=NO_LAG.format(topics=", ".join(lagging_topics(run.topology))))
    return tally.reconciliation()


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


def _lagged_outputs(run: "TopologyRun", topic: str, arrival: Mapping[str, Any]) -> Any:
    """``key, value, ts`` of what the app writes to ``topic`` with the partitions of ``arrival`` lagging: the reference
    engine over the run's input records (:func:`kjoin.topology.arrival.lagged_run`), shown as :attr:`outputs` shows
    them."""
    from ...topology.arrival import lagged_run
    from ...topology.graph import TopologyError
    from ..passes.stage_task import _shown_written, shown
    from .topology_why import numbered_events

    try:
        trace = lagged_run(run.topology, numbered_events(run.topology, run.input_records()), arrival)
    except TopologyError as error:
        raise SparkInputError(f"reconcile: {error}") from None
    rows = [(shown(r.key), _shown_written(r), int(r.ts)) for r in trace.outputs() if r.topic == topic]
    return run.outputs.sparkSession.createDataFrame(rows, "key string, value string, ts long")


def _lag_found(arrival: Mapping[str, Any], explained: int) -> str:
    return (
        f"The lag given ({_lag_text(arrival)}) explains every difference ({explained} output"
        f"{'s' if explained != 1 else ''}): the app's tasks read those partitions late (max.task.idle.ms = 0), so "
        "their joins looked up rows that had not arrived yet."
    )


def _larger_lags(arrival: Mapping[str, Any], explained: int, unexplained: int, lags: tuple[Any, ...]) -> str:
    return (
        f"The lag given ({_lag_text(arrival)}) explains {explained} differing output{'s' if explained != 1 else ''} "
        f"and leaves {unexplained}. A lag explains a lookup only if the row it missed arrived less than the lag late, "
        "so a lag too small explains the rows that were nearly on time and not the others. Try larger lags next, in "
        "this order: " + "; ".join(f"arrival={lag} ({_lag_text(lag)})" for lag in lags) + " (the differences a "
        "larger lag explains are arrival; one that explains them all is at least the app's lag)."
    )
