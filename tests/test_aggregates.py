"""Seed 000's aggregates: KTable aggregates by a non-key field, windowed aggregates (WTable),
their stores and segments, and the page-view example end to end.

Every expected output below is written out by hand from the rules in the module docstrings.
"""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kjoin.stores import (
    AggregateStore,
    SegmentedWindowStore,
    SegmentLayout,
    describe_store,
    storage_overhead,
)
from kjoin.engine.aggregates import (
    DAY_MS,
    WEEK_MS,
    TimeWindows,
    Window,
    Windowed,
    WTableWriteError,
    count,
    custom,
    materialize,
    output_to_dict,
    reduce,
    run_table_aggregate,
    run_window_aggregate,
    run_wtable_join,
    shift_by,
    sum_of,
)
from kjoin.fates import Fate, Reason
from kjoin.partitioner import default_partition
from kjoin.semantics import parse_semantics
from kjoin.state import StoreId


def rendered(trace) -> list[list[str]]:
    return [[o.render() for o in step.outputs] for step in trace]


def fates(trace) -> list[tuple[str, str | None]]:
    return [(s.fate.value, None if s.reason is None else s.reason.value) for s in trace]


def view(key, ts):
    return {"key": key, "value": "view", "ts": ts}


# -- the seed's page-view example: today against the same day last week ------------------------
PAGE_VIEWS = [
    view("home", 1_000),  # day 0
    view("home", 2_000),
    view("about", 3_000),
    view("home", WEEK_MS + 100),  # day 7: the same day one week later
    view("about", WEEK_MS + 200),
    view("about", WEEK_MS + 300),
    view("home", 5_000),  # a day-0 view arriving on day 7: its window closed long ago
    view("home", WEEK_MS + 400),
]
DAY_0 = Window(0, DAY_MS)
DAY_7 = Window(WEEK_MS, WEEK_MS + DAY_MS)


def page_views_against_last_week(retention_ms):
    return run_wtable_join(
        PAGE_VIEWS,
        "wtable-wtable",
        TimeWindows(DAY_MS),
        self_join=True,
        shifter=shift_by(-WEEK_MS),
        retention_ms=retention_ms,
        joiner=lambda today, last_week: {"today": today, "last_week": last_week},
    )


def test_page_views_today_against_the_same_day_last_week():
    trace = page_views_against_last_week(retention_ms=8 * DAY_MS)
    outputs = [[(o.key, o.value, o.ts) for o in step.outputs] for step in trace]
    assert outputs == [
        [(Windowed("home", DAY_0), {"today": 1, "last_week": None}, 1_000)],
        [(Windowed("home", DAY_0), {"today": 2, "last_week": None}, 2_000)],
        [(Windowed("about", DAY_0), {"today": 1, "last_week": None}, 3_000)],
        [(Windowed("home", DAY_7), {"today": 1, "last_week": 2}, WEEK_MS + 100)],
        [(Windowed("about", DAY_7), {"today": 1, "last_week": 1}, WEEK_MS + 200)],
        [(Windowed("about", DAY_7), {"today": 2, "last_week": 1}, WEEK_MS + 300)],
        [],
        [(Windowed("home", DAY_7), {"today": 2, "last_week": 2}, WEEK_MS + 400)],
    ]
    assert trace[6].fate is Fate.DROPPED and trace[6].reason is Reason.EXPIRED_WINDOW
    assert f"[0, {DAY_MS})" in trace[6].explain and "closed" in trace[6].explain
    # the result is a WTable: keyed by (page, day), with both days of both pages in the store
    assert trace.wtable().materialize() == {
        Windowed("home", DAY_0): {"today": 2, "last_week": None},
        Windowed("about", DAY_0): {"today": 1, "last_week": None},
        Windowed("home", DAY_7): {"today": 2, "last_week": 2},
        Windowed("about", DAY_7): {"today": 2, "last_week": 1},
    }
    store = trace.state_at(-1).stores[StoreId(0, "window aggregate store")]
    assert SegmentedWindowStore.rows_from(store) == [
        ("about", f"[0, {DAY_MS})", 1, 3_000, 0),
        ("about", f"[{WEEK_MS}, {WEEK_MS + DAY_MS})", 2, WEEK_MS + 300, 1),
        ("home", f"[0, {DAY_MS})", 2, 2_000, 0),
        ("home", f"[{WEEK_MS}, {WEEK_MS + DAY_MS})", 2, WEEK_MS + 400, 1),
    ]


def test_with_the_default_retention_last_weeks_window_is_gone_when_today_looks_it_up():
    trace = page_views_against_last_week(retention_ms=None)  # size + grace = one day
    assert [[o.value["last_week"] for o in step.outputs] for step in trace] == [[None]] * 6 + [[], [None]]
    assert "segment(s) 0 dropped whole" in trace[3].explain
    store = trace.state_at(3).stores[StoreId(0, "window aggregate store")]
    assert [row[0:2] for row in SegmentedWindowStore.rows_from(store)] == [("home", f"[{WEEK_MS}, {WEEK_MS + DAY_MS})")]


# -- KTable aggregate by a non-key field ---------------------------------------------------------
def order(page, n):
    return {"page": page, "n": n}


def test_a_record_that_changes_group_is_subtracted_from_the_old_group_and_added_to_the_new():
    events = [
        {"key": "a", "value": order("X", 2), "ts": 1},
        {"key": "b", "value": order("X", 3), "ts": 2},
        {"key": "a", "value": order("Y", 2), "ts": 3},  # a moves X -> Y: two records, old half first
        {"key": "a", "value": order("Y", 5), "ts": 4},  # same group: one Change(new, old) (KIP-904)
        {"key": "b", "value": None, "ts": 5},  # tombstone: subtract b from X
        {"key": "c", "value": None, "ts": 6},  # delete of an absent key: nothing to repartition
        {"key": None, "value": order("X", 1), "ts": 7},
        {"key": "d", "value": {"n": 4}, "ts": 8},  # no page: null group key
    ]
    trace = run_table_aggregate(events, "page", sum_of("n"))
    assert rendered(trace) == [["X=2"], ["X=5"], ["X=3", "Y=2"], ["Y=5"], ["X=0"], [], [], []]
    assert [[o.half for o in s.outputs] for s in trace][:5] == [
        ["add"],
        ["add"],
        ["subtract", "add"],
        ["both"],
        ["subtract"],
    ]
    assert [(o.old, o.ts) for o in trace[2].outputs] == [(5, 3), (None, 3)]
    assert fates(trace) == [
        ("joined", None),
        ("joined", None),
        ("joined", None),
        ("joined", None),
        ("joined", None),
        ("stored", "nothing-to-delete"),
        ("dropped", "null-key"),
        ("stored", "null-group-key"),
    ]
    explain = trace[2].explain
    assert explain.index("X: Change(new=null") < explain.index('Y: Change(new={"n":2,"page":"Y"}, old=null)')
    assert "subtractor" in trace[3].explain and "adder" in trace[3].explain
    # a group whose records all left keeps its aggregate: Kafka's store keeps X = 0
    assert AggregateStore.rows_from(trace.state_at(-1).stores[StoreId(0, "aggregate store")]) == [
        ("X", 0, 5),
        ("Y", 5, 4),
    ]
    topic = trace.state_at(-1).stores[StoreId(0, "repartition topic")]
    assert [row[1:4] for row in sorted(topic.values(), key=lambda r: r[1])][:3] == [
        (1, "X", order("X", 2)),
        (2, "X", order("X", 3)),
        (3, "X", None),
    ]


@pytest.mark.parametrize("version, outputs", [("3.4", [["Y=2"], ["Y=0", "Y=5"]]), ("3.5", [["Y=2"], ["Y=5"]])])
def test_an_update_that_keeps_its_group_updates_the_aggregate_twice_before_kafka_3_5(version, outputs):
    """Before KIP-904 (3.5) the group-by writes the subtract half and then the add half even to one group."""
    events = [{"key": "a", "value": order("Y", 2), "ts": 1}, {"key": "a", "value": order("Y", 5), "ts": 2}]
    trace = run_table_aggregate(events, "page", sum_of("n"), semantics=version)
    assert rendered(trace) == outputs
    assert [o.half for o in trace[1].outputs] == (["subtract", "add"] if version == "3.4" else ["both"])
    assert [o.old for o in trace[1].outputs] == ([2, 0] if version == "3.4" else [2])
    assert ("two records even within one group" in trace[1].explain) == (version == "3.4")


def test_count_reduce_and_a_custom_aggregator_follow_the_same_change():
    events = [
        {"key": "a", "value": 1, "ts": 1},
        {"key": "b", "value": 3, "ts": 2},
        {"key": "a", "value": 2, "ts": 3},
        {"key": "b", "value": None, "ts": 4},
        {"key": "a", "value": None, "ts": 5},
    ]
    parity = lambda key, value: "even" if value % 2 == 0 else "odd"  # noqa: E731
    assert rendered(run_table_aggregate(events, parity, count())) == [
        ["odd=1"],
        ["odd=2"],
        ["odd=1", "even=1"],
        ["odd=0"],
        ["even=0"],
    ]
    # reduce: the first value is the aggregate; subtracting down to None deletes the row (a tombstone)
    minus = lambda agg, value: None if agg == value else agg - value  # noqa: E731
    assert rendered(run_table_aggregate(events, parity, reduce(lambda agg, v: agg + v, minus))) == [
        ["odd=1"],
        ["odd=4"],
        ["odd=3", "even=2"],
        ["odd=null"],
        ["even=null"],
    ]
    members = custom(
        lambda: (), lambda k, v, agg: tuple(sorted(agg + (v,))), lambda k, v, agg: tuple(x for x in agg if x != v)
    )
    assert rendered(run_table_aggregate(events, parity, members))[2] == ["odd=[3]", "even=[2]"]


def test_a_table_aggregate_needs_a_subtractor():
    with pytest.raises(ValueError, match="subtractor"):
        run_table_aggregate([], "page", custom(lambda: 0, lambda k, v, agg: agg + 1))


def test_the_repartition_topic_sends_each_group_to_the_task_of_its_key():
    events = [{"key": f"k{i}", "value": order(page, 1), "ts": i} for i, page in enumerate(["X", "Y", "Z", "X"])]
    trace = run_table_aggregate(events, "page", count(), partitions=3)
    for step in trace:
        for output in step.outputs:
            assert output.partition == default_partition(output.key, 3)
            topic = trace.state_at(step.index).stores[StoreId(output.partition, "repartition topic")]
            assert any(row[2] == output.key and row[5] == step.index for row in topic.values())
    assert rendered(trace)[3] == ["X=2"]


# -- property: the aggregate equals SQL's GROUP BY over the materialized table after every step --
TABLE_EVENTS = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(["a", "b", "c", "d", None]),
            "value": st.one_of(
                st.none(), st.fixed_dictionaries({"page": st.sampled_from(["X", "Y", "Z"]), "n": st.integers(-5, 9)})
            ),
            "ts": st.integers(0, 50),
        }
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=TABLE_EVENTS, partitions=st.integers(1, 3))
def test_a_table_aggregate_equals_sql_group_by_over_the_materialized_table_after_every_step(events, partitions):
    trace = run_table_aggregate(
        events,
        "page",
        custom(
            lambda: (0, 0),
            lambda k, v, agg: (agg[0] + 1, agg[1] + v["n"]),
            lambda k, v, agg: (agg[0] - 1, agg[1] - v["n"]),
        ),
        partitions,
    )
    db = sqlite3.connect(":memory:")
    for step in trace:
        state = trace.state_at(step.index)
        db.execute("DROP TABLE IF EXISTS t")
        db.execute("CREATE TABLE t (k TEXT, page TEXT, n INTEGER)")
        for store, entries in state.stores.items():
            if store.name == "left table":
                db.executemany(
                    "INSERT INTO t VALUES (?, ?, ?)", [(k, row[0]["page"], row[0]["n"]) for k, row in entries.items()]
                )
        expected = {page: (c, s) for page, c, s in db.execute("SELECT page, COUNT(*), SUM(n) FROM t GROUP BY page")}
        result = {}
        for store, entries in state.stores.items():
            if store.name == "aggregate store":
                result.update({group: row[0] for group, row in entries.items()})
        # Kafka keeps a group whose records all left, with the initial aggregate
        assert {g: agg for g, agg in result.items() if agg[0] != 0} == expected, f"after step {step.index}"
        assert all(agg == (0, 0) for agg in result.values() if agg[0] == 0)
    db.close()


# -- windowed aggregates -----------------------------------------------------------------------
def test_tumbling_windows_with_grace_accept_late_records_until_window_end_plus_grace():
    events = [view("p", 5), view("p", 12), view("p", 3), view("p", 14), view("p", 1), view("q", 2), view("p", 20)]
    trace = run_window_aggregate(events, TimeWindows(10, grace_ms=4))
    # stream time 12: [0,10) closes at 10 + 4 = 14 > 12, so 3 is still in; at 14 it is closed
    assert rendered(trace) == [
        ["p@[0, 10)=1"],
        ["p@[10, 20)=1"],
        ["p@[0, 10)=2"],
        ["p@[10, 20)=2"],
        [],
        [],
        ["p@[20, 30)=1"],
    ]
    assert fates(trace)[4:6] == [("dropped", "expired-window"), ("dropped", "expired-window")]
    assert [o.old for o in trace[3].outputs] == [1]
    # a new window's Change carries the initializer's value as its old one (KStreamWindowAggregate's oldAgg)
    assert output_to_dict(trace[0].outputs[0]) == {
        "key": "p",
        "value": 1,
        "old": 0,
        "ts": 5,
        "tombstone": False,
        "kind": "aggregate-window",
        "partition": 0,
        "origin_step": 0,
        "window": {"start_ms": 0, "end_ms": 10},
    }


def test_the_close_rule_is_window_end_plus_grace_at_most_stream_time():
    windows = TimeWindows(10, grace_ms=5)
    assert not windows.is_closed(Window(0, 10), 14)
    assert windows.is_closed(Window(0, 10), 15)
    trace = run_window_aggregate([view("p", 14), view("p", 9), view("p", 15), view("p", 9)], windows)
    assert fates(trace) == [("joined", None), ("joined", None), ("joined", None), ("dropped", "expired-window")]


def test_hopping_windows_update_every_window_a_record_belongs_to_and_skip_only_the_closed_ones():
    windows = TimeWindows(10, advance_ms=5, grace_ms=0)
    assert windows.windows_for(12) == [Window(5, 15), Window(10, 20)]
    assert windows.windows_for(3) == [Window(0, 10)]
    trace = run_window_aggregate([view("p", 12), view("p", 14), view("p", 9)], windows)
    assert rendered(trace) == [["p@[5, 15)=1", "p@[10, 20)=1"], ["p@[5, 15)=2", "p@[10, 20)=2"], ["p@[5, 15)=3"]]
    # 9 belongs to [0, 10) (closed: 10 <= 14) and [5, 15) (open: 15 > 14): joined, with a note for the closed one
    assert trace[2].fate is Fate.JOINED and "Window [0, 10) closed" in trace[2].explain


def test_a_windowed_aggregate_skips_a_null_key_and_counts_a_null_value_as_every_kafka_version_does():
    """Kafka's windowed aggregate skips only a null key (its javadoc says null values too; the harness shows
    2.8 to 4.3 counting them): the null value at 60 is counted and moves stream time, so p@1 is then late."""
    trace = run_window_aggregate(
        [{"key": None, "value": 1, "ts": 50}, {"key": "p", "value": None, "ts": 60}, view("p", 1)], TimeWindows(10)
    )
    assert fates(trace) == [("dropped", "null-key"), ("joined", None), ("dropped", "expired-window")]
    assert rendered(trace) == [[], ["p@[60, 70)=1"], []]
    assert "null value" in trace[1].explain and "skips only null keys" in trace[1].explain
    assert trace.state_at(2).stores[StoreId(0, "window aggregate clock")] == {"stream time": 60}
    for version in ("0.10.0", "2.8", "3.3", "4.3"):
        assert parse_semantics(version).windowed_aggregate_counts_null_values


def test_sum_in_windows_and_several_keys_partitioned_by_the_key_alone():
    events = [
        {"key": k, "value": {"n": n}, "ts": ts} for k, n, ts in [("a", 2, 1), ("b", 5, 2), ("a", 3, 11), ("b", 1, 9)]
    ]
    trace = run_window_aggregate(events, TimeWindows(10, grace_ms=20), sum_of("n"), partitions=2)
    assert rendered(trace) == [["a@[0, 10)=2"], ["b@[0, 10)=5"], ["a@[10, 20)=3"], ["b@[0, 10)=6"]]
    for step in trace:
        assert step.task == default_partition(step.record.key, 2)  # every window of a key in one task
    assert materialize(trace.outputs) == {
        Windowed("a", Window(0, 10)): 2,
        Windowed("b", Window(0, 10)): 6,
        Windowed("a", Window(10, 20)): 3,
    }


def test_writing_a_wtable_to_a_topic_is_an_error_and_to_stream_converts_it():
    wtable = run_window_aggregate([view("p", 1), view("p", 2), view("q", 12)], TimeWindows(10)).wtable()
    with pytest.raises(WTableWriteError, match=r"cannot write a WTable to topic 'views'.*to_stream"):
        wtable.to("views")
    with pytest.raises(WTableWriteError, match="partitioned by the key alone"):
        wtable.through("views")
    as_table = wtable.to_stream(lambda key, value, window: (f"{key}@{window.start_ms}", value))
    assert as_table == [("p@0", 1, 1), ("p@0", 2, 2), ("q@10", 1, 12)]
    by_key = wtable.to_stream(lambda key, value, window: (key, {"count": value, "start_ms": window.start_ms}))
    assert by_key[-1] == ("q", {"count": 1, "start_ms": 10}, 12)


def test_window_spec_errors_name_the_rule():
    with pytest.raises(ValueError, match=r"advance_ms must lie within \(0, 10\]"):
        TimeWindows(10, advance_ms=11)
    with pytest.raises(ValueError, match="size_ms must be positive"):
        TimeWindows(0)
    with pytest.raises(ValueError, match="smaller than window size 10 \\+ grace 5"):
        run_window_aggregate([], TimeWindows(10, grace_ms=5), retention_ms=12)
    with pytest.raises(ValueError, match=r"events\[0\].ts"):
        run_window_aggregate([{"key": "p", "value": 1, "ts": "soon"}], TimeWindows(10))


# -- segments ----------------------------------------------------------------------------------
def test_the_seeds_storage_overhead_of_rolling_segments():
    assert storage_overhead(2) == 2.0
    assert storage_overhead(3) == 1.5
    assert SegmentLayout.rolling(100, 2).overhead == 2.0
    assert SegmentLayout.rolling(100, 3).overhead == 1.5
    kafka = SegmentLayout.kafka(DAY_MS)
    assert (kafka.segment_interval_ms, kafka.max_live_segments) == (DAY_MS // 2, 3)
    assert SegmentLayout.kafka(1_000).segment_interval_ms == 60_000  # never shorter than a minute
    with pytest.raises(ValueError, match="at least 2 segments"):
        storage_overhead(1)


@pytest.mark.parametrize("segments, interval", [(2, 10), (3, 5)])
def test_segments_roll_with_the_stores_observed_time_and_are_dropped_whole(segments, interval):
    events = [view("p", ts) for ts in (1, 11, 21, 31)]
    trace = run_window_aggregate(events, TimeWindows(10), segments=segments)
    layout = SegmentLayout.rolling(10, segments)
    assert layout.segment_interval_ms == interval
    for step in trace:
        state = trace.state_at(step.index).stores
        live = SegmentedWindowStore.segment_rows_from(state[StoreId(0, "window aggregate store segments")])
        assert len(live) <= layout.max_live_segments
        rows = SegmentedWindowStore.rows_from(state[StoreId(0, "window aggregate store")])
        observed = max(int(r[1][1:].split(",")[0]) for r in rows)
        # every record is in the segment of its window start, and no live segment is behind the retention
        for _, window, _, _, segment in rows:
            assert segment == int(window[1:].split(",")[0]) // interval
            assert segment >= (observed - 10) // interval
    assert "dropped whole" in trace[2].explain


def test_kafkas_default_layout_is_one_segment_for_short_windows():
    trace = run_window_aggregate([view("p", ts) for ts in (1, 11, 21)], TimeWindows(10))
    segments = trace.state_at(-1).stores[StoreId(0, "window aggregate store segments")]
    assert SegmentedWindowStore.segment_rows_from(segments) == [(0, "[0, 60000)", 3)]
    # only the window store's hidden rows would expire; with one segment nothing is dropped
    assert len(SegmentedWindowStore.rows_from(trace.state_at(-1).stores[StoreId(0, "window aggregate store")])) == 3


# -- the store contract: name, header, rows(), and the same rows decoded from any snapshot ---------
def test_every_aggregate_store_describes_itself_and_its_snapshot_rows_match_the_live_rows():
    from kjoin.stores import RepartitionTopic
    from kjoin.joins.aggregate import TableAggregate
    from kjoin.joins.context import StepContext
    from kjoin.joins.window_aggregate import WindowAggregate
    from kjoin.records import Record, Side
    from kjoin.state import StateLog
    from kjoin.stores import kind_of

    log = StateLog()
    topology = TableAggregate(log, 1, lambda key, value: value["page"], count())
    windowed = WindowAggregate(log, 0, TimeWindows(10), count(), layout=SegmentLayout.rolling(10, 2))
    for index, (key, page, ts) in enumerate([("a", "X", 1), ("b", "X", 12), ("a", "Y", 25)]):
        topology.process(
            Record(Side.LEFT, key, {"page": page}, ts), StepContext(index, Record(Side.LEFT, key, None, ts), None)
        )
        windowed.process(Record(Side.LEFT, key, "v", ts), StepContext(index, Record(Side.LEFT, key, "v", ts), None))
    stores = [topology.results[0], topology.topics[0], windowed.store]
    assert [(s.name, s.header) for s in stores] == [
        ("aggregate store", ("key", "value", "ts")),
        ("repartition topic", ("offset", "key", "new", "old", "ts", "from step")),
        ("window aggregate store", ("key", "window", "value", "ts", "segment")),
    ]
    for store in stores:
        assert store.rows() == type(store).rows_from(log.live[store.store])
        assert all(len(row) == len(store.header) for row in store.rows())
        kind = kind_of(store.store)  # the kind its id declares reads the same rows from the log
        assert kind is not None and kind.header == store.header
        assert kind.rows_of(log.live[store.store]) == store.rows()
    segments = windowed.store.segment_store
    assert kind_of(segments).rows_of(log.live[segments]) == windowed.store.segment_rows()
    assert AggregateStore.rows_from(log.live[topology.results[0].store]) == [("X", 1, 25), ("Y", 1, 25)]
    assert RepartitionTopic.rows_from(log.live[topology.topics[0].store])[2] == (2, "X", None, {"page": "X"}, 25, 2)
    # the window store rolled at 20: segment 0 ([0, 10)) was dropped whole
    assert windowed.store.rows() == [("a", "[20, 30)", 1, 25, 2), ("b", "[10, 20)", 1, 12, 1)]
    assert windowed.store.segment_rows() == SegmentedWindowStore.segment_rows_from(
        log.live[windowed.store.segment_store]
    )


def test_the_state_frame_shows_every_aggregate_store_at_every_step():
    from kjoin.engine.aggregates import run_hopping_join, select_by_timestamp

    events = [
        {"side": side, "key": "a", "value": {"page": "X", "at": ts}, "ts": ts}
        for side, ts in [("left", 1), ("right", 3), ("left", 12), ("right", 14)]
    ]
    windows = TimeWindows(10, grace_ms=100)
    traces = [
        run_table_aggregate(events, "page"),
        run_window_aggregate(events, windows),
        run_wtable_join(events, "wtable-wtable", windows, "outer"),
        run_wtable_join(events, "wtable-table", windows),
        run_wtable_join(events, "stream-wtable", windows, selector=select_by_timestamp(windows)),
        run_wtable_join(events, "table-wtable", windows, selector=select_by_timestamp(windows)),
        run_hopping_join(events, TimeWindows(10, advance_ms=5)),
    ]
    for trace in traces:
        for step in trace:
            state = trace.state_at(step.index)
            frame = state.frame()  # every entry of every store is one row
            assert len(frame) == sum(len(entries) for entries in state.stores.values())
            for store, entries in state.stores.items():  # and every store describes itself for a stepper
                header, rows = describe_store(store.name, entries)
                assert len(rows) == len(entries) and all(len(row) == len(header) for row in rows)
        assert len(trace.steps_frame()) == 4 and len(trace.outputs_frame()) == len(trace.outputs)


def test_the_public_names_of_the_aggregates_api_exist():
    import kjoin.engine.aggregates
    import kjoin.scenario.aggregate

    for module in (kjoin.engine.aggregates, kjoin.scenario.aggregate):
        assert [name for name in module.__all__ if not hasattr(module, name)] == []
    assert kjoin.engine.aggregates.JOINS == (
        "table-aggregate",
        "window-aggregate",
        "wtable-wtable",
        "wtable-table",
        "stream-wtable",
        "table-wtable",
    )


def test_an_aggregator_that_fails_on_a_value_names_the_event_and_the_value():
    from kjoin.engine.aggregates import run_spec
    from kjoin.scenario import ScenarioError

    events = [
        {"key": "a", "value": {"page": "X", "n": 2}, "ts": 1},
        {"key": "b", "value": {"page": "X", "n": "ten"}, "ts": 2},
    ]
    with pytest.raises(ValueError, match=r"events\[1\] \(left .*\(key b\)\): the sum of n adder failed on value"):
        run_table_aggregate(events, "page", sum_of("n"))
    with pytest.raises(ScenarioError, match=r"^w.yaml: events\[1\] .* the sum of n adder failed"):
        run_spec(
            {"join": "window-aggregate", "window": {"size_ms": 10}, "aggregate": {"sum": "n"}, "events": events},
            "w.yaml",
        )
    with pytest.raises(ValueError, match=r"events\[0\] .* the group-by mapper failed on key a"):
        run_table_aggregate(events[:1], lambda key, value: value["missing"])
