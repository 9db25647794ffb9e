"""The cross-field rules of a scenario: what a join, its variant, its era and its options
allow together. They run however the scenario was built (parsed, or constructed in code);
each field's own shape is checked where it is parsed (:mod:`kjoin.scenario.parsing`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..partitioner import default_partition
from ..records import Side
from .aggregate import AGGREGATE_JOINS, HOPPING_JOIN, HOPPING_JOIN_ELSEWHERE
from .fields import JOINS, KEY_TYPES, VARIANTS, VERSIONED_MODES, Deliver, Delivery, Event, ScenarioError, TableOptions

if TYPE_CHECKING:  # pragma: no cover
    from .model import Scenario

__all__ = ["check_scenario", "check_choice"]


def check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """``value`` if it is one of ``allowed``; else a ScenarioError naming the field and the choices."""
    if not isinstance(value, str) or value not in allowed:
        from .inputs import did_you_mean

        raise ScenarioError(
            f"{name}: expected one of {' | '.join(allowed)}, got {value!r}{did_you_mean(value, allowed)}"
        )
    return value


def check_scenario(scenario: Scenario) -> None:
    """The cross-field rules, checked however the scenario was built."""
    if scenario.join == HOPPING_JOIN:
        raise ScenarioError(HOPPING_JOIN_ELSEWHERE)
    if scenario.join in AGGREGATE_JOINS:
        raise ScenarioError(
            f"join: {scenario.join!r} is one of the windowed-table design's joins, which a kjoin.Scenario does not "
            "hold: build it with "
            "kjoin.scenario.AggregateSpec.from_dict(data) (kjoin.load_scenario and kjoin run read either)"
        )
    check_choice("join", scenario.join, JOINS)
    check_choice("variant", scenario.variant, VARIANTS[scenario.join])
    check_choice("versioned_mode", scenario.versioned_mode, VERSIONED_MODES)
    if scenario.join == "stream-stream" and scenario.window is None:
        raise ScenarioError("window: a stream-stream join needs {before_ms, after_ms, grace_ms}")
    if scenario.join != "stream-stream" and scenario.window is not None:
        raise ScenarioError(f"window: a {scenario.join} join has no window; remove the field")
    if scenario.join == "stream-table" and scenario.variant == "inner" and not scenario.semantics.kip77:
        raise ScenarioError(
            f"variant: the KStream-KTable inner join exists only since 0.10.2 (KIP-77); semantics {scenario.semantics} "
            "has only the left join"
        )
    for side in ("left", "right"):
        options: TableOptions = getattr(scenario, side)
        if options.versioned and scenario.join == "stream-stream":
            raise ScenarioError(f"{side}.versioned: a stream-stream join has no tables; remove the field")
        if options.versioned and scenario.join == "stream-globaltable":
            raise ScenarioError(
                f"{side}.versioned: a KStream-GlobalKTable join looks up the global table's latest value (kjoin "
                "models no versioned global table); remove the field"
            )
        if options.versioned and scenario.join == "stream-table" and side == "left":
            raise ScenarioError(
                "left.versioned: the left input of a stream-table join is the stream; only right: can be versioned"
            )
        if options.versioned and options.history_retention_ms is None:
            raise ScenarioError(
                f"{side}.history_retention_ms: a versioned table needs a history retention (milliseconds)"
            )
        if not options.versioned and options.history_retention_ms is not None:
            raise ScenarioError(
                f"{side}.history_retention_ms: only a versioned table has a history retention; add versioned: true or "
                "remove the field"
            )
    _check_events(scenario)
    _check_extensions(scenario)
    _check_topology(scenario)
    _check_arrival(scenario)
    _check_offsets(scenario)


def _check_events(scenario: Scenario) -> None:
    """The events' own shape, for a scenario built in code from :class:`Event` objects (a parsed
    document was checked field by field already): a key of a key's type, a timestamp and a
    partition within Kafka's bounds."""
    if not isinstance(scenario.events, tuple):
        raise ScenarioError(
            f"events: expected a tuple of Event and Deliver objects, got {type(scenario.events).__name__}"
        )
    partitions = scenario.partitions
    if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
        raise ScenarioError(f"partitions: expected a positive integer, got {partitions!r}")
    for index, event in enumerate(scenario.events):
        if isinstance(event, Deliver):
            continue
        if not isinstance(event, Event):
            raise ScenarioError(f"events[{index}]: expected an Event or a Deliver, got {type(event).__name__}")
        if not isinstance(event.side, Side):
            raise ScenarioError(f"events[{index}].side: expected Side.LEFT or Side.RIGHT, got {event.side!r}")
        if event.key is not None and not isinstance(event.key, KEY_TYPES):
            raise ScenarioError(
                f"events[{index}].key: expected a string, number or null, got {type(event.key).__name__}"
            )
        if isinstance(event.key, int) and not -(2**63) <= event.key < 2**63:
            raise ScenarioError(f"events[{index}].key: does not fit Kafka's 64-bit long")
        if not isinstance(event.ts, int) or isinstance(event.ts, bool) or not 0 <= event.ts < 2**63:
            raise ScenarioError(f"events[{index}].ts: expected a non-negative integer below 2^63, got {event.ts!r}")
        partition = event.partition
        if partition is not None and (
            not isinstance(partition, int) or isinstance(partition, bool) or not 0 <= partition < partitions
        ):
            raise ScenarioError(f"events[{index}].partition: expected an integer from 0 to {partitions - 1}")


def _check_offsets(scenario: Scenario) -> None:
    """A partition's log has one record per offset, in increasing order: the offsets a scenario
    writes out must increase along each side's partition (in the listed order), as a Kafka task
    reads them. Offsets left out count on from the previous one."""
    if not any(isinstance(event, Event) and event.offset is not None for event in scenario.events):
        return
    from .builders import event_partition

    last: dict[tuple[Side, int], int] = {}
    for index, event in enumerate(scenario.events):
        if not isinstance(event, Event):
            continue
        log = (event.side, event_partition(event, scenario.partitions))
        previous = last.get(log)
        offset = event.offset if event.offset is not None else (0 if previous is None else previous + 1)
        if previous is not None and offset <= previous:
            raise ScenarioError(
                f"events[{index}].offset: {offset} does not follow offset {previous} of the same {event.side} "
                f"partition {log[1]}; offsets increase along a partition (remove offset: to let kjoin count them)"
            )
        last[log] = offset


def _check_topology(scenario: Scenario) -> None:
    """The rules of self-joins, chains, materialization and caching."""
    if scenario.self_join:
        if scenario.join != "stream-stream":
            raise ScenarioError(
                f"self_join: only a stream-stream join can join a stream with itself; a {scenario.join} join cannot"
            )
        for index, event in enumerate(scenario.events):
            if isinstance(event, Event) and event.side is not Side.LEFT:
                raise ScenarioError(
                    f"events[{index}].side: a self-join has one input stream; write every event as side: left"
                )
        if scenario.then:
            raise ScenarioError("then: kjoin chains joins of two inputs; a self-join cannot be chained here")
    if scenario.optimize:
        if not scenario.self_join:
            raise ScenarioError(
                "optimize: the single-store optimization applies to self-joins only; add self_join: true"
            )
        if scenario.variant != "inner":
            raise ScenarioError(
                f"optimize: Kafka rewrites only inner self-joins to one store; variant {scenario.variant} keeps two"
            )
        if not scenario.semantics.optimized_self_join:
            raise ScenarioError(
                "optimize: the single-store self-join exists since Kafka 3.4 (KIP-862); semantics "
                f"{scenario.semantics} has none"
            )
    if scenario.then:
        if scenario.join not in ("stream-stream", "table-table"):
            raise ScenarioError(
                f"then: kjoin chains stream-stream and table-table joins; a {scenario.join} join cannot be chained"
            )
        if scenario.left.versioned or scenario.right.versioned:
            raise ScenarioError(
                "then: kjoin chains joins over unversioned tables only; remove versioned: true or the chain"
            )
        if scenario.join == "table-table" and any(c.window is not None for c in scenario.then):
            raise ScenarioError("then[].window: a table-table join has no window; remove the field")
    table_options = [f for f in ("materialized", "send_old_values", "caching") if getattr(scenario, f)]
    if table_options and scenario.join not in ("table-table", "fk"):
        raise ScenarioError(
            f"{table_options[0]}: only a table-table join's result is a table with these options; a {scenario.join} "
            "join has none"
        )
    if scenario.join == "fk" and (scenario.send_old_values or (scenario.caching and scenario.caching != ("result",))):
        raise ScenarioError(
            "caching, send_old_values: kjoin models a fk join's result store (materialized: true, caching: [result]); "
            "its source caches and old values are not modelled"
        )
    if scenario.commit_every != 1 and not scenario.caching:
        raise ScenarioError("commit_every: commits matter only to record caches; add caching: true or remove the field")


def _check_extensions(scenario: Scenario) -> None:
    """The rules of the foreign-key, versioned and grace fields."""
    fk = scenario.join == "fk"
    if scenario.join == "stream-globaltable":
        _check_global_table(scenario)
    if fk and scenario.foreign_key is None:
        raise ScenarioError(
            "foreign_key: a fk join needs the field path of the foreign key in the left value, e.g. foreign_key: fk"
        )
    if not fk and scenario.foreign_key is not None and scenario.join != "stream-globaltable":
        raise ScenarioError(
            f"foreign_key: only a fk join (its foreign key) and a stream-globaltable join (its key selector) take a "
            f"field path; a {scenario.join} join joins on the record key"
        )
    if fk and not scenario.semantics.foreign_key_joins:
        raise ScenarioError(
            f"join: foreign-key joins exist since Kafka 2.4 (KIP-213); semantics {scenario.semantics} has none"
        )
    if not fk and (scenario.delivery != Delivery() or not scenario.hash_check):
        raise ScenarioError("delivery, hash_check: only a fk join sends messages between tasks; remove these fields")
    explicit = fk and scenario.delivery.mode == "explicit"
    for index, event in enumerate(scenario.events):
        if isinstance(event, Deliver):
            if not explicit:
                raise ScenarioError(f"events[{index}].deliver: deliver events need join: fk and delivery: explicit")
        elif fk and event.side is Side.LEFT and event.value is not None:
            check_foreign_key(scenario.foreign_key, event.value, f"events[{index}].value")
        elif fk and event.side is Side.RIGHT and None not in (event.partition, event.key) and scenario.partitions > 1:
            expected = default_partition(event.key, scenario.partitions)
            if event.partition != expected:
                raise ScenarioError(
                    f"events[{index}].partition: a fk join's right record must sit on its key's partition "
                    f"({expected}), where the subscriptions for that foreign key go"
                )
    if (scenario.left.versioned or scenario.right.versioned) and not scenario.semantics.versioned_joins:
        raise ScenarioError(
            f"versioned: joins over versioned tables exist since Kafka 3.5 (KIP-914); semantics {scenario.semantics} "
            "has none"
        )
    if scenario.grace_ms is not None and not scenario.semantics.stream_table_grace:
        raise ScenarioError(
            f"grace_ms: the stream-table grace period exists since Kafka 3.6 (KIP-923); semantics {scenario.semantics} "
            "has none"
        )
    if scenario.grace_ms is not None:
        if scenario.join != "stream-table":
            raise ScenarioError(
                f"grace_ms: only a stream-table join has a grace period; a {scenario.join} join does not"
            )
        if not scenario.right.versioned:
            raise ScenarioError(
                "grace_ms: KTable must be versioned to use a grace period in a stream table join (right: {versioned: "
                "true, history_retention_ms: ...})"
            )
        if (scenario.right.history_retention_ms or 0) < scenario.grace_ms:
            raise ScenarioError(
                "grace_ms: History retention must be at least grace period (right.history_retention_ms < grace_ms)"
            )
    if scenario.versioned_mode != "final":
        if scenario.join != "table-table" or not (scenario.left.versioned and scenario.right.versioned):
            raise ScenarioError(
                f"versioned_mode: {scenario.versioned_mode} is a table-table join over two versioned tables (seed "
                "003); use final or make both tables versioned"
            )
        if scenario.variant != "inner":
            raise ScenarioError(
                f"versioned_mode: seed 003's {scenario.versioned_mode} is described for inner joins only; use variant: "
                "inner"
            )


def _check_global_table(scenario: Scenario) -> None:
    """A KStream-GlobalKTable join: Kafka 0.10.2+ (KIP-99); a key selector's field, where it is there, holds a key
    (a missing field, or a value that is no mapping, selects null: the record is skipped as Kafka skips it)."""
    if not scenario.semantics.global_tables:
        raise ScenarioError(
            f"join: GlobalKTables exist since Kafka 0.10.2 (KIP-99); semantics {scenario.semantics} has none"
        )
    if scenario.foreign_key is None:
        return
    for index, event in enumerate(scenario.events):
        if not isinstance(event, Event) or event.side is not Side.LEFT:
            continue
        node = event.value
        for part in scenario.foreign_key.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is not None and not isinstance(node, KEY_TYPES):
            raise ScenarioError(
                f"events[{index}].value: the key selector's field {scenario.foreign_key!r} is {node!r}; expected a "
                "table key (a string or a number) or null"
            )


def check_foreign_key(path: str | None, value: Any, where: str) -> None:
    """The foreign key at ``path`` in a left value is a field holding a key (or null)."""
    assert path is not None
    node = value
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise ScenarioError(
                f"{where}: the foreign key {path!r} is not a field of {node!r}; left values of a fk join look like "
                f"{{v: A1, fk: Y}} (write fk: null for no foreign key)"
            )
        node = node[part]
        if node is None:
            return
    if not isinstance(node, KEY_TYPES):
        raise ScenarioError(f"{where}: the foreign key {path!r} is {node!r}; expected a string, number, or null")


def _check_arrival(scenario: Scenario) -> None:
    """A lagging side: two input topics whose records the task takes by arrival."""
    if scenario.arrival is None:
        return
    if scenario.join == "fk":
        raise ScenarioError(
            "arrival: a foreign-key join's order across tasks is set by its delivery; remove arrival "
            "(list the events in the order the task takes them)"
        )
    if scenario.join == "stream-globaltable":
        raise ScenarioError(
            "arrival: a global table is read by the global thread, not merged by timestamp with the stream, so no "
            "arrival order applies; remove arrival (list the events in the order to try; see "
            "kjoin.joins.global_table.possible_partners for every order a running application may take)"
        )
    if scenario.self_join:
        raise ScenarioError("arrival: a self-join reads one topic, so no side can lag behind the other; remove it")
    if scenario.then:
        raise ScenarioError(
            "arrival: a chain's later joins read topics of their own; kjoin models a lagging side of a single join "
            "only: remove arrival or the chain"
        )
