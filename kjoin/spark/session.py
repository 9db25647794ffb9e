"""A quiet Spark session tuned for a laptop: ``local_session()`` and ``connect_session()``.

Both set what a 2-core machine needs to start fast and print little: no UI, no progress
bars, log level WARN, 4 shuffle partitions, Arrow on, UTC timestamps. Python workers run
the interpreter that runs kjoin (``PYSPARK_PYTHON``), so they find pyarrow and kjoin.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["local_session", "connect_session", "QUIET_CONFIG"]

QUIET_CONFIG: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "3g",
}
"""The settings of the quiet local session."""


def _prepare_environment() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def local_session(master: str = "local[2]", **config: Any) -> Any:
    """Start (or reuse) an embedded Spark session with the quiet settings.

    ``config`` overrides or adds settings: ``local_session(**{"spark.sql.shuffle.partitions": "8"})``.
    """
    _prepare_environment()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName("kjoin")
    for name, value in {**QUIET_CONFIG, **{k: str(v) for k, v in config.items()}}.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def connect_session(remote: str = "local[2]") -> Any:
    """Start a Spark Connect session: ``"local[2]"`` runs a local Connect server, an
    ``sc://host:port`` address joins a running one. Only the DataFrame API is used on it."""
    _prepare_environment()
    import warnings

    from pyspark.sql import SparkSession

    builder = SparkSession.builder.remote(remote)
    if remote.startswith("local"):
        for name, value in QUIET_CONFIG.items():
            if not name.startswith("spark.ui") and name != "spark.driver.memory":
                builder = builder.config(name, value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return builder.getOrCreate()
