"""Kafka's default partitioner: murmur2 of the serialized key, and key serialization.

kjoin serializes keys the way the common serdes do: a ``str`` as UTF-8
(``StringSerializer``), an ``int`` as 8 big-endian bytes (``LongSerializer``), a ``float``
as an IEEE-754 double (``DoubleSerializer``), a ``bool`` as one byte. The bytes decide the
partition of a record and the order of keys in byte-ordered stores (the outer-join buffer).
"""

from __future__ import annotations

import struct
from typing import Any, Sequence

import numpy as np
import pandas as pd

__all__ = ["murmur2", "murmur2_many", "murmur2_packed", "serialize_key", "default_partition", "default_partitions"]

_MASK32 = 0xFFFFFFFF


def serialize_key(key: Any) -> bytes:
    """The bytes a Kafka serde writes for ``key`` (see the module docstring)."""
    if isinstance(key, bool):
        return b"\x01" if key else b"\x00"
    if isinstance(key, int):
        return struct.pack(">q", key)
    if isinstance(key, float):
        return struct.pack(">d", key)
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, bytes):
        return key
    raise TypeError(f"key {key!r} has type {type(key).__name__}; keys must be str, int, float, bool or bytes")


def _to_int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: a signed 32-bit hash of ``data``."""
    length = len(data)
    m = 0x5BD1E995
    h = (0x9747B28C ^ length) & _MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * m) & _MASK32
        k ^= k >> 24
        k = (k * m) & _MASK32
        h = (h * m) & _MASK32
        h ^= k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return _to_int32(h)


def default_partition(key: Any, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null key."""
    return (murmur2(serialize_key(key)) & 0x7FFFFFFF) % partitions


def murmur2_many(datas: Sequence[bytes]) -> np.ndarray:
    """:func:`murmur2` of each byte string in ``datas`` at once (numpy's uint32 arithmetic wraps as the hash's
    32-bit masks do): an int32 array."""
    lengths = np.fromiter(map(len, datas), dtype=np.int64, count=len(datas))
    return murmur2_packed(np.frombuffer(b"".join(datas), dtype=np.uint8), np.r_[0, np.cumsum(lengths)])


def murmur2_packed(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """:func:`murmur2_many` of byte strings packed one after another in ``data`` (uint8), the ``i``-th from
    ``offsets[i]`` to ``offsets[i + 1]`` (Arrow's layout of a string array: its UTF-8 bytes hashed without a Python
    object per string)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    count = len(offsets) - 1
    lengths = np.diff(offsets)
    width = int(lengths.max(initial=0) + 3) // 4 * 4
    flat = data[offsets[0] : offsets[-1]]
    buffer = np.zeros((count, width + 4), dtype=np.uint8)  # + 4: a tail's bytes are read within the row
    rows = np.repeat(np.arange(count), lengths)
    buffer[rows, np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)] = flat
    m = np.uint32(0x5BD1E995)
    h = (np.uint32(0x9747B28C) ^ lengths.astype(np.uint32)).astype(np.uint32)
    whole = lengths // 4
    words = buffer.view("<u4")
    with np.errstate(over="ignore"):
        for block in range(width // 4):
            k = words[:, block] * m
            k ^= k >> np.uint32(24)
            k *= m
            h = np.where(whole > block, (h * m) ^ k, h)
        tail = lengths % 4
        at = whole * 4
        index = np.arange(count)
        h ^= np.where(tail == 3, buffer[index, at + 2].astype(np.uint32) << np.uint32(16), np.uint32(0))
        h ^= np.where(tail >= 2, buffer[index, at + 1].astype(np.uint32) << np.uint32(8), np.uint32(0))
        h = np.where(tail >= 1, (h ^ buffer[index, at].astype(np.uint32)) * m, h)
        h ^= h >> np.uint32(13)
        h *= m
        h ^= h >> np.uint32(15)
    return h.view(np.int32)


def default_partitions(keys: Sequence[Any], partitions: int) -> np.ndarray:
    """:func:`default_partition` of each key (0 for a null key, as a topology writes it), hashing the distinct text
    keys at once (:func:`murmur2_many`): an int32 array."""
    chosen = np.zeros(len(keys), dtype=np.int32)
    if partitions == 1 or not len(keys):
        return chosen
    codes, distinct_keys = pd.factorize(np.fromiter(keys, dtype=object, count=len(keys)))
    missing = np.flatnonzero(codes < 0).tolist()  # pandas codes a NaN key as missing too: only None is null here
    if all(type(key) is str for key in distinct_keys) and all(keys[at] is None for at in missing):
        hashes = murmur2_many([key.encode("utf-8") for key in distinct_keys])
        chosen[codes >= 0] = ((hashes.astype(np.int64) & 0x7FFFFFFF) % partitions)[codes[codes >= 0]]
        return chosen
    texts = [at for at, key in enumerate(keys) if type(key) is str]
    if texts:
        distinct: dict[str, int] = {}
        codes = np.fromiter((distinct.setdefault(keys[at], len(distinct)) for at in texts), np.int64, len(texts))
        hashes = murmur2_many([key.encode("utf-8") for key in distinct])
        chosen[texts] = ((hashes.astype(np.int64) & 0x7FFFFFFF) % partitions)[codes]
    if len(texts) < len(keys):
        for at, key in enumerate(keys):
            if type(key) is not str and key is not None:
                chosen[at] = default_partition(key, partitions)
    return chosen
