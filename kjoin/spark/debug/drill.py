"""The drill-downs of a Spark run: one Kafka task's trace, one key's, one record's diagnosis.

:meth:`kjoin.spark.SparkRun.trace` and :meth:`~kjoin.spark.SparkRun.why` call these. A primary-key join's key is
looked up in the run's index (:mod:`kjoin.spark.debug.index`) and only its records run through the reference engine
(:mod:`kjoin.spark.debug.key_trace`); a foreign-key scenario ran whole in one Spark group, so its drill-downs read the
whole scenario's trace (:mod:`kjoin.spark.debug.fk`), collected once per run.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from pyspark.sql import functions as F

from ...engine import run as run_engine
from ...joins import default_joiner
from ...records import Record, Side
from ...scenario import Event, Scenario
from ...trace import Trace
from ..io.topic import SparkInputError
from ..passes.fk_task import fk_trace
from ..ties import PROCESSING_ORDER
from . import fk as debug_fk
from . import key_trace as drilldown
from .diagnosis import Partner
from .audit import partition_of
from .explain import KEY_TOKENS
from .kinds import kind_of
from .repro import record_scenario

if TYPE_CHECKING:
    from ..result import SparkRun

__all__ = ["task_trace", "key_trace", "why", "check_partition", "check_number"]

Joiner = Callable[[Any, Any], Any]


def check_number(name: str, value: Any) -> None:
    """``partition=``/``offset=`` of :meth:`SparkRun.why` and :meth:`SparkRun.trace`: an int, not its text."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        raise SparkInputError(f"{name}={value!r} is text; pass the number: {name}={int(value)}")
    if not isinstance(value, int) or isinstance(value, bool):
        raise SparkInputError(f"{name}={value!r}: expected an int (a Kafka {name})")


def check_partition(partition: Any, partitions: int) -> None:
    check_number("partition", partition)
    if not 0 <= partition < partitions:
        raise SparkInputError(
            f"partition={partition!r}: the topics have {partitions} partitions (0 to {partitions - 1}); "
            "there is no such Kafka task"
        )


def scenario_of(run: "SparkRun", scenario: Any) -> Scenario:
    if scenario not in run.scenarios:
        raise SparkInputError(
            f"scenario={scenario!r}: this run has scenarios {', '.join(map(str, sorted(run.scenarios)))}"
        )
    return run.scenarios[scenario]


# -- a whole task ------------------------------------------------------------------------------
def task_trace(run: "SparkRun", partition: int, scenario: int, joiner: Joiner | None) -> Trace:
    """One Kafka task's input records (only those), collected and run through the reference engine with every
    option of the scenario (versioned tables, history retention, grace, ``versioned_mode`` …)."""
    config = run.scenarios[scenario]
    rows = (
        run.records.filter((F.col("scenario") == scenario) & (F.col("partition") == partition))
        .orderBy(*PROCESSING_ORDER)
        .select("side", "key", "value", "ts", "partition", "offset")
        .collect()
    )
    decode_key, decode_value = run._decoders()
    events = [
        Event(
            Side(row["side"]),
            decode_key(row["key"]),
            decode_value(row["value"]),
            row["ts"],
            row["partition"],
            row["offset"],
        )
        for row in rows
    ]
    return run_engine(replace(config, events=tuple(events)), joiner=joiner or default_joiner)


# -- one key -----------------------------------------------------------------------------------
def placed(
    run: "SparkRun", scenario: int, partition: int, key: Any, rows: list | None = None
) -> tuple[list, dict[int, frozenset[int]]]:
    """The key's records and the clock records of its task, in processing order, and the
    steps at which the task's run swept the key's held results (step -> their origin steps)."""
    index = run.why_index()
    stored = run._key_column_value(key)
    if rows is None:
        rows = index.key_rows(scenario, stored)
    mine = [r for r in rows if r["partition"] == partition]
    swept = index.key_releases(scenario, partition, stored)
    releases: dict[int, set[int]] = {}
    for release in swept:
        releases.setdefault(release["step"], set()).add(release["origin_step"])
    records = index.placed(scenario, partition, key, mine, *run._decoders(), releases=swept)
    return records, {step: frozenset(origins) for step, origins in releases.items()}


def key_trace(
    run: "SparkRun", partition: int, key: Any, scenario: int = 0, joiner: Joiner | None = None, rows: list | None = None
) -> Any:
    """The drill-down of one key of a primary-key join (:class:`kjoin.spark.debug.key_trace.KeyTrace`)."""
    if key is None:
        raise SparkInputError(
            "key=None: records with a null key are never joined or stored; "
            "look them up with why(partition=..., offset=...)"
        )
    if rows is None:
        rows = run.why_index().key_rows(scenario, run._key_column_value(key))
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
    records, releases = placed(run, scenario, partition, key, rows)
    return drilldown.key_trace(run.scenarios[scenario], partition, key, records, joiner or default_joiner, releases)


# -- one record --------------------------------------------------------------------------------
def why(run: "SparkRun", partition: int, offset: int, side: str, scenario: int, joiner: Joiner | None) -> Any:
    """:meth:`SparkRun.why`: the record's diagnosis, from its key's records in every partition."""
    if side not in ("left", "right"):
        raise SparkInputError(f"side={side!r}: expected 'left' or 'right'")
    config = scenario_of(run, scenario)
    check_partition(partition, config.partitions)
    check_number("offset", offset)
    kind = kind_of(config)
    if kind.whole_trace is not None:
        return _why_whole(run, partition, offset, side, scenario, joiner, kind.whole_trace)
    if config.tasks_share_time:
        raise shares_time_error("why", config)
    index = run.why_index()
    row = index.record_at(scenario, partition, side, offset)
    if row is None:
        raise SparkInputError(f"why: there is no {side} record at partition {partition}, offset {offset}")
    decode_key, decode_value = run._decoders()
    key = decode_key(row["key"])
    record = Record(Side(side), key, decode_value(row["value"]), row["ts"], partition, offset)
    if key is None:
        alone = (Event(record.side, None, record.value, record.ts, partition, offset),)
        return replace(kind.diagnose(record, config, None, (), ()), repro=replace(config, events=alone, arrival=None))
    rows = index.key_rows(scenario, row["key"])
    trace = key_trace(run, partition, key, scenario, joiner or default_joiner, rows)
    home = partition_of(key, config.partitions, run.partitioner)
    elsewhere, same = _partners(run, rows, Side(side).other.value, partition, home)
    finder = _Finder(run, scenario, key, Side(side).other.value, partition)
    found = kind.diagnose(
        record,
        config,
        trace,
        elsewhere,
        same,
        home,
        finder.null_key_partner,
        finder.blocker,
        finder.taken_before,
        finder.next_after,
    )
    extra = [(p, key) for p in elsewhere]
    if found.verdict == "partner-null-key" and found.cause is not None:
        extra.append((found.cause, None))
    return replace(found, repro=record_scenario(config, trace.replay, trace.stand_in, key, extra))


def _partners(run: "SparkRun", rows: list, other: str, partition: int, home: Any) -> tuple[list, list]:
    """The other side's records of the key: those in other partitions, and those in the record's own (with their
    step in its task)."""
    decode_value = run._decoders()[1]
    same, elsewhere = [], []
    for p in sorted((r for r in rows if r["side"] == other), key=lambda r: (r["partition"], r["offset"])):
        here = p["partition"] == partition
        partner = Partner(
            other, p["partition"], p["offset"], p["ts"], decode_value(p["value"]), p["step"] if here else None, home
        )
        (same if here else elsewhere).append(partner)
    return elsewhere, same


class _Finder:
    """The index look-ups a diagnosis makes only when its verdict needs them."""

    def __init__(self, run: "SparkRun", scenario: int, key: Any, other: str, partition: int) -> None:
        self.run, self.scenario, self.key, self.other, self.partition = run, scenario, key, other, partition

    def null_key_partner(self) -> Any:
        """The first null-key record of the other side whose value names the key."""
        word = self.key if isinstance(self.key, str) else json.dumps(self.key)
        found = self.run.why_index().null_key_naming(self.scenario, self.other, word, KEY_TOKENS)
        if found is None:
            return None
        value = self.run._decoders()[1](found["value"])
        return Partner(self.other, found["partition"], found["offset"], found["ts"], value, found["step"])

    def taken_before(self, step: int) -> Any:
        """The task's record at ``step - 1`` (``None`` at the task's first step)."""
        if step <= 0:
            return None
        found = self.run.why_index().record_at_step(self.scenario, self.partition, step - 1)
        if found is None:
            return None
        value = self.run._decoders()[1](found["value"])
        return Partner(found["side"], found["partition"], found["offset"], found["ts"], value, found["step"])

    def next_after(self, step: int) -> Any:
        """The other side's next record in the task after ``step``: its partition's head when the task took the
        record at ``step`` (``None`` when the task took no more of it)."""
        found = self.run.why_index().next_after_step(self.scenario, self.partition, self.other, step)
        if found is None:
            return None
        key = self.run._decoders()[0](found["key"])
        return self._partner(found, key=key)

    def blocker(self, partner: Any, ts: int) -> Any:
        """The record ahead of ``partner`` in its partition with the highest timestamp above ``ts``."""
        index = self.run.why_index()
        found = index.highest_ahead(self.scenario, partner.partition, partner.side, partner.offset, ts)
        if found is None:
            return None
        partitions = self.run.scenarios[self.scenario].partitions
        home = partition_of(self.run._decoders()[0](found["key"]), partitions, self.run.partitioner)
        return self._partner(found, home)

    def _partner(self, found: Any, *extra: Any, **named: Any) -> Any:
        """A :class:`~kjoin.spark.debug.diagnosis.Partner` of an index row (side, partition, offset, ts, value, step),
        with the fields after those (``extra``, ``named``) as the caller has them."""
        value = self.run._decoders()[1](found["value"])
        fields = (found["side"], found["partition"], found["offset"], found["ts"], value, found["step"])
        return Partner(*fields, *extra, **named)


# -- foreign-key joins: the whole scenario's trace ---------------------------------------------
def shares_time_error(what: str, config: Scenario) -> SparkInputError:
    """The refusal of a one-key drill-down of a scenario whose tasks share an instance's time tracker: a key's
    records alone, in their task, would run with another stream time than the instance's."""
    return SparkInputError(
        f"{what}: on Kafka {config.semantics} the tasks of this scenario share their instance's time tracker "
        "(one_instance before KAFKA-14862), so one key's records run alone would see another stream time; read "
        "the whole scenario's trace instead (SparkRun.trace(partition) without key)"
    )


def fk_full_trace(run: "SparkRun", scenario: int, joiner: Joiner | None) -> Trace:
    """A foreign-key scenario's whole trace, or that of any scenario run whole (``fk_task.runs_whole``; kept for
    later calls with the default joiner)."""
    if joiner is not None:
        return fk_trace(run.records, scenario, run.scenarios[scenario], joiner)
    if scenario not in run._fk_traces:
        run._fk_traces[scenario] = fk_trace(run.records, scenario, run.scenarios[scenario], None)
    return run._fk_traces[scenario]


def _why_whole(
    run: "SparkRun",
    partition: int,
    offset: int,
    side: str,
    scenario: int,
    joiner: Joiner | None,
    diagnose: Callable[[Trace, Any, Any], Any],
) -> Any:
    """:meth:`SparkRun.why` of a join whose records cross tasks (a foreign-key join): read off the whole scenario's
    trace (:mod:`kjoin.spark.debug.fk`) by the kind's ``diagnose``."""
    full = fk_full_trace(run, scenario, joiner)
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
    return replace(diagnose(full, step, drill), repro=full.scenario)


def fk_key_trace(run: "SparkRun", partition: int, key: Any, scenario: int, joiner: Joiner | None) -> Any:
    """The drill-down of a foreign-key join's left key ``key`` in ``partition``
    (:class:`kjoin.spark.debug.fk.FkKeyTrace`)."""
    if key is None:
        raise SparkInputError(
            "key=None: a left record with a null key is never stored or joined; "
            "look it up with why(partition=..., offset=...)"
        )
    full = fk_full_trace(run, scenario, joiner)
    found = debug_fk.left_partitions(full, key)
    if partition not in found:
        where = (
            f"its left records are in partition(s) {', '.join(map(str, found))}" if found else "no partition has one"
        )
        raise SparkInputError(
            f"key={key!r}: a foreign-key drill-down follows a left key's records in its partition, and "
            f"partition {partition} has no left record with this key ({where}); for a foreign key's right "
            "records, ask why(partition=..., offset=..., side='right')"
        )
    return debug_fk.fk_key_trace(full, key, partition)
