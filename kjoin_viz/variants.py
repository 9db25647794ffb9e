"""Side by side: one input run under several join variants (and semantics eras).

:func:`variant_traces` runs the engine once per column; :class:`Variants` shows the traces
as the seeds' table (``ts | left input | right input | inner | left | outer``) — results, tombstones and
"no output" styled apart — with one set of controls that moves every variant to the same
step and shows each variant's explanation, outputs and state after it.
"""

from __future__ import annotations

import dataclasses
import html
from typing import Mapping, Sequence

import ipywidgets as widgets

import kjoin
from kjoin.render import seed_table
from kjoin.scenario import VARIANTS, VERSIONED_MODES, Scenario, TableOptions
from kjoin.trace import Trace

from .step_view import CELL, CSS, StepView, _table_html
from .stepper import SliderStep
from .values import show_value, show_output
from .static import StaticView

__all__ = ["variant_traces", "versioned_mode_traces", "Variants", "seed_table_html"]


def variant_traces(
    scenario: Scenario, variants: Sequence[str] | None = None, eras: Sequence[str] | None = None
) -> dict[str, Trace]:
    """``{column: trace}``: the scenario under each variant (default: all its join allows),
    and under each era if ``eras`` are given (columns then read ``"left 3.1"``)."""
    variants = list(variants or VARIANTS[scenario.join])
    traces = {}
    for era in eras or [None]:
        base = scenario if era is None else scenario.with_semantics(era)
        for variant in variants:
            traces[variant if era is None else f"{variant} {era}"] = kjoin.run(base.with_variant(variant))
    return traces


def versioned_mode_traces(
    scenario: Scenario, modes: Sequence[str] = VERSIONED_MODES, unversioned: bool = False
) -> dict[str, Trace]:
    """``{column: trace}``: a table-table join over two versioned tables under each of
    ``modes`` (``final``: KIP-914 as shipped; ``attempt1``, ``attempt2``: seed 003's rejected
    designs); with ``unversioned``, first the same events over plain tables."""
    traces = {}
    if unversioned:
        plain = dataclasses.replace(scenario, left=TableOptions(), right=TableOptions(), versioned_mode="final")
        traces["unversioned"] = kjoin.run(plain)
    for mode in modes:
        traces[mode] = kjoin.run(dataclasses.replace(scenario, versioned_mode=mode))
    return traces


def seed_table_html(traces: Mapping[str, Trace], current: int | None = None, with_ts: bool = False) -> str:
    """The seeds' table as HTML; the row of step ``current`` is highlighted; ``with_ts``
    writes each output's timestamp."""
    columns = list(traces)
    first = traces[columns[0]]
    head = "".join(
        f'<th style="{CELL};white-space:nowrap">{html.escape(h)}</th>'
        for h in ["step", "ts", "left input", "right input", *columns]
    )
    rows = []
    for index, step in enumerate(first.steps):
        record = step.record
        value = html.escape(show_value(record.value))
        left, right = (value, "") if record.side.value == "left" else ("", value)
        td = f'<td style="{CELL}{";background:#d8e8ff;font-weight:bold" if index == current else ""}">'
        cells = "".join(f"{td}{_cell_html(traces[name].steps[index], with_ts)}</td>" for name in columns)
        mark = ' class="current"' if index == current else ""
        rows.append(f"<tr{mark}>{td}{index}</td>{td}{record.ts}</td>{td}{left}</td>{td}{right}</td>{cells}</tr>")
    return (
        f'<div class="kjoin-viz kjoin-variants" style="max-width:100%;overflow-x:auto">{CSS}'
        f'<table style="border-collapse:collapse;font:12px monospace"><tr>{head}</tr>{"".join(rows)}</table></div>'
    )


def _cell_html(step, with_ts: bool = False) -> str:
    if not step.outputs:
        return '<span class="none" style="color:#aaa">—</span>'
    return ", ".join(
        f'<span class="{"tombstone" if o.tombstone else "result"}" '
        f'style="color:{"#6b3fa0" if o.tombstone else "#1a6b1a"}">'
        f"{html.escape(show_output(o) + (f'@{o.ts}' if with_ts else ''))}</span>"
        for o in step.outputs
    )


class Variants(SliderStep, StaticView, widgets.VBox):
    """The seeds' table of several variants, with controls that move all of them together.

    ``with_ts`` writes each output's timestamp in the table (``a4-b2@4``): what tells the
    designs of a versioned join apart."""

    def __init__(self, traces: Mapping[str, Trace], step: int = 0, with_ts: bool = False) -> None:
        lengths = {len(t.steps) for t in traces.values()}
        if len(lengths) != 1:
            raise ValueError("every variant must run the same input records")
        self.traces = dict(traces)
        self.with_ts = with_ts
        self.views = {name: StepView(trace) for name, trace in self.traces.items()}
        last = lengths.pop() - 1
        self.play = widgets.Play(min=0, max=last, interval=600)
        self.slider = widgets.IntSlider(min=0, max=last, description="step")
        widgets.jslink((self.play, "value"), (self.slider, "value"))
        self.buttons = {
            name: widgets.Button(description=name, layout={"width": "auto"})
            for name in ("first", "previous", "next", "last")
        }
        moves = {
            "first": lambda: 0,
            "previous": lambda: max(self.step - 1, 0),
            "next": lambda: min(self.step + 1, last),
            "last": lambda: last,
        }
        for name, button in self.buttons.items():
            button.on_click(lambda _, move=moves[name]: setattr(self, "step", move()))
        self.table = widgets.HTML()
        # the columns wrap onto a new row rather than hide behind a scrollbar in a narrow notebook
        self.columns = {
            name: widgets.HTML(layout={"flex": "1 1 260px", "min_width": "220px", "max_width": "100%"})
            for name in self.traces
        }
        self.slider.observe(lambda change: self._show(change["new"]), names="value")
        wrap = {"flex_flow": "row wrap", "max_width": "100%"}
        super().__init__(
            [
                widgets.HBox([self.play, self.slider, *self.buttons.values()], layout=wrap),
                self.table,
                widgets.HBox(list(self.columns.values()), layout=wrap),
            ],
            layout={"max_width": "100%"},
        )
        self.add_class("kjoin-variants")
        self.step = step

    def _show(self, step: int) -> None:
        self.table.value = seed_table_html(self.traces, step, self.with_ts)
        for name, view in self.views.items():
            panes = view.panes(step)
            tables = "".join(_table_html(t) for t in view.tables(step) if t.name != "clock")
            title = f"<b>{html.escape(name)}</b>"
            self.columns[name].value = f'<div class="kjoin-viz">{title}{panes.explain}{panes.outputs}{tables}</div>'

    def text(self) -> str:
        """The seeds' table as text, with the current step marked (for nbval)."""
        lines = seed_table(self.traces, self.with_ts).splitlines()
        marked = [
            ("   " + line) if i < 2 else ((">> " if i - 2 == self.step else "   ") + line)
            for i, line in enumerate(lines)
        ]
        return "\n".join(marked) + "\n"

    def __repr__(self) -> str:
        return f"Variants({', '.join(self.traces)}; step {self.step})"
