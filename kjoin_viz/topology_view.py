"""A topology as a graph, stepped through record by record: :class:`TopologyStepper`.

The graph (:func:`topology_svg`) draws every node of a :class:`kjoin.Topology` as a box in columns from the sources
(left) to the sinks (right): a source names its topic and partitions, a sink its topic, a join its kind and variant.
A repartition topic sits between the sink that writes it and the source that reads it (a dashed arrow: the record
crosses the topic there, and a task of the next sub-topology takes it later); sub-topologies are shaded bands. For
the current step:

* the nodes the record passed are lit in the colour of what each did (joined green, dropped red, stored grey, a
  pass-through amber), the edges between them drawn thick, and the topic the record came from (an internal topic's
  dashed arrow, or a source's topic) marked;
* beside each node, its state after the step: the rows of its stores (a table's rows, a join's buffered records, a
  foreign-key join's subscriptions) in the task that took the record, at most :data:`STATE_ROWS` each.

Built as an SVG string (no JavaScript; a step costs a few milliseconds), like :mod:`kjoin_viz.timeline`; its
``viewBox`` scales it to the notebook's width (readable at 1280 px: a topology of 12 columns keeps 11 px text).
:class:`TopologyStepper` is the widget: a slider, previous/next, the jumps to the next output and the next drop, the
graph, and in words what the step did (``text()``: the same, for notebooks compared by nbval).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from kjoin.fates import Fate
from kjoin.topology import TopologyTrace

from .labels import TONE_COLOURS
from .show import Shown, table
from .stepper import SliderStep
from .values import show_text, show_value
from .static import StaticView

__all__ = ["TopologyStepper", "topology_svg", "topology_layout", "Layout", "node_state", "step_text", "steps_table"]

WIDTH = 1240
"""The widest a graph is drawn; a graph of few columns is narrower (:data:`PITCH` each) and shown at its size."""
PITCH = 140
BOX_H, ROW_H, TOP, MARGIN, BLOCK_GAP = 34, 84, 40, 14, 22
STATE_ROWS = 3
"""At most this many rows of each node's state are drawn beside it (with how many more)."""
FATE_FILL = {
    Fate.JOINED: "#d8f0d8",
    Fate.DROPPED: "#f6d5d5",
    Fate.NO_MATCH: "#e8e8e8",
    Fate.STORED: "#e4e7f2",
    Fate.BUFFERED: "#fbe9c6",
    Fate.FORWARDED: "#fdf1c9",
}
FATE_STROKE = {
    Fate.JOINED: TONE_COLOURS["joined"],
    Fate.DROPPED: TONE_COLOURS["dropped"],
    Fate.NO_MATCH: TONE_COLOURS["no-match"],
    Fate.STORED: "#4a5a8a",
    Fate.BUFFERED: TONE_COLOURS["held"],
    Fate.FORWARDED: "#a66d00",
}
BAND = ("#f5f8fc", "#fbf7f0", "#f4faf4", "#faf4f8")
"""Sub-topology bands, in turn."""


@dataclass(frozen=True)
class Layout:
    """Where each node sits: ``boxes[name] = (x, y)`` of its box's top left; ``column_width`` and ``box_width``."""

    boxes: dict[str, tuple[float, float]]
    box_width: float
    height: int
    subtopology: dict[str, int]
    width: int = WIDTH


def _label(node: Any, graph: Any) -> tuple[str, str]:
    """A node's two lines: what it is, and its name or topic."""
    op, params = node.op, node.params
    if op in ("stream", "table", "repartition-source"):
        topic = graph.topics[node.topic]
        kind = {"stream": "stream", "table": "table", "repartition-source": "repartition"}[op]
        versioned = " (versioned)" if params.get("history_retention_ms") is not None else ""
        return f"{kind}{versioned} · {topic.partitions or '?'}p", node.topic
    if op in ("to", "repartition-sink"):
        return ("to repartition" if op == "repartition-sink" else "to topic"), node.topic
    if op in ("stream-stream", "stream-table", "table-table", "fk"):
        other = {"stream-stream": "windowed", "stream-table": "table", "table-table": "tables", "fk": "FK"}
        return f"{params['variant']} join · {other[op]}", node.name
    if op in ("table-filter", "table-map-values"):
        stored = " · stored" if params.get("materialized") else ""
        return f"{'filter' if op == 'table-filter' else 'map values'} · table{stored}", node.name
    if op == "filter" and params.get("negated"):
        return "filter not", node.name
    if op in ("process", "process_values") and params.get("store"):
        return f"{op.replace('_', ' ')} · store {params['store']}", node.name
    return op.replace("_", " "), node.name


def topology_layout(topology: Any) -> Layout:
    """Columns by depth from the sources (a repartition topic's source one column after its sink), rows in the
    order the nodes were added, grouped by sub-topology."""
    graph = topology.graph
    nodes = sorted(graph.nodes.values(), key=lambda n: n.order)
    sinks = {n.topic: n for n in nodes if n.op == "repartition-sink"}
    column: dict[str, int] = {}
    for node in nodes:
        if node.op == "repartition-source":
            column[node.name] = column[sinks[node.topic].name]  # under (or over) its sink, in its own block
        elif node.op in ("stream", "table"):
            column[node.name] = 0
        else:
            column[node.name] = 1 + max((column[p.name] for p in node.parents), default=-1)
    sub_of = graph.subtopology_of()
    columns = max(column.values()) + 1
    pitch = min(PITCH, (WIDTH - 2 * MARGIN) / columns)
    box_width = pitch - 22
    boxes: dict[str, tuple[float, float]] = {}
    top = TOP
    for number in sorted(set(sub_of.values())):  # a block of rows per sub-topology, in Kafka's numbering
        rows: dict[int, int] = {}
        for node in (n for n in nodes if sub_of[n.name] == number):
            col = column[node.name]
            rows[col] = rows.get(col, 0) + 1
            boxes[node.name] = (MARGIN + col * pitch, top + (rows[col] - 1) * ROW_H)
        top += max(rows.values()) * ROW_H + BLOCK_GAP
    height = int(top - BLOCK_GAP + 20)
    return Layout(boxes, box_width, height, sub_of, int(2 * MARGIN + columns * pitch))


def node_state(trace: TopologyTrace, step: int, task: str | None = None) -> dict[str, list[str]]:
    """Each node's stores after ``step`` in ``task`` (default: the step's task), as short lines
    (``c1: Ann@3`` for a row; the clock as ``stream time 12``)."""
    from kjoin.stores import kind_of

    task = trace[step].task if task is None else task
    lines: dict[str, list[str]] = {}
    for store, entries in trace.state_at(step).items():
        if store.task != task:
            continue
        node, _, name = store.name.partition(": ")
        kind = kind_of(store)
        rows = [] if kind is None else kind.records_of(entries)
        lines.setdefault(node if name else "task", []).extend(_row_text(row, name) for row in rows)
    return lines


def _row_text(row: dict[str, Any], store: str) -> str:
    if "clock" in row:
        return f"{row['clock']} {row['ms']}"
    key = show_value(row.get("key"))
    value = row.get("value", row.get("record", row.get("left")))
    ts = f"@{row['ts']}" if row.get("ts") is not None else ""
    prefix = f"{store} " if store and store not in ("table", "store") else ""
    return f"{prefix}{key}: {_short(show_value(value), 40)}{ts}"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def topology_svg(trace: TopologyTrace, step: int, layout: Layout | None = None) -> str:
    """The topology with ``step``'s record path lit and each node's state beside it, as an SVG string."""
    topology = trace.topology
    layout = layout or topology_layout(topology)
    current = trace[step]
    visits = {visit.node: visit for visit in current.visits}
    state = node_state(trace, step)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {layout.width} {layout.height}" width="{layout.width}" '
        f'style="max-width:100%;height:auto;font-family:sans-serif" class="kjoin-topology" role="img" '
        f'aria-label="the topology at step {step}">',
        _marker("arrow", "#999"),
        _marker("lit", "#333"),
    ]
    parts += _bands(trace, layout)
    parts += _edges(trace, step, layout, visits)
    graph = topology.graph
    for name, (x, y) in layout.boxes.items():
        parts.append(_box(graph, graph.nodes[name], (x, y), layout.box_width, visits.get(name), state.get(name, [])))
    task_clock = ", ".join(state.get("task", []))
    parts.append(
        f'<text x="{MARGIN}" y="16" font-size="12" fill="#333">step {step}: task {current.task} took '
        f"{html.escape(_short(show_text(current.record.describe()), max(20, int(layout.width / 7) - 40)))}"
        + (f" · {html.escape(task_clock)}" if task_clock else "")
        + "</text>"
    )
    parts.append("</svg>")
    return "".join(parts)


def _marker(name: str, colour: str) -> str:
    return (
        f'<defs><marker id="kjoin-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" markerHeight="9" '
        f'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/>'
        "</marker></defs>"
    )


def _bands(trace: TopologyTrace, layout: Layout) -> list[str]:
    """A shaded band behind each sub-topology's boxes, labelled."""
    parts = []
    for number in sorted(set(layout.subtopology.values())):
        names = [n for n, s in layout.subtopology.items() if s == number]
        xs = [layout.boxes[n][0] for n in names]
        ys = [layout.boxes[n][1] for n in names]
        x0, y0 = min(xs) - 8, min(ys) - 16
        x1, y1 = max(xs) + layout.box_width + 8, max(ys) + ROW_H - 14
        parts.append(
            f'<rect x="{x0:.0f}" y="{y0:.0f}" width="{x1 - x0:.0f}" height="{y1 - y0:.0f}" rx="8" '
            f'fill="{BAND[number % len(BAND)]}" stroke="#dde" />'
            f'<text x="{x0 + 6:.0f}" y="{y0 + 11:.0f}" font-size="10" fill="#778">sub-topology {number}</text>'
        )
    return parts


def _edges(trace: TopologyTrace, step: int, layout: Layout, visits: dict[str, Any]) -> list[str]:
    """Parent to child; a repartition topic's sink to its source, dashed: lit when the step's record came from that
    topic, amber when the step wrote to it (a task takes the record later)."""
    graph = trace.topology.graph
    current = trace[step]
    written = {record.topic for record in current.wrote}
    parts = []
    w = layout.box_width
    for node in graph.nodes.values():
        for parent in node.parents:
            lit = node.name in visits and parent.name in visits
            port = ""
            if node.op in ("stream-stream", "stream-table", "table-table", "fk") and len(node.parents) == 2:
                port = "" if parent is node.parents[0] else "R"
            # a stream-table join that took a left record looked its table up: that edge is drawn blue
            looked_up = port == "R" and node.op == "stream-table" and node.name in visits and not lit
            parts.append(
                _arrow(layout.boxes[parent.name], layout.boxes[node.name], w, lit, False, port, lookup=looked_up)
            )
        if node.op == "repartition-sink":
            source = node.params["source"]
            crossed = current.record.topic == node.topic
            pending = node.topic in written
            label = "taken now" if crossed else "written: taken later" if pending else "repartition topic"
            parts.append(_topic_arrow(layout.boxes[node.name], layout.boxes[source.name], w, crossed, pending, label))
    return parts


def _topic_arrow(
    sink: tuple[float, float], source: tuple[float, float], w: float, lit: bool, pending: bool, label: str
) -> str:
    """A repartition topic: dashed, from its sink down (or up) to its source in the same column."""
    x = sink[0] + w / 2
    down = source[1] > sink[1]
    y0 = sink[1] + BOX_H if down else sink[1]
    y1 = source[1] - 2 if down else source[1] + BOX_H + 2
    colour, width = ("#333", 2.6) if lit else ("#c77d00", 2.2) if pending else ("#aaa", 1.2)
    marker = "lit" if lit else "arrow"
    return (
        f'<path d="M{x:.0f},{y0:.0f} L{x:.0f},{y1:.0f}" fill="none" stroke="{colour}" stroke-width="{width}" '
        f'stroke-dasharray="6 4" marker-end="url(#kjoin-{marker})"/>'
        f'<text x="{x + 6:.0f}" y="{(y0 + y1) / 2 + 4:.0f}" font-size="11" fill="{colour}">{html.escape(label)}</text>'
    )


def _arrow(
    start: tuple[float, float],
    end: tuple[float, float],
    w: float,
    lit: bool,
    dashed: bool,
    label: str,
    pending: bool = False,
    lookup: bool = False,
) -> str:
    x0, y0 = start[0] + w, start[1] + BOX_H / 2
    x1, y1 = end[0] - 2, end[1] + BOX_H / 2
    if label == "R" or x1 <= x0:  # a join's right side (a table it looks up) comes in from below or above
        x1 = end[0] + w - 18
        y1 = end[1] + BOX_H + 2 if start[1] >= end[1] else end[1] - 2
        if abs(start[1] - end[1]) < 1:  # the same row: under the boxes between them
            low = y1 + 16
            turn = x0 + 10
            path = (
                f"M{x0:.0f},{y0:.0f} Q{turn:.0f},{y0:.0f} {turn:.0f},{y0 + 12:.0f} L{turn:.0f},{low:.0f} "
                f"L{x1:.0f},{low:.0f} L{x1:.0f},{y1:.0f}"
            )
        else:
            path = f"M{x0:.0f},{y0:.0f} C{x1:.0f},{y0:.0f} {x1:.0f},{y0:.0f} {x1:.0f},{y1:.0f}"
    else:
        mid = (x0 + x1) / 2
        path = f"M{x0:.0f},{y0:.0f} C{mid:.0f},{y0:.0f} {mid:.0f},{y1:.0f} {x1:.0f},{y1:.0f}"
    colour, width = (
        ("#333", 2.6) if lit else ("#c77d00", 2.2) if pending else ("#2b6f8a", 2.2) if lookup else ("#aaa", 1.2)
    )
    label = "looked up" if lookup else label
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    path = (
        f'<path d="{path}" fill="none" '
        f'stroke="{colour}" stroke-width="{width}"{dash} marker-end="url(#kjoin-{"lit" if lit else "arrow"})"/>'
    )
    if label:
        below = label in ("R", "looked up") and y1 > end[1]
        lx, ly, anchor = (x1 + 5, y1 + 11, "start") if below else (x1 - 10, y1 - 5, "end")
        lx, ly = (x1 + 4, y1 + 10) if label in ("R", "looked up") else (lx, ly)
        path += (
            f'<text x="{lx:.0f}" y="{ly:.0f}" font-size="10" fill="{colour}" text-anchor="{anchor}">'
            f"{html.escape(label)}</text>"
        )
    return path


def _box(graph: Any, node: Any, at: tuple[float, float], w: float, visit: Any, state: list[str]) -> str:
    """A node's box (lit in its visit's colours), its kind and name, and its state's rows under it."""
    x, y = at
    kind, name = _label(node, graph)
    fill = FATE_FILL.get(visit.fate, "#fff") if visit else "#fff"
    stroke = FATE_STROKE.get(visit.fate, "#333") if visit else "#889"
    chars = max(int(w / 6.2), 8)
    title = html.escape(node.name + (f": {show_text(visit.explain)}" if visit else ""))
    parts = [
        f'<g class="kjoin-node{" kjoin-lit" if visit else ""}" data-node="{html.escape(node.name)}">',
        f"<title>{title}</title>",
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{w:.0f}" height="{BOX_H}" rx="5" fill="{fill}" stroke="{stroke}" '
        f'stroke-width="{2.4 if visit else 1}"/>',
        f'<text x="{x + 6:.0f}" y="{y + 13:.0f}" font-size="10" fill="#555">{html.escape(_short(kind, chars))}</text>',
        f'<text x="{x + 6:.0f}" y="{y + 27:.0f}" font-size="12" font-weight="bold" fill="#222">'
        f"{html.escape(_short(name, chars - 2))}</text>",
    ]
    lines = state[:STATE_ROWS] + ([f"+{len(state) - STATE_ROWS} more"] if len(state) > STATE_ROWS else [])
    for i, line in enumerate(lines):
        parts.append(
            f'<text x="{x + 4:.0f}" y="{y + BOX_H + 12 + 11 * i:.0f}" font-size="10" fill="#336" '
            f'font-family="monospace" paint-order="stroke" stroke="#fff" stroke-width="3">'
            f"{html.escape(_short(line, int((w + 6) / 6.3)))}</text>"
        )
    parts.append("</g>")
    return "".join(parts)


def steps_table(trace: TopologyTrace) -> Shown:
    """One row per step (``kjoin run``'s table of a topology: task, record, fate, the nodes it passed, what it
    wrote), shown as a table with its values as values (:meth:`kjoin.topology.TopologyTrace.table` writes them as
    JSON)."""
    rows = []
    for s in trace.steps:
        fate = s.fate.value if s.reason is None else f"{s.fate.value} ({s.reason.value})"
        wrote = ", ".join(w.describe() for w in s.wrote)
        rows.append((s.index, s.task, s.record.describe(), fate, " → ".join(v.node for v in s.visits), wrote))
    return table(("step", "task", "record", "fate", "nodes", "wrote"), rows)


def step_text(trace: TopologyTrace, step: int) -> str:
    """What ``step`` did, in words: the record, each node it passed with what that node did, what it wrote, and
    the state beside every node (the text of :func:`topology_svg`)."""
    current = trace[step]
    lines = [f"step {step} of {len(trace) - 1}: task {current.task} took {show_text(current.record.describe())}"]
    for visit in current.visits:
        port = f" ({visit.port})" if visit.port else ""
        lines.append(f"  {visit.node}{port}: {visit.fate.value}: {show_text(visit.explain)}")
    for written in current.wrote:
        lines.append(f"  wrote {show_text(written.describe())}")
    for node, rows in node_state(trace, step).items():
        if node != "task" and rows:
            lines.append(f"  state of {node} (task {current.task}): " + "; ".join(rows[:STATE_ROWS]))
    return "\n".join(lines)


class TopologyStepper(SliderStep, StaticView, widgets.VBox):
    """Steps through a topology's trace: the graph with the record's path lit and every node's state beside it."""

    def __init__(self, trace: TopologyTrace, step: int = 0) -> None:
        if not isinstance(trace, TopologyTrace) or not trace.steps:
            raise ValueError("TopologyStepper shows a topology's trace (kjoin.Topology.run) with at least one step")
        self.trace = trace
        self.layout_ = topology_layout(trace.topology)
        last = len(trace) - 1
        self.slider = widgets.IntSlider(min=0, max=last, description="step", layout={"width": "420px"})
        self.buttons = {
            name: widgets.Button(description=name, layout={"width": "auto"})
            for name in ("previous", "next", "next output", "next drop")
        }
        self._moves = {
            "previous": lambda: max(self.step - 1, 0),
            "next": lambda: min(self.step + 1, last),
            "next output": lambda: self._next(lambda s: any(trace._is_output(w.topic) for w in s.wrote)),
            "next drop": lambda: self._next(lambda s: any(v.fate is Fate.DROPPED for v in s.visits)),
        }
        for name, button in self.buttons.items():
            button.on_click(lambda _, move=self._moves[name]: self._go(move()))
        self.graph = widgets.HTML()
        self.explain = widgets.HTML()
        self.slider.observe(lambda change: self._show(change["new"]), names="value")
        controls = widgets.HBox([self.slider, *self.buttons.values()], layout={"flex_flow": "row wrap"})
        super().__init__([controls, self.graph, self.explain], layout={"max_width": "100%"})
        self.add_class("kjoin-topology-stepper")
        self.step = step

    def _next(self, test: Any) -> int | None:
        return next((s.index for s in self.trace.steps[self.step + 1 :] if test(s)), None)

    def _go(self, step: int | None) -> None:
        if step is not None:
            self.step = step

    def press(self, name: str) -> int:
        """Click the button called ``name``; returns the step on show."""
        self.buttons[name].click()
        return self.step

    def _show(self, step: int) -> None:
        self.graph.value = topology_svg(self.trace, step, self.layout_)
        text = html.escape(step_text(self.trace, step))
        self.explain.value = f'<pre style="font-size:12px;white-space:pre-wrap">{text}</pre>'
        for name, button in self.buttons.items():
            target = self._moves[name]()
            button.disabled = target is None or target == step

    def text(self) -> str:
        """What the stepper shows, in words (for notebooks compared by nbval)."""
        return step_text(self.trace, self.step)

    def __repr__(self) -> str:
        return f"TopologyStepper(step {self.step} of {len(self.trace) - 1})"
