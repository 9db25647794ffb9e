"""Native Spark SQL for the joins where window functions are exactly Kafka's processors.

Which joins: the KStream-KTable join (inner, left) over an unversioned table, and the
KTable-KTable primary-key join (inner, left, outer) over two unversioned tables, in every
era (0.10.0/0.10.1, KIP-77, 3.1+, with the output-timestamp and KIP-962 null-key rules of
each version), with the default joiner. Everything else (stream-stream joins, versioned
tables, grace periods, a custom joiner, values whose rendering Spark cannot reproduce
exactly) runs kjoin's own processors (:mod:`kjoin.spark.passes.task`). ``method="auto"`` prefers the
vectorised pass (:mod:`kjoin.spark.passes.vectorised`, the same joins as array work per task) and
comes here only for what that refuses and this plan can run.

How it works. In these joins the state a record sees is a function of the records before it
in its task with the same key: the last table update of the key (stream-table) or the last
update of each side (table-table), a tombstone meaning "absent". So, per record:

1. ``step``: the record's index in its task, ``position`` when the input gives one, else
   ``row_number()`` over ``(scenario, partition)`` in processing order
   (``_order_ts, _tie, offset``: :data:`kjoin.spark.ties.PROCESSING_ORDER`), exactly as the task loop numbers records.
2. One window ``partitionBy(scenario, partition, key).orderBy(step)`` with the frame
   *unbounded preceding .. 1 preceding* and ``last(struct(value, ts), ignorenulls)`` over
   the rows of one side: the state of that side's table just before the record. The records
   are first hash-partitioned by ``(scenario, partition)`` (one Spark task runs whole Kafka
   tasks, as on the processor path), which already satisfies the window's distribution, so
   Spark adds a sort but no second shuffle.
3. A ``CASE`` per column applies the processors' rules (the same rules as
   :mod:`kjoin.joins.stream_table` and :mod:`kjoin.joins.table_table`, written as column
   expressions): every record becomes exactly one row of the result frame, ``row =
   "output"`` when it joined (these joins emit at most one output per record, and only then)
   or ``row = "step"`` with its fate and reason otherwise. The frame has the processor
   path's schema, so :class:`~kjoin.spark.SparkRun` serves both paths.

Rows of :func:`~kjoin.spark.run_join` are not sorted (a sort would cost a fourth pass):
within a task they are unique by ``step`` (one row per input record), so
``orderBy("scenario", "partition", "step")`` gives the processors' emission order.
:func:`~kjoin.spark.run_scenarios` (small, driver-built inputs) sorts each Spark
partition by step, so its rows come in emission order within every task on both paths.

Why: measured with ``python -m kjoin.bench`` on this 2-core machine (4 Kafka partitions,
10^5 keys, noop sink; other jobs kept the load average at 5-7, so absolute times are
several times an idle machine's and the ratios are the telling part):

===================  =======  ==========  ============  ===================
join                 records  native      processors    plain equi-join
===================  =======  ==========  ============  ===================
stream-table left    10^6     17.3 s      39.4 s        6.8 s
table-table outer    10^6     18.5 s      33.9 s        11.7 s
===================  =======  ==========  ============  ===================

On an idle machine at 10^7 records the native path ran 287K records/s (stream-table) and
222K records/s (table-table), 0.26x and 0.35x a plain equi-join (see :mod:`kjoin.bench`).
The native path is 1.8-2.3x the processors' throughput: the processors cost Python per
record, the native path three sorts (running max ts, processing order, key order) and one
shuffle. (Hash-partitioning the union by task *before* the running max, so that every
later window reuses that partitioning, took one of two shuffles away: 4.7-5.2 s down to
3.0-3.5 s for the numbering stage at 10^6.)

Exactness conditions, checked by :func:`unsupported` (``method="native"`` raises with the
reason, ``method="auto"`` falls back to the processors):

* the default joiner (``render(left) + "-" + render(right)``), which Spark computes itself;
* values that Spark renders exactly as :func:`kjoin.records.render_value`: strings, longs,
  and the canonical JSON text of :func:`kjoin.spark.run_scenarios` (a JSON string is
  rendered bare, decoded by ``from_json``); not doubles (Java and Python print floats
  differently) nor JSON text from a reader (the processors re-encode it canonically);
* keys that compare in Spark as in a Python dict: not booleans or floats in scenarios
  (``True == 1`` and ``1.0 == 1`` in Python; their JSON texts differ).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from pyspark.sql import Window
from pyspark.sql import functions as F

from ...fates import Fate, Reason
from ...records import OutputKind
from ..spec import JoinSpec
from ..ties import PROCESSING_ORDER
from .task import RESULT_FIELDS, group_by_task

if TYPE_CHECKING:
    from .plans import Inputs

__all__ = ["unsupported", "native_results", "NATIVE_JOINS"]

NATIVE_JOINS = ("stream-table", "table-table")
"""The joins the native path computes (unversioned tables only)."""


def unsupported(specs: Mapping[int, JoinSpec], inputs: "Inputs") -> str | None:
    """Why the native path cannot run these joins exactly, or ``None`` when it can."""
    if inputs.joiner is not None:
        return (
            "a custom joiner (the native path computes only the default joiner, "
            "render(left)-render(right), in Spark SQL)"
        )
    if inputs.value_type == "double":
        return (
            "double values (Spark and Python print floats differently, so the joiner's text would differ); "
            "cast values to string"
        )
    if inputs.json_values and not inputs.json_keys:
        return "JSON values from a reader (the processors re-encode JSON canonically; Spark SQL cannot)"
    for scenario_id, spec in specs.items():
        where = f"scenario {scenario_id}" if len(specs) > 1 else "the join"
        if spec.join not in NATIVE_JOINS:
            return f"{where} is a {spec.join} join (native: {' and '.join(NATIVE_JOINS)} only)"
        if spec.left.versioned or spec.right.versioned:
            return f"{where} joins a versioned table (native: unversioned tables only)"
        if spec.grace_ms is not None:
            return f"{where} has a grace period (native: no grace_ms)"
        topology = [
            name
            for name, on in (
                ("chained joins (then)", bool(spec.then)),
                ("a self-join", spec.self_join),
                ("a materialized result", spec.materialized),
                ("old values", spec.send_old_values),
                ("record caches", bool(spec.caching)),
            )
            if on
        ]
        if topology:
            return f"{where} has {' and '.join(topology)} (native: one plain join per scenario)"
        if spec.semantics.drops_idempotent_table_updates:
            return (
                f"{where} runs Kafka {spec.semantics}, whose source tables drop idempotent updates (KIP-557, 2.6.0 "
                "to 2.7.0; native and vectorised: only the processors model it)"
            )
        if (why := inputs.key_refusal(scenario_id, where)) is not None:
            return why
    return None


def native_results(
    records: Any,
    specs: Mapping[int, JoinSpec],
    key_type: str,
    value_type: str,
    json_values: bool,
    spark_partitions: int | None,
    partitioned: bool = False,
) -> Any:
    """The result frame (the processor path's schema, :data:`kjoin.spark.passes.task.RESULT_FIELDS`)
    of the ``records`` frame, computed with window functions only. ``partitioned``:
    ``records`` is already placed by Kafka task (:func:`kjoin.spark.placement.by_partition`); else they are
    hash-partitioned by ``(scenario, partition)``, which the windows reuse (:func:`kjoin.spark.placement.clustered`)."""
    grouped = group_by_task(records, partitioned, spark_partitions)
    in_task = Window.partitionBy("scenario", "partition").orderBy(*PROCESSING_ORDER)
    numbered = grouped.withColumn(
        "step", F.coalesce(F.col("position"), F.row_number().over(in_task) - 1).cast("bigint")
    )
    render = _renderer(value_type, json_values)
    by_join: dict[str, list[int]] = {}
    for scenario_id, spec in specs.items():
        by_join.setdefault(spec.join, []).append(scenario_id)
    parts = []
    for join, ids in sorted(
        (by_join or {"stream-table": []}).items()
    ):  # no scenarios: an empty frame of the same schema
        subset = numbered if len(by_join) == 1 else numbered.filter(F.col("scenario").isin(ids))
        flags = _Flags({i: specs[i] for i in ids})
        build = _stream_table if join == "stream-table" else _table_table
        parts.append(build(subset, flags, render))
    results = parts[0]
    for part in parts[1:]:
        results = results.unionByName(part)
    types = {"KEY": key_type, "VALUE": value_type, "long": "bigint"}
    return results.select(*[F.col(name).cast(types.get(kind, kind)).alias(name) for name, kind in RESULT_FIELDS])


# -- per-scenario configuration as columns ------------------------------------------------
class _Flags:
    """Each configuration property as a column: a literal when every scenario agrees, else
    a ``CASE`` on the scenario id."""

    def __init__(self, specs: Mapping[int, JoinSpec]) -> None:
        self.specs = specs

    def column(self, of: Callable[[JoinSpec], Any]) -> Any:

        groups: dict[Any, list[int]] = {}
        for scenario_id, spec in self.specs.items():
            groups.setdefault(of(spec), []).append(scenario_id)
        values = sorted(groups, key=repr)
        if not values:
            return F.lit(False)
        if len(values) == 1:
            return F.lit(values[0])
        expr = None
        for value in values[:-1]:
            test = F.col("scenario").isin(groups[value])
            expr = F.when(test, F.lit(value)) if expr is None else expr.when(test, F.lit(value))
        return expr.otherwise(F.lit(values[-1]))

    def variant(self, name: str) -> Any:
        """Is the scenario's variant ``name`` (a boolean column)."""
        return self.column(lambda c: c.variant == name)

    def outer(self, side: str) -> Any:
        """Does a record of ``side`` without a partner come out (a boolean column; :meth:`Variant.outer`)."""
        return self.column(lambda spec: spec.variant.outer(side))

    def flag(self, name: str) -> Any:
        return self.column(lambda c: bool(getattr(c.semantics, name)))


def _renderer(value_type: str, json_values: bool) -> Callable[[Any], Any]:
    """``render_value`` as a column expression, for the value encodings :func:`unsupported` accepts."""

    def render(value: Any) -> Any:
        text = value.cast("string")
        if json_values:  # canonical JSON text: a JSON string renders bare, anything else as its text
            decoded = F.from_json(F.concat(F.lit("["), text, F.lit("]")), "array<string>").getItem(0)
            text = F.when(text.startswith('"'), decoded).otherwise(text)
        return F.coalesce(text, F.lit("null"))

    return render


def _result(
    row: Any, fate: Any, reason: Any, kind: Any, left: Any, right: Any, value: Any, ts: Any, tombstone: Any
) -> list[Any]:
    """The result columns of a frame with one result per record (``row`` output or step)."""

    is_output = row == F.lit("output")
    null = F.lit(None)
    return [
        row.alias("row"),
        F.col("scenario"),
        F.col("partition"),
        F.col("step"),
        F.col("side"),
        F.col("offset"),
        F.col("key"),
        F.when(is_output, left).alias("left"),
        F.when(is_output, right).alias("right"),
        F.when(is_output, value).alias("value"),
        F.when(is_output, ts).otherwise(F.col("ts")).alias("ts"),
        F.when(is_output, tombstone).alias("tombstone"),
        F.when(is_output, kind).alias("kind"),
        F.when(is_output, F.col("step")).alias("origin_step"),
        F.when(~is_output, fate).alias("fate"),
        F.when(~is_output, reason).alias("reason"),
        null.cast("bigint").alias("until_ms"),
    ]


def _case(*branches: tuple[Any, Any], otherwise: Any) -> Any:

    expr = None
    for test, value in branches:
        expr = F.when(test, value) if expr is None else expr.when(test, value)
    return expr.otherwise(otherwise)


def _last_state(side: str) -> Any:
    """The state of ``side``'s table for the record's key just before the record: a struct
    ``(v, t)`` of the last update (``v`` null for a tombstone), or null when none came."""
    before = (
        Window.partitionBy("scenario", "partition", "key").orderBy("step").rowsBetween(Window.unboundedPreceding, -1)
    )
    update = F.when(F.col("side") == side, F.struct(F.col("value").alias("v"), F.col("ts").alias("t")))
    return F.last(update, ignorenulls=True).over(before)


# -- KStream-KTable (kjoin.joins.stream_table) ---------------------------------------------
def _stream_table(frame: Any, flags: _Flags, render: Callable[[Any], Any]) -> Any:

    frame = frame.withColumn("_table", _last_state("right"))
    kip77, relaxed = flags.flag("kip77"), flags.flag("relaxed_null_keys")
    side, key, value = F.col("side"), F.col("key"), F.col("value")
    table_value = F.col("_table.v")
    found = table_value.isNotNull()
    right, key_null = side == "right", key.isNull()
    null_key_joins = flags.variant("left") & value.isNotNull() & relaxed
    OUTPUT, STEP = F.lit("output"), F.lit("step")
    # (row, fate, reason) by the processor's rules, in its order.
    cases = [
        (right & key_null, (STEP, Fate.DROPPED, Reason.NULL_KEY)),
        (right, (STEP, Fate.STORED, Reason.TABLE_UPDATE)),
        (key_null & null_key_joins, (OUTPUT, Fate.JOINED, None)),
        (key_null, (STEP, Fate.DROPPED, Reason.NULL_KEY)),
        (value.isNull() & kip77, (STEP, Fate.DROPPED, Reason.NULL_VALUE)),
        (~found & flags.variant("inner"), (STEP, Fate.NO_MATCH, Reason.NO_PARTNER)),
    ]
    row, fate, reason = _outcome(cases, (OUTPUT, Fate.JOINED, None))
    kind = _case(
        (key_null, F.lit(OutputKind.NULL_KEY.value)),
        (found, F.lit(OutputKind.JOINED.value)),
        otherwise=F.lit(OutputKind.UNMATCHED.value),
    )
    left_value = value
    right_value = F.when(~key_null, table_value)
    joined = F.concat(render(left_value), F.lit("-"), render(right_value))
    return frame.select(*_result(row, fate, reason, kind, left_value, right_value, joined, F.col("ts"), F.lit(False)))


def _outcome(
    cases: list[tuple[Any, tuple[Any, Fate, Reason | None]]], otherwise: tuple[Any, Fate, Reason | None]
) -> tuple[Any, Any, Any]:

    def text(member: Any) -> Any:
        return F.lit(None).cast("string") if member is None else F.lit(member.value)

    row = _case(*[(test, out[0]) for test, out in cases], otherwise=otherwise[0])
    fate = _case(*[(test, text(out[1])) for test, out in cases], otherwise=text(otherwise[1]))
    reason = _case(*[(test, text(out[2])) for test, out in cases], otherwise=text(otherwise[2]))
    return row, fate, reason


# -- KTable-KTable (kjoin.joins.table_table) -----------------------------------------------
def _table_table(frame: Any, flags: _Flags, render: Callable[[Any], Any]) -> Any:

    frame = frame.withColumn("_left", _last_state("left")).withColumn("_right", _last_state("right"))
    kip77, ts_max = flags.flag("kip77"), flags.flag("table_table_output_ts_is_max")
    inner, left = flags.variant("inner"), flags.variant("left")
    side, key, new = F.col("side"), F.col("key"), F.col("value")
    is_left = side == "left"
    mine = F.when(is_left, F.col("_left")).otherwise(F.col("_right"))
    other = F.when(is_left, F.col("_right")).otherwise(F.col("_left"))
    other_value, other_ts = other.getField("v"), other.getField("t")
    has_other = other_value.isNotNull()
    # a record of an outer side comes out without a partner, and its table sends the old value
    outer_side = F.when(is_left, flags.outer("left")).otherwise(flags.outer("right"))
    old = F.when(outer_side, mine.getField("v"))
    OUTPUT, STEP = F.lit("output"), F.lit("step")
    JOINED = (OUTPUT, Fate.JOINED, None)
    # KIP-77 rules (TableTableJoin._rule); each output is "emit" or "tombstone".
    left_right_update = left & ~is_left
    new_rule = [
        (left_right_update & ~has_other, (STEP, Fate.NO_MATCH, Reason.NO_PARTNER)),
        (left_right_update, JOINED),
        (~has_other & ~outer_side, (STEP, Fate.NO_MATCH, Reason.NO_PARTNER)),
        (~has_other & new.isNull() & old.isNull(), (STEP, Fate.STORED, Reason.NOTHING_TO_DELETE)),
    ]
    new_tombstone = ~left_right_update & new.isNull() & (other_value.isNull() | ~outer_side | left)
    # Old rules (TableTableJoin._old_rule): every update emits, a result or a tombstone.
    ok = _case(
        (inner, new.isNotNull() & other_value.isNotNull()),
        (left, F.when(is_left, new.isNotNull()).otherwise(other_value.isNotNull())),
        otherwise=new.isNotNull() | other_value.isNotNull(),
    )
    cases = [(key.isNull(), (STEP, Fate.DROPPED, Reason.NULL_KEY))]
    cases += [(kip77 & test, out) for test, out in new_rule]
    row, fate, reason = _outcome(cases, JOINED)
    tombstone = F.when(kip77, new_tombstone).otherwise(~ok)
    kind = _case(
        (tombstone, F.lit(OutputKind.TOMBSTONE.value)),
        (has_other, F.lit(OutputKind.JOINED.value)),
        otherwise=F.lit(OutputKind.UNMATCHED.value),
    )
    left_value = F.when(is_left, new).otherwise(other_value)
    right_value = F.when(is_left, other_value).otherwise(new)
    joined = F.when(~tombstone, F.concat(render(left_value), F.lit("-"), render(right_value)))
    ts = F.when(has_other & ts_max, F.greatest(F.col("ts"), other_ts)).otherwise(F.col("ts"))
    return frame.select(*_result(row, fate, reason, kind, left_value, right_value, joined, ts, tombstone))
