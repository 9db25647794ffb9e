"""`make workshop` for a room: two learners at once, each with a kernel and a course of their own.

The test runs the exact command the Makefile's ``workshop`` recipe runs (read with ``make -n``),
on a free local port, and checks that the address answers within 30 s. Two learners (two
browser contexts: separate cookies and storage, as two laptops) open the first course notebook
that has a stepper at the same time; each moves their stepper differently, and each page must
show its own step. Screenshots go to ``test-artifacts/``. It fails, never skips, when Debian's
Chromium is missing.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from .test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, ROOT, VIEWPORT, _free_port, _stop

pytestmark = pytest.mark.browser
START_BUDGET_S = 30


def _workshop_command(port: int) -> list[str]:
    """The Makefile's voila command line, with this test's port and the loopback address."""
    recipe = subprocess.run(
        ["make", "-n", "-W", "pyproject.toml", "workshop", f"WORKSHOP_PORT={port}", "WORKSHOP_IP=127.0.0.1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.replace("\\\n", " ")
    line = next(line for line in recipe.splitlines() if "/voila " in line)
    args = shlex.split(line)
    assert args[0].endswith("/voila") and "--no-browser" in args and f"--port={port}" in args
    return [sys.executable, "-m", "voila", *args[1:]]


def _first_stepper_notebook() -> Path:
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        code = "\n".join(c.source for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code")
        if "Stepper(" in code:
            return notebook
    raise AssertionError("no course notebook shows a stepper")


def _step(header) -> tuple[int, int]:
    shown, count = re.search(r"step (\d+) \(\d+ of (\d+)\)", header.inner_text()).groups()
    return int(shown), int(count) - 1


def test_two_learners_at_once_each_get_their_own_kernel_and_state(tmp_path):
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make system-deps` (apt-get install chromium)"
    from playwright.sync_api import expect, sync_playwright

    notebook = _first_stepper_notebook()
    port = _free_port()
    log_path = tmp_path / "voila.log"
    ARTIFACTS.mkdir(exist_ok=True)
    with open(log_path, "w") as log:
        started = time.monotonic()
        server = subprocess.Popen(
            _workshop_command(port),
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
        )
        base = f"http://127.0.0.1:{port}"
        try:
            while True:
                try:
                    urllib.request.urlopen(f"{base}/", timeout=2)
                    break
                except OSError:
                    assert server.poll() is None, "voila stopped:\n" + log_path.read_text()
                    assert time.monotonic() - started < START_BUDGET_S, (
                        "the workshop did not start in 30 s:\n" + log_path.read_text()
                    )
                    time.sleep(0.3)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    learners = [browser.new_context(viewport=VIEWPORT).new_page() for _ in range(2)]
                    learners[0].goto(f"{base}/")  # the one address: it lists the course
                    expect(learners[0].get_by_text(notebook.name).first).to_be_visible(timeout=60_000)
                    learners[0].screenshot(path=str(ARTIFACTS / "workshop-home.png"))
                    for page in learners:  # both open the notebook at once
                        page.goto(f"{base}/voila/render/{notebook.name}", wait_until="commit")
                    headers = []
                    for page in learners:
                        stepper = page.locator(".kjoin-stepper").first
                        expect(stepper).to_be_visible(timeout=300_000)
                        headers.append(stepper.locator(".kjoin-pane-header"))
                    start, last = _step(headers[0])
                    assert _step(headers[1]) == (start, last)
                    assert start + 2 <= last, "the test needs a stepper that starts two steps before its end"
                    a, b = [page.locator(".kjoin-stepper").first for page in learners]
                    a.get_by_role("button", name="last", exact=True).click()
                    expect(headers[0]).to_contain_text(f"step {last} ({last + 1} of {last + 1})", timeout=30_000)
                    b.get_by_role("button", name="next", exact=True).click()
                    expect(headers[1]).to_contain_text(f"step {start + 1} ({start + 2} of {last + 1})", timeout=30_000)
                    assert _step(headers[0]) == (last, last), "learner B's click moved learner A's stepper"
                    a.get_by_role("button", name="previous", exact=True).click()
                    expect(headers[0]).to_contain_text(f"step {last - 1} ({last} of {last + 1})", timeout=30_000)
                    time.sleep(1)
                    assert _step(headers[1]) == (start + 1, last), "learner A's click moved learner B's stepper"
                    for name, page in zip("ab", learners):
                        page.locator(".kjoin-stepper").first.scroll_into_view_if_needed()
                        page.screenshot(path=str(ARTIFACTS / f"workshop-learner-{name}.png"))
                finally:
                    browser.close()
        finally:
            _stop(server)
