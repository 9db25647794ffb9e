"""What :meth:`kjoin.spark.SparkRun.write_parquet` writes beside the frames (``run.json``), so that
:func:`kjoin.spark.open_run` reopens the run in another session without computing anything again."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from .io.readers import local_path
from .io.topic import SparkInputError

if TYPE_CHECKING:
    from .result import SparkRun

__all__ = ["MANIFEST", "write_manifest", "read_manifest"]

MANIFEST = "run.json"
"""What :meth:`SparkRun.write_parquet` writes beside the frames, for :func:`open_run`."""


def write_manifest(run: "SparkRun", path: str, index: Any) -> None:
    """``run.json`` under ``path``: the scenarios, the encodings, the method, the index's final clock marks."""
    manifest = {
        "kjoin_run": 1,
        "scenarios": {str(i): s.to_dict() for i, s in run.scenarios.items()},
        "json_keys": run._json_keys,
        "json_values": run._json_values,
        "method": run.method,
        "spark_partitions": run.spark_partitions,
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


def read_manifest(spark: Any, path: str) -> dict[str, Any]:
    """The manifest :func:`write_manifest` wrote under ``path`` (a local path or a cluster file system's URL)."""
    local = path.removeprefix("file:")
    manifest_path = f"{local}/{MANIFEST}"
    if "://" in path and not path.startswith("file:"):  # a cluster's file system: the manifest as a text file
        try:
            return json.loads(spark.read.text(manifest_path, wholetext=True).first()[0])
        except Exception as error:
            raise SparkInputError(f"open_run: cannot read {manifest_path}: {error}") from None
    if not os.path.exists(manifest_path):
        found = sorted(os.listdir(local)) if os.path.isdir(local) else None
        raise SparkInputError(
            f"open_run: {path} holds no {MANIFEST}"
            + (f" (it holds {', '.join(found) or 'nothing'})" if found is not None else " (no such directory)")
            + "; write the run with result.write_parquet(path, why_index=True) first"
        )
    with open(manifest_path) as file:
        return json.load(file)
