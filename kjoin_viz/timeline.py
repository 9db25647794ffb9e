"""The event timeline around the current record, drawn as a small SVG.

Two lanes, left on top and right below; each record sits at its timestamp. A record with a
null value is drawn hollow with a cross, a record that arrived after a later timestamp (out
of order) has a red ring, records not processed yet are faded, and the current record is
larger, with its join window (``[ts - before, ts + after]`` for a left record, mirrored for
a right one, from 0 at the earliest) drawn as a band on the other lane: the records it can join with.

Only the records near the current step are drawn (:data:`NEIGHBOURS` each way), so a step of
a long trace costs the same as one of a short trace. The SVG is built as a string rather
than with altair: rendering a Vega-Lite chart per step (through vl-convert) takes far longer
than the stepper's 50 ms budget, and a string needs no JavaScript and no internet.
"""

from __future__ import annotations

import html
from typing import Sequence

from kjoin.records import Side, render_value
from kjoin.trace import Trace

__all__ = ["timeline_svg", "join_range", "NEIGHBOURS"]

NEIGHBOURS = 30
WIDTH, HEIGHT, MARGIN = 640, 96, 40
LANE_Y = {Side.LEFT: 30, Side.RIGHT: 66}


def join_range(trace: Trace, step: int) -> tuple[int, int] | None:
    """The timestamps the other side may have to join with the record of ``step`` (inclusive),
    or ``None`` for a join without a window."""
    window = trace.scenario.window
    if window is None:
        return None
    record = trace.steps[step].record
    before, after = (window.before_ms, window.after_ms) if record.side is Side.LEFT else (window.after_ms, window.before_ms)
    return max(record.ts - before, 0), record.ts + after  # no timestamp is negative: Kafka clamps at 0


def timeline_svg(trace: Trace, step: int, late: Sequence[bool] | None = None) -> str:
    """The SVG of the records near ``step``; ``late[i]`` marks out-of-order arrivals."""
    first, last = max(0, step - NEIGHBOURS), min(len(trace.steps), step + NEIGHBOURS + 1)
    near = trace.steps[first:last]
    current = trace.steps[step].record
    band = join_range(trace, step)
    times = [s.record.ts for s in near] + (list(band) if band else [])
    low, high = min(times), max(times)
    span = max(high - low, 1)

    def x(ts: int) -> float:
        return round(MARGIN + (ts - low) * (WIDTH - 2 * MARGIN) / span, 1)

    parts = [f'<svg class="kjoin-timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="monospace" font-size="10">']
    for side, y in LANE_Y.items():
        parts.append(f'<line x1="{MARGIN}" y1="{y}" x2="{WIDTH - MARGIN}" y2="{y}" stroke="#bbb"/>')
        parts.append(f'<text x="2" y="{y + 3}">{side}</text>')
    if band:
        y = LANE_Y[current.side.other]
        parts.append(f'<rect x="{x(band[0])}" y="{y - 10}" width="{max(x(band[1]) - x(band[0]), 1)}" height="20" fill="#9cf" opacity="0.35">'
                     f"<title>join window {band[0]}..{band[1]}</title></rect>")
    for s in near:
        r = s.record
        cx, cy = x(r.ts), LANE_Y[r.side]
        radius = 7 if s.index == step else 4
        hollow = r.value is None
        fill = "white" if hollow else ("#1f5fbf" if s.index == step else "#555")
        stroke = "#d00" if late and late[s.index] else ("#1f5fbf" if s.index == step else "#555")
        opacity = "0.35" if s.index > step else "1"
        label = html.escape(f"step {s.index}: {r.side} {render_value(r.key)}={render_value(r.value)} @ {r.ts}")
        parts.append(f'<g opacity="{opacity}"><circle cx="{cx}" cy="{cy}" r="{radius}" fill="{fill}" stroke="{stroke}" stroke-width="2"><title>{label}</title></circle>')
        if hollow:
            parts.append(f'<path d="M{cx - 3} {cy - 3}L{cx + 3} {cy + 3}M{cx - 3} {cy + 3}L{cx + 3} {cy - 3}" stroke="#555"/>')
        if s.index == step:
            parts.append(f'<text x="{cx}" y="{cy - 10 if r.side is Side.LEFT else cy + 18}" text-anchor="middle">{html.escape(render_value(r.value))}@{r.ts}</text>')
        parts.append("</g>")
    parts.append(f'<text x="{MARGIN}" y="{HEIGHT - 2}">{low}</text><text x="{WIDTH - MARGIN}" y="{HEIGHT - 2}" text-anchor="end">{high} ms</text>')
    parts.append("</svg>")
    return "".join(parts)
