"""Records as Kafka sees them: an input record on one side of a join, and a join output."""

from __future__ import annotations

import enum
import json
import struct
from dataclasses import dataclass
from typing import Any

from .times import at

__all__ = [
    "Side",
    "Record",
    "Output",
    "OutputKind",
    "render_value",
    "load_json",
    "key_identity",
    "kafka_keys",
    "distinct_keys",
]


class Side(enum.Enum):
    """Which input of the join a record comes from."""

    LEFT = "left"
    """The left (primary) input: ``left.join(right)``."""
    RIGHT = "right"
    """The right (secondary) input."""

    @property
    def other(self) -> "Side":
        return Side.RIGHT if self is Side.LEFT else Side.LEFT

    def __str__(self) -> str:
        return self._value_

    def __format__(self, spec: str) -> str:  # f"{side}": as fast as a plain string
        return format(self._value_, spec)


@dataclass(frozen=True, slots=True)
class Record:
    """One input record: a side, key, value, timestamp, partition and offset.

    ``key`` and ``value`` may be ``None`` (a null key, or a null value: a tombstone
    for a table). ``ts`` is the record timestamp in milliseconds.
    """

    side: Side
    key: Any
    value: Any
    ts: int
    partition: int = 0
    offset: int = 0

    def describe(self) -> str:
        """``left A@3 (key k)``: the record the way the explanations name it (an application's timestamp as a
        date, :func:`kjoin.times.at`)."""
        return f"{self.side} {at(render_value(self.value), self.ts)} (key {render_value(self.key)})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "side": self.side.value,
            "key": self.key,
            "value": self.value,
            "ts": self.ts,
            "partition": self.partition,
            "offset": self.offset,
        }


class OutputKind(enum.Enum):
    """Why an output was emitted."""

    JOINED = "joined"
    """The joiner was called with a partner found in the other side's store."""
    UNMATCHED = "unmatched"
    """A left/outer result with null for the missing side, emitted as the record arrived
    (eager semantics before 3.1, the deprecated window API, or a record that arrived after
    its window had already closed)."""
    WINDOW_CLOSED = "window-closed"
    """A left/outer result with null for the missing side, held in the outer-join buffer
    and emitted once stream time passed the record's window close plus grace (3.1+)."""
    NULL_KEY = "null-key"
    """A record with a null key on an outer side, forwarded at once with null (KIP-962)."""
    TOMBSTONE = "tombstone"
    """A table-table result deleted: the joiner is not called and the value is null."""


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
_RENDER = _ENCODER.encode
"""``json.dumps(value, sort_keys=True, separators=(",", ":"))`` without building an encoder per call (``dumps``
builds one whenever it is given options: a third of its time on the small values of a topology's records)."""
_MARKERS: dict[int, Any] = {}
_C_RENDER = (
    None
    if json.encoder.c_make_encoder is None
    else json.encoder.c_make_encoder(
        _MARKERS, _ENCODER.default, json.encoder.encode_basestring_ascii, None, ":", ",", True, False, True
    )
)
"""The C encoder ``_RENDER`` builds on every call (``JSONEncoder.iterencode``), built once: half the time of
rendering a small value. Its circular-reference markers are empty between calls, unless a call failed."""


def render_value(value: Any) -> str:
    """Render a value as the seeds do: strings bare, ``None`` as ``null``, others as JSON."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if _C_RENDER is None:  # pragma: no cover - a Python without the json accelerator
        return _RENDER(value)
    try:
        return "".join(_C_RENDER(value, 0))
    except BaseException:
        _MARKERS.clear()  # a failed call leaves the objects it was inside marked
        raise


_SCAN = json.JSONDecoder().scan_once


def load_json(text: str) -> Any:
    """``json.loads(text)``: the scanner called directly for a text that is one JSON value from its first character
    to its last (``loads`` strips whitespace around it with two regular expressions first, a third of its time on a
    record's small value); any other text through ``loads`` itself, with its errors."""
    if type(text) is str:
        try:
            value, end = _SCAN(text, 0)
        except StopIteration:
            return json.loads(text)
        if end == len(text):
            return value
    return json.loads(text)


@dataclass(frozen=True, slots=True)
class Output:
    """One record emitted by the join.

    ``left`` and ``right`` are the values handed to the joiner (``None`` for the missing
    side); ``value`` is the joiner's result, or ``None`` for a tombstone. ``origin_step`` is
    the step whose input record is the left/right value that was waiting (for outputs of
    the outer-join buffer) or the current step otherwise.

    ``old`` is the old value of Kafka's ``Change(new, old)`` for a table-table result that
    sends old values (``has_old``): the joiner applied to the old input value and the
    other side's current value, or ``None``.
    """

    key: Any
    left: Any
    right: Any
    value: Any
    ts: int
    tombstone: bool
    kind: OutputKind
    partition: int = 0
    origin_step: int = -1
    old: Any = None
    has_old: bool = False

    def render(self) -> str:
        """The seeds' notation: ``A-a``, ``A-null``, or ``null`` for a tombstone."""
        return "null" if self.tombstone else render_value(self.value)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "key": self.key,
            "left": self.left,
            "right": self.right,
            "value": self.value,
            "ts": self.ts,
            "tombstone": self.tombstone,
            "kind": self.kind.value,
            "partition": self.partition,
            "origin_step": self.origin_step,
        }
        if self.has_old:
            data["old"] = self.old
        return data


# -- key identity ---------------------------------------------------------------------------
# Kafka compares keys by their serialized bytes; Python compares 1, 1.0 and True as equal (and
# 0.0 with -0.0). A scenario's keys are one key each as Kafka sees them: by their type and their
# JSON rendering (render_value), the identity below. Where two keys of a scenario are equal in
# Python but not as Kafka sees them, kjoin replaces its int and float keys by the subclasses
# below, which hash and compare by that identity (bools stay bools), so every store, buffer and
# partitioner treats them as three keys, with one partition or many. They render, serialize and
# print as the plain numbers they are.
_KINDS = {bool: "boolean", int: "long", float: "double", str: "string"}


def key_identity(key: Any) -> tuple[str, str] | None:
    """What makes two keys one key for Kafka: the kind of serde (boolean, long, double, string)
    and the key's rendering; ``None`` for a null key."""
    if key is None:
        return None
    kind = next((name for cls, name in _KINDS.items() if isinstance(key, cls)), type(key).__name__)
    return kind, render_value(key)


class LongKey(int):
    """An integer key that equals only another :class:`LongKey` of the same value."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is LongKey and int(self) == int(other)  # type: ignore[call-overload]

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(("long", int(self)))

    def __repr__(self) -> str:
        return int.__repr__(self)


class DoubleKey(float):
    """A float key that equals only another :class:`DoubleKey` of the same IEEE-754 bytes."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is DoubleKey and struct.pack(">d", self) == struct.pack(">d", other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(("double", struct.pack(">d", self)))

    def __repr__(self) -> str:
        return float.__repr__(self)


def kafka_keys(keys: Any) -> Any:
    """A function from a key to the key kjoin stores: the key itself, unless two of ``keys`` are
    equal in Python but not for Kafka (see :func:`key_identity`); then int and float keys become
    :class:`LongKey` and :class:`DoubleKey`."""
    seen: dict[Any, tuple[str, str] | None] = {}
    for key in keys:
        if key is None or isinstance(key, str):
            continue
        identity = key_identity(key)
        if seen.setdefault(key, identity) != identity:
            return distinct_keys
    return _same_key


def _same_key(key: Any) -> Any:
    return key


def distinct_keys(key: Any) -> Any:
    """A key as Kafka tells it apart: an int a :class:`LongKey`, a float a :class:`DoubleKey` (others as they are),
    what :func:`kafka_keys` returns for keys that need it."""
    if type(key) in (LongKey, DoubleKey):
        return key
    if isinstance(key, bool) or not isinstance(key, (int, float)):
        return key
    return LongKey(key) if isinstance(key, int) else DoubleKey(key)
