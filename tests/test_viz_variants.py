"""Side-by-side variants and what-if sliders: both re-read traces, neither joins by itself."""

from __future__ import annotations

import re

import pytest

import kjoin
from kjoin.render import seed_table
from kjoin_viz import Variants, WhatIf, variant_traces, what_if, what_if_table
from kjoin_viz.whatif import compare_html

from .test_viz_stepper import SEED_004


@pytest.fixture(scope="module")
def scenario():
    return kjoin.Scenario.from_notation("stream-stream", "left", **SEED_004)


def test_variant_traces_run_every_variant_and_era(scenario):
    traces = variant_traces(scenario, eras=["0.10.2", "3.1"])
    assert list(traces) == [f"{v} {e}" for e in ("0.10.2", "3.1") for v in ("inner", "left", "outer")]
    assert [o.render() for o in traces["left 0.10.2"][2].outputs] == ["A-null"]
    assert traces["left 3.1"][2].outputs == ()


def test_variants_table_marks_the_current_row_and_tells_outputs_apart(scenario):
    widget = Variants(variant_traces(scenario))
    widget.buttons["next"].click()
    widget.buttons["next"].click()
    widget.buttons["next"].click()
    assert widget.step == 3
    table = re.sub(r""" style=("[^"]*"|'[^']*')""", "", widget.table.value)  # cells and classes only
    current = table.split('<tr class="current">')[1].split("</tr>")[0]
    assert current.count('<span class="result">A-a</span>') == 3
    assert table.count('class="none"') > 0
    assert "A-a@4" in widget.columns["outer"].value
    widget.slider.value = 15
    assert "held until stream time passes 60" in widget.columns["left"].value
    assert "no match: no output" in widget.columns["inner"].value


def test_variants_text_is_the_seed_table_with_the_step_marked(scenario):
    traces = variant_traces(scenario)
    widget = Variants(traces, step=2)
    lines = widget.text().splitlines()
    assert [line[3:] for line in lines] == seed_table(traces).splitlines()
    assert [i for i, line in enumerate(lines) if line.startswith(">> ")] == [4]


def test_what_if_changes_only_the_window(scenario):
    changed = what_if(scenario, grace_ms=0, after_ms=5)
    assert (changed.window.before_ms, changed.window.after_ms, changed.window.grace_ms) == (15, 5, 0)
    assert changed.events == scenario.events
    with pytest.raises(TypeError):
        what_if(scenario, retention=3)
    with pytest.raises(ValueError):
        what_if(kjoin.Scenario.from_notation("table-table", "inner", left="1:A", right="2:a"), grace_ms=1)


def test_what_if_sliders_rerun_the_engine(scenario):
    widget = WhatIf(scenario)
    assert set(widget.sliders) == {"before_ms", "after_ms", "grace_ms"}
    assert "*" not in [line[0] for line in widget.text().splitlines()[3:]]
    widget.sliders["before_ms"].value = 0
    widget.sliders["after_ms"].value = 0
    assert widget.trace.scenario.window.before_ms == 0
    # with a zero-width window only records of the same timestamp join: nothing does here
    assert all(o.right is None for o in widget.trace.outputs)
    assert "what if before_ms=0, after_ms=0, grace_ms=5:" in widget.text()
    assert compare_html(widget.original, widget.trace) in widget.result.value  # an HTML table, not wrapped text
    assert "what if before_ms=0, after_ms=0, grace_ms=5:" in widget.header.value
    assert widget.result.value.count('class="changed"') == sum(
        line.startswith("*") for line in widget.text().splitlines()
    )


def test_what_if_shows_the_engines_error_in_the_widget_and_its_header_follows_the_sliders():
    scenario = kjoin.Scenario.from_dict(
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
    widget = WhatIf(scenario)
    widget.sliders["history_retention_ms"].value = 2  # below the grace period: Kafka refuses the topology
    assert widget.trace is None and "History retention must be at least grace period" in widget.error
    assert "history_retention_ms=2" in widget.header.value and "kjoin-error" in widget.result.value
    assert "History retention must be at least grace period" in widget.result.value
    assert widget.text().splitlines()[1].startswith("the engine cannot run these options:")
    widget.sliders["grace_ms"].value = 0  # valid again: the error goes, the table comes back
    assert (
        widget.error is None
        and "kjoin-error" not in widget.result.value
        and "grace_ms=0, history_retention_ms=2" in widget.header.value
    )


def test_what_if_starts_from_given_options_and_the_static_table(scenario):
    widget = WhatIf(scenario, grace_ms=0, after_ms=2)
    assert widget.options() == {"before_ms": 15, "after_ms": 2, "grace_ms": 0}
    shown = what_if_table(scenario, grace_ms=0, after_ms=2)
    assert repr(shown).splitlines()[0] == "what if grace_ms=0, after_ms=2:"
    assert repr(shown).splitlines()[1:] == widget.text().splitlines()[1:]
    assert compare_html(widget.original, widget.trace) in shown._repr_html_()
    with pytest.raises(TypeError, match="no slider for history_retention_ms"):
        WhatIf(scenario, history_retention_ms=3)


def test_what_if_offers_history_retention_for_a_versioned_table():
    scenario = kjoin.Scenario.from_dict(
        {
            "join": "table-table",
            "variant": "inner",
            "left": {"versioned": True, "history_retention_ms": 10},
            "events": [
                {"side": "left", "key": "k", "value": "A", "ts": 5},
                {"side": "right", "key": "k", "value": "a", "ts": 6},
                {"side": "left", "key": "k", "value": "B", "ts": 3},
            ],
        }
    )
    widget = WhatIf(scenario)
    assert set(widget.sliders) == {"history_retention_ms"} and widget.sliders["history_retention_ms"].value == 10
    widget.sliders["history_retention_ms"].value = 1
    assert widget.trace.scenario.left.history_retention_ms == 1
    assert widget.trace.scenario.events == scenario.events


def test_stepper_and_variants_refuse_a_step_outside_the_trace(scenario):
    """Both widgets keep their step in the slider; a step past either end is an error,
    and the view stays where it was."""
    from kjoin_viz import Stepper

    traces = variant_traces(scenario)
    for widget in (Stepper(traces["left"], step=2), Variants(traces, step=2)):
        last = len(traces["left"].steps) - 1
        with pytest.raises(IndexError, match=f"step {last + 1} is outside this trace \\(0 to {last}\\)"):
            widget.step = last + 1
        with pytest.raises(IndexError):
            widget.step = -1
        assert widget.step == 2
        widget.step = last
        assert widget.slider.value == last
