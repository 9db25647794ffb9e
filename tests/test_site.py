"""The documentation site (docs/, ``make docs``): it builds with no warning, every internal link resolves in a real
browser, and the runnable examples of Getting started and the how-to guides run as written.

- The site is built once per run, fresh (its own output and doctree folders), with ``sphinx-build -W --keep-going``:
  a broken reference, a missing API page, a notebook that fails to render or a field without a docstring fails it.
- Headless Chromium opens the built site from disk and follows every link to a page of the site (and every
  ``#fragment`` to an element of that page): each must open. Screenshots of the home page, a tutorial and an API
  page go to ``test-artifacts/``.
- Every code block marked ``:class: runnable`` in ``docs/getting-started.md`` and ``docs/how-to/*.md`` runs: a
  Python block in a fresh interpreter, a console block's ``$`` commands in a shell with the environment's
  ``kjoin`` on the PATH, in a folder holding every block of the page captioned with a file name.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built fresh: ``(html folder, sphinx-build's process)``. ``make docs``'s build, read and written by a
    process per core (``-j auto``: every extension of docs/conf.py is parallel-safe; half the minute the build takes
    alone on the 2-core machine). A parallel build warns where a serial one does; its ``viewcode`` also writes source
    pages of the standard library's ``enum`` and ``functools``, which ``make docs`` leaves out."""
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-j", "auto", "-W", "--keep-going", "-q", "-b", "html", "-d",
         str(out / "doctrees"), str(DOCS), str(out / "html")],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    return out / "html", build


def test_the_site_builds_without_a_warning(site):
    html, build = site
    assert build.returncode == 0, f"sphinx-build -W failed:\n{build.stderr[-6000:]}"
    assert build.stderr.strip() == "", build.stderr[-6000:]
    # every section of the site is there, with the pages generated from the code
    for page in [
        "index", "getting-started", "tutorials", "how-to/index", "concepts/index", "reference/index", "fidelity",
        "benchmarks", "generated/changelog", "generated/scenario-format", "generated/topology-document",
        "generated/cli", "generated/api", "generated/semantics-rules", "generated/operators",
        "generated/tutorials/00_start_here", "generated/api/kjoin.run", "generated/api/kjoin.spark.run_join",
    ]:  # fmt: skip
        assert (html / f"{page}.html").is_file(), page
    # an API page is autodoc's, with the signature and the docstring
    api = (html / "generated" / "api" / "kjoin.run.html").read_text()
    assert '<dl class="py function">' in api and "autofunction" not in api
    # the tutorials are rendered with their stored outputs, not without them
    tutorial = (html / "generated" / "tutorials" / "01_stream_stream_joins.html").read_text()
    assert tutorial.count('class="cell_output') >= 10
    # a live widget shows as what it showed when the notebook ran, said to be a widget to run
    assert "<code>Stepper(step 0 (1 of 20))</code>: an interactive widget" in tutorial
    widgets, views = tutorial.count("an interactive widget"), tutorial.count('class="kjoin-widget-view"')
    assert widgets >= 5 and views == widgets, (widgets, views)
    stepper = tutorial[tutorial.index("Stepper(step 0 (1 of 20))") :]
    assert "step 0 (1 of 20)" in stepper[: stepper.index("kjoin-widget-view") + 4000]
    assert "kjoin-step" in tutorial or "<svg" in tutorial


def test_the_generated_reference_follows_the_code(site):
    """What the generated pages say comes from the code: each name below is read from the code here, not written."""
    import kjoin
    from kjoin.cli import _parser
    from kjoin.scenario.model import DOCUMENT_FIELDS
    from kjoin.topology import document
    from kjoin.topology.describe import OPERATIONS

    html = site[0] / "generated"
    scenario = (html / "scenario-format.html").read_text()
    for name in DOCUMENT_FIELDS:
        assert f'<code class="docutils literal notranslate"><span class="pre">{name}</span></code>' in scenario
    rules = (html / "semantics-rules.html").read_text()
    for name in (*kjoin.Semantics.rules(), *kjoin.Semantics.features()):
        rule = kjoin.Semantics.rule_named(name)
        assert f">{name}<" in rules and rule.boundary.ticket.split(",")[0] in rules
    topology = (html / "topology-document.html").read_text()
    assert all(f">{op}<" in topology for op in (*document.OPERATIONS, *document.DOCUMENT_FIELDS))
    cli = (html / "cli.html").read_text()
    commands = next(a for a in _parser()._actions if a.__class__.__name__ == "_SubParsersAction").choices
    for name, sub in commands.items():
        assert f"kjoin {name}" in cli
        for action in sub._actions:
            assert all(flag in cli for flag in action.option_strings if flag not in ("-h", "--help"))
    operators = (html / "operators.html").read_text()
    assert all(f">{op.prefix}<" in operators for op in OPERATIONS)


# -- the browser ---------------------------------------------------------------------------------------------------
def _internal(href: str, html: Path) -> bool:
    parsed = urlparse(href)
    return parsed.scheme == "file" and Path(unquote(parsed.path)).resolve().is_relative_to(html.resolve())


@pytest.mark.browser
def test_every_internal_link_of_the_site_opens_in_a_browser(site):
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make system-deps` (apt-get install chromium)"
    from playwright.sync_api import sync_playwright

    html = site[0]
    ARTIFACTS.mkdir(exist_ok=True)
    start = (html / "index.html").resolve().as_uri()
    seen: set[str] = set()
    queue = [start]
    broken: list[str] = []
    anchors: dict[str, set[str]] = {}
    wanted: list[tuple[str, str, str]] = []  # (page linked from, page, fragment)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
        try:
            page = chromium.new_page(viewport={"width": 1280, "height": 900})
            while queue:
                url = queue.pop()
                if url in seen:
                    continue
                seen.add(url)
                response = page.goto(url, wait_until="domcontentloaded")
                if response is None or not response.ok or not Path(unquote(urlparse(url).path)).is_file():
                    broken.append(url)
                    continue
                anchors[url] = set(page.eval_on_selector_all("[id]", "nodes => nodes.map(n => n.id)"))
                for href in page.eval_on_selector_all("a[href]", "nodes => nodes.map(n => n.href)"):
                    target, fragment = urldefrag(href)
                    if not _internal(target, html):
                        continue
                    if fragment:
                        wanted.append((url, target, unquote(fragment)))
                    if target not in seen:
                        queue.append(target)
            for name, path in [
                ("site-home", "index.html"),
                ("site-tutorial", "generated/tutorials/01_stream_stream_joins.html"),
                ("site-api", "generated/api/kjoin.run.html"),
            ]:
                page.goto((html / path).resolve().as_uri())
                page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
        finally:
            chromium.close()
    missing = [f"{source} -> {target}#{fragment}" for source, target, fragment in wanted if target in anchors
               and fragment not in anchors[target]]  # fmt: skip
    assert broken == []
    assert missing == []
    pages = {url for url in seen if url.endswith(".html")}
    assert len(pages) >= 100, f"only {len(pages)} pages reached from the home page"


# -- the runnable examples -----------------------------------------------------------------------------------------
BLOCK = re.compile(r"^```\{code-block\} (\w+)\n((?::[\w-]+:[^\n]*\n)*)(.*?)^```$", re.S | re.M)
GUIDES = [DOCS / "getting-started.md", *sorted((DOCS / "how-to").glob("*.md"))]


def _blocks(page: Path) -> list[tuple[str, dict[str, str], str]]:
    """Every ``{code-block}`` of a page: (language, options, code)."""
    found = []
    for language, options, code in BLOCK.findall(page.read_text()):
        parsed = dict(re.findall(r"^:([\w-]+):\s*(.*)$", options, re.M))
        found.append((language, parsed, code))
    return found


def _runnable() -> list:
    return [
        pytest.param(page, index, id=f"{page.stem}-{index}")
        for page in GUIDES
        for index, (_, options, _) in enumerate(_blocks(page))
        if "runnable" in options.get("class", "").split()
    ]


def test_getting_started_and_the_guides_mark_examples_to_run():
    runnable = {param.values[0].stem for param in _runnable()}
    assert {"getting-started", "before-you-upgrade", "junit", "debug-your-app"} <= runnable


@pytest.mark.parametrize(("page", "index"), _runnable())
def test_a_runnable_example_runs(page, index, tmp_path):
    blocks = _blocks(page)
    for _, options, code in blocks:  # the files the page's examples read
        if "caption" in options and re.fullmatch(r"[\w.-]+\.(ya?ml|json)", options["caption"]):
            (tmp_path / options["caption"]).write_text(code)
    language, _, code = blocks[index]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    if language == "python":
        run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env)
        assert run.returncode == 0, f"{page.name}, block {index}:\n{code}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
        assert run.stdout.strip(), f"{page.name}, block {index} printed nothing"
        return
    assert language == "console", f"{page.name}: a runnable {language} block"
    commands = _console(code)
    assert commands, f"{page.name}: a console block without $ commands"
    for command, shown in commands:
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=tmp_path, capture_output=True,
                             text=True, env=env)  # fmt: skip
        assert run.returncode == 0, f"{page.name}: $ {command}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
        if shown:  # the page shows what the command prints: it must be what it prints
            assert [line.rstrip() for line in run.stdout.strip().splitlines()] == shown, f"{page.name}: $ {command}"
        elif ">" not in command:
            assert run.stdout.strip(), f"{page.name}: $ {command} printed nothing"


def _console(code: str) -> list[tuple[str, list[str]]]:
    """A console block's commands (``$ ``, continued by a trailing backslash, comments dropped), each with the
    lines the page shows it printing."""
    commands: list[tuple[str, list[str]]] = []
    for line in re.sub(r"\\\n\s*", " ", code).splitlines():
        if line.startswith("$ "):
            commands.append((line[2:].split("  #", 1)[0].strip(), []))
        elif commands and line.strip():
            commands[-1][1].append(line.rstrip())
    return commands


# -- the README: the front door ------------------------------------------------------------------------------------
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)


def test_the_readme_is_a_short_front_door_whose_links_resolve():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert "docs/_static/stepper.png" in targets and "docs/getting-started.md" in targets
    assert [target for target in targets if not (ROOT / target).exists()] == []
    assert "make lab" in text and "make test" in text and "make docs" in text


def test_the_readme_examples_run(tmp_path):
    """The README's commands and its teaching example run as written (with ``.venv/bin/`` the environment running
    this test); its Spark example is the guide's, which ``tests/test_spark_debug.py`` runs against data."""
    blocks = FENCE.findall(README.read_text())
    for language, code in blocks:
        first = code.splitlines()[0]
        if language == "yaml" and re.fullmatch(r"# [\w.-]+\.yaml", first):
            (tmp_path / first[2:]).write_text(code)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    bin_dir = f"{Path(sys.executable).parent}/"
    ran = []
    for language, code in blocks:
        if language == "console":
            for command, _ in _console(code):
                run = subprocess.run(["bash", "-euo", "pipefail", "-c", command.replace(".venv/bin/", bin_dir)],
                                     cwd=tmp_path, capture_output=True, text=True, env=env)  # fmt: skip
                assert run.returncode == 0, f"README: $ {command}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
                ran.append(command.split()[1])
        elif language == "python" and "kjoin.spark" in code:
            guide = (DOCS / "how-to" / "debug-your-topics.md").read_text()
            assert code in re.findall(r"```python\n(.*?)```", guide, re.S)[0], "the README's Spark example"
            ran.append("spark")
        elif language == "python":
            run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env)
            assert run.returncode == 0, f"README:\n{code}\n{run.stderr[-3000:]}"
            ran.append("python")
    assert sorted(set(ran)) == ["diff", "export", "python", "run", "spark", "table"]
    assert "class OrdersTest" in (tmp_path / "OrdersTest.java").read_text()
