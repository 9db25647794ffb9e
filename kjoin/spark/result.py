"""The result of a Spark run: lazy frames of outputs and steps, and the debugging front over them.

:class:`SparkRun` holds the ordered input records and the results frame a pass computed
(:mod:`kjoin.spark.passes.plans`); everything else is read from them when asked: the explained outputs
(:mod:`kjoin.spark.debug.explain`), the summary (:mod:`kjoin.spark.debug.summary`), the co-partitioning audit
(:mod:`kjoin.spark.debug.audit`), the drill-downs (:mod:`kjoin.spark.debug.drill`), the semantics diff
(:mod:`kjoin.spark.debug.diff`). :class:`OpenedRun` is a run reopened from what :meth:`SparkRun.write_parquet`
wrote (:func:`kjoin.spark.open_run`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from pyspark import StorageLevel
from pyspark.sql import functions as F

from ..records import OutputKind
from ..scenario import Scenario
from ..semantics import Semantics
from ..trace import Trace
from .debug import drill, whatif
from .debug.audit import audit_frame
from .debug.diff import settings_of, spark_diff
from .debug.explain import explain_outputs
from .debug.index import build_index
from .debug.reconcile import Reconciliation, reconcile
from .debug.summary import summary_frame
from .debug.why import replays_sweep
from .frames import OUTPUT_COLUMNS, STEP_COLUMNS
from .io.readers import local_path
from .io.topic import SparkInputError
from .keep import kept
from .manifest import write_manifest
from .passes.task import json_text

__all__ = ["SparkRun", "OpenedRun", "Rejoin", "Written"]

_ALL_KEYS = object()


@dataclass(frozen=True)
class Rejoin:
    """How a :func:`~kjoin.spark.run_join` result joins its topics again, built with the result: what
    :meth:`SparkRun.with_arrival`, :meth:`SparkRun.diff`, :meth:`SparkRun.reconcile` and the lag what-if read.
    :func:`~kjoin.spark.run_scenarios`' results and reopened runs have none."""

    with_arguments: Callable[..., "SparkRun"]
    """The same topics joined again with other ``run_join`` arguments (``arrival=...``)."""
    under: Callable[[Semantics, Mapping[str, Any]], "SparkRun"]
    """The same topics joined again under other semantics, with settings turned (``kjoin diff --set`` paths)."""
    paired: Callable[[Semantics, Mapping[str, Any]], Any]
    """The outputs of the input records whose outputs differ from the same topics joined under other semantics and
    settings, both joins in one pass (:func:`kjoin.spark.passes.plans.paired_results`; ``None`` where that pass
    cannot run them)."""


class SparkRun:
    """The lazy result of a Spark run. Nothing is computed until an action is called on
    one of the frames (``write_parquet``, ``count``, ``show``, ``toPandas`` …)."""

    def __init__(
        self,
        records: Any,
        results: Any,
        scenarios: Mapping[int, Scenario],
        json_keys: bool,
        json_values: bool,
        method: str | None = None,
        *,
        inputs: Any = None,
        key_buckets: int = 1,
        spark_partitions: int | None = None,
        rejoin: Rejoin | None = None,
    ) -> None:
        self.records = records
        """The ordered input records: ``scenario, partition, side, key, value, ts, offset, position, _order_ts,
        _tie, _side_rank``."""
        self.method = method
        """The path that computes :attr:`results`: ``vectorised``, ``native`` or ``processors`` (what ``auto``
        chose); ``None`` for a mix (foreign-key scenarios run whole beside the others)."""
        self.results = results
        """Outputs and steps in one frame, told apart by ``row``."""
        self.scenarios = scenarios
        self._json_keys = json_keys
        self._json_values = json_values
        self.inputs = inputs
        """``run_join``: the input records before Spark orders them (``scenario, partition, side,
        key, value, ts, offset``)."""
        self.key_buckets = key_buckets
        """How many key buckets each Kafka task ran as (:mod:`kjoin.spark.passes.split`; 1: not split)."""
        self.spark_partitions = spark_partitions
        """The Spark partitions the records were placed in (``None``: Spark's default), for the why-index."""
        self.rejoin = rejoin
        """How a :func:`~kjoin.spark.run_join` result joins its topics again (:class:`Rejoin`); ``None``: it
        cannot."""
        self._why_index: Any = None
        self._fk_traces: dict[int, Trace] = {}
        self._kept: dict[Any, Any] = {}
        """Frames computed once per run (:meth:`_keep`): the results, the explained outputs, the summary, the
        audit, each lag's what-if (:meth:`lag_summary`)."""
        self.partitioner: Callable[[Any, int], int] | None = None
        """The partitioner the producers are meant to share, ``partitioner(key, partitions) -> partition``:
        what the co-partitioning audit (:meth:`partitioning_audit`) and the verdicts call a key's partition.
        ``None``: Kafka's default, murmur2 of the serialized key (:func:`kjoin.partitioner.default_partition`)."""

    @property
    def outputs(self) -> Any:
        return self.results.filter(self.results.row == "output").select(*OUTPUT_COLUMNS)

    @property
    def steps(self) -> Any:
        return self.results.filter(self.results.row == "step").select(*STEP_COLUMNS)

    def _keep(self, name: Any, build: Callable[[], Any]) -> Any:
        """``build()`` computed once per run and kept on the executors' disks (Spark's ``DISK_ONLY``:
        :func:`kjoin.spark.keep.kept`, a local checkpoint on a local master, persisted on a cluster), so that
        :attr:`explained_outputs`, :meth:`summary`, :meth:`partitioning_audit`, :meth:`write_parquet` and the
        summary explorer each read it instead of running the join again. The join's own results are kept the first
        time any of them is asked for."""
        if name not in self._kept:
            if "results" not in self._kept and name != "results":
                self.results = self._keep("results", lambda: self.results)
            self._kept[name] = kept(build(), StorageLevel.DISK_ONLY)
        return self._kept[name]

    @property
    def explained_outputs(self) -> Any:
        """:attr:`outputs` with a ``reason`` per result: ``matched`` (both sides), ``tombstone``,
        ``null-key`` (forwarded with null, KIP-962), or for a result with a null partner the
        verdict of :meth:`why` computed for all of them at once: ``partner-later``,
        ``partner-processed-later``, ``partner-deleted``, ``partner-never``,
        ``partner-other-partition``, and for windowed joins ``partner-outside-window`` or
        ``partner-expired`` (``unexplained`` if none applies). One join with the other side's
        records of each key; :meth:`why` explains one record in full. Computed once per run (kept on the
        executors' disks, as :meth:`summary` and :meth:`partitioning_audit`)."""
        return self._keep(("explained", self.partitioner), lambda: explain_outputs(self))

    def partitioning_audit(self, partitioner: Callable[[Any, int], int] | None = None) -> Any:
        """The co-partitioning audit (:mod:`kjoin.spark.debug.audit`): every record not in its key's partition
        (``partitioner(key, partitions)``, default :attr:`partitioner`, else Kafka's murmur2 of the serialized
        key), and every null-key record a result's verdict names, with the results each caused: ``nulls``
        (``partner-other-partition``, ``partner-null-key``), ``stale_joins`` (``joined-stale``: a lookup found an
        older value) and ``missed_deletes`` (``joined-deleted``: it found a value a tombstone had deleted). Columns
        :data:`kjoin.spark.debug.audit.AUDIT_COLUMNS`; a foreign-key scenario's records are left out (a subscription
        reaches its foreign key's task wherever the left row is)."""
        if partitioner is not None and partitioner is not self.partitioner:
            previous, self.partitioner = self.partitioner, partitioner
            try:
                return self.partitioning_audit()
            finally:
                self.partitioner = previous
        ids = sorted(i for i, s in self.scenarios.items() if s.join != "fk")
        partitions = self.scenarios[ids[0]].partitions if ids else 1
        records = self.records.filter(F.col("scenario").isin(ids))
        return self._keep(
            ("audit", self.partitioner),
            lambda: audit_frame(records, self.explained_outputs, partitions, self._json_keys, self.partitioner),
        )

    def summary(self) -> Any:
        """Per scenario, partition and key (the partition the records are in), two kinds of columns.

        Results, from :attr:`explained_outputs`: ``null-results`` (those with a null partner: the column to
        rank keys by), then one column per reason, which together count every result: ``matched``,
        ``tombstones``, ``null-key`` (a null-key record forwarded with null, KIP-962) and the verdicts
        (``joined-stale``, ``partner-later`` ...). Every total equals :attr:`explained_outputs`' count of that
        reason.

        Records, from :attr:`steps` and the co-partitioning audit: ``left-<reason>`` and ``right-<reason>``,
        the records of that side per reason they produced no result of their own (``left-null-key``: orders
        with a null key, ``right-null-key``: customers), and ``misrouted``, the records not in their key's
        partition (:meth:`partitioning_audit`). Only the columns that can be non-zero for the join at hand (of
        the first scenario's join, variant and options). Computed once per run."""
        return self._keep(("summary", self.partitioner), lambda: summary_frame(self))

    # -- what if a side lagged -------------------------------------------------------------
    def with_arrival(self, arrival: Mapping[str, Any] | None) -> "SparkRun":
        """The same topics joined again with a lagging side or partition (``run_join``'s ``arrival=``,
        :mod:`kjoin.spark.debug.whatif`), e.g. ``{"right": {"lag_ms": 5000}}`` or ``{"right": {"partitions": {2:
        5000}}}``. A :func:`run_join` result only."""
        if self.rejoin is None:
            raise SparkInputError("with_arrival: only a run_join result can be joined again (it keeps its topics)")
        return self.rejoin.with_arguments(arrival=arrival)

    def lag_summary(self, lag_ms: int, side: str = "right", partition: int | None = None) -> "whatif.LagSummary":
        """How many null results an arrival lag of ``lag_ms`` of ``side`` (or of its ``partition``) would explain: a
        :class:`~kjoin.spark.debug.whatif.LagSummary` that says it in a sentence (``print`` it: the lag as a
        duration, the totals per partition, the keys that explain most), with ``null_results`` under the lag,
        ``explained`` (those whose record found its partner without it) and the per-key ``frame``
        (:func:`kjoin.spark.debug.whatif.lag_nulls`). One more Spark run, kept for the run."""
        arrival = whatif.arrival_of(lag_ms, side, partition)
        frame = self._keep(("lag", lag_ms, side, partition), lambda: whatif.lag_nulls(self, self.with_arrival(arrival)))
        return whatif.lag_summary(frame, lag_ms, side, partition)

    def smallest_lag(self, records: Any, side: str = "right", partition: int | None = None) -> "whatif.LagSearch":
        """The smallest lag of ``side`` (or of its ``partition``) under which every one of ``records`` (``(partition,
        offset)`` of the other side's records, e.g. the orders that came out with a null customer in the real
        application) comes out with a null partner (:func:`kjoin.spark.debug.whatif.smallest_lag`): a
        :class:`~kjoin.spark.debug.whatif.LagSearch` with the lag, its ``arrival=`` and what every lag tried
        explained. A few Spark runs (halving over the lags at which an outcome can change)."""
        return whatif.smallest_lag(self, records, side, partition)

    def reconcile(
        self,
        actual: Any,
        arrival: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
        semantics: str | Semantics | None = None,
    ) -> "Reconciliation":
        """Match every output the application really wrote (``actual``: its output topic read with ``from_kafka`` or
        ``from_files``, or a DataFrame with ``key, value, ts``) with kjoin's prediction, and classify what differs
        (:mod:`kjoin.spark.debug.reconcile`): ``arrival`` (explained by the same topics joined with ``arrival=``,
        e.g. from :meth:`smallest_lag`), ``configuration`` (by the run's scenario with ``options=`` changed, e.g.
        ``{"grace_ms": 100}`` or ``{"right": {"versioned": True}}``), ``version`` (under ``semantics=``), each
        difference charged to the settings and rules that make it by :meth:`diff`'s attribution
        (``configuration+version`` when it takes both), ``unseen-records`` (a key kjoin's topics never had) or
        ``unexplained``. A :class:`~kjoin.spark.debug.reconcile.Reconciliation`: ``matched``, ``counts`` and
        ``examples`` per category, ``switches`` (outputs per setting or rule), the ``differences`` frame;
        ``explained`` when nothing is unexplained."""
        return reconcile(self, actual, arrival, options, semantics)

    # -- one key, one record ---------------------------------------------------------------
    def why_index(self, path: str | None = None) -> Any:
        """Build (once) the index that :meth:`why` and ``trace(partition, key=...)`` read
        (:mod:`kjoin.spark.debug.index`): one Spark pass over the run's records, written as
        Parquet under ``path`` (default: a temporary directory removed when Python exits; on a
        cluster give a path every executor can read). Later calls read only the key's rows."""
        if self._why_index is None or (path is not None and self._why_index.path != path.rstrip("/")):
            releases = None
            if any(replays_sweep(config) for config in self.scenarios.values()):
                releases = self.outputs.filter(F.col("kind") == OutputKind.WINDOW_CLOSED.value)
            self._why_index = build_index(self.records, path, self.spark_partitions, releases)
        return self._why_index

    def decode_key(self, key: Any) -> Any:
        """A key as the frames carry it (JSON text for :func:`run_scenarios`) back to the Python key
        that :meth:`trace` and :meth:`why` take."""
        return self._decoders()[0](key)

    def _key_column_value(self, key: Any) -> Any:
        return json_text(key) if self._json_keys else key

    def _decoders(self) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
        keys, values = self._json_keys, self._json_values
        return (
            lambda k: json.loads(k) if keys and k is not None else k,
            lambda v: json.loads(v) if values and v is not None else v,
        )

    def why(
        self,
        partition: int,
        offset: int,
        side: str = "left",
        scenario: int = 0,
        joiner: Callable[[Any, Any], Any] | None = None,
    ) -> Any:
        """Why did the record at ``side``/``partition``/``offset`` come out as it did? A
        :class:`kjoin.spark.debug.why.Diagnosis`: ``verdict`` (one of
        :data:`kjoin.spark.debug.why.VERDICTS`), the plain-language ``text``, the ``partners`` (the
        other side's records of the key: side, partition, offset, ts) and the key's drill-down
        ``trace``. Looks the key up across all partitions and runs only the key's records. The
        first call (of ``why`` or ``trace(partition, key=...)``) builds the run's
        :meth:`why_index` unless :meth:`write_parquet` did (``why_index=True``); every call after
        it reads only the key's rows.

        A foreign-key scenario runs whole in one Spark group anyway, so its diagnosis reads the
        whole scenario's trace (collected on the first call and kept; :mod:`kjoin.spark.debug.fk`):
        a left record's verdict follows the messages it set off, a right record's says which left
        keys it answered."""
        return drill.why(self, partition, offset, side, scenario, joiner)

    def diff(
        self,
        semantics: str | Semantics | None = None,
        *,
        window: Any = None,
        arrival: Any = None,
        set: Mapping[str, Any] | None = None,  # named as kjoin diff's --set
        **settings: Any,
    ) -> Any:
        """``kjoin diff`` on Spark: every output that changes when the same topics are joined under ``semantics``
        (default: this run's) and with other settings: ``window={"grace_ms": 500}``, ``grace_ms=200``,
        ``right_versioned=True``, ``right_history_retention_ms=...``, ``left_versioned``, ``versioned_mode``, or
        ``set={"window.grace_ms": 500}`` with ``kjoin diff --set`` paths. Each difference comes with the input
        record that emitted it and the switches that change it (the rules of :mod:`kjoin.semantics` that differ,
        the settings), charged as ``kjoin diff`` charges them. A :class:`kjoin.spark.debug.diff.SparkDiff`: the
        differences as a frame (``write_parquet``), counts per rule, key and partition, examples, and ``why`` of
        both runs. A :func:`run_join` result only; one switch costs one more join of the topics, several cost one
        more per switch (:mod:`kjoin.spark.debug.diff`)."""
        return spark_diff(self, semantics, settings_of(window=window, arrival=arrival, set=set, **settings))

    def write_parquet(self, path: str, mode: str = "overwrite", why_index: bool = False) -> None:
        """Write ``outputs/``, ``steps/`` and ``summary/`` under ``path`` (one pass each); a
        relative local path is relative to Python's working directory. ``why_index=True`` also
        builds the run's :meth:`why_index` in ``why-index/``, so that every :meth:`why` and key
        drill-down after it, the first included, only reads its key's rows. ``run.json`` says what ran (the
        scenarios, the method, the index's final clock marks), so that :func:`open_run` reopens the run in
        another session without computing anything again."""
        path = local_path(path).rstrip("/")
        self.explained_outputs.write.mode(mode).parquet(f"{path}/outputs")
        self.steps.write.mode(mode).parquet(f"{path}/steps")
        self.summary().write.mode(mode).parquet(f"{path}/summary")
        index = self.why_index(f"{path}/why-index") if why_index else None
        write_manifest(self, path, index)

    def trace(
        self, partition: int, scenario: int = 0, joiner: Callable[[Any, Any], Any] | None = None, key: Any = _ALL_KEYS
    ) -> Trace:
        """Drill down: collect one Kafka task's input records (only those) and run them
        through the reference engine. Step ``i`` of the trace is the task's ``i``-th record;
        for topics that is the ``step`` of the Spark frames. The scenario keeps all its
        options (versioned tables, grace, ``versioned_mode`` …). A foreign-key scenario
        crosses tasks, so its trace is the whole scenario's (``partition`` is only checked; see
        :mod:`kjoin.spark.passes.fk_task`).

        ``key=``: the drill-down of one key (:class:`kjoin.spark.debug.why.KeyTrace`): only that
        key's records run, with the stream time the task's other records give them (computed
        in Spark), and every state restricted to the key. For a foreign-key join, the left key
        ``key`` of ``partition`` (:class:`kjoin.spark.debug.fk.FkKeyTrace`): the whole scenario
        runs (as it does on Spark) and its trace is restricted to the key's left records, the
        right records of its foreign keys and the messages about it."""
        config = drill.scenario_of(self, scenario)
        drill.check_partition(partition, config.partitions)
        if config.join == "fk" or config.tasks_share_time:  # run whole on Spark: the whole trace
            if key is _ALL_KEYS:
                return drill.fk_full_trace(self, scenario, joiner)
            if config.tasks_share_time:
                raise drill.shares_time_error("trace(key=...)", config)
            return drill.fk_key_trace(self, partition, key, scenario, joiner)
        if key is not _ALL_KEYS:
            return drill.key_trace(self, partition, key, scenario, joiner)
        return drill.task_trace(self, partition, scenario, joiner)


@dataclass(frozen=True)
class Written:
    """What :meth:`SparkRun.write_parquet` wrote, as :func:`~kjoin.spark.open_run` reads it back: the frames an
    :class:`OpenedRun` answers from instead of computing them."""

    path: str
    """The directory the run was written to (absolute, without a trailing slash)."""
    explained_outputs: Any
    """The outputs with their reasons (``outputs/``)."""
    steps: Any
    """Every step (``steps/``)."""
    summary: Any
    """The counts by reason (``summary/``)."""
    why_index: Any = None
    """The why-index (:class:`kjoin.spark.debug.index.WhyIndex`); ``None``: written without ``why_index=True``."""


class OpenedRun(SparkRun):
    """A run reopened by :func:`open_run`: the frames are what :meth:`SparkRun.write_parquet` wrote
    (:class:`Written`); ``records`` are the index's records in processing order, ``None`` without an index."""

    def __init__(
        self,
        records: Any,
        scenarios: Mapping[int, Scenario],
        json_keys: bool,
        json_values: bool,
        method: str | None,
        written: Written,
        *,
        spark_partitions: int | None = None,
        run_join: Callable[..., SparkRun] | None = None,
    ) -> None:
        super().__init__(records, None, scenarios, json_keys, json_values, method, spark_partitions=spark_partitions)
        self.written = written
        self._run_join = run_join
        """:func:`~kjoin.spark.run_join`, which :meth:`joined_again` joins the index's records with."""
        self.path = written.path
        """The directory the run was reopened from."""
        self._why_index = written.why_index
        self._kept.update(
            {
                "results": None,
                ("explained", None): written.explained_outputs,
                ("summary", None): written.summary,
                "steps": written.steps,
            }
        )

    @property
    def outputs(self) -> Any:
        return self._kept[("explained", None)].select(*OUTPUT_COLUMNS)

    @property
    def steps(self) -> Any:
        return self._kept["steps"]

    def _refuse(self, what: str) -> SparkInputError:
        return SparkInputError(
            f"{what}: this run was reopened from {self.path}, which holds its outputs, steps and summary but not its "
            "input topics; rerun the join for it"
        )

    @property
    def explained_outputs(self) -> Any:
        if self.partitioner is not None:
            raise self._refuse("explained_outputs with a partitioner of your own")
        return self._kept[("explained", None)]

    def summary(self) -> Any:
        if self.partitioner is not None:
            raise self._refuse("summary() with a partitioner of your own")
        return self._kept[("summary", None)]

    def partitioning_audit(self, partitioner: Callable[[Any, int], int] | None = None) -> Any:
        if self.records is None:
            raise self._refuse("partitioning_audit() (written without why_index=True)")
        return super().partitioning_audit(partitioner)

    def diff(self, *args: Any, **kwargs: Any) -> Any:
        """:meth:`SparkRun.diff` of the written run: its input records, which the why-index holds (written with
        ``why_index=True``), joined again as the run joined them, then diffed (:meth:`joined_again`)."""
        return self.joined_again().diff(*args, **kwargs)

    def joined_again(self) -> SparkRun:
        """The run's input topics, read back from its why-index, joined again with :func:`~kjoin.spark.run_join` and
        the run's scenario (its semantics, window and options): the same outputs, and a run that can be joined again
        (``diff``, ``with_arrival``, ``reconcile`` with what-ifs)."""
        from .io.topic import Topic

        if len(self.scenarios) != 1:
            raise self._refuse("diff (run_scenarios' runs: diff each scenario with kjoin.diff)")
        if self.records is None or self._run_join is None:
            raise self._refuse("diff (written without why_index=True, which keeps the input records)")
        config = self.scenarios[0]
        document = config.to_dict()
        fixed = ("join", "variant", "semantics", "window", "events", "partitions", "name", "description")
        options = {name: value for name, value in document.items() if name not in fixed} or None
        topics = [
            Topic(
                self.records.where(F.col("side") == side).select("key", "value", "ts", "partition", "offset"),
                config.partitions,
                json_values=self._json_values,
                source=f"{self.path} ({side} records)",
            )
            for side in ("left", "right")
        ]
        again = self._run_join(
            *topics, config.join, config.variant, semantics=str(config.semantics), window=document.get("window"),
            options=options, spark_partitions=self.spark_partitions,
        )  # fmt: skip
        again.partitioner = self.partitioner
        return again

    def why_index(self, path: str | None = None) -> Any:
        if self._why_index is None:
            raise SparkInputError(
                f"why and key drill-downs read the run's index, and {self.path} has none: write the run with "
                "write_parquet(path, why_index=True)"
            )
        return self._why_index
