"""``SparkRun.diff(...)``: ``kjoin diff`` over the same topics on Spark, for another Kafka version, another
configuration, or both.

``run.diff(semantics="4.3")``, ``run.diff(window={"grace_ms": 500})``, ``run.diff(right_versioned=True,
right_history_retention_ms=60_000)``, ``run.diff(grace_ms=200)``, alone or together. Each setting is a *switch*
named as ``kjoin diff --set`` names it (``window.grace_ms``, ``right.versioned``, ``grace_ms``); each rule of
:mod:`kjoin.semantics` that differs between the two semantics is one too.

How it runs, all in Spark (nothing of size of the topics comes to the driver):

1. The topics are joined again with every switch turned, in the same per-task pass as the first join
   (:mod:`kjoin.spark.passes.paired`): both joins' outputs fingerprinted per input record ``(scenario, partition,
   side, offset)``, and the records whose outputs differ compared right there, in arrays, as
   :func:`kjoin.diff.compare_outputs` (the reference engine's comparison: added, removed, changed) compares them
   (:func:`kjoin.spark.passes.comparison.compared_table`; Spark keeps no order within one record's outputs, so no
   ``reordered``): one row per difference, with the input record that emitted it (:data:`DIFF_COLUMNS`). Where
   that pass cannot run (a lagging side, a join without a per-task plan, tasks split by key), the topics are
   joined again by :func:`kjoin.spark.run_join`, both runs' outputs grouped per input record in one shuffle, and
   the records whose sorted outputs differ compared on the executors by the reference engine's comparison.
3. Attribution is the reference engine's (:class:`kjoin.diff.Attribution`), over frames: a difference is charged to
   a switch when turning that switch alone from the first run produces the very same difference (same input
   record, change, before and after); a rule that requires another is turned with it; what no single switch
   produces is tried against pairs, then triples, up to :data:`MAX_SPARK_RUNS` runs, and what is left is charged
   to every switch together. One switch: no run more than the second.

The result, a :class:`SparkDiff`, is lazy like a :class:`~kjoin.spark.SparkRun`: :attr:`SparkDiff.differences`
(a frame, kept on the executors' disks once computed), :meth:`~SparkDiff.write_parquet`, the counts per rule, per
key and per partition, :meth:`~SparkDiff.examples` of a rule, :meth:`~SparkDiff.why` (both runs' diagnoses of a
differing record) and :meth:`~SparkDiff.collect` (the reference engine's :class:`kjoin.diff.Diff`, for small runs
and tests).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any, Callable, Mapping

from pyspark import StorageLevel
from pyspark.sql import functions as F

from ...diff import Attribution, Diff, Difference, Outputs, _check_path, compare_outputs, upstream_notes
from ...records import Record, Side
from ...scenario import ScenarioError
from ...semantics import Semantics, parse_semantics
from ..io.topic import SparkInputError
from ..keep import kept, release
from ..passes.paired import diff_chunk_rows
from ..passes.comparison import DIFF_SCHEMA, ORDER, canon, compared_rows, diff_arrow_schema

if TYPE_CHECKING:  # pragma: no cover
    from ..result import SparkRun

__all__ = ["spark_diff", "SparkDiff", "DiffWhy", "KeyCheck", "settings_of", "DIFF_COLUMNS", "MAX_SPARK_RUNS"]

MAX_SPARK_RUNS = 32
"""How many runs of the topics the attribution may make before it charges what is left to every switch together
(each is a Spark job over all the records)."""

_IDENTITY = ["scenario", "partition", "side", "offset"]

DIFF_COLUMNS = [
    *[part.split()[0] for part in DIFF_SCHEMA.split(", ")],
    "rules",
    "with_rules",
    "together",
]
"""The columns of :attr:`SparkDiff.differences`: :data:`DIFF_SCHEMA`'s and the switches charged: ``rules`` (in
the order of :attr:`SparkDiff.switches`), ``with_rules`` (turned along because a rule requires them) and
``together`` (no smaller set than all of them was found)."""

_SETTING_ARGUMENTS = {
    "grace_ms": "grace_ms",
    "left_versioned": "left.versioned",
    "right_versioned": "right.versioned",
    "left_history_retention_ms": "left.history_retention_ms",
    "right_history_retention_ms": "right.history_retention_ms",
    "versioned_mode": "versioned_mode",
}
"""``SparkRun.diff``'s keyword arguments for settings, and the ``kjoin diff --set`` path each turns."""


def settings_of(
    window: Any = None, arrival: Any = None, set: Mapping[str, Any] | None = None, **named: Any
) -> dict[str, Any]:
    """``SparkRun.diff``'s settings as ``kjoin diff --set`` paths: ``window={"grace_ms": 500}`` is
    ``window.grace_ms``, ``window=5`` is ``before_ms = after_ms = 5`` and no grace (as ``run_join``'s
    ``window=5``), ``right_versioned=True`` is ``right.versioned``; ``set={"window.grace_ms": 500}`` gives paths
    directly."""
    settings: dict[str, Any] = {}
    if arrival is not None:
        raise SparkInputError(
            "arrival: the diff does not compare a lagging side on Spark yet; see what a lag changes with "
            "result.with_arrival({'right': {'lag_ms': 2000}}) and result.lag_summary(2000), or diff it on a sample "
            "with the reference engine: kjoin.diff(scenario, set={'arrival.right.lag_ms': 2000}) or kjoin diff "
            "your.yaml --set "
            "arrival.right.lag_ms=2000"
        )
    if window is not None:
        if isinstance(window, int) and not isinstance(window, bool):
            window = {"before_ms": window, "after_ms": window, "grace_ms": 0}
        if not isinstance(window, Mapping):
            raise SparkInputError(
                f"window={window!r}: expected the fields that change, e.g. window={{'grace_ms': 500}}, or an int "
                "(before_ms = after_ms, no grace)"
            )
        settings.update({f"window.{name}": value for name, value in window.items()})
    for name, value in named.items():
        if name not in _SETTING_ARGUMENTS:
            raise SparkInputError(
                f"diff({name}=...): not a setting diff compares; the settings are window, "
                + ", ".join(_SETTING_ARGUMENTS)
                + ", or set={'path': value} with kjoin diff's --set paths"
            )
        settings[_SETTING_ARGUMENTS[name]] = value
    settings.update(dict(set or {}))
    return settings


# -- the result -------------------------------------------------------------------------------
@dataclass
class DiffWhy:
    """Why a differing input record came out as it did in each run: both runs' diagnoses
    (:meth:`kjoin.spark.SparkRun.why`)."""

    difference: Difference
    before: Any
    after: Any
    labels: tuple[str, str] = ("first run", "second run")
    """What the two runs are (``3.0``, ``3.1 window.grace_ms=500``)."""

    @property
    def text(self) -> str:
        d = self.difference
        charged = ", ".join(d.rules) + (" (together)" if d.together else "")
        return "\n".join(
            [
                f"{d.input.describe()}: {d.change} (charged to {charged})",
                f"before ({self.labels[0]}): {self.before}",
                f"after ({self.labels[1]}): {self.after}",
            ]
        )

    def __str__(self) -> str:
        return self.text


class SparkDiff:
    """The differences between a Spark run and the same topics joined with other semantics or settings."""

    def __init__(
        self,
        run: "SparkRun",
        other: "SparkRun",
        frame: Any,
        switches: tuple[str, ...],
        before: str,
        after: str,
        title: str,
        runs: int,
        settings: Mapping[str, Any],
    ) -> None:
        self.run = run
        """The first run (the one ``diff`` was called on)."""
        self.other = other
        """The second run: the same topics with every switch turned."""
        self._frame = frame
        self.switches = switches
        self.before = before
        self.after = after
        self.title = title
        self.runs = runs
        """How many runs of the topics the attribution needed besides the two compared."""
        self.settings = dict(settings)
        self._collected: Diff | None = None
        self._kept: list[Any] = []
        self._fallbacks: Any = None
        self._semantics: Semantics | None = None
        """The second run's semantics, to build the differences again after :meth:`unpersist`."""

    @property
    def fallbacks(self) -> int | None:
        """How many differing input records the comparison in arrays left to the reference engine's comparison in
        Python (their same-result pairing depends on their order: :mod:`kjoin.spark.passes.comparison`), counted
        as :attr:`differences` was computed; ``None`` where the diff joined the topics twice (every record compared
        in Python) or Spark counts nothing (Spark Connect)."""
        return None if self._fallbacks is None else self._fallbacks.value

    def unpersist(self) -> None:
        """Free what the diff kept on the executors' disks (its frames are built and computed again if asked
        after)."""
        for frame in self._kept:
            release(frame)
        self._kept = []
        self._frame = None

    def check_keys(self, keys: Any) -> "KeyCheck":
        """The differences of each ``(partition, key)`` in ``keys`` against the reference engine's: both runs'
        drill-downs of the key (:meth:`kjoin.spark.SparkRun.trace` with ``key=``: the key's records with the
        stream time the task's other records give them) compared as ``kjoin diff`` compares two runs. What
        ``make bench`` checks on sampled keys at 10^7 records."""
        checked, mismatches = 0, []
        for partition, key in keys:
            mine = self.differences.where((F.col("partition") == partition) & (F.col("key") == canon(key)))
            on_spark = {_comparable(self._difference(row)) for row in mine.collect()}
            reference = {
                _comparable(d)
                for d in _trace_differences(self.run.trace(partition, key=key), self.other.trace(partition, key=key))
                if d.key == key
            }
            checked += len(reference)
            if on_spark != reference:
                mismatches.append((partition, key, sorted(on_spark - reference), sorted(reference - on_spark)))
        return KeyCheck(len(keys), checked, mismatches)

    @property
    def differences(self) -> Any:
        """One row per difference (:data:`DIFF_COLUMNS`), computed once and kept on the executors' disks."""
        if self._frame is None:  # freed by unpersist(): a checkpoint cannot be read again, so build it anew
            again = spark_diff(self.run, self._semantics, self.settings)
            self._frame, self._kept, self._fallbacks = again._frame, again._kept, again._fallbacks
        return self._frame

    def write_parquet(self, path: str, mode: str = "overwrite") -> None:
        """``differences/``, ``by_rule/``, ``by_key/`` and ``by_partition/`` under ``path``."""
        from ..io.readers import local_path

        path = local_path(path).rstrip("/")
        self.differences.write.mode(mode).parquet(f"{path}/differences")
        self.by_rule().write.mode(mode).parquet(f"{path}/by_rule")
        self.by_key().write.mode(mode).parquet(f"{path}/by_key")
        self.by_partition().write.mode(mode).parquet(f"{path}/by_partition")

    def by_rule(self) -> Any:
        """``rule, change, count``: the differences charged to each switch (a difference charged to several counts
        under each), per kind of change."""
        return (
            self.differences.select(F.explode("rules").alias("rule"), "change")
            .groupBy("rule", "change")
            .count()
            .orderBy("rule", "change")
        )

    def by_key(self) -> Any:
        """``scenario, partition, key, differences`` (the output's key, as JSON text), most first."""
        return (
            self.differences.groupBy("scenario", "partition", "key")
            .agg(F.count("*").alias("differences"))
            .orderBy(F.desc("differences"), "scenario", "partition", "key")
        )

    def by_partition(self) -> Any:
        """``scenario, partition, change, count``."""
        return self.differences.groupBy("scenario", "partition", "change").count().orderBy(*_IDENTITY[:2], "change")

    def counts(self) -> dict[str, int]:
        """Differences charged to each switch (every switch, 0 where none), on the driver."""
        found = {name: 0 for name in self.switches}
        for row in self.differences.select(F.explode("rules").alias("rule")).groupBy("rule").count().collect():
            found[row["rule"]] = row["count"]
        return found

    def examples(self, rule: str | None = None, n: int = 5) -> list[Difference]:
        """The first ``n`` differences (in step order) charged to ``rule`` (any rule if ``None``)."""
        if rule is not None and rule not in self.switches:
            raise SparkInputError(
                f"examples: {rule!r} is not a switch of this diff; they are {', '.join(self.switches)}"
            )
        frame = self.differences if rule is None else self.differences.where(F.array_contains("rules", rule))
        rows = frame.orderBy("scenario", "partition", "step", "side", "offset").limit(n).collect()
        return [self._difference(row) for row in rows]

    def collect(self) -> Diff:
        """Every difference on the driver, as the reference engine's :class:`kjoin.diff.Diff` (for small runs)."""
        if self._collected is None:
            rows = self.differences.orderBy("scenario", "partition", "step", "side", "offset").collect()
            found = [self._difference(row) for row in rows]
            notes = upstream_notes(self.switches)
            self._collected = Diff(
                self.title, self.before, self.after, found, self.switches, self.runs, self.settings, notes
            )
        return self._collected

    def __iter__(self):
        return iter(self.collect())

    def __len__(self) -> int:
        return len(self.collect())

    def table(self) -> str:
        return self.collect().table()

    def why(self, difference: "Difference | Any") -> DiffWhy:
        """Both runs' diagnoses of the input record behind ``difference`` (a :class:`kjoin.diff.Difference` of
        :meth:`examples` or :meth:`collect`): why it came out as it did before, and after."""
        if not isinstance(difference, Difference):
            raise SparkInputError(f"why: expected a Difference (from examples() or collect()), got {difference!r:.80}")
        record = difference.input
        place = (record.partition, record.offset, record.side.value)
        return DiffWhy(difference, self.run.why(*place), self.other.why(*place), (self.before, self.after))

    def _difference(self, row: Any) -> Difference:
        decode = json.loads
        record = Record(
            Side(row["side"]),
            decode(row["input_key"]),
            decode(row["input_value"]),
            row["input_ts"],
            row["partition"],
            row["offset"],
        )
        before = None if row["before"] is None else decode(row["before"])
        after = None if row["after"] is None else decode(row["after"])
        return Difference(
            row["change"],
            row["step"],
            row["from_step"],
            record,
            decode(row["key"]),
            before,
            after,
            tuple(row["rules"]),
            tuple(row["with_rules"]),
            row["together"],
        )


@dataclass
class KeyCheck:
    """:meth:`SparkDiff.check_keys`: how many keys and reference differences were compared, and the keys whose
    differences differ (partition, key, only on Spark, only in the reference engine)."""

    keys: int
    differences: int
    mismatches: list[tuple[int, Any, list, list]]


def _comparable(d: Difference) -> tuple:
    def text(output: Any) -> Any:
        return None if output is None else json.dumps([output[n] for n in ("key", "value", "ts", "tombstone")])

    record = d.input  # no partition: check_keys compares one partition's, and a drill-down's records carry none
    return (d.change, record.side.value, record.offset, text(d.before), text(d.after))


def _trace_differences(first: Any, second: Any) -> list[Difference]:
    """Two traces of the same records compared per input record ``(side, partition, offset)``, as ``kjoin diff``
    compares two runs."""
    from ...diff import _observed, _result_of

    def per_record(trace: Any) -> dict[tuple, Outputs]:
        found: dict[tuple, Outputs] = {}
        for step in trace.steps:
            record = step.record
            held = found.setdefault(
                (record.side.value, record.partition, record.offset), Outputs(step.index, record, [], [])
            )
            held.outputs.extend(_observed(output) for output in step.outputs)
            held.results.extend(_result_of(output) for output in step.outputs)
        return found

    before, after = per_record(first), per_record(second)
    differences = []
    for identity in dict.fromkeys([*before, *after]):  # a clock record of a drill-down may have no offset: no sort
        old, new = before.get(identity), after.get(identity)
        some = new or old
        assert some is not None
        empty = Outputs(some.step, some.record, [], [])
        differences += compare_outputs(old or empty, new or empty, some.step, (old or some).step)
    return [d for d in differences if d.change != "reordered"]


# -- the diff -------------------------------------------------------------------------------------
def spark_diff(
    run: "SparkRun", semantics: "str | Semantics | None", settings: Mapping[str, Any] | None = None
) -> SparkDiff:
    """The differences from ``run`` to the same topics joined under ``semantics`` (default: the run's own) with
    ``settings`` (``kjoin diff --set`` paths), each charged to the switches that change it. A warning the joins
    again give (each run's :class:`~kjoin.spark.passes.plans.SlowPathWarning`) is given once per diff."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = _spark_diff(run, semantics, settings)
    once = {(w.category, str(w.message)): w for w in caught}
    for category, message in once:
        warnings.warn(message, category, stacklevel=3)
    return found


def _spark_diff(run: "SparkRun", semantics: "str | Semantics | None", settings: Mapping[str, Any] | None) -> SparkDiff:
    if run.rejoin is None:
        raise SparkInputError(
            "diff: only a run_join result knows its topics to join them again; diff run_scenarios' scenarios one by "
            "one with kjoin.diff(scenario, from_=..., to=...)"
        )
    config = run.scenarios[0]
    first = config.semantics
    try:
        second = first if semantics is None else parse_semantics(semantics)
    except ValueError as error:
        raise SparkInputError(f"semantics: {error}") from None
    settings = dict(settings or {})
    document = config.to_dict()
    for path in settings:
        try:
            _check_path(path, document, None)
        except ScenarioError as error:
            raise SparkInputError(str(error)) from None
        _check_join_setting(config, path, settings)
    switches = [(name, getattr(second, name)) for name in first.switched(second)] + list(settings.items())
    if not switches:
        raise SparkInputError(
            f"diff: nothing to compare: no rule kjoin models differs between {first} (the run's semantics) and "
            f"{second}, and no setting is given; give an older release, e.g. diff(semantics='3.0'), or a setting, "
            "e.g. diff(window={'grace_ms': 500})"
        )
    try:
        other = run.rejoin.under(second, settings)
    except SparkInputError as error:
        given = "".join(f" {path}={_setting_text(value)}" for path, value in settings.items())
        raise SparkInputError(f"diff: the topics cannot be joined under {second}{given}: {error}") from None
    diff_chunk_rows(run.results.sparkSession)  # a bad setting is named here, not taken for a pass that cannot run
    base = _tagged(run, 0)
    decoders = (run._json_keys, run._json_values)
    records = run.inputs
    rejoin = run.rejoin

    counted: dict[tuple[Semantics, str], Any] = {}

    def produced(semantics: Semantics, turned: Mapping[str, Any]) -> Any:
        found = _try(rejoin.paired, semantics, turned)
        if found is not None:  # both joins and their comparison in one pass
            counted[(semantics, json.dumps(dict(turned), sort_keys=True, default=str))] = found.fallbacks
            return found.frame
        rerun_of = (
            other if (semantics == second and dict(turned) == settings) else _try(rejoin.under, semantics, turned)
        )
        if rerun_of is None:
            return None
        return _differences(base, _tagged(rerun_of, 1), records, decoders)

    kept_frames: list[Any] = []
    target = _keep(produced(second, settings), kept_frames)
    names = tuple(name for name, _ in switches)
    attribution = FrameAttribution(first, switches, produced, kept_frames)
    charged = attribution.charge(target)
    if len(names) > 1:  # charged by joins with the runs of each switch: computed once
        charged = _keep(charged, kept_frames)
    after = str(second) + "".join(f" {path}={_setting_text(value)}" for path, value in settings.items())
    title = f"{config.join} {config.variant} join (Spark)"
    found = SparkDiff(run, other, charged, names, str(first), after, title, attribution.runs, settings)
    found._kept = kept_frames
    found._semantics = second
    found._fallbacks = counted.get((second, json.dumps(settings, sort_keys=True, default=str)))
    return found


def _setting_text(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


_APP_GRACE = (
    "a windowed aggregate's grace, or any node's setting downstream of this join, belongs to the whole app: "
    "run_topology(...).diff(set={'NODE.grace_ms': 0}), or kjoin diff app.yaml --set NODE.grace_ms=0"
)


def _check_join_setting(config: Any, path: str, settings: Mapping[str, Any]) -> None:
    """A setting this join does not have, refused with what can be set instead (before any join runs)."""
    if path.startswith("window.") and config.join != "stream-stream":
        raise SparkInputError(
            f"diff: set {path}: a {config.join} join has no window (only a stream-stream join's window has "
            "before_ms, after_ms, grace_ms). A stream-table join's grace is grace_ms, with a versioned right table: "
            "set={'grace_ms': 0, 'right.versioned': True, 'right.history_retention_ms': 60000}; " + _APP_GRACE
        )
    if path == "grace_ms" and config.join == "stream-table":
        versioned = settings.get("right.versioned", config.right.versioned)
        if not versioned:
            raise SparkInputError(
                "diff: set grace_ms: a stream-table join's grace needs a versioned right table (Kafka: KTable must be "
                "versioned to use a grace period); add 'right.versioned': True and 'right.history_retention_ms' (at "
                "least the grace) to set=; " + _APP_GRACE
            )


def _try(join: Callable[..., Any], semantics: Semantics, settings: Mapping[str, Any]) -> Any:
    try:
        return join(semantics, settings)
    except SparkInputError:
        return None  # that combination is not a join run_join can run


def _keep(frame: Any, kept_frames: list[Any] | None = None) -> Any:
    """``frame`` computed once and kept on the executors' disks (:func:`kjoin.spark.keep.kept`: checkpointed on a
    local master, persisted on a cluster), listed in ``kept_frames`` for :meth:`SparkDiff.unpersist`."""
    frame = kept(frame, StorageLevel.DISK_ONLY)
    if kept_frames is not None:
        kept_frames.append(frame)
    return frame


def _tagged(run: "SparkRun", tag: int) -> Any:
    """One run's outputs with the run they come from (0: the first, 1: the second), each a struct of
    :data:`~kjoin.spark.passes.comparison.ORDER`: sorted, a record's outputs come as the reference engine emits them
    wherever that order matters to the comparison (which output pairs with which as ``changed``)."""
    return run.outputs.select(*_IDENTITY, "step", F.lit(tag).alias("run"), F.struct(*ORDER).alias("o"))


def _grouped(rows: Any) -> Any:
    """Per input record, both runs' outputs sorted (:func:`_tagged`) and its steps: only the records whose outputs
    differ."""
    mine, theirs = F.col("run") == 0, F.col("run") == 1
    return (
        rows.groupBy(*_IDENTITY)
        .agg(
            F.sort_array(F.collect_list(F.when(mine, F.col("o")))).alias("before"),
            F.sort_array(F.collect_list(F.when(theirs, F.col("o")))).alias("after"),
            F.min(F.when(mine, F.col("step"))).alias("from_step"),
            F.min(F.when(theirs, F.col("step"))).alias("to_step"),
        )
        .where(F.col("before") != F.col("after"))
    )


def _differences(base: Any, other: Any, records: Any, decoders: tuple[bool, bool]) -> Any:
    """The differences of two tagged runs' outputs (:func:`_tagged`): both grouped per input record in one
    shuffle, the records whose sorted outputs differ compared on the executors (:data:`DIFF_SCHEMA`)."""
    inputs = records.select(
        *_IDENTITY, F.col("key").alias("input_key"), F.col("value").alias("input_value"), F.col("ts").alias("input_ts")
    )
    return _compared_frame(_grouped(base.unionByName(other)).join(inputs, on=_IDENTITY, how="left"), decoders)


def _compared_frame(grouped: Any, decoders: tuple[bool, bool]) -> Any:
    """Each differing input record's outputs compared on the executors, one row per difference."""
    json_keys, json_values = decoders

    def compare(batches: Any) -> Any:
        import pyarrow as pa

        schema = diff_arrow_schema()
        for batch in batches:
            rows = [out for row in batch.to_pylist() for out in compared_rows(row, json_keys, json_values)]
            yield pa.RecordBatch.from_pylist(rows, schema=schema)

    return grouped.mapInArrow(compare, DIFF_SCHEMA)


# -- attribution over frames -----------------------------------------------------------------------
class FrameAttribution(Attribution):
    """:class:`kjoin.diff.Attribution` over Spark frames: the same switches and charging, with each run's
    differences a frame (``produced(semantics, settings)`` gives one, or ``None`` where that combination cannot
    run) and the sets of identities joined in Spark."""

    def __init__(
        self,
        first: Semantics,
        switches: list[tuple[str, Any]],
        produced: Callable[[Semantics, Mapping[str, Any]], Any],
        kept: list[Any] | None = None,
    ) -> None:
        super().__init__(first, switches, produced)
        self.kept = kept

    def produced(self, names: frozenset[str]) -> Any:
        """The identities of the differences turning exactly ``names`` makes (a frame; ``None``: none)."""
        if not names:
            return None
        if names not in self._produced:
            self.runs += 1
            found = self.differences_of(*self._configuration(names))
            kept_identities = None if found is None else _keep(found.select(identity_column()).distinct(), self.kept)
            self._produced[names] = kept_identities
        return self._produced[names]

    def charge(self, target: Any) -> Any:
        names = [name for name, _ in self.switches]
        if len(names) == 1 and self._closure(frozenset(names)) == frozenset(names):
            # One switch, requiring no other: the second run is that switch alone, so it produces every difference.
            return target.select(
                *[c for c in DIFF_COLUMNS if c not in ("rules", "with_rules", "together")],
                _names(names).alias("rules"),
                _names([]).alias("with_rules"),
                F.lit(False).alias("together"),
            )
        # every switch turned: the target
        self._produced.setdefault(frozenset(names), target.select(identity_column()))
        wanted = target.select(identity_column()).distinct()
        charged = []
        for size in range(1, len(names) + 1):
            if self.runs >= MAX_SPARK_RUNS or wanted.isEmpty():
                break
            found = []
            for chosen in combinations(names, size):
                if self.runs >= MAX_SPARK_RUNS:
                    break
                turned = frozenset(chosen)
                closure = self._closure(turned)
                made = self.produced(closure)
                if made is None:
                    continue
                without = self.produced(closure - turned)
                if without is not None:
                    made = made.join(without, "identity", "left_anti")
                found.append(
                    made.join(wanted, "identity", "left_semi").select(
                        "identity",
                        _names(turned).alias("rules"),
                        _names(closure - turned).alias("with_rules"),
                    )
                )
            if not found:
                continue
            level = found[0]
            for more in found[1:]:
                level = level.unionByName(more)
            level = _keep(
                level.groupBy("identity").agg(
                    F.array_distinct(F.flatten(F.collect_list("rules"))).alias("rules"),
                    F.array_distinct(F.flatten(F.collect_list("with_rules"))).alias("with_rules"),
                ),
                self.kept,
            )
            charged.append(level)
            wanted = _keep(wanted.join(level, "identity", "left_anti"), self.kept)
        return _charged(target, charged, names)


def identity_column() -> Any:
    """What makes two runs' differences the same difference, as the reference engine's ``Difference.identity``:
    the input record, the change, the outputs before and after; one text (JSON), the column the attribution joins
    the runs' differences on."""
    return F.to_json(F.struct(*_IDENTITY, "change", "before", "after")).alias("identity")


def _names(names: Any) -> Any:
    return F.array(*[F.lit(n) for n in sorted(names)]).cast("array<string>")


def _charged(target: Any, charged: list[Any], names: list[str]) -> Any:
    """``target`` with the switches charged (:data:`DIFF_COLUMNS`), in switch order; ``together`` where none was."""
    order = F.array(*[F.lit(n) for n in names]).cast("array<string>")  # the switches' order, not sorted
    if charged:
        found = charged[0]
        for more in charged[1:]:
            found = found.unionByName(more)
        with_found = target.withColumn("identity", identity_column()).join(found, "identity", "left")
    else:
        with_found = target.withColumn("rules", F.lit(None).cast("array<string>")).withColumn(
            "with_rules", F.lit(None).cast("array<string>")
        )
    together = F.col("rules").isNull()
    rules = F.when(together, order).otherwise(F.filter(order, lambda n: F.array_contains(F.col("rules"), n)))
    along = F.when(together, F.array().cast("array<string>")).otherwise(
        F.filter(order, lambda n: F.array_contains(F.col("with_rules"), n) & ~F.array_contains(F.col("rules"), n))
    )
    return with_found.select(
        *[c for c in DIFF_COLUMNS if c not in ("rules", "with_rules", "together")],
        rules.alias("rules"),
        along.alias("with_rules"),
        together.alias("together"),
    )
