"""The words for a record's fate, the static step view, and the predict widget.

Every assertion reads what the code returns or what a widget holds (its values, its HTML),
computed from traces the engine produced."""

from __future__ import annotations

import re

import base64

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import kjoin
import kjoin_viz
from kjoin_viz import Predict, Stepper, fate_label, show_step, trainer_mode
from kjoin_viz.labels import TONES
from kjoin_viz.predict import STILL_WAITING, _compact, leave_step, parse_outputs
from kjoin_viz.step_view import svg_image
from kjoin.joins.context import default_joiner
from kjoin.records import render_value

SEED_004 = dict(
    left="1:null, 3:A, 5:B, 7:null, 9:C, 12:null, 15:D, 40:E, 60:F, 100:G",
    right="2:null, 4:a, 6:b, 8:null, 10:c, 11:null, 13:null, 14:d, 80:f",
    window={"before_ms": 15, "after_ms": 15, "grace_ms": 5},
)


@pytest.fixture(scope="module")
def trace():
    return kjoin.run(kjoin.Scenario.from_notation("stream-stream", "left", semantics="3.1", **SEED_004))


def labels(trace) -> list[str]:
    return [str(fate_label(s)) for s in trace.steps]


# -- fate labels ---------------------------------------------------------------------------------
def test_a_record_held_in_the_outer_join_buffer_says_until_when(trace):
    assert labels(trace)[2] == "held until stream time passes 23"
    assert fate_label(trace.steps[2]).tone == "held"
    assert labels(trace)[15] == "held until stream time passes 60"


def test_null_values_are_dropped_and_only_drops_are_lost(trace):
    assert labels(trace)[0] == "dropped: null value" and fate_label(trace.steps[0]).lost
    assert not fate_label(trace.steps[3]).lost


def test_an_eager_null_result_is_not_called_joined():
    eager = kjoin.run(kjoin.Scenario.from_notation("stream-stream", "left", semantics="0.10.2", **SEED_004))
    assert labels(eager)[2] == "emitted eagerly with null"  # A@3 -> A-null at once
    assert fate_label(eager.steps[2]).tone == "null-result"
    assert labels(eager)[3] == "joined: 1 result"  # a@4 -> A-a


def test_a_record_after_its_window_closed_is_emitted_with_null_at_once():
    late = kjoin.run(
        kjoin.Scenario.from_notation(
            "stream-stream",
            "left",
            left="50:X, 3:A",
            right="40:x",
            window={"before_ms": 5, "after_ms": 5, "grace_ms": 0},
            semantics="3.1",
        )
    )
    assert labels(late)[2] == "emitted with null at once: its window had already closed"


def test_a_table_tombstone_and_a_left_join_without_partner():
    tt = kjoin.run(kjoin.Scenario.from_notation("table-table", "left", left="1:A, 3:null", right="2:a"))
    assert labels(tt) == [
        "emitted with null: no partner, the joiner got null",
        "joined: 1 result",
        "tombstone: the join result is deleted",
    ]
    assert fate_label(tt.steps[2]).tone == "tombstone"


def test_a_table_update_in_a_stream_table_join_is_stored():
    st = kjoin.run(kjoin.Scenario.from_notation("stream-table", "inner", left="3:A", right="1:a"))
    table_update = next(s for s in st.steps if s.record.side.value == "right")
    assert str(fate_label(table_update)) == "stored: a table update triggers no output"


def test_a_foreign_key_tombstone_is_a_tombstone_not_joined():
    events = [
        {"side": "right", "key": "Y", "value": "bar", "ts": 1},
        {"side": "left", "key": "A", "value": {"fk": "Y"}, "ts": 2},
        {"side": "right", "key": "Y", "value": None, "ts": 3},
    ]
    fk = kjoin.run(kjoin.Scenario.from_dict({"join": "fk", "variant": "inner", "foreign_key": "fk", "events": events}))
    tombstones = [s for s in fk.steps if any(o.tombstone for o in s.outputs)]
    assert tombstones and all(str(fate_label(s)) == "tombstone: the join result is deleted" for s in tombstones)


def test_an_out_of_order_version_is_not_lost_and_not_red():
    versioned = {"versioned": True, "history_retention_ms": 1000}
    events = [
        {"side": "left", "key": "k", "value": "a0", "ts": 0},
        {"side": "right", "key": "k", "value": "b0", "ts": 0},
        {"side": "left", "key": "k", "value": "a4", "ts": 4},
        {"side": "left", "key": "k", "value": "a1", "ts": 1},
    ]
    trace = kjoin.run(
        kjoin.Scenario.from_dict(
            {"join": "table-table", "variant": "inner", "left": versioned, "right": versioned, "events": events}
        )
    )
    label = fate_label(trace.steps[3])
    assert str(label) == "not lost: stored as an older version, no result" and not label.lost
    assert "#b22" not in label.html()  # red is for records that are lost
    assert kjoin_viz.StepView(trace).drop_steps == []  # "next drop" does not stop here


def test_a_step_that_releases_earlier_records_does_not_credit_them_to_its_own_record(trace):
    header = Stepper(trace, step=17).panes["header"].value
    assert "no match: no output" in header and "also emitted for earlier records: E-null@40" in header


def test_a_record_cache_holds_until_the_commit():
    cached = kjoin.run(
        kjoin.Scenario.from_dict(
            {
                "join": "table-table",
                "variant": "inner",
                "caching": True,
                "commit_every": 2,
                "events": [
                    {"side": "left", "key": "k", "value": "A", "ts": 1},
                    {"side": "right", "key": "k", "value": "a", "ts": 2},
                ],
            }
        )
    )
    assert labels(cached)[0] == "held in the record cache until the next commit"
    assert leave_step(cached, 0) == 1


def test_the_grace_buffer_label_names_the_buffer_time():
    grace = kjoin.run(
        kjoin.Scenario.from_dict(
            {
                "join": "stream-table",
                "variant": "inner",
                "right": {"versioned": True, "history_retention_ms": 20},
                "grace_ms": 5,
                "events": [
                    {"side": "right", "key": "k", "value": "a", "ts": 8},
                    {"side": "left", "key": "k", "value": "A", "ts": 10},
                ],
            }
        )
    )
    assert labels(grace)[1] == "held in the grace buffer until buffer time 15"
    assert leave_step(grace, 1) == STILL_WAITING


# -- show_step --------------------------------------------------------------------------------------
def test_show_step_is_html_and_text_of_that_step_only(trace):
    shown = show_step(trace, 15)
    page = shown._repr_html_()
    assert 'data-step="15"' in page and "held until stream time passes 60" in page
    timeline = base64.b64decode(
        page.split('class="kjoin-timeline-image"')[1].split("base64,")[1].split('"')[0]
    ).decode()
    assert 'data-view="0..60"' in timeline and "join window 25..55" in timeline  # zoomed on E@40 with its window
    assert 'data-store="task 0: outer-join buffer"' in page and "background:#fff3b0" in page  # the row E wrote
    assert repr(shown).splitlines()[0] == "step 15 (16 of 19): left E@40 (key k) -> held until stream time passes 60"
    assert repr(shown) + "\n" == Stepper(trace, step=15).text()
    assert show_step(trace, -1).step == 18
    with pytest.raises(IndexError):
        show_step(trace, 19)


def test_show_step_and_the_stepper_share_one_renderer(trace):
    stepper = Stepper(trace, step=9)
    page = show_step(trace, 9)._repr_html_()
    for name in ("header", "explain", "outputs", "state"):
        assert stepper.panes[name].value in page
    assert (
        svg_image(stepper.panes["timeline"].value) in page
    )  # the same SVG, as an image that survives a stored notebook


# -- the predict widget --------------------------------------------------------------------------------
def test_parse_outputs():
    assert parse_outputs(" A-a,B-a ") == ["A-a", "B-a"]
    assert parse_outputs("none") == parse_outputs("") == parse_outputs(" - ") == []


# What kjoin can print as one output: the joiner's ``left-right`` over any value (a string with
# commas, brackets or quotes of its own, JSON objects and lists, numbers, null), a tombstone
# ``null``, an aggregate ``key@[start, end)=n``; optionally with ``@ts``.
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-99, 999) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
_PRINTED = st.one_of(
    st.builds(default_joiner, _JSON, _JSON),
    st.just("null"),
    st.builds(lambda k, s, n: f"{render_value(k)}@[{s}, {s + 10})={n}", _JSON, st.integers(0, 99), st.integers(0, 9)),
).filter(lambda item: item.strip() == item and item.lower() not in ("none", "-", "(none)", "nothing"))
_STAMPED = st.tuples(_PRINTED, st.none() | st.integers(0, 999)).map(
    lambda p: p[0] + ("" if p[1] is None else f"@{p[1]}")
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_STAMPED, max_size=4), st.sampled_from([", ", ",", "; "]))
def test_parse_outputs_reads_back_any_outputs_kjoin_prints(items, separator):
    text = separator.join(items)
    assert parse_outputs(text, known=items) == items
    # an answer with some of them (in another order) is read as those, where that is not ambiguous
    some = items[::-2]
    assume(all(_compact(a) != _compact(b) + "," + _compact(c) for a in items for b in items for c in items))
    assert parse_outputs(separator.join(some), known=items) == some


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.builds(default_joiner, _JSON.filter(lambda v: not isinstance(v, str)), st.text("ab-", max_size=3)),
        max_size=4,
    )
)
def test_parse_outputs_splits_json_values_without_being_told_them(items):
    # a JSON value's commas, brackets and quoted commas are inside its brackets: no hint needed
    assert parse_outputs(", ".join(items)) == [item.strip() for item in items if item.strip()]


def test_exercise_4_of_notebook_05_takes_its_json_answer():
    race = kjoin.Scenario.from_dict(
        {
            "join": "fk",
            "variant": "inner",
            "foreign_key": "fk",
            "delivery": "explicit",
            "events": [
                {"side": "right", "key": "Y", "value": "bar", "ts": 1},
                {"side": "left", "key": "A", "value": {"fk": "Y", "v": 1}, "ts": 2},
                {"side": "left", "key": "A", "value": {"fk": "Y", "v": 2}, "ts": 3},
                {"deliver": "subscription"},
                {"deliver": "response"},
                {"deliver": "all"},
            ],
        }
    )
    widget = Predict(kjoin.run(race), 6)
    fate = fate_label(widget.trace.steps[6]).tone
    verdict = widget.check(fate=fate, outputs='{"fk":"Y","v":2}-bar')
    assert verdict.correct, verdict.text
    assert widget.check(fate=fate, outputs='{"fk": "Y", "v": 2}-bar@3').correct  # spaces and a timestamp
    assert not widget.check(fate=fate, outputs='{"fk":"Y","v":1}-bar').correct
    # the views show the value as a value, {fk: Y, v: 2}-bar: written so, the answer is right too
    assert "{fk: Y, v: 2}-bar" in widget.check(fate=fate, outputs="none").text
    assert widget.check(fate=fate, outputs="{fk: Y, v: 2}-bar").correct
    assert not widget.check(fate=fate, outputs="{fk: Y, v: 1}-bar").correct


def test_values_are_shown_as_values_not_json_strings():
    from kjoin_viz.values import plain, show_output, show_value

    assert show_value({"customer": "C2", "v": 2, "note": "a b", "n": None, "tags": ["x", 1]}) == (
        '{customer: C2, n: null, note: "a b", tags: [x, 1], v: 2}'
    )
    assert show_value({"v": "2", "w": "null"}) == '{v: "2", w: "null"}'  # a string that reads as something else
    assert show_value("a b") == "a b" and show_value(None) == "null" and show_value(3) == "3"
    race = kjoin.Scenario.from_dict(
        {
            "join": "fk",
            "variant": "left",
            "foreign_key": "customer",
            "events": [
                {"side": "right", "key": "C1", "value": {"name": "Alice"}, "ts": 1},
                {"side": "left", "key": "o1", "value": {"customer": "C1"}, "ts": 2},
                {"side": "left", "key": "o2", "value": {"customer": "C2"}, "ts": 3},
            ],
        }
    )
    outputs = [o for s in kjoin.run(race).steps for o in s.outputs]
    assert [o.render() for o in outputs] == ['{"customer":"C1"}-{"name":"Alice"}', '{"customer":"C2"}-null']
    assert [show_output(o) for o in outputs] == ["{customer: C1}-{name: Alice}", "{customer: C2}-null"]
    assert all(plain(o.render()) == plain(show_output(o)) for o in outputs)
    trace = kjoin.run(race)
    last = show_step(trace, len(trace.steps) - 1)  # o2's response delivered: {customer: C2}-null
    assert "{customer: C2}-null" in last._repr_html_() and "&quot;customer&quot;" not in last._repr_html_()
    assert "the left row is {customer: C2}" in str(last)  # the explanation, and the store tables below
    assert "| {customer: C2} |" in str(last).replace("  ", " ") or "{customer: C2} " in str(last)


JSON_OBJECT = re.compile(r'\{\s*"[^"]*"\s*:|\{&quot;[^&]*&quot;:')


def test_no_view_of_a_foreign_key_join_shows_its_values_as_json():
    """A foreign-key join's values (objects on both sides) as values in every view a learner reads: each
    step's view (its explanation, its messages in flight with their titles, its stores, with and without Kafka's
    internals), the steps and messages tables, and the feedback of every exercise, hint and answer with its why."""
    from kjoin_viz.course import messages_table, steps_table
    from kjoin_viz.step_view import view_of

    trace = kjoin.run(
        kjoin.Scenario.from_dict(
            {
                "join": "fk",
                "variant": "left",
                "foreign_key": "customer",
                "events": [
                    {"side": "right", "key": "C9", "value": {"name": "Ann", "tier": 1}, "ts": 1},
                    {"side": "left", "key": "o9", "value": {"customer": "C9", "n": 2}, "ts": 2},
                    {"side": "left", "key": "o9", "value": {"customer": "C8", "n": 2}, "ts": 3},
                    {"side": "right", "key": "C9", "value": None, "ts": 4},
                ],
            }
        )
    )
    assert any(JSON_OBJECT.search(s.explain) for s in trace.steps)  # the engine's own texts are kjoin's notation
    view, seen = view_of(trace), []
    for i, step in enumerate(trace.steps):
        seen += [view.text(i, internals) + view.html(i, internals) for internals in (False, True)]
        widget = Predict(trace, i)
        seen.append(" ".join(widget.check(fate="joined", outputs="x@1").hints))
        widget._show_answer()
        seen.append(widget.feedback.value)
        if step.message is not None:
            seen.append(repr(messages_table(trace, i)))
    seen.append(repr(steps_table(trace)))
    found = [m.group(0) for text in seen for m in [JSON_OBJECT.search(text)] if m]
    assert not found, found
    assert "m2 response: o9 ← {name: Ann, tier: 1}" in repr(steps_table(trace))


def test_predict_shows_the_input_so_far_and_the_state_before(trace):
    widget = Predict(trace, 3)
    context = widget.children[1].value
    assert "the input so far" in context and "the state before step 3" in context
    assert "<b>?</b>" in context and ">100<" not in context  # no record after step 3 is shown
    assert 'data-store="task 0: outer-join buffer"' in context  # A@3 waits there before a@4 arrives
    assert repr(widget) == "Predict: " + widget.prompt and "a@4" in widget.prompt
    assert Predict(trace, 0).children[1].value.count("every store is empty") == 1


def test_predict_checks_fate_and_outputs_in_plain_words_and_opens_the_stepper(trace):
    widget = Predict(trace, 9)  # c@10 joins A, B and C
    verdict = widget.check(fate="joined", outputs="A-c, B-c, C-c")
    assert verdict.correct and verdict.lines[0].startswith("Fate: right")
    assert isinstance(widget.stepper, Stepper) and widget.stepper.step == 9
    assert "Outputs: right (A-c@10, B-c@10, C-c@10)." in widget.feedback.value
    wrong = widget.check(fate="held", outputs="A-c, C-c, D-c")
    assert not wrong.correct and wrong.lines[0].startswith("Fate: not quite")
    assert "Missing: B-c." in wrong.lines[1] and "Not emitted at this step: D-c." in wrong.lines[1]
    assert widget.check(fate="joined", outputs="C-c, B-c, A-c").correct  # the order is not asked
    asked = Predict(trace, 9, order=True)
    order = asked.check(fate="joined", outputs="C-c, B-c, A-c")
    assert not order.correct and "in another order" in order.lines[1]
    assert "in the order the step emits them" in asked.children[4].value
    assert "in any order" in widget.children[4].value
    assert widget.check(fate="joined", outputs="A-c@10, B-c@10, C-c@10").correct
    assert not widget.check(fate="joined", outputs="A-c@9, B-c@10, C-c@10").correct


def test_predict_no_output_and_released_outputs(trace):
    widget = Predict(trace, 15)
    assert widget.check(fate="held", outputs="none").correct
    assert not widget.check(fate="dropped", outputs="").correct
    assert Predict(trace, 17).check(fate="no-match", outputs="E-null").correct  # E leaves as f@80 arrives


def test_predict_release_asks_when_a_held_record_leaves(trace):
    widget = Predict(trace, 15, ask="release")
    # at once (a real choice even for the last record), every later step, and still waiting at the end
    assert [value for _, value in widget.release.options][:3] == [15, 16, 17] and widget.release.options[-1][
        1
    ] == STILL_WAITING
    assert not widget.check(leaves=15).correct
    assert not widget.check(leaves=16).correct
    verdict = widget.check(leaves=17)
    assert verdict.correct and "stream time 80" in verdict.text and "E-null@40" in verdict.text
    assert widget.stepper.step == 17
    assert Predict(trace, 18, ask="release").check(leaves=STILL_WAITING).correct  # G: a quiet topic never flushes
    assert Predict(trace, 2, ask="release").leaves == 3  # A@3 leaves the buffer when a@4 joins it
    with pytest.raises(ValueError, match="holds nothing back"):
        Predict(trace, 3, ask="release")
    with pytest.raises(ValueError, match="ask must be one of"):
        Predict(trace, 3, ask="when")


def test_trainer_mode_shows_the_solution_button_on_live_widgets(trace):
    widget = Predict(trace, 5)
    try:
        trainer_mode(False)
        assert widget.solution_button.layout.display == "none"
        assert trainer_mode(True) is True
        assert widget.solution_button.layout.display is None
        widget.solution_button.click()
        assert "Solution: it joins" in widget.feedback.value and "A-b@6, B-b@6" in widget.feedback.value
        assert widget.stepper.step == 5
    finally:
        trainer_mode(False)
    assert widget.solution_button.layout.display == "none"


def test_every_choice_is_a_tone(trace):
    tones = {fate_label(s).tone for s in trace.steps}
    assert tones <= set(TONES)
    assert [value for _, value in Predict(trace, 1).fate.options] == list(TONES)


def test_a_long_trace_shows_only_the_records_near_the_question():
    from kjoin_viz.bench import long_scenario
    from kjoin_viz.predict import CONTEXT_ROWS

    trace = kjoin.run(long_scenario(200))
    context = Predict(trace, 150).children[1].value
    assert f"steps 0 to {150 - CONTEXT_ROWS - 1} not shown" in context
    assert f'<td style="border:1px solid #ccc;padding:1px 6px;text-align:left">{150 - CONTEXT_ROWS}</td>' in context
    assert f">{150 - CONTEXT_ROWS - 1}</td>" not in context and ">151</td>" not in context


def test_show_step_of_a_foreign_key_join_draws_its_messages():
    events = [
        {"side": "right", "key": "Y", "value": "bar", "ts": 1},
        {"side": "left", "key": "A", "value": {"fk": "Y"}, "ts": 2},
        {"deliver": "subscription"},
    ]
    fk = kjoin.run(
        kjoin.Scenario.from_dict(
            {"join": "fk", "variant": "inner", "foreign_key": "fk", "events": events, "delivery": "explicit"}
        )
    )
    page = show_step(fk, 2)._repr_html_()
    svg = base64.b64decode(page.split('class="kjoin-flight-image"')[1].split("base64,")[1].split('"')[0]).decode()
    assert 'class="kjoin-message kjoin-delivered" data-message="m1"' in svg and "kjoin-timeline" not in page
    assert "delivered subscription m1" in repr(show_step(fk, 2)).splitlines()[0]


# -- results with a null partner are never "joined" ------------------------------------------------
ALICE_BOB = [
    ("left", "alice", "A1", 1),
    ("right", "alice", "x", 2),
    ("left", "alice", "A2", 3),
    ("left", "bob", "B1", 4),
    ("right", "alice", "y", 5),
    ("right", "bob", "z", 6),
    ("left", "alice", None, 7),
    ("right", "bob", None, 8),
    ("left", "carol", "C1", 9),
]


def _table_table(variant: str, events=ALICE_BOB, **options):
    records = [{"side": side, "key": key, "value": value, "ts": ts} for side, key, value, ts in events]
    return kjoin.run(
        kjoin.Scenario.from_dict({"join": "table-table", "variant": variant, "events": records, **options})
    )


def test_a_left_join_result_after_the_right_row_is_deleted_is_emitted_with_null():
    trace = _table_table("left", materialized=True)
    assert [o.render() for o in trace.steps[7].outputs] == ["B1-null"]
    label = fate_label(trace.steps[7])
    assert str(label) == "emitted with null: a delete on the right, the joiner got null for it"
    assert label.tone == "null-result"


def test_an_outer_join_result_after_the_left_row_is_deleted_is_emitted_with_null():
    events = [("left", "k", "A", 1), ("right", "k", "a", 2), ("left", "k", None, 3)]
    trace = _table_table("outer", events)
    assert [o.render() for o in trace.steps[2].outputs] == ["null-a"]
    assert str(fate_label(trace.steps[2])) == "emitted with null: a delete on the left, the joiner got null for it"


def _variant_traces() -> dict:
    wiki = {
        "left": "1:null, 3:A, 5:B, 7:null, 9:C, 12:null, 15:D",
        "right": "2:null, 4:a, 6:b, 8:null, 10:c, 11:null, 13:null, 14:d",
    }
    traces = {}
    for join, variants in (("stream-table", ("inner", "left")), ("table-table", ("inner", "left", "outer"))):
        for variant in variants:
            traces[f"{join} {variant}"] = kjoin.run(kjoin.Scenario.from_notation(join, variant, **wiki))
    for variant in ("inner", "left", "outer"):
        traces[f"stream-stream {variant}"] = kjoin.run(
            kjoin.Scenario.from_notation("stream-stream", variant, semantics="3.1", **SEED_004)
        )
        traces[f"table-table {variant} cached"] = _table_table(variant, materialized=True, caching=True, commit_every=3)
        versioned = {"versioned": True, "history_retention_ms": 100}
        traces[f"table-table {variant} versioned"] = _table_table(variant, left=versioned, right=versioned)
    fk_events = [
        {"side": "right", "key": "Y", "value": "bar", "ts": 1},
        {"side": "left", "key": "A", "value": {"fk": "Y"}, "ts": 2},
        {"side": "right", "key": "Y", "value": None, "ts": 3},
        {"side": "left", "key": "A", "value": {"fk": "Z"}, "ts": 4},
    ]
    for variant in ("inner", "left"):
        traces[f"fk {variant}"] = kjoin.run(
            kjoin.Scenario.from_dict({"join": "fk", "variant": variant, "foreign_key": "fk", "events": fk_events})
        )
    return traces


def test_no_output_with_a_null_partner_is_labelled_joined_in_any_variant():
    from kjoin_viz.labels import own_outputs

    wrong = []
    nulls = 0
    for name, trace in _variant_traces().items():
        for step in trace.steps:
            with_null = [o for o in own_outputs(step) if not o.tombstone and (o.left is None or o.right is None)]
            nulls += bool(with_null)
            if with_null and fate_label(step).tone != "null-result":
                wrong.append((name, step.index, str(fate_label(step))))
    assert nulls >= 10  # the inputs do produce null results
    assert wrong == []


def test_a_cache_flush_that_emits_an_earlier_records_result_says_so():
    cached = _table_table("left", materialized=True, caching=True, commit_every=3)
    step = cached.steps[2]  # A2@3 commits: the result cache forwards the result of x@2 (step 1)
    assert step.reason.value == "replaced-in-cache"
    assert [(o.render(), o.origin_step) for o in step.outputs] == [("A2-x", 1)]
    label = fate_label(step)
    assert str(label) == "stored: its result was replaced in the result cache by an earlier record's"
    assert "no result to delete" not in str(label)
    header = Stepper(cached, step=2).panes["header"].value
    assert "replaced in the result cache" in header and "also emitted for earlier records: A2-x@3" in header


def test_check_with_nothing_chosen_asks_for_an_answer_and_opens_no_stepper(trace):
    release = Predict(trace, 15, ask="release")
    verdict = release.check()
    assert not verdict.correct and verdict.lines == ("Choose an answer first, then check.",)
    assert release.stepper is None and release.stepper_box.children == ()
    assert "17" not in release.feedback.value and "Choose an answer first" in release.feedback.value
    assert release.check(leaves=17).correct and release.stepper.step == 17  # answering still works
    fate = Predict(trace, 15)
    assert fate.check(outputs="none").lines == ("Choose an answer first, then check.",)
    assert fate.stepper is None and "held" not in fate.feedback.value  # the answer is not given away


# -- the fate choices and the outputs never contradict each other ---------------------------------
def test_the_right_fate_choice_never_says_no_output_where_the_step_emits(trace):
    practice = kjoin.run(
        kjoin.Scenario.from_notation(
            "stream-stream",
            "outer",
            left="2:P, 9:Q, 30:R, 60:T",
            right="6:p, 27:r, 45:s",
            window={"before_ms": 5, "after_ms": 5, "grace_ms": 2},
        )
    )
    # 01's exercise 3: T@60 is held, and its step emits s's null result
    widget = Predict(practice, 6)
    assert widget.check(fate="held", outputs="null-s@45").correct
    assert "no result of its own" in dict((v, t) for t, v in widget.fate.options)["held"]
    for t in (trace, practice):
        for step in t.steps:
            choice = TONES[fate_label(step).tone]
            if step.outputs:
                assert "no output" not in choice, (step.index, choice)


# -- feedback in stages: a hint aimed at the misconception, then the answer on request --------------
def test_a_wrong_answer_gets_a_hint_first_and_the_answer_and_stepper_only_on_request(trace):
    widget = Predict(trace, 17)  # f@80: no partner; its step releases E-null@40
    verdict = widget.check(fate="no-match", outputs="none")
    assert not verdict.correct
    shown = widget.feedback.value
    assert "Not yet." in shown and "What the record does: right." in shown
    assert "releases for an earlier record" in shown and "stream time is 80" in shown
    assert "E-null" not in shown and "Why:" not in shown and "Fate:" not in shown  # nothing given away
    assert widget.stepper is None and widget.answer_button.layout.display is None
    widget.answer_button.click()
    assert "Outputs: not quite" in widget.feedback.value and "Why:" in widget.feedback.value
    assert widget.stepper.step == 17 and widget.answer_button.layout.display == "none"
    right = Predict(trace, 17)
    assert right.check(fate="no-match", outputs="E-null").correct
    assert right.stepper.step == 17 and "Why:" in right.feedback.value  # a right answer: everything at once


def test_hints_address_the_misconception_the_answer_shows(trace):
    # an output timestamp: the larger of the two records'
    hints = Predict(trace, 9).check(fate="joined", outputs="A-c@3, B-c@5, C-c@9").hints
    assert any("larger of its two records' timestamps" in h for h in hints)
    assert not any("window" in h for h in hints)
    # a result with null too early: held until the window closes
    verdict = Predict(trace, 15).check(fate="null-result", outputs="E-null")
    assert any("holds it until its window closes (end plus grace)" in h for h in verdict.hints)
    assert verdict.hints[-1] == "Since 3.1, when does a left or outer join emit a record that has no partner yet?"
    assert "outer-join buffer until stream time passes its window end plus grace (60)" in verdict.rule
    # a late record is not dropped in a stream-stream join: the question asks what is skipped, the rule says so
    verdict = Predict(trace, 9).check(fate="dropped")
    assert verdict.hints[-1] == "Which records does a stream-stream join skip? Is this record's key or value null?"
    assert "A late record is not dropped" in verdict.rule
    # a window bound: 01's exercise 1, Q@9 with a 5 ms window joins p@6 (in [4, 14])
    practice = kjoin.run(
        kjoin.Scenario.from_notation(
            "stream-stream",
            "outer",
            left="2:P, 9:Q, 30:R, 60:T",
            right="6:p, 27:r, 45:s",
            window={"before_ms": 5, "after_ms": 5, "grace_ms": 2},
        )
    )
    hints = Predict(practice, 2).check(fate="joined", outputs="none").hints
    assert any("timestamps in [4, 14], both ends included" in h for h in hints)


def test_a_wrong_count_in_an_aggregate_points_at_null_group_keys():
    from kjoin.engine.aggregates import run_spec

    def order(key, page, ts):
        return {"key": key, "value": {"page": page, "n": 1}, "ts": ts}

    events = [order("o1", "home", 1), order("o2", "cart", 2), order("o1", "cart", 3)]
    events.append({"key": "o2", "value": {"n": 1}, "ts": 4})  # o2 no longer has a page
    quiz = run_spec({"join": "table-aggregate", "group_by": "page", "aggregate": "count", "events": events})
    widget = Predict(quiz, 3)
    truth = [o.render() for o in quiz.steps[3].outputs]
    wrong = [t.rsplit("=", 1)[0] + "=" + str(int(t.rsplit("=", 1)[1]) + 1) for t in truth]
    hints = widget.check(fate=fate_label(quiz.steps[3]).tone, outputs=", ".join(wrong)).hints
    assert any("null key is in no group" in h for h in hints), hints


def test_a_release_that_joined_names_the_partner_not_stream_time(trace):
    widget = Predict(trace, 2, ask="release")  # A@3 leaves the outer-join buffer when a@4 joins it
    text = widget.check(leaves=3).text
    assert "which joins it (A-a@4)" in text and "stream time" not in text
    waiting = Predict(trace, 15, ask="release")  # E@40 leaves when stream time passes 60
    assert "stream time 80" in waiting.check(leaves=17).text
    hints = waiting.check(leaves=16).hints
    assert any("After step 16, stream time is 60" in h for h in hints) and "E-null" not in " ".join(hints)


def test_parse_outputs_prefers_balanced_items_where_a_quoted_bracket_could_mislead_it():
    # found by the property test above: a bracket inside a JSON key; the split that leaves no bracket open wins
    from kjoin_viz.predict import parse_outputs

    assert parse_outputs('{"":null,"{":null}-, {"}":null}-') == ['{"":null,"{":null}-', '{"}":null}-']
    items = ['{"":null,"[":null}-', "null-", '{"\\"":null}-']
    assert parse_outputs(", ".join(items)) == items
    assert parse_outputs("[oops, A-a") == ["[oops", "A-a"]  # an unbalanced answer still splits


def _view(page, ts):
    return {"key": page, "value": "view", "ts": ts}


QUIZ_SESSIONS = {
    "join": "window-aggregate",
    "window": {"inactivity_gap_ms": 10},
    "events": [_view("a", 1), _view("a", 5), _view("b", 6), _view("a", 30), _view("a", 22)],
}
QUIZ_SLIDING = {
    "join": "window-aggregate",
    "window": {"time_difference_ms": 10, "grace_ms": 20},
    "events": [_view("a", 20), _view("a", 25), _view("a", 40), _view("a", 33)],
}
QUIZ_SUPPRESS = {
    "join": "window-aggregate",
    "window": {"size_ms": 10, "grace_ms": 2},
    "suppress": "until-window-closes",
    "events": [_view("a", 1), _view("a", 4), _view("b", 9), _view("a", 11), _view("b", 13)],
}
"""Notebook 07's exercises 6-8 (session, sliding, suppress), as the notebook defines them."""


def test_07_has_the_session_sliding_and_suppress_exercises_as_tested_here():
    import nbformat

    from kjoin.engine.aggregates import run_spec

    cells = nbformat.read("notebooks/07_aggregates_and_windowed_tables.ipynb", as_version=4).cells
    code = "\n".join(cell.source for cell in cells if cell.cell_type == "code")
    namespace = {"view": _view}
    exec(code[code.index("quiz_sessions = ") : code.index("# end of exercises 6-8")], {"run_spec": run_spec}, namespace)
    for name, spec in (
        ("quiz_sessions", QUIZ_SESSIONS),
        ("quiz_sliding", QUIZ_SLIDING),
        ("quiz_suppress", QUIZ_SUPPRESS),
    ):
        assert [s.outputs for s in namespace[name].steps] == [s.outputs for s in run_spec(spec).steps], name
    for call in ("Predict(quiz_sessions, 4)", "Predict(quiz_sliding, 1)", "Predict(quiz_suppress, 4)"):
        assert f"kjoin_viz.{call}" in code


def test_a_session_answer_without_the_merged_sessions_tombstone_gets_the_merge_rule_first():
    from kjoin.engine.aggregates import run_spec

    quiz = run_spec(QUIZ_SESSIONS)
    widget = Predict(quiz, 4)
    assert widget.check(fate="aggregated", outputs="a@[30, 30]=null, a@[22, 30]=2").correct
    verdict = widget.check(fate="aggregated", outputs="a@[22, 30]=2")
    assert not verdict.correct
    hints = " ".join(verdict.hints)
    assert "a tombstone key@[start, end]=null for every session it merges" in hints
    assert "ends at ts - 10 or later" in hints
    assert "a@[30, 30]=null" not in hints  # the hint does not give the answer away
    # a wrong bound (a new session instead of a merge): the session rule, no tombstone talk
    hints = " ".join(widget.check(fate="aggregated", outputs="a@[30, 30]=null, a@[22, 22]=1").hints)
    assert "ends at ts - 10 or later" in hints and "tombstone" not in hints


def test_a_sliding_answer_without_the_earlier_records_right_window_gets_the_left_and_right_rule():
    from kjoin.engine.aggregates import run_spec

    quiz = run_spec(QUIZ_SLIDING)
    widget = Predict(quiz, 1)
    assert widget.check(fate="aggregated", outputs="a@[21, 31]=1, a@[15, 25]=2").correct
    hints = " ".join(widget.check(fate="aggregated", outputs="a@[15, 25]=2").hints)
    assert "makes its left window [ts - 10, ts]" in hints and "right window [t + 1, t + 1 + 10]" in hints
    assert "[21, 31]" not in hints


def test_a_suppressed_window_is_forwarded_once_when_it_closes_and_the_hint_says_when():
    from kjoin.engine.aggregates import run_spec

    quiz = run_spec(QUIZ_SUPPRESS)
    widget = Predict(quiz, 4)
    assert widget.check(fate="held", outputs="a@[0, 10)=2, b@[0, 10)=1").correct
    # "nothing yet": the window closes now, whatever record closes it
    hints = " ".join(widget.check(fate="held", outputs="none").hints)
    assert "After this step stream time is 13" in hints and "grace (2 ms)" in hints
    assert "may belong to another key" in hints and "a@[0, 10)" not in hints
    # an update per record, as without suppress: the record's own update is held
    verdict = widget.check(fate="aggregated", outputs="b@[10, 20)=1")
    assert "the record's own update waits" in verdict.rule and "when is a window's result forwarded?" in " ".join(
        verdict.hints
    )
    # forwarded too early (step 3: stream time 11, the window ends at 10, grace 2)
    hints = " ".join(Predict(quiz, 3).check(fate="held", outputs="a@[0, 10)=3").hints)
    assert "Nothing leaves before its window closes" in hints and "stream time is 11" in hints


def test_an_emit_final_step_is_held_and_the_windows_it_closes_are_earlier_records():
    """Emit-final forwards the windows a record closes; the record itself waits (its own window is open): the
    label says held, and the closed windows are shown as emitted for earlier records, not as its aggregate."""
    from kjoin.engine.aggregates import run_spec
    from kjoin_viz.step_view import headline

    quiz = run_spec({**{k: v for k, v in QUIZ_SUPPRESS.items() if k != "suppress"}, "emit": "final"})
    step = quiz.steps[4]  # b@13 closes [0, 10): a=2 and b=1 are forwarded
    assert [o.render() for o in step.outputs] == ["a@[0, 10)=2", "b@[0, 10)=1"]
    assert fate_label(step).tone == "held"
    assert "also emitted for earlier records: a@[0, 10)=2@4, b@[0, 10)=1@9" in headline(step, len(quiz.steps))


def test_answers_in_every_reasonable_form_are_read_alike():
    practice = kjoin.run(
        kjoin.Scenario.from_notation("table-table", "left", left="2:L1, 6:null", right="1:eur, 4:usd", semantics="3.1")
    )
    deleted = Predict(practice, 3)  # the left row is deleted: a tombstone
    assert [o.render() for o in practice.steps[3].outputs] == ["null"]
    for typed in ("null", "tombstone", "Tombstone.", " null ; ", "tombstone@6"):
        assert deleted.check(fate="tombstone", outputs=typed).correct, typed
    joined = Predict(practice, 2)  # usd@4 joins L1
    verdict = joined.check(fate="joined", outputs="L1-usd@4.")
    assert verdict.correct and "L1-usd@4" in verdict.lines[1]
    wrong = joined.check(fate="joined", outputs="L1-eur.")
    assert "Not emitted at this step: L1-eur." in wrong.lines[1] and ".." not in wrong.lines[1]


def test_the_rule_is_a_second_stage_and_a_wrong_check_closes_a_solved_stepper(trace):
    widget = Predict(trace, 9)  # c@10 joins A, B and C
    assert widget.check(fate="joined", outputs="A-c, B-c, C-c").correct and widget.stepper is not None
    wrong = widget.check(fate="held", outputs="none")
    assert widget.stepper is None and widget.stepper_box.children == ()  # the solved stepper would give it away
    assert wrong.rule and wrong.rule not in widget.feedback.value and wrong.hints[-1] in widget.feedback.value
    assert widget.rule_button.layout.display is None
    widget.rule_button.click()
    assert "The rule:" in widget.feedback.value and widget.rule_button.layout.display == "none"
    assert "Why:" not in widget.feedback.value  # the answer is the third stage
    widget.answer_button.click()
    assert "Why:" in widget.feedback.value and widget.stepper.step == 9


def test_a_release_question_offers_at_once_so_the_last_record_has_a_real_choice():
    practice = kjoin.run(
        kjoin.Scenario.from_notation(
            "stream-stream", "outer", left="2:P, 9:Q, 30:R, 60:T", right="6:p, 27:r, 45:s",
            window={"before_ms": 5, "after_ms": 5, "grace_ms": 2},
        )
    )  # fmt: skip
    widget = Predict(practice, 6, ask="release")  # 01's exercise 4: T@60, the last record
    assert [value for _, value in widget.release.options] == [6, STILL_WAITING]
    verdict = widget.check(leaves=6)
    assert not verdict.correct and verdict.hints[0] == "Not quite: it leaves at once."
    assert "window end plus grace (67)" in verdict.rule
    assert widget.check(leaves=STILL_WAITING).correct
