"""What-if: change a join's window or a table's history retention, and see the outputs change.

:func:`what_if` builds the changed scenario (the same events; only the options differ) and
runs the engine on it; :class:`WhatIf` puts sliders on before/after, grace and — when the
scenario has a versioned table — history retention, and shows after each move the outputs
per input record next to the original ones. The engine does the joining; this module only
changes options and reads traces.
"""

from __future__ import annotations

import dataclasses
import html

import ipywidgets as widgets

import kjoin
from kjoin.records import render_value
from kjoin.render import cell, format_table
from kjoin.scenario import Scenario
from kjoin.trace import Trace

from .step_view import CSS

__all__ = ["what_if", "WhatIf", "compare_text"]


def what_if(scenario: Scenario, **options: int) -> Scenario:
    """The scenario with other options, the same events: ``before_ms``, ``after_ms`` and
    ``grace_ms`` of a stream-stream join's window; ``grace_ms`` of a stream-table join over a
    versioned table (KIP-923); ``history_retention_ms`` of the versioned table(s)."""
    changes: dict[str, object] = {}
    window_options = {k: options.pop(k) for k in ("before_ms", "after_ms", "grace_ms") if k in options}
    if scenario.window is not None and window_options:
        changes["window"] = dataclasses.replace(scenario.window, **window_options)
    elif set(window_options) == {"grace_ms"} and getattr(scenario, "grace_ms", None) is not None:
        changes["grace_ms"] = window_options["grace_ms"]
    elif window_options:
        raise ValueError(f"this {scenario.join} join has no window: cannot set {', '.join(window_options)}")
    if "history_retention_ms" in options:
        retention = options.pop("history_retention_ms")
        for side in ("left", "right"):
            table = getattr(scenario, side)
            if table.versioned:
                changes[side] = dataclasses.replace(table, history_retention_ms=retention)
    if options:
        raise TypeError(f"unknown option(s): {', '.join(sorted(options))}")
    return dataclasses.replace(scenario, **changes)


def _options(scenario: Scenario) -> dict[str, int]:
    """The options of ``scenario`` a slider can change, with their current values."""
    options = {}
    if scenario.window is not None:
        options = {name: getattr(scenario.window, name) for name in ("before_ms", "after_ms", "grace_ms")}
    elif getattr(scenario, "grace_ms", None) is not None:  # stream-table over a versioned table
        options["grace_ms"] = scenario.grace_ms
    versioned = [t for t in (scenario.left, scenario.right) if t.versioned]
    if versioned:
        options["history_retention_ms"] = versioned[0].history_retention_ms or 0
    return {name: value for name, value in options.items() if value is not None}


def _slider(name: str, value: int, max_ms: int) -> widgets.IntSlider:
    slider = widgets.IntSlider(value=value, min=0, max=max(max_ms, value), description=name, continuous_update=False)
    slider.style.description_width = "130px"
    return slider


def compare_text(original: Trace, changed: Trace) -> str:
    """Each input record with its outputs before and after the change; ``*`` marks a change."""
    rows = []
    for a, b in zip(original.steps, changed.steps):
        r = a.record
        rows.append(["*" if cell(a) != cell(b) else "", r.ts, r.side.value, render_value(r.value), cell(a), cell(b)])
    return format_table(["", "ts", "side", "value", "original", "what if"], rows)


class WhatIf(widgets.VBox):
    """Sliders over the scenario's options; every move re-runs the engine and compares."""

    def __init__(self, scenario: Scenario, max_ms: int = 60) -> None:
        self.scenario = scenario
        self.original = kjoin.run(scenario)
        self.sliders = {name: _slider(name, value, max_ms) for name, value in _options(scenario).items()}
        for slider in self.sliders.values():
            slider.observe(lambda _: self._rerun(), names="value")
        self.result = widgets.HTML()
        self.trace = self.original
        super().__init__([widgets.HBox(list(self.sliders.values()), layout={"flex_flow": "row wrap"}), self.result])
        self.add_class("kjoin-whatif")
        self._rerun()

    def options(self) -> dict[str, int]:
        return {name: slider.value for name, slider in self.sliders.items()}

    def _rerun(self) -> None:
        self.trace = kjoin.run(what_if(self.scenario, **self.options()))
        self.result.value = f'<div class="kjoin-viz">{CSS}<pre>{html.escape(self.text())}</pre></div>'

    def text(self) -> str:
        """The current options and the comparison table, as text."""
        options = ", ".join(f"{k}={v}" for k, v in self.options().items())
        return f"what if {options}:\n{compare_text(self.original, self.trace)}\n"

    def __repr__(self) -> str:
        return f"WhatIf({', '.join(f'{k}={v}' for k, v in self.options().items())})"
