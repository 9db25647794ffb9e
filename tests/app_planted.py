"""A whole app and its planted topics, for the whole-app debugging tests and benchmark.

The app (:func:`app`): orders re-keyed by customer (a repartition topic), orders of test accounts filtered out,
left-joined with the customers table, left-joined with the products GlobalKTable, written to ``enriched-orders``, and
counted per customer in 1-hour windows (no grace) to ``orders-per-hour``; 4 partitions.

The topics (:func:`planted`): ``n`` orders, most of which find their customer and product; every tenth order's
customer carries one planted cause, named in :attr:`Planted.causes` (order key -> cause):

* ``late-creation``: the customer is created after the order (``partner-later`` at the customers join);
* ``tombstone``: the customer is deleted before the order (``partner-deleted``);
* ``misrouted-creation``: the customer is created in a partition that is not its key's (``partner-other-partition``);
* ``misrouted-update``: the customer's update before the order went to a wrong partition, so the order joins the
  older value (``joined-stale``);
* ``late-in-window``: the order's timestamp is more than an hour behind its task's stream time (the count drops it:
  ``late-in-window``);
* ``null-key``: the order names no customer (``null-key`` at the customers join, the count skips it);
* ``test-account``: the order is a test account's (``dropped-by-filter``);
* ``unknown-product``: the order's product is not in the products table (``partner-never`` at the products join).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import kjoin
from kjoin.partitioner import default_partition

PARTITIONS = 4
HOUR_MS = 3_600_000
CAUSES = (
    "late-creation",
    "tombstone",
    "misrouted-creation",
    "misrouted-update",
    "late-in-window",
    "null-key",
    "test-account",
    "unknown-product",
)
VERDICT_OF = {
    "late-creation": ("customers-join", "partner-later"),
    "tombstone": ("customers-join", "partner-deleted"),
    "misrouted-creation": ("customers-join", "partner-other-partition"),
    "misrouted-update": ("customers-join", "joined-stale"),
    "late-in-window": ("per-hour", "late-in-window"),
    "null-key": ("customers-join", "null-key"),
    "test-account": ("real-orders", "dropped-by-filter"),
    "unknown-product": ("products-join", "partner-never"),
}
"""A planted cause -> (the node whose verdict names it, the verdict)."""


def app(semantics: str | None = None) -> kjoin.Topology:
    """The app (``semantics``: a Kafka version, default the latest)."""
    b = kjoin.Topology(partitions=PARTITIONS, semantics=semantics)
    customers = b.table("customers")
    products = b.global_table("products")
    enriched = (
        b.stream("orders")
        .filter(lambda key, value: not value.get("test"), name="real-orders")
        .select_key(lambda key, value: value.get("customer"), name="by-customer")
        .left_join(customers, lambda order, customer: {**order, "name": customer}, name="customers-join")
        .left_join(
            products,
            lambda order, product: {**order, "product_name": product},
            key_selector=lambda key, value: value["product"],
            name="products-join",
        )
    )
    enriched.to("enriched-orders")
    (
        enriched.group_by_key()
        .windowed_by({"size_ms": HOUR_MS, "grace_ms": 0})
        .count(name="per-hour")
        .to_stream()
        .to("orders-per-hour")
    )
    return b


@dataclass
class Planted:
    events: list[dict[str, Any]]
    causes: dict[str, str] = field(default_factory=dict)
    """Order key -> its planted cause."""
    misrouted: set[tuple[str, int, int]] = field(default_factory=set)
    """(topic, partition, offset) of every record planted in a partition that is not its key's."""


def _home(key: str) -> int:
    return default_partition(key, PARTITIONS)


def planted(n: int, customers: int = 40, products: int = 10) -> Planted:
    """``n`` orders (one a minute from hour 4), their customers and products, every tenth order with a planted
    cause (:data:`CAUSES` in turn). Deterministic."""
    events: list[dict[str, Any]] = []
    offsets: dict[tuple[str, int], int] = {}
    result = Planted(events)

    def add(topic: str, key: Any, value: Any, ts: int, partition: int | None = None, misrouted: bool = False) -> None:
        if partition is None:
            partition = 0 if key is None else _home(key) if topic != "products" else None
        event = {"topic": topic, "key": key, "value": value, "ts": ts}
        if partition is not None:
            event["partition"] = partition
            offset = offsets.get((topic, partition), 0)
            offsets[(topic, partition)] = offset + 1
            if misrouted:
                result.misrouted.add((topic, partition, offset))
        events.append(event)

    for p in range(products):
        add("products", f"p{p}", f"product-{p}", 0)
    for c in range(customers):
        add("customers", f"c{c}", f"name-c{c}", 0)
    base = 4 * HOUR_MS
    for i in range(n):
        key, ts = f"o{i}", base + i * 60_000
        value: dict[str, Any] = {"customer": f"c{i % customers}", "product": f"p{i % products}"}
        cause = CAUSES[(i // 10) % len(CAUSES)] if i % 10 == 5 else None
        if cause is not None:
            result.causes[key] = cause
            own = f"x{i}"
            if cause == "late-creation":
                value["customer"] = own
                add("customers", own, f"name-{own}", ts + 30_000)
            elif cause == "tombstone":
                value["customer"] = own
                add("customers", own, f"name-{own}", 0)
                add("customers", own, None, ts - 30_000)
            elif cause == "misrouted-creation":
                value["customer"] = own
                add("customers", own, f"name-{own}", 0, (_home(own) + 1) % PARTITIONS, misrouted=True)
            elif cause == "misrouted-update":
                value["customer"] = own
                add("customers", own, f"old-{own}", 0)
                add("customers", own, f"new-{own}", ts - 30_000, (_home(own) + 1) % PARTITIONS, misrouted=True)
            elif cause == "late-in-window":
                ts -= 3 * HOUR_MS
            elif cause == "null-key":
                value["customer"] = None
            elif cause == "test-account":
                value["test"] = True
            elif cause == "unknown-product":
                value["product"] = "p-unknown"
        add("orders", key, value, ts)
    return result


def document(topics: Planted) -> dict[str, Any]:
    """:func:`app` as a topology document (``kjoin debug app.yaml``): the document's vocabulary filters the test
    accounts' orders by key and joins with the ``object`` joiner (``{left, right}``), so the products join reads
    ``left.product``."""
    tests = sorted(key for key, cause in topics.causes.items() if cause == "test-account")
    return {
        "name": "orders enriched and counted",
        "partitions": PARTITIONS,
        "schedule": "stages",
        "topology": [
            {"name": "orders", "stream": "orders"},
            {"name": "customers", "table": "customers"},
            {"name": "products", "global_table": "products"},
            {"name": "real-orders", "filter": {"key_not_in": tests}, "input": "orders"},
            {"name": "by-customer", "select_key": {"field": "customer"}, "input": "real-orders"},
            {"name": "customers-join", "left_join": ["by-customer", "customers"], "joiner": "object"},
            {
                "name": "products-join",
                "left_join": ["customers-join", "products"],
                "key_selector": {"field": "left.product"},
                "joiner": "object",
            },
            {"name": "enriched", "to": "enriched-orders", "input": "products-join"},
            {"name": "grouped", "group_by_key": True, "input": "products-join"},
            {"name": "windowed", "windowed_by": {"size_ms": HOUR_MS, "grace_ms": 0}, "input": "grouped"},
            {"name": "per-hour", "count": True, "input": "windowed"},
            {"name": "per-hour-stream", "to_stream": True, "input": "per-hour"},
            {"name": "counted", "to": "orders-per-hour", "input": "per-hour-stream"},
        ],
    }


def write_dumps(topics: Planted, directory: Any, partitions: bool = True) -> dict[str, str]:
    """The planted topics as ``kcat -C -J`` dumps (orders, customers: partition, offset, ts, key, payload as JSON
    text) and JSON lines (products, without partitions when ``partitions`` is false). Returns topic -> path."""
    import json
    import os

    from kjoin.topology.events import input_records

    placed = input_records(app().build().graph, topics.events)
    paths = {name: os.path.join(str(directory), f"{name}.jsonl") for name in ("orders", "customers", "products")}
    files = {name: open(path, "w", encoding="utf-8") for name, path in paths.items()}
    try:
        for record in placed:
            if record.topic == "products":
                row: dict[str, Any] = {"key": record.key, "value": record.value, "ts": record.ts}
                if partitions:
                    row |= {"partition": record.partition, "offset": record.offset}
            else:
                payload = None if record.value is None else json.dumps(record.value, separators=(",", ":"))
                row = {"topic": record.topic, "partition": record.partition, "offset": record.offset,
                       "tstype": "create", "ts": record.ts, "key": record.key, "payload": payload}  # fmt: skip
            files[record.topic].write(json.dumps(row) + "\n")
    finally:
        for file in files.values():
            file.close()
    return paths


def check_debug(topics: Planted, debug: Any) -> list[str]:
    """What the whole app's debugging must get right on the planted topics (``debug``: an
    :class:`~kjoin.spark.debug.topology_why.AppDebug`), as sentences naming each miss (none: all right):

    * every row of an order with nothing planted is ``joined``; every row of a planted order that is not ``joined``
      names the planted cause at its node (:data:`VERDICT_OF`), and each cause is named at least once (a
      late-in-window order's ``enriched-orders`` row is ``joined``: only the count drops it);
    * the summary counts the explained outputs, row for row;
    * the audit lists exactly the misrouted records.
    """
    failures: list[str] = []
    explained = debug.explained_outputs()
    named: set[str] = set()
    columns = ("topic", "input_topic", "input_partition", "input_offset", "verdict", "node")
    for topic, input_topic, partition, offset, verdict, node in zip(*(explained[name] for name in columns)):
        event = debug.trace.topics[input_topic][partition][offset]
        cause = topics.causes.get(event.key)
        if cause is None:
            if verdict != "joined":
                failures.append(f"{event.describe()}: nothing planted, but {verdict} at {node}")
            continue
        if verdict == "joined":
            if not (cause == "late-in-window" and topic == "enriched-orders"):
                failures.append(f"{event.describe()}: planted {cause}, but joined in {topic}")
            continue
        if (node, verdict) != VERDICT_OF[cause]:
            failures.append(f"{event.describe()}: planted {cause}, but {verdict} at {node}")
        else:
            named.add(cause)
    failures.extend(f"no verdict named {cause}" for cause in CAUSES if cause not in named)
    summary = debug.summary()
    counted = explained.assign(result=explained["offset"].isna().map({True: "none", False: "output"}))
    expected = counted.groupby(["topic", "result", "verdict", "node"], dropna=False).size()
    got = summary.set_index(["topic", "result", "verdict", "node"])["count"]
    if int(summary["count"].sum()) != len(explained) or sorted(expected.tolist()) != sorted(got.tolist()):
        failures.append("the summary does not count the explained outputs")
    audited = debug.audit()
    found = set(zip(audited["topic"], audited["partition"], audited["offset"]))
    if found != topics.misrouted:
        failures.append(f"the audit found {sorted(found ^ topics.misrouted)[:5]} wrongly")
    return failures
