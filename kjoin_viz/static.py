"""A live widget's static view: the HTML of what it shows, for pages that cannot run it.

The course saves no widget state, so a notebook's widget output is a reference to a model that exists only while
the kernel runs. :class:`StaticView` adds the widget's current view as ``text/html`` beside that reference: JupyterLab
and Voila draw the live widget (their widget renderer outranks HTML), while a page without a kernel (the
documentation site, a notebook opened before it is run, GitHub) shows what the widget showed when the cell ran.

:func:`static_html` walks the widget tree: HTML panes are copied, controls become disabled copies of themselves with
their current values, boxes keep their direction, and hidden children (``layout.display == "none"``, a Predict's
answer before it is given) stay hidden. The result is a pure function of the widgets' values, so a re-run notebook
stores the same bytes.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

__all__ = ["StaticView", "static_html"]

HTML_MIME = "text/html"

_CONTROL = 'style="margin:2px 4px 2px 0"'


def _hidden(widget: widgets.Widget) -> bool:
    layout = getattr(widget, "layout", None)
    return layout is not None and (layout.display == "none" or layout.visibility == "hidden")


def _label(text: str) -> str:
    return f"<span {_CONTROL}>{html.escape(text)}</span>" if text else ""


def _options(widget: Any) -> list[str]:
    return [str(label) for label in getattr(widget, "_options_labels", ())]


def _choice(widget: Any) -> str:
    chosen = widget.label if widget.index is not None else None
    items = "".join(
        f"<option{' selected' if label == chosen else ''}>{html.escape(label)}</option>" for label in _options(widget)
    )
    return f"{_label(widget.description)}<select disabled {_CONTROL}>{items}</select>"


def _buttons(widget: Any) -> str:
    chosen = widget.label if widget.index is not None else None
    buttons = "".join(
        f"<button disabled {_CONTROL}>{'<b>' if label == chosen else ''}{html.escape(label)}"
        f"{'</b>' if label == chosen else ''}</button>"
        for label in _options(widget)
    )
    return f"{_label(widget.description)}{buttons}"


def _slider(widget: Any) -> str:
    value = html.escape(str(widget.value))
    return f"{_label(widget.description)}<span {_CONTROL}><code>{value}</code> of {widget.min}..{widget.max}</span>"


def _box(widget: widgets.Box) -> str:
    row = isinstance(widget, widgets.HBox) or (getattr(widget.layout, "flex_flow", None) or "").startswith("row")
    direction = "row;flex-wrap:wrap;align-items:baseline" if row else "column"
    children = "".join(static_html(child) for child in widget.children)
    return f'<div style="display:flex;flex-direction:{direction}">{children}</div>'


def _output(widget: widgets.Output) -> str:
    parts = []
    for output in widget.outputs:
        data = output.get("data", {})
        if HTML_MIME in data:
            parts.append("".join(data[HTML_MIME]))
        elif "text/plain" in data:
            parts.append(f"<pre>{html.escape(''.join(data['text/plain']))}</pre>")
        elif output.get("output_type") == "stream":
            parts.append(f"<pre>{html.escape(''.join(output.get('text', '')))}</pre>")
    return "".join(parts)


def static_html(widget: Any) -> str:
    """The HTML of what ``widget`` shows now (its hidden parts left out)."""
    if not isinstance(widget, widgets.Widget):
        return html.escape(str(widget))
    if _hidden(widget):
        return ""
    if isinstance(widget, (widgets.HTML, widgets.HTMLMath)):
        return f"{_label(widget.description)}{widget.value}"
    if isinstance(widget, widgets.Label):
        return _label(widget.value)
    if isinstance(widget, widgets.Box):
        return _box(widget)
    if isinstance(widget, widgets.Output):
        return _output(widget)
    if isinstance(widget, widgets.Button):
        return f"<button disabled {_CONTROL}>{html.escape(widget.description)}</button>"
    if isinstance(widget, (widgets.ToggleButtons, widgets.RadioButtons)):
        return _buttons(widget)
    if isinstance(widget, (widgets.Dropdown, widgets.Select)):
        return _choice(widget)
    if isinstance(widget, (widgets.IntSlider, widgets.FloatSlider, widgets.IntRangeSlider, widgets.SelectionSlider)):
        return _slider(widget)
    if isinstance(widget, widgets.Checkbox):
        checked = " checked" if widget.value else ""
        return f"<label {_CONTROL}><input type=checkbox disabled{checked}> {html.escape(widget.description)}</label>"
    if isinstance(widget, (widgets.Text, widgets.Textarea)):
        shown = html.escape(widget.value or widget.placeholder)
        return f'{_label(widget.description)}<input disabled value="{shown}" {_CONTROL}>'
    if isinstance(widget, widgets.Play):
        return ""
    return ""


class StaticView:
    """Mixed into a kjoin widget (before its ipywidgets base): its notebook output carries its static view."""

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if isinstance(bundle, dict):
            bundle[HTML_MIME] = f'<div class="kjoin-static-view">{static_html(self)}</div>'
        return bundle
