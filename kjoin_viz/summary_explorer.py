"""The summary explorer: a Spark run's summary as a sortable table of keys and partitions;
selecting a row opens the stepper on that key's drill-down at its first surprising step.

    explorer = SummaryExplorer(run)          # run: a kjoin.spark.SparkRun
    explorer.sort_by("partner-later")        # the keys with the most such results first
    explorer.select(0)                       # the stepper on the first row's key

The summary is collected once (``limit`` rows, the most interesting first: the most results
with a null partner and dropped records). A *surprising* step is one whose record produced a
result with a null partner, or did not join (dropped, no match, buffered).
"""

from __future__ import annotations

import html
from typing import Any, Callable

import ipywidgets as widgets

from kjoin.fates import Fate, Reason
from kjoin.records import OutputKind

from .stepper import Stepper

__all__ = ["SummaryExplorer", "first_surprise"]

FIXED = ("scenario", "partition", "key", "matched", "tombstones")
PROTOCOL = frozenset({Reason.SUBSCRIPTION_SENT, Reason.RESPONSE_SENT, Reason.NO_PROPAGATE, Reason.NO_SUBSCRIBER})
"""A foreign-key join's steps that only pass its messages on (a row subscribes, a task answers, a
customer nobody subscribes to is stored): its everyday traffic, not a surprise."""


def first_surprise(trace: Any) -> int:
    """The first step whose record produced a result with a null partner or did not join (0 if none);
    a foreign-key join's message traffic (:data:`PROTOCOL`) is not a surprise."""
    for step in trace.steps:
        if step.fate is not Fate.JOINED and step.reason not in PROTOCOL:
            return step.index
        if any(o.kind in (OutputKind.UNMATCHED, OutputKind.WINDOW_CLOSED) for o in step.outputs):
            return step.index
    return 0


class SummaryExplorer(widgets.VBox):
    """``run``: a :class:`kjoin.spark.SparkRun` (or anything with ``summary()`` and
    ``trace(partition, key=...)``); ``drill``: how a row's trace is made (default: the key's
    drill-down)."""

    def __init__(self, run: Any, limit: int = 200, drill: Callable[[int, Any], Any] | None = None) -> None:
        summary = run.summary()
        counted = [c for c in summary.columns if c not in FIXED[:3]]
        routine = {"matched", "tombstones", *(reason.value for reason in PROTOCOL)}
        surprising = [c for c in counted if c not in routine]
        if surprising:
            from pyspark.sql import functions as F

            summary = summary.withColumn("_surprises", sum((F.col(f"`{c}`") for c in surprising), F.lit(0))).orderBy(
                F.desc("_surprises"), "partition", "key"
            )
            rows = [r.asDict() for r in summary.limit(limit).collect()]
        else:
            rows = [r.asDict() for r in summary.orderBy("partition", "key").limit(limit).collect()]
        self.columns = [c for c in summary.columns if c != "_surprises"]
        self.rows = [{c: row[c] for c in self.columns} for row in rows]
        decode = getattr(run, "decode_key", lambda key: key)  # a scenario run's frames carry keys as JSON text
        self._drill = drill or (lambda partition, key: run.trace(partition=partition, key=decode(key)))
        self.sort_column = "_surprises" if surprising else "key"
        self.descending = True
        self.stepper: Stepper | None = None
        self.selected: dict[str, Any] | None = None
        self.sorter = widgets.Dropdown(options=self.columns, value="key", description="sort by")
        self.order = widgets.ToggleButton(value=True, description="descending")
        self.table = widgets.HTML()
        self.picker = widgets.Dropdown(options=[], description="open")
        self.detail = widgets.VBox()
        self.sorter.observe(lambda change: self.sort_by(change["new"], self.order.value), names="value")
        self.order.observe(lambda change: self.sort_by(self.sorter.value, change["new"]), names="value")
        self._rendering = False
        self.picker.observe(
            lambda change: None if self._rendering or change["new"] is None else self.select(change["new"]),
            names="value",
        )
        super().__init__([widgets.HBox([self.sorter, self.order]), self.table, self.picker, self.detail])
        self.add_class("kjoin-summary-explorer")
        self._render()

    def sort_by(self, column: str, descending: bool = True) -> list[dict[str, Any]]:
        """Sort the rows by ``column`` (ties: partition, key); returns them."""
        if column not in self.columns:
            raise KeyError(f"{column!r}: the columns are {', '.join(self.columns)}")
        self.sort_column, self.descending = column, descending
        present = sorted((r for r in self.rows if r[column] is not None), key=lambda r: (r["partition"], str(r["key"])))
        present.sort(key=lambda r: r[column], reverse=descending)  # stable: ties stay by partition, key
        self.rows = present + [r for r in self.rows if r[column] is None]
        self._render()
        return self.rows

    def select(self, index: int) -> Stepper | None:
        """Open the stepper on row ``index``'s key drill-down at its first surprising step. A row
        that has no drill-down (a foreign-key join's row of a foreign key, whose steps are message
        deliveries) shows why instead, and gives ``None``."""
        row = self.rows[index]
        self.selected = row
        label = widgets.HTML(f"<b>partition {row['partition']}, key {html.escape(str(row['key']))}</b>")
        try:
            trace = self._drill(row["partition"], row["key"])
        except ValueError as error:
            self.stepper = None
            self.detail.children = [label, widgets.HTML(html.escape(str(error)))]
            return None
        self.stepper = Stepper(trace, step=first_surprise(trace))
        self.detail.children = [label, self.stepper]
        return self.stepper

    def text(self) -> str:
        """The table as plain text (for notebooks compared by nbval)."""
        lines = [" | ".join(self.columns)]
        lines += [" | ".join("" if r[c] is None else str(r[c]) for c in self.columns) for r in self.rows]
        return "\n".join(lines)

    def _render(self) -> None:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>"
            + "".join(f"<td>{html.escape('' if r[c] is None else str(r[c]))}</td>" for c in self.columns)
            + "</tr>"
            for r in self.rows
        )
        self.table.value = f"<table class='kjoin-summary'><tr>{head}</tr>{body}</table>"
        self._rendering = True
        try:
            self.picker.options = [
                (f"{i}: partition {r['partition']}, key {r['key']}", i) for i, r in enumerate(self.rows)
            ]
            self.picker.value = None
        finally:
            self._rendering = False
