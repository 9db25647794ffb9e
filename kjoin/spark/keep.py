"""Keeping a frame computed once: what a topology's stages and a diff's differences are read from.

Spark's ``persist`` keeps a frame as compressed column batches (its ``InMemoryRelation``), built row by row as the
frame is first computed, on a disk level too. For kjoin's wide rows of texts that building costs more than the rows
themselves: the re-key stage of a 10^6-record topology took 5-7 s of CPU to persist against about 1 s to checkpoint
(``bench --topology``); the 960,000 differences of a 2x10^6-record diff (3.0 to 3.1) cost 14.4-16.0 s of CPU
persisted on disk against 10.4-11.1 s checkpointed on disk, and the 10^7-record diff went from 3.94 runs to 3.33
(``bench --diff``). A *local checkpoint* keeps the rows as Spark computed them, in the block manager, at the storage
level asked for.

A checkpoint's rows cannot be computed again when its blocks are lost (an executor that dies) or freed, where a
persisted frame's can. So :func:`kept` checkpoints on a local master only (one process: its blocks live as long as
the session), and persists on a cluster; and a frame :func:`release` freed must not be read again: whoever keeps it
builds it anew (:class:`kjoin.spark.debug.diff.SparkDiff` does).
"""

from __future__ import annotations

from typing import Any

__all__ = ["local_master", "kept", "kept_level", "release"]


def local_master(spark: Any) -> bool:
    """Whether ``spark`` runs on a ``local[...]`` master (``False`` on a cluster, and on a Spark Connect server that
    does not say: the safe answer)."""
    try:
        return str(spark.conf.get("spark.master", "")).startswith("local")
    except Exception:  # pyspark.errors' Connect errors: a server that hides its master
        return False


def kept(frame: Any, level: Any = None) -> Any:
    """``frame``, computed once when first read and kept at ``level`` (a :class:`pyspark.StorageLevel`; ``None``:
    memory, spilling to disk): a lazy local checkpoint on a local master, ``persist`` elsewhere."""
    from pyspark import StorageLevel

    if local_master(frame.sparkSession):
        return frame.localCheckpoint(eager=False, storageLevel=level)
    return frame.persist(level if level is not None else StorageLevel.MEMORY_AND_DISK)


def kept_level(frame: Any) -> Any:
    """The storage level :func:`kept` keeps ``frame`` at (``StorageLevel.NONE``: not kept, computed at every read;
    ``None`` on Spark Connect, which does not say for a checkpoint)."""
    from pyspark import StorageLevel

    if frame.is_cached:
        return frame.storageLevel
    rdd = _checkpointed(frame)
    if rdd is None:
        return None if not hasattr(frame, "_jdf") else StorageLevel.NONE
    level = rdd.getStorageLevel()
    return StorageLevel(
        level.useDisk(), level.useMemory(), level.useOffHeap(), level.deserialized(), level.replication()
    )


def release(frame: Any) -> None:
    """Free what :func:`kept` keeps of ``frame``: a persisted frame's blocks (it is computed again if read), a
    checkpoint's (it cannot be read again)."""
    if frame.is_cached:
        frame.unpersist()
        return
    rdd = _checkpointed(frame)
    if rdd is not None:  # on Spark Connect the server frees a checkpoint when the client's frame is gone
        rdd.unpersist(False)


def _checkpointed(frame: Any) -> Any:
    """The JVM RDD a checkpointed frame reads (its plan is a ``LogicalRDD``), ``None`` otherwise or on Connect."""
    plan = getattr(getattr(frame, "_jdf", None), "logicalPlan", None)
    if plan is None:
        return None
    logical = plan()
    return logical.rdd() if logical.getClass().getSimpleName() == "LogicalRDD" else None
