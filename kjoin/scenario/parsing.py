"""Scenario documents: each field read from YAML/JSON and checked for its own shape, and
written back. The rules between fields run on the finished scenario (:mod:`kjoin.scenario.rules`).

Every error names the field (and the event) and says what is expected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..join_model import JoinWindows
from ..records import Side
from ..semantics import parse_semantics
from .aggregate import AGGREGATE_JOINS, HOPPING_JOIN, HOPPING_JOIN_ELSEWHERE
from .builders import window_document
from .fields import (
    ARRIVAL_SIDE_FIELDS,
    CACHING_STORES,
    Arrival,
    DELIVER_SELECTORS,
    DELIVERY_MODES,
    JOINS,
    KEY_TYPES,
    MAX_TIMESTAMP_MS,
    VARIANTS,
    VERSIONED_MODES,
    ChainedJoin,
    Deliver,
    Delivery,
    Event,
    ScenarioError,
    TableOptions,
    field_names,
)
from .inputs import (
    MAX_EVENTS,
    MAX_PARTITIONS,
    check_document,
    did_you_mean,
    join_window_span_problem,
    read_document,
    unknown_field,
)
from .rules import check_choice

if TYPE_CHECKING:  # pragma: no cover
    from .model import Scenario

__all__ = ["read_document", "parse_document", "write_document"]

_FLAGS = ("self_join", "optimize", "materialized", "send_old_values", "one_instance")


def parse_document(data: Any, allowed: Iterable[str]) -> dict[str, Any]:
    """The :class:`~kjoin.scenario.Scenario` fields of a document whose top-level fields are ``allowed``."""
    if not isinstance(data, Mapping):
        raise ScenarioError(f"a scenario is a mapping with join, variant and events; got {type(data).__name__}")
    check_document(data)
    unknown_field("", data, allowed)
    join = data.get("join")
    if not isinstance(join, str) or join not in JOINS:
        if join == HOPPING_JOIN:
            raise ScenarioError(HOPPING_JOIN_ELSEWHERE)
        every = (*JOINS, *AGGREGATE_JOINS)
        raise ScenarioError(f"join: expected one of {' | '.join(every)}, got {join!r}{did_you_mean(join, every)}")
    variant = check_choice("variant", data.get("variant"), VARIANTS[join])
    semantics_text = data.get("semantics")
    if semantics_text is not None and not isinstance(semantics_text, str):
        raise ScenarioError(
            f'semantics: expected a Kafka version as text, e.g. "3.1" (quoted: an unquoted 3.10 reads as the '
            f"number 3.1), got {semantics_text!r}"
        )
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise ScenarioError(f"name: expected text, got {name!r}")
    try:
        semantics = parse_semantics(semantics_text)
    except ValueError as error:
        raise ScenarioError(f"semantics: {error}") from None
    partitions = data.get("partitions", 1)
    if not _is_int(partitions) or not 1 <= partitions <= MAX_PARTITIONS:
        raise ScenarioError(f"partitions: expected an integer from 1 to {MAX_PARTITIONS}, got {partitions!r}")
    window = _window(data.get("window"))
    tables = {side: _table_options(data.get(side), side) for side in ("left", "right")}
    events = data.get("events")
    if not isinstance(events, list):
        raise ScenarioError(
            f"events: expected a list of events like {{side: left, key: k, value: A, ts: 3}}, got "
            f"{type(events).__name__}"
        )
    if len(events) > MAX_EVENTS:
        raise ScenarioError(
            f"events: {len(events)} events, more than the reference engine runs at once ({MAX_EVENTS}, each step's "
            "trace is kept in memory); run big topics with kjoin.spark"
        )
    foreign_key = data.get("foreign_key")
    if foreign_key is not None and (not isinstance(foreign_key, str) or not all(foreign_key.split("."))):
        raise ScenarioError(
            f"foreign_key: expected a field path into the left value such as fk or customer.id, got {foreign_key!r}"
        )
    grace_ms = data.get("grace_ms")
    if grace_ms is not None and (not _is_int(grace_ms) or grace_ms < 0):
        raise ScenarioError(f"grace_ms: expected a non-negative integer (milliseconds), got {grace_ms!r}")
    hash_check = data.get("hash_check", True)
    if not isinstance(hash_check, bool):
        raise ScenarioError(f"hash_check: expected true or false, got {hash_check!r}")
    versioned_mode = check_choice("versioned_mode", data.get("versioned_mode", "final"), VERSIONED_MODES)
    materialized = data.get("materialized", False) is True
    flags: dict[str, Any] = {"caching": _caching(data.get("caching", False), materialized, join)}
    for flag in _FLAGS:
        flags[flag] = data.get(flag, False)
        if not isinstance(flags[flag], bool):
            raise ScenarioError(f"{flag}: expected true or false, got {flags[flag]!r}")
    commit_every = data.get("commit_every", 1)
    if not _is_int(commit_every) or commit_every < 1:
        raise ScenarioError(
            f"commit_every: expected a positive integer (input records per commit), got {commit_every!r}"
        )
    return dict(
        join=join,
        variant=variant,
        semantics=semantics,
        window=window,
        partitions=partitions,
        left=tables["left"],
        right=tables["right"],
        events=tuple(_event_or_deliver(event, index, partitions) for index, event in enumerate(events)),
        name=name,
        foreign_key=foreign_key,
        grace_ms=grace_ms,
        delivery=_delivery(data.get("delivery")),
        hash_check=hash_check,
        versioned_mode=versioned_mode,
        then=_chain(data.get("then"), join),
        commit_every=commit_every,
        arrival=_arrival(data.get("arrival")),
        **flags,
    )


def write_document(scenario: Scenario) -> dict[str, Any]:
    """The document of ``scenario``: every field that differs from its default, events last."""
    data: dict[str, Any] = {"join": scenario.join, "variant": scenario.variant, "semantics": str(scenario.semantics)}
    if scenario.name is not None:
        data = {"name": scenario.name, **data}
    if scenario.window is not None:
        data["window"] = window_document(scenario.window)
    data["partitions"] = scenario.partitions
    for side in ("left", "right"):
        options: TableOptions = getattr(scenario, side)
        if options != TableOptions():
            data[side] = {"versioned": options.versioned, "history_retention_ms": options.history_retention_ms}
    if scenario.foreign_key is not None:
        data["foreign_key"] = scenario.foreign_key
    if scenario.grace_ms is not None:
        data["grace_ms"] = scenario.grace_ms
    delivery = scenario.delivery
    if delivery != Delivery():
        data["delivery"] = (
            delivery.mode
            if delivery.mode != "random"
            else {"mode": "random", "seed": delivery.seed, "wait_for_row": delivery.wait_for_row}
        )
    if not scenario.hash_check:
        data["hash_check"] = False
    if scenario.versioned_mode != "final":
        data["versioned_mode"] = scenario.versioned_mode
    for flag in _FLAGS:
        if getattr(scenario, flag):
            data[flag] = True
    if scenario.caching:
        data["caching"] = list(scenario.caching)
    if scenario.then:
        data["then"] = [
            {"variant": c.variant, **({"window": window_document(c.window)} if c.window is not None else {})}
            for c in scenario.then
        ]
    if scenario.commit_every != 1:
        data["commit_every"] = scenario.commit_every
    if scenario.arrival is not None:
        data["arrival"] = {
            side: {
                "lag_ms": scenario.arrival.lag_ms(side),
                **(
                    {"partitions": {str(p): lag for p, lag in own.items()}}
                    if (own := scenario.arrival.partition_lags(side))
                    else {}
                ),
            }
            for side in ("left", "right")
        }
    data["events"] = [_event_document(event) for event in scenario.events]
    return data


def _arrival(data: Any) -> Arrival | None:
    """``arrival: {right: {lag_ms: 5000}}`` (each side optional, lag 0 by default); a side's ``partitions: {"2":
    5000}`` gives partitions lags of their own."""
    if data is None:
        return None
    example = "{right: {lag_ms: 5000}}"
    if not isinstance(data, Mapping):
        raise ScenarioError(f"arrival: expected the lag of a side, like {example}, got {data!r}")
    unknown_field("arrival", data, {"left", "right"}, "the sides are")
    lags = {}
    for side in ("left", "right"):
        options = data.get(side, {})
        if not isinstance(options, Mapping):
            raise ScenarioError(f"arrival.{side}: expected {{lag_ms: milliseconds}}, got {options!r}")
        unknown_field(f"arrival.{side}", options, ARRIVAL_SIDE_FIELDS)
        lags[side] = _lag(f"arrival.{side}.lag_ms", options.get("lag_ms", 0), side)
        own = options.get("partitions", {})
        if not isinstance(own, Mapping):
            raise ScenarioError(
                f"arrival.{side}.partitions: expected {{partition: lag_ms}}, like {{2: 5000}}, got {own!r}"
            )
        for partition, lag in own.items():
            number = int(partition) if isinstance(partition, str) and partition.isdigit() else partition
            if not _is_int(number) or number < 0:
                raise ScenarioError(f"arrival.{side}.partitions: {partition!r} is not a partition number (0 or more)")
            lags[(side, number)] = _lag(f"arrival.{side}.partitions.{number}", lag, side)
    return Arrival(
        lags["left"],
        lags["right"],
        tuple(sorted((k[1], v) for k, v in lags.items() if isinstance(k, tuple) and k[0] == "left")),
        tuple(sorted((k[1], v) for k, v in lags.items() if isinstance(k, tuple) and k[0] == "right")),
    )


def _lag(where: str, lag: Any, side: str) -> int:
    if not _is_int(lag) or lag < 0:
        raise ScenarioError(
            f"{where}: expected a non-negative integer (how many milliseconds after its timestamp "
            f"a {side} record reaches its task), got {lag!r}"
        )
    return lag


def _event_document(event: Event | Deliver) -> dict[str, Any]:
    if isinstance(event, Deliver):
        return {"deliver": event.which}
    cells = (
        ("side", event.side.value),
        ("key", event.key),
        ("value", event.value),
        ("ts", event.ts),
        ("partition", event.partition),
        ("offset", event.offset),
    )
    return {name: cell for name, cell in cells if name in ("key", "value") or cell is not None}


# -- one field at a time ----------------------------------------------------------------
def _caching(data: Any, materialized: bool, join: str) -> tuple[str, ...]:
    if data is False:
        return ()
    if data is True and join == "fk":
        return ("result",) if materialized else ()
    if data is True:
        return CACHING_STORES if materialized else CACHING_STORES[:2]
    if not isinstance(data, list) or any(store not in CACHING_STORES for store in data):
        raise ScenarioError(f"caching: expected true, false or a list of {', '.join(CACHING_STORES)}; got {data!r}")
    if "result" in data and not materialized:
        raise ScenarioError(
            "caching: only a materialized result has a store to cache; add materialized: true or remove result"
        )
    return tuple(store for store in CACHING_STORES if store in data)


def _chain(data: Any, join: str) -> tuple[ChainedJoin, ...]:
    if data is None:
        return ()
    if not isinstance(data, list) or not data:
        raise ScenarioError(f"then: expected a list of further joins like [{{variant: inner}}], got {data!r}")
    chain = []
    for index, item in enumerate(data):
        where = f"then[{index}]"
        if not isinstance(item, Mapping):
            raise ScenarioError(f"{where}: expected a mapping like {{variant: inner}}, got {item!r}")
        unknown_field(where, item, field_names(ChainedJoin), "a chained join has")
        variant = item.get("variant")
        allowed = VARIANTS.get(join, ())
        if variant not in allowed:
            raise ScenarioError(f"{where}.variant: expected one of {' | '.join(allowed) or 'nothing'}, got {variant!r}")
        try:
            window = _window(item.get("window"))
        except ScenarioError as error:
            raise ScenarioError(f"{where}.{error}") from None
        chain.append(ChainedJoin(variant, window))
    return tuple(chain)


def _delivery(data: Any) -> Delivery:
    if data is None:
        return Delivery()
    if isinstance(data, str):
        data = {"mode": data}
    if not isinstance(data, Mapping):
        raise ScenarioError(f"delivery: expected immediate | explicit | {{mode: random, seed: 7}}, got {data!r}")
    unknown_field("delivery", data, field_names(Delivery))
    mode = check_choice("delivery.mode", data.get("mode"), DELIVERY_MODES)
    seed = data.get("seed", 0)
    if not _is_int(seed):
        raise ScenarioError(f"delivery.seed: expected an integer, got {seed!r}")
    if mode != "random" and "seed" in data:
        raise ScenarioError("delivery.seed: only random delivery has a seed")
    wait_for_row = data.get("wait_for_row", False)
    if not isinstance(wait_for_row, bool):
        raise ScenarioError(f"delivery.wait_for_row: expected true or false, got {wait_for_row!r}")
    if mode != "random" and wait_for_row:
        raise ScenarioError("delivery.wait_for_row: only random delivery holds messages across updates")
    return Delivery(mode, seed, wait_for_row)  # type: ignore[arg-type]


def _event_or_deliver(data: Any, index: int, partitions: int) -> Event | Deliver:
    if isinstance(data, Mapping) and "deliver" in data:
        return _deliver(data, index)
    return _event(data, index, partitions)


def _deliver(data: Mapping[str, Any], index: int) -> Deliver:
    where = f"events[{index}]"
    if len(data) != 1:
        raise ScenarioError(f"{where}: a deliver event has only the field deliver, e.g. {{deliver: next}}")
    which = data["deliver"]
    if not isinstance(which, str) or not (which in DELIVER_SELECTORS or (which[:1] == "m" and which[1:].isdigit())):
        raise ScenarioError(
            f"{where}.deliver: expected one of {' | '.join(DELIVER_SELECTORS)} or a message id such as m3, got "
            f"{which!r}"
        )
    return Deliver(which)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _window(data: Any) -> JoinWindows | None:
    if data is None:
        return None
    if isinstance(data, JoinWindows):
        return data
    if not isinstance(data, Mapping):
        raise ScenarioError(f"window: expected {{before_ms, after_ms, grace_ms}}, got {data!r}")
    unknown_field("window", data, field_names(JoinWindows))
    values = {}
    for name in ("before_ms", "after_ms"):
        value = data.get(name)
        if not _is_int(value) or value < 0:
            raise ScenarioError(f"window.{name}: expected a non-negative integer (milliseconds), got {value!r}")
        values[name] = value
    problem = join_window_span_problem(values["before_ms"], values["after_ms"])
    if problem:
        raise ScenarioError(f"window: {problem}")
    grace = data.get("grace_ms")
    if grace is not None and (not _is_int(grace) or grace < 0):
        raise ScenarioError(
            "window.grace_ms: expected a non-negative integer, or null for the deprecated JoinWindows.of API; "
            f"got {grace!r}"
        )
    fix = data.get("spurious_result_fix")
    if fix is not None and not isinstance(fix, bool):
        raise ScenarioError(f"window.spurious_result_fix: expected true or false, got {fix!r}")
    return JoinWindows(values["before_ms"], values["after_ms"], grace, fix)


def _table_options(data: Any, side: str) -> TableOptions:
    if data is None:
        return TableOptions()
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{side}: expected table options like {{versioned: false}}, got {data!r}")
    unknown_field(side, data, field_names(TableOptions))
    versioned = data.get("versioned", False)
    if not isinstance(versioned, bool):
        raise ScenarioError(f"{side}.versioned: expected true or false, got {versioned!r}")
    retention = data.get("history_retention_ms")
    if retention is not None and (not _is_int(retention) or retention < 0):
        raise ScenarioError(f"{side}.history_retention_ms: expected a non-negative integer, got {retention!r}")
    return TableOptions(versioned, retention)


def _event(data: Any, index: int, partitions: int) -> Event:
    where = f"events[{index}]"
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: expected a mapping like {{side: left, key: k, value: A, ts: 3}}, got {data!r}")
    unknown_field(where, data, field_names(Event), "an event has side, key, value, ts and optionally")
    for required in ("side", "key", "value", "ts"):
        if required not in data:
            hint = " (write null for a null key or value)" if required in ("key", "value") else ""
            raise ScenarioError(f"{where}: missing field {required!r}{hint}")
    side = data["side"]
    if side not in ("left", "right"):
        raise ScenarioError(f"{where}.side: expected left or right, got {side!r}")
    key = data["key"]
    if key is not None and not isinstance(key, KEY_TYPES):
        raise ScenarioError(f"{where}.key: expected a string, number or null, got {type(key).__name__} {key!r}")
    ts = data["ts"]
    if not _is_int(ts) or ts < 0:
        raise ScenarioError(f"{where}.ts: expected a non-negative integer (milliseconds), got {ts!r}")
    if ts > MAX_TIMESTAMP_MS:
        raise ScenarioError(
            f"{where}.ts: {ts} does not fit Kafka's 64-bit signed timestamp; the largest is {MAX_TIMESTAMP_MS} (2^63 - "
            "1)"
        )
    partition = data.get("partition")
    if partition is not None and (not _is_int(partition) or not 0 <= partition < partitions):
        raise ScenarioError(
            f"{where}.partition: expected an integer from 0 to {partitions - 1} (partitions: {partitions}), got "
            f"{partition!r}"
        )
    offset = data.get("offset")
    if offset is not None and (not _is_int(offset) or offset < 0):
        raise ScenarioError(f"{where}.offset: expected a non-negative integer, got {offset!r}")
    return Event(Side(side), key, data["value"], ts, partition, offset)
