"""Every exercise of the course, answered as learners answer it: the right answer in three forms is accepted,
and three plausible wrong answers get feedback that speaks only of the exercise's own join and era.

The exercises are the notebooks' own (``tests/course_exercises.py`` runs each notebook's code up to its last
exercise; notebook 09's drill-downs are rebuilt with the reference engine from its planted topics)."""

from __future__ import annotations

import re

import pytest

from kjoin_viz import Predict
from kjoin_viz.feedback import VOCABULARY, join_kind
from kjoin_viz.labels import fate_label, tones_for
from kjoin_viz.predict import STILL_WAITING
from kjoin_viz.values import show_output

from .course_exercises import NOTEBOOK_09_EXERCISES, NOTEBOOKS, exercises_of, notebooks_with_exercises

COURSE = notebooks_with_exercises()


def _cases(notebooks):
    return [pytest.param(nb, i, id=f"{nb[:2]}-{i + 1}") for nb in notebooks for i in range(len(exercises_of(nb)))]


def right_forms(widget: Predict) -> list[tuple[str, str]]:
    """The engine's answer as three learners may type it: kjoin's notation; the views' form with timestamps,
    spaces and a full stop (in another order where the order is not asked); ``tombstone`` and capitals."""
    step = widget.trace.steps[widget.index]
    tone = fate_label(step).tone
    notation = [o.render() for o in step.outputs]
    shown = [f"{show_output(o)}@{o.ts}" for o in step.outputs]
    if not widget.order:
        shown = shown[::-1]
    words = ["tombstone" if o.render() == "null" else o.render() for o in step.outputs]
    return [
        (tone, ", ".join(notation) or "none"),
        (tone, "  " + " ,  ".join(shown) + " ." if shown else "nothing."),
        (tone, (", ".join(words) + ";") if words else " NONE "),
    ]


def wrong_forms(widget: Predict) -> list[tuple[str, str]]:
    """Three plausible wrong answers: another fate with the right outputs; the right fate with an output missing
    or a result with null too many; and a drop (or a join) with no output."""
    step = widget.trace.steps[widget.index]
    tone = fate_label(step).tone
    tones = list(tones_for(widget.trace))
    other = next(t for t in ("joined", "dropped", "held", "null-result", "no-match") if t != tone and t in tones)
    notation = [o.render() for o in step.outputs]
    outputs = ", ".join(notation) or "none"
    if notation:
        fewer = ", ".join(notation[1:]) or "none"
    else:
        record = step.record
        fewer = f"{record.value}-null" if record.side.value == "left" else f"null-{record.value}"
    last = "dropped" if tone != "dropped" else "joined"
    return [(other, outputs), (tone, fewer), (last, "none" if notation else "null")]


def banned_words(trace) -> tuple[str, ...]:
    return VOCABULARY.get(join_kind(trace), ("None",))


def _said(verdict) -> str:
    return " ".join((*verdict.hints, verdict.rule))


def check_exercise(exercise) -> None:
    widget = Predict(exercise.trace, exercise.step, ask=exercise.ask, prompt=exercise.prompt, order=exercise.order)
    banned = banned_words(exercise.trace)
    if exercise.ask == "release":
        assert widget.check(leaves=widget.leaves).correct
        wrong = [STILL_WAITING, exercise.step, *range(exercise.step + 1, len(exercise.trace.steps))]
        wrong = [w for w in dict.fromkeys(wrong) if w != widget.leaves][:3]
        answers = [dict(leaves=w) for w in wrong]
    else:
        for fate, outputs in right_forms(widget):
            verdict = widget.check(fate=fate, outputs=outputs)
            assert verdict.correct, (fate, outputs, verdict.text)
        answers = [dict(fate=fate, outputs=outputs) for fate, outputs in wrong_forms(widget)]
    for answer in answers:
        verdict = Predict(
            exercise.trace, exercise.step, ask=exercise.ask, prompt=exercise.prompt, order=exercise.order
        ).check(**answer)
        assert not verdict.correct, answer
        said = _said(verdict)
        assert verdict.rule and verdict.hints[-1].endswith("?"), said  # a question first, then the rule
        for word in banned:
            assert not re.search(rf"\b{re.escape(word)}\b", said, re.IGNORECASE if word != "None" else 0), (
                word,
                answer,
                said,
            )


@pytest.mark.parametrize("notebook, number", _cases(COURSE))
def test_every_exercise_accepts_its_answer_in_three_forms_and_explains_three_wrong_ones(notebook, number):
    check_exercise(exercises_of(notebook)[number])


def test_notebook_09_defines_its_exercises_as_rebuilt_here():
    import nbformat

    code = "\n".join(
        c.source for c in nbformat.read(NOTEBOOKS / "09_debug_your_own_topics.ipynb", 4).cells if c.cell_type == "code"
    )
    assert code.count("Predict(") == len(NOTEBOOK_09_EXERCISES) == len(exercises_of("09_debug_your_own_topics.ipynb"))
    assert all(lines in code for lines in NOTEBOOK_09_EXERCISES)
    assert "planted(160, PARTITIONS)" in code and "PARTITIONS = 2" in code
    assert 'run_join(orders_topic, customers_topic, "stream-table", "left")' in code
