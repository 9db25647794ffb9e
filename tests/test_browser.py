"""The stepper in a real browser: JupyterLab in headless Chromium, driven by Playwright.

The test starts its own JupyterLab (a free local port, a token, autosave off, a temporary
root holding a copy of the course's first notebook), runs all cells, then clicks the
stepper's buttons and moves its slider, and checks that the state tables on the page show
what the trace says the state is after that step. Screenshots go to ``test-artifacts/``.
It fails — never skips — when Debian's Chromium is missing (``make system-deps``).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import kjoin
from kjoin_viz import StepView

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = sorted((ROOT / "notebooks").glob("01_*.ipynb"))[0]  # the course's stream-stream notebook
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server of this test only: ``(base url, token, notebook name)``."""
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / "stepper_copy.ipynb")
    settings = tmp_path / "settings" / "@jupyterlab" / "docmanager-extension"
    settings.mkdir(parents=True)
    (settings / "plugin.jupyterlab-settings").write_text(json.dumps({"autosave": False}))
    port, token = _free_port(), secrets.token_hex(16)
    command = [sys.executable, "-m", "jupyter", "lab", f"--port={port}", "--ip=127.0.0.1", "--no-browser",
               "--ServerApp.open_browser=False", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
               f"--LabApp.user_settings_dir={tmp_path / 'settings'}", f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    log = open(tmp_path / "lab.log", "w")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text())
                time.sleep(0.5)
        yield base, token, "stepper_copy.ipynb"
    finally:
        server.terminate()  # only the server this fixture started
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _state_rows(view: StepView, step: int) -> list[str]:
    """The rows of every store after ``step``, as the page's table text shows them."""
    return ["\t".join(row) for table in view.tables(step) for row in table.rows]


def _wait_for_rows(state, rows: list[str], timeout_s: float = 15) -> None:
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


def test_stepper_buttons_and_slider_change_the_state_shown_in_jupyterlab(lab):
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make system-deps` (apt-get install chromium)"
    from playwright.sync_api import expect, sync_playwright

    base, token, name = lab
    # the notebook's free-play stepper: the outer join of Kafka's wiki example plus h@130
    trace = kjoin.run(kjoin.Scenario.from_notation(
        "stream-stream", "outer",
        left="1:null, 3:A, 5:B, 7:null, 9:C, 12:null, 15:D, 40:E, 60:F, 100:G",
        right="2:null, 4:a, 6:b, 8:null, 10:c, 11:null, 13:null, 14:d, 80:f, 130:h",
        window={"before_ms": 15, "after_ms": 15, "grace_ms": 5}))
    view = StepView(trace)
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/lab/tree/{name}?token={token}")
            status = page.locator(".jp-StatusBar-Widget", has_text="Idle")
            expect(status.first).to_be_visible(timeout=90_000)
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            stepper = page.locator(".kjoin-stepper")
            state = stepper.locator(".kjoin-pane-state")
            header = stepper.locator(".kjoin-pane-header")
            # no cell moves the notebook's stepper: after Run All it shows step 0
            expect(header).to_contain_text("step 0 of 19", timeout=90_000)
            expect(status.first).to_be_visible(timeout=90_000)
            stepper.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "stepper-step-0.png"))
            before = state.inner_text()

            stepper.get_by_role("button", name="last", exact=True).click()
            expect(header).to_contain_text("step 19 of 19")
            _wait_for_rows(state, _state_rows(view, 19))
            assert state.inner_text() != before
            assert "130\tright\tk\th\t150" in state.inner_text()  # h waits in the outer-join buffer
            page.screenshot(path=str(ARTIFACTS / "stepper-after-last.png"))

            stepper.get_by_role("button", name="first", exact=True).click()
            expect(header).to_contain_text("step 0 of 19")
            handle = stepper.locator(".widget-slider .noUi-handle")
            handle.focus()
            for _ in range(3):
                handle.press("ArrowRight")
            expect(header).to_contain_text("step 3 of 19")
            _wait_for_rows(state, _state_rows(view, 3))
            assert "k\t4\ta" in state.inner_text()
            page.screenshot(path=str(ARTIFACTS / "stepper-after-slider.png"))

            play = stepper.locator(".widget-play button").first
            play.click()  # play: one step every 600 ms from step 3
            expect(header).to_contain_text("step 5 of 19", timeout=20_000)
            play.click()  # the same button pauses
            time.sleep(1)
            paused = header.inner_text()
            time.sleep(1.5)
            assert header.inner_text() == paused, "the stepper kept moving after pause"
            page.screenshot(path=str(ARTIFACTS / "stepper-after-play.png"))
        finally:
            browser.close()
