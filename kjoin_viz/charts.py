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

from kjoin.records import render_value
from kjoin.render import cell
from kjoin.trace import Trace

from .labels import TONE_COLOURS, TONES, fate_label

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
        data["key"] = data["key"].map(render_value)
        data["value"] = data["value"].map(render_value)
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


def outputs_frame(traces: Mapping[str, Trace], cumulative: bool = False) -> pd.DataFrame:
    """``variant, step, output, count``: results and tombstones emitted per step (bucket). A
    variant that emits no tombstones (or no results) has no rows for them: no empty series."""
    length = max(len(t.steps) for t in traces.values())
    bucket = max(1, math.ceil(length * 2 * len(traces) / MAX_ROWS))
    frames = []
    for name, trace in traces.items():
        results = [0] * math.ceil(length / bucket)
        tombstones = [0] * len(results)
        for step in trace.steps:
            for output in step.outputs:
                (tombstones if output.tombstone else results)[step.index // bucket] += 1
        for label, counts in (("result", results), ("tombstone", tombstones)):
            if not any(counts):
                continue
            frame = pd.DataFrame(
                {"variant": name, "step": [i * bucket for i in range(len(counts))], "output": label, "count": counts}
            )
            if cumulative:
                frame["count"] = frame["count"].cumsum()
            frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["variant", "step", "output", "count"])
    return pd.concat(frames, ignore_index=True)


def outputs_chart(traces: Mapping[str, Trace], cumulative: bool = False) -> alt.Chart:
    """Results versus tombstones per variant over processing order (``{"inner": trace, …}``).

    Per step (bars) or cumulative (lines); long traces are summed over buckets of steps.
    """
    data = outputs_frame(traces, cumulative)
    what = "cumulative outputs" if cumulative else "outputs per step"
    kinds = [kind for kind in ("result", "tombstone") if kind in set(data["output"])]
    colours = {"result": "#2a8a2a", "tombstone": "#c0392b"}
    height = max(50, min(140, SCREEN_HEIGHT // max(len(traces), 1) - 30))
    chart = alt.Chart(data, title=what, width=WIDTH, height=height)
    mark = chart.mark_line(point=True, interpolate="step-after") if cumulative else chart.mark_bar()
    return mark.encode(
        x=(
            alt.X("step:Q", axis=_integer_axis("step (processing order)"), scale=alt.Scale(domainMin=0))
            if cumulative
            else alt.X("step:O", title="step (processing order)")
        ),
        y=alt.Y(
            "count:Q", axis=_integer_axis("outputs", _highest(data, cumulative)), stack=None if cumulative else True
        ),
        color=alt.Color("output:N", scale=alt.Scale(domain=kinds, range=[colours[k] for k in kinds]), title=None),
        row=alt.Row("variant:N", title=None, sort=list(traces)),
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
    """The steps where two traces of the same input emit different outputs."""
    if len(before.steps) != len(after.steps):
        raise ValueError("the two traces must run the same input records")
    rows = [
        {
            "step": a.index,
            "ts": a.record.ts,
            "side": a.record.side.value,
            "value": render_value(a.record.value),
            "before": cell(a) or "(none)",
            "after": cell(b) or "(none)",
            "change": len(b.outputs) - len(a.outputs),
        }
        for a, b in zip(before.steps, after.steps)
        if [o.render() for o in a.outputs] != [o.render() for o in b.outputs]
    ]
    frame = pd.DataFrame(rows, columns=["step", "ts", "side", "value", "before", "after", "change"])
    return frame.head(MAX_ROWS)


def era_diff_chart(before: Trace, after: Trace, names: tuple[str, str] | None = None) -> alt.Chart:
    """Per differing step, how many more (or fewer) outputs the ``after`` era emits.

    ``names`` label the eras; by default their semantics (``0.10.2`` and ``3.1``). Only the
    first :data:`MAX_ROWS` differing steps are drawn.
    """
    first, second = names or (str(before.scenario.semantics), str(after.scenario.semantics))
    data = era_diff_frame(before, after)
    return (
        alt.Chart(data, title=f"outputs under {second} minus under {first}", width=WIDTH)
        .mark_bar()
        .encode(
            x=alt.X("step:O", title="step"),
            y=alt.Y("change:Q", axis=_integer_axis(f"{second} − {first}")),
            color=alt.condition("datum.change > 0", alt.value("#2a8a2a"), alt.value("#c0392b")),
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
