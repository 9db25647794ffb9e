"""The stepper, show_step and the predict widget on aggregate and WTable traces: aggregate
stores, windows as [start, end), segments, and consistency marks, by driving the widgets."""

from __future__ import annotations

import kjoin_viz
from kjoin.engine.aggregates import DAY_MS, WEEK_MS, run_spec
from kjoin_viz.labels import TONES, tones_for

from .test_aggregates import page_views_against_last_week
from .test_wtable import BEHIND_RETENTION

TABLE = {
    "join": "table-aggregate",
    "group_by": "page",
    "aggregate": {"sum": "n"},
    "events": [
        {"key": "o1", "value": {"page": "home", "n": 3}, "ts": 1},
        {"key": "o2", "value": {"page": "home", "n": 4}, "ts": 2},
        {"key": "o1", "value": {"page": "cart", "n": 3}, "ts": 3},  # o1 moves from home to cart
        {"key": "o2", "value": None, "ts": 4},  # a delete subtracts
    ],
}
WINDOWED = {
    "join": "window-aggregate",
    "window": {"size_ms": 10, "advance_ms": 5, "grace_ms": 2},
    "segments": 2,
    "retention_ms": 30,
    "events": [
        {"key": "p1", "value": 1, "ts": 5},
        {"key": "p1", "value": 1, "ts": 25},
        {"key": "p1", "value": 1, "ts": 1},  # late: [0, 10) closed at 10 + 2 <= 25
        {"key": "p1", "value": 1, "ts": 70},  # rolls the store: segment 0 is dropped whole
    ],
}


def test_show_step_shows_both_halves_of_a_table_update_and_the_aggregate_store():
    trace = run_spec(TABLE)
    text = repr(kjoin_viz.show_step(trace, 2))
    assert text.splitlines()[0].endswith("-> aggregated: subtracted from home, added to cart")
    assert "outputs: home=4@3, cart=3@3" in text
    assert "task 0: aggregate store" in text and "task 0: repartition topic" in text
    store = text.split("task 0: aggregate store")[1].split("\n\n")[0]
    assert "| key  | value | ts" in store
    assert "* | cart | 3     | 3" in store and "* | home | 4     | 3" in store
    html = kjoin_viz.show_step(trace, 3)._repr_html_()
    assert "aggregated: subtracted from home" in html and 'data-store="task 0: aggregate store"' in html


def test_stepper_walks_windows_late_drops_and_segments():
    trace = run_spec(WINDOWED)
    stepper = kjoin_viz.Stepper(trace)
    assert "aggregated into windows [0, 10), [5, 15)" in stepper.text()
    assert "hopping windows of 10 ms advancing by 5, grace 2 ms" in stepper.text()
    assert stepper.press("next drop") == 2
    text = stepper.text()
    assert "dropped: late (every window it belongs to has closed)" in text
    assert "dropped: late" in stepper.panes["header"].value
    assert stepper.press("next") == 3
    assert "segments of 30 ms" not in stepper.text()  # the segment arithmetic is one of Kafka's internals
    stepper.internals.value = True
    text = stepper.text()
    segments = text.split("window aggregate store segments")[1]
    assert "| segment | range    | records" in segments
    assert "segments of 30 ms" in segments and "storage up to 2x the retention" in segments
    assert "(deleted: 0)" in text  # segment 0 dropped whole when the store rolled
    window_rows = text.split("task 0: window aggregate store")[1].split("\n\n")[0]
    assert "[0, 10)" not in window_rows and "* | p1  | [65, 75) | 1" in window_rows
    assert "[65, 75)" in stepper.panes["state"].value


def test_consistency_marks_show_in_the_view_and_turn_false_when_the_retention_drops_a_window():
    kept = page_views_against_last_week(retention_ms=8 * DAY_MS)
    assert all("consistent: the result table equals" in repr(kjoin_viz.show_step(kept, i)) for i in range(8))
    short = page_views_against_last_week(retention_ms=None)
    assert "consistent: the result table equals" in repr(kjoin_viz.show_step(short, 2))
    assert "not (yet) consistent" in repr(kjoin_viz.show_step(short, 3))
    assert 'class="kjoin-consistency" style="color:#a66d00"' in kjoin_viz.show_step(short, 3)._repr_html_()
    # streams and aggregates carry no mark
    assert "consistent" not in repr(kjoin_viz.show_step(run_spec(WINDOWED), 0))


def test_predict_offers_the_aggregated_choice_only_for_aggregates_and_checks_it():
    trace = run_spec(TABLE)
    widget = kjoin_viz.Predict(trace, 2)
    assert [tone for _, tone in widget.fate.options] == [*TONES, "aggregated"]
    assert widget.check(fate="aggregated", outputs="home=4, cart=3").correct
    wrong = widget.check(fate="joined", outputs="home=4, cart=3")
    assert not wrong.correct and "updates aggregate(s)" in wrong.lines[0]
    assert not widget.check(fate="aggregated", outputs="cart=3").correct
    late = kjoin_viz.Predict(run_spec(WINDOWED), 2)
    assert late.check(fate="dropped", outputs="none").correct
    join = page_views_against_last_week(retention_ms=8 * DAY_MS)
    assert tones_for(join) == TONES
    assert kjoin_viz.Predict(join, 3).check(fate="joined").lines[0].startswith("Fate: right")


def test_a_declarative_page_view_join_renders_every_step():
    views = [{"key": "home", "value": "v", "ts": day * DAY_MS + 1000} for day in (0, 7)]
    trace = run_spec(
        {
            "join": "wtable-wtable",
            "self_join": True,
            "window_shift_ms": -WEEK_MS,
            "window": {"size_ms": DAY_MS},
            "retention_ms": 8 * DAY_MS,
            "events": views,
        }
    )
    for i in range(len(trace.steps)):
        assert f"[{7 * DAY_MS if i else 0}, " in kjoin_viz.show_step(trace, i)._repr_html_()


def test_predict_reads_windowed_outputs_whose_window_has_a_comma():
    from kjoin_viz.predict import parse_outputs

    assert parse_outputs("home@[0, 10)=2, home@[5, 15)=1") == ["home@[0, 10)=2", "home@[5, 15)=1"]
    assert parse_outputs("A-a, B-a; none") == ["A-a", "B-a", "none"]
    widget = kjoin_viz.Predict(run_spec(WINDOWED), 0)
    assert widget.check(fate="aggregated", outputs="p1@[0, 10)=1, p1@[5, 15)=1").correct
    assert widget.check(fate="aggregated", outputs="p1@[0,10)=1@5, p1@[5,15)=1@5").correct  # with timestamps
    assert not widget.check(fate="aggregated", outputs="p1@[0, 10)=1@5, p1@[5, 15)=1@6").correct
    assert not widget.check(fate="aggregated", outputs="p1@[0, 10)=1").correct


def test_the_stepper_says_a_lookup_found_nothing_because_the_window_is_behind_the_retention():
    """The right update at 12 looks up the left window [10, 15): the left store observed 35 and keeps 5 ms, so Kafka
    3.4+ hides the window though its segment still lives. The stepper names the reason in plain words."""
    trace = run_spec(BEHIND_RETENTION)
    stepper = kjoin_viz.Stepper(trace, step=2)
    text = stepper.text()
    assert "no match: the window looked up is behind its store's retention" in text
    assert "left window aggregate store still holds window [10, 15)" in text
    assert "observed 35 - retention 5 = 30: behind the retention" in text
    window_rows = text.split("task 0: left window aggregate store")[1].split("\n\n")[0]
    assert "[10, 15)" in window_rows  # still in the store: hidden from the read only
