"""The stepper: walk through a finished trace one input record at a time.

Controls: play/pause (with its speed), a slider, first/previous/next/last, and jumps to the
next step that emits an output, a tombstone, or drops its record. Every move sets
``stepper.step``; the view (timeline, state tables, outputs, log, explanation) is then read
from the trace by :class:`~kjoin_viz.step_view.StepView` (for a foreign-key join the
timeline pane draws the messages travelling between the left and right tasks instead).
The panes are ``HTML`` widgets whose ``value`` is replaced, so nothing is printed into the
notebook while stepping.

:func:`seek` is what the benchmark times: the Python cost of moving to one step.
"""

from __future__ import annotations

import time
from typing import Iterable

import ipywidgets as widgets

from kjoin.trace import Trace

from .step_view import StepView, counter, view_of
from .static import StaticView

__all__ = ["Stepper", "SliderStep", "seek", "time_seeks"]

SPEEDS = {"slow": 1200, "normal": 600, "fast": 250, "fastest": 80}
"""Play speeds: milliseconds between steps."""


class SliderStep:
    """The step on show is the slider's value: setting ``step`` moves the slider, and the
    widget's ``_show(step)`` redraws (also when the slider is already there)."""

    slider: widgets.IntSlider

    def _show(self, step: int) -> None:  # pragma: no cover - every widget defines it
        raise NotImplementedError

    @property
    def step(self) -> int:
        """The step on show; setting it moves the slider and the view."""
        return self.slider.value

    @step.setter
    def step(self, step: int) -> None:
        if not self.slider.min <= step <= self.slider.max:
            raise IndexError(f"step {step} is outside this trace ({self.slider.min} to {self.slider.max})")
        if self.slider.value == step:
            self._show(step)
        self.slider.value = step


class Stepper(SliderStep, StaticView, widgets.VBox):
    """A widget that steps through ``trace``; ``Stepper(trace, step=3)`` starts at step 3."""

    def __init__(self, trace: Trace, step: int = 0, view: StepView | None = None) -> None:
        if not trace.steps:
            raise ValueError("the trace has no steps to show")
        self.view = view or view_of(trace)  # one index per trace, shared with show_step and Predict
        self.trace = trace
        last = len(trace.steps) - 1
        self.play = widgets.Play(min=0, max=last, interval=SPEEDS["normal"], description="play")
        self.speed = widgets.Dropdown(
            options=list(SPEEDS), value="normal", description="speed", layout={"width": "170px"}
        )
        self.slider = widgets.IntSlider(
            min=0,
            max=last,
            description="step",
            continuous_update=True,
            layout={"width": "100%", "max_width": "420px", "min_width": "220px"},
        )
        widgets.jslink((self.play, "value"), (self.slider, "value"))
        self.buttons = {
            name: widgets.Button(description=name, tooltip=name, layout={"width": "auto"})
            for name in ("first", "previous", "next", "last", "next output", "next tombstone", "next drop")
        }
        self.internals = widgets.Checkbox(
            value=False, description="show Kafka's internals", indent=False, layout={"width": "auto"}
        )
        self.internals.observe(lambda _: self._show(self.step), names="value")
        self.panes = {name: widgets.HTML() for name in ("header", "timeline", "explain", "outputs", "state", "log")}
        for name, pane in self.panes.items():
            pane.add_class(f"kjoin-pane-{name}")
        moves = {
            "first": lambda: 0,
            "previous": lambda: max(self.step - 1, 0),
            "next": lambda: min(self.step + 1, last),
            "last": lambda: last,
            "next output": lambda: self.view.next_output(self.step),
            "next tombstone": lambda: self.view.next_tombstone(self.step),
            "next drop": lambda: self.view.next_drop(self.step),
        }
        self._moves = moves
        for name, button in self.buttons.items():
            button.on_click(lambda _, move=moves[name]: self._go(move()))
        self.slider.observe(lambda change: self._show(change["new"]), names="value")
        self.speed.observe(lambda change: setattr(self.play, "interval", SPEEDS[change["new"]]), names="value")
        wrap = {"flex_flow": "row wrap", "max_width": "100%"}
        controls = widgets.VBox(
            [
                widgets.HBox([self.play, self.speed, self.slider], layout=wrap),
                widgets.HBox([*self.buttons.values(), self.internals], layout=wrap),
            ]
        )
        super().__init__([controls, *self.panes.values()], layout={"max_width": "100%"})
        self.add_class("kjoin-stepper")
        self.step = step

    # -- moving -------------------------------------------------------------------------

    def press(self, name: str) -> int:
        """Click the button called ``name`` (``"next"``, ``"next drop"``, …); returns the step."""
        self.buttons[name].click()
        return self.step

    def _go(self, step: int | None) -> None:
        if step is not None:  # a jump with nothing ahead stays put
            self.step = step

    def _show(self, step: int) -> None:
        panes = self.view.panes(step, self.internals.value)
        for name, pane in self.panes.items():
            pane.value = getattr(panes, name)
        # a button whose move would stay put is disabled (nothing ahead, or already there)
        for name, button in self.buttons.items():
            target = self._moves[name]()
            button.disabled = target is None or target == step
            button.tooltip = f"{name}: nothing ahead" if target is None else f"{name}: step {target}"

    # -- reading ------------------------------------------------------------------------
    def text(self) -> str:
        """What the stepper shows, as plain text (for notebooks compared by nbval)."""
        return self.view.text(self.step, self.internals.value)

    def __repr__(self) -> str:
        return f"Stepper({counter(self.step, len(self.trace.steps))})"


def seek(view: StepView, step: int) -> None:
    """Compute everything the stepper shows for ``step``: the benchmark's unit of work."""
    view.panes(step)


def time_seeks(view: StepView, steps: Iterable[int]) -> list[float]:
    """Seconds (wall clock, in Python) of :func:`seek` for each of ``steps``."""
    timings = []
    for step in steps:
        start = time.perf_counter()
        seek(view, step)
        timings.append(time.perf_counter() - start)
    return timings
