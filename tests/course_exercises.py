"""Every exercise of the course, as the notebooks define it: each notebook's code run up to its last exercise,
with ``Predict`` recording its arguments instead of drawing a widget.

A notebook's code runs in a namespace of its own, its cells in order, stopping after the cell of its last
exercise; cells that only draw (charts, steppers) run too, since later cells may read what they define."""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import nbformat

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@dataclass(frozen=True)
class Exercise:
    notebook: str
    number: int
    trace: Any
    step: int
    ask: str
    prompt: str | None

    @property
    def name(self) -> str:
        return f"{self.notebook[:2]}-{self.number}"


def _code_cells(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, 4).cells if c.cell_type == "code"]


def notebooks_with_exercises() -> list[str]:
    return [p.name for p in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) if "Predict(" in "".join(_code_cells(p))]


@lru_cache(maxsize=None)
def exercises_of(notebook: str) -> tuple[Exercise, ...]:
    """The exercises of ``notebook`` (a file name), in the order the notebook shows them."""
    import kjoin_viz

    path = NOTEBOOKS / notebook
    cells = _code_cells(path)
    last = max(i for i, source in enumerate(cells) if "Predict(" in source)
    found: list[Exercise] = []

    def record(trace: Any, step: int, ask: str = "fate+outputs", prompt: str | None = None) -> None:
        found.append(Exercise(notebook, len(found) + 1, trace, step, ask, prompt))

    namespace: dict[str, Any] = {"__name__": "__course__"}
    real = kjoin_viz.Predict
    here = os.getcwd()
    kjoin_viz.Predict = record  # the notebooks call kjoin_viz.Predict or import Predict from kjoin_viz
    try:
        os.chdir(NOTEBOOKS)
        with contextlib.redirect_stdout(io.StringIO()):
            for source in cells[: last + 1]:
                exec(compile(source, f"{notebook}", "exec"), namespace)
    finally:
        kjoin_viz.Predict = real
        os.chdir(here)
    return tuple(found)
