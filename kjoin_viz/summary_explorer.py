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
from .static import StaticView

__all__ = ["SummaryExplorer", "first_surprise"]

FIXED = ("scenario", "partition", "key", "matched", "tombstones")
PROTOCOL = frozenset({Reason.SUBSCRIPTION_SENT, Reason.RESPONSE_SENT, Reason.NO_PROPAGATE, Reason.NO_SUBSCRIBER})
"""A foreign-key join's steps that only pass its messages on (a row subscribes, a task answers, a
customer nobody subscribes to is stored): its everyday traffic, not a surprise."""
ROUTINE = PROTOCOL | {Reason.TABLE_UPDATE}
"""Steps that are no surprise: the message traffic, and a table update (which never emits in a
stream-table join)."""


def first_surprise(trace: Any) -> int:
    """The first step whose record produced a result with a null partner or did not join (0 if none);
    a foreign-key join's message traffic and a table update (:data:`ROUTINE`) are no surprise."""
    for step in trace.steps:
        if step.fate is not Fate.JOINED and step.reason not in ROUTINE:
            return step.index
        if any(o.kind in (OutputKind.UNMATCHED, OutputKind.WINDOW_CLOSED) for o in step.outputs):
            return step.index
    return 0


SURPRISES = "surprises"
"""The explorer's own column: a row's count of surprising results and records (every counted column
but matches, tombstones, the ``null-results`` total, and routine steps: a foreign-key join's message
traffic, table updates and records waiting in their window, :data:`ROUTINE_COLUMNS`)."""
NULL_RESULTS = "null-results"
"""The summary's count of results with a null partner: what the explorer ranks keys by when the summary has it."""
ROUTINE_COLUMNS = frozenset({"matched", "tombstones", NULL_RESULTS, *(r.value for r in ROUTINE | {Reason.WINDOW_OPEN})})
"""Counted columns that are no surprise (a record column's side prefix, ``left-``/``right-``, aside): a record
that waits in its window shows up again as its result, joined or with null."""


def _routine(column: str) -> bool:
    for side in ("left-", "right-"):
        if column.startswith(side):
            column = column[len(side) :]
    return column in ROUTINE_COLUMNS


TABLE_HEIGHT = "22em"
"""The table scrolls inside this height, so that the picker and the stepper stay in sight."""


class SummaryExplorer(StaticView, widgets.VBox):
    """``run``: a :class:`kjoin.spark.SparkRun` (or anything with ``summary()`` and
    ``trace(partition, key=...)``); ``drill``: how a row's trace is made (default: the key's
    drill-down).

    It opens on the rows that matter: sorted by :data:`NULL_RESULTS` (then :data:`SURPRISES`) where the
    summary counts results with a null partner, else by :data:`SURPRISES`; only the rows with a surprise
    shown (a checkbox shows them all), the columns that are zero in every row hidden, and the
    picker above the table. The "sort by" dropdown and the order button follow :meth:`sort_by`."""

    def __init__(self, run: Any, limit: int = 200, drill: Callable[[int, Any], Any] | None = None) -> None:
        summary = run.summary()
        counted = [c for c in summary.columns if c not in FIXED[:3]]
        surprising = [c for c in counted if not _routine(c)]
        rank = [NULL_RESULTS] if NULL_RESULTS in counted else []
        if surprising:
            from pyspark.sql import functions as F

            summary = summary.withColumn("_surprises", sum((F.col(f"`{c}`") for c in surprising), F.lit(0))).orderBy(
                *(F.desc(f"`{c}`") for c in [*rank, "_surprises"]), "partition", "key"
            )
            rows = [r.asDict() for r in summary.limit(limit).collect()]
        else:
            rows = [r.asDict() for r in summary.orderBy("partition", "key").limit(limit).collect()]
        counts = [c for c in summary.columns if c not in (*FIXED[:3], "_surprises")]
        self.columns = [*FIXED[:3], *([SURPRISES] if surprising else []), *counts]
        self.rows = [
            {**{c: row[c] for c in (*FIXED[:3], *counts)}, **({SURPRISES: row["_surprises"]} if surprising else {})}
            for row in rows
        ]
        self.rows = [{c: row[c] for c in self.columns} for row in self.rows]
        self.shown_columns = [c for c in self.columns if c in FIXED[:3] or any(r[c] for r in self.rows)]
        decode = getattr(run, "decode_key", lambda key: key)  # a scenario run's frames carry keys as JSON text
        self._drill = drill or (lambda partition, key: run.trace(partition=partition, key=decode(key)))
        self.sort_column = (rank or [SURPRISES])[0] if surprising else "key"
        self.descending = bool(surprising)
        self.stepper: Stepper | None = None
        self.selected: dict[str, Any] | None = None
        self._syncing = False
        self.sorter = widgets.Dropdown(options=self.shown_columns, value=self.sort_column, description="sort by")
        self.order = widgets.ToggleButton(value=self.descending, description="descending")
        any_surprise = any(r.get(SURPRISES) for r in self.rows)
        self.only_surprising = widgets.Checkbox(
            value=any_surprise, description="only rows with a surprise", indent=False, layout={"width": "auto"}
        )
        self.table = widgets.HTML()
        self.note = widgets.HTML()
        self.picker = widgets.Dropdown(options=[], description="open", layout={"width": "100%", "max_width": "520px"})
        self.detail = widgets.VBox()
        self.sorter.observe(lambda change: self._follow(change["new"], self.order.value), names="value")
        self.order.observe(lambda change: self._follow(self.sorter.value, change["new"]), names="value")
        self.only_surprising.observe(lambda _: self._render(), names="value")
        self._rendering = False
        self.picker.observe(
            lambda change: None if self._rendering or change["new"] is None else self.select(change["new"]),
            names="value",
        )
        controls = widgets.HBox([self.sorter, self.order, self.only_surprising], layout={"flex_flow": "row wrap"})
        super().__init__([controls, self.picker, self.note, self.table, self.detail], layout={"max_width": "100%"})
        self.add_class("kjoin-summary-explorer")
        self._render()

    def visible(self) -> list[int]:
        """The positions in :attr:`rows` of the rows on show (with a surprise, unless all are asked for)."""
        if not self.only_surprising.value:
            return list(range(len(self.rows)))
        return [i for i, r in enumerate(self.rows) if r.get(SURPRISES)]

    def _follow(self, column: str, descending: bool) -> None:
        if not self._syncing:  # a click in the controls, not sort_by setting them
            self.sort_by(column, descending)

    def sort_by(self, column: str, descending: bool = True) -> list[dict[str, Any]]:
        """Sort the rows by ``column`` (ties: partition, key); returns them. The "sort by" dropdown and
        the order button show the new order (a column hidden for being zero everywhere is shown)."""
        if column not in self.columns:
            raise KeyError(f"{column!r}: the columns are {', '.join(self.columns)}")
        self.sort_column, self.descending = column, descending
        present = sorted((r for r in self.rows if r[column] is not None), key=lambda r: (r["partition"], str(r["key"])))
        present.sort(key=lambda r: r[column], reverse=descending)  # stable: ties stay by partition, key
        self.rows = present + [r for r in self.rows if r[column] is None]
        if column not in self.shown_columns:
            self.shown_columns = [c for c in self.columns if c in self.shown_columns or c == column]
        self._syncing = True
        try:
            self.sorter.options = self.shown_columns
            self.sorter.value = column
            self.order.value = descending
        finally:
            self._syncing = False
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

    def _hidden_note(self) -> str:
        shown = self.visible()
        hidden = [c for c in self.columns if c not in self.shown_columns]
        parts = [
            f"{len(shown)} of {len(self.rows)} rows"
            + (" (those with a surprise)" if len(shown) < len(self.rows) else "")
        ]
        if hidden:
            parts.append(f"hidden, zero in every row: {', '.join(hidden)}")
        return "; ".join(parts)

    def text(self) -> str:
        """The table as plain text (for notebooks compared by nbval): the rows and columns on show,
        and a last line saying what is hidden."""
        lines = [" | ".join(self.shown_columns)]
        lines += [
            " | ".join("" if self.rows[i][c] is None else str(self.rows[i][c]) for c in self.shown_columns)
            for i in self.visible()
        ]
        return "\n".join([*lines, f"({self._hidden_note()})"])

    def _render(self) -> None:
        shown = self.visible()
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.shown_columns)
        body = "".join(
            "<tr>"
            + "".join(
                f"<td>{html.escape('' if self.rows[i][c] is None else str(self.rows[i][c]))}</td>"
                for c in self.shown_columns
            )
            + "</tr>"
            for i in shown
        )
        self.table.value = (
            f'<div style="max-height:{TABLE_HEIGHT};overflow:auto">'
            f"<table class='kjoin-summary'><tr>{head}</tr>{body}</table></div>"
        )
        self.note.value = (
            f'<div class="kjoin-viz" style="font-size:12px;color:#555">{html.escape(self._hidden_note())}</div>'
        )
        self._rendering = True
        try:
            self.picker.options = [
                (f"{i}: partition {self.rows[i]['partition']}, key {self.rows[i]['key']}", i) for i in shown
            ]
            self.picker.value = None
        finally:
            self._rendering = False
