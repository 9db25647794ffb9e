"""Every kind of store describes its own rows: a header, and rows as wide as the header.

The trace (``StateSnapshot``) and the widgets (``kjoin_viz.store_view``) read stores only
through these descriptions, so a kind whose rows do not fit its header would show wrong
columns everywhere at once.
"""

from __future__ import annotations

import kjoin
from kjoin.joins.fk_transport import InFlight, InFlightMessages
from kjoin.records import Side
from kjoin.state import StateLog, StoreId
from kjoin.joins.aggregate import AggregateOutput
from kjoin.stores.session import SessionStore
from kjoin.stores.suppression import SuppressionStore, TimeLimitStore
from kjoin.topology.custom import ProcessorStoreKind
from kjoin.stores import (
    GlobalTableStore,
    STORE_KINDS,
    BufferedRecord,
    Clock,
    GraceBuffer,
    GraceBuffered,
    OuterJoinBuffer,
    RecordCache,
    Store,
    SubscriptionStore,
    TableStore,
    VersionedStore,
    WindowStore,
    kind_of,
)

WINDOW = {"before_ms": 5, "after_ms": 5, "grace_ms": 0}


def ev(side, key, value, ts):
    return {"side": side, "key": key, "value": value, "ts": ts}


SCENARIOS = {
    "stream-stream outer": {
        "join": "stream-stream",
        "variant": "outer",
        "window": WINDOW,
        "events": [ev("left", "k", "A", 1), ev("right", "j", "a", 2), ev("left", 1, "B", 30)],
    },
    "table-table cached": {
        "join": "table-table",
        "variant": "outer",
        "materialized": True,
        "caching": True,
        "commit_every": 2,
        "events": [ev("left", "k", "A", 1), ev("right", "k", "a", 2), ev("left", "k", "B", 3)],
    },
    "stream-table grace": {
        "join": "stream-table",
        "variant": "left",
        "grace_ms": 5,
        "right": {"versioned": True, "history_retention_ms": 20},
        "events": [
            ev("right", "k", "a", 1),
            ev("left", "k", "A", 4),
            ev("right", "k", None, 6),
            ev("left", "k", "B", 20),
        ],
    },
    "foreign key": {
        "join": "fk",
        "variant": "left",
        "foreign_key": "fk",
        "delivery": "explicit",
        "partitions": 2,
        "events": [ev("right", "Y", "bar", 1), ev("left", "A", {"fk": "Y"}, 2), {"deliver": "next"}],
    },
    "global table": {
        "join": "stream-globaltable",
        "variant": "left",
        "foreign_key": "fk",
        "events": [ev("right", "Y", "bar", 1), ev("left", "A", {"fk": "Y"}, 2)],
    },
}


AGGREGATE_SCENARIOS = {  # the aggregates' and windowed tables' stores (kjoin.stores.aggregate)
    "table aggregate": {
        "join": "table-aggregate",
        "group_by": "g",
        "partitions": 2,
        "events": [{"key": "a", "value": {"g": "x"}, "ts": 1}, {"key": "a", "value": {"g": "y"}, "ts": 2}],
    },
    "session windows, suppressed": {
        "join": "window-aggregate",
        "window": {"inactivity_gap_ms": 5},
        "suppress": "until-window-closes",
        "events": [
            {"key": "a", "value": 1, "ts": 1},
            {"key": "a", "value": 1, "ts": 4},
            {"key": "b", "value": 1, "ts": 20},
        ],
    },
    "wtable join": {
        "join": "wtable-table",
        "window": {"size_ms": 10},
        "events": [
            {"side": "left", "key": "a", "value": 1, "ts": 1},
            {"side": "right", "key": "a", "value": "t", "ts": 2},
        ],
    },
}


def _traces():
    from kjoin.engine.aggregates import run_spec
    from kjoin.engine.aggregates import TimeWindows, run_hopping_join

    traces = {name: kjoin.run(kjoin.Scenario.from_dict(data)) for name, data in SCENARIOS.items()}
    traces.update({name: run_spec(data) for name, data in AGGREGATE_SCENARIOS.items()})
    hopping = [
        {"side": "left", "key": "a", "value": "L", "ts": 12},
        {"side": "right", "key": "a", "value": "r", "ts": 14},
    ]
    traces["hopping join"] = run_hopping_join(hopping, TimeWindows(10, advance_ms=5))
    return traces


def test_every_kind_has_a_name_and_a_header_of_column_names():
    assert STORE_KINDS, "no store kind registered"
    for name, kind in STORE_KINDS.items():
        assert kind.kind == name
        assert kind.header and all(isinstance(column, str) and column for column in kind.header), name
        assert len(set(kind.header)) == len(kind.header), f"{name}: a column name appears twice"


def _topology_traces():
    """A processor's store and a time-limit suppression live in topologies only."""

    def count(record, ctx):
        seen = (ctx.store.get(record.key) or 0) + 1
        ctx.store.put(record.key, seen)
        ctx.forward(value=seen)

    app = kjoin.Topology(semantics="4.4")
    counted = app.stream("orders").process_values(count, store="counts")
    counted.to_table().suppress("time_limit", time_limit_ms=5).to_stream().to("out")
    events = [("a", 1), ("a", 2), ("b", 20)]
    trace = app.run([{"topic": "orders", "key": key, "value": "x", "ts": ts} for key, ts in events])
    return {"processor and time limit": trace}


def _snapshots(trace):
    from kjoin.topology.trace import TopologyTrace
    from kjoin.trace import StateSnapshot

    for step in range(len(trace)):
        if isinstance(trace, TopologyTrace):
            yield step, StateSnapshot(trace.state_at(step), step, trace.steps[step].task)
        else:
            yield step, trace.state_at(step)


def test_every_kind_shows_up_in_a_run_and_its_rows_match_its_header():
    seen = set()
    for name, trace in {**_traces(), **_topology_traces()}.items():
        for step, state in _snapshots(trace):
            for store, entries in state.stores.items():
                kind = state.kind(store)
                assert kind is not None, f"{name}: {store} was declared without a kind"
                seen.add(kind.kind)
                rows = kind.rows_of(entries)
                assert len(rows) == len(entries), f"{name}: {store}"
                assert all(len(row) == len(kind.header) for row in rows), f"{name} step {step}: {store} {rows}"
    assert seen == set(STORE_KINDS), f"kinds no scenario here exercises: {set(STORE_KINDS) - seen}"


def _live_stores(log: StateLog) -> list:
    clock = Clock(log, 0)
    window = WindowStore(log, 0, Side.LEFT, 10, clock)
    window.put("k", 3, "A")
    window.put("j", 1, "B")
    buffer = OuterJoinBuffer(log, 0)
    buffer.put(BufferedRecord(Side.LEFT, "k", "A", 3, 13, 0))
    table = TableStore(log, 0, Side.RIGHT, sends_old_values=True)
    table.put("k", "a", 1)
    table.put("k", "b", 2)
    versioned = VersionedStore(log, 0, Side.RIGHT, 100, sends_old_values=False)
    versioned.put("k", "a", 1)
    versioned.put("k", None, 5)
    grace = GraceBuffer(log, 0, 5)
    grace.put(GraceBuffered("k", "A", 4, 1))
    cache = RecordCache(log, 0, "right table cache")
    cache.put("k", None, "b", 2, "a", 1)
    global_table = GlobalTableStore(log)
    global_table.put("c", "C", 7)
    sessions = SessionStore(log, 0, retention_ms=10, hides_expired=True)
    sessions.put("k", 3, 8, 2, 8)
    sessions.put("j", 1, 1, 1, 1)
    suppressed = SuppressionStore(log, 0)
    suppressed.put(AggregateOutput("k", 2, None, 8, False, "window", 0, 0, (0, 10)))
    time_limited = TimeLimitStore(log, 0)
    time_limited.put("k", "a", 3, None)
    time_limited.put("k", "b", 5, None)  # replaces the value in its first place
    return [clock, window, buffer, table, versioned, grace, cache, global_table, sessions, suppressed, time_limited]


def test_a_live_store_shows_the_rows_its_kind_builds_from_the_log():
    log = StateLog()
    stores = _live_stores(log)
    from kjoin.stores import AGGREGATE_KINDS  # live-checked in tests/test_aggregates.py

    kinds = {type(store).kind for store in stores} | {SubscriptionStore.kind, InFlight.kind, ProcessorStoreKind.kind}
    assert kinds | {kind.kind for kind in AGGREGATE_KINDS} == set(STORE_KINDS)
    for store in stores:
        assert isinstance(store, Store) and store.name == store.store.name
        rows = store.rows()
        assert rows, f"{store.name} shows no rows"
        assert all(len(row) == len(store.header) for row in rows), store.name
        assert rows == type(store).rows_of(log.live[store.store])
        assert kind_of(store.store) is type(store) and store.store.kind == type(store).kind
    window = stores[1]
    assert window.rows() == [("j", 1, "B"), ("k", 3, "A")]  # key order, not arrival
    assert stores[7].rows() == [("c", "C", 7)]  # a global table has no old value
    assert stores[8].rows() == [("j", "[1, 1]", 1, 1), ("k", "[3, 8]", 2, 8)]  # both ends of a session inclusive
    assert stores[9].rows() == [("k", "[0, 10]", 2, 8)]
    assert stores[10].rows() == [("k", 3, "b", 5)]  # buffered at its first update, with its newest value
    versioned = stores[4]
    assert versioned.rows() == [("k", 1, 5, "a"), ("k", 5, None, None)]  # valid to the next version; a tombstone


def test_a_store_id_names_its_kind_without_the_kind_being_part_of_its_identity():
    log = StateLog()
    window = WindowStore(log, 0, Side.LEFT, 10, Clock(log, 0), "join 2: left window")
    window.put("k", 1, "A")
    (store,) = [s for s in log.live if s.name == "join 2: left window"]
    assert store.kind == "window" and kind_of(store) is WindowStore  # a renamed store keeps its kind
    by_hand = StoreId(0, "join 2: left window")
    assert by_hand == store and hash(by_hand) == hash(store) and log.live[by_hand] == {("k", 1, 0): "A"}
    assert kind_of(by_hand) is None  # no kind, and not a default name
    assert kind_of(StoreId(0, "left window")) is WindowStore  # a default name is recognised


def test_messages_in_flight_are_rows_of_their_own_kind():
    trace = kjoin.run(kjoin.Scenario.from_dict(SCENARIOS["foreign key"]))
    state = trace.state_at(1)  # the left record of a left join sent its subscription; nothing delivered yet
    (message,) = state.in_flight()
    store = StoreId(message.partition, "in flight")
    assert state.kind(store) is InFlight
    assert InFlight.rows_of(state.stores[store]) == [
        (
            message.id,
            "subscription",
            message.partition,
            "Y",
            "(Y, A) PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE",
            message.value.hash,
            2,
            1,
        )
    ]
    assert InFlightMessages.header == InFlight.header


def test_the_transport_shows_its_messages_as_in_flight_rows_oldest_first():
    from kjoin.joins.fk_protocol import SUBSCRIPTION, Instruction, Message, SubscriptionWrapper

    log = StateLog()
    transport = InFlightMessages(log, tasks=range(2))
    wrapper = SubscriptionWrapper("ab" * 16, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, "A", 0)
    first = Message(transport.next_id(), SUBSCRIPTION, 1, "Y", wrapper, 2, 0, 0)
    second = Message(transport.next_id(), SUBSCRIPTION, 0, "X", wrapper, 3, 1, 1)
    transport.send(first)
    transport.send(second)
    assert [row[0] for row in transport.rows()] == ["m1", "m2"]
    assert all(len(row) == len(transport.header) for row in transport.rows())
    assert InFlight.rows_of(log.live[StoreId(1, "in flight")]) == [transport.rows()[0]]
    transport.take(first)
    assert [row[0] for row in transport.rows()] == ["m2"]
