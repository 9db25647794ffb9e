"""The stepper: its controls move the displayed step, and the view follows the trace."""

from __future__ import annotations

import re

import pytest

import kjoin
from kjoin_viz import StepView, Stepper, show_step
from kjoin_viz.store_view import store_tables
from kjoin.state import StoreId

SEED_004 = dict(
    left="1:null, 3:A, 5:B, 7:null, 9:C, 12:null, 15:D, 40:E, 60:F, 100:G",
    right="2:null, 4:a, 6:b, 8:null, 10:c, 11:null, 13:null, 14:d, 80:f",
    window={"before_ms": 15, "after_ms": 15, "grace_ms": 5},
    semantics="3.1",
)


@pytest.fixture(scope="module")
def trace():
    return kjoin.run(kjoin.Scenario.from_notation("stream-stream", "left", **SEED_004))


def _store_rows(html: str, title: str) -> str:
    """The store's table, without its inline styles (only the cells and their classes)."""
    html = re.sub(r""" style=("[^"]*"|'[^']*')""", "", html)
    start = html.index(f'data-store="{title}"')
    return html[start : html.index("</table>", start)]


def test_next_moves_the_slider_the_header_and_the_state(trace):
    stepper = Stepper(trace)
    assert stepper.step == 0 and "step 0 (1 of 19)" in stepper.panes["header"].value
    assert "(empty)" in _store_rows(stepper.panes["state"].value, "task 0: left window")
    assert stepper.press("next") == 1 and stepper.press("next") == 2
    assert stepper.slider.value == 2
    assert "left A@3 (key k)" in stepper.panes["header"].value
    left_window = _store_rows(stepper.panes["state"].value, "task 0: left window")
    assert "<tr class='changed'><td>k</td><td>3</td><td>A</td></tr>" in left_window
    assert "held until stream time passes 23" in stepper.panes["explain"].value


def test_moving_the_slider_shows_that_steps_outputs_and_log(trace):
    stepper = Stepper(trace)
    stepper.slider.value = 9  # right c@10 joins A, B and C
    outputs = stepper.panes["outputs"].value
    assert [f"{v}@10" in outputs for v in ("A-c", "B-c", "C-c")] == [True] * 3
    assert "log so far (9 outputs" in stepper.panes["log"].value
    held = stepper.panes["log"].value.split("still held, or dropped so far")[1]
    assert "A@3" not in held  # A joined a@4 at step 3: it is held no longer
    assert 'null@8 <b class="kjoin-fate kjoin-fate-dropped" style="color:#b22">dropped: null value</b>' in held
    assert "null@11" not in held  # a later drop is not in the log yet
    stepper.slider.value = 2  # A@3 waits in the outer-join buffer
    held = stepper.panes["log"].value.split("still held, or dropped so far")[1]
    assert (
        'A@3 <b class="kjoin-fate kjoin-fate-held" style="color:#a66d00">held until stream time passes 23</b>' in held
    )
    stepper.slider.value = 3
    assert "A-a@4" in stepper.panes["outputs"].value and "C-c" not in stepper.panes["outputs"].value


def test_first_previous_and_last(trace):
    stepper = Stepper(trace, step=5)
    assert stepper.press("previous") == 4
    assert stepper.press("last") == 18
    assert stepper.press("next") == 18  # stays on the last step
    assert stepper.press("first") == 0
    assert stepper.press("previous") == 0


def test_jumps_go_to_the_next_output_and_the_next_drop(trace):
    stepper = Stepper(trace)
    assert stepper.press("next output") == 3
    assert stepper.press("next drop") == 6
    assert stepper.press("next output") == 8
    stepper.step = 17
    assert "E-null@40" in stepper.panes["outputs"].value
    assert stepper.press("next drop") == 17  # no drop ahead: stays put


def test_next_tombstone_in_a_table_table_join():
    trace = kjoin.run(kjoin.Scenario.from_notation("table-table", "inner", left="1:A, 3:null", right="2:a"))
    stepper = Stepper(trace)
    assert stepper.press("next tombstone") == 2
    assert 'class="tombstone"' in stepper.panes["outputs"].value


def test_the_window_store_loses_expired_records_and_shows_them_deleted():
    """Kafka 3.4+ hides a record behind the retention (40 - 35 = 5: A@3 and B@5) at once: kjoin deletes it then."""
    trace = kjoin.run(kjoin.Scenario.from_notation("stream-stream", "left", **{**SEED_004, "semantics": "3.4"}))
    text = StepView(trace).text(15)
    assert "left window  (deleted: A@3, B@5)" in text  # named by what they held
    assert "left window  (deleted: (k, 3, 0), (k, 5, 1))" in StepView(trace).text(15, internals=True)  # store keys
    assert "* | 40 | left | k   | E     | 60" in text  # E enters the outer-join buffer, closes at 60
    assert "* | stream time | 40" in text  # the clock's one row a learner reads the join by
    assert "| outer-join buffer min time" not in text  # named in the line on what was left out ...
    assert "| outer-join buffer min time | 40" in StepView(trace).text(15, True)  # ... and shown with the internals


def test_before_3_4_the_window_store_keeps_expired_records_until_their_segment_drops(trace):
    """Seed 004's era, 3.1: A@3 and B@5 are behind the retention at E@40 but their segment [0, 60000) lives, so
    the store still shows them (and a lookup would find them); nothing is deleted."""
    text = StepView(trace).text(15)
    assert "deleted" not in text
    rows = text[text.index("task 0: left window") : text.index("task 0: right window")]
    assert "| k   | 3  | A" in rows and "| k   | 5  | B" in rows


def test_play_speed_sets_the_play_interval(trace):
    stepper = Stepper(trace)
    stepper.speed.value = "fast"
    assert stepper.play.interval == 250


def test_the_timeline_highlights_the_record_and_its_join_window(trace):
    stepper = Stepper(trace, step=3)
    svg = stepper.panes["timeline"].value
    assert "join window 0..19" in svg  # right a@4: left records in [max(4 - 15, 0), 4 + 15]
    assert 'r="7"' in svg and "a@4" in svg


def test_out_of_order_records_are_marked_late():
    trace = kjoin.run(
        kjoin.Scenario.from_notation(
            "stream-stream",
            "inner",
            left="10:A, 3:B",
            right="5:a",
            window={"before_ms": 5, "after_ms": 5, "grace_ms": 0},
        )
    )
    view = StepView(trace)
    assert [view.late[s.index] for s in trace.steps] == [
        s.record.ts < max(r.record.ts for r in trace.steps[: s.index + 1]) for s in trace.steps
    ]
    assert any(view.late)


def test_an_unknown_store_is_shown_generically():
    stores = {StoreId(0, "subscriptions"): {("k", 1): ("fk", "x")}, StoreId(0, "clock"): {"stream time": 4}}
    changes = [(StoreId(0, "subscriptions"), ("k", 1), True)]
    tables = store_tables(stores, changes)
    assert [t.name for t in tables] == ["clock", "subscriptions"]
    assert tables[1].header == ("entry", "0", "1") and tables[1].rows == (("(k, 1)", "fk", "x"),)
    assert tables[1].changed == {0}


def test_a_long_store_shows_its_first_rows_and_counts_the_rest():
    entries = {("k", ts, 0): f"v{ts}" for ts in range(500, 0, -1)}
    (table,) = store_tables({StoreId(0, "left window"): entries})
    assert table.rows[0] == ("k", "1", "v1") and table.hidden == 500 - len(table.rows)


def test_the_stepper_repr_is_stable_text(trace):
    assert repr(Stepper(trace, step=4)) == "Stepper(step 4 (5 of 19))"


def test_seek_of_a_long_trace_reads_only_that_step():
    from kjoin_viz.bench import long_scenario
    from kjoin_viz.stepper import time_seeks

    trace = kjoin.run(long_scenario(2_000))
    assert len(time_seeks(StepView(trace), [0, 999, 1999])) == 3


def test_a_table_store_shows_old_and_new_values():
    trace = kjoin.run(kjoin.Scenario.from_notation("table-table", "outer", left="1:A", right="2:a, 4:b"))
    stepper = Stepper(trace)
    stepper.press("last")
    right = _store_rows(stepper.panes["state"].value, "task 0: right table")
    assert "<tr class='changed'><td>k</td><td>b</td><td>4</td></tr>" in right  # old_value is Kafka's bookkeeping
    assert "task 0: right table: old_value" in stepper.panes["state"].value  # ... and the view says it left it out
    stepper.internals.value = True  # "show Kafka's internals"
    right = _store_rows(stepper.panes["state"].value, "task 0: right table")
    assert "<tr class='changed'><td>k</td><td>b</td><td>4</td><td>a</td></tr>" in right
    assert "old_value" not in stepper.panes["state"].value.split("</table>")[-1]
    assert "A-b@4" in stepper.panes["outputs"].value
    # a join that sends old values shows them without the internals: they are what it emits
    sent = kjoin.run(kjoin.Scenario.from_dict({**trace.scenario.to_dict(), "send_old_values": True}))
    assert "old_value</th>" in Stepper(sent, step=2).panes["state"].value


def test_rows_of_an_unknown_dataclass_render_by_field_with_enums_by_value():
    import dataclasses
    import enum

    class Instruction(enum.Enum):
        PROPAGATE = "propagate"

    @dataclasses.dataclass(frozen=True)
    class Subscription:
        instruction: Instruction
        hash: bytes

    (table,) = store_tables(
        {StoreId(1, "subscription store"): {("X", "k1"): Subscription(Instruction.PROPAGATE, b"ab")}}
    )
    assert (table.task, table.header, table.rows) == (
        1,
        ("entry", "instruction", "hash"),
        (("(X, k1)", "propagate", "ab"),),
    )


# -- the timeline: zoom, a stable axis, ticks, a legend ----------------------------------------------
def _view(svg: str) -> tuple[int, int]:
    low, high = re.search(r'data-view="(\d+)\.\.(\d+)"', svg).groups()
    return int(low), int(high)


def test_the_timeline_keeps_its_axis_while_the_records_stay_on_one_page(trace):
    from kjoin_viz.timeline import timeline_svg

    views = [_view(timeline_svg(trace, step)) for step in range(len(trace.steps))]
    assert views[:15] == [(0, 60)] * 15  # records at 1..15 ms: the same axis, zoomed on their windows
    assert views[15] == (0, 60) and views[16] == (30, 90) and views[18] == (60, 120)
    for step, (low, high) in enumerate(views):  # the record and its whole join window are in view
        ts = trace.steps[step].record.ts
        assert low <= max(ts - 15, 0) and ts + 15 <= high and high - low == 60


def test_the_timeline_has_round_ticks_and_a_legend(trace):
    from kjoin_viz.timeline import ticks, timeline_svg

    assert ticks(0, 60) == [0, 10, 20, 30, 40, 50, 60] and ticks(30, 90) == [30, 40, 50, 60, 70, 80, 90]
    assert ticks(0, 7) == [0, 1, 2, 3, 4, 5, 6, 7]  # never a fraction of a millisecond
    svg = timeline_svg(trace, 3)
    assert svg.count('class="kjoin-tick"') == 7
    legend = svg.split('class="kjoin-legend"')[1]
    for item in ("this step", "record", "null value", "out of order", "not yet read", "stream time", "join window"):
        assert f">{item}</text>" in legend
    table = kjoin.run(kjoin.Scenario.from_notation("table-table", "inner", left="1:A, 3:null", right="2:a"))
    assert ">join window</text>" not in timeline_svg(table, 1)  # no window, no band in the legend


def test_no_join_window_band_for_a_record_that_never_looks_up(trace):
    stepper = Stepper(trace, step=0)  # null@1: dropped before any lookup
    assert "kjoin-band" not in stepper.panes["timeline"].value
    stepper.step = 2  # A@3 looks up the right window [0, 18]
    assert "join window 0..18" in stepper.panes["timeline"].value
    old = kjoin.run(
        kjoin.Scenario.from_notation(
            "stream-stream", "left", semantics="0.10.0", **{k: v for k, v in SEED_004.items() if k != "semantics"}
        )
    )
    not_a_trigger = next(s.index for s in old.steps if s.reason is not None and s.reason.value == "not-a-trigger")
    assert "kjoin-band" not in Stepper(old, step=not_a_trigger).panes["timeline"].value


def test_the_timeline_marks_stream_time_after_the_step(trace):
    svg = Stepper(trace, step=15).panes["timeline"].value
    assert 'class="kjoin-stream-time"' in svg and ">stream time 40</text>" in svg


# -- jump buttons --------------------------------------------------------------------------------------
def test_buttons_that_would_not_move_are_disabled(trace):
    stepper = Stepper(trace, step=0)
    disabled = {name for name, button in stepper.buttons.items() if button.disabled}
    assert disabled == {"first", "previous", "next tombstone"}  # a stream-stream join emits no tombstone
    assert stepper.buttons["next drop"].tooltip == "next drop: step 1"
    stepper.step = 17
    disabled = {name for name, button in stepper.buttons.items() if button.disabled}
    assert (
        disabled == {"next tombstone", "next drop"}
        and stepper.buttons["next drop"].tooltip == "next drop: nothing ahead"
    )
    stepper.press("last")
    assert {name for name, button in stepper.buttons.items() if button.disabled} == {
        "next",
        "last",
        "next output",
        "next tombstone",
        "next drop",
    }


def test_the_step_counter_counts_from_1_to_the_number_of_steps():
    window = {"before_ms": 5, "after_ms": 5, "grace_ms": 0}
    five = kjoin.run(
        kjoin.Scenario.from_notation("stream-stream", "inner", left="1:A, 3:B, 5:C", right="2:a, 4:b", window=window)
    )
    stepper = Stepper(five)
    assert "step 0 (1 of 5)" in stepper.panes["header"].value
    stepper.step = 4
    assert "step 4 (5 of 5)" in stepper.panes["header"].value and repr(stepper) == "Stepper(step 4 (5 of 5))"
    assert repr(show_step(five, 2)).startswith("step 2 (3 of 5): ")


def test_the_timeline_gives_each_key_and_task_lanes_of_their_own():
    # 08's co-partitioning demo with the views dealt round-robin: alice's view a@3 sits in task 0, her clicks
    # in task 1. The join window is drawn on alice's left lane of task 0 only, and no other key's record
    # sits on it (it used to cover bob's and dave's clicks on the one shared lane).
    from kjoin_viz.partitioning import round_robin
    from kjoin_viz.timeline import timeline_svg

    window = {"before_ms": 10, "after_ms": 10, "grace_ms": 0}
    events = [("left", "alice", "A", 1), ("left", "bob", "B", 2), ("right", "alice", "a", 3)]
    events += [
        ("right", "bob", "b", 4),
        ("left", "dave", "D", 5),
        ("left", "alice", "A2", 8),
        ("left", "carol", "C", 40),
    ]
    scenario = kjoin.Scenario.from_dict(
        {
            "join": "stream-stream",
            "variant": "left",
            "window": window,
            "partitions": 2,
            "events": [{"side": s, "key": k, "value": v, "ts": t} for s, k, v, t in events],
        }
    )
    trace = kjoin.run(round_robin(scenario, "right"))
    step = next(s.index for s in trace.steps if s.record.value == "a")
    assert trace.steps[step].record.partition == 0
    svg = timeline_svg(trace, step)
    labels = re.findall(r'data-lane="([^"]+)"', svg)
    assert labels[:2] == ["t0 alice L", "t0 alice R"]  # the current record's key first
    assert {"t0 bob L", "t0 dave L", "t1 alice L", "t1 alice R"} <= set(labels) and len(labels) == len(set(labels))
    lane_y = {
        label: float(y)
        for y, label in re.findall(r'<text class="kjoin-lane" x="2" y="([\d.]+)" data-lane="([^"]+)"', svg)
    }
    band = re.search(r'class="kjoin-band" x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)"', svg)
    top, height = float(band.group(1)), float(band.group(2))
    assert top < lane_y["t0 alice L"] - 3 < top + height  # the band is on t0 alice's left lane ...
    for label, y in lane_y.items():
        if label != "t0 alice L":
            assert not top < y - 3 < top + height, label  # ... and on no other lane
    # each record on its own key's lane: alice's clicks of task 1 are not on task 0's lane
    circles = re.findall(r'cy="([\d.]+)" r="\d" [^>]*><title>step \d+: (left|right) (\w+)=(\w+)', svg)
    on_lane = {(side, key, value): float(cy) for cy, side, key, value in circles}
    assert on_lane[("left", "alice", "A")] == lane_y["t1 alice L"] - 3
    assert on_lane[("left", "bob", "B")] == lane_y["t0 bob L"] - 3
    # one key, one task: the two lanes of old, named left and right
    single = kjoin.run(kjoin.Scenario.from_notation("stream-stream", "left", **SEED_004))
    assert 'data-lanes="2"' in timeline_svg(single, 3) and "kjoin-lane" not in timeline_svg(single, 3)
