"""Out to a reproduction: one record's drill-down as a kjoin :class:`~kjoin.scenario.Scenario`.

``result.why(partition=p, offset=o).scenario()`` gives the records the diagnosis read, as a scenario that the
reference engine (``kjoin.run``, ``kjoin run``), the Stepper (``Stepper(kjoin.run(s))``) and ``kjoin export --junit``
take (``s.to_dict()`` is its YAML document):

* the key's records in its task and the task's *clock records* (other keys' records that move stream time, under a
  stand-in key per side, ``(other keys, left)`` and ``(other keys, right)``, so that they never join each other), listed
  in the task's processing order with their partitions and offsets;
* the key's records of the other side in other partitions (a co-partitioning verdict's cause), each in its own
  partition, so it is in another task there too;
* the null-key record a ``partner-null-key`` verdict names.

The scenario keeps every option of the run (versioned tables, grace, the window, the semantics) but ``arrival``:
the records are listed in the order the task took them, lag included. Run through the engine, the record's own
results are the Spark run's (``tests/test_spark_why_repro.py``; and run on Spark again, ``why`` gives the same
verdict). Where the drill-down is not exact (:attr:`KeyTrace.caveat`: a Kafka 3.1+ outer-join buffer swept by
other keys' records) the reproduction is not either. A foreign-key join's reproduction is its whole scenario (its
messages cross tasks).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from ...records import Side
from ...scenario import Event, Scenario

__all__ = ["STAND_IN", "record_scenario"]

STAND_IN = "(other keys)"
"""What the clock records' keys in a reproduction start with: ``(other keys, left)`` and ``(other keys, right)`` for
a string key (an integer key's stand-ins are neighbours). One per side, so that a left clock record never joins a
right one: in the task they were other keys each, most of which never met."""


def _readable(stand_in: Any, key: Any, side: Side) -> Any:
    """A clock record's key as a reproduction shows it: :data:`STAND_IN` and its side for a string key; for an
    integer key the drill-down's stand-in (left) and the next one away from the key (right)."""
    if not isinstance(key, str) and key is not None:
        if side is Side.LEFT:
            return stand_in
        return stand_in + 1 if stand_in > key else stand_in - 1
    readable = f"{STAND_IN[:-1]}, {side.value})"
    return readable if key != readable else f"{readable} 2"


def record_scenario(
    config: Scenario,
    replay: Sequence[Event],
    stand_in: Any,
    key: Any,
    extra: Sequence[tuple[Any, Any]] = (),
    name: str | None = None,
    one_task: int | None = None,
) -> Scenario:
    """The scenario of a drill-down: ``replay``, the events the drill-down ran (clock records under ``stand_in``), in
    processing order; ``extra``, ``(partner, its key)`` for the other records a verdict names
    (:class:`kjoin.spark.debug.diagnosis.Partner`): the key's records in other partitions, a null-key record. One in the
    task's own partition goes before the first record of its side listed after it (a partition is a log).
    ``one_task=p``: only task ``p``'s records, as one partition (``partitions: 1``): what TopologyTestDriver runs, and
    so what ``kjoin export --junit`` takes; the records of other partitions are left out, as the task never sees
    them."""
    clock = stand_in is not None
    events = [
        replace(e, key=_readable(stand_in, key, e.side)) if clock and e.key == stand_in != key else e for e in replay
    ]
    seen = {(e.side.value, e.partition, e.offset) for e in events}
    for partner, partner_key in sorted(extra, key=lambda pair: (pair[0].partition, pair[0].side, pair[0].offset)):
        where = (partner.side, partner.partition, partner.offset)
        if where in seen:
            continue
        seen.add(where)
        event = Event(Side(partner.side), partner_key, partner.value, partner.ts, partner.partition, partner.offset)
        later = [
            i
            for i, e in enumerate(events)
            if (e.side.value, e.partition) == where[:2] and e.offset is not None and e.offset > partner.offset
        ]
        events.insert(later[0] if later else len(events), event)
    if one_task is not None:
        events = [replace(e, partition=0) for e in events if e.partition == one_task]
        return replace(config, events=tuple(events), arrival=None, name=name or config.name, partitions=1)
    return replace(config, events=tuple(events), arrival=None, name=name or config.name)
