"""The bytes of kjoin's values: the serde that Kafka sees them through.

kjoin's values are Python values (strings, numbers, JSON objects); Kafka's are bytes. The
harness (``kafka_oracle/``) and ``kjoin export --junit`` both hand Kafka every value with the
String serde: a string as its UTF-8 bytes, any other value as kjoin's JSON text (compact, keys
sorted, the text :func:`~kjoin.records.render_value` shows), and null as null (no bytes at all).
So the only value that serializes to zero bytes is the empty string ``""``: a JSON value
(``{}``, ``[]``, ``0``, ``false``) always has some text.

Where a join looks at bytes, kjoin asks this module. A topology carries every key with the String serde, as the
topology harness does (:func:`string_serde_text`: events' keys, and the keys a re-key, a group-by, a global
table's key selector or a foreign-key extractor makes). The keys' bytes (partitioning, store
order, foreign-key comparison) are :func:`kjoin.partitioner.serialize_key`'s. In a foreign-key
join (KIP-213) Kafka looks at a value's bytes twice:

* **The subscription response** (``SubscriptionResponseWrapperSerde``): after the hash it writes
  the right (foreign) value's bytes, and a missing right value as no bytes; reading it back, it
  deserializes the value only when bytes follow the hash, else it is null. A right value that
  serializes to zero bytes therefore reaches the left task as null, like no value at all: a left
  join emits ``order-null``, an inner join a tombstone (:func:`through_response`).
* **The hash of the left value** (``SubscriptionSendProcessorSupplier`` and
  ``ResponseJoinProcessorSupplier``): ``Murmur3.hash128`` of the serialized value
  (:func:`kjoin.joins.fk_protocol.value_hash` hashes :func:`serialize_value`'s bytes). A left
  value is a JSON object (it holds the foreign key), never zero bytes.
"""

from __future__ import annotations

from typing import Any

from .records import render_value

__all__ = ["serialize_value", "serializes_to_nothing", "string_serde_text", "through_response"]


def serialize_value(value: Any) -> bytes | None:
    """The bytes the String serde writes for ``value``: a string's UTF-8, any other value's
    JSON text as kjoin shows it; ``None`` for null."""
    return None if value is None else render_value(value).encode("utf-8")


def string_serde_text(value: Any) -> Any:
    """``value`` as the String serde reads it back: text as it is, any other value as its JSON text (the text of
    :func:`serialize_value`'s bytes), null as null. A topology's keys are these: two keys are one key when their
    bytes are (``1`` and ``"1"``), and ``true`` is not ``1``."""
    return value if value is None or isinstance(value, str) else render_value(value)


def serializes_to_nothing(value: Any) -> bool:
    """Is ``value`` a value (not null) whose serialized form has zero bytes (``""``)?"""
    return value is not None and serialize_value(value) == b""


def through_response(value: Any) -> Any:
    """The right value as the left task reads it from a subscription response: ``None`` for a
    value that serializes to zero bytes (the wrapper cannot tell it from a missing one), else
    the value itself."""
    return None if serializes_to_nothing(value) else value
