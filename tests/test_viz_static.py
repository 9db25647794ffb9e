"""A live widget's static view (kjoin_viz.static): what a page without a kernel shows of it.

Each assertion reads the ``text/html`` a widget puts beside its live view and compares it with what the widget's own
panes hold, on traces the engine produced."""

from __future__ import annotations

import ipywidgets as widgets

import kjoin
from kjoin_viz import Predict, Stepper, WhatIf
from kjoin_viz.static import static_html

SEED_004 = dict(
    left="1:null, 3:A, 5:B, 7:null, 9:C, 12:null, 15:D, 40:E, 60:F, 100:G",
    right="2:null, 4:a, 6:b, 8:null, 10:c, 11:null, 13:null, 14:d, 80:f",
    window={"before_ms": 15, "after_ms": 15, "grace_ms": 5},
)
WIDGET = "application/vnd.jupyter.widget-view+json"


def scenario() -> kjoin.Scenario:
    return kjoin.Scenario.from_notation("stream-stream", "left", semantics="3.1", **SEED_004)


def bundle(widget) -> dict:
    data = widget._repr_mimebundle_()
    assert WIDGET in data, "the live view stays the first choice of JupyterLab and Voila"
    return data


def test_a_stepper_shows_the_step_it_is_on_with_its_panes():
    trace = kjoin.run(scenario())
    stepper = Stepper(trace, step=3)
    view = bundle(stepper)["text/html"]
    panes = [w for w in _walk(stepper) if isinstance(w, widgets.HTML) and w.layout.display != "none"]
    assert len(panes) >= 3 and all(pane.value in view for pane in panes)
    assert f"step 3 (4 of {len(trace.steps)})" in view
    stepper.step = 5
    assert f"step 5 (6 of {len(trace.steps)})" in bundle(stepper)["text/html"]


def test_a_predict_exercise_shows_its_question_but_not_its_answer():
    trace = kjoin.run(scenario())
    predict = Predict(trace, 2)
    before = bundle(predict)["text/html"]
    assert predict.prompt.split(":")[0] in before
    assert "disabled" in before  # the choices are there, as controls that cannot be used
    hidden = [w for w in _walk(predict) if w.layout.display == "none"]
    assert hidden and all(w.description not in before for w in hidden)  # "show the rule", "show the answer"
    assert "kjoin-feedback" not in before
    predict.fate.index = len(predict.fate.options) - 1
    predict._check()
    after = bundle(predict)["text/html"]
    assert predict.feedback.value and predict.feedback.value in after
    assert all(w.description in after for w in hidden if w.layout.display != "none")


def test_a_what_if_shows_its_options_and_its_comparison():
    what_if = WhatIf(scenario(), grace_ms=0)
    view = bundle(what_if)["text/html"]
    assert what_if.result.value in view
    assert "grace_ms" in view and "<code>0</code>" in view


def test_the_static_view_is_the_same_bytes_on_every_run():
    def views():
        trace = kjoin.run(scenario())
        return [bundle(Stepper(trace, step=4))["text/html"], bundle(Predict(trace, 3))["text/html"]]

    assert views() == views()


def test_hidden_and_unknown_widgets_show_nothing():
    shown = widgets.HTML("<b>shown</b>")
    hidden = widgets.HTML("<b>secret</b>", layout={"display": "none"})
    box = widgets.VBox([shown, hidden, widgets.Play()])
    assert static_html(box) == '<div style="display:flex;flex-direction:column"><b>shown</b></div>'


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)
