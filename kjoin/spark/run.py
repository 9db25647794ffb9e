"""Run a join on Spark: topics (or scenarios) in, lazy DataFrames of outputs and steps out.

How it works:

* Both topics are tagged with their side and unioned. A record without a partition gets
  Kafka's default partition (murmur2 of the serialized key; a null key goes to 0), a record
  without an offset gets its rank within its partition in input order.
* Processing order within a Kafka task is Kafka's: the task picks, among its two input
  partitions, the one whose head record has the lowest timestamp (ties: left first). That
  merge equals a sort by ``(running max ts of the record's own partition up to it, side,
  offset)``.
* The union is repartitioned by ``(scenario, partition)``, so one Spark task runs whole Kafka
  tasks, and sorted within Spark partitions by input partition and offset; the per-task
  passes (kjoin's own processors, :mod:`kjoin.spark.task`, or the vectorised passes) merge
  the two input partitions into processing order themselves (:mod:`kjoin.spark.merge`).
  The ``records`` frame the debugging tools read, and the native plan, compute the same
  order with a window function and a second sort.
* Topics whose partition counts differ are refused, as Kafka Streams refuses to join
  topics that are not co-partitioned.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping

from ..fates import Reason
from ..joins import JoinWindows
from ..records import OutputKind, Record, Side
from ..scenario import JOINS, Event, Scenario
from ..semantics import Semantics, parse_semantics
from ..trace import Trace
from .task import group_by_task, json_text, result_schema, task_function
from .topic import KEY_TYPES, VALUE_TYPES, SparkInputError, Topic

__all__ = ["run_join", "run_scenarios", "open_run", "SparkRun", "OUTPUT_COLUMNS", "STEP_COLUMNS"]

OUTPUT_COLUMNS = [
    "scenario",
    "partition",
    "step",
    "side",
    "offset",
    "key",
    "left",
    "right",
    "value",
    "ts",
    "tombstone",
    "kind",
    "origin_step",
]
"""Columns of :attr:`SparkRun.outputs`: ``step``/``side``/``offset`` name the input record
whose processing emitted the output; ``origin_step`` the record whose value it carries."""
STEP_COLUMNS = ["scenario", "partition", "step", "side", "offset", "key", "ts", "fate", "reason", "until_ms"]
"""Columns of :attr:`SparkRun.steps`: every input record that did not join (dropped,
buffered, stored, no match), with its reason."""


_ALL_KEYS = object()


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
    ) -> None:
        self.records = records
        self.method = method
        """The path that computes :attr:`results`: ``vectorised``, ``native`` or ``processors`` (what ``auto``
        chose); ``None`` for a mix (foreign-key scenarios run whole beside the others)."""
        """The ordered input records: ``scenario, partition, side, key, value, ts, offset, position, _order_ts,
        _side_rank``."""
        self.results = results
        """Outputs and steps in one frame, told apart by ``row``."""
        self.scenarios = scenarios
        self._json_keys = json_keys
        self._json_values = json_values
        self.inputs = None
        """``run_join``: the input records before Spark orders them (``scenario, partition, side,
        key, value, ts, offset``)."""
        self._why_index: Any = None
        self._spark_partitions: int | None = None
        self._fk_traces: dict[int, Trace] = {}
        self._rerun: Callable[[Semantics], "SparkRun"] | None = None
        """``run_join``: the same topics joined again under other semantics (for :meth:`diff`)."""
        self._kept: dict[Any, Any] = {}
        """Frames computed once per run (:meth:`_keep`): the results, the explained outputs, the summary, the
        audit."""
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
        """``build()`` computed once per run: the frame is persisted on the executors' disks (Spark's
        ``DISK_ONLY``, on a cluster too), so that :attr:`explained_outputs`, :meth:`summary`,
        :meth:`partitioning_audit`, :meth:`write_parquet` and the summary explorer each read it instead of
        running the join again. The join's own results are kept the first time any of them is asked for."""
        if name not in self._kept:
            from pyspark import StorageLevel

            if "results" not in self._kept and name != "results":
                self.results = self._keep("results", lambda: self.results)
            self._kept[name] = build().persist(StorageLevel.DISK_ONLY)
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
        return self._keep(("explained", self.partitioner), lambda: _explain_outputs(self))

    def partitioning_audit(self, partitioner: Callable[[Any, int], int] | None = None) -> Any:
        """The co-partitioning audit (:mod:`kjoin.spark.audit`): every record not in its key's partition
        (``partitioner(key, partitions)``, default :attr:`partitioner`, else Kafka's murmur2 of the serialized
        key), and every null-key record a result's verdict names, with the results each caused: ``nulls``
        (``partner-other-partition``, ``partner-null-key``), ``stale_joins`` (``joined-stale``: a lookup found an
        older value) and ``missed_deletes`` (``joined-deleted``: it found a value a tombstone had deleted). Columns
        :data:`kjoin.spark.audit.AUDIT_COLUMNS`; a foreign-key scenario's records are left out (a subscription
        reaches its foreign key's task wherever the left row is)."""
        from pyspark.sql import functions as F

        from .audit import audit_frame

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
        return self._keep(("summary", self.partitioner), self._summary)

    def _summary(self) -> Any:
        from pyspark.sql import functions as F

        config = self.scenarios[min(self.scenarios)] if self.scenarios else None
        explained = self.explained_outputs.select(
            F.lit("output").alias("row"), "scenario", "partition", "side", "key", "kind", "reason"
        )
        steps = self.steps.select(
            F.lit("step").alias("row"),
            "scenario",
            "partition",
            "side",
            "key",
            F.lit(None).cast("string").alias("kind"),
            "reason",
        )
        audit = self.partitioning_audit() if config is not None and config.join != "fk" else None
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
            for name in _result_reasons(config)
        ]
        counts += [
            count(step & (reason == name), name)
            if which is None
            else count(step & (side == which) & (reason == name), f"{which}-{name}")
            for which, name in _step_columns(config)
        ]
        if audit is not None:
            counts.append(count(F.col("row") == "misrouted", "misrouted"))
        return explained.union(steps).groupBy("scenario", "partition", "key").agg(*counts)

    # -- one key, one record ---------------------------------------------------------------
    def why_index(self, path: str | None = None) -> Any:
        """Build (once) the index that :meth:`why` and ``trace(partition, key=...)`` read
        (:mod:`kjoin.spark.why_index`): one Spark pass over the run's records, written as
        Parquet under ``path`` (default: a temporary directory removed when Python exits; on a
        cluster give a path every executor can read). Later calls read only the key's rows."""
        from pyspark.sql import functions as F

        from .debug import replays_sweep
        from .why_index import build_index

        if self._why_index is None or (path is not None and self._why_index.path != path.rstrip("/")):
            releases = None
            if any(replays_sweep(config) for config in self.scenarios.values()):
                releases = self.outputs.filter(F.col("kind") == OutputKind.WINDOW_CLOSED.value)
            self._why_index = build_index(self.records, path, self._spark_partitions, releases)
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

    def _placed(
        self, scenario: int, partition: int, key: Any, rows: list | None = None
    ) -> tuple[list, dict[int, frozenset[int]]]:
        """The key's records and the clock records of its task, in processing order, and the
        steps at which the task's run swept the key's held results (step -> their origin steps)."""
        index = self.why_index()
        stored = self._key_column_value(key)
        if rows is None:
            rows = index.key_rows(scenario, stored)
        mine = [r for r in rows if r["partition"] == partition]
        swept = index.key_releases(scenario, partition, stored)
        releases: dict[int, set[int]] = {}
        for release in swept:
            releases.setdefault(release["step"], set()).add(release["origin_step"])
        placed = index.placed(scenario, partition, key, mine, *self._decoders(), releases=swept)
        return placed, {step: frozenset(origins) for step, origins in releases.items()}

    def _key_trace(
        self,
        partition: int,
        key: Any,
        scenario: int = 0,
        joiner: Callable[[Any, Any], Any] | None = None,
        rows: list | None = None,
    ) -> Any:
        from ..joins import default_joiner
        from . import debug

        if key is None:
            raise SparkInputError(
                "key=None: records with a null key are never joined or stored; "
                "look them up with why(partition=..., offset=...)"
            )
        if rows is None:
            rows = self.why_index().key_rows(scenario, self._key_column_value(key))
        if not any(r["partition"] == partition for r in rows):
            where = sorted({(r["partition"], r["side"]) for r in rows})
            found = (
                "its records are in "
                + ", ".join(f"partition {p} ({side})" for p, side in where)
                + f"; ask trace(partition={where[0][0]}, key={key!r})"
                if where
                else f"neither topic has a record with key {key!r} (of type {type(key).__name__}) in any partition"
            )
            raise SparkInputError(
                f"trace(partition={partition}, key={key!r}): partition {partition} has no record with this key; {found}"
            )
        placed, releases = self._placed(scenario, partition, key, rows)
        return debug.key_trace(self.scenarios[scenario], partition, key, placed, joiner or default_joiner, releases)

    def why(
        self,
        partition: int,
        offset: int,
        side: str = "left",
        scenario: int = 0,
        joiner: Callable[[Any, Any], Any] | None = None,
    ) -> Any:
        """Why did the record at ``side``/``partition``/``offset`` come out as it did? A
        :class:`kjoin.spark.debug.Diagnosis`: ``verdict`` (one of
        :data:`kjoin.spark.debug.VERDICTS`), the plain-language ``text``, the ``partners`` (the
        other side's records of the key: side, partition, offset, ts) and the key's drill-down
        ``trace``. Looks the key up across all partitions and runs only the key's records. The
        first call (of ``why`` or ``trace(partition, key=...)``) builds the run's
        :meth:`why_index` unless :meth:`write_parquet` did (``why_index=True``); every call after
        it reads only the key's rows.

        A foreign-key scenario runs whole in one Spark group anyway, so its diagnosis reads the
        whole scenario's trace (collected on the first call and kept; :mod:`kjoin.spark.debug_fk`):
        a left record's verdict follows the messages it set off, a right record's says which left
        keys it answered."""
        from ..joins import default_joiner
        from . import debug

        if side not in ("left", "right"):
            raise SparkInputError(f"side={side!r}: expected 'left' or 'right'")
        if scenario not in self.scenarios:
            raise SparkInputError(
                f"scenario={scenario!r}: this run has scenarios {', '.join(map(str, sorted(self.scenarios)))}"
            )
        config = self.scenarios[scenario]
        _check_partition(partition, config.partitions)
        _check_number("offset", offset)
        if config.join == "fk":
            return self._why_fk(partition, offset, side, scenario, joiner)
        index = self.why_index()
        row = index.record_at(scenario, partition, side, offset)
        if row is None:
            raise SparkInputError(f"why: there is no {side} record at partition {partition}, offset {offset}")
        decode_key, decode_value = self._decoders()
        key = decode_key(row["key"])
        record = Record(Side(side), key, decode_value(row["value"]), row["ts"], partition, offset)
        if key is None:
            return debug.diagnose(record, config, None, (), ())
        from .audit import partition_of

        other = "right" if side == "left" else "left"
        rows = index.key_rows(scenario, row["key"])
        trace = self._key_trace(partition, key, scenario, joiner or default_joiner, rows)
        home = partition_of(key, config.partitions, self.partitioner)
        same, elsewhere = [], []
        for p in sorted((r for r in rows if r["side"] == other), key=lambda r: (r["partition"], r["offset"])):
            here = p["partition"] == partition
            partner = debug.Partner(
                other,
                p["partition"],
                p["offset"],
                p["ts"],
                decode_value(p["value"]),
                p["step"] if here else None,
                home,
            )
            (same if here else elsewhere).append(partner)

        def null_key_partner() -> Any:
            word = key if isinstance(key, str) else json.dumps(key)
            found = index.null_key_naming(scenario, other, word, _KEY_TOKENS)
            if found is None:
                return None
            value = decode_value(found["value"])
            return debug.Partner(other, found["partition"], found["offset"], found["ts"], value, found["step"])

        def find_blocker(partner: Any, ts: int) -> Any:
            found = index.highest_ahead(scenario, partner.partition, partner.side, partner.offset, ts)
            if found is None:
                return None
            return debug.Partner(
                found["side"],
                found["partition"],
                found["offset"],
                found["ts"],
                decode_value(found["value"]),
                found["step"],
                partition_of(decode_key(found["key"]), config.partitions, self.partitioner),
            )

        return debug.diagnose(record, config, trace, elsewhere, same, home, null_key_partner, find_blocker)

    def _fk_full_trace(self, scenario: int, joiner: Callable[[Any, Any], Any] | None) -> Trace:
        """A foreign-key scenario's whole trace (kept for later calls with the default joiner)."""
        from .fk_task import fk_trace

        if joiner is not None:
            return fk_trace(self.records, scenario, self.scenarios[scenario], joiner)
        if scenario not in self._fk_traces:
            self._fk_traces[scenario] = fk_trace(self.records, scenario, self.scenarios[scenario], None)
        return self._fk_traces[scenario]

    def _why_fk(
        self, partition: int, offset: int, side: str, scenario: int, joiner: Callable[[Any, Any], Any] | None
    ) -> Any:
        """:meth:`why` of a foreign-key join: read off the whole scenario's trace (:mod:`kjoin.spark.debug_fk`)."""
        from . import debug_fk

        full = self._fk_full_trace(scenario, joiner)
        step = debug_fk.find_input_step(full, side, partition, offset)
        if step is None:
            raise SparkInputError(f"why: there is no {side} record at partition {partition}, offset {offset}")
        key = step.record.key
        if key is None:
            drill = None
        elif side == "left":
            drill = debug_fk.fk_key_trace(full, key, partition)
        else:
            drill = full  # a right record answers every left key that subscribes to it: the whole scenario
        return debug_fk.diagnose_fk(full, step, drill)

    def diff(self, semantics: str | Semantics | None = None) -> Any:
        """``kjoin diff`` on Spark: every output that changes when the same topics are joined under
        ``semantics`` (default: the latest), each with the input record that emitted it and the rules of
        :mod:`kjoin.semantics` that change it (a :class:`kjoin.diff.Diff`; :mod:`kjoin.spark.diff`).
        A :func:`run_join` result only; each rule switched costs one more Spark job."""
        from .diff import spark_diff

        return spark_diff(self, semantics)

    def write_parquet(self, path: str, mode: str = "overwrite", why_index: bool = False) -> None:
        """Write ``outputs/``, ``steps/`` and ``summary/`` under ``path`` (one pass each); a
        relative local path is relative to Python's working directory. ``why_index=True`` also
        builds the run's :meth:`why_index` in ``why-index/``, so that every :meth:`why` and key
        drill-down after it, the first included, only reads its key's rows. ``run.json`` says what ran (the
        scenarios, the method, the index's final clock marks), so that :func:`open_run` reopens the run in
        another session without computing anything again."""
        from .readers import local_path

        path = local_path(path).rstrip("/")
        self.explained_outputs.write.mode(mode).parquet(f"{path}/outputs")
        self.steps.write.mode(mode).parquet(f"{path}/steps")
        self.summary().write.mode(mode).parquet(f"{path}/summary")
        index = self.why_index(f"{path}/why-index") if why_index else None
        _write_manifest(self, path, index)

    def trace(
        self, partition: int, scenario: int = 0, joiner: Callable[[Any, Any], Any] | None = None, key: Any = _ALL_KEYS
    ) -> Trace:
        """Drill down: collect one Kafka task's input records (only those) and run them
        through the reference engine. Step ``i`` of the trace is the task's ``i``-th record;
        for topics that is the ``step`` of the Spark frames. The scenario keeps all its
        options (versioned tables, grace, ``versioned_mode`` …). A foreign-key scenario
        crosses tasks, so its trace is the whole scenario's (``partition`` is only checked; see
        :mod:`kjoin.spark.fk_task`).

        ``key=``: the drill-down of one key (:class:`kjoin.spark.debug.KeyTrace`): only that
        key's records run, with the stream time the task's other records give them (computed
        in Spark), and every state restricted to the key. For a foreign-key join, the left key
        ``key`` of ``partition`` (:class:`kjoin.spark.debug_fk.FkKeyTrace`): the whole scenario
        runs (as it does on Spark) and its trace is restricted to the key's left records, the
        right records of its foreign keys and the messages about it."""
        from pyspark.sql import functions as F

        from ..engine import run
        from ..joins import default_joiner

        if scenario not in self.scenarios:
            raise SparkInputError(
                f"scenario={scenario!r}: this run has scenarios {', '.join(map(str, sorted(self.scenarios)))}"
            )
        config = self.scenarios[scenario]
        _check_partition(partition, config.partitions)
        if config.join == "fk":
            if key is _ALL_KEYS:
                return self._fk_full_trace(scenario, joiner)
            if key is None:
                raise SparkInputError(
                    "key=None: a left record with a null key is never stored or joined; "
                    "look it up with why(partition=..., offset=...)"
                )
            from .debug_fk import fk_key_trace, left_partitions

            full = self._fk_full_trace(scenario, joiner)
            found = left_partitions(full, key)
            if partition not in found:
                where = (
                    f"its left records are in partition(s) {', '.join(map(str, found))}"
                    if found
                    else "no partition has one"
                )
                raise SparkInputError(
                    f"key={key!r}: a foreign-key drill-down follows a left key's records in its partition, and "
                    f"partition {partition} has no left record with this key ({where}); for a foreign key's right "
                    "records, ask why(partition=..., offset=..., side='right')"
                )
            return fk_key_trace(full, key, partition)
        if key is not _ALL_KEYS:
            return self._key_trace(partition, key, scenario, joiner)
        rows = (
            self.records.filter((F.col("scenario") == scenario) & (F.col("partition") == partition))
            .orderBy("_order_ts", "_side_rank", "offset")
            .select("side", "key", "value", "ts", "partition", "offset")
            .collect()
        )
        events = []
        for row in rows:
            key, value = row["key"], row["value"]
            if self._json_keys and key is not None:
                key = json.loads(key)
            if self._json_values and value is not None:
                value = json.loads(value)
            events.append(Event(Side(row["side"]), key, value, row["ts"], row["partition"], row["offset"]))
        # Every option of the scenario (versioned tables, history retention, grace, versioned_mode …),
        # only this task's records.
        single = replace(config, events=tuple(events))
        return run(single, joiner=joiner or default_joiner)


MANIFEST = "run.json"
"""What :meth:`SparkRun.write_parquet` writes beside the frames, for :func:`open_run`."""


def _write_manifest(run: "SparkRun", path: str, index: Any) -> None:
    from .readers import local_path

    manifest = {
        "kjoin_run": 1,
        "scenarios": {str(i): s.to_dict() for i, s in run.scenarios.items()},
        "json_keys": run._json_keys,
        "json_values": run._json_values,
        "method": run.method,
        "spark_partitions": run._spark_partitions,
        "partitioner": None if run.partitioner is None else getattr(run.partitioner, "__name__", "custom"),
        "why_index": None
        if index is None
        else {
            "releases": index.releases is not None,
            "final_marks": [
                [scenario, partition, klass, ts, neg]
                for (scenario, partition), marks in sorted(index.final_marks.items())
                for klass, (ts, neg) in sorted(marks.items())
            ],
        },
    }
    text = json.dumps(manifest, indent=1, default=str)
    spark = run.records.sparkSession
    target = local_path(f"{path}/{MANIFEST}")
    if "://" in target and not target.startswith("file:"):
        spark.createDataFrame([(text,)], "text string").coalesce(1).write.mode("overwrite").text(target)
    else:
        with open(target.removeprefix("file:"), "w") as file:
            file.write(text)


def open_run(where: Any, path: str | None = None, *, spark: Any = None) -> "SparkRun":
    """Reopen a run that :meth:`SparkRun.write_parquet` wrote under a path (``why_index=True`` for :meth:`why`
    and the key drill-downs): ``open_run("out/")`` (in the active Spark session, or a new
    :func:`kjoin.spark.local_session`), ``open_run("out/", spark=session)`` or ``open_run(session, "out/")``.
    Its ``outputs`` (the explained ones), ``steps``, ``summary()``, the index and ``why`` read what was
    written; nothing is computed again. ``trace(partition=...)`` reads the task's
    records from the index. Written with a partitioner of your own? Set ``run.partitioner`` again (a function is
    not written down)."""
    import os

    from pyspark.sql import functions as F

    from .readers import local_path
    from .why_index import WhyIndex

    if hasattr(where, "read") and not isinstance(where, str):
        spark, where = where, path
    elif path is not None:
        raise SparkInputError(f"open_run({where!r}, {path!r}): pass one path, e.g. open_run('out/'), and spark=...")
    if not isinstance(where, (str, os.PathLike)):
        raise SparkInputError(f"open_run: expected the path write_parquet wrote to, got {where!r}")
    if spark is None:
        from pyspark.sql import SparkSession

        from .session import local_session

        spark = SparkSession.getActiveSession() or local_session()
    path = local_path(str(where)).rstrip("/")
    local = path.removeprefix("file:")
    manifest_path = f"{local}/{MANIFEST}"
    if "://" in path and not path.startswith("file:"):  # a cluster's file system: the manifest as a text file
        try:
            manifest = json.loads(spark.read.text(manifest_path, wholetext=True).first()[0])
        except Exception as error:
            raise SparkInputError(f"open_run: cannot read {manifest_path}: {error}") from None
    elif not os.path.exists(manifest_path):
        found = sorted(os.listdir(local)) if os.path.isdir(local) else None
        raise SparkInputError(
            f"open_run: {path} holds no {MANIFEST}"
            + (f" (it holds {', '.join(found) or 'nothing'})" if found is not None else " (no such directory)")
            + "; write the run with result.write_parquet(path, why_index=True) first"
        )
    else:
        with open(manifest_path) as file:
            manifest = json.load(file)
    scenarios = {int(i): Scenario.from_dict(d) for i, d in manifest["scenarios"].items()}
    outputs = spark.read.parquet(f"{path}/outputs")
    steps = spark.read.parquet(f"{path}/steps")
    summary = spark.read.parquet(f"{path}/summary")
    index_info = manifest.get("why_index")
    index = None
    records = None
    if index_info is not None:
        by_offset = spark.read.parquet(f"{path}/why-index/by_offset")
        marks: dict[tuple[int, int], dict[int, tuple[int, int]]] = {}
        for scenario, partition, klass, ts, neg in index_info["final_marks"]:
            marks.setdefault((scenario, partition), {})[klass] = (ts, neg)
        lookup = ["scenario", "partition", "side", "key", "value", "ts", "offset", "step"]
        index = WhyIndex(
            f"{path}/why-index",
            by_offset.select(*lookup),
            spark.read.parquet(f"{path}/why-index/by_key"),
            spark.read.parquet(f"{path}/why-index/releases") if index_info["releases"] else None,
            marks,
        )
        # The records in processing order, as the index numbered them: enough for trace(partition=...).
        records = by_offset.select(
            "scenario",
            "partition",
            "side",
            "key",
            "value",
            "ts",
            "offset",
            F.col("step").alias("position"),
            F.col("step").alias("_order_ts"),
            F.lit(0).alias("_side_rank"),
        )
    run = OpenedRun(records, None, scenarios, manifest["json_keys"], manifest["json_values"], manifest["method"])
    run.path = path
    run._spark_partitions = manifest.get("spark_partitions")
    run._why_index = index
    run._kept.update(
        {
            "results": None,
            ("explained", None): outputs,
            ("summary", None): summary,
            "steps": steps,
        }
    )
    return run


def run_join(
    left: Topic,
    right: Topic,
    join: str,
    variant: str,
    *,
    semantics: str | Semantics | None = None,
    window: JoinWindows | Mapping[str, Any] | None = None,
    joiner: Callable[[Any, Any], Any] | None = None,
    spark_partitions: int | None = None,
    method: str = "auto",
    options: Mapping[str, Any] | None = None,
) -> SparkRun:
    """Join two topics on Spark, as Kafka Streams would: ``join`` is ``stream-stream``,
    ``stream-table`` or ``table-table``, ``variant`` inner/left/outer, ``semantics`` a Kafka
    version (default: the latest), ``window`` the stream-stream window. ``method``:
    ``"vectorised"`` (numpy/pyarrow passes per Kafka task, :mod:`kjoin.spark.vectorised`; stream-stream
    joins :mod:`kjoin.spark.vectorised_stream`; joins over versioned tables :mod:`kjoin.spark.vectorised_versioned`),
    ``"native"`` (Spark SQL window functions, :mod:`kjoin.spark.native`), both refused where
    not exact, ``"processors"`` (kjoin's processors per Kafka task) or ``"auto"`` (the first
    of vectorised, native, processors that is exact; :attr:`SparkRun.method` says which;
    :func:`run_scenarios` with small tasks runs the processors, which are faster there).
    ``options``: more scenario fields, for versioned tables and grace, e.g.
    ``{"right": {"versioned": True, "history_retention_ms": 100}, "grace_ms": 5}`` or
    ``{"left": ..., "right": ..., "versioned_mode": "final"}``. Returns a lazy :class:`SparkRun`."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if join not in JOINS:
        raise SparkInputError(f"join: expected one of {' | '.join(JOINS)}, got {join!r}")
    if join == "fk":
        raise SparkInputError(
            "join: a foreign-key join sends messages between Kafka tasks, "
            "so run_join (one Spark group per task) cannot run it; "
            "run FK scenarios with run_scenarios(spark, [Scenario(join='fk', ...)]), "
            "which runs each whole (kjoin.spark.fk_task)"
        )
    try:
        semantics = None if semantics is None else str(parse_semantics(semantics))
    except ValueError as error:
        raise SparkInputError(str(error)) from None
    window = _window_option(join, window)
    partitions = _partition_count(left, right)
    try:
        config = Scenario.from_records(join, variant, [], semantics=semantics, window=window, partitions=partitions)
    except ValueError as error:
        raise SparkInputError(str(error)) from None
    if options:
        try:
            config = Scenario.from_dict({**config.to_dict(), **options})
        except ValueError as error:
            raise SparkInputError(f"options: {error}") from None
        if config.arrival is not None:
            raise SparkInputError(
                "options: arrival (a lagging side) is not modelled by run_join, which orders each task as Kafka does "
                "when both input partitions have records buffered (max.task.idle.ms lets the task wait); drop arrival, "
                "or run the records as a scenario with kjoin.run or run_scenarios, which honour it"
            )
    key_type, value_type = _common_types(left, right)
    json_values = left.json_values or right.json_values
    frames = []
    for side, topic in (("left", left), ("right", right)):
        frame = topic.frame
        if json_values and not topic.json_values:
            # The other side holds JSON text, and the processors decode every value alike: this side's plain
            # values become JSON strings ("name0" -> "\"name0\""), which decode back to the same text.
            frame = frame.withColumn("value", _as_json_string(F.col("value")))
        if not topic.has_partition:
            frame = frame.withColumn("partition", _default_partition(partitions, key_type)(F.col("key")))
        if not topic.has_offset:
            in_order = Window.partitionBy("partition").orderBy(F.monotonically_increasing_id())
            frame = frame.withColumn("offset", (F.row_number().over(in_order) - 1).cast("bigint"))
        frames.append(
            frame.select(
                F.lit(0).cast("bigint").alias("scenario"),
                F.col("partition").cast("int").alias("partition"),
                F.lit(0 if side == "left" else 1).alias("_side_rank"),
                F.col("key").cast(key_type).alias("key"),
                F.col("value").cast(value_type).alias("value"),
                F.col("ts").cast("bigint").alias("ts"),
                F.col("offset").cast("bigint").alias("offset"),
            )
        )
    side_name = F.when(F.col("_side_rank") == 0, F.lit("left")).otherwise(F.lit("right")).alias("side")
    inputs = frames[0].unionByName(frames[1]).select("scenario", "partition", side_name, "key", "value", "ts", "offset")
    # Hash-partitioned by Kafka task once: the running max below and both paths' per-task work reuse it
    # (one shuffle, not two). Only what varies goes through the shuffle and the two sorts (the side as its rank, no
    # null position): narrower rows keep the sorts of 10^7 records in memory, where wider ones spilled to disk.
    shuffled = frames[0].unionByName(frames[1]).repartition(spark_partitions or partitions, "scenario", "partition")
    running = (
        Window.partitionBy("scenario", "partition", "_side_rank")
        .orderBy("offset")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    records = shuffled.select(
        "scenario",
        "partition",
        side_name,
        "key",
        "value",
        "ts",
        "offset",
        F.lit(None).cast("bigint").alias("position"),
        F.max("ts").over(running).alias("_order_ts"),
        "_side_rank",
    )
    # The per-task passes take the shuffled records sorted once, by input partition, and merge the two into
    # processing order themselves (kjoin.spark.merge): the window and the second sort are left to the native
    # plan and to the records frame of the debugging tools.
    held_rank = 1 if config.join == "stream-table" else 0  # the side held while the other streams: the table
    by_partition = shuffled.sortWithinPartitions(
        "scenario", "partition", F.col("_side_rank").desc() if held_rank else F.col("_side_rank"), "offset"
    ).select("partition", F.col("_side_rank").cast("byte").alias("_side_rank"), "key", "value", "ts", "offset")
    result = _execute(
        records,
        {0: config},
        key_type,
        value_type,
        joiner,
        json_keys=False,
        json_values=json_values,
        spark_partitions=spark_partitions or partitions,
        method=method,
        partitioned=True,
        by_partition=(by_partition, held_rank),
    )
    result.inputs = inputs
    result._spark_partitions = spark_partitions or partitions
    result._rerun = lambda other: run_join(
        left,
        right,
        join,
        variant,
        semantics=other,
        window=window,
        joiner=joiner,
        spark_partitions=spark_partitions,
        method=method,
        options=options,
    )
    return result


def run_scenarios(
    spark: Any,
    scenarios: Iterable[Scenario],
    joiner: Callable[[Any, Any], Any] | None = None,
    spark_partitions: int | None = None,
    method: str = "auto",
) -> SparkRun:
    """Run many scenarios in one Spark job: scenario ``i`` is ``scenario == i`` in every frame,
    and a record's ``step`` is its index in the scenario, as in the reference trace.
    Keys and values travel as JSON text (scenarios may mix string and number keys).
    ``method`` as in :func:`run_join`; on both paths the rows of each Spark partition come
    in emission order within every task (the native path sorts them by ``step``)."""
    from pyspark.sql import functions as F

    from . import fk_task

    configs: dict[int, Scenario] = {}
    rows = []
    fk_rows: list[tuple] = []  # foreign-key scenarios cross tasks: each runs whole (kjoin.spark.fk_task)
    for scenario_id, scenario in enumerate(scenarios):
        configs[scenario_id] = scenario
        if scenario.join == "fk":
            fk_rows += fk_task.script_rows(scenario_id, scenario)
            continue
        for position, record in enumerate(scenario.records()):
            rows.append(
                (
                    scenario_id,
                    record.partition,
                    record.side.value,
                    json_text(record.key),
                    json_text(record.value),
                    record.ts,
                    record.offset,
                    position,
                )
            )
    schema = "scenario long, partition int, side string, key string, value string, ts long, offset long, position long"

    def frame(data: list[tuple]) -> Any:
        records = spark.createDataFrame(data, schema=schema) if data else spark.createDataFrame([], schema=schema)
        return records.withColumn("_order_ts", F.col("position")).withColumn("_side_rank", F.lit(0))

    def primary_key_joins(chosen: Mapping[int, Scenario]) -> SparkRun:
        return _execute(
            frame(rows),
            chosen,
            "string",
            "string",
            joiner,
            json_keys=True,
            json_values=True,
            spark_partitions=spark_partitions,
            method=method,
            sort_rows=True,
            records_per_task=len(rows) / max(1, len({(row[0], row[1]) for row in rows})),
        )

    pk_configs = {i: s for i, s in configs.items() if s.join != "fk"}
    fk_configs = {i: s for i, s in configs.items() if s.join == "fk"}
    if not fk_configs:
        return primary_key_joins(configs)
    fk_records = frame(fk_rows)
    results = fk_task.fk_results(fk_records, fk_configs, joiner, spark_partitions)
    records = fk_records
    if pk_configs:
        pk = primary_key_joins(pk_configs)
        results, records = pk.results.unionByName(results), pk.records.unionByName(fk_records)
    return SparkRun(records, results, configs, True, True)


METHODS = ("auto", "vectorised", "native", "processors")


class SlowPathWarning(UserWarning):
    """``method="auto"`` took kjoin's processors where the topics alone would not make it: the warning names
    the cost and what to change (``method="processors"`` says you chose it)."""


JSON_SLOW_PATH = (
    "value='json': this join runs on kjoin's processors, not the vectorised pass, because the processors "
    "decode each JSON value and the joiner re-encodes it canonically, which the array passes cannot reproduce "
    "exactly; that costs about 3x (issue 26: 133 s against 46 s for the same stream-table join with "
    "value='string'). If your joiner does not need the values decoded, read them with value='string' (the "
    "results then carry each producer's JSON text as written); to choose the processors knowingly, pass "
    "method='processors'"
)

AUTO_MIN_RECORDS_PER_TASK = 200
"""``auto`` runs the vectorised pass or the native plan only when Kafka tasks hold this many records on average
(when known: :func:`run_scenarios`); below, the processors. Measured on 1,000 small scenarios (about 15 records
each, 2-core machine under load): processors 1.3 s, vectorised 5.4-6.9 s, native 5.8-7.3 s; the array passes
cost a few milliseconds per task and batch, the processors about 80 us per record."""


def _window_option(join: str, window: Any) -> JoinWindows | Mapping[str, Any] | None:
    """``window=`` of :func:`run_join`: a :class:`JoinWindows`, a dict ``{before_ms, after_ms,
    grace_ms}``, or an int ``w``: ``before_ms = after_ms = w`` and no grace, as Kafka's
    ``JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(w))``."""
    if window is None or isinstance(window, (JoinWindows, Mapping)):
        return window
    if isinstance(window, int) and not isinstance(window, bool):
        if window < 0:
            raise SparkInputError(f"window={window}: a time difference is 0 ms or more")
        return {"before_ms": window, "after_ms": window, "grace_ms": 0}
    raise SparkInputError(
        f"window={window!r}: expected milliseconds (an int: before_ms = after_ms, no grace), a dict "
        "{'before_ms': ..., 'after_ms': ..., 'grace_ms': ...} or a kjoin.joins.JoinWindows"
        + ("" if join == "stream-stream" else f"; a {join} join takes no window")
    )


def _execute(
    records: Any,
    configs: Mapping[int, Scenario],
    key_type: str,
    value_type: str,
    joiner: Any,
    json_keys: bool,
    json_values: bool,
    spark_partitions: int | None,
    method: str = "auto",
    sort_rows: bool = False,
    partitioned: bool = False,
    records_per_task: float | None = None,
    by_partition: tuple[Any, int] | None = None,
) -> SparkRun:
    """``partitioned``: ``records`` is already hash-partitioned by ``(scenario, partition)``.
    ``sort_rows``: sort the native path's rows by step within each Spark partition.
    ``records_per_task``: the mean records per Kafka task when known (``auto`` picks the processors for small
    tasks, :data:`AUTO_MIN_RECORDS_PER_TASK`).
    ``by_partition``: ``(frame, held rank)``, the records sorted by ``(scenario, partition, held side first,
    offset)``, which the vectorised pass and the processors then merge into processing order themselves
    (:func:`kjoin.spark.merge.merged_batches`), in place of sorting ``records`` by processing order."""
    if method not in METHODS:
        raise SparkInputError(f"method: expected one of {' | '.join(METHODS)}, got {method!r}")
    if method == "auto" and json_values and not json_keys and records_per_task is None:
        import warnings

        warnings.warn(JSON_SLOW_PATH, SlowPathWarning, stacklevel=3)
    if method == "auto" and records_per_task is not None and records_per_task < AUTO_MIN_RECORDS_PER_TASK:
        method = "processors"
    if method in ("auto", "vectorised"):
        from . import vectorised, vectorised_stream, vectorised_versioned

        streams = bool(configs) and all(config.join == "stream-stream" for config in configs.values())
        versioned = bool(configs) and all(vectorised_versioned.is_versioned(config) for config in configs.values())
        why = (vectorised_stream if streams else vectorised_versioned if versioned else vectorised).unsupported(
            configs, joiner, key_type, value_type, json_keys=json_keys, json_values=json_values
        )
        if why is None:
            if streams:
                function = vectorised_stream.stream_function(
                    dict(configs), json_keys=json_keys, json_values=json_values
                )
            elif versioned:
                function = vectorised_versioned.versioned_function(
                    dict(configs), json_keys=json_keys, json_values=json_values
                )
            else:
                function = vectorised.vectorised_function(dict(configs), json_values=json_values)
            results = _per_task(records, by_partition, function, partitioned, spark_partitions, key_type, value_type)
            return SparkRun(records, results, configs, json_keys, json_values, method="vectorised")
        if method == "vectorised":
            raise SparkInputError(
                f"method='vectorised' cannot run this join exactly: {why}. "
                "Use method='auto' (falls back to the native plan or the processors) or method='processors'."
            )
    if method != "processors":
        from . import native

        why = native.unsupported(configs, joiner, value_type, json_keys=json_keys, json_values=json_values)
        if why is None:
            results = native.native_results(
                records,
                configs,
                key_type,
                value_type,
                json_values=json_values,
                spark_partitions=spark_partitions,
                partitioned=partitioned,
            )
            if sort_rows:  # small, driver-built inputs: rows in emission order per task, as the processors give them
                results = results.sortWithinPartitions("scenario", "partition", "step")
            return SparkRun(records, results, configs, json_keys, json_values, method="native")
        if method == "native":
            raise SparkInputError(
                f"method='native' cannot run this join exactly: {why}. "
                "Use method='auto' (falls back to the processors) or method='processors'."
            )
    function = task_function(dict(configs), joiner, json_values=json_values, json_keys=json_keys)
    results = _per_task(records, by_partition, function, partitioned, spark_partitions, key_type, value_type)
    return SparkRun(records, results, configs, json_keys, json_values, method="processors")


def _per_task(
    records: Any,
    by_partition: tuple[Any, int] | None,
    function: Callable[[Any], Any],
    partitioned: bool,
    spark_partitions: int | None,
    key_type: str,
    value_type: str,
) -> Any:
    """The result rows of a per-task ``mapInArrow`` function (:mod:`kjoin.spark.task`,
    :mod:`kjoin.spark.vectorised`, :mod:`kjoin.spark.vectorised_stream`, :mod:`kjoin.spark.vectorised_versioned`),
    fed each task's records in processing order: sorted by Spark when they carry their position (``records``),
    merged from the input-partition sort otherwise (``by_partition``)."""
    schema = result_schema(key_type, value_type)
    if by_partition is None:
        ordered = group_by_task(records, partitioned, spark_partitions).sortWithinPartitions(*_PROCESSING_ORDER)
        return ordered.select(*_TASK_COLUMNS).mapInArrow(function, schema)
    from .merge import HELD_ROWS_CONF, held_rows

    frame, held_rank = by_partition
    spill_rows = held_rows(frame.sparkSession.conf.get(HELD_ROWS_CONF, None))

    def merged(batches: Any) -> Any:
        from .merge import merged_batches

        return function(merged_batches(batches, held_rank, spill_rows))

    return frame.mapInArrow(merged, schema)


_PROCESSING_ORDER = ("scenario", "partition", "_order_ts", "_side_rank", "offset")
_TASK_COLUMNS = ("scenario", "partition", "side", "key", "value", "ts", "offset", "position")


def _as_json_string(column: Any) -> Any:
    """``column``'s text as a JSON string literal (null stays null): what a JSON reader decodes back to it."""
    from pyspark.sql import functions as F

    quoted = F.to_json(F.array(column.cast("string")))  # ["text"], escaped by Spark's JSON writer
    return F.when(column.isNull(), F.lit(None)).otherwise(quoted.substr(F.lit(2), F.length(quoted) - 2))


def _common_types(left: Topic, right: Topic) -> tuple[str, str]:
    types = []
    for column, allowed in (("key", KEY_TYPES), ("value", VALUE_TYPES)):
        found = {side: dict(topic.frame.dtypes).get(column) for side, topic in (("left", left), ("right", right))}
        for side, kind in found.items():
            source = (left if side == "left" else right).source
            if kind is None:
                raise SparkInputError(
                    f"{side} topic ({source}): no column {column!r} (expected type {' or '.join(allowed)})"
                )
            if kind not in allowed:
                raise SparkInputError(
                    f"{side} topic ({source}): column {column!r} has type {kind}, expected {' or '.join(allowed)}; "
                    f"cast it, e.g. frame.withColumn({column!r}, frame[{column!r}].cast({allowed[0]!r}))"
                )
        if found["left"] != found["right"]:
            if column == "key":
                raise SparkInputError(
                    f"the left topic's ({left.source}) keys are {found['left']} "
                    f"and the right topic's ({right.source}) {found['right']}: "
                    "a join needs one key type; cast one of them, "
                    "or read both with the same key deserializer (key='string' or key='long')"
                )
            types.append("string")
        else:
            types.append(found["left"])
    return types[0], types[1]


def _partition_count(left: Topic, right: Topic) -> int:
    counts = {}
    for side, topic in (("left", left), ("right", right)):
        count = topic.partitions
        if count is None:
            if not topic.has_partition:
                raise SparkInputError(
                    f"{side} topic ({topic.source}): no partition column and no partition count; "
                    "pass partitions=N to the reader"
                )
            from pyspark.sql import functions as F

            found = topic.frame.agg(F.max("partition")).first()[0]
            count = 1 if found is None else int(found) + 1
        counts[side] = count
    if counts["left"] != counts["right"]:
        for side, topic in (("left", left), ("right", right)):
            if topic.partitions is not None and topic.has_partition:
                from pyspark.sql import functions as F

                try:
                    seen = topic.frame.agg(F.max("partition")).first()[0]
                except Exception as error:  # the reader refuses a partition beyond the count as it reads it
                    found = re.search(r"column 'partition': (\d+) is not a partition", str(error))
                    if found is None:
                        raise
                    seen = int(found.group(1))
                if seen is not None and int(seen) >= topic.partitions:
                    raise SparkInputError(
                        f"{side} topic ({topic.source}): partitions={topic.partitions} was passed, but the topic has "
                        f"records in partition {int(seen)}, so it has at least {int(seen) + 1} partitions; pass its "
                        f"real partition count (partitions={int(seen) + 1} or more), or leave partitions= out"
                    )
        raise SparkInputError(
            f"the topics are not co-partitioned: the left topic ({left.source}) has {counts['left']} partitions "
            f"and the right ({right.source}) {counts['right']}. Kafka Streams refuses such a join; "
            f"repartition one topic to {max(counts.values())} partitions first."
        )
    return counts["left"]


_WINDOWED_VERDICTS = (
    "partner-never",
    "partner-null-key",
    "partner-other-partition",
    "partner-outside-window",
    "partner-later",
    "partner-expired",
    "unexplained",
)
_TABLE_VERDICTS = (
    "partner-later",
    "partner-processed-later",
    "partner-deleted",
    "partner-never",
    "partner-null-key",
    "partner-other-partition",
    "unexplained",
)
_JOIN_REASONS = {
    "stream-stream": (
        Reason.NULL_KEY,
        Reason.NULL_VALUE,
        Reason.NO_PARTNER,
        Reason.WINDOW_OPEN,
        Reason.NOT_A_TRIGGER,
        Reason.EXPIRED,
    ),
    "stream-table": (Reason.NULL_KEY, Reason.NULL_VALUE, Reason.NO_PARTNER, Reason.TABLE_UPDATE),
    "table-table": (Reason.NULL_KEY, Reason.NO_PARTNER, Reason.NOTHING_TO_DELETE),
    "fk": (),  # by era and options: _fk_step_reasons
}
_VERSIONED_REASONS = (
    Reason.EXPIRED_PUT,
    Reason.GRACE_PERIOD,
    Reason.NULL_KEY_IN_GRACE_BUFFER,
    Reason.OUT_OF_ORDER_VERSION,
    Reason.TABLE_UPDATE,
    Reason.NULL_VALUE,
)


def _null_verdicts(config: Scenario | None) -> tuple[str, ...]:
    """The verdicts a null-partner result can have: none for an inner join."""
    if config is None or config.variant == "inner":
        return ()
    if config.join == "fk":
        from .debug_fk import fk_null_verdicts

        return fk_null_verdicts(config)
    return _WINDOWED_VERDICTS if config.window is not None else _TABLE_VERDICTS


def _result_reasons(config: Scenario | None) -> list[str]:
    """The reasons :attr:`SparkRun.explained_outputs` can give a result of the join at hand."""
    if config is None:
        return ["matched", "tombstone", "null-key", *_TABLE_VERDICTS, *_WINDOWED_VERDICTS]
    reasons = ["matched", "tombstone"]
    if config.join != "fk" and config.variant != "inner" and config.semantics.relaxed_null_keys:
        reasons.append("null-key")
    if config.join != "fk" and config.window is None:
        reasons += ["joined-stale", "joined-deleted"]
    return reasons + [v for v in _null_verdicts(config) if v not in reasons]


_STREAM_ONLY = {"no-partner", "window-open", "not-a-trigger", "grace-period", "null-key-in-grace-buffer", "expired"}
_TABLE_ONLY = {"table-update", "out-of-order-version"}


def _step_columns(config: Scenario | None) -> list[tuple[str | None, str]]:
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
    if config is None or config.join not in _JOIN_REASONS or config.then or getattr(config, "caching", ()):
        return [member.value for member in Reason]
    if config.join == "fk":
        return [member.value for member in Reason if member in _fk_step_reasons(config)]
    possible = set(_JOIN_REASONS[config.join])
    if config.left.versioned or config.right.versioned or getattr(config, "grace_ms", None) is not None:
        possible |= set(_VERSIONED_REASONS)
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
    return possible


def _explain_outputs(run: "SparkRun") -> Any:
    """Every output with its ``reason`` (see :attr:`SparkRun.explained_outputs`). A foreign-key
    scenario's results carry theirs from the group that ran it (:mod:`kjoin.spark.fk_task`)."""
    from pyspark.sql import functions as F

    fk_ids = sorted(i for i, s in run.scenarios.items() if s.join == "fk")
    pk_ids = sorted(i for i in run.scenarios if i not in fk_ids)
    if fk_ids:
        results = run.results
        fk_part = results.filter((results.row == "output") & results.scenario.isin(fk_ids)).select(
            *OUTPUT_COLUMNS,
            "reason",
            *(F.lit(None).cast(t).alias(c) for c, t in zip(CAUSE_COLUMNS, _CAUSE_TYPES)),
        )
        if not pk_ids:
            return fk_part
        return _explain_primary_key_outputs(
            run, run.outputs.filter(F.col("scenario").isin(pk_ids)), pk_ids
        ).unionByName(fk_part)
    return _explain_primary_key_outputs(run, run.outputs, pk_ids)


CAUSE_COLUMNS = ["cause_side", "cause_partition", "cause_offset"]
"""Columns of :attr:`SparkRun.explained_outputs` naming the record that caused a result's reason, where one
did (:mod:`kjoin.spark.audit`): the misrouted record behind ``partner-other-partition``, ``joined-stale`` or
``joined-deleted``, the null-key record behind ``partner-null-key``; null otherwise."""

_KEY_TOKENS = r"[^A-Za-z0-9_\-]+"
"""What separates the words of a null-key record's value, one of which may be the key it lost."""


def _explain_primary_key_outputs(run: "SparkRun", outputs: Any, ids: list[int]) -> Any:
    """Every result's reason, looking at every partition of the other side first (see
    :attr:`SparkRun.explained_outputs`): one join of the results with the other side's records of their key."""
    from pyspark.sql import functions as F

    from .audit import expected_partition_column

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
        .select(*OUTPUT_COLUMNS, "reason", *(F.lit(None).cast(t).alias(c) for c, t in zip(CAUSE_COLUMNS, _CAUSE_TYPES)))
    )
    expected = lambda column: expected_partition_column(  # noqa: E731
        column, partitions, run._json_keys, run.partitioner
    )
    records = run.records.select(
        "scenario",
        "partition",
        "side",
        "key",
        "ts",
        "offset",
        "value",
        F.struct("_order_ts", "_side_rank", "offset").alias("_order"),
    )
    analysed = outputs.filter(null_partner | looked_up).withColumn("_id", F.monotonically_increasing_id())
    # The record the result is about: a null result's is the record whose value it carries, a lookup's the record
    # that looked up (the one processed).
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
    base = analysed.join(by_value.unionByName(by_lookup), "_id", "left")
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
    verdicts = joined.groupBy("_id").agg(*aggregates)
    rows = base.join(verdicts, "_id", "left")
    rows = _with_null_key_candidates(rows, run.records, run._json_keys)
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
    else:
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
    rows = rows.withColumn("reason", verdict).withColumn("_culprit", culprit)
    # The misrouted record: the partner found elsewhere if it is not in its key's partition, else the subject.
    partner_misrouted = F.col("_culprit.partition") != expected(F.col("key"))
    subject_misrouted = F.col("partition") != expected(F.col("key"))
    names_partner = F.col("_culprit").isNotNull() & (partner_misrouted | ~subject_misrouted)
    names_subject = F.col("_culprit").isNotNull() & ~names_partner
    other_side = F.when(F.col("_subject") == "left", F.lit("right")).otherwise(F.lit("left"))
    null_key = F.col("reason") == "partner-null-key"
    cause = [
        F.when(null_key, other_side).when(names_partner, other_side).when(names_subject, F.col("_subject")),
        F.when(null_key, F.col("_null_key.partition"))
        .when(names_partner, F.col("_culprit.partition"))
        .when(names_subject, F.col("partition")),
        F.when(null_key, F.col("_null_key.offset"))
        .when(names_partner, F.col("_culprit.offset"))
        .when(names_subject, F.col("_subject_offset")),
    ]
    explained = rows.select(
        *OUTPUT_COLUMNS, "reason", *(c.cast(t).alias(n) for c, n, t in zip(cause, CAUSE_COLUMNS, _CAUSE_TYPES))
    )
    return plain.unionByName(explained)


_CAUSE_TYPES = ("string", "int", "bigint")


def _with_null_key_candidates(rows: Any, records: Any, json_keys: bool) -> Any:
    """``_null_key``: the first null-key record of the other side whose value names the result's key as a word
    (``partition``, ``offset``), for ``partner-null-key``."""
    from pyspark.sql import functions as F

    words = records.filter(F.col("key").isNull() & F.col("value").isNotNull()).select(
        F.col("scenario").alias("n_scenario"),
        F.col("side").alias("n_side"),
        F.explode(F.split(F.col("value").cast("string"), _KEY_TOKENS)).alias("n_word"),
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


def _check_number(name: str, value: Any) -> None:
    """``partition=``/``offset=`` of :meth:`SparkRun.why` and :meth:`SparkRun.trace`: an int, not its text."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        raise SparkInputError(f"{name}={value!r} is text; pass the number: {name}={int(value)}")
    if not isinstance(value, int) or isinstance(value, bool):
        raise SparkInputError(f"{name}={value!r}: expected an int (a Kafka {name})")


def _check_partition(partition: Any, partitions: int) -> None:
    _check_number("partition", partition)
    if not 0 <= partition < partitions:
        raise SparkInputError(
            f"partition={partition!r}: the topics have {partitions} partitions (0 to {partitions - 1}); "
            "there is no such Kafka task"
        )


def _default_partition(partitions: int, key_type: str) -> Any:
    """Kafka's default partition of each key (null keys go to 0), as a column function. An
    Arrow-batched UDF (:func:`kjoin.spark.topic.default_partition_column`): a pandas UDF
    would see long keys with nulls as floats and lose bits above 2**53."""
    from .topic import default_partition_column

    return lambda column: default_partition_column(column, partitions, key_type)


class OpenedRun(SparkRun):
    """A run reopened by :func:`open_run`: the frames are what :meth:`SparkRun.write_parquet` wrote."""

    path: str = ""

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

    def why_index(self, path: str | None = None) -> Any:
        if self._why_index is None:
            raise SparkInputError(
                f"why and key drill-downs read the run's index, and {self.path} has none: write the run with "
                "write_parquet(path, why_index=True)"
            )
        return self._why_index
