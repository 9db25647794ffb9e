"""Charts of traces: pure functions from finished traces to ``alt.Chart``.

- :func:`timeline_chart`: every input record at its timestamp, one lane per side, coloured by
  its fate;
- :func:`outputs_chart`: results versus tombstones per join variant as processing goes on,
  per step or cumulative;
- :func:`drops_chart`: dropped records by reason;
- :func:`era_diff_chart`: the steps whose outputs differ between two semantics eras.

The data is computed here with pandas and embedded in the chart, so ``chart.to_dict()``
holds exactly what is drawn. A chart never carries more than :data:`MAX_ROWS` rows (altair's
limit): long traces are aggregated into buckets of consecutive steps (or timestamps).

Rendering offline: with altair 6, JupyterLab's built-in renderer shows a placeholder and the
default HTML renderer loads Vega from a CDN, which fails without internet. The course uses
the ``svg`` renderer (:func:`use_offline_renderer`): vl-convert draws the chart in the kernel
and the notebook stores a plain SVG — no JavaScript, nothing fetched, and the same picture in
JupyterLab, in a saved notebook and on GitHub. ``alt.JupyterChart`` in offline mode would add
interactivity, but it needs a live widget frontend and a bundled Vega per view; the course's
charts are read, not explored, so the static SVG is the simpler dependable choice.
"""

from __future__ import annotations

import math
from typing import Mapping

import altair as alt
import pandas as pd

from kjoin.records import Output
from kjoin.render import cell
from kjoin.trace import Trace

from .labels import TONE_COLOURS, TONES, fate_label
from .values import show_value, show_output

__all__ = ["timeline_chart", "outputs_chart", "drops_chart", "era_diff_chart", "use_offline_renderer", "MAX_ROWS"]

MAX_ROWS = 5000
"""altair's default ``max_rows``: no chart here embeds more rows than this."""

WIDTH = 520
"""Chart width in pixels: fits a notebook with the file browser open."""
SCREEN_HEIGHT = 420
"""A faceted chart's facets share this height, so the whole chart fits one screen."""


def _integer_axis(title: str, top: int | None = None) -> alt.Axis:
    """An axis of whole numbers (steps, counts, milliseconds): no 2.5 between 2 and 3. ``top``: the
    largest value drawn; up to 10 every whole number gets its tick (Vega still puts a tick at 0.5 on an
    axis up to 1, which ``format="d"`` prints as a second "1")."""
    if top is not None and top <= 10:
        return alt.Axis(title=title, format="d", values=list(range(0, max(top, 1) + 1)))
    return alt.Axis(title=title, format="d", tickMinStep=1)


def offline_renderer(spec: dict, **metadata) -> tuple[dict, dict]:
    """Both pictures of a chart, drawn in the kernel by vl-convert: SVG (sharp, and compared by
    nbval) and PNG (what JupyterLab shows for a notebook it does not trust yet, e.g. one opened
    without running: it renders no stored SVG there, but it does render PNG)."""
    from altair.vegalite.v6.display import png_renderer, svg_renderer

    svg = svg_renderer(spec, **metadata)
    png = png_renderer(spec, **metadata)
    png_data, png_metadata = png if isinstance(png, tuple) else (png, {})
    return {**svg, **png_data}, png_metadata


alt.renderers.register("kjoin-offline", offline_renderer)


def use_offline_renderer() -> None:
    """Render charts as static SVG and PNG drawn in the kernel (see the module docstring for why)."""
    alt.renderers.enable("kjoin-offline")


def timeline_chart(trace: Trace) -> alt.Chart:
    """Input records at their timestamps, a lane per side, coloured by fate.

    Null values are drawn as hollow points. A trace longer than :data:`MAX_ROWS` is shown as
    counts per timestamp bucket, side and fate instead of one point per record.
    """
    steps = trace.steps_frame()
    if len(steps) <= MAX_ROWS:
        data = steps[["step", "side", "key", "value", "ts", "fate", "reason"]].copy()
        data["key"] = data["key"].map(show_value)
        data["value"] = data["value"].map(show_value)
        data["null_value"] = data["value"] == "null"
        labels = [fate_label(s) for s in trace.steps]  # the words and colours every view uses
        data["what"] = [label.text for label in labels]
        data["tone"] = [label.tone for label in labels]
        return (
            alt.Chart(data, title="input records", width=WIDTH)
            .mark_point(size=80, filled=True)
            .encode(
                x=alt.X("ts:Q", axis=_integer_axis("timestamp (ms)")),
                y=alt.Y("side:N", sort=["left", "right"], title=None),
                color=alt.Color("tone:N", title="the record", scale=_tone_scale(data["tone"])),
                shape=alt.Shape("null_value:N", title="null value"),
                tooltip=["step:Q", "side:N", "key:N", "value:N", "ts:Q", alt.Tooltip("what:N", title="what happened")],
            )
        )
    width = _bucket_width(steps["ts"].min(), steps["ts"].max(), MAX_ROWS // 10)
    steps["ts_start"] = (steps["ts"] // width) * width
    data = steps.groupby(["ts_start", "side", "fate"], as_index=False).size().rename(columns={"size": "records"})
    return (
        alt.Chart(data, title=f"input records per {width} ms", width=WIDTH)
        .mark_circle()
        .encode(
            x=alt.X("ts_start:Q", axis=_integer_axis("timestamp (ms)")),
            y=alt.Y("side:N", sort=["left", "right"], title=None),
            color=alt.Color("fate:N", title="fate"),
            size=alt.Size("records:Q", title="records"),
            tooltip=["ts_start:Q", "side:N", "fate:N", "records:Q"],
        )
    )


def _tone_scale(tones) -> alt.Scale:
    """The tones present, in :data:`~kjoin_viz.labels.TONES` order, with their colours."""
    present = [tone for tone in TONES if tone in set(tones)]
    return alt.Scale(domain=present, range=[TONE_COLOURS[tone] for tone in present])


OUTPUT_KINDS = ("result", "result with null", "tombstone")
"""What an outputs chart counts: a result with a partner on both sides, a left/outer result with null for
the missing side (emitted at once, or released by the outer-join buffer), and a tombstone."""

OUTPUT_COLOURS = {
    "result": TONE_COLOURS["joined"],
    "result with null": TONE_COLOURS["null-result"],
    "tombstone": TONE_COLOURS["tombstone"],
}
"""The colours every other view gives these outputs (:data:`~kjoin_viz.labels.TONE_COLOURS`)."""


def output_kind(output: Output) -> str:
    """The :data:`OUTPUT_KINDS` entry of one output: a result is "with null" when the joiner got null for
    one side (``A-null``, ``null-f``; in a table-table join also after the partner's row was deleted)."""
    if output.tombstone:
        return "tombstone"
    return "result with null" if output.left is None or output.right is None else "result"


def outputs_frame(traces: Mapping[str, Trace], cumulative: bool = False) -> pd.DataFrame:
    """``variant, step, output, count``: results, results with null and tombstones emitted per step
    (bucket). A variant that emits none of a kind has no rows for it: no empty series."""
    length = max(len(t.steps) for t in traces.values())
    bucket = max(1, math.ceil(length * len(OUTPUT_KINDS) * len(traces) / MAX_ROWS))
    frames = []
    for name, trace in traces.items():
        counts = {kind: [0] * math.ceil(length / bucket) for kind in OUTPUT_KINDS}
        for step in trace.steps:
            for output in step.outputs:
                counts[output_kind(output)][step.index // bucket] += 1
        for label, per_bucket in counts.items():
            if not any(per_bucket):
                continue
            frame = pd.DataFrame(
                {
                    "variant": name,
                    "step": [i * bucket for i in range(len(per_bucket))],
                    "output": label,
                    "count": per_bucket,
                }
            )
            if cumulative:
                frame["count"] = frame["count"].cumsum()
            frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["variant", "step", "output", "count"])
    return pd.concat(frames, ignore_index=True)


def outputs_chart(traces: Mapping[str, Trace], cumulative: bool = False) -> alt.Chart:
    """Results, results with null and tombstones per variant over processing order (``{"inner": trace, …}``).

    Per step (bars) or cumulative (lines); long traces are summed over buckets of steps.
    """
    data = outputs_frame(traces, cumulative)
    what = "cumulative outputs" if cumulative else "outputs per step"
    kinds = [kind for kind in OUTPUT_KINDS if kind in set(data["output"])]
    height = max(50, min(140, SCREEN_HEIGHT // max(len(traces), 1) - 30))
    chart = alt.Chart(data, title=what, width=WIDTH, height=height)
    mark = chart.mark_line(point=True, interpolate="step-after") if cumulative else chart.mark_bar()
    return mark.encode(
        x=(
            alt.X("step:Q", axis=_integer_axis("step (processing order)"), scale=alt.Scale(domainMin=0))
            if cumulative
            else alt.X("step:O", axis=alt.Axis(title="step (processing order)", labelAngle=0, labelOverlap="parity"))
        ),
        y=alt.Y(
            "count:Q", axis=_integer_axis("outputs", _highest(data, cumulative)), stack=None if cumulative else True
        ),
        color=alt.Color(
            "output:N", scale=alt.Scale(domain=kinds, range=[OUTPUT_COLOURS[k] for k in kinds]), title=None
        ),
        row=alt.Row("variant:N", title=None, sort=list(traces), header=alt.Header(labelAngle=0, labelAlign="left")),
        tooltip=["variant:N", "step:Q", "output:N", "count:Q"],
    )


def _highest(data: pd.DataFrame, cumulative: bool) -> int:
    """The tallest bar (stacked per variant and step) or line point of an outputs chart."""
    if data.empty:
        return 0
    if cumulative:
        return int(data["count"].max())
    return int(data.groupby(["variant", "step"])["count"].sum().max())


def drops_chart(trace: Trace) -> alt.Chart:
    """How many input records were dropped (lost for good: not an out-of-order version, which
    is kept), by reason."""
    reasons = [s.reason.value if s.reason else "none" for s in trace.steps if fate_label(s).lost]
    data = pd.Series(reasons, dtype="object").value_counts().rename_axis("reason").reset_index(name="records")
    data = data.sort_values(["records", "reason"], ascending=[False, True], ignore_index=True)
    return (
        alt.Chart(data, title="dropped records by reason", width=WIDTH)
        .mark_bar()
        .encode(
            x=alt.X("records:Q", axis=_integer_axis("dropped records")),
            y=alt.Y("reason:N", sort="-x", title=None),
            tooltip=["reason:N", "records:Q"],
        )
    )


def era_diff_frame(before: Trace, after: Trace) -> pd.DataFrame:
    """The steps where two traces of the same input emit different outputs: ``added`` counts the
    outputs (value and timestamp) only the ``after`` trace emits at that step, ``removed`` those only
    ``before`` emits, ``change`` is ``added - removed``. A step whose output changes (``A-a`` becomes
    ``A-b``) has one of each."""
    if len(before.steps) != len(after.steps):
        raise ValueError("the two traces must run the same input records")
    rows = []
    for a, b in zip(before.steps, after.steps):
        old = [f"{show_output(o)}@{o.ts}" for o in a.outputs]
        new = [f"{show_output(o)}@{o.ts}" for o in b.outputs]
        if old == new:
            continue
        added = list(new)
        removed = []
        for output in old:
            if output in added:
                added.remove(output)
            else:
                removed.append(output)
        rows.append(
            {
                "step": a.index,
                "ts": a.record.ts,
                "side": a.record.side.value,
                "value": show_value(a.record.value),
                "before": cell(a) or "(none)",
                "after": cell(b) or "(none)",
                "added": len(added),
                "removed": len(removed),
                "change": len(added) - len(removed),
            }
        )
    columns = ["step", "ts", "side", "value", "before", "after", "added", "removed", "change"]
    return pd.DataFrame(rows, columns=columns).head(MAX_ROWS)


def era_diff_chart(before: Trace, after: Trace, names: tuple[str, str] | None = None) -> alt.Chart:
    """Per differing step, the outputs the ``after`` era adds (up, green) and removes (down, red).

    ``names`` label the eras; by default their semantics (``0.10.2`` and ``3.1``). Only the
    first :data:`MAX_ROWS` differing steps are drawn. An output that moves to another step is
    removed at one step and added at the other; one that changes is both at its step.
    """
    first, second = names or (str(before.scenario.semantics), str(after.scenario.semantics))
    frame = era_diff_frame(before, after)
    added, removed = f"only under {second}", f"only under {first}"
    data = pd.concat(
        [
            frame.assign(output=added, count=frame["added"]),
            frame.assign(output=removed, count=-frame["removed"]),
        ],
        ignore_index=True,
    )
    data = data[data["count"] != 0].sort_values(["step", "output"], ignore_index=True)
    low = int(min(0, data["count"].min())) if len(data) else 0
    high = int(max(0, data["count"].max())) if len(data) else 0
    axis = (
        alt.Axis(title="outputs", format="d", values=list(range(low, high + 1)))
        if high - low <= 10
        else alt.Axis(title="outputs", format="d", tickMinStep=1)
    )
    return (
        alt.Chart(data, title=f"outputs that differ: {first} → {second}", width=WIDTH, height=160)
        .mark_bar()
        .encode(
            x=alt.X("step:O", axis=alt.Axis(title="step (processing order)", labelAngle=0, labelOverlap="parity")),
            y=alt.Y("count:Q", axis=axis, scale=alt.Scale(domain=[low, high])),
            color=alt.Color(
                "output:N",
                scale=alt.Scale(domain=[added, removed], range=[TONE_COLOURS["joined"], TONE_COLOURS["dropped"]]),
                title=None,
            ),
            tooltip=[
                "step:Q",
                "ts:Q",
                "side:N",
                "value:N",
                alt.Tooltip("before:N", title=first),
                alt.Tooltip("after:N", title=second),
            ],
        )
    )


def _bucket_width(low: int, high: int, buckets: int) -> int:
    return max(1, math.ceil((high - low + 1) / buckets))
