"""Consistency properties of seed 000, checked over random inputs (hypothesis).

* Table-table joins are eventually consistent: after *every* step, materializing the
  output changelog equals the SQL join of the materialized inputs.
* Stream-stream inner joins are consistent: the final multiset of results equals the SQL
  join over the window, whatever the arrival order (as long as nothing expires).
* Left/outer stream-stream joins are not: concrete counter-examples.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kjoin import Scenario, run
from tests.strategies import EVERY_ERA, PARTITIONS, events

SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def sql_join(variant: str, left: dict, right: dict) -> dict:
    if variant == "inner":
        keys = left.keys() & right.keys()
    elif variant == "left":
        keys = set(left)
    else:
        keys = left.keys() | right.keys()
    return {key: (left.get(key), right.get(key)) for key in keys}


@pytest.mark.parametrize("semantics", EVERY_ERA)
@pytest.mark.parametrize("variant", ["inner", "left", "outer"])
@SETTINGS
@given(inputs=events(), partitions=PARTITIONS)
def test_table_table_changelog_materializes_to_the_sql_join_after_every_step(variant, semantics, inputs, partitions):
    scenario = Scenario.from_dict({"join": "table-table", "variant": variant, "semantics": semantics, "partitions": partitions, "events": inputs})
    trace = run(scenario, joiner=lambda left, right: (left, right))
    tables = {"left": {}, "right": {}}
    result: dict = {}
    for step in trace:
        record = step.record
        if record.key is not None:
            if record.value is None:
                tables[record.side.value].pop(record.key, None)
            else:
                tables[record.side.value][record.key] = record.value
        for output in step.outputs:
            if output.tombstone:
                result.pop(output.key, None)
            else:
                result[output.key] = output.value
        assert result == sql_join(variant, tables["left"], tables["right"]), f"after step {step.index}: {step.explain}"


@pytest.mark.parametrize("semantics", EVERY_ERA)
@SETTINGS
@given(inputs=events(max_ts=80, null_values=True), partitions=PARTITIONS, before=st.integers(0, 12), after=st.integers(0, 12))
def test_stream_stream_inner_join_results_equal_the_sql_join_over_the_window(semantics, inputs, partitions, before, after):
    """No record expires here (grace exceeds every timestamp), so arrival order does not matter.
    Before KIP-77 a null value triggered lookups (``null-a``): that era is checked without
    null values, and its counter-example is pinned below."""
    if semantics == "0.10.0":
        inputs = [event for event in inputs if event["value"] is not None]
    window = {"before_ms": before, "after_ms": after, "grace_ms": 1000}
    scenario = Scenario.from_dict({"join": "stream-stream", "variant": "inner", "semantics": semantics, "window": window, "partitions": partitions, "events": inputs})
    trace = run(scenario, joiner=lambda left, right: (left, right))
    actual = Counter((output.key, output.value) for output in trace.outputs)
    left = [e for e in inputs if e["side"] == "left" and e["key"] is not None and e["value"] is not None]
    right = [e for e in inputs if e["side"] == "right" and e["key"] is not None and e["value"] is not None]
    expected = Counter(
        (l["key"], (l["value"], r["value"]))
        for l in left
        for r in right
        if l["key"] == r["key"] and l["ts"] - before <= r["ts"] <= l["ts"] + after
    )
    assert actual == expected


def _window_join(variant, semantics, events, window):
    scenario = Scenario.from_dict({"join": "stream-stream", "variant": variant, "semantics": semantics, "window": window, "events": events})
    return sorted(output.render() for output in run(scenario).outputs)


def test_left_join_with_eager_results_is_not_the_sql_left_join():
    """0.10.2 to 3.0: A arrives first and is emitted with null, then a arrives and A-a is
    emitted as well. SQL's left join has only A-a: the stream result cannot be retracted."""
    events = [{"side": "left", "key": "k", "value": "A", "ts": 1}, {"side": "right", "key": "k", "value": "a", "ts": 2}]
    window = {"before_ms": 10, "after_ms": 10, "grace_ms": 0}
    assert _window_join("left", "2.8", events, window) == ["A-a", "A-null"]
    assert _window_join("outer", "2.8", events, window) == ["A-a", "A-null"]


def test_left_join_holding_results_is_still_not_the_sql_left_join_when_a_partner_is_late():
    """3.1+: A@0 waits; B@50 (another key, same task) moves stream time past A's window
    close, so A-null is emitted. a@5 then arrives late: in SQL it pairs with A, but A is no
    longer visible in the left store (retention 20 before 50), so the stream never says A-a."""
    events = [
        {"side": "left", "key": "k", "value": "A", "ts": 0},
        {"side": "left", "key": "other", "value": "B", "ts": 50},
        {"side": "right", "key": "k", "value": "a", "ts": 5},
    ]
    window = {"before_ms": 10, "after_ms": 10, "grace_ms": 0}
    assert _window_join("left", "3.1", events, window) == ["A-null"]
    sql_left_join = ["A-a", "B-null"]
    assert _window_join("left", "3.1", events, window) != sql_left_join


def test_old_inner_join_with_null_value_triggers_is_not_the_sql_join():
    """0.10.0: a null value looks up the other side and the joiner is called (``null-a``);
    no SQL join over non-null records produces that row (KIP-77 removed it)."""
    events = [{"side": "right", "key": "k", "value": "a", "ts": 1}, {"side": "left", "key": "k", "value": None, "ts": 2}]
    window = {"before_ms": 10, "after_ms": 10, "grace_ms": 0}
    assert _window_join("inner", "0.10.0", events, window) == ["null-a"]
    assert _window_join("inner", "0.10.2", events, window) == []
