"""The predict widget: an exercise checked against the engine.

``Predict(trace, step)`` shows the input records up to ``step`` (with what each earlier one
emitted) and every store *before* the step, and asks what the step's record does:

- ``ask="fate+outputs"`` (the default): its fate, picked from plain-language choices
  (:data:`~kjoin_viz.labels.TONES`), and the outputs of the step typed in kjoin's notation
  (``A-a, B-a``; ``A-null``; ``null`` for a tombstone; ``none`` or nothing for no output; a
  timestamp may be added, ``A-a@4``, and is then checked too);
- ``ask="release"``: for a record that is held back (outer-join buffer, grace buffer, record
  cache), at which later step it leaves, or that it is still waiting when the input ends.

**Check** compares the answer with the trace. An answer is read in every reasonable form: outputs in any order
unless the exercise asks for their order (``order=True``; the widget says which), ``tombstone`` for ``null``,
spaces and trailing punctuation ignored. A right answer gets the engine's answer, why, and a
:class:`~kjoin_viz.Stepper` at that step. A wrong one gets feedback in three stages (:mod:`kjoin_viz.feedback`):
first which part is wrong, hints aimed at the misconception the answer shows (:mod:`kjoin_viz.hints`: an output
timestamp, a result released for an earlier record, a null group key, …) and a question that points at the rule
deciding the step; then, on request (**show the rule**), that rule in its join's words, for its era; then
(**show the answer**) the engine's answer, why, and the stepper. The answer lives only in the widget: the cell's
stored output is the question (the widget's text form), never the answer.

Trainers: ``kjoin_viz.trainer_mode(True)`` (or the environment variable ``KJOIN_TRAINER=1``
before the kernel starts) adds a **show solution** button to every predict widget, also to
those already on the page. In a workshop (``KJOIN_ROOM_URL`` set by ``make workshop``) every
widget reports its exercise and each check to the room's tally on 127.0.0.1 (:mod:`kjoin_viz.room`).
"""

from __future__ import annotations

import html
import os
import re
import weakref
from dataclasses import dataclass
from typing import Any, Iterable

import ipywidgets as widgets

from kjoin.trace import Trace

from .feedback import feedback, release_feedback
from .hints import output_hints
from .room import exercise_id, page_notebook, report
from .labels import fate_label, tones_for
from .step_view import CSS, _outputs_text, _table_html, rows_from, view_of
from .values import plain, show_output, show_text, show_value
from .stepper import Stepper
from .store_view import store_tables
from .static import StaticView

__all__ = ["Predict", "Verdict", "trainer_mode", "leave_step", "parse_outputs", "ASKS"]

ASKS = ("fate+outputs", "release")
CONTEXT_ROWS = 15
"""Input records shown before the asked step (and, for ``release``, after it)."""
STILL_WAITING = -1
"""The ``release`` answer "it is still waiting when the input ends"."""
CHOOSE_FIRST = "Choose an answer first, then check."
"""What "check" says (and all it does) while nothing is chosen."""

_TRAINER = {"on": os.environ.get("KJOIN_TRAINER", "") not in ("", "0", "false", "no")}
_LIVE: "weakref.WeakSet[Predict]" = weakref.WeakSet()
_NUMBERS: dict[str, int] = {}
"""Each exercise's number in this kernel's notebook, in the order first shown (a kernel runs one notebook's cells
in order, so the third exercise shown is the notebook's exercise 3; shown again, it keeps its number)."""


def trainer_mode(on: bool | None = None) -> bool:
    """Turn the trainer's **show solution** buttons on or off (``None``: only ask); returns
    whether they are on. The default comes from ``KJOIN_TRAINER`` (``1``: on)."""
    if on is not None:
        _TRAINER["on"] = bool(on)
        for widget in list(_LIVE):
            widget._show_trainer()
    return _TRAINER["on"]


# -- reading the engine's answer ---------------------------------------------------------------
def leave_step(trace: Trace, step: int) -> int | None:
    """The first step after which nothing of ``step``'s record is held any more, or
    :data:`STILL_WAITING` if it is still held at the end of the input; ``None`` if the record
    was never held."""
    if not rows_from(trace.state_at(step).stores, step):
        return None
    for later in range(step + 1, len(trace.steps)):
        if not rows_from(trace.state_at(later).stores, step):
            return later
    return STILL_WAITING


_TRAILING = " \t.;,!"
"""What an answer may end with and still be the same answer (a sentence's full stop, a last comma)."""
_TOMBSTONE_WORDS = ("tombstone", "a tombstone", "null (tombstone)", "tombstone (null)")
"""What a learner may type for a tombstone, written ``null`` in kjoin's notation."""

_OPEN, _CLOSE = "[{(", "]})"
_SEPARATORS = re.compile(r"([,;])")
_NO_OUTPUT = ([], ["none"], ["-"], ["(none)"], ["nothing"])


def _balanced(text: str) -> bool:
    """Does ``text`` close every bracket it opens, and every JSON string it opens inside one?
    Any closer closes any opener: a window ``[0, 10)`` opens with ``[`` and closes with ``)``.
    Quotes count only inside brackets (a bare string value is printed without quotes)."""
    depth, quoted, escaped = 0, False, False
    for char in text:
        if quoted:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
        elif char == '"' and depth:
            quoted = True
        elif char in _OPEN:
            depth += 1
        elif char in _CLOSE and depth:
            depth -= 1
    return depth == 0 and not quoted


def parse_outputs(text: str, known: Iterable[str] = ()) -> list[str]:
    """``"A-a, B-a"`` into ``["A-a", "B-a"]``; ``none``, ``-`` or nothing is no output.

    Outputs are separated by commas (or semicolons) outside brackets and JSON strings: a window
    ``home@[0, 10)=2`` and a JSON value ``{"fk":"Y","v":2}-bar`` are one item each, commas
    included. ``known`` are outputs the answer may contain (the engine's): a run of the text
    that spells one of them (spaces ignored) is that one item even where the rule above would
    split it (a string value with a comma of its own, ``a,b-x``) or could not (an unclosed
    bracket in a string value)."""
    known = [k.strip() for k in known]
    pieces = _SEPARATORS.split(text)  # text, separator, text, …: runs keep their own separators
    chunks = pieces[::2]
    if known and re.split(r"[,;]", _compact(text)) == re.split(r"[,;]", ",".join(_compact(k) for k in known)):
        return known  # exactly the known outputs, in order (however their own commas would split)
    wanted = {_compact(k) for k in known}
    n = len(chunks)
    # best[i]: (cost, items) for the first i chunks; each item is a run of chunks that spells a
    # known output (costs 0), or is balanced with no balanced shorter run (the comma rule; costs 1),
    # or is a single unbalanced chunk (an unbalanced answer still splits; costs more than any number
    # of balanced items, so that a split into balanced items wins over one that leaves a bracket
    # open: ``{"":null,"{":null}-``)
    best: list[tuple[int, list[str]] | None] = [None] * (n + 1)
    best[0] = (0, [])
    for i in range(n):
        if best[i] is None:
            continue
        cost, items = best[i]
        run = ""
        structural = True  # no shorter run from i was balanced
        for j in range(i, n):
            run = run + pieces[2 * j - 1] + chunks[j] if j > i else chunks[j]
            item = run.strip()
            balanced = _balanced(run)
            if _compact(item) in wanted:
                step = 0
            elif balanced and structural:
                step = 1
            elif j == i:
                step = n + 1
            else:
                step = None
            if step is not None:
                candidate = (cost + step, [*items, item])
                if best[j + 1] is None or (candidate[0], len(candidate[1])) < (best[j + 1][0], len(best[j + 1][1])):
                    best[j + 1] = candidate
            structural = structural and not balanced
    items = [item for item in best[n][1] if item]
    if [item.lower() for item in items] in _NO_OUTPUT:
        return []
    return items


def _tidy(text: str) -> str:
    """An answer without what does not change it: spaces and trailing punctuation (``Q-p@9.``), and ``tombstone``
    for kjoin's ``null``."""
    text = text.strip().rstrip(_TRAILING).strip()
    if text.lower() in _TOMBSTONE_WORDS:
        return "null"
    if text.lower().startswith("tombstone@"):
        return "null" + text[len("tombstone") :]
    return text


def _compact(item: str) -> str:
    """An output without spaces and quotes: ``home@[0, 10)=2`` and ``home@[0,10)=2`` are the same answer, and so are
    kjoin's notation ``{"fk":"Y"}-bar`` and the views' ``{fk: Y}-bar`` (:mod:`kjoin_viz.values`)."""
    return plain(item)


@dataclass(frozen=True)
class Verdict:
    """The result of a check: whether every part was right, and what to tell the learner."""

    correct: bool
    lines: tuple[str, ...]
    """The whole answer: what was right, what the engine says, and why."""
    hints: tuple[str, ...] = ()
    """For a wrong answer: which part is wrong, hints that do not give the answer away, and a question that points at
    the rule (the first stage)."""
    rule: str = ""
    """For a wrong answer: the rule that decides the step, in its join's words (the second stage)."""

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


# -- the widget --------------------------------------------------------------------------------
class Predict(StaticView, widgets.VBox):
    """An exercise on ``trace`` at ``step``: predict the record's fate and outputs, or when it
    leaves its buffer (``ask="release"``). ``prompt`` replaces the default question."""

    def __init__(
        self, trace: Trace, step: int, ask: str = "fate+outputs", prompt: str | None = None, order: bool = False
    ) -> None:
        if ask not in ASKS:
            raise ValueError(f"ask must be one of {', '.join(ASKS)}, not {ask!r}")
        if not 0 <= step < len(trace.steps):
            raise IndexError(f"step {step} is outside this trace (0 to {len(trace.steps) - 1})")
        self.trace, self.index, self.ask, self.order = trace, step, ask, order
        self.tones = tones_for(trace)
        self.view = view_of(trace)
        s = trace.steps[step]
        self.leaves = leave_step(trace, step) if ask == "release" else None
        if ask == "release" and self.leaves is None:
            raise ValueError(
                f"step {step} ({fate_label(s)}) holds nothing back: ask about its fate and outputs instead"
            )
        self.prompt = prompt or self._default_prompt()
        question = widgets.HTML(f'<div class="kjoin-viz kjoin-question">{CSS}<b>{html.escape(self.prompt)}</b></div>')
        context = widgets.HTML(self._context_html())
        self.check_button = widgets.Button(
            description="check", button_style="primary", tooltip="compare with the engine"
        )
        self.solution_button = widgets.Button(description="show solution", tooltip="trainer: reveal the answer")
        self.answer_button = widgets.Button(
            description="show the answer", tooltip="the engine's answer, why, and this step in the stepper"
        )
        self.answer_button.layout.display = "none"
        self.rule_button = widgets.Button(
            description="show the rule", tooltip="the rule that decides this step, for this join and era"
        )
        self.rule_button.layout.display = "none"
        self.verdict: Verdict | None = None
        self.feedback = widgets.HTML()
        self.stepper_box = widgets.VBox()
        self.stepper = None
        if ask == "fate+outputs":
            self.fate = widgets.RadioButtons(
                options=[(text, tone) for tone, text in self.tones.items()],
                value=None,
                layout={"width": "auto"},
            )
            self.fate.add_class("kjoin-fate-choice")
            self.outputs = widgets.Text(
                placeholder="e.g. A-a, B-a   or   A-null   or   none",
                description="outputs",
                layout={"width": "100%", "max_width": "520px"},
            )
            inputs: list[widgets.Widget] = [
                widgets.HTML("<b>the record itself …</b>"),
                self.fate,
                widgets.HTML(
                    '<div class="kjoin-viz" style="font-size:12px;color:#555">and everything this step emits, '
                    "earlier records' results included "
                    + ("(in the order the step emits them):" if order else "(in any order):")
                    + "</div>"
                ),
                self.outputs,
            ]
        else:
            options = [(f"step {step}: at once, as it arrives (it is not held)", step)]
            options += [(self._step_option(j), j) for j in range(step + 1, len(trace.steps))]
            options.append(("it is still waiting when the input ends", STILL_WAITING))
            self.release = widgets.Dropdown(
                options=options, value=None, description="it leaves at", layout={"width": "100%", "max_width": "520px"}
            )
            self.release.style.description_width = "90px"
            inputs = [self.release]
        self.check_button.on_click(lambda _: self._check())
        self.solution_button.on_click(lambda _: self._reveal())
        self.answer_button.on_click(lambda _: self._show_answer())
        self.rule_button.on_click(lambda _: self._show_rule())
        super().__init__(
            [
                question,
                context,
                *inputs,
                widgets.HBox([self.check_button, self.rule_button, self.answer_button, self.solution_button]),
                self.feedback,
                self.stepper_box,
            ],
            layout={"max_width": "100%"},
        )
        self.add_class("kjoin-predict")
        _LIVE.add(self)
        self._show_trainer()
        self.notebook = page_notebook()
        self.exercise = exercise_id(self.notebook, self.prompt, step, ask)
        self.number = _NUMBERS.setdefault(self.exercise, len(_NUMBERS) + 1)
        report("register", {**self._place(), "prompt": self.prompt, "solution": self.solution()})

    # -- the question -------------------------------------------------------------------------
    def _record_text(self) -> str:
        s = self.trace.steps[self.index]
        if s.message is not None:
            return f"message {show_text(s.message.describe())}"
        r = s.record
        return f"{r.side} record {show_value(r.value)}@{r.ts} (key {show_value(r.key)})"

    def _default_prompt(self) -> str:
        s = self.trace.steps[self.index]
        arrives = "is delivered" if s.message is not None else "arrives"
        if self.ask == "release":
            return f"Step {self.index}: the {self._record_text()} is held back. At which step does it leave?"
        return (
            f"Step {self.index}: the {self._record_text()} {arrives}. What does it do, and what does this step "
            "emit (also for earlier records)?"
        )

    def _step_option(self, j: int) -> str:
        s = self.trace.steps[j]
        if s.message is not None:
            return f"step {j}: {s.message.id} {s.message.topic} delivered"
        r = s.record
        return f"step {j}: {r.side} {show_value(r.value)}@{r.ts}"

    def _context_html(self) -> str:
        """The input so far (and, for ``release``, the input still to come) and the state before
        the step."""
        steps = self.trace.steps
        first = max(0, self.index - CONTEXT_ROWS)
        last = min(len(steps), self.index + 1 + (CONTEXT_ROWS if self.ask == "release" else 0))
        shown = steps[first:last]
        cell = "border:1px solid #ccc;padding:1px 6px;text-align:left"
        rows = []
        for s in shown:
            r = s.record
            what = s.message.id + " " + s.message.topic if s.message is not None else ""
            if s.index < self.index:
                emitted = html.escape(_outputs_text(s.outputs) or "—")
            elif s.index == self.index:
                emitted = "<b>?</b>"
            else:
                emitted = "(to come)"
            style = ' style="background:#d8e8ff;font-weight:bold"' if s.index == self.index else ""
            cells = [
                str(s.index),
                html.escape(what or r.side.value),
                html.escape(show_value(r.key)),
                html.escape(show_value(r.value)),
                str(r.ts),
                emitted,
            ]
            rows.append(f"<tr{style}>" + "".join(f'<td style="{cell}">{c}</td>' for c in cells) + "</tr>")
        head = "".join(f'<th style="{cell}">{h}</th>' for h in ("step", "side", "key", "value", "ts", "emitted"))
        title = "the input" if self.ask == "release" else "the input so far"
        if first:
            title += f" (the {CONTEXT_ROWS} records before step {self.index}; steps 0 to {first - 1} not shown)"
        if last < len(steps):
            rows.append(f'<tr><td colspan="6" style="{cell}">… {len(steps) - last} more to come</td></tr>')
        records = (
            f'<table style="border-collapse:collapse;font:12px monospace;margin:2px 12px 8px 0">'
            f'<caption style="text-align:left;font-weight:bold">{title}</caption><tr>{head}</tr>{"".join(rows)}</table>'
        )
        if self.index == 0:
            before = "<i>every store is empty</i>"
        else:
            snapshot = self.trace.state_at(self.index - 1)
            tables = store_tables(snapshot.stores, (), self.trace.scenario, internals=False)  # as the stepper does
            before = "".join(_table_html(t) for t in tables) or "<i>every store is empty</i>"
        return (
            f'<div class="kjoin-viz kjoin-context" style="display:flex;flex-wrap:wrap;align-items:flex-start">'
            f"<div>{records}</div><div><b>the state before step {self.index}</b>"
            f'<div style="display:flex;flex-wrap:wrap;align-items:flex-start">{before}</div></div></div>'
        )

    # -- the answer ---------------------------------------------------------------------------
    def solution(self) -> str:
        """The engine's answer in words (what the trainer's button reveals)."""
        s = self.trace.steps[self.index]
        if self.ask == "release":
            return "Solution: " + self._leave_text()
        outputs = _outputs_text(s.outputs) or "no output"
        return f"Solution: it {self.tones[fate_label(s).tone]} ({fate_label(s)}); this step emits {outputs}."

    def _leave_text(self) -> str:
        if self.leaves == STILL_WAITING:
            return (
                "it is still waiting when the input ends: nothing moves stream time far enough "
                "(a quiet topic never flushes)."
            )
        later = self.trace.steps[self.leaves]
        emitted = _outputs_text(later.outputs) or "no output"
        partner = self._joined_at_leave()
        if partner:  # it left because it joined, not because stream time moved
            where = self._step_option(self.leaves)
            return f"it leaves at {where}, which joins it ({partner}); that step emits {emitted}."
        when = self.view.stream_time(self.leaves)
        clock = "" if when is None else f" (stream time {when} after it)"
        return f"it leaves at {self._step_option(self.leaves)}{clock}; that step emits {emitted}."

    def _joined_at_leave(self) -> str:
        """The joined results of the leave step that pair the held record with the step's record
        (``A-a@4``), or ``""`` if it left for another reason (its window closed, a commit)."""
        held, later = self.trace.steps[self.index].record, self.trace.steps[self.leaves]
        if later.message is not None or later.record.side == held.side:
            return ""
        mine = "left" if held.side.value == "left" else "right"
        joined = [
            o
            for o in later.outputs
            if not o.tombstone
            and o.left is not None
            and o.right is not None
            and getattr(o, mine) == held.value
            and o.origin_step == self.leaves
        ]
        return _outputs_text(joined)

    def check(self, fate: str | None = None, outputs: str | None = None, leaves: int | None = None) -> Verdict:
        """Answer from code (as a learner would with the controls) and check: ``fate`` a key of
        :data:`TONES`, ``outputs`` in kjoin's notation, ``leaves`` a step (``-1``: still
        waiting at the end)."""
        if self.ask == "fate+outputs":
            if fate is not None:
                self.fate.value = fate
            if outputs is not None:
                self.outputs.value = outputs
        elif leaves is not None:
            self.release.value = leaves
        return self._check()

    def _unanswered(self) -> bool:
        """Nothing chosen yet: checking would only give the answer away."""
        if self.ask == "release":
            return self.release.value is None
        return self.fate.value is None

    def _check(self) -> Verdict:
        if self._unanswered():
            verdict = Verdict(False, (CHOOSE_FIRST,))
            self.feedback.value = (
                f'<div class="kjoin-viz kjoin-feedback" style="color:#a66d00">{html.escape(CHOOSE_FIRST)}</div>'
            )
            return verdict  # no stepper: it would show the step, i.e. the answer
        verdict = self.verdict = self._verdict()
        report("answer", {**self._place(), "answer": self._answer_text(), "correct": verdict.correct})
        if verdict.correct:
            self._show_answer()
            return verdict
        # a wrong answer: first what is wrong and a question; the rule, the answer and the stepper only on request
        self._close_stepper()  # a stepper left open by an earlier right answer would show this answer
        self._show_hints(with_rule=False)
        self.rule_button.layout.display = None
        self.answer_button.layout.display = None
        return verdict

    def _show_hints(self, with_rule: bool) -> None:
        """The first stage (what is wrong, and a question), and with ``with_rule`` the second (the rule)."""
        verdict = self.verdict
        if verdict is None:
            return
        items = "".join(f"<li>{html.escape(line)}</li>" for line in verdict.hints)
        rule = (
            f'<div class="kjoin-rule" style="margin:4px 0"><b>The rule:</b> {html.escape(verdict.rule)}</div>'
            if with_rule and verdict.rule
            else ""
        )
        then = "show the answer" if with_rule else "show the rule, or the answer"
        self.feedback.value = (
            f'<div class="kjoin-viz kjoin-feedback kjoin-hint" style="color:#a66d00"><b>Not yet.</b><ul>{items}</ul>'
            f"{rule}<i>Change your answer and check again, or {then}.</i></div>"
        )

    def _show_rule(self) -> None:
        """The second stage: the rule that decides this step."""
        self._show_hints(with_rule=True)
        self.rule_button.layout.display = "none"

    def _place(self) -> dict[str, Any]:
        """Where the exercise is, for the room's tally: its id, notebook and number in the notebook."""
        return {"exercise": self.exercise, "notebook": self.notebook, "number": self.number}

    def _answer_text(self) -> str:
        """The learner's answer in a line (for the room's tally)."""
        if self.ask == "release":
            return "still waiting at the end" if self.release.value == STILL_WAITING else f"step {self.release.value}"
        return f"{self.fate.value}; {self.outputs.value.strip() or 'none'}"

    def _show_answer(self) -> None:
        """The second stage: the engine's answer, why, and the step in the stepper."""
        verdict = self.verdict
        if verdict is None:
            return
        colour = "#1a6b1a" if verdict.correct else "#a66d00"
        items = "".join(f"<li>{html.escape(line)}</li>" for line in verdict.lines)
        self.feedback.value = (
            f'<div class="kjoin-viz kjoin-feedback kjoin-answer" style="color:{colour}"><ul>{items}</ul></div>'
        )
        self.answer_button.layout.display = "none"
        self.rule_button.layout.display = "none"
        self._open_stepper()

    def _verdict(self) -> Verdict:
        s = self.trace.steps[self.index]
        if self.ask == "release":
            answer = self.release.value
            right = answer == self.leaves
            if answer == STILL_WAITING:
                said = "it is still waiting when the input ends"
            elif answer == self.index:
                said = "it leaves at once"
            else:
                said = f"it leaves at {self._step_option(answer)}"
            head = "Right: " if right else f"Not quite: you said {said}; "
            if right:
                return Verdict(True, (head + self._leave_text(),))
            stages = release_feedback(self.trace, self.index, self.leaves, answer, self.view.stream_time)
            return Verdict(False, (head + self._leave_text(),), (f"Not quite: {said}.", stages.question), stages.rule)
        label = fate_label(s)
        lines = []
        if self.fate.value == label.tone:
            fate_right = True
            lines.append(f"Fate: right, it {self.tones[label.tone]} ({label}).")
        else:
            fate_right = False
            said, engine = self.tones[self.fate.value], self.tones[label.tone]
            lines.append(f"Fate: not quite. You said it {said}; the engine says it {engine} ({label}).")
        outputs_right, text = self._compare_outputs(self.outputs.value)
        lines.append(text)
        lines.append(f"Why: {show_text(s.explain)}")
        hints: list[str] = ["What the record does: " + ("right." if fate_right else "not that.")]
        if not outputs_right:
            hints += ["What the step emits: not quite.", *output_hints(self.trace, self.index, self._said, self.order)]
        else:
            hints.append("What the step emits: right.")
        stages = feedback(self.trace, self.index, None if fate_right else self.fate.value)
        hints.append(stages.question)
        return Verdict(fate_right and outputs_right, tuple(lines), tuple(hints), stages.rule)

    def _compare_outputs(self, answer: str) -> tuple[bool, str]:
        emitted = self.trace.steps[self.index].outputs
        forms = [form for o in emitted for form in (o.render(), show_output(o))]
        known = forms + [f"{form}@{o.ts}" for o in emitted for form in (o.render(), show_output(o))]
        exact = {_compact(k) for k in known}
        said = [item if _compact(item) in exact else _tidy(item) for item in parse_outputs(_tidy(answer), known=known)]
        said = [item for item in said if item]
        if [item.lower() for item in said] in _NO_OUTPUT:
            said = []
        self._said = said
        with_ts = any(re.search(r"@-?\d+$", item) for item in said)  # not the @ of key@[start, end)
        expected = [o.render() + (f"@{o.ts}" if with_ts else "") for o in emitted]
        said, expected = [_compact(s) for s in said], [_compact(e) for e in expected]
        shown = _outputs_text(emitted) or "no output"
        if said == expected:
            return True, f"Outputs: right ({shown})."
        if sorted(said) == sorted(expected):
            if not self.order:
                return True, f"Outputs: right ({shown}; the engine emits them in this order)."
            return False, f"Outputs: the right ones, in another order. The engine emits them in this order: {shown}."
        missing = [o for o in expected if o not in said]
        extra = [o for o in said if o not in expected]
        parts = [f"Outputs: not quite. You wrote {', '.join(said) or 'no output'}; the engine emitted {shown}."]
        if missing:
            parts.append(f"Missing: {', '.join(missing)}.")
        if extra:
            parts.append(f"Not emitted at this step: {', '.join(extra)}.")
        return False, " ".join(parts)

    def _close_stepper(self) -> None:
        self.stepper = None
        self.stepper_box.children = ()

    def _reveal(self) -> None:
        self.answer_button.layout.display = "none"
        self.feedback.value = (
            f'<div class="kjoin-viz kjoin-feedback kjoin-solution"><b>{html.escape(self.solution())}</b></div>'
        )
        self._open_stepper()

    def _open_stepper(self) -> None:
        at = self.index
        if self.ask == "release":  # the step it leaves at (or the end of the input)
            at = len(self.trace.steps) - 1 if self.leaves == STILL_WAITING else self.leaves
        if self.stepper is None:
            self.stepper = Stepper(self.trace, step=at, view=self.view)
            self.stepper_box.children = (widgets.HTML(f"<b>step {at} in the stepper:</b>"), self.stepper)
        else:
            self.stepper.step = at

    def _show_trainer(self) -> None:
        self.solution_button.layout.display = None if _TRAINER["on"] else "none"

    def __repr__(self) -> str:
        # the widget's text form, stored in the notebook: the question, never an answer
        return f"Predict: {self.prompt}"
