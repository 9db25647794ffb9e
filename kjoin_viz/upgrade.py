"""Before you upgrade: what :func:`kjoin.diff` finds on one scenario along a path of Kafka versions
(or for a change of configuration), as a chart of the rules responsible and their examples.

- :func:`upgrade_path`: ``kjoin.diff`` of each consecutive pair of versions (``2.8 → 3.3 → 3.9 → 4.4``),
  with both runs' traces, as :class:`Hop` s; :func:`setting_change` is the same for ``--set`` settings;
- :func:`rules_frame`, :func:`rules_chart`: how many outputs each rule changes, per hop, split by
  change (``added``, ``removed``, ``changed``, ``reordered``). Every rule that differs between the two
  versions has its row, also one that changes nothing on these topics;
- :class:`UpgradeDiff`: that chart, a picker of the rules that change something, and their examples
  one at a time: the input record, then before and after side by side (what the record did, the
  explanation of its step, the outputs that differ).

The differences and their attribution are :func:`kjoin.diff`'s (exact: a difference is charged to a rule
when switching that rule alone produces it); this module only reads them.
"""

from __future__ import annotations

import html
import inspect
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import altair as alt
import ipywidgets as widgets
import pandas as pd

import kjoin
from kjoin.diff import Diff, Difference
from kjoin.semantics import Semantics
from kjoin.trace import Trace

from .charts import WIDTH
from .labels import TONE_COLOURS, fate_label
from .step_view import CSS, svg_image
from .values import show_output, show_text, show_value
from .static import StaticView

__all__ = ["Hop", "upgrade_path", "setting_change", "rules_frame", "rules_chart", "rule_text", "UpgradeDiff"]

CHANGES = ("removed", "added", "changed", "reordered")
"""The kinds of difference, in the order the chart stacks them."""
CHANGE_COLOURS = {
    "removed": TONE_COLOURS["dropped"],
    "added": TONE_COLOURS["joined"],
    "changed": TONE_COLOURS["held"],
    "reordered": TONE_COLOURS["stored"],
}


@dataclass(frozen=True)
class Hop:
    """One comparison: ``diff`` from the run labelled ``before`` to the run labelled ``after``, and
    both runs' traces (``diff``'s ``from_step`` is a step of the first, its ``step`` of the second)."""

    before: str
    after: str
    diff: Diff
    traces: tuple[Trace, Trace]

    @property
    def name(self) -> str:
        return f"{self.before} → {self.after}"

    def counts(self) -> dict[str, int]:
        """Differences charged to each switch (every rule that differs, and every setting)."""
        return {rule: len(found) for rule, found in self.diff.by_rule().items()}


def upgrade_path(scenario: kjoin.Scenario, versions: Sequence[str]) -> list[Hop]:
    """``kjoin.diff`` of ``scenario`` for each consecutive pair of ``versions``."""
    if len(versions) < 2:
        raise ValueError("an upgrade path needs two versions or more, e.g. ['2.8', '3.3', '3.9', '4.4']")
    hops = []
    for before, after in zip(versions, versions[1:]):
        found = kjoin.diff(scenario, from_=before, to=after)
        traces = (kjoin.run(scenario.with_semantics(before)), kjoin.run(scenario.with_semantics(after)))
        hops.append(Hop(before, after, found, traces))
    return hops


def setting_change(scenario: kjoin.Scenario, settings: Mapping[str, Any]) -> Hop:
    """``kjoin.diff(scenario, set=settings)``: what a configuration change (``{"window.grace_ms": 500}``)
    does under the scenario's own semantics."""
    found = kjoin.diff(scenario, set=dict(settings))
    changed = kjoin.Scenario.from_dict(_with_settings(scenario.to_dict(), settings))
    after = ", ".join(f"{path}={show_value(value)}" for path, value in settings.items())
    return Hop(
        f"{scenario.semantics} as it is",
        f"{scenario.semantics}, {after}",
        found,
        (kjoin.run(scenario), kjoin.run(changed)),
    )


def _with_settings(document: dict[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    for path, value in settings.items():
        node = document
        *parents, leaf = path.split(".")
        for part in parents:
            if node.get(part) is None:
                node[part] = {}
            node = node[part]
        node[leaf] = value
    return document


# -- counts and the chart ----------------------------------------------------------------------------
def rules_frame(hops: Sequence[Hop]) -> pd.DataFrame:
    """``hop, rule, change, count``: the differences charged to each rule, per kind of change. A rule
    that differs between the versions but changes nothing here has one row, ``change`` ``"none"``, 0."""
    rows = []
    for hop in hops:
        for rule, found in hop.diff.by_rule().items():
            per_change = {change: sum(d.change == change for d in found) for change in CHANGES}
            for change, count in per_change.items():
                if count:
                    rows.append({"hop": hop.name, "rule": rule, "change": change, "count": count})
            if not found:
                rows.append({"hop": hop.name, "rule": rule, "change": "none", "count": 0})
    return pd.DataFrame(rows, columns=["hop", "rule", "change", "count"])


def rules_chart(hops: Sequence[Hop]) -> alt.Chart:
    """One bar per rule (per hop, in path order), stacked by kind of change, its total written at its end."""
    data = rules_frame(hops)
    data["row"] = data["hop"] + ":  " + data["rule"]
    order = list(dict.fromkeys(data["row"]))
    totals = data.groupby("row", as_index=False, sort=False)["count"].sum()
    totals["label"] = totals["count"].map(lambda n: f"{n}" if n else "0: nothing changes here")
    kinds = [change for change in CHANGES if change in set(data["change"])]
    data["stack"] = data["change"].map({change: i for i, change in enumerate(CHANGES)})
    base = alt.Chart(data).encode(y=alt.Y("row:N", sort=order, title=None, axis=alt.Axis(labelLimit=420)))
    bars = base.mark_bar().encode(
        x=alt.X("count:Q", title="outputs that differ", axis=alt.Axis(format="d", tickMinStep=1)),
        color=alt.Color(
            "change:N", scale=alt.Scale(domain=kinds, range=[CHANGE_COLOURS[k] for k in kinds]), title="change"
        ),
        order=alt.Order("stack:Q"),
        tooltip=["hop:N", "rule:N", "change:N", "count:Q"],
    )
    labels = (
        alt.Chart(totals)
        .mark_text(align="left", dx=4, fontSize=12)
        .encode(y=alt.Y("row:N", sort=order), x=alt.X("count:Q"), text="label:N")
    )
    height = 22 * len(order)
    return alt.layer(bars, labels).properties(
        title="outputs each rule changes, per upgrade", width=WIDTH - 180, height=height
    )


# -- words -------------------------------------------------------------------------------------------
def rule_text(name: str, limit: int = 220) -> str:
    """What a rule (or setting) does: the first sentence of its docstring in :mod:`kjoin.semantics`, cut at
    its first clause (``;`` outside parentheses) when longer than ``limit`` characters."""
    if name not in Semantics.rules():
        return f"the setting {name}"
    doc = " ".join(inspect.getdoc(getattr(Semantics, name)).split()).replace("``", "`")
    text = re.split(r"(?<=[.:])\s(?=[A-Z0-9(])", doc, maxsplit=1)[0]
    if len(text) > limit:
        depth = 0
        for i, char in enumerate(text):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if char == ";" and depth == 0:
                return text[:i] + "."
    return text


def _output_text(output: Any) -> str:
    if output is None:
        return "(none)"
    if isinstance(output, list):  # reordered: the outputs in their order
        return ", ".join(_output_text(o) for o in output)
    value = "null" if output.get("tombstone") else show_value(output.get("value"))
    return f"{value}@{output['ts']}"


def _record_outputs(trace: Trace, index: int) -> str:
    """Everything an input record's step emitted, with what the deliveries it set off emitted (a foreign-key
    join's results come with the responses, steps later)."""
    steps = [trace.steps[index]]
    steps += [s for s in trace.steps if s.message is not None and s.message.origin_step == index]
    return ", ".join(f"{show_output(o)}@{o.ts}" for s in steps for o in s.outputs) or "(none)"


_COLUMN = "flex:1 1 300px;min-width:240px;border:1px solid #ccc;padding:4px 8px;margin:4px 8px 4px 0"


# -- the widget --------------------------------------------------------------------------------------
class UpgradeDiff(StaticView, widgets.VBox):
    """The rules chart of ``hops``, a picker of the rules that change something, and their examples.

    ``UpgradeDiff(upgrade_path(scenario, ["2.8", "3.3", "3.9", "4.4"]))``; ``rule=`` opens on one rule."""

    def __init__(self, hops: Sequence[Hop], rule: str | None = None) -> None:
        import vl_convert

        self.hops = list(hops)
        self.choices = [
            (hop_index, name, found)
            for hop_index, hop in enumerate(self.hops)
            for name, found in hop.diff.by_rule().items()
            if found
        ]
        if not self.choices:
            raise ValueError("no rule changes any output on these inputs: nothing to step through")
        self.chart = widgets.HTML(
            '<div class="kjoin-viz kjoin-upgrade-chart">'
            + svg_image(vl_convert.vegalite_to_svg(rules_chart(self.hops).to_json()))
            + "</div>",
            layout={"max_width": "100%"},
        )
        options = [
            (f"{self.hops[h].name}: {name} ({len(found)})", i) for i, (h, name, found) in enumerate(self.choices)
        ]
        self.picker = widgets.Dropdown(
            options=options, description="rule", layout={"width": "auto", "max_width": "100%"}
        )
        self.buttons = {
            name: widgets.Button(description=name, layout={"width": "auto"}) for name in ("previous", "next")
        }
        self.buttons["previous"].on_click(lambda _: self._move(-1))
        self.buttons["next"].on_click(lambda _: self._move(1))
        self.counter = widgets.HTML()
        self.example = widgets.HTML(layout={"max_width": "100%"})
        self.index = 0
        self.picker.observe(lambda _: self._pick(), names="value")
        wrap = {"flex_flow": "row wrap", "max_width": "100%", "align_items": "center"}
        super().__init__(
            [
                self.chart,
                widgets.HBox([self.picker, *self.buttons.values(), self.counter], layout=wrap),
                self.example,
            ],
            layout={"max_width": "100%"},
        )
        self.add_class("kjoin-upgrade")
        if rule is not None:
            matching = [i for i, (_, name, _) in enumerate(self.choices) if name == rule]
            if not matching:
                known = ", ".join(dict.fromkeys(name for _, name, _ in self.choices))
                raise ValueError(f"no difference is charged to {rule!r} here; the rules that change outputs: {known}")
            self.picker.value = matching[0]
        self._show()

    # -- moving ------------------------------------------------------------------------------------
    @property
    def examples(self) -> list[Difference]:
        return self.choices[self.picker.value][2]

    @property
    def hop(self) -> Hop:
        return self.hops[self.choices[self.picker.value][0]]

    @property
    def rule(self) -> str:
        return self.choices[self.picker.value][1]

    def _pick(self) -> None:
        self.index = 0
        self._show()

    def _move(self, by: int) -> None:
        self.index = (self.index + by) % len(self.examples)
        self._show()

    def show(self, index: int) -> None:
        """Show the rule's example ``index`` (from 0)."""
        if not 0 <= index < len(self.examples):
            raise IndexError(f"example {index} is outside 0 to {len(self.examples) - 1}")
        self.index = index
        self._show()

    # -- drawing -----------------------------------------------------------------------------------
    def _show(self) -> None:
        self.counter.value = (
            f'<span class="kjoin-upgrade-counter">example {self.index + 1} of {len(self.examples)}</span>'
        )
        self.example.value = self.html()

    def _sides(self) -> list[tuple[str, int, Any]]:
        d = self.examples[self.index]
        return [(self.hop.before, d.from_step, d.before), (self.hop.after, d.step, d.after)]

    def html(self) -> str:
        d = self.examples[self.index]
        rules = ", ".join(d.rules) + (" (together)" if d.together else "")
        if d.with_rules:
            rules += f", with {', '.join(d.with_rules)}"
        head = (
            f"<div><b>{html.escape(self.rule)}</b>: {html.escape(rule_text(self.rule))}</div>"
            f"<div>input record: <b>{html.escape(show_text(d.input.describe()))}</b>; output <b>{d.change}</b>; "
            f"charged to {html.escape(rules)}</div>"
        )
        colour = {"before": CHANGE_COLOURS["removed"], "after": CHANGE_COLOURS["added"]}
        columns = []
        for trace, (label, index, output), which in zip(self.hop.traces, self._sides(), ("before", "after")):
            step = trace.steps[index]
            columns.append(
                f'<div style="{_COLUMN}">'
                f"<div><b>{html.escape(label)}</b>, step {index}</div>"
                f"<div>the record {html.escape(fate_label(step).text)}</div>"
                f'<div style="color:#444">{html.escape(show_text(step.explain))}</div>'
                f'<div>the output that differs: <b style="color:{colour[which]}">{html.escape(_output_text(output))}'
                "</b></div>"
                f"<div>everything it emitted: {html.escape(_record_outputs(trace, index))}</div>"
                "</div>"
            )
        body = '<div style="display:flex;flex-wrap:wrap;max-width:100%">' + "".join(columns) + "</div>"
        return f'<div class="kjoin-viz kjoin-upgrade-example">{CSS}{head}{body}</div>'

    def text(self) -> str:
        """The example on show as text (for notebooks compared by nbval)."""
        d = self.examples[self.index]
        lines = [
            f"{self.hop.name}: {self.rule}, example {self.index + 1} of {len(self.examples)}",
            textwrap.fill(rule_text(self.rule), 100, initial_indent="  ", subsequent_indent="  "),
            f"  input record: {show_text(d.input.describe())}; output {d.change}",
        ]
        for trace, (label, index, output) in zip(self.hop.traces, self._sides()):
            lines.append(f"  {label}, step {index}: {_output_text(output)} ({fate_label(trace.steps[index]).text})")
            lines.append(f"    everything it emitted: {_record_outputs(trace, index)}")
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return f"UpgradeDiff({self.hop.name}: {self.rule}; example {self.index + 1} of {len(self.examples)})"
