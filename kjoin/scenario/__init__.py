"""Scenarios: a join, its options and its input events, validated at the edge.

A scenario file (YAML or JSON) looks like this::

    join: stream-stream        # stream-stream | stream-table | table-table | fk | stream-globaltable
    variant: left              # inner | left | outer
    semantics: "3.1"           # optional; default: the latest Kafka
    window: {before_ms: 15, after_ms: 15, grace_ms: 5}   # stream-stream only
    partitions: 1              # optional
    events:                    # in processing order; key and value may be null
      - {side: left, key: k, value: A, ts: 3}
      - {side: right, key: k, value: a, ts: 4}

Foreign-key joins and versioned tables add these fields::

    join: fk                   # a KTable-KTable foreign-key join (inner | left)
    foreign_key: fk            # a field path into the left value ({v: A1, fk: Y}); "a.b" nests
    delivery: immediate        # immediate (default) | explicit | {mode: random, seed: 7, wait_for_row: false}
    hash_check: true           # false: a teaching switch, stale responses are joined
    left: {versioned: true, history_retention_ms: 100}    # also right:
    grace_ms: 5                # stream-table only, right table versioned (KIP-923)
    versioned_mode: final      # final | attempt1 | attempt2 (KIP-914's rejected designs)
    events:
      - {deliver: next}        # explicit delivery: next | all | subscription | response | m3

A KStream-GlobalKTable join (its right events are the global topic's records; those before the first
stream record are the bootstrap, restored before the stream is processed)::

    join: stream-globaltable   # inner | left
    foreign_key: customer      # optional key selector: a field path into the stream value ("a.b" nests);
                               # without it the stream key is the table key

Topologies around a join::

    self_join: true            # stream-stream: s.join(s); every event is a left record
    optimize: true             # with self_join, inner only: the single-store rewrite (3.4+)
    then:                      # chained joins: a.join(b).join(b); each joins the result so far
      - {variant: left}        #   with the right input again (stream-stream: window: optional)
    materialized: true         # table-table: the result is materialized (Materialized.as)
    send_old_values: true      # table-table: outputs carry Change's old value
    caching: true              # table-table: record caches (true: every store; or a list of left, right, result)
    one_instance: true         # every task in one KafkaStreams instance (default: each task alone, as
                               # TopologyTestDriver runs it): 3.1 to 3.4.0 share a left/outer stream-stream
                               # join's time tracker between them (KAFKA-14862); events list the instance's order
    commit_every: 1            # with caching: each task commits after every N of its records (fk: deliveries too)

Every error names the file, the field and the event, and says what is expected.

The package, one concern a module: :mod:`~kjoin.scenario.fields` (the allowed values and the
value objects), :mod:`~kjoin.scenario.model` (the :class:`Scenario`), :mod:`~kjoin.scenario.parsing`
(documents in and out), :mod:`~kjoin.scenario.rules` (the rules between fields) and
:mod:`~kjoin.scenario.builders` (scenarios from records, notation, frames; partitions and
offsets); :mod:`~kjoin.scenario.aggregate` describes the windowed-table design's six joins (an
:class:`AggregateSpec`, its own fields). A new field is declared in ``model`` (its values in
``fields``), read and written in ``parsing``, and checked against the others in ``rules``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .fields import Arrival, ChainedJoin, Deliver, Delivery, Event, ScenarioError, TableOptions  # the value objects
from .fields import DeliveryMode, JoinKind, Variant, VersionedMode  # the Literal types of the public edge
from .fields import CACHING_STORES, DELIVER_SELECTORS, DELIVERY_MODES, JOINS, MAX_TIMESTAMP_MS  # the allowed values
from .fields import VARIANTS, VERSIONED_MODES
from .model import Scenario

# the windowed-table design's aggregates and WTable joins
from .aggregate import AGGREGATE_JOINS, AggregateConfig, AggregateSpec
from .inputs import read_document

__all__ = [
    "scenario_from_document",
    "AGGREGATE_JOINS",
    "AggregateConfig",
    "AggregateSpec",
    "Arrival",
    "Scenario",
    "ChainedJoin",
    "Event",
    "Deliver",
    "Delivery",
    "TableOptions",
    "ScenarioError",
    "load_scenario",
    "JOINS",
    "VARIANTS",
    "VERSIONED_MODES",
    "DELIVERY_MODES",
    "DELIVER_SELECTORS",
    "CACHING_STORES",
    "MAX_TIMESTAMP_MS",
    "JoinKind",
    "Variant",
    "VersionedMode",
    "DeliveryMode",
]


def load_scenario(path: str | Path) -> Scenario | AggregateSpec:
    """Read and validate a YAML or JSON scenario file.

    A file whose ``join`` is an aggregate or a windowed-table join (``table-aggregate``,
    ``window-aggregate``, ``wtable-wtable``, ``wtable-table``, ``stream-wtable``,
    ``table-wtable``) gives an :class:`~kjoin.scenario.aggregate.AggregateSpec` instead, with the
    fields described there; :func:`kjoin.run` runs either.
    """
    if not isinstance(path, (str, Path)):
        raise ScenarioError(
            f"load_scenario: expected the path of a YAML or JSON file, got {type(path).__name__} {path!r:.60} (a "
            "parsed document goes to Scenario.from_dict)"
        )
    path = Path(path)
    return scenario_from_document(read_document(path), str(path))


def scenario_from_document(data: Any, source: str | None = None) -> Scenario | AggregateSpec:
    """A read document as a scenario: an :class:`~kjoin.scenario.aggregate.AggregateSpec` for the windowed-table
    design's joins, else a :class:`Scenario` (``source``: the file, for errors)."""
    if isinstance(data, dict) and data.get("join") in AGGREGATE_JOINS:
        return AggregateSpec.from_dict(data, source=source)
    return Scenario.from_dict(data, source=source)
