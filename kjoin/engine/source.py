"""The source stage: what a record goes through between its topic and its task's processor, in every engine.

Kafka Streams' source node deserializes a record's key and value and takes its timestamp before any processor sees
it. kjoin's stage is where that is modelled, once: :func:`kjoin.run` and the Spark engine's processors pass
(:mod:`kjoin.spark.passes.task`) both send each record through a :class:`SourceStage` before ``process``, so an option
on records (a timestamp extractor, a key serde) is written here and both engines apply it.

What it does:

* **Byte-equal keys.** Kafka compares keys by their serialized bytes, Python by value (``1 == 1.0 == True``): a key
  becomes the key kjoin stores (:func:`kjoin.records.kafka_keys`), so ``1`` and ``1.0`` are two keys wherever a
  scenario holds both. Keys decoded from JSON texts (the Spark engine's frames) are always made so, since the engine
  does not see every key of a scenario before its first record.
* **Timestamps** are the record's own (Kafka's default extractor: the producer's or the broker's timestamp).
* **Null keys and null values** are not judged here: Kafka judges them in each join processor, by join, variant and
  era (``KStreamKTableJoinProcessor``, ``KStreamKStreamJoin``...), and so do kjoin's processors.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from ..records import Record, distinct_keys

__all__ = ["SourceStage", "source_stage", "decoded_source_stage"]


def _as_is(key: Any) -> Any:
    return key


@dataclass(frozen=True)
class SourceStage:
    """One scenario's source stage: ``stage(record)`` is the record its task's processor takes."""

    key_of: Callable[[Any], Any] = _as_is
    """The key kjoin stores for a record's key (:func:`kjoin.records.kafka_keys`)."""

    def __call__(self, record: Record) -> Record:
        key = self.key_of(record.key)
        return record if key is record.key else dataclasses.replace(record, key=key)


def source_stage(scenario: Any) -> SourceStage:
    """The source stage of a scenario whose every key is known (the reference engine's)."""
    return SourceStage(scenario.key_function())


def decoded_source_stage() -> SourceStage:
    """The source stage of keys decoded from JSON texts one record at a time (the Spark engine's): numbers are kept
    apart by type, as :func:`kjoin.records.kafka_keys` does for a scenario whose keys need it."""
    return SourceStage(distinct_keys)
