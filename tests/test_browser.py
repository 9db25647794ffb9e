"""The course in a real browser: JupyterLab in headless Chromium, driven by Playwright.

- Every notebook found in ``notebooks/`` (by glob) is opened the way a learner opens it: with
  the file browser open, in a 1280 px wide window, under the course's JupyterLab settings
  (``jupyter/settings``: no news pop-up, widget state never saved). Its stored walkthrough
  views must show before anything runs; then Run All; no cell may end in an error; every
  widget must render, and each stepper, predict widget, side-by-side view and what-if is
  driven (clicked, answered, slid) and must react; no view may be wider than the notebook.
  The notebook is saved at the end and the file must hold neither widget state nor the
  learner's answer.
- A notebook this test writes steps a stepper with its buttons, its slider and play, and the
  state tables on the page must be what the engine says they are after each step.

The tests share one JupyterLab (a free local port, a token, autosave off, a temporary root with
copies of the notebooks) and one Chromium, started once for the module: each test opens its
notebook in a fresh browser context and a fresh workspace, and afterwards its pages are closed,
its kernels shut down and its workspace forgotten, so no test sees another's tabs or kernels.
Screenshots go to ``test-artifacts/``. The tests fail, never skip, when Debian's Chromium is
missing (``make system-deps``).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import nbformat
import pytest

import kjoin
from kjoin_viz import StepView

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
WIDGETS = {
    "stepper": "Stepper(",
    "topology": "TopologyStepper(",
    "predict": "Predict(",
    "variants": "Variants(",
    "whatif": "WhatIf(",
    "upgrade": "UpgradeDiff(",
    "explorer": "SummaryExplorer(",
}
"""Each course widget and the text that builds it in a notebook's code."""
SAMPLE = ("00_start_here", "01_stream_stream_joins", "02_eras", "10_before_you_upgrade", "12_your_whole_app")
"""The notebooks the suite runs in JupyterLab: the course's first page and, with the notebook
:func:`test_the_summary_explorer_works_in_jupyterlab` writes, at least one notebook of every widget kind
(:func:`test_the_browser_sample_holds_every_widget_kind_of_the_course` keeps it so). nbval executes every notebook;
``make browser-check`` (``KJOIN_BROWSER_ALL=1``) runs every one of them here too."""
EXPLORER_PLANTED = 40
"""Groups of notebook 09's planted orders and customers in the explorer's notebook (notebook 09 plants 160): about
80 summary rows, enough for the table to need its scroll box, in a run of seconds."""
EXPLORER_CODE = [
    "from kjoin.spark import Topic, local_session, run_join\n"
    "from kjoin.spark.debug.whycheck import planted\n"
    "from kjoin_viz.summary_explorer import SummaryExplorer\n"
    "spark = local_session()",
    f"orders, customers, causes = planted({EXPLORER_PLANTED}, 2)\n"
    "schema = 'key string, value string, ts long, partition int, offset long'\n"
    "topics = [Topic(spark.createDataFrame(rows, schema), 2) for rows in (orders, customers)]\n"
    "result = run_join(*topics, 'stream-table', 'left')",
    "explorer = SummaryExplorer(result, limit=10_000)\nexplorer.sort_by('partner-processed-later')\nexplorer",
]
"""The cells of the notebook that shows a SummaryExplorer as notebook 09 builds it, on a smaller planted run."""
RUN_IN_BROWSER = NOTEBOOKS if os.environ.get("KJOIN_BROWSER_ALL") == "1" else [n for n in NOTEBOOKS if n.stem in SAMPLE]
ARTIFACTS = ROOT / "test-artifacts"
SETTINGS = ROOT / "jupyter" / "settings"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 900}
ANSWER = "Zq-zq"
"""What the test types into predict widgets: it must never reach the saved notebook."""
RUN_TIMEOUT_MS = 900_000  # a loaded CI machine (and Spark notebooks): the notebooks run in seconds when idle

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, server: subprocess.Popen, log: Path, timeout_s: float = 60) -> float:
    """Poll ``url`` until it answers; returns the seconds it took."""
    start = time.monotonic()
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return time.monotonic() - start
        except OSError:
            if server.poll() is not None or time.monotonic() - start > timeout_s:
                raise AssertionError(f"the server did not start within {timeout_s} s:\n" + log.read_text())
            time.sleep(0.3)


def _stop(server: subprocess.Popen) -> None:
    server.terminate()  # only the server this test started
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """The module's JupyterLab server: ``(base url, token, root dir, workspaces dir)``. The root holds a copy of
    every course notebook; the course's settings apply (as with ``make lab``)."""
    tmp_path = tmp_path_factory.mktemp("lab")
    root = tmp_path / "root"
    root.mkdir()
    for notebook in NOTEBOOKS:
        shutil.copy(notebook, root / notebook.name)
    user_settings = tmp_path / "settings" / "@jupyterlab"
    (user_settings / "docmanager-extension").mkdir(parents=True)
    (user_settings / "docmanager-extension" / "plugin.jupyterlab-settings").write_text(json.dumps({"autosave": False}))
    # every cell rendered, also off screen: the test reads every prompt and every widget
    (user_settings / "notebook-extension").mkdir(parents=True)
    tracker = user_settings / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.write_text(json.dumps({"windowingMode": "none"}))
    port, token = _free_port(), secrets.token_hex(16)
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        f"--port={port}",
        "--ip=127.0.0.1",
        "--no-browser",
        "--ServerApp.open_browser=False",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.app_settings_dir={SETTINGS}",
        f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
        f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "PYTHONPATH": str(ROOT)}
    log_path = tmp_path / "lab.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_for(f"{base}/api/status?token={token}", server, log_path)
            yield base, token, root, tmp_path / "workspaces"
        finally:
            _stop(server)


def _api(base: str, token: str, path: str, method: str = "GET") -> Any:
    request = urllib.request.Request(f"{base}{path}?token={token}", method=method)
    with urllib.request.urlopen(request, timeout=30) as answer:
        body = answer.read()
    return json.loads(body) if body else None


@pytest.fixture
def lab(lab_server, browser):
    """The module's JupyterLab for one test: ``(base url, token, root dir)``. After the test its browser pages are
    closed, every kernel it started is shut down (a Spark notebook's holds a JVM) and its workspace (the open tabs
    JupyterLab would restore for the next test) is removed."""
    base, token, root, workspaces = lab_server
    yield base, token, root
    for context in browser.contexts:
        context.close()
    for session in _api(base, token, "/api/sessions"):
        _api(base, token, f"/api/sessions/{session['id']}", method="DELETE")
    for kernel in _api(base, token, "/api/kernels"):
        _api(base, token, f"/api/kernels/{kernel['id']}", method="DELETE")
    assert _api(base, token, "/api/kernels") == [], "a kernel outlived its test"
    shutil.rmtree(workspaces, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make system-deps` (apt-get install chromium)"
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _open(browser, base: str, token: str, name: str):
    """A page with the notebook open, the kernel idle and the file browser shown."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{base}/lab/tree/{name}?token={token}")
    expect(page.locator(".jp-NotebookPanel").first).to_be_visible(timeout=120_000)
    expect(page.locator(".jp-StatusBar-Widget", has_text="Idle").first).to_be_visible(timeout=180_000)
    files = page.locator("#filebrowser")
    if not files.is_visible():
        page.locator('.jp-SideBar [data-id="filebrowser"]').first.click()
    expect(files).to_be_visible()
    return page


def _run_all(page) -> None:
    """Run All, and wait until every code cell has run (``[n]:``) and the kernel is idle."""
    from playwright.sync_api import expect

    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    deadline = time.monotonic() + RUN_TIMEOUT_MS / 1000
    while True:
        prompts = page.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts()
        if not page.locator(".jp-CodeCell").count():  # a page of text only (the cheat sheet): nothing to run
            break
        if prompts and all(re.fullmatch(r"\[\d+\]:", p.strip()) for p in prompts):
            break
        assert time.monotonic() < deadline, f"Run All did not finish: prompts {prompts}"
        time.sleep(1)
    expect(page.locator(".jp-StatusBar-Widget", has_text="Idle").first).to_be_visible(timeout=60_000)


def _fits(page, selector: str) -> list[str]:
    """The elements matching ``selector`` that are wider than what shows them (cut or scrolled)."""
    return page.eval_on_selector_all(
        selector,
        """els => els.filter(e => {
        const area = e.closest('.jp-OutputArea-output') || e.parentElement;
        return e.scrollWidth > e.clientWidth + 2
            || e.getBoundingClientRect().right > area.getBoundingClientRect().right + 2;
    }).map(e => e.className + ' ' + e.scrollWidth + '>' + e.clientWidth)""",
    )


def _code(notebook: Path) -> str:
    return "\n".join(c.source for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code")


def _drive_widgets(page, stem: str) -> dict[str, int]:
    """Click, answer and slide every course widget on the page; each must react."""
    from playwright.sync_api import expect

    driven = {"stepper": 0, "predict": 0, "variants": 0, "whatif": 0, "upgrade": 0, "topology": 0, "explorer": 0}
    predicts = page.locator(".kjoin-predict")
    for i in range(predicts.count()):
        widget = predicts.nth(i)
        widget.scroll_into_view_if_needed()
        if widget.locator("input[type=text]").count():  # ask="fate+outputs"
            widget.locator(".widget-radio-box input").first.check()
            widget.locator("input[type=text]").first.fill(ANSWER)
        else:  # ask="release": pick the first later step
            widget.locator("select").first.select_option(index=0)
        widget.get_by_role("button", name="check").click()
        expect(widget.locator(".kjoin-feedback")).to_be_visible(timeout=30_000)
        answer = widget.get_by_role("button", name="show the answer")
        if answer.is_visible():  # a wrong answer: a hint first, the answer and the stepper on request
            expect(widget.locator(".kjoin-stepper")).to_have_count(0)
            answer.click()
        expect(widget.locator(".kjoin-stepper")).to_be_visible(timeout=30_000)
        if i == 0:
            widget.locator(".kjoin-feedback").scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / f"{stem}-predict.png"))
        driven["predict"] += 1
    steppers = page.locator(".kjoin-stepper")
    for i in range(steppers.count()):
        stepper = steppers.nth(i)
        stepper.scroll_into_view_if_needed()
        header = stepper.locator(".kjoin-pane-header")
        before = header.inner_text()
        shown, count = (int(n) for n in re.search(r"step (\d+) \(\d+ of (\d+)\)", before).groups())
        last = count - 1
        button = stepper.get_by_role("button", name="previous" if shown == last else "next", exact=True)
        button.click()
        moved = shown - 1 if shown == last else shown + 1
        expect(header).to_contain_text(f"step {moved} ({moved + 1} of {count})", timeout=30_000)
        if i == 0:
            page.screenshot(path=str(ARTIFACTS / f"{stem}-stepper.png"))
        driven["stepper"] += 1
    topologies = page.locator(".kjoin-topology-stepper")  # kjoin_viz.TopologyStepper: the graph follows the slider
    for i in range(topologies.count()):
        widget = topologies.nth(i)
        widget.scroll_into_view_if_needed()
        text = widget.locator("pre")
        shown, last = (int(n) for n in re.search(r"step (\d+) of (\d+)", text.inner_text()).groups())
        moved = shown - 1 if shown == last else shown + 1
        widget.get_by_role("button", name="previous" if shown == last else "next", exact=True).click()
        expect(text).to_contain_text(f"step {moved} of {last}", timeout=30_000)
        expect(widget.locator("svg.kjoin-topology")).to_have_attribute("aria-label", f"the topology at step {moved}")
        assert widget.locator("svg .kjoin-lit").count() >= 1, "no node of the record's path is lit"
        if i == 0:
            page.screenshot(path=str(ARTIFACTS / f"{stem}-topology.png"))
        driven["topology"] += 1
    variants = page.locator(".kjoin-variants.widget-vbox")
    for i in range(variants.count()):
        widget = variants.nth(i)
        widget.scroll_into_view_if_needed()
        widget.get_by_role("button", name="first", exact=True).click()
        widget.get_by_role("button", name="next", exact=True).click()
        expect(widget.locator("tr.current td").first).to_have_text("1", timeout=30_000)
        if i == 0:
            page.screenshot(path=str(ARTIFACTS / f"{stem}-variants.png"))
        driven["variants"] += 1
    whatifs = page.locator(".kjoin-whatif")
    for i in range(whatifs.count()):
        widget = whatifs.nth(i)
        widget.scroll_into_view_if_needed()
        header = widget.locator(".kjoin-whatif-header")
        before = header.inner_text()
        handle = widget.locator(".widget-slider .noUi-handle").first
        handle.focus()
        handle.press("ArrowLeft" if "=0" not in before.split(",")[0] else "ArrowRight")
        expect(header).not_to_have_text(before, timeout=30_000)
        if i == 0:
            page.screenshot(path=str(ARTIFACTS / f"{stem}-whatif.png"))
        driven["whatif"] += 1
    upgrades = page.locator(".kjoin-upgrade")
    for i in range(upgrades.count()):  # pick another rule, then its next example; the chart is drawn
        widget = upgrades.nth(i)
        widget.scroll_into_view_if_needed()
        chart = widget.locator(".kjoin-upgrade-chart img").first
        expect(chart).to_be_visible(timeout=30_000)
        assert chart.evaluate("e => e.naturalWidth") > 0, "the rules chart does not load"
        counter = widget.locator(".kjoin-upgrade-counter")
        rules = widget.locator("select").first
        before = widget.locator(".kjoin-upgrade-example").inner_text()
        if rules.locator("option").count() > 1:
            rules.select_option(index=1)
            expect(widget.locator(".kjoin-upgrade-example")).not_to_have_text(before, timeout=30_000)
        expect(counter).to_contain_text("example 1 of", timeout=30_000)
        widget.get_by_role("button", name="next", exact=True).click()
        # the counter and the example are two widgets, redrawn one after the other: the new rule's count is read
        # after the move, not before it (a count read between the two was the old rule's)
        expect(counter).to_have_text(re.compile(r"example (2 of \d+|1 of 1)\s*$"), timeout=30_000)
        total = int(re.search(r"of (\d+)", counter.inner_text()).group(1))
        assert total >= 1 and counter.inner_text().strip() == f"example {min(2, total)} of {total}"
        if i == 0:
            widget.locator(".kjoin-upgrade-example").scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / f"{stem}-upgrade.png"))
        driven["upgrade"] += 1
    explorers = page.locator(".kjoin-summary-explorer")
    for i in range(explorers.count()):
        _drive_summary_explorer(page, explorers.nth(i), f"{stem}-summary-explorer" + (f"-{i}" if i else ""))
        driven["explorer"] += 1
    return driven


SUMMARY_CELLS = "t => Array.from(t.querySelectorAll('tr')).map(r => Array.from(r.children).map(c => c.textContent))"


def _drive_summary_explorer(page, widget, name: str) -> None:
    """kjoin_viz.SummaryExplorer as a learner meets it (item 8 of "What was seen": about 290 rows, mostly
    zeros, its picker eight screens down, its "sort by" not following ``sort_by()``): the picker above a table that
    scrolls inside a screen, only rows with a surprise, no column that is zero in every row, the rows in the order
    "sort by" shows (which follows the notebook's ``sort_by`` call), then sorted from the dropdown, all rows shown,
    and a row opened in the stepper."""
    from playwright.sync_api import expect

    widget.scroll_into_view_if_needed()
    sorter, picker = widget.locator("select").nth(0), widget.locator("select").nth(1)
    table, note = widget.locator("table.kjoin-summary"), widget.locator(".kjoin-viz").first
    expect(table).to_be_visible(timeout=30_000)
    selected = "s => s.selectedIndex < 0 ? null : s.options[s.selectedIndex].textContent"
    column = sorter.evaluate(selected)

    def cells() -> tuple[list[str], list[list[str]]]:
        head, *rows = table.evaluate(SUMMARY_CELLS)
        return head, rows

    def assert_sorted_by(column: str, timeout_s: float = 30) -> list[list[str]]:
        deadline = time.monotonic() + timeout_s
        while True:  # the kernel redraws the table after a click
            head, rows = cells()
            values = [int(r[head.index(column)]) for r in rows]
            if values == sorted(values, reverse=True) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert values == sorted(values, reverse=True), f"rows not in the order 'sort by {column}' says: {values}"
        return rows

    head, rows = cells()
    assert head[:3] == ["scenario", "partition", "key"] and "surprises" in head
    assert [o for o in sorter.locator("option").all_inner_texts()] == head, "'sort by' offers other columns"
    assert widget.get_by_role("button", name="descending").get_attribute("class").count("mod-active") == 1
    rows = assert_sorted_by(column)
    assert rows and all(int(r[head.index("surprises")]) > 0 for r in rows), "a row without a surprise is shown"
    assert int(rows[0][head.index(column)]) > 0, f"the first row has no {column}"
    hidden = re.search(r"hidden, zero in every row: (.*)$", note.inner_text())
    shown, total = (int(n) for n in re.match(r"(\d+) of (\d+) rows", note.inner_text()).groups())
    assert shown == len(rows) < total, note.inner_text()
    # the picker and the table's top are in sight together; the table scrolls inside its box
    box = {n: loc.bounding_box() for n, loc in (("widget", widget), ("picker", picker), ("table", table))}
    assert box["picker"]["y"] < box["table"]["y"], "the picker is below the table"
    assert box["picker"]["y"] - box["widget"]["y"] < 150, "the picker is not at the top of the explorer"
    frame = widget.locator("div:has(> table.kjoin-summary)").first.bounding_box()
    assert frame["height"] < VIEWPORT["height"] / 2, f"the table is {frame['height']} px high: it does not scroll"
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
    # every column shown is non-zero somewhere (all rows shown), and the hidden ones are not shown
    widget.locator("input[type=checkbox]").first.uncheck()
    expect(note).to_contain_text(f"{total} of {total} rows", timeout=30_000)
    head, rows = cells()
    for i, name_ in enumerate(head[3:], 3):
        assert any(r[i] not in ("0", "") for r in rows), f"column {name_} is zero in every row but shown"
    for name_ in hidden.group(1).split(", ") if hidden else []:
        assert name_ not in head
    # "sort by" from the page: the table follows
    other = next(c for c in ("null-results", "surprises") if c in head and c != column)
    sorter.select_option(label=other)
    assert sorter.evaluate(selected) == other
    assert_sorted_by(other)
    # open a row: the stepper on its key, at its first surprising step
    first = picker.locator("option").nth(1)
    expect(first).to_contain_text("key ", timeout=30_000)  # the kernel refills the picker after the sort
    # an option is not rendered until the list opens: its text, not its innerText; ipywidgets writes its spaces as
    # no-break spaces
    label = first.text_content().replace("\xa0", " ")
    picker.select_option(index=1)
    stepper = widget.locator(".kjoin-stepper")
    expect(stepper).to_be_visible(timeout=60_000)
    assert ", key " in label, f"the picker's row label {label!r} names no key"
    key = label.split(", key ", 1)[1]  # the row's key as the picker shows it (it may be empty or None)
    expect(widget).to_contain_text(f"key {key}")
    stepper.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"{name}-opened.png"))


def _widget_counts(notebook: Path | str) -> dict[str, int]:
    """How many of each course widget a notebook's code (or ``code`` itself) builds (a ``TopologyStepper(`` also
    contains ``Stepper(``)."""
    code = notebook if isinstance(notebook, str) else _code(notebook)
    counts = {kind: code.count(text) for kind, text in WIDGETS.items()}
    counts["stepper"] -= counts["topology"]
    return counts


def _widgets_of(notebook: Path | str) -> set[str]:
    return {kind for kind, count in _widget_counts(notebook).items() if count > 0}


def test_the_browser_sample_holds_every_widget_kind_of_the_course():
    """A widget kind used only in notebooks outside :data:`SAMPLE` would never be clicked in a browser by the suite."""
    assert set(SAMPLE) <= {n.stem for n in NOTEBOOKS}, f"the sample names notebooks that do not exist: {SAMPLE}"
    used = set().union(*(_widgets_of(n) for n in NOTEBOOKS))
    sampled = set().union(
        *(_widgets_of(n) for n in NOTEBOOKS if n.stem in SAMPLE), _widgets_of("\n".join(EXPLORER_CODE))
    )
    assert used - sampled == set(), f"add a notebook with {sorted(used - sampled)} to tests/test_browser.py's SAMPLE"


@pytest.mark.parametrize("notebook", RUN_IN_BROWSER, ids=[n.stem for n in RUN_IN_BROWSER])
def test_every_notebook_runs_in_jupyterlab_and_its_widgets_work(lab, browser, notebook):
    from playwright.sync_api import expect

    base, token, root = lab
    stem = notebook.stem
    page = _open(browser, base, token, notebook.name)
    # no pop-up: the news question and other toasts are switched off by the course settings
    time.sleep(2)
    assert page.locator(".Toastify__toast").count() == 0, page.locator(".Toastify__toast").all_inner_texts()
    # before running: the stored walkthrough views already show their steps (from the .ipynb)
    stored_steps = page.locator(".kjoin-step")
    if "show_step(" in _code(notebook):
        expect(stored_steps.first).to_be_attached(timeout=30_000)
        cells = [
            c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code" and "show_step(" in c.source
        ]
        assert stored_steps.count() >= len(cells), "a show_step cell has no stored view: run `make notebooks`"
        stored_steps.first.scroll_into_view_if_needed()
        image = stored_steps.first.locator("img.kjoin-timeline-image, img.kjoin-flight-image").first
        expect(image).to_be_visible()
        assert image.evaluate("e => e.naturalWidth") > 0, "the stored timeline image does not load"
        page.screenshot(path=str(ARTIFACTS / f"{stem}-0-stored.png"))

    _run_all(page)
    page.screenshot(path=str(ARTIFACTS / f"{stem}-1-after-run-all.png"))
    errors = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert not tracebacks, f"{notebook.name}: error output after Run All:\n" + "\n".join(tracebacks)
    assert page.get_by_text("Error displaying widget").count() == 0
    # every widget the notebook creates is on the page, and reacts
    expected = _widget_counts(notebook)
    if any(expected.values()):
        expect(page.locator(".jupyter-widgets").first).to_be_visible(timeout=60_000)
    driven = _drive_widgets(page, stem)
    for kind, count in expected.items():
        # a widget built but not displayed (e.g. only printed as text) is not on the page
        assert driven[kind] >= min(count, 1), f"{notebook.name}: no {kind} widget rendered ({driven})"
    # every view fits the notebook's width with the file browser open
    selectors = (
        ".kjoin-stepper, .kjoin-predict, .kjoin-variants, .kjoin-whatif, .kjoin-step, .kjoin-table,"
        " .kjoin-whatif-table, .kjoin-upgrade, .kjoin-topology-stepper, svg.kjoin-topology"
    )
    assert _fits(page, selectors) == [], f"{notebook.name}: views wider than the notebook"
    page.screenshot(path=str(ARTIFACTS / f"{stem}-2-driven.png"), full_page=False)
    # save: the file holds no widget state and none of the learner's answers
    saved = root / notebook.name
    before = saved.stat().st_mtime_ns
    page.locator(".jp-NotebookPanel .jp-Notebook").first.click()
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while saved.stat().st_mtime_ns == before:
        assert time.monotonic() < deadline, "the notebook was not saved"
        time.sleep(0.5)
    time.sleep(1)  # the file is written in one go; let it finish
    text = saved.read_text()
    assert "widgets" not in json.loads(text)["metadata"], "widget state was saved into the notebook"
    assert "widget-state" not in text
    assert ANSWER not in text, "a learner's answer reached the saved notebook"
    page.close()


def test_the_summary_explorer_works_in_jupyterlab(lab, browser):
    """kjoin_viz.SummaryExplorer, the widget of notebook 09 only, on a run like notebook 09's (planted orders and
    customers, fewer of them): it renders, fits the notebook and reacts as :func:`_drive_summary_explorer` asks.
    Notebook 09 itself runs in nbval and in ``make browser-check``."""
    base, token, root = lab
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(code) for code in EXPLORER_CODE]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, root / "explorer_check.ipynb")
    page = _open(browser, base, token, "explorer_check.ipynb")
    _run_all(page)
    errors = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert not tracebacks, "error output after Run All:\n" + "\n".join(tracebacks)
    assert page.get_by_text("Error displaying widget").count() == 0
    assert _drive_widgets(page, "explorer_check")["explorer"] == 1
    assert _fits(page, ".kjoin-stepper, .kjoin-table") == [], "views wider than the notebook"
    page.close()


# -- one stepper, checked against the engine --------------------------------------------------------
SEED_004 = dict(
    left="1:null, 3:A, 5:B, 7:null, 9:C, 12:null, 15:D, 40:E, 60:F, 100:G",
    right="2:null, 4:a, 6:b, 8:null, 10:c, 11:null, 13:null, 14:d, 80:f",
    window={"before_ms": 15, "after_ms": 15, "grace_ms": 5},
    semantics="3.1",
)


def _state_rows(view: StepView, step: int) -> list[str]:
    """The rows of every store after ``step``, as the page's table text shows them."""
    return ["\t".join(row) for table in view.tables(step) for row in table.rows]


def _wait_for_rows(state, rows: list[str], timeout_s: float = 30) -> None:
    """Wait until the state pane's text holds every row (cells tab-separated, as rendered)."""
    deadline = time.monotonic() + timeout_s
    while True:
        text = state.inner_text()
        missing = [row for row in rows if row not in text]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"rows missing from the state tables: {missing}\n{text}")
        time.sleep(0.2)


def test_stepper_buttons_and_slider_change_the_state_shown_in_jupyterlab(lab, browser):
    from playwright.sync_api import expect

    base, token, root = lab
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "import kjoin, kjoin_viz\n"
            f"trace = kjoin.run(kjoin.Scenario.from_notation('stream-stream', 'left', **{SEED_004!r}))\n"
            "kjoin_viz.Stepper(trace, step=17)"
        ),
        nbformat.v4.new_code_cell("kjoin_viz.Predict(trace, 17)"),
        nbformat.v4.new_code_cell("kjoin_viz.Predict(trace, 15, ask='release')"),
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, root / "stepper_check.ipynb")
    trace = kjoin.run(kjoin.Scenario.from_notation("stream-stream", "left", **SEED_004))
    view = StepView(trace)

    page = _open(browser, base, token, "stepper_check.ipynb")
    _run_all(page)
    stepper = page.locator(".kjoin-stepper").first
    state = stepper.locator(".kjoin-pane-state")
    header = stepper.locator(".kjoin-pane-header")
    expect(header).to_contain_text("step 17 (18 of 19)", timeout=60_000)
    stepper.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "stepper-step-17.png"))
    before = state.inner_text()
    # step 17 emits nothing for a drop ahead: "next drop" is disabled, "next" is not
    expect(stepper.get_by_role("button", name="next drop", exact=True)).to_be_disabled()
    expect(stepper.get_by_role("button", name="next", exact=True)).to_be_enabled()

    stepper.get_by_role("button", name="next", exact=True).click()
    expect(header).to_contain_text("step 18 (19 of 19)")
    _wait_for_rows(state, _state_rows(view, 18))
    assert state.inner_text() != before
    assert "100\tleft\tk\tG\t120" in state.inner_text()  # G waits in the outer-join buffer
    expect(stepper.get_by_role("button", name="next", exact=True)).to_be_disabled()  # nothing ahead
    expect(header).to_contain_text("held until stream time passes 120")
    page.screenshot(path=str(ARTIFACTS / "stepper-after-next.png"))

    stepper.get_by_role("button", name="first", exact=True).click()
    expect(header).to_contain_text("step 0 (1 of 19)")
    handle = stepper.locator(".widget-slider .noUi-handle")
    handle.focus()
    for _ in range(3):
        handle.press("ArrowRight")
    expect(header).to_contain_text("step 3 (4 of 19)")
    _wait_for_rows(state, _state_rows(view, 3))
    assert "k\t4\ta" in state.inner_text()
    timeline = stepper.locator(".kjoin-pane-timeline svg")
    assert timeline.get_attribute("data-view") == "0..60"  # the page of the axis around a@4's window
    page.screenshot(path=str(ARTIFACTS / "stepper-after-slider.png"))

    play = stepper.locator(".widget-play button").first
    play.click()  # play: one step every 600 ms from step 3
    expect(header).to_contain_text("step 5 (6 of 19)", timeout=30_000)
    play.click()  # the same button pauses
    time.sleep(1)
    paused = header.inner_text()
    time.sleep(1.5)
    assert header.inner_text() == paused, "the stepper kept moving after pause"
    page.screenshot(path=str(ARTIFACTS / "stepper-after-play.png"))

    # the predict widgets: a right answer, a wrong one, and the stepper they open
    from kjoin_viz.labels import TONES

    fate, release = page.locator(".kjoin-predict").nth(0), page.locator(".kjoin-predict").nth(1)
    fate.scroll_into_view_if_needed()
    expect(fate).to_contain_text("the state before step 17")
    fate.get_by_label(TONES["no-match"]).check()
    fate.locator("input[type=text]").fill(f"E-null, {ANSWER}")
    fate.get_by_role("button", name="check").click()
    feedback = fate.locator(".kjoin-feedback")
    # first stage: what is wrong and a hint, neither the answer nor the stepper
    expect(feedback).to_contain_text("Not yet.")
    expect(feedback).to_contain_text("What the record does: right.")
    expect(feedback).not_to_contain_text("Why:")
    expect(fate.locator(".kjoin-stepper")).to_have_count(0)
    feedback.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "predict-hint.png"))
    fate.get_by_role("button", name="show the answer").click()
    expect(feedback).to_contain_text("Fate: right")
    expect(feedback).to_contain_text(f"Not emitted at this step: {ANSWER}.")
    expect(fate.locator(".kjoin-stepper .kjoin-pane-header")).to_contain_text("step 17 (18 of 19)")
    expect(fate.get_by_role("button", name="show solution")).to_be_hidden()  # learners get no solution button
    feedback.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "predict-fate-and-outputs.png"))
    release.scroll_into_view_if_needed()
    release.locator("select").select_option(label="step 17: right f@80")
    release.get_by_role("button", name="check").click()
    expect(release.locator(".kjoin-feedback")).to_contain_text(
        "Right: it leaves at step 17: right f@80 (stream time 80"
    )
    expect(release.locator(".kjoin-stepper .kjoin-pane-header")).to_contain_text("step 17 (18 of 19)")
    release.locator(".kjoin-feedback").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "predict-release.png"))
    # saved, the notebook keeps neither the widgets' state nor the answer
    saved = root / "stepper_check.ipynb"
    before = saved.stat().st_mtime_ns
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while saved.stat().st_mtime_ns == before:
        assert time.monotonic() < deadline, "the notebook was not saved"
        time.sleep(0.5)
    time.sleep(1)
    text = saved.read_text()
    assert "widgets" not in json.loads(text)["metadata"] and ANSWER not in text
    assert "Predict: Step 17: the right record f@80 (key k) arrives." in text  # the question is what is stored


OVERLAPPING_LABELS = """
() => {
  const svg = document.querySelector('svg');
  const visible = (t) => {
    for (let e = t; e && e !== svg.parentElement; e = e.parentElement) {
      const o = e.getAttribute('opacity') ?? e.style.opacity;
      if (o !== null && o !== '' && parseFloat(o) === 0) return false;  // Vega hides a crowded tick label so
    }
    return true;
  };
  const texts = Array.from(svg.querySelectorAll('text')).filter(visible)
      .map(t => [t.textContent, t.getBoundingClientRect()]).filter(([s, r]) => s.trim() && r.width > 0);
  const found = [];
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
    const [a, ra] = texts[i], [b, rb] = texts[j];
    const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
    const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
    if (w > 1 && h > 1) found.push(`${a} / ${b}`);
  }
  return found;
}
"""


def _stored_svgs(notebook: Path):
    """Every SVG a notebook stores: the charts (image/svg+xml) and the step views' timelines and message flights
    (data:image/svg+xml in their HTML)."""
    import base64

    for index, cell in enumerate(nbformat.read(notebook, as_version=4).cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/svg+xml" in data:
                yield index, data["image/svg+xml"]
            for encoded in re.findall(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", data.get("text/html", "")):
                yield index, base64.b64decode(encoded).decode()


def test_no_chart_or_view_of_any_notebook_draws_a_label_over_another(browser):
    """Labels never overlap: every chart and every timeline a notebook shows, drawn by Chromium,
    has no two visible labels whose boxes overlap (the outputs charts, the era diff charts, the timelines of the
    step views and the foreign-key message flights)."""
    page = browser.new_page(viewport=VIEWPORT)
    # the check sees a crowded picture: two labels at one place, a third hidden as Vega hides one
    page.set_content(
        "<svg width='200' height='50'><text x='10' y='20'>A-a@4</text><text x='14' y='22'>B-a@5</text>"
        "<g opacity='0'><text x='10' y='20'>hidden</text></g></svg>"
    )
    assert page.evaluate(OVERLAPPING_LABELS) == ["A-a@4 / B-a@5"]
    seen, crowded = 0, []
    for notebook in NOTEBOOKS:
        for index, svg in _stored_svgs(notebook):
            seen += 1
            page.set_content(f"<html><body style='margin:0'>{svg}</body></html>")
            overlaps = page.evaluate(OVERLAPPING_LABELS)
            if overlaps:
                crowded.append(f"{notebook.stem} cell {index}: {overlaps[:4]}")
    assert seen >= 30, f"only {seen} stored SVGs: is the test still finding the charts?"
    assert not crowded, "labels drawn over each other:\n" + "\n".join(crowded)
