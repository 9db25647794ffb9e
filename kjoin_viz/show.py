"""A static view of one step, for a walkthrough cell.

``kjoin_viz.show_step(trace, 15)`` returns an object IPython displays as HTML (the fate label,
the timeline zoomed on that step, the explanation, the outputs and the stores with the rows the
step wrote highlighted) and as readable text (``text/plain``: what :meth:`Stepper.text` prints).
Unlike a widget it is stored in the notebook with its cell's output, so after Run All every
walkthrough cell still shows its own step, and a notebook opened without running shows it too.
The stepper draws its panes with the same renderer (:class:`~kjoin_viz.step_view.StepView`).
"""

from __future__ import annotations

import html
from typing import Any, Iterable, Mapping, Sequence

from kjoin.render import format_table, seed_table
from kjoin.trace import Trace

from .step_view import CELL, CSS, view_of
from .values import show_text
from .variants import seed_table_html

__all__ = ["show_step", "StepDisplay", "Shown", "table", "variants_table"]


class StepDisplay:
    """One step of a trace as a displayable: ``_repr_html_`` and a text ``repr``."""

    def __init__(self, trace: Trace, step: int, internals: bool = False) -> None:
        if not -len(trace.steps) <= step < len(trace.steps):
            raise IndexError(f"step {step} is outside this trace (0 to {len(trace.steps) - 1})")
        self.trace = trace
        self.step = step % len(trace.steps)
        self.view = view_of(trace)
        self.internals = internals

    def _repr_html_(self) -> str:
        return self.view.html(self.step, self.internals)

    def text(self) -> str:
        """The step as plain text (the same as ``Stepper.text()`` at this step)."""
        return self.view.text(self.step, self.internals)

    def __repr__(self) -> str:
        return self.text().rstrip("\n")


def show_step(trace: Trace, step: int, internals: bool = False) -> StepDisplay:
    """A static, self-contained view of ``step`` (negative steps count from the end); ``internals=True`` shows
    Kafka's bookkeeping in the stores too (old values, hashes, the clock's rows, store keys)."""
    return StepDisplay(trace, step, internals)


class Shown:
    """Anything shown as HTML in a notebook and as text (``repr``) everywhere else."""

    def __init__(self, html_text: str, text: str) -> None:
        self.html, self.text = html_text, text

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], caption: str = "") -> Shown:
    """A table shown as HTML (never wrapped text) with the aligned text table as its ``repr``."""
    rows = [[show_text(str(value)) for value in row] for row in rows]  # values as values, not JSON text
    head = "".join(f'<th style="{CELL}">{html.escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f'<td style="{CELL}">{html.escape(v)}</td>' for v in row) + "</tr>" for row in rows)
    title = f'<caption style="text-align:left;font-weight:bold">{html.escape(caption)}</caption>' if caption else ""
    page = (
        f'<div class="kjoin-viz kjoin-table" style="max-width:100%;overflow-x:auto">{CSS}'
        f'<table style="border-collapse:collapse;font:12px monospace">{title}<tr>{head}</tr>{body}</table></div>'
    )
    return Shown(page, (caption + "\n" if caption else "") + format_table(header, rows))


def variants_table(traces: Mapping[str, Trace], with_ts: bool = False) -> Shown:
    """The seeds' table of several traces of one input (``ts | left input | right input | inner | …``) as
    HTML, results and tombstones told apart; its ``repr`` is :func:`kjoin.render.seed_table`."""
    return Shown(seed_table_html(traces, None, with_ts), seed_table(traces, with_ts))
