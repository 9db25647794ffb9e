"""kjoin on Spark: the reference engine's join semantics over DataFrames of any size.

    >>> from kjoin.spark import local_session, from_files, run_join
    >>> spark = local_session()
    >>> run = run_join(from_files(spark, "orders.parquet"), from_files(spark, "customers.parquet"),
    ...                "stream-table", "left")
    >>> run.outputs.write.parquet("out")            # lazy until written
    >>> trace = run.trace(partition=0)               # the reference trace of one task

Topics come from files, kcat dumps, DataFrames in Spark's Kafka source schema, or a live cluster:
``from_kafka(spark, bootstrap_servers="host:9092", topic="orders")`` (Spark's Kafka connector, which
``make kafka-live`` fetches and :func:`local_session` puts on the classpath).

Only the DataFrame API is used, so any session works: the local one from
:func:`local_session`, a cluster's, or Spark Connect (:func:`connect_session`).

Every primary-key join runs per Kafka task (stream-stream, stream-table, table-table, over
versioned tables too: ``run_join(..., options={"right": {"versioned": True,
"history_retention_ms": 100}, "grace_ms": 5})``). A foreign-key join crosses tasks, so
:func:`run_scenarios` runs each FK scenario whole in one Spark group
(:mod:`kjoin.spark.passes.fk_task`, which states the limits) and :func:`run_join` refuses it.

A whole application: :func:`run_topology` runs a :class:`kjoin.Topology` (re-keys, repartition topics, chains of
joins, aggregates, foreign-key joins) over its topics stage by stage (:mod:`kjoin.spark.topology_run`).
"""

from .api import open_run, run_join, run_scenarios
from .frames import OUTPUT_COLUMNS, STEP_COLUMNS
from .io.readers import from_files, from_kafka, from_kcat
from .io.session import ARROW_JAVA_OPTIONS, QUIET_CONFIG, cluster_session, connect_session, local_session
from .io.topic import SparkInputError, Topic
from .result import SparkRun
from .topology_run import TopologyRun, run_topology

__all__ = [
    "OUTPUT_COLUMNS",
    "QUIET_CONFIG",
    "ARROW_JAVA_OPTIONS",
    "STEP_COLUMNS",
    "SparkInputError",
    "SparkRun",
    "Topic",
    "connect_session",
    "from_files",
    "from_kafka",
    "from_kcat",
    "local_session",
    "cluster_session",
    "open_run",
    "run_join",
    "run_scenarios",
    "run_topology",
    "TopologyRun",
]
