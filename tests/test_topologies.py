"""Self-joins, chained joins, materialized results and record caches, against the outputs
Apache Kafka's own integration tests assert (tests/kafka_cases/topologies.yaml), plus the
rules behind them (docs/semantics.md §1.9, §1.10, §3.2–3.4, §3.6)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kjoin import Fate, Reason, Scenario, run
from kjoin.scenario import ScenarioError

CASES = yaml.safe_load((Path(__file__).parent / "kafka_cases" / "topologies.yaml").read_text())


def _scenario(case: dict) -> Scenario:
    events = []
    for side, value, ts, *flags in CASES["inputs"][case["input"]]:
        events.append({"side": side, "key": None if flags == ["null-key"] else 0, "value": value, "ts": ts})
    return Scenario.from_dict({**case["scenario"], "events": events})


def _rendered(step) -> str:
    return ", ".join(f"{o.render()}@{o.ts}" for o in step.outputs)


@pytest.mark.parametrize("case", CASES["cases"], ids=[case["name"] for case in CASES["cases"]])
def test_kafka_integration_test_outputs(case):
    trace = run(_scenario(case))
    if "expect" in case:
        assert [_rendered(step) for step in trace.steps] == case["expect"]
    else:
        outputs = trace.outputs
        value, ts = case["last"].split("@")
        assert (outputs[-1].value, outputs[-1].ts) == (value, int(ts))
        store = trace.state_at(len(trace) - 1).frame()
        result = store[store.store == "result table"]
        assert [(row.key, row.value, row.ts) for row in result.itertuples()] == [(0, value, int(ts))]


def _table(variant: str, events: list[tuple], **options) -> Scenario:
    return Scenario.from_dict(
        {
            "join": "table-table",
            "variant": variant,
            **options,
            "events": [{"side": side, "key": key, "value": value, "ts": ts} for side, key, value, ts in events],
        }
    )


# -- §3.3/§3.4: old values --------------------------------------------------------------
def test_old_values_join_the_old_input_with_the_other_sides_current_value():
    events = [
        ("left", "k", "A", 1),
        ("right", "k", "a", 2),
        ("left", "k", "B", 3),
        ("right", "k", "b", 4),
        ("left", "k", None, 5),
    ]
    trace = run(_table("inner", events, send_old_values=True))
    olds = [(o.render(), o.old) for o in trace.outputs]
    # B@3 replaces A while the right side holds a: old = A-a; b@4: old = B-a; the delete: old = B-b.
    assert olds == [("A-a", None), ("B-a", "A-a"), ("B-b", "B-a"), ("null", "B-b")]
    assert all(o.has_old for o in trace.outputs)
    assert "old" in trace.steps[1].to_dict()["outputs"][0]


def test_without_send_old_values_outputs_carry_no_old_value():
    trace = run(_table("inner", [("left", "k", "A", 1), ("right", "k", "a", 2), ("left", "k", "B", 3)]))
    assert [o.has_old for o in trace.outputs] == [False, False]
    assert "old" not in trace.steps[2].to_dict()["outputs"][0]


def test_a_left_joins_right_side_always_sends_an_old_value():
    """KTableKTableRightJoin joins the left value with the old right value, even a null one."""
    trace = run(
        _table(
            "left",
            [
                ("left", "k", "A", 1),
                ("right", "k", "a", 2),
                ("right", "j", "x", 3),
                ("left", "j", "J", 4),
                ("right", "j", None, 5),
            ],
            send_old_values=True,
        )
    )
    by_step = {step.index: [(o.render(), o.old) for o in step.outputs] for step in trace.steps}
    assert by_step[1] == [("A-a", "A-null")]
    assert by_step[4] == [("J-null", "J-x")]


def test_a_downstream_left_join_turns_on_old_values_upstream():
    """§3.2: ``inner.leftJoin(...)``: the inner join's results carry old values, so the
    chained left join sees a delete of a row that had a result and emits its tombstone."""
    trace = run(
        _table(
            "inner", [("left", "k", "A", 1), ("right", "k", "a", 2), ("left", "k", None, 3)], then=[{"variant": "left"}]
        )
    )
    assert [_rendered(step) for step in trace.steps] == ["", "A-a-a@2, A-a-a@2", "null@3"]


# -- §3.4: materialization ---------------------------------------------------------------
def test_a_materialized_result_is_a_store_in_the_state():
    trace = run(
        _table("left", [("left", "k", "A", 1), ("right", "k", "a", 2), ("left", "k", None, 3)], materialized=True)
    )
    result = [
        [(r.key, r.value, r.ts) for r in trace.state_at(i).frame().itertuples() if r.store == "result table"]
        for i in range(3)
    ]
    assert result == [[("k", "A-null", 1)], [("k", "A-a", 2)], []]


# -- §3.6: record caches -----------------------------------------------------------------
def test_a_caching_source_holds_updates_until_the_commit_and_forwards_the_newest_per_key():
    events = [("left", "k", "A", 1), ("left", "k", "B", 2), ("right", "k", "a", 3)]
    trace = run(_table("left", events, caching=True, commit_every=3))
    assert [step.fate for step in trace.steps[:2]] == [Fate.BUFFERED, Fate.BUFFERED]
    assert [step.reason for step in trace.steps[:2]] == [Reason.RECORD_CACHE, Reason.RECORD_CACHE]
    # The commit after the third record flushes the left cache (B only, A is gone), then the right.
    assert [(o.render(), o.ts, o.origin_step) for o in trace.steps[2].outputs] == [("B-a", 3, 1), ("B-a", 3, 2)]
    cache = [r for r in trace.state_at(1).frame().itertuples() if r.store == "left table cache"]
    assert [(r.key, r.value) for r in cache] == [("k", "B")]
    assert not [r for r in trace.state_at(2).frame().itertuples() if r.store.endswith("cache")]


def test_a_cached_result_store_forwards_one_result_per_key_per_commit():
    """The duplicates of KAFKA-6443 collapse in a caching result store."""
    events = [("left", "k", "A", 3), ("right", "k", "a", 4)]
    plain = run(_table("inner", events, then=[{"variant": "inner"}], materialized=True))
    cached = run(_table("inner", events, then=[{"variant": "inner"}], materialized=True, caching=["result"]))
    assert _rendered(plain.steps[1]) == "A-a-a@4, A-a-a@4"
    assert _rendered(cached.steps[1]) == "A-a-a@4"


def test_a_cache_skips_a_delete_with_no_value_before_or_after():
    """Without a cache the left join emits a tombstone for deleting a left row that never
    existed (the right side is present); a caching left store forwards nothing."""
    events = [("right", "k", "a", 1), ("left", "k", None, 2)]
    plain = run(_table("left", events))
    cached = run(_table("left", events, caching=["left"]))
    assert _rendered(plain.steps[1]) == "null@2"
    assert cached.steps[1].fate is Fate.STORED and cached.steps[1].reason is Reason.NOTHING_TO_DELETE
    assert cached.steps[1].outputs == ()


@pytest.mark.parametrize("commit_every", [1, 2, 5])
def test_caching_never_changes_the_final_result(commit_every):
    events = [
        ("left", "k", "A", 1),
        ("right", "k", "a", 2),
        ("left", "j", "J", 3),
        ("right", "k", None, 4),
        ("left", "k", "B", 5),
        ("right", "j", "x", 6),
        ("right", "k", "b", 7),
    ]
    plain = run(_table("outer", events, materialized=True))
    cached = run(_table("outer", events, materialized=True, caching=True, commit_every=commit_every))
    last = len(plain) - 1

    def final(t):
        return sorted(
            (r.key, r.value, r.ts) for r in t.state_at(last).frame().itertuples() if r.store == "result table"
        )

    if (last + 1) % commit_every == 0:
        assert final(cached) == final(plain)
    assert len(cached.outputs) <= len(plain.outputs)


# -- §1.9 / §1.10: stream topologies -------------------------------------------------------
def test_the_optimized_self_join_keeps_one_store_the_plain_one_two():
    events = [{"side": "left", "key": "k", "value": v, "ts": t} for v, t in (("A", 1), ("B", 2))]
    window = {"before_ms": 5, "after_ms": 5, "grace_ms": 0}
    one = run(
        Scenario.from_dict(
            {
                "join": "stream-stream",
                "variant": "inner",
                "self_join": True,
                "optimize": True,
                "window": window,
                "events": events,
            }
        )
    )
    two = run(
        Scenario.from_dict(
            {"join": "stream-stream", "variant": "inner", "self_join": True, "window": window, "events": events}
        )
    )
    stores = lambda t: sorted(set(t.state_at(1).frame().store))  # noqa: E731
    assert "self window" in stores(one) and "left window" not in stores(one)
    assert {"left window", "right window"} <= set(stores(two))
    assert [o.render() for o in one.outputs] == [o.render() for o in two.outputs] == ["A-A", "B-A", "A-B", "B-B"]


def test_the_optimized_self_join_skips_null_records_before_advancing_stream_time():
    window = {"before_ms": 0, "after_ms": 0, "grace_ms": 10}
    events = [
        {"side": "left", "key": "k", "value": None, "ts": 50},
        {"side": "left", "key": "k", "value": "A", "ts": 1},
    ]
    one = run(
        Scenario.from_dict(
            {
                "join": "stream-stream",
                "variant": "inner",
                "self_join": True,
                "optimize": True,
                "window": window,
                "events": events,
            }
        )
    )
    two = run(
        Scenario.from_dict(
            {"join": "stream-stream", "variant": "inner", "self_join": True, "window": window, "events": events}
        )
    )
    assert one.state_at(0).stream_time() is None and two.state_at(0).stream_time() == 50
    assert [o.render() for o in one.outputs] == [o.render() for o in two.outputs] == ["A-A"]


def test_the_self_result_boundary_differs_between_the_two_self_joins():
    """At ``ts == stream time - retention + 1`` the two-store join still sees the record in
    its left store; the single-store join emits the self-result only for a larger ts."""
    window = {"before_ms": 2, "after_ms": 2, "grace_ms": 0}  # retention 4
    events = [{"side": "left", "key": "k", "value": "A", "ts": 10}, {"side": "left", "key": "k", "value": "B", "ts": 7}]
    base = {"join": "stream-stream", "variant": "inner", "self_join": True, "window": window, "events": events}
    one = run(Scenario.from_dict({**base, "optimize": True}))
    two = run(Scenario.from_dict(base))
    assert [o.render() for o in two.steps[1].outputs] == ["B-B"]
    assert [o.render() for o in one.steps[1].outputs] == []


def test_each_join_of_a_chain_has_its_own_stores_and_stream_time():
    window = {"before_ms": 5, "after_ms": 5, "grace_ms": 0}
    events = [
        {"side": "left", "key": "k", "value": "A", "ts": 1},
        {"side": "right", "key": "k", "value": "a", "ts": 3},
        {"side": "left", "key": "j", "value": "J", "ts": 40},
    ]
    trace = run(
        Scenario.from_dict(
            {
                "join": "stream-stream",
                "variant": "inner",
                "then": [{"variant": "left"}],
                "window": window,
                "events": events,
            }
        )
    )
    assert [o.render() for o in trace.outputs] == ["A-a-a"]
    frame = trace.state_at(2).frame()
    assert [(r.key, r.value) for r in frame.itertuples() if r.store == "join 2: left window"] == [("k", "A-a")]
    assert [(r.key, r.value) for r in frame.itertuples() if r.store == "join 2: right window"] == [("k", "a")]
    # J@40 found no partner in join 1 (inner) and never reached join 2: their stream times differ.
    times = {r.store: r.ts for r in frame.itertuples() if r.key == "stream time"}
    assert times == {"clock": 40, "join 2: clock": 3}


def test_scenario_errors_for_topologies():
    base = {
        "join": "stream-stream",
        "variant": "left",
        "window": {"before_ms": 1, "after_ms": 1, "grace_ms": 0},
        "events": [],
    }
    with pytest.raises(ScenarioError, match="optimize: Kafka rewrites only inner self-joins"):
        Scenario.from_dict({**base, "self_join": True, "optimize": True})
    with pytest.raises(ScenarioError, match=r"events\[0\].side: a self-join has one input"):
        Scenario.from_dict(
            {**base, "self_join": True, "events": [{"side": "right", "key": "k", "value": "a", "ts": 1}]}
        )
    with pytest.raises(ScenarioError, match="materialized: only a table-table join"):
        Scenario.from_dict({**base, "materialized": True})
    with pytest.raises(ScenarioError, match=r"then\[0\].variant: expected one of inner \| left \| outer"):
        Scenario.from_dict({**base, "then": [{"variant": "full"}]})
    with pytest.raises(ScenarioError, match="caching: only a materialized result"):
        Scenario.from_dict({"join": "table-table", "variant": "inner", "caching": ["result"], "events": []})
    with pytest.raises(ScenarioError, match="commit_every: commits matter only"):
        Scenario.from_dict({"join": "table-table", "variant": "inner", "commit_every": 3, "events": []})


def test_topology_options_survive_a_round_trip_through_to_dict():
    data = {
        "join": "table-table",
        "variant": "left",
        "then": [{"variant": "outer"}],
        "materialized": True,
        "send_old_values": True,
        "caching": ["left", "result"],
        "commit_every": 2,
        "events": [],
    }
    scenario = Scenario.from_dict(data)
    assert Scenario.from_dict(scenario.to_dict()) == scenario


# -- §4.5: a foreign-key join's caching result store -----------------------------------------
def _fk(events, **options) -> Scenario:
    return Scenario.from_dict(
        {
            "join": "fk",
            "variant": "inner",
            "foreign_key": "fk",
            **options,
            "events": [{"side": side, "key": key, "value": value, "ts": ts} for side, key, value, ts in events],
        }
    )


def test_a_caching_fk_result_store_suppresses_the_tombstone_of_a_never_joined_row():
    """An inner FK join emits a tombstone when a left row that never joined is deleted; a
    caching, materialized result store drops it (MaterializationIntegrationTest)."""
    events = [
        ("left", "k", {"fk": "x"}, 1),
        ("left", "k", None, 2),
        ("right", "y", "Y", 3),
        ("left", "j", {"fk": "y"}, 4),
    ]
    plain = run(_fk(events))
    stored = run(_fk(events, materialized=True))
    cached = run(_fk(events, materialized=True, caching=True))
    tombstones = lambda t: [(o.key, o.ts) for o in t.outputs if o.tombstone]  # noqa: E731
    assert tombstones(plain) == tombstones(stored) == [("k", 2)]
    assert tombstones(cached) == []
    assert (
        [o.render() for o in cached.outputs]
        == [o.render() for o in plain.outputs if not o.tombstone]
        == ['{"fk":"y"}-Y']
    )
    final = [
        (r.key, r.value) for r in cached.state_at(len(cached) - 1).frame().itertuples() if r.store == "result table"
    ]
    assert final == [("j", '{"fk":"y"}-Y')]


def test_an_fk_join_caches_only_its_result_store():
    with pytest.raises(ScenarioError, match="caching, send_old_values"):
        _fk([], materialized=True, caching=["left", "result"])


# -- properties ------------------------------------------------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.strategies import PARTITIONS, events as random_events  # noqa: E402


def _rows(trace, store: str, step: int) -> list:
    return sorted((r.task, str(r.key), r.value) for r in trace.state_at(step).frame().itertuples() if r.store == store)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    data=random_events(max_ts=60, max_size=30),
    partitions=PARTITIONS,
    before=st.integers(0, 10),
    after=st.integers(0, 10),
)
def test_the_single_store_self_join_equals_the_two_store_join_while_nothing_expires(data, partitions, before, after):
    """§1.9: the rewrite's outputs equal the unoptimized join's (retention here outlasts
    every timestamp, so the self-result boundary cannot be reached)."""
    for event in data:
        event["side"] = "left"
    base = {
        "join": "stream-stream",
        "variant": "inner",
        "self_join": True,
        "partitions": partitions,
        "window": {"before_ms": before, "after_ms": after, "grace_ms": 1000},
        "events": data,
    }
    one = run(Scenario.from_dict({**base, "optimize": True}))
    two = run(Scenario.from_dict(base))
    for a, b in zip(one.steps, two.steps):
        assert [(o.key, o.value, o.ts) for o in a.outputs] == [(o.key, o.value, o.ts) for o in b.outputs]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    data=random_events(max_ts=60, max_size=30),
    partitions=PARTITIONS,
    variant=st.sampled_from(["inner", "left", "outer"]),
)
def test_caches_flushed_after_every_record_keep_the_result_store_and_lose_only_redundant_outputs(
    data, partitions, variant
):
    """§3.6 under TopologyTestDriver's commit-per-record: the materialized result after every
    step holds the same values with and without caches (not always the same timestamps: a
    cache drops a source delete with no value before or after, which without a cache would
    re-emit an unchanged result with a newer timestamp); a caching result forwards at most one
    result per key per record, the newest."""
    base = {"join": "table-table", "variant": variant, "partitions": partitions, "materialized": True, "events": data}
    plain = run(Scenario.from_dict(base))
    cached = run(Scenario.from_dict({**base, "caching": True}))
    for step in range(len(plain)):
        assert _rows(cached, "result table", step) == _rows(plain, "result table", step)
        keys = [o.key for o in cached.steps[step].outputs]
        assert len(keys) == len(set(keys))
        for output in cached.steps[step].outputs:
            newest = [o for o in plain.steps[step].outputs if o.key == output.key][-1]
            assert (output.value, output.ts) == (newest.value, newest.ts)


def test_in_a_chain_a_cache_can_keep_a_stale_result():
    """Counter-example to the property above for chained joins: a right delete of a key the
    right table does not hold is dropped by a caching source (no value before or after), but
    without a cache it reaches join 2's right side, whose lookup of join 1 (``L0-null``) turns
    it into the tombstone that removes join 2's stale ``null-R0-R0``."""
    events = [("right", "k", "R0", 0), ("right", "k", None, 1), ("left", "k", "L0", 2), ("right", "k", None, 3)]
    base = {"then": [{"variant": "inner"}], "materialized": True}
    plain = run(_table("outer", events, **base))
    cached = run(_table("outer", events, **base, caching=True))
    assert _rows(plain, "result table", 2) == _rows(cached, "result table", 2) == [(0, "k", "null-R0-R0")]
    assert _rendered(plain.steps[3]) == "null@3"
    assert _rows(plain, "result table", 3) == []
    assert _rows(cached, "result table", 3) == [(0, "k", "null-R0-R0")]


def test_an_fk_delivery_whose_result_waits_in_the_cache_is_buffered():
    """A right update answers two subscribers. Deliveries are records of their task and count
    towards its commits: with ``commit_every: 2`` the task's seven steps (two left records, their
    subscriptions, the right record, two responses) commit at steps 1, 3 and 5, so the response
    to a (step 5) forwards its result at once and the response to b (step 6) waits in the cache."""
    events = [("left", "a", {"fk": "y"}, 1), ("left", "b", {"fk": "y"}, 2), ("right", "y", "Y", 3)]
    trace = run(_fk(events, materialized=True, caching=True, commit_every=2))
    first, last = trace.steps[5], trace.steps[6]
    assert [o.key for o in first.outputs] == ["a"]
    assert (last.fate, last.reason, last.outputs) == (Fate.BUFFERED, Reason.RECORD_CACHE, ())
    assert "waits in the result store's cache" in last.explain


def test_an_fk_task_commits_after_every_delivery_as_topology_test_driver_does():
    """``commit_every: 1`` (TopologyTestDriver): a task commits after every record it processes,
    a delivered subscription or response included, so each response's result leaves the cache
    at its own delivery; the left join of 3.8 whose row moves from x to y forwards both of its
    results (the old foreign key's null, then y's), as Kafka 3.8.1 does."""
    events = [("left", "a", {"fk": "y"}, 1), ("left", "b", {"fk": "y"}, 2), ("right", "y", "Y", 3)]
    trace = run(_fk(events, materialized=True, caching=True))
    responses = [step for step in trace.steps if step.message is not None and step.message.topic == "response"]
    assert [[o.key for o in step.outputs] for step in responses[-2:]] == [["a"], ["b"]]
    moved = [("right", "x", "X", 1), ("left", "a", {"fk": "x"}, 2), ("left", "a", {"fk": "y"}, 3)]
    for version, expected in (("3.8.1", ['{"fk":"y"}-null', '{"fk":"y"}-null']), ("3.9.1", ['{"fk":"y"}-null'])):
        trace = run(_fk(moved, variant="left", semantics=version, materialized=True, caching=True))
        assert [o.render() for o in trace.outputs][1:] == expected, version
