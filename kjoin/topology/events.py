"""A topology's input events: ``{topic, key, value, ts[, partition]}``, checked and placed on their
topic partitions (offsets counting up per partition, in the order the events are listed).

Every error names the event and the field and says what is expected, as a scenario's do."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..records import kafka_keys, render_value
from ..serde import string_serde_text
from ..scenario.fields import KEY_TYPES, MAX_TIMESTAMP_MS
from ..scenario.inputs import check_document, did_you_mean
from .functions import UserFunctionError
from .graph import Graph, TopologyError
from .trace import TopicRecord

__all__ = ["input_records", "EVENT_FIELDS"]

EVENT_FIELDS = ("topic", "key", "value", "ts", "partition")


def input_records(graph: Graph, events: Iterable[Mapping[str, Any]], where: str = "events") -> list[TopicRecord]:
    """The events as records of their topics, partitioned by their topic's partitioner (Kafka's
    default: murmur2 of the key; a null key goes to partition 0) unless they name a partition. With the String serde
    (``Graph.text_keys``, as the topology harness carries keys) a number or a boolean key becomes its text."""
    if isinstance(events, (str, bytes)) or not isinstance(events, Iterable):
        raise TopologyError(f"{where}: expected a list of events like {{topic: orders, key: o1, value: A, ts: 1}}")
    sources = {name: node for name, node in graph.sources().items() if not graph.topics[name].internal}
    offsets: dict[tuple[str, int], int] = {}
    records = []
    events = list(events)
    for index, event in enumerate(events):
        if not isinstance(event, Mapping):
            raise TopologyError(
                f"{where}[{index}]: expected a mapping {{topic, key, value, ts}}, got {type(event).__name__}"
            )
    check_document([dict(event) for event in events], where)  # plain data within kjoin's bounds, in one walk
    # typed keys: each by its own type's bytes, as a single join's (true and 1 are two keys)
    typed = kafka_keys(event.get("key") for event in events) if not graph.text_keys else None
    for index, event in enumerate(events):
        at = f"{where}[{index}]"
        unknown = [name for name in event if name not in EVENT_FIELDS]
        if unknown:
            raise TopologyError(
                f"{at}.{unknown[0]}: unknown field{did_you_mean(unknown[0], EVENT_FIELDS)}; an event has "
                f"{', '.join(EVENT_FIELDS)} (partition is optional)"
            )
        topic = event.get("topic")
        if "topic" not in event:
            raise TopologyError(f"{at}: topic is missing (one of {', '.join(sorted(sources))})")
        if not isinstance(topic, str):
            raise TopologyError(
                f"{at}.topic: expected the name of a topic the topology reads ({', '.join(sorted(sources))}), got "
                f"{type(topic).__name__} {render_value(topic):.60}"
            )
        known = graph.topics.get(topic)
        if known is not None and known.internal:
            raise TopologyError(
                f"{at}.topic: {topic} is an internal topic (a repartition or foreign-key topic): the topology writes "
                "and reads it itself, so an event cannot be addressed to it; address the event to an input topic "
                f"({', '.join(sorted(sources))})"
            )
        if topic not in sources:
            readable = ", ".join(sorted(sources))
            raise TopologyError(
                f"{at}.topic: {topic!r} is not a topic the topology reads{did_you_mean(topic, sources)}; it reads "
                f"{readable}"
            )
        for required in ("key", "value", "ts"):
            if required not in event:
                raise TopologyError(
                    f"{at}: {required} is missing (write null for a null {required})"
                    if required != "ts"
                    else f"{at}: ts is missing (the timestamp in milliseconds)"
                )
        key = event["key"]
        if key is not None and not isinstance(key, KEY_TYPES):
            raise TopologyError(f"{at}.key: a key is text, a number, a boolean or null, got {type(key).__name__}")
        key = string_serde_text(key) if typed is None else typed(key)  # String serde: 1 and "1" one key, true not 1
        ts = event["ts"]
        if not isinstance(ts, int) or isinstance(ts, bool) or not 0 <= ts <= MAX_TIMESTAMP_MS:
            raise TopologyError(f"{at}.ts: a timestamp is a whole number of milliseconds from 0, got {ts!r}")
        topic_info = graph.topics[topic]
        assert topic_info.partitions is not None
        partition = event.get("partition")
        if partition is None:
            try:
                partition = topic_info.partition_of(key)
            except UserFunctionError as error:  # the producer's partitioner, given to the source
                raise TopologyError(
                    f"{at}: the partitioner of topic {topic} ({error.function}) {error.problem}; fix it, or give the "
                    "event its partition"
                ) from error.original
            except TopologyError as error:
                raise TopologyError(f"{at}: {error}") from None
        elif (
            not isinstance(partition, int) or isinstance(partition, bool) or not 0 <= partition < topic_info.partitions
        ):
            raise TopologyError(
                f"{at}.partition: topic {topic} has {topic_info.partitions} partition(s), numbered 0 to "
                f"{topic_info.partitions - 1}; got {partition!r}"
            )
        offset = offsets.get((topic, partition), 0)
        offsets[(topic, partition)] = offset + 1
        records.append(TopicRecord(topic, partition, offset, key, event["value"], ts, None, index))
    return records
