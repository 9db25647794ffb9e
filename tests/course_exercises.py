"""Every exercise of the course, as the notebooks define it: each notebook's code run up to its last exercise,
with ``Predict`` recording its arguments instead of drawing a widget.

A notebook's code runs in a namespace of its own, its cells in order, stopping after the cell of its last
exercise; cells that only draw (charts, steppers) run too, since later cells may read what they define.

Notebook 09's exercises read drill-downs of a Spark run (minutes); :func:`exercises_09` builds the same traces with
the reference engine from the same planted topics: a stream-table join's drill-down of a key is the reference
engine over that key's records in the task's processing order (``tests/test_spark_why.py`` holds the two equal),
and :data:`NOTEBOOK_09_EXERCISES` is the notebook's own exercise code, which the test checks is still there."""

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
    order: bool = False

    @property
    def name(self) -> str:
        return f"{self.notebook[:2]}-{self.number}"


def _code_cells(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, 4).cells if c.cell_type == "code"]


def notebooks_with_exercises() -> list[str]:
    return [p.name for p in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) if "Predict(" in "".join(_code_cells(p))]


NOTEBOOK_09_EXERCISES = (
    'deleted = diagnoses["partner-deleted"].trace\nkjoin_viz.Predict(deleted, deleted.find(offset=offset, side="left")'
    ".index)",
    'tombstone = deleted.find(lambda s: s.record.side.value == "right" and s.record.value is None)\n'
    "kjoin_viz.Predict(deleted, tombstone.index)",
    'customer = trace.find(lambda s: s.record.side.value == "right" and s.record.key == key)\n'
    "kjoin_viz.Predict(trace, customer.index)",
)
"""The lines of notebook 09 that define its three exercises, as :func:`exercises_09` rebuilds them."""


def exercises_09() -> tuple[Exercise, ...]:
    """Notebook 09's exercises, from its planted topics (``planted(160, 2)``) without Spark."""
    import kjoin
    from kjoin.ordering import merge_by_timestamp
    from kjoin.records import Record, Side
    from kjoin.spark.debug.whycheck import planted

    orders, customers, causes = planted(160, 2)
    first_order: dict[str, tuple[int, int]] = {}
    for (partition, offset), cause in sorted(causes.items()):
        first_order.setdefault(cause, (partition, offset))
    topics = [[Record(side, *row) for row in rows] for side, rows in ((Side.LEFT, orders), (Side.RIGHT, customers))]
    merged = merge_by_timestamp(*topics)

    def key_trace(cause: str) -> tuple[Any, Any]:
        partition, offset = first_order[cause]
        order = next(r for r in merged if r.side is Side.LEFT and (r.partition, r.offset) == (partition, offset))
        records = [
            {"side": r.side.value, "key": r.key, "value": r.value, "ts": r.ts}
            for r in merged
            if r.key == order.key and r.partition == partition
        ]
        trace = kjoin.run(kjoin.Scenario.from_records("stream-table", "left", records))
        return trace, trace.find(
            lambda s: (s.record.side, s.record.value, s.record.ts) == (order.side, order.value, order.ts)
        )

    name = "09_debug_your_own_topics.ipynb"
    deleted, order = key_trace("partner-deleted")
    tombstone = deleted.find(lambda s: s.record.side.value == "right" and s.record.value is None)
    later, _ = key_trace("partner-processed-later")
    customer = later.find(lambda s: s.record.side.value == "right")
    return (
        Exercise(name, 1, deleted, order.index, "fate+outputs", None),
        Exercise(name, 2, deleted, tombstone.index, "fate+outputs", None),
        Exercise(name, 3, later, customer.index, "fate+outputs", None),
    )


@lru_cache(maxsize=None)
def exercises_of(notebook: str) -> tuple[Exercise, ...]:
    """The exercises of ``notebook`` (a file name), in the order the notebook shows them."""
    import kjoin_viz

    if notebook.startswith("09"):
        return exercises_09()

    path = NOTEBOOKS / notebook
    cells = _code_cells(path)
    last = max(i for i, source in enumerate(cells) if "Predict(" in source)
    found: list[Exercise] = []

    def record(
        trace: Any, step: int, ask: str = "fate+outputs", prompt: str | None = None, order: bool = False
    ) -> None:
        found.append(Exercise(notebook, len(found) + 1, trace, step, ask, prompt, order))

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
