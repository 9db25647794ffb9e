"""Check :meth:`kjoin.spark.SparkRun.why` on a large generated pair of topics with known causes.

    python -m kjoin.spark.debug.whycheck --records 1000000 --samples 20

writes ``orders`` and ``customers`` Parquet topics (a stream-table left join: every order looks
up its customer) in which every order's fate is planted: it joins, its customer comes later, has
an earlier timestamp but is processed later, was deleted, never exists, is in another partition,
or the order has a null key or a null value. It then asks ``why`` about sampled orders, checks
each verdict against the planted cause and prints the time per call (the first call, which
builds the run's index, apart from the later ones), then checks that the run's summary counts
exactly the planted causes. With ``--write`` it first writes the run as a user would,
``write_parquet(out, why_index=True)``, timing the outputs, steps and summary apart from the
index, and every ``why`` call after it reads the index; the summary is then read back from
``summary/``. Not a timed test: the numbers depend on the machine. A second run
with the same ``--path``, ``--records`` and ``--partitions`` reuses the topics written there.

The planting: group ``g`` owns the time slot ``[100 g, 100 g + 100)`` of partition ``g mod P``
and the key ``K<g>`` (whatever its default partition: :func:`planted_app` plants misrouted records among
correctly routed ones); in each slot the order has ts ``100 g + 10``. For ``partner-processed-later``
the customers partition holds, just before the customer (ts ``100 g + 5``), another key's record
with ts ``100 g + 60``: the task cannot take the customer before the orders partition has
reached that timestamp, so it processes the order first.

:func:`planted_app` plants an application's topics instead: keys in their default partitions, and
among them records written to another partition (a customer, an update, a tombstone, an order) and customers
written with a null key, for a stream-table join of orders and customers and a stream-stream join of orders and
payments within ten minutes; ``tests/test_spark_why_audit.py`` checks every verdict, reason and audit row
against it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from ...partitioner import default_partition
from .. import from_files, local_session, run_join

__all__ = ["CAUSES", "planted", "main", "planted_app", "app_groups", "write_topic"]

CAUSES = (
    "joined",
    "partner-later",
    "partner-processed-later",
    "partner-deleted",
    "partner-never",
    "partner-other-partition",
    "null-key",
    "null-value",
)
"""The planted causes, in the order groups cycle through them."""

SLOT_MS = 100


def _group(g: int, cause: str, partitions: int) -> Iterator[tuple[str, str | None, str | None, int, int]]:
    """``(side, key, value, ts, partition)`` of group ``g``, the order last."""
    p, base, key = g % partitions, SLOT_MS * g, f"K{g}"
    if cause == "joined":
        yield ("right", key, f"customer-{g}", base + 1, p)
    elif cause == "partner-later":
        yield ("right", key, f"customer-{g}", base + 40, p)
    elif cause == "partner-processed-later":
        yield ("right", f"X{g}", f"blocker-{g}", base + 60, p)
        yield ("right", key, f"customer-{g}", base + 5, p)
    elif cause == "partner-deleted":
        yield ("right", key, f"customer-{g}", base + 1, p)
        yield ("right", key, None, base + 2, p)
    elif cause == "partner-other-partition":
        yield ("right", key, f"customer-{g}", base + 1, (p + 1) % partitions)
    order_key = None if cause == "null-key" else key
    order_value = None if cause == "null-value" else f"order-{g}"
    yield ("left", order_key, order_value, base + 10, p)


def _planted_rows(groups: int, partitions: int) -> Iterator[tuple[str, tuple, str]]:
    """``(side, (key, value, ts, partition, offset), cause)`` of every record, group by group."""
    if partitions < 2:
        raise ValueError("partitions: the other-partition cause needs at least 2")
    offsets = {"left": [0] * partitions, "right": [0] * partitions}
    for g in range(groups):
        cause = CAUSES[g % len(CAUSES)]
        for side, key, value, ts, p in _group(g, cause, partitions):
            offset = offsets[side][p]
            offsets[side][p] += 1
            yield side, (key, value, ts, p, offset), cause


def planted(groups: int, partitions: int = 4) -> tuple[list[tuple], list[tuple], dict[tuple[int, int], str]]:
    """``(orders, customers, causes)``: rows ``(key, value, ts, partition, offset)`` of both
    topics and, per order ``(partition, offset)``, its planted cause. Within each partition
    records come in timestamp order of their slots, offsets counting up."""
    rows: dict[str, list[tuple]] = {"left": [], "right": []}
    causes: dict[tuple[int, int], str] = {}
    for side, row, cause in _planted_rows(groups, partitions):
        rows[side].append(row)
        if side == "left":
            causes[(row[3], row[4])] = cause
    return rows["left"], rows["right"], causes


def write_topics(path: str, groups: int, partitions: int) -> tuple[dict[tuple[int, int], str], bool]:
    """Write ``path/orders.parquet`` and ``path/customers.parquet`` unless ``path/planted.json``
    says they hold these groups already; return the planted causes and whether they were reused.
    Written in chunks: memory holds the causes, not the topics."""

    meta = os.path.join(path, "planted.json")
    wanted = {"groups": groups, "partitions": partitions, "causes": list(CAUSES)}
    reuse = False
    if os.path.exists(meta):
        with open(meta) as file:
            reuse = json.load(file) == wanted
        if not reuse:
            os.remove(meta)
    os.makedirs(path, exist_ok=True)
    schema = pa.schema(
        [
            ("key", pa.string()),
            ("value", pa.string()),
            ("ts", pa.int64()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
        ]
    )
    writers = (
        {}
        if reuse
        else {
            side: pq.ParquetWriter(os.path.join(path, f"{name}.parquet"), schema)
            for side, name in (("left", "orders"), ("right", "customers"))
        }
    )
    chunks: dict[str, list[tuple]] = {"left": [], "right": []}

    def flush(side: str) -> None:
        if chunks[side] and writers:
            columns = list(zip(*chunks[side]))
            writers[side].write_table(pa.table(dict(zip(schema.names, columns)), schema=schema))
        chunks[side] = []

    causes: dict[tuple[int, int], str] = {}
    for side, row, cause in _planted_rows(groups, partitions):
        if side == "left":
            causes[(row[3], row[4])] = cause
        if writers:
            chunks[side].append(row)
            if len(chunks[side]) >= 500_000:
                flush(side)
    for side, writer in writers.items():
        flush(side)
        writer.close()
    with open(meta, "w") as file:
        json.dump(wanted, file)
    return causes, reuse


def summary_mismatches(summary: object, causes: dict[tuple[int, int], str]) -> list[str]:
    """The totals of a run's ``summary()`` that differ from the planted causes (one Spark aggregation)."""
    counted = [c for c in summary.columns if c not in ("scenario", "partition", "key")]
    totals = summary.groupBy().sum(*counted).first()
    planted_counts = {cause: sum(1 for c in causes.values() if c == cause) for cause in CAUSES}
    expected = {
        "matched": planted_counts["joined"],
        **{cause: planted_counts[cause] for cause in CAUSES if cause.startswith("partner-")},
        "left-null-value": planted_counts["null-value"],
        "null-key": planted_counts["null-key"],
        "unexplained": 0,
    }
    found = {name: totals[f"sum({name})"] or 0 for name in counted}
    return [
        f"{name}: {found.get(name)} counted, {count} planted"
        for name, count in expected.items()
        if found.get(name) != count
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kjoin.spark.debug.whycheck", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="total records of both topics (about)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--samples", type=int, default=16, help="orders to ask why about")
    parser.add_argument("--path", default="build/whycheck", help="where the topics are written")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--write", action="store_true", help="write the run with write_parquet(..., why_index=True) before asking why"
    )
    args = parser.parse_args(argv)

    per_group = sum(len(list(_group(0, c, 2))) for c in CAUSES) / len(CAUSES)
    groups = max(len(CAUSES), int(args.records / per_group))
    started = time.perf_counter()
    causes, reused = write_topics(args.path, groups, args.partitions)
    print(
        f"{'reused' if reused else 'wrote'} {groups} groups ({int(groups * per_group)} records, "
        f"{args.partitions} partitions) in {time.perf_counter() - started:.1f} s"
    )
    spark = local_session()
    run = run_join(
        from_files(spark, f"{args.path}/orders.parquet"),
        from_files(spark, f"{args.path}/customers.parquet"),
        "stream-table",
        "left",
    )
    if args.write:
        out = f"{args.path}/run"
        started = time.perf_counter()
        run.write_parquet(out)
        wrote = time.perf_counter() - started
        started = time.perf_counter()
        run.why_index(f"{out}/why-index")
        print(
            f"write_parquet: outputs, steps and summary {wrote:.1f} s; "
            f"why_index=True adds {time.perf_counter() - started:.1f} s"
        )
    rng = random.Random(args.seed)
    by_cause: dict[str, list[tuple[int, int]]] = {}
    for where, cause in causes.items():
        by_cause.setdefault(cause, []).append(where)
    picks = [rng.choice(sorted(by_cause[CAUSES[i % len(CAUSES)]])) for i in range(args.samples)]
    wrong, times = 0, []
    for partition, offset in picks:
        started = time.perf_counter()
        diagnosis = run.why(partition=partition, offset=offset, side="left")
        elapsed = time.perf_counter() - started
        times.append(elapsed)
        expected = causes[(partition, offset)]
        ok = diagnosis.verdict == expected
        wrong += not ok
        print(
            f"partition {partition} offset {offset}: {diagnosis.verdict:<24} "
            f"{'ok' if ok else 'WRONG, planted ' + expected}  {elapsed:5.1f} s"
        )
    later = sorted(times[1:])
    first = "reads the written index" if args.write else "builds the index"
    print(
        f"{len(picks)} calls: first {times[0]:.1f} s ({first})"
        + (f", later median {later[len(later) // 2]:.2f} s, max {later[-1]:.2f} s" if later else "")
        + f"; {wrong} wrong"
    )
    started = time.perf_counter()
    summary = spark.read.parquet(f"{args.path}/run/summary") if args.write else run.summary()
    mismatches = summary_mismatches(summary, causes)
    print(
        f"summary ({time.perf_counter() - started:.1f} s): "
        + ("; ".join(mismatches) if mismatches else "every planted cause counted exactly")
    )
    return 1 if wrong or mismatches else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


# -- an application's topics: misrouted records among correctly routed ones --------------------------------
APP_CAUSES = {
    "stream-table": (
        "joined",
        "partner-later",
        "partner-processed-later",
        "partner-deleted",
        "partner-never",
        "partner-other-partition",
        "misrouted-before-later",
        "misrouted-before-tombstone",
        "misrouted-order",
        "joined-stale",
        "joined-deleted",
        "partner-null-key",
        "null-key",
        "null-value",
    ),
    "stream-stream": (
        "joined",
        "partner-other-partition",
        "misrouted-beside-outside",
        "partner-outside-window",
        "outside-and-elsewhere",
        "partner-never",
        "null-key",
    ),
}
"""The causes :func:`planted_app` plants per join, in the order groups cycle through them. Beyond
:data:`CAUSES`: ``misrouted-before-later`` (the customer went to another partition, a later update to the
right one), ``misrouted-before-tombstone`` (the same with a later tombstone), ``misrouted-order`` (the order
went to another partition), ``joined-stale``/``joined-deleted`` (an update/tombstone went to another partition
before the order), ``partner-null-key`` (the customer was written with a null key, its value naming the key);
stream-stream: ``misrouted-beside-outside`` (the in-window payment went to another partition, an
out-of-window one to the right one), ``outside-and-elsewhere`` (every payment went elsewhere, outside the
window)."""

APP_VERDICTS = {
    "joined": "joined",
    "misrouted-before-later": "partner-other-partition",
    "misrouted-before-tombstone": "partner-other-partition",
    "misrouted-order": "partner-other-partition",
    "misrouted-beside-outside": "partner-other-partition",
    "outside-and-elsewhere": "partner-outside-window",
}
"""The verdict of ``why`` for each planted cause (the cause itself where not listed)."""

APP_WINDOW_MS = 600_000
"""The stream-stream join's window: payments within ten minutes of their order (before and after, no grace)."""


def key_in(prefix: str, partition: int, partitions: int) -> str:
    """The first key ``prefix``, ``prefix-1``, ``prefix-2`` ... whose default partition is ``partition``."""
    j = 0
    while True:
        key = prefix if j == 0 else f"{prefix}-{j}"
        if default_partition(key, partitions) == partition:
            return key
        j += 1


def planted_app(groups: int, partitions: int = 4, join: str = "stream-table") -> dict:
    """Orders and customers (``stream-table``, a left join) or orders and payments (``stream-stream``, a left join
    within :data:`APP_WINDOW_MS`) in which every record is in its key's default partition but the misrouted ones
    planted. Returns ``{"left": rows, "right": rows, "causes": {(partition, offset): cause}, "misrouted":
    {(side, partition, offset): (expected partition, effect)}}``; rows are ``(key, value, ts, partition,
    offset)``, in timestamp order within each partition. ``effect``: ``nulls``, ``stale_joins`` or
    ``missed_deletes``, the result the record spoils."""
    causes_cycle = APP_CAUSES[join]
    slot = 100 if join == "stream-table" else 10 * APP_WINDOW_MS
    window = APP_WINDOW_MS
    rows: dict[str, list[tuple]] = {"left": [], "right": []}
    offsets = {"left": [0] * partitions, "right": [0] * partitions}
    causes: dict[tuple[int, int], str] = {}
    misrouted: dict[tuple[str, int, int], tuple[int, str]] = {}

    def put(side: str, key: Any, value: Any, ts: int, partition: int, home: int | None = None, effect: str = "") -> int:
        offset = offsets[side][partition]
        offsets[side][partition] += 1
        rows[side].append((key, value, ts, partition, offset))
        if home is not None and home != partition:
            misrouted[(side, partition, offset)] = (home, effect)
        return offset

    for g in range(groups):
        cause = causes_cycle[g % len(causes_cycle)]
        home = g % partitions
        wrong = (home + 1) % partitions
        base = slot * g
        key = key_in(f"C{g}", home, partitions)
        order_partition = home
        if join == "stream-table":
            if cause == "joined":
                put("right", key, f"customer-{g}", base + 1, home)
            elif cause == "partner-later":
                put("right", key, f"customer-{g}", base + 40, home)
            elif cause == "partner-processed-later":
                put("right", key_in(f"X{g}", home, partitions), f"blocker-{g}", base + 60, home)
                put("right", key, f"customer-{g}", base + 5, home)
            elif cause == "partner-deleted":
                put("right", key, f"customer-{g}", base + 1, home)
                put("right", key, None, base + 2, home)
            elif cause == "partner-other-partition":
                put("right", key, f"customer-{g}", base + 1, wrong, home, "nulls")
            elif cause == "misrouted-before-later":
                put("right", key, f"customer-{g}", base + 1, wrong, home, "nulls")
                put("right", key, f"customer-{g}-v2", base + 40, home)
            elif cause == "misrouted-before-tombstone":
                put("right", key, f"customer-{g}", base + 1, wrong, home, "nulls")
                put("right", key, None, base + 40, home)
            elif cause == "misrouted-order":
                put("right", key, f"customer-{g}", base + 1, home)
                order_partition = wrong
            elif cause == "joined-stale":
                put("right", key, f"customer-{g}", base + 1, home)
                put("right", key, f"customer-{g}-v2", base + 2, wrong, home, "stale_joins")
            elif cause == "joined-deleted":
                put("right", key, f"customer-{g}", base + 1, home)
                put("right", key, None, base + 2, wrong, home, "missed_deletes")
            elif cause == "partner-null-key":
                put("right", None, f'{{"id": "{key}", "name": "customer {g}"}}', base + 1, home)
            order_ts = base + 10
        else:
            order_ts = base + window
            if cause == "joined":
                put("right", key, f"payment-{g}", order_ts + 1_000, home)
            elif cause == "partner-other-partition":
                put("right", key, f"payment-{g}", order_ts + 1_000, wrong, home, "nulls")
            elif cause == "misrouted-beside-outside":
                put("right", key, f"payment-{g}-early", order_ts - window - 5_000, home)
                put("right", key, f"payment-{g}", order_ts + 1_000, wrong, home, "nulls")
            elif cause == "partner-outside-window":
                put("right", key, f"payment-{g}", order_ts + window + 5_000, home)
            elif cause == "outside-and-elsewhere":
                put("right", key, f"payment-{g}", order_ts + window + 5_000, wrong, home, "")
        order_key = None if cause == "null-key" else key
        order_value = None if cause == "null-value" else f"order-{g}"
        offset = put(
            "left", order_key, order_value, order_ts, order_partition, None if order_key is None else home, "nulls"
        )
        causes[(order_partition, offset)] = cause
        if join == "stream-stream":  # the last group's window closes: stream time moves past it
            pass
    if join == "stream-stream":
        end = slot * groups + 3 * window
        for p in range(partitions):
            put("left", key_in(f"END{p}", p, partitions), "end", end, p)
            put("right", key_in(f"END{p}", p, partitions), "end", end, p)
    for side in rows:
        rows[side].sort(key=lambda r: (r[3], r[4]))
    return {"left": rows["left"], "right": rows["right"], "causes": causes, "misrouted": misrouted}


def app_groups(records: int, join: str, partitions: int = 4) -> int:
    """How many groups of :func:`planted_app` make about ``records`` records of both topics (at least one group of
    every cause)."""
    causes = len(APP_CAUSES[join])

    def size(groups: int) -> int:
        planted = planted_app(groups, partitions, join)
        return len(planted["left"]) + len(planted["right"])

    per_cycle = size(2 * causes) - size(causes)  # without the records every run has once (the windows' end)
    return max(causes, records * causes // per_cycle)


def write_topic(path: Any, rows: list[tuple]) -> str:
    """``rows`` (``key, value, ts, partition, offset``, as :func:`planted_app` gives them) written as one Parquet
    file at ``path``, for :func:`kjoin.spark.from_files`; returns the path."""
    names = ["key", "value", "ts", "partition", "offset"]
    types = [pa.string(), pa.string(), pa.int64(), pa.int32(), pa.int64()]
    pq.write_table(pa.table({n: pa.array([r[i] for r in rows], t) for i, (n, t) in enumerate(zip(names, types))}), path)
    return str(path)
