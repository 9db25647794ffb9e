"""A quiet Spark session tuned for a laptop: ``local_session()`` and ``connect_session()``.

Both set what a 2-core machine needs to start fast and print little: no UI, no progress
bars, log level WARN, 4 shuffle partitions, Arrow on (batches of 100,000 records), UTC timestamps. Python workers run
the interpreter that runs kjoin (``PYSPARK_PYTHON``), so they find pyarrow and kjoin. For speed they also lift
Arrow's byte limit per batch (:data:`QUIET_CONFIG`), start the JVM without Arrow Java's per-value checks
(:data:`ARROW_JAVA_OPTIONS`) and, on a local master, skip the shuffle checksum that only retries read
(:data:`LOCAL_ONLY_CONFIG`); each setting says what it saved.

A local Spark Connect server, and why kjoin starts it itself. PySpark's own
``SparkSession.builder.remote("local[2]")`` starts an in-process server and then always
dials ``sc://localhost``, i.e. the default port 15002, whatever
``spark.connect.grpc.binding.port`` says: with another port the server listens on one port
and the client retries the other forever (the "hang"), and with 15002 already taken (a
second kjoin process, a notebook, another test run) the server cannot bind or the client
reaches someone else's server. :func:`connect_session` therefore starts the in-process
server on the port you ask for (default: an ephemeral one the kernel picks, so two runs
never collide), reads back the port it actually bound, and dials exactly that port with its
own authentication token.

Spark's Kafka source (``spark.read.format("kafka")``, for :func:`kjoin.spark.from_kafka` on a live
cluster) is not part of PySpark: it is the ``spark-sql-kafka-0-10`` connector, which ``make
kafka-live`` fetches from Maven Central into ~/.m2 once, writing the list of its jars to
``kafka_oracle/connector/target/classpath.txt``. :func:`kafka_connector_jars` finds that list (or the
file named by ``KJOIN_KAFKA_CONNECTOR``), and both session starters put the jars on ``spark.jars``
when it exists, so nothing is downloaded when a session starts.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import uuid
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pyspark import SparkConf, SparkContext
from pyspark.logger import PySparkLogger
from pyspark.sql import SparkSession

__all__ = [
    "local_session",
    "connect_session",
    "cluster_session",
    "kafka_connector_jars",
    "QUIET_CONFIG",
    "WORKSHOP_CONFIG",
    "WORKSHOP_ENV",
    "session_settings",
    "workshop_mode",
    "ARROW_JAVA_OPTIONS",
    "KAFKA_SETUP",
]

QUIET_CONFIG: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "3g",
    # Arrow batches of 100,000 records (Spark's default: 10,000) into and out of mapInArrow: the vectorised
    # per-task passes look up the keys a batch does not update in the task's store, once per batch, so bigger
    # batches look up fewer keys (table-table: 440K records/s of CPU at 10,000, 640K at 100,000).
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    # No byte limit on those batches, only the record limit above. With any byte limit (Spark's default: 64 MiB)
    # Spark measures the Arrow batch it is building after every row it adds (ArrowWriter.sizeInBytes, in
    # BatchedPythonArrowInput), and skips that only at Int.MaxValue: at 10^7 records the measuring cost 2-4 s of
    # a 9-11 s feed into mapInArrow (kjoin.bench, stream-table). Records per batch still bound the memory.
    "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),
    # Kryo for what Spark serializes outside its SQL shuffles: the rows a topology's stage keeps for the next one
    # (a local checkpoint, serialized) go to memory and disk through it. Java serialization's per-object stream
    # costs more: at 10^7 records (benchmarks/bench_topology.py) the run's JVM took 48-50 s of CPU with Kryo and
    # 56 s without, the joins one by one (which keep nothing) 62-64 s either way. SQL's own shuffles and joins do not
    # use it: the bench's equi-join of 10^6 records (versioned-table-table) took 3.5-4.3 CPU s with it, 3.7-4.8 s with
    # Java serialization, in one session each on the same loaded machine.
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
}
"""The settings of the quiet local session."""

LOCAL_ONLY_CONFIG: dict[str, str] = {
    # Spark 4 checksums every shuffled row, independently of order, to tell whether a retried map task wrote the
    # same rows as the first attempt. A local master runs each task once (it allows no retries), so nothing ever
    # reads the checksum: about 0.5 s of 14 s of JVM CPU in a 10^7-record stream-table join, which shuffles every
    # record (kjoin.bench).
    "spark.sql.shuffle.orderIndependentChecksum.enabled": "false",
}
"""Settings only for sessions on a ``local[...]`` master (added to :data:`QUIET_CONFIG` there)."""

WORKSHOP_ENV = "KJOIN_WORKSHOP"
"""Set (to anything but empty or ``0``) by ``make workshop``: every :func:`local_session` of the room is a
:data:`WORKSHOP_CONFIG` one, so notebook 09 needs no change to run light in Voila."""
WORKSHOP_MASTER = "local[1]"
"""A learner's session runs one task at a time: twenty kernels share the server's cores anyway."""
WORKSHOP_CONFIG: dict[str, str] = {
    # A heap of 512 MB instead of 3 GB: notebook 09's topics hold a few hundred records, and the JVM grows its heap
    # towards the maximum before it collects (benchmarks/workshop_memory.py measures the kernel's peak). Spark
    # refuses less than 450 MB (1.5 x its reserved 300 MB: INVALID_DRIVER_MEMORY).
    "spark.driver.memory": "512m",
    # Two shuffle partitions and two default partitions: one per partition of 09's topics, no empty tasks.
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    # Spark's default Arrow batch (10,000 records): the 100,000 of QUIET_CONFIG only pay at millions of records.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
    # One Python worker, reused: no second worker's pandas and pyarrow in memory.
    "spark.python.worker.reuse": "true",
}
"""The session a workshop gives each learner (``make workshop``, :data:`WORKSHOP_ENV`): small enough that 20
kernels running notebook 09 fit on one server (docs/benchmarks.md has the measured numbers)."""
WORKSHOP_JAVA_OPTIONS = (
    "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=64m -XX:MaxMetaspaceSize=256m -Xss512k"
)
"""The workshop JVM: one garbage-collector thread and no second JIT tier (small data never pays for them), a
bounded code cache and metaspace, smaller thread stacks."""


def workshop_mode() -> bool:
    """Is this process one of a workshop's kernels (:data:`WORKSHOP_ENV`)?"""
    return os.environ.get(WORKSHOP_ENV, "") not in ("", "0")


def session_settings(master: str, config: dict[str, Any], workshop: bool = False) -> dict[str, str]:
    """The settings :func:`local_session` starts ``master`` with: :data:`QUIET_CONFIG`, the local-only ones, the
    workshop's (``workshop``), then the caller's ``config``, which win; the driver's JVM options joined."""
    own = {k: str(v) for k, v in config.items()}
    local = LOCAL_ONLY_CONFIG if master.startswith("local") else {}
    small = WORKSHOP_CONFIG if workshop else {}
    java = " ".join(
        o for o in (WORKSHOP_JAVA_OPTIONS if workshop else "", own.get("spark.driver.extraJavaOptions", "")) if o
    )
    return {
        **QUIET_CONFIG,
        **local,
        **small,
        **own,
        "spark.driver.extraJavaOptions": _java_options({**own, "spark.driver.extraJavaOptions": java}),
    }


_CONNECT_SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService$"

KAFKA_CONNECTOR_ENV = "KJOIN_KAFKA_CONNECTOR"
"""Names a classpath file (jars separated by ``:``) to use instead of the one ``make kafka-live`` writes."""
REPOSITORY = Path(__file__).resolve().parents[3]
"""The kjoin repository this module runs from (``kjoin/spark/io/session.py``, three levels down)."""
KAFKA_CONNECTOR_FILE = REPOSITORY / "kafka_oracle" / "connector" / "target" / "classpath.txt"
KAFKA_SETUP = (
    "run `make kafka-live` in the kjoin repository (it fetches the spark-sql-kafka-0-10 connector from Maven "
    f"Central into ~/.m2 and writes {KAFKA_CONNECTOR_FILE}), then start the session with "
    "kjoin.spark.local_session() (a session started before keeps its classpath: restart the Python process); "
    "for a session of your own, give it spark.jars with those jars, or "
    "spark.jars.packages=org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
)
"""What to do when a session cannot load Spark's Kafka source."""


def kafka_connector_jars() -> list[str] | None:
    """The jars of Spark's Kafka source as ``make kafka-live`` resolved them, or ``None`` when it has not run
    (or a listed jar is gone from ~/.m2). ``KJOIN_KAFKA_CONNECTOR`` names another classpath file."""
    path = Path(os.environ.get(KAFKA_CONNECTOR_ENV) or KAFKA_CONNECTOR_FILE)
    if not path.is_file():
        return None
    jars = [jar for jar in path.read_text().strip().split(os.pathsep) if jar]
    if not jars or not all(os.path.isfile(jar) for jar in jars):
        return None
    return jars


def _with_kafka_jars(settings: dict[str, str], kafka: bool | None) -> dict[str, str]:
    """``settings`` with the Kafka connector's jars added to ``spark.jars`` (``kafka=None``: when set up)."""
    if kafka is False:
        return settings
    jars = kafka_connector_jars()
    if jars is None:
        if kafka:
            raise RuntimeError(f"kafka=True: Spark's Kafka connector is not set up; {KAFKA_SETUP}")
        return settings
    mine = [jar for jar in settings.get("spark.jars", "").split(",") if jar]
    return {**settings, "spark.jars": ",".join(mine + [jar for jar in jars if jar not in mine])}


QUIET_LOG4J2 = """\
# kjoin's quiet Spark logging: errors only, so that start-up prints nothing (Spark's own
# default profile logs WARN and announces itself on every start). The root level stays WARN,
# the level PySpark's shell start-up compares it with (a difference is announced); the
# console prints errors only.
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.filter.threshold.type = ThresholdFilter
appender.console.filter.threshold.level = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


QUIET_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")
"""PySpark's Python loggers that print every analysis error as one JSON line carrying the Java exception and the
whole query plan (25 KB for a misspelled column of ``summary()``) before the same error is raised. The quiet
sessions turn them off: the raised error still says what is wrong (the unresolved column and the ones meant)."""


def _quiet_python_loggers() -> None:
    for name in QUIET_LOGGERS:  # PySpark's own logger class: it logs with keywords a plain Logger refuses
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)


def _prepare_environment() -> None:
    _quiet_python_loggers()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # A local session talks to itself: binding to the loopback address avoids Spark's start-up
    # warning about a hostname that resolves to 127.0.0.1.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


ARROW_JAVA_OPTIONS = "-Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false"
"""Driver JVM options that turn off Arrow Java's own checks on every value Spark reads from or writes to an Arrow
buffer: the bounds check (``ArrowBuf.checkIndex``, which also checks the buffer's reference count) and the null
check in the vectors' ``get``. Spark asks ``isNullAt`` before every read and sizes every buffer itself, so the
checks only repeat its work; the results are the same. They cost about 1.7 s of a 16 s JVM CPU at 10^7 records
(``kjoin.bench``, stream-table: the feed into ``mapInArrow`` and turning the result batches back into rows).
JVM options only take effect when the JVM starts: :func:`local_session` and :func:`connect_session` set them; for
a session of your own, add them to ``spark.driver.extraJavaOptions`` (and ``spark.executor.extraJavaOptions`` on
a cluster) before it starts."""


def _java_options(config: dict[str, str]) -> str:
    """Driver JVM options: log4j2 pointed at :data:`QUIET_LOG4J2` (written once per process) and
    :data:`ARROW_JAVA_OPTIONS`, then the caller's own ``spark.driver.extraJavaOptions`` (which win where they
    repeat a property)."""
    own = config.get("spark.driver.extraJavaOptions", "")
    return " ".join(option for option in (_quiet_java_options(), ARROW_JAVA_OPTIONS, own) if option)


def _quiet_java_options() -> str:
    """The driver JVM option that points log4j2 at :data:`QUIET_LOG4J2` (written once per process)."""
    global _LOG4J2_PATH
    if _LOG4J2_PATH is None or not os.path.exists(_LOG4J2_PATH):
        handle, path = tempfile.mkstemp(prefix="kjoin-log4j2-", suffix=".properties")
        with os.fdopen(handle, "w") as file:
            file.write(QUIET_LOG4J2)
        _LOG4J2_PATH = path
    return f"-Dlog4j2.configurationFile=file:{_LOG4J2_PATH}"


_LOG4J2_PATH: str | None = None


def local_session(master: str | None = None, kafka: bool | None = None, **config: Any) -> Any:
    """Start (or reuse) an embedded Spark session with the quiet settings, on ``master`` (default ``local[2]``).

    ``config`` overrides or adds settings: ``local_session(**{"spark.sql.shuffle.partitions": "8"})``. In a
    workshop's kernel (:data:`WORKSHOP_ENV`, set by ``make workshop``) the session is the small one of
    :data:`WORKSHOP_CONFIG` on :data:`WORKSHOP_MASTER` (unless ``master`` is given).
    ``kafka``: put Spark's Kafka source on the classpath (:func:`kafka_connector_jars`): ``None`` (the
    default) when ``make kafka-live`` has set it up, ``True`` always (an error naming the set-up when it
    has not), ``False`` never. Jars only take effect in a new session, not in one ``getOrCreate`` reuses.
    """
    _prepare_environment()
    workshop = workshop_mode()
    master = master or (WORKSHOP_MASTER if workshop else "local[2]")
    builder = SparkSession.builder.master(master).appName("kjoin")
    settings = _with_kafka_jars(session_settings(master, config, workshop), kafka)
    for name, value in settings.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def cluster_session(master: str, kafka: bool | None = None, python: str | None = None, **config: Any) -> Any:
    """A classic session on a cluster's master (``spark://host:port``, ``yarn``, ``k8s://...``), driven from here.

    The quiet settings of :func:`local_session` without its local-only ones (a cluster retries lost tasks, so Spark
    keeps its shuffle checksum), plus what executors need: Arrow Java's checks off in their JVMs too
    (:data:`ARROW_JAVA_OPTIONS` in ``spark.executor.extraJavaOptions``), the Python they run (``python``, default:
    this interpreter, right when the workers share this machine's environment; name the workers' own otherwise)
    and Spark's Kafka source on ``spark.jars`` (shipped to executors). ``config`` overrides or adds settings,
    ``spark.executor.memory`` for one. The driver binds 127.0.0.1 only when the master is on this machine's
    loopback; a remote cluster's executors must reach the driver (set ``spark.driver.host`` if they cannot).
    :mod:`kjoin.spark.io.cluster` says the rest (kjoin on the workers, a why-index path every executor reads).
    """
    host = urlparse(master).hostname or ""
    if host in ("127.0.0.1", "localhost"):
        _prepare_environment()
    else:
        os.environ.setdefault("PYSPARK_PYTHON", python or sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith("local"):
        raise ValueError(f"cluster_session: {master!r} is a local master; use local_session({master!r})")
    own = {k: str(v) for k, v in config.items()}
    executor_options = " ".join(o for o in (ARROW_JAVA_OPTIONS, own.get("spark.executor.extraJavaOptions", "")) if o)
    settings = {
        **QUIET_CONFIG,
        "spark.pyspark.python": python or os.environ.get("PYSPARK_PYTHON", sys.executable),
        **own,
        "spark.driver.extraJavaOptions": _java_options(own),
        "spark.executor.extraJavaOptions": executor_options,
    }
    settings = _with_kafka_jars(settings, kafka)
    builder = SparkSession.builder.master(master).appName("kjoin")
    for name, value in settings.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def connect_session(remote: str = "local[2]", port: int = 0, kafka: bool | None = None, **config: Any) -> Any:
    """A Spark Connect session. Only the DataFrame API is used on it.

    * ``remote="local[2]"`` (any ``local[...]`` master): start a Connect server inside this
      process, with the quiet settings plus ``config``, listening on ``port`` (``0``: an
      ephemeral port, so concurrent runs never collide), and connect to it with a fresh
      token. The server lives as long as this process; a process holds either classic
      sessions or Connect sessions (PySpark switches its functions module process-wide), so
      this refuses to start next to an active classic session.
    * ``remote="sc://host:port"``: join a running server (a cluster's, or
      ``start-connect-server.sh``); its workers need kjoin installed.

    ``kafka`` as in :func:`local_session`, for the local server (a running server has its own classpath).
    """
    _prepare_environment()
    if remote.startswith("sc://"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return SparkSession.builder.remote(remote).getOrCreate()
    if not remote.startswith("local"):
        raise ValueError(
            f"remote: expected 'local[N]' (start a Connect server here) or 'sc://host:port' (join one), got {remote!r}"
        )
    url = _start_local_connect_server(remote, port, _with_kafka_jars({k: str(v) for k, v in config.items()}, kafka))
    # PySpark's functions (F.col, Window, pandas_udf …) build Connect plans only in this mode.
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    # Imported only for a Connect session: PySpark's Connect client needs grpcio and builds Connect plans.
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ConnectSession.builder.remote(url).getOrCreate()


def _start_local_connect_server(master: str, port: int, config: dict[str, str]) -> str:
    """Start the Connect plugin in an embedded Spark driver; return the ``sc://`` URL to dial."""
    if SparkContext._active_spark_context is not None:
        raise RuntimeError(
            "connect_session: this process already runs a classic Spark session; a local Spark Connect session needs a "
            "process of its own (run it in a subprocess), or pass remote='sc://host:port' of a running Connect server"
        )
    token = str(uuid.uuid4())
    settings = {
        **QUIET_CONFIG,
        **LOCAL_ONLY_CONFIG,
        "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
        "spark.connect.grpc.binding.port": str(port),
        "spark.connect.authenticate.token": token,
        **config,
        "spark.driver.extraJavaOptions": _java_options(config),
    }
    conf = SparkConf().setMaster(master).setAppName("kjoin-connect").setAll(list(settings.items()))
    context = SparkContext.getOrCreate(conf)
    context.setLogLevel("WARN")
    SparkSession(context)  # keeps the server's session registered (as PySpark's local mode does)
    bound = getattr(getattr(context._jvm, _CONNECT_SERVICE), "MODULE$").localPort()
    return f"sc://localhost:{bound}/;token={token}"
