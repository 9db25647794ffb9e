"""``kjoin debug`` (a whole app over its topics' dumps: counts by cause, the audit, the drops, a run written down)
and ``kjoin why RUN`` (one record's story, read from the written run in a new process).

The app: a topology document (``app.yaml``: its ``topology:``; its events, if any, are replaced by the topics given),
or a real application's ``describe()`` text (``--describe topology.txt``) with ``--functions app.py``, a Python file
whose ``functions`` mapping names each processor's function (as ``Topology.from_describe`` takes them).

The topics, ``--topic NAME=PATH`` each (or ``--topic NAME`` with ``--bootstrap-servers host:port``: the live topic,
every partition, offsets pinned, read through Spark's Kafka source: :mod:`kjoin.spark.debug.live_topics`): JSON lines
(``key, value, ts`` and ``partition``, optionally ``offset``), ``kcat -C -J`` dumps (``partition, offset, ts, key,
payload``: told by the ``payload`` field), or Parquet (``key, value, ts, partition[, offset]``). A record keeps the
partition it was read in: a record not in its key's partition is what the audit and the
``partner-other-partition``/``joined-stale`` verdicts find. A file without partitions is
refused unless ``--partitioned-by murmur2`` says its producer used Kafka's default partitioner (then kjoin places
each record by its key, and a misrouted record cannot be seen). Without offsets, a record's offset is its rank in its
partition in file order.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..records import render_value
from ..scenario import ScenarioError
from .trace import TopicRecord

__all__ = ["add_commands", "read_topic"]

PARTITIONED_BY = ("murmur2",)


def add_commands(commands: Any) -> None:
    """Add ``debug`` and ``why`` to the ``kjoin`` command's sub-commands."""
    debug = commands.add_parser(
        "debug",
        help="debug a whole app over its topics' dumps: verdicts by cause, the co-partitioning audit, the drops",
    )
    debug.add_argument("app", nargs="?", help="a topology document (YAML or JSON), or use --describe and --functions")
    debug.add_argument("--describe", metavar="TOPOLOGY.TXT", help="the app's topology.describe() text")
    debug.add_argument(
        "--functions", metavar="APP.PY", help="a Python file whose `functions` mapping gives each processor's function"
    )
    debug.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a topic the app reads and its dump: JSON lines, kcat -J lines or Parquet (repeat for each topic); "
        "with --bootstrap-servers, NAME alone reads the live topic",
    )
    debug.add_argument(
        "--bootstrap-servers",
        metavar="HOST:PORT",
        help="a Kafka cluster: each --topic NAME (no =PATH) is read from it, every partition, offsets pinned",
    )
    debug.add_argument(
        "--partitioned-by",
        choices=PARTITIONED_BY,
        help="how records of a file without partitions were partitioned (murmur2: Kafka's default partitioner)",
    )
    debug.add_argument(
        "--partitions", type=int, help="partitions of the app's topics, for --describe (default: those in the files)"
    )
    debug.add_argument(
        "--values",
        choices=("json", "string"),
        default="json",
        help="how kcat payloads and Parquet values are read: JSON text (default) or plain text",
    )
    debug.add_argument("--out", metavar="RUN", help="write the run here, for kjoin why RUN and kjoin.spark.open_run")
    debug.add_argument("--drops", type=int, default=10, help="how many dropped records to list (default 10)")
    debug.set_defaults(command=_debug)

    why = commands.add_parser("why", help="why a record of a written run (kjoin debug --out RUN) came out as it did")
    why.add_argument("run", metavar="RUN", help="the directory kjoin debug --out wrote")
    why.add_argument("--topic", required=True, help="the record's topic (an input or an output topic)")
    why.add_argument("--partition", type=int, required=True)
    why.add_argument("--offset", type=int, required=True)
    why.set_defaults(command=_why)


# -- the app ----------------------------------------------------------------------------------------
def _app(args: argparse.Namespace, partitions: int | None) -> Any:
    if args.app and args.describe:
        raise ScenarioError("kjoin debug: give a topology document or --describe, not both")
    if args.app:
        from ..scenario.inputs import read_document
        from .document import TopologyScenario, is_topology_document

        data = read_document(Path(args.app))
        if not is_topology_document(data):
            raise ScenarioError(f"{args.app}: not a topology document (it has no topology: list of nodes)")
        data = {**data, "events": []}  # the records are the topics given, not the document's events
        return TopologyScenario.from_dict(data, source=args.app).topology
    if not args.describe:
        raise ScenarioError(
            "kjoin debug: give the app: a topology document, or --describe topology.txt --functions app.py"
        )
    from .builder import Topology

    functions: Mapping[str, Any] = {}
    if args.functions:
        functions = _functions(args.functions)
    with open(args.describe, encoding="utf-8") as file:
        text = file.read()
    topology = Topology.from_describe(text, functions, partitions=partitions or 1)
    missing = topology.described.missing
    if missing:
        needs = "; ".join(f"{need.node}: {need.what}" for need in missing)
        raise ScenarioError(
            f"{args.describe}: kjoin needs more to run this app ({needs}); give each in the `functions` mapping of "
            f"{args.functions or '--functions app.py'}, by processor name"
        )
    return topology


def _functions(path: str) -> Mapping[str, Any]:
    spec = importlib.util.spec_from_file_location("kjoin_debug_app", path)
    if spec is None or spec.loader is None:
        raise ScenarioError(f"{path}: not a Python file kjoin can load")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    functions = getattr(module, "functions", None)
    if not isinstance(functions, Mapping):
        raise ScenarioError(
            f"{path}: no `functions` mapping; define functions = {{'processor-name': function, ...}} (the names are "
            "describe()'s processor names)"
        )
    return functions


# -- the topics -------------------------------------------------------------------------------------
def read_topic(name: str, path: str, values: str = "json") -> list[dict[str, Any]]:
    """The records of one dump as ``{key, value, ts, partition?, offset?}``, in file order."""
    if not os.path.exists(path):
        raise ScenarioError(f"--topic {name}={path}: no such file")
    if path.endswith(".parquet") or os.path.isdir(path):
        import pyarrow.parquet as pq

        rows = pq.read_table(path).to_pylist()
        return [_parquet_row(row, name, path, values, number) for number, row in enumerate(rows)]
    records = []
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ScenarioError(
                    f"--topic {name}={path}, line {number}: not JSON ({error.msg}); write one JSON object per line "
                    "(key, value, ts[, partition]) or dump with kcat -C -J"
                ) from None
            if not isinstance(row, dict):
                raise ScenarioError(f"--topic {name}={path}, line {number}: expected a JSON object, got {line[:60]!r}")
            if "payload" in row:  # kcat -J
                value = row["payload"]
                if values == "json" and isinstance(value, str):
                    value = _json(value, name, path, number)
                row = {k: row.get(k) for k in ("key", "ts", "partition", "offset")} | {"value": value}
            for field in ("key", "value", "ts"):
                if field not in row:
                    raise ScenarioError(
                        f"--topic {name}={path}, line {number}: no field {field!r}; a record has key, value, ts and "
                        "partition (kcat -J: partition, offset, ts, key, payload)"
                    )
            records.append(row)
    return records


def _json(text: str, name: str, path: str, where: Any) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ScenarioError(
            f"--topic {name}={path}, record {where}: the value {text[:60]!r} is not JSON text; pass --values string "
            "to read values as plain text"
        ) from None


def _parquet_row(row: dict[str, Any], name: str, path: str, values: str, number: int) -> dict[str, Any]:
    for field in ("key", "value", "ts"):
        if field not in row:
            raise ScenarioError(f"--topic {name}={path}: no column {field!r}; the columns are {', '.join(row)}")
    if values == "json" and isinstance(row["value"], str):
        row = {**row, "value": _json(row["value"], name, path, number)}
    return row


def _placed(topology: Any, topics: Mapping[str, list[dict[str, Any]]], partitioned_by: str | None) -> list[TopicRecord]:
    """The records on their topic partitions at their offsets; a file without partitions placed by ``partitioned_by``
    or refused."""
    graph = topology.graph
    sources = graph.sources()
    records: list[TopicRecord] = []
    for name, rows in topics.items():
        if name not in sources or graph.topics[name].internal:
            readable = ", ".join(sorted(t for t in sources if not graph.topics[t].internal))
            raise ScenarioError(f"--topic {name}: the app does not read {name}; it reads {readable}")
        info = graph.topics[name]
        counts: dict[int, int] = {}
        for number, row in enumerate(rows):
            partition = row.get("partition")
            if partition is None:
                if partitioned_by is None:
                    raise ScenarioError(
                        f"--topic {name}: record {number} has no partition, so kjoin cannot tell a record outside its "
                        "key's partition (a misrouted record, a common cause of missing joins) from the others; dump "
                        "the topic with its partitions (kcat -C -J), or say how it was partitioned: "
                        "--partitioned-by murmur2"
                    )
                partition = info.partition_of(row["key"])
            if not isinstance(partition, int) or not 0 <= partition < (info.partitions or 1):
                raise ScenarioError(
                    f"--topic {name}: record {number} has partition {partition!r}; the app's topic {name} has "
                    f"{info.partitions} partition(s) (--partitions N for a describe() text)"
                )
            offset = row.get("offset")
            if offset is None:
                offset = counts.get(partition, 0)
            counts[partition] = max(counts.get(partition, 0), int(offset) + 1)
            ts = row["ts"]
            if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
                raise ScenarioError(f"--topic {name}: record {number} has ts {ts!r}; a timestamp is milliseconds >= 0")
            key = row["key"]
            if graph.text_keys and key is not None and not isinstance(key, str):
                key = render_value(key)
            records.append(TopicRecord(name, partition, int(offset), key, row["value"], ts))
    missing = sorted(t for t, node in sources.items() if not graph.topics[t].internal and t not in topics)
    if missing:
        raise ScenarioError(f"kjoin debug: no --topic for {', '.join(missing)} (the app reads it)")
    return records


# -- the commands -----------------------------------------------------------------------------------
def _debug(args: argparse.Namespace) -> int:
    from ..spark.debug.topology_index import write_topology_run
    from ..spark.debug.topology_why import AppDebug

    topics: dict[str, list[dict[str, Any]]] = {}
    live: list[str] = []
    for spec in args.topic:
        name, sep, path = spec.partition("=")
        if not sep and name and args.bootstrap_servers:
            live.append(name)
            continue
        if not sep or not name or not path:
            raise ScenarioError(
                f"--topic {spec}: expected NAME=PATH, e.g. --topic orders=orders.jsonl, or NAME with "
                "--bootstrap-servers host:port to read the live topic"
            )
        topics[name] = read_topic(name, path, args.values)
    if live:
        from ..spark.debug.live_topics import read_live_topics

        read = read_live_topics(live, args.bootstrap_servers, args.values)
        given = [spec.partition("=")[0] for spec in args.topic]  # the topics in the order given, as for dumps
        topics = {name: read[name] if name in read else topics[name] for name in given}
    partitions = args.partitions
    if partitions is None and args.describe:
        seen = [row.get("partition") for rows in topics.values() for row in rows]
        partitions = max((p for p in seen if isinstance(p, int)), default=0) + 1
        print(f"kjoin debug: {partitions} partition(s) per topic, the most the files have (--partitions N to say)")
    topology = _app(args, partitions)
    topology.build()
    placed = _placed(topology, topics, args.partitioned_by)
    topics.clear()  # the rows read, placed: not held through the run
    debug = AppDebug.of_records(topology, placed)
    summary = debug.summary()
    print(f"{len(debug.trace.events)} input records, {len(debug.trace.steps)} steps, outputs to "
          f"{', '.join(debug.output_topics)}.")  # fmt: skip
    print("\nCounts by cause (one row per output record, and per input record that got nothing in a topic):")
    print(summary.to_string(index=False) if len(summary) else "  none")
    audit = debug.audit()
    print(f"\nCo-partitioning audit: {len(audit)} record(s) not in their key's partition.")
    if len(audit):
        print(audit.to_string(index=False))
    drops = debug.drops()
    print(f"\nDrops inside nodes: {len(drops)} step(s).")
    if len(drops):
        print(drops.head(args.drops).to_string(index=False))
        if len(drops) > args.drops:
            print(f"  ... and {len(drops) - args.drops} more (--drops N)")
    if args.out:
        write_topology_run(debug, args.out, why_index=True)
        print(f"\nWrote the run to {args.out}: kjoin why {args.out} --topic TOPIC --partition P --offset N")
    return 0


def _why(args: argparse.Namespace) -> int:
    from ..spark.debug.topology_index import open_topology_run

    try:
        opened = open_topology_run(args.run)
        lines = opened.why(args.topic, args.partition, args.offset)
    except (FileNotFoundError, KeyError, ValueError) as error:
        raise ScenarioError(str(error).strip("'\"")) from None
    print("\n".join(lines))
    return 0
