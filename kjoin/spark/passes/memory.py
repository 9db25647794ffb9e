"""A Python worker's memory kept for reuse: what a pass over a whole Kafka task of millions of records needs.

A chain stage's task holds its records and builds its rows as Arrow arrays of hundreds of megabytes, taking and
freeing them column by column. Arrow's default allocator (mimalloc) and glibc's ``malloc`` give such large blocks
back to the operating system when they are freed, and the next array of the same size faults its pages in again,
zeroed by the kernel: at 10^7 records (a join task of 2.5 million, ``benchmarks/bench_topology.py``) the task cost
4.8-5.5 s of CPU, 2.6-3.5 s of it in the kernel, against 0.31 s for a tenth of the records. With Arrow on the system
allocator and glibc told to keep what is freed (no ``mmap`` for blocks below 1 GiB, no trimming of the heap), the
same task cost 2.7-3.0 s (0.8-1.0 s in the kernel), its peak memory the same (2.5 GB).

:func:`hold_freed_memory` does that once per worker process; elsewhere than on glibc it leaves the allocators as
they are. The price: a worker keeps its peak memory until it exits (Spark reuses its Python workers), so only the
passes that hold whole Kafka tasks call it (the topology's chain stages).
"""

from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["hold_freed_memory"]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
_MMAP_BELOW = 1 << 30
_held = False


def hold_freed_memory() -> bool:
    """Keep this process's freed memory for its next allocations (Arrow on the system allocator, glibc's ``malloc``
    neither mapping blocks below 1 GiB nor trimming its heap); whether glibc took the settings. Once per process."""
    global _held
    if _held:
        return True
    _held = True
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc: the allocators as they are
        return False
    if not (mallopt(_M_MMAP_THRESHOLD, _MMAP_BELOW) and mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)):
        return False
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
    return True
