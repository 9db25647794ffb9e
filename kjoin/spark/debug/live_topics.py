"""The topics of ``kjoin debug --bootstrap-servers host:port --topic orders``: each read live from the cluster, every
partition, through Spark's Kafka source (:func:`kjoin.spark.from_kafka`), and handed to the debugger as the rows a
dump file gives (``key, value, ts, partition, offset``), so a live run prints and writes what a run over dumps of the
same records does.

How it works: one Spark session (:func:`kjoin.spark.local_session`, with the Kafka connector ``make kafka-live``
fetches) reads each topic from its first to its last offset, pinned when read (a producer still writing does not
change the run), and the records are collected to the driver in partition and offset order: the whole-app debugger
runs the reference engine over every record, as it does for dumps. Keys are read as text; values as JSON text
(``--values json``, the default: a value that is not JSON is named with its topic, partition and offset) or as plain
text (``--values string``). A topic the cluster does not have is refused naming the cluster and the fix.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ...scenario import ScenarioError
from ..io.topic import SparkInputError

__all__ = ["read_live_topics"]


def read_live_topics(
    names: Sequence[str], bootstrap_servers: str, values: str = "json", spark: Any = None
) -> dict[str, list[dict[str, Any]]]:
    """Topic -> its records as ``{key, value, ts, partition, offset}``, in partition and offset order, read from the
    cluster at ``bootstrap_servers`` (``spark``: the session to read with; default :func:`kjoin.spark.local_session`
    with the Kafka connector)."""
    from .. import from_kafka, local_session

    try:
        session = spark if spark is not None else local_session(kafka=True)
    except (SparkInputError, RuntimeError) as error:  # RuntimeError: the Kafka connector is not set up
        raise ScenarioError(f"--bootstrap-servers {bootstrap_servers}: {error}") from None
    topics: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        try:
            topic = from_kafka(session, bootstrap_servers=bootstrap_servers, topic=name, value="string")
            frame = topic.frame.select("key", "value", "ts", "partition", "offset").orderBy("partition", "offset")
            rows = frame.collect()
        except SparkInputError as error:
            raise ScenarioError(f"--topic {name}: {error}") from None
        topics[name] = [_row(name, row, values) for row in rows]
    return topics


def _row(name: str, row: Any, values: str) -> dict[str, Any]:
    value = row["value"]
    if values == "json" and value is not None:
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ScenarioError(
                f"--topic {name}: the record at {name}[{row['partition']}]@{row['offset']} has the value "
                f"{value[:60]!r}, which is not JSON text; pass --values string to read values as plain text"
            ) from None
    return {"key": row["key"], "value": value, "ts": row["ts"], "partition": row["partition"], "offset": row["offset"]}
