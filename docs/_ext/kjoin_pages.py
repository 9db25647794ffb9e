"""The pages of the site that the code writes: a Sphinx extension run before any page is looked for.

Each reference page is made from the lists the code itself checks against, so a field, a flag, a rule or an
operation added to the code shows up here with no page edited by hand:

- ``generated/scenario-format.md``: :class:`kjoin.Scenario`'s fields (their attribute docstrings), the nested
  mappings (:func:`kjoin.scenario.fields.field_names`, the parser's own lists) and seed 000's fields;
- ``generated/topology-document.md``: :mod:`kjoin.topology.document`'s fields and operations;
- ``generated/cli.md``: ``kjoin``'s argparse parser (:func:`kjoin.cli._parser`);
- ``generated/semantics-rules.md``: every rule of :class:`kjoin.Semantics`, its releases and ticket;
- ``generated/operators.md``: the processors ``Topology.from_describe`` builds and the ones it refuses;
- ``generated/api.rst``: an autosummary of every public name of ``kjoin``, ``kjoin.spark`` and ``kjoin_viz``;
- ``generated/changelog.md``: ``CHANGELOG.md`` of the repository, when it has one;
- ``generated/tutorials/``: the course's notebooks with their stored outputs (MyST-NB renders them), each live
  widget shown as its static view (:func:`_static_widgets`).

A field without a docstring is a warning, which ``sphinx-build -W`` turns into a failed build.
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import inspect
import json
import textwrap
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging

LOG = logging.getLogger(__name__)
DOCS = Path(__file__).resolve().parent.parent
ROOT = DOCS.parent
OUT = DOCS / "generated"


def _write(path: Path, text: str) -> None:
    """Write only what changed, so that Sphinx rereads only the pages whose sources changed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _cell(text: str | None) -> str:
    """One Markdown table cell: a docstring joined on one line, its pipes escaped."""
    return " ".join((text or "").split()).replace("|", "\\|")


def _rst_roles_to_md(text: str) -> str:
    """Docstrings use reST (``code``, :class:`X`); a Markdown table cell shows them as code."""
    import re

    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _attribute_docs(module: str, cls: str) -> dict[str, str]:
    analyzer = ModuleAnalyzer.for_module(module)
    return {name: "\n".join(lines) for (owner, name), lines in analyzer.find_attr_docs().items() if owner == cls}


def _default(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "required"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple) and not value:
        return "none"
    if type(value).__name__ == "Semantics":
        return f"`{value}` (the latest)"
    if dataclasses.is_dataclass(value):
        return "see below"
    return f"`{value}`"


def _dataclass_table(cls: type, module: str, where: str, docs: dict[str, str] | None = None) -> list[str]:
    docs = docs if docs is not None else _attribute_docs(module, cls.__name__)
    lines = ["| field | type | default | what it is |", "| --- | --- | --- | --- |"]
    for field in dataclasses.fields(cls):
        doc = docs.get(field.name)
        if not doc:
            LOG.warning(
                "%s.%s (%s) has no docstring: the reference page cannot say what it is", module, field.name, where
            )
        kind = str(field.type).replace("|", "or")
        lines.append(f"| `{field.name}` | `{kind}` | {_default(field)} | {_cell(_rst_roles_to_md(doc or ''))} |")
    return lines


def _doc(obj: Any) -> str:
    return _rst_roles_to_md(inspect.cleandoc(obj.__doc__ or ""))


# -- the scenario format ------------------------------------------------------------------------------------------
def scenario_format() -> str:
    from kjoin.joins.stream_stream import JoinWindows
    from kjoin.scenario import aggregate, fields
    from kjoin.scenario.model import DOCUMENT_FIELDS, Scenario

    scenario_fields = {f.name for f in dataclasses.fields(Scenario)}
    extra = sorted(DOCUMENT_FIELDS - scenario_fields)
    out = [
        "# Scenario format",
        "",
        "```{note}",
        "Generated from the code when the site is built (`docs/_ext/kjoin_pages.py`): the fields are those of",
        "`kjoin.Scenario` and of the value objects the parser (`kjoin/scenario/parsing.py`) builds, which refuses any",
        'other field with a "did you mean".',
        "```",
        "",
        "A scenario is one join and its input records, as a YAML or JSON file (`kjoin run scenario.yaml`) or a",
        "mapping (`kjoin.Scenario.from_dict`). Its top-level fields:",
        "",
        *_dataclass_table(Scenario, "kjoin.scenario.model", "a scenario's top-level field"),
    ]
    for name in extra:
        out.append(f"| `{name}` | `str` | null | free text, kept with the scenario |")
    out += ["", "## Allowed values", "", "| field | values |", "| --- | --- |"]
    out.append(f"| `join` | {', '.join(f'`{j}`' for j in fields.JOINS)} (and seed 000's, below) |")
    for join, variants in fields.VARIANTS.items():
        out.append(f"| `variant` of `{join}` | {', '.join(f'`{v}`' for v in variants)} |")
    out.append(f"| `versioned_mode` | {', '.join(f'`{m}`' for m in fields.VERSIONED_MODES)} |")
    out.append(f"| `delivery.mode` | {', '.join(f'`{m}`' for m in fields.DELIVERY_MODES)} |")
    out.append(f"| `deliver` (an event) | {', '.join(f'`{m}`' for m in fields.DELIVER_SELECTORS)}, or a message id |")
    out.append(f"| `caching` | `true`, or a list of {', '.join(f'`{m}`' for m in fields.CACHING_STORES)} |")
    out.append(f"| a key | null, or one of: {', '.join(t.__name__ for t in fields.KEY_TYPES)} |")
    out.append(f"| `ts` | an integer from 0 to {fields.MAX_TIMESTAMP_MS} (Kafka's 64-bit timestamps) |")
    nested = [
        ("events[]", fields.Event, "kjoin.scenario.fields"),
        ("window", JoinWindows, "kjoin.joins.stream_stream"),
        ("left, right", fields.TableOptions, "kjoin.joins.options"),
        ("delivery", fields.Delivery, "kjoin.scenario.fields"),
        ("then[]", fields.ChainedJoin, "kjoin.scenario.fields"),
    ]
    out += ["", "## Nested fields", ""]
    for where, cls, module in nested:
        names = ", ".join(f"`{name}`" for name in fields.field_names(cls))
        out += [f"### `{where}`", "", f"Fields: {names}. {_cell(_doc(cls))}", ""]
    sides = ", ".join(f"`{name}`" for name in fields.ARRIVAL_SIDE_FIELDS)
    out += [
        "### `arrival`",
        "",
        f"`arrival: {{left: ..., right: ...}}`, each side with {sides}. {_cell(_doc(fields.Arrival))}",
        "",
        "## Seed 000's aggregates and windowed tables",
        "",
        _cell(_doc(aggregate).split("\n\n")[0]),
        "",
        "Fields every one of these scenarios takes: `join`, `variant`, `semantics`, `partitions`, `events`. The",
        "others, per join (required ones in bold):",
        "",
        "| join | fields |",
        "| --- | --- |",
    ]
    for join, allowed in aggregate._ALLOWED.items():
        needed = aggregate._NEEDS.get(join, set())
        cells = ", ".join(f"**`{f}`**" if f in needed else f"`{f}`" for f in sorted(allowed))
        out.append(f"| `{join}` | {cells} |")
    out.append("")
    return "\n".join(out)


# -- the topology document ----------------------------------------------------------------------------------------
def topology_document() -> str:
    from kjoin.topology import document

    intro = inspect.getdoc(document) or ""
    example = intro.split("::", 1)[1].split("\n\n")[1] if "::" in intro else ""
    out = [
        "# Topology document",
        "",
        "```{note}",
        "Generated from `kjoin/topology/document.py` when the site is built: its field and operation lists are the",
        "ones the reader checks every document against.",
        "```",
        "",
        "A whole application as a document (`kjoin run app.yaml`, `kjoin.Topology`): its nodes and the input",
        "records of its topics. For example:",
        "",
        "```yaml",
        textwrap.dedent(example),
        "```",
        "",
        "## Top-level fields",
        "",
        ", ".join(f"`{name}`" for name in document.DOCUMENT_FIELDS) + ".",
        "",
        "## Operations",
        "",
        "A node is a mapping with its `name`, one operation and the operation's fields:",
        "",
        "| operation | its other fields |",
        "| --- | --- |",
    ]
    for op in document.OPERATIONS:
        others = document._JOIN_FIELDS if op.endswith("join") else document._NODE_FIELDS[op]
        out.append(f"| `{op}` | {', '.join(f'`{f}`' for f in others) or '-'} |")
    rest = intro.split("\n\n", 2)[2] if intro.count("\n\n") >= 2 else ""
    out += ["", "## What each operation means", "", _rst_roles_to_md(rest), ""]
    return "\n".join(out)


# -- the command line -----------------------------------------------------------------------------------------------
def cli() -> str:
    from kjoin import cli as module

    parser = module._parser()
    out = [
        "# Command line: `kjoin`",
        "",
        "```{note}",
        "Generated from `kjoin/cli.py`'s argparse parser when the site is built.",
        "```",
        "",
        parser.description or "",
        "",
        "```text",
        parser.format_usage().strip(),
        "```",
        "",
    ]
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in subparsers._choices_actions}
    for name, sub in subparsers.choices.items():
        sub.prog = f"kjoin {name}"
        out += [f"## `kjoin {name}`", "", helps.get(name, "") or "", "", "```text", sub.format_usage().strip(), "```"]
        out += ["", "| argument | default | what it does |", "| --- | --- | --- |"]
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            names = ", ".join(action.option_strings) or action.dest
            if action.choices:
                names += " {" + ",".join(action.choices) + "}"
            default = "" if action.default in (None, False, argparse.SUPPRESS) else f"`{action.default}`"
            if action.required and action.option_strings:
                default = "required"
            out.append(f"| `{names}` | {default} | {_cell(action.help)} |")
        out.append("")
    return "\n".join(out)


# -- the rules of Semantics ------------------------------------------------------------------------------------------
def semantics_rules() -> str:
    from kjoin import semantics

    def version(triple: tuple[int, int, int]) -> str:
        return ".".join(str(part) for part in (triple if triple[2] else triple[:2]))

    out = [
        "# Semantics rules",
        "",
        "```{note}",
        "Generated from `kjoin/semantics.py` when the site is built: every `@since` rule of `kjoin.Semantics`.",
        "```",
        "",
        _rst_roles_to_md(inspect.getdoc(semantics).split("\n\n")[0]),
        "",
        f"The latest Kafka kjoin models, the default: **{semantics.LATEST}**. Release lines it knows: "
        + ", ".join(semantics.KNOWN_VERSIONS)
        + ".",
        "",
        'A rule can be switched alone: `semantics: "3.0+spurious_result_fix"` or `"4.3-relaxed_null_keys"`',
        "(Python: `Semantics.with_rules(...)`); `kjoin diff` charges every changed output to the rules that change it.",
        "",
    ]
    kinds = (("Behaviour rules", semantics.Semantics.rules()), ("Features", semantics.Semantics.features()))
    for title, names in kinds:
        out += [f"## {title}", ""]
        if title == "Features":
            out += ["A feature exists from a version on; without it kjoin refuses the scenario.", ""]
        out += ["| rule | from | what changes |", "| --- | --- | --- |"]
        for name in names:
            rule = semantics.Semantics.rule_named(name)
            fixed = ", ".join(version(v) for v in rule.boundary.fixed_in)
            since = f"{fixed} ({_cell(rule.boundary.ticket)})"
            if rule.requires:
                since += "; with " + ", ".join(f"`{r}`" for r in rule.requires)
            out.append(f"| `{name}` | {since} | {_cell(_doc(rule))} |")
        out.append("")
    return "\n".join(out)


# -- the operators of a describe() text ------------------------------------------------------------------------------
def operators() -> str:
    from kjoin.topology import describe

    built = [op for op in describe.OPERATIONS if op.refuse is None]
    refused = [op for op in describe.OPERATIONS if op.refuse is not None]
    out = [
        "# Kafka operators",
        "",
        "```{note}",
        "Generated from `kjoin/topology/describe.py`'s table of operations when the site is built.",
        "```",
        "",
        "`kjoin.Topology.from_describe(text)` reads what `topology.describe()` prints. Each processor is matched by",
        "the longest prefix of its name in Kafka's DSL naming; a processor kjoin does not model is named in the",
        "report with the reason, and neither it nor what follows it runs.",
        "",
        "## Modelled",
        "",
        "| processor name prefix | how kjoin builds it |",
        "| --- | --- |",
    ]
    for op in built:
        out.append(f"| `{op.prefix}` | `{op.build.__name__}` |")
    out += ["", "## Refused", "", "| processor name prefix | why |", "| --- | --- |"]
    for op in refused:
        out.append(f"| `{op.prefix}` | {_cell(op.refuse)} |")
    out.append("")
    return "\n".join(out)


# -- the Python API -------------------------------------------------------------------------------------------------
API_MODULES = ("kjoin", "kjoin.spark", "kjoin_viz")


def api() -> str:
    """reST, not Markdown: autosummary writes the stub pages of the names it finds in reST sources only."""
    import importlib

    title = "Python API"
    out = [
        title,
        "=" * len(title),
        "",
        ".. note::",
        "",
        "   Generated when the site is built: every name in ``__all__`` of "
        + ", ".join(f"``{m}``" for m in API_MODULES)
        + ", with its docstring.",
        "",
    ]
    for module_name in API_MODULES:
        module = importlib.import_module(module_name)
        summary = (inspect.getdoc(module) or "").split("\n\n")[0]
        heading = f"``{module_name}``"
        out += [heading, "-" * len(heading), "", summary, "", f".. currentmodule:: {module_name}", ""]
        names = sorted(module.__all__, key=str.lower)
        code = [name for name in names if callable(getattr(module, name))]
        data = [name for name in names if name not in code]
        out += [".. autosummary::", "   :toctree: api", ""]
        out += [f"   {name}" for name in code]
        out += [""]
        for name in data:
            out += [f".. py:data:: {name}", "", textwrap.indent(_data_doc(module_name, name), "   "), ""]
    return "\n".join(out)


def _data_doc(package: str, name: str) -> str:
    """A constant's docstring (the string literal under its assignment) from the module of ``package`` that
    defines it: a value such as a dict has no docstring of its own."""
    import sys

    for module_name in sorted(m for m in sys.modules if m == package or m.startswith(package + ".")):
        try:
            docs = ModuleAnalyzer.for_module(module_name).find_attr_docs()
        except Exception:  # a compiled or generated module without source
            continue
        if ("", name) in docs:
            return "\n".join(docs[("", name)]).strip()
    LOG.warning("%s.%s is public but has no docstring", package, name)
    return ""


def changelog() -> str:
    if (ROOT / "CHANGELOG.md").exists():
        return "```{include} ../../CHANGELOG.md\n```\n"
    return "# Changelog\n\nThe repository has no `CHANGELOG.md` yet; its history is in the commit log.\n"


WIDGET = "application/vnd.jupyter.widget-view+json"


def _static_widgets(text: str) -> str:
    """A notebook whose live widgets (a stepper, a predict exercise, a what-if) show as what they are on a static
    page: the course saves no widget state, so a widget's output holds a reference to a model that is not there,
    beside the widget's static view (``text/html``, :mod:`kjoin_viz.static`) and its one-line summary. The static
    view is kept under a line saying it is a widget to run; an output without one shows the summary."""
    notebook = json.loads(text)
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET in data:
                summary = "".join(data.get("text/plain", "")).strip() or "a widget"
                del data[WIDGET]
                view = "".join(data.get("text/html", ""))
                note = (
                    f'<p class="kjoin-widget"><code>{html.escape(summary)}</code>: an interactive widget; run the '
                    "notebook (<code>make lab</code>) to use it"
                )
                if view:
                    note += ". What it showed when the notebook ran:</p>"
                    data["text/html"] = f'{note}<div class="kjoin-widget-view">{view}</div>'
                else:
                    data["text/html"] = f"{note}.</p>"
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def notebooks() -> None:
    target = OUT / "tutorials"
    target.mkdir(parents=True, exist_ok=True)
    sources = sorted((ROOT / "notebooks").glob("*.ipynb"))
    for stale in set(target.glob("*.ipynb")) - {target / s.name for s in sources}:
        stale.unlink()
    for source in sources:
        _write(target / source.name, _static_widgets(source.read_text(encoding="utf-8")))


PAGES = {
    "scenario-format.md": scenario_format,
    "topology-document.md": topology_document,
    "cli.md": cli,
    "semantics-rules.md": semantics_rules,
    "operators.md": operators,
    "api.rst": api,
    "changelog.md": changelog,
}


def write_pages(app: Sphinx | None = None, config: Any = None) -> None:
    for name, page in PAGES.items():
        _write(OUT / name, page())
    notebooks()
    _drop_stale_stubs()


def _drop_stale_stubs() -> None:
    """autosummary writes a page per public function and class and never deletes one: a name gone from ``__all__``
    (or now a constant) would leave a page outside every toctree."""
    import importlib

    wanted = {
        f"{module_name}.{name}"
        for module_name in API_MODULES
        for name in importlib.import_module(module_name).__all__
        if callable(getattr(importlib.import_module(module_name), name))
    }
    for stub in (OUT / "api").glob("*.*"):
        if stub.stem not in wanted:
            stub.unlink()


def setup(app: Sphinx) -> dict[str, Any]:
    # When the configuration is read: before autosummary (builder-inited) looks for the names to write stubs of.
    app.connect("config-inited", write_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
