"""Scenarios built from code: records, the wiki's notation, a DataFrame; and the partitions
and offsets kjoin assigns to events that leave them out, as Kafka's producer would."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..notation import parse_notation
from ..ordering import merge_by_timestamp
from ..partitioner import default_partition
from ..records import Record, Side, kafka_keys
from .fields import Deliver, Event, ScenarioError

__all__ = [
    "records_document",
    "notation_events",
    "frame_records",
    "assign_offsets",
    "key_function",
    "event_partition",
    "window_document",
]


def records_document(
    join: str, variant: str, records: Iterable[Record | Mapping[str, Any]], semantics: Any, window: Any, partitions: int
) -> dict[str, Any]:
    """The scenario document of :meth:`Scenario.from_records <kjoin.scenario.Scenario.from_records>`."""
    if isinstance(records, (str, bytes, Mapping)):
        raise ScenarioError(f"records: expected a list of records or of event dicts, got {type(records).__name__}")
    events = []
    for index, record in enumerate(records):
        if isinstance(record, Record):
            events.append(record.to_dict())
        elif isinstance(record, Mapping):
            events.append(dict(record))
        else:
            raise ScenarioError(
                f"records[{index}]: expected a kjoin.Record or a dict with side, key, value, ts, got "
                f"{type(record).__name__} {record!r:.60}"
            )
    return {
        "join": join,
        "variant": variant,
        "semantics": None if semantics is None else str(semantics),
        "window": window_document(window),
        "partitions": partitions,
        "events": events,
    }


def notation_events(left: str, right: str, key: Any) -> list[dict[str, Any]]:
    """One key's events from the wiki's notation, merged in timestamp order (only the order
    comes from the merge; partitions and offsets are assigned as Kafka would)."""
    topics = [
        [Record(side, key, value, ts) for ts, value in parse_notation(text, what=f"--{side}")]
        for side, text in ((Side.LEFT, left), (Side.RIGHT, right))
    ]
    return [{"side": r.side.value, "key": r.key, "value": r.value, "ts": r.ts} for r in merge_by_timestamp(*topics)]


def frame_records(frame: Any) -> list[dict[str, Any]]:
    """The rows of a DataFrame with columns side, key, value, ts[, partition, offset] as event dicts."""
    missing = [column for column in ("side", "key", "value", "ts") if column not in frame.columns]
    if missing:
        raise ScenarioError(
            f"the DataFrame has no column {', '.join(repr(c) for c in missing)}; "
            "expected columns side, key, value, ts (and optionally partition, offset)"
        )
    columns = [c for c in ("side", "key", "value", "ts", "partition", "offset") if c in frame.columns]
    return [
        {column: _from_pandas(cell) for column, cell in zip(columns, row)}
        for row in frame[columns].itertuples(index=False, name=None)
    ]


def key_function(events: Iterable[Event | Deliver], foreign_key: str | None = None) -> Any:
    """The function from a key to the key kjoin stores (:func:`kjoin.records.kafka_keys`), decided
    over every key of ``events`` and, in a foreign-key join, every foreign key in a left value:
    Kafka compares foreign keys with the right table's keys by their bytes, so ``1.0`` or ``true``
    in an order never finds the customer ``1``."""
    events = [event for event in events if isinstance(event, Event)]
    keys: list[Any] = [event.key for event in events]
    if foreign_key is not None:
        from ..joins.fk_protocol import extract_foreign_key

        for event in events:
            if event.side is Side.LEFT and isinstance(event.value, Mapping):
                try:
                    keys.append(extract_foreign_key(foreign_key, event.value))
                except (KeyError, TypeError):  # validation names a left value without the field
                    continue
    return kafka_keys(keys)


def assign_offsets(
    events: Iterable[Event | Deliver], partitions: int, foreign_key: str | None = None
) -> list[Record | Deliver]:
    """The events in order as records, with Kafka's default partition and per-partition
    offsets filled in where an event leaves them out; ``deliver`` instructions as they are.
    ``foreign_key``: a foreign-key join's path, whose foreign keys count as keys (:func:`key_function`)."""
    next_offset: dict[tuple[Side, int], int] = {}
    script: list[Record | Deliver] = []
    events = list(events)
    key_of = key_function(events, foreign_key)
    for event in events:
        if isinstance(event, Deliver):
            script.append(event)
            continue
        partition = event_partition(event, partitions)
        offset = event.offset if event.offset is not None else next_offset.get((event.side, partition), 0)
        next_offset[(event.side, partition)] = offset + 1
        script.append(Record(event.side, key_of(event.key), event.value, event.ts, partition, offset))
    return script


def event_partition(event: Event, partitions: int) -> int:
    """The partition of an event: its own, or the default partitioner's for its key (0 for a null key)."""
    if event.partition is not None:
        return event.partition
    if event.key is None or partitions == 1:
        return 0
    return default_partition(event.key, partitions)


def window_document(window: Any) -> dict[str, Any] | None:
    """A :class:`~kjoin.joins.JoinWindows` (or a window mapping) as a document's ``window:``."""
    if window is None or isinstance(window, Mapping):
        return None if window is None else dict(window)
    data = {"before_ms": window.before_ms, "after_ms": window.after_ms, "grace_ms": window.grace_ms}
    if window.spurious_result_fix is not None:
        data["spurious_result_fix"] = window.spurious_result_fix
    return data


def _from_pandas(cell: Any) -> Any:
    """A DataFrame cell as a plain Python value: NaN/NA/None become None, numpy scalars unwrap."""
    try:
        import pandas as pd

        if cell is None or (not isinstance(cell, (list, dict)) and pd.isna(cell)):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(cell, "item") and not isinstance(cell, (list, dict, str)):
        return cell.item()
    return cell
