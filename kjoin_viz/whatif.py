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
from kjoin.render import cell, format_table
from kjoin.scenario import Scenario
from kjoin.trace import Trace

from .show import Shown
from .step_view import CELL, CSS
from .values import show_value
from .static import StaticView

__all__ = ["what_if", "WhatIf", "compare_text", "compare_html", "what_if_table"]


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


def _compare_rows(original: Trace, changed: Trace) -> list[list]:
    rows = []
    for a, b in zip(original.steps, changed.steps):
        r = a.record
        rows.append(["*" if cell(a) != cell(b) else "", r.ts, r.side.value, show_value(r.value), cell(a), cell(b)])
    return rows


def compare_text(original: Trace, changed: Trace) -> str:
    """Each input record with its outputs before and after the change; ``*`` marks a change."""
    return format_table(["", "ts", "side", "value", "original", "what if"], _compare_rows(original, changed))


def compare_html(original: Trace, changed: Trace) -> str:
    """:func:`compare_text` as an HTML table; the changed rows are highlighted."""
    head = "".join(f'<th style="{CELL}">{h}</th>' for h in ("ts", "side", "value", "original", "what if"))
    body = []
    for mark, *cells in _compare_rows(original, changed):
        style = ' class="changed" style="background:#fff3b0"' if mark else ""
        body.append(f"<tr{style}>" + "".join(f'<td style="{CELL}">{html.escape(str(c))}</td>' for c in cells) + "</tr>")
    return (
        f'<table class="kjoin-compare" style="border-collapse:collapse;font:12px monospace"><tr>{head}</tr>'
        f"{''.join(body)}</table>"
    )


def _options_text(options: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in options.items())


def what_if_table(scenario: Scenario, **options: int) -> Shown:
    """A static comparison (HTML, and text as its ``repr``): the scenario's outputs per input
    record next to those with ``options`` changed, e.g. ``what_if_table(s, grace_ms=0)``."""
    original, changed = kjoin.run(scenario), kjoin.run(what_if(scenario, **options))
    title = f"what if {_options_text(options)}:"
    page = (
        f'<div class="kjoin-viz kjoin-whatif-table" style="max-width:100%;overflow-x:auto">{CSS}'
        f"<b>{html.escape(title)}</b>{compare_html(original, changed)}</div>"
    )
    return Shown(page, f"{title}\n{compare_text(original, changed)}")


class WhatIf(StaticView, widgets.VBox):
    """Sliders over the scenario's options; every move re-runs the engine and compares.

    ``WhatIf(scenario, grace_ms=0)`` starts with those options already changed. Options the
    engine refuses (a history retention below the grace period, …) are reported in the widget,
    in red, with the engine's message; ``trace`` and ``error`` always belong to the options on
    the sliders."""

    def __init__(self, scenario: Scenario, max_ms: int = 60, **start: int) -> None:
        self.scenario = scenario
        self.original = kjoin.run(scenario)
        options = _options(scenario)
        unknown = set(start) - set(options)
        if unknown:
            raise TypeError(
                f"this scenario has no slider for {', '.join(sorted(unknown))} (it has: {', '.join(options)})"
            )
        options.update(start)
        self.sliders = {name: _slider(name, value, max_ms) for name, value in options.items()}
        for slider in self.sliders.values():
            slider.observe(lambda _: self._rerun(), names="value")
        self.header = widgets.HTML()
        self.result = widgets.HTML()
        self.trace: Trace | None = self.original
        self.error: str | None = None
        sliders = widgets.HBox(list(self.sliders.values()), layout={"flex_flow": "row wrap", "max_width": "100%"})
        super().__init__([sliders, self.header, self.result], layout={"max_width": "100%"})
        self.add_class("kjoin-whatif")
        self._rerun()

    def options(self) -> dict[str, int]:
        return {name: slider.value for name, slider in self.sliders.items()}

    def _rerun(self) -> None:
        try:
            self.trace, self.error = kjoin.run(what_if(self.scenario, **self.options())), None
        except ValueError as error:  # ScenarioError and friends: the message names the fix
            self.trace, self.error = None, str(error)
        title = html.escape(f"what if {_options_text(self.options())}:")
        self.header.value = f'<div class="kjoin-viz kjoin-whatif-header">{CSS}<b>{title}</b></div>'
        if self.error is not None:
            self.result.value = (
                f'<div class="kjoin-viz kjoin-error" '
                f'style="color:#b22;border:1px solid #b22;padding:4px 8px">'
                f"<b>the engine cannot run these options:</b> {html.escape(self.error)}</div>"
            )
        else:
            self.result.value = (
                f'<div class="kjoin-viz" style="max-width:100%;overflow-x:auto">'
                f"{compare_html(self.original, self.trace)}</div>"
            )

    def text(self) -> str:
        """The current options and the comparison table (or the engine's error), as text."""
        head = f"what if {_options_text(self.options())}:"
        if self.error is not None:
            return f"{head}\nthe engine cannot run these options: {self.error}\n"
        return f"{head}\n{compare_text(self.original, self.trace)}\n"

    def __repr__(self) -> str:
        return f"WhatIf({_options_text(self.options())})"
