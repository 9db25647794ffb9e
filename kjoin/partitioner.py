"""Kafka's default partitioner: murmur2 of the serialized key, and key serialization.

kjoin serializes keys the way the common serdes do: a ``str`` as UTF-8
(``StringSerializer``), an ``int`` as 8 big-endian bytes (``LongSerializer``), a ``float``
as an IEEE-754 double (``DoubleSerializer``), a ``bool`` as one byte. The bytes decide the
partition of a record and the order of keys in byte-ordered stores (the outer-join buffer).
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["murmur2", "serialize_key", "default_partition"]

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
