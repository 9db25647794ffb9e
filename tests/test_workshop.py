"""`make workshop` for a room: learners at once, each with a kernel and a course of their own, and the trainer's tally.

The test runs the exact command the Makefile's ``workshop`` recipe runs (read with ``make -n``),
on a free local port, and checks that the address answers within 30 s. Two learners (two
browser contexts: separate cookies and storage, as two laptops) open the first course notebook
that has a stepper at the same time; each moves their stepper differently, and each page must
show its own step. Three learners answer an exercise, one of them reloading the page: the trainer's tally names
the notebook and the exercise of every answer, counts three learners (a learner is a browser: the workshop
template's cookie), and downloads the answers as CSV. Screenshots go to ``test-artifacts/``. It fails, never skips,
when Debian's Chromium is missing.
"""

from __future__ import annotations

import json
import os
import re
import secrets
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


def _recipe(port: int, room_port: int) -> list[str]:
    """The Makefile's workshop recipe (``make -n``), one shell command per item, with this test's ports."""
    recipe = subprocess.run(
        [
            "make",
            "-n",
            "-W",
            "pyproject.toml",
            "workshop",
            f"WORKSHOP_PORT={port}",
            "WORKSHOP_IP=127.0.0.1",
            f"ROOM_PORT={room_port}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.replace("\\\n", " ")
    return [part.strip() for line in recipe.splitlines() for part in re.split(r";|&(?!&)", line) if part.strip()]


def _workshop_command(port: int, room_port: int | None = None) -> tuple[list[str], dict[str, str]]:
    """The Makefile's voila command line, with this test's port and the loopback address, and the environment
    the recipe gives it (``KJOIN_ROOM_URL``: the room's tally)."""
    room_port = room_port or _free_port()
    line = next(part for part in _recipe(port, room_port) if "/voila " in part)
    args = shlex.split(line)
    env = {}
    while "=" in args[0] and not args[0].startswith("-"):
        name, _, value = args.pop(0).partition("=")
        env[name] = value
    assert args[0].endswith("/voila") and "--no-browser" in args and f"--port={port}" in args
    assert env.get("KJOIN_ROOM_URL") == f"http://127.0.0.1:{room_port}"  # the tally: loopback only
    assert env.get("KJOIN_WORKSHOP") == "1"  # every kernel's Spark session is the small workshop one
    return [sys.executable, "-m", "voila", *args[1:]], env


def _room_command(room_port: int) -> list[str]:
    """The Makefile's command that starts the room's tally."""
    line = next(part for part in _recipe(_free_port(), room_port) if "kjoin_viz.room" in part)
    args = shlex.split(line)
    assert f"--port={room_port}" in args
    return [sys.executable, *args[1:]]


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
        command, env = _workshop_command(port)
        server = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
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
                    _expect_listed(learners[0], notebook.name)
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


# -- the room's tally and the trainer's page: three learners at once ------------------------------------
ROOM_NOTEBOOK = "04_table_table_joins.ipynb"
"""Its first exercise asks about the first record of its practice input (a right update before any left row)."""


def _first_exercise() -> tuple[str, str, str]:
    """The first predict widget's right answer: (the fate's words, the outputs), and its solution text, from the
    engine on the notebook's own code (every code cell before that widget)."""
    from kjoin_viz.labels import TONES

    cells = nbformat.read(ROOT / "notebooks" / ROOM_NOTEBOOK, as_version=4).cells
    namespace: dict = {}
    for cell in cells:
        if cell.cell_type != "code":
            continue
        if "Predict(" in cell.source:
            widget = eval(cell.source.strip(), namespace)  # noqa: S307 - the course's own cell
            step = widget.trace.steps[widget.index]
            from kjoin_viz import fate_label

            outputs = ", ".join(o.render() for o in step.outputs) or "none"
            return TONES[fate_label(step).tone], outputs, widget.solution()
        if "Stepper(" in cell.source or "show_step(" in cell.source or "use_offline_renderer" in cell.source:
            continue
        exec(cell.source, namespace)  # noqa: S102
    raise AssertionError(f"{ROOM_NOTEBOOK} has no predict widget")


def test_three_learners_answer_and_the_trainer_sees_the_rooms_tally_with_the_solutions(tmp_path):
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make system-deps` (apt-get install chromium)"
    from playwright.sync_api import expect, sync_playwright

    right_fate, right_outputs, solution = _first_exercise()
    port, room_port = _free_port(), _free_port()
    token = secrets.token_urlsafe(8)
    command, env = _workshop_command(port, room_port)
    ARTIFACTS.mkdir(exist_ok=True)
    with open(tmp_path / "room.log", "w") as room_log, open(tmp_path / "voila.log", "w") as log:
        room = subprocess.Popen(
            _room_command(room_port), cwd=ROOT, stdout=room_log, stderr=subprocess.STDOUT,
            env={**os.environ, "KJOIN_TRAINER_TOKEN": token, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        server = subprocess.Popen(
            command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env, "PYTHONPATH": str(ROOT)}
        )
        base, tally = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{room_port}"
        try:
            started = time.monotonic()
            for url, process in ((f"{base}/", server), (f"{tally}/tally", room)):
                while True:
                    try:
                        urllib.request.urlopen(url, timeout=2)
                        break
                    except OSError:
                        assert process.poll() is None, (tmp_path / "voila.log").read_text()
                        assert time.monotonic() - started < 60, f"{url} did not answer in 60 s"
                        time.sleep(0.3)
            # the trainer's page needs the token: the room cannot read the solutions
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"{tally}/trainer?token=wrong", timeout=5)
            assert refused.value.code == 403
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    learners = [browser.new_context(viewport=VIEWPORT).new_page() for _ in range(3)]
                    for page in learners:  # the one address first (it names the browser's learner), then 04
                        page.goto(f"{base}/")
                        _expect_listed(page, ROOM_NOTEBOOK)
                        page.goto(f"{base}/voila/render/{ROOM_NOTEBOOK}", wait_until="commit")
                    exercises = []
                    for page in learners:
                        exercise = page.locator(".kjoin-predict").first
                        expect(exercise).to_be_visible(timeout=300_000)
                        exercises.append(exercise)
                        assert solution not in page.content(), "a learner's page shows the solution"

                    def answer(exercise, fate: str, outputs: str) -> None:
                        exercise.scroll_into_view_if_needed()
                        exercise.locator(".widget-radio-box label", has_text=fate).first.click()
                        exercise.locator("input[type=text]").first.fill(outputs)
                        exercise.get_by_role("button", name="check").click()

                    wrong_fate = "joins: emits result(s) with partner(s) from the other side"
                    assert wrong_fate != right_fate
                    a, b, c = exercises
                    answer(a, right_fate, right_outputs)  # A: right at once
                    expect(a.locator(".kjoin-answer")).to_be_visible(timeout=30_000)
                    answer(b, wrong_fate, "Zq-zq")  # B: wrong, and stays stuck
                    expect(b.locator(".kjoin-hint")).to_be_visible(timeout=30_000)
                    answer(c, wrong_fate, "Zq-zq")  # C: wrong, then right
                    expect(c.locator(".kjoin-hint")).to_be_visible(timeout=30_000)
                    answer(c, right_fate, right_outputs)
                    expect(c.locator(".kjoin-answer")).to_be_visible(timeout=30_000)
                    for name, page in zip("abc", learners):
                        assert solution not in page.content() or name in "ac"  # B never asked for it
                    # C reloads the page: a new kernel, the same browser, the same learner
                    learners[2].reload(wait_until="commit")
                    c = learners[2].locator(".kjoin-predict").first
                    expect(c).to_be_visible(timeout=300_000)
                    answer(c, right_fate, right_outputs)
                    expect(c.locator(".kjoin-answer")).to_be_visible(timeout=30_000)
                    deadline = time.monotonic() + 30
                    while True:  # the kernels report as they check
                        rows = json.loads(urllib.request.urlopen(f"{tally}/tally", timeout=5).read())
                        first = next((r for r in rows if r["prompt"].startswith("Step 0:")), None)
                        csv_rows = _answers_csv(tally, token)
                        if first and first["right_now"] == 2 and len(csv_rows) == 5:
                            break
                        assert time.monotonic() < deadline, f"the tally did not count the five checks: {rows}"
                        time.sleep(0.5)
                    assert first["tried"] == 3, "a reload counted as a new learner"
                    assert first["right_first"] == 1 and first["stuck"] == 1
                    assert first["wrong_answers"][0] == ["joined; Zq-zq", 2]
                    assert "solution" not in first  # /tally is the counts only
                    # every row says where its exercise is: the notebook, and its number there
                    assert first["notebook"] == ROOM_NOTEBOOK and first["number"] == 1
                    assert all(r["notebook"] == ROOM_NOTEBOOK and r["number"] >= 1 for r in rows), rows
                    assert {(r["notebook"], r["exercise"]) for r in csv_rows} == {(ROOM_NOTEBOOK, "1")}
                    assert len({r["learner"] for r in csv_rows}) == 3  # three browsers, one of them reloaded
                    trainer = browser.new_context(viewport=VIEWPORT).new_page()
                    trainer.goto(f"{tally}/trainer?token={token}")
                    expect(trainer.locator("b.learners")).to_have_text("3")
                    row = trainer.locator("table.kjoin-tally tr", has_text=first["prompt"]).first
                    expect(row.locator("td.notebook")).to_have_text(ROOM_NOTEBOOK)
                    expect(row.locator("td.number")).to_have_text("1")
                    expect(row.locator("td.tried")).to_have_text("3")
                    expect(row.locator("td.right-now")).to_have_text("2")
                    expect(row.locator("td.stuck")).to_have_text("1")
                    expect(row.locator("td.solution")).to_contain_text(solution[:40])
                    with trainer.expect_download() as download:
                        trainer.locator("a.csv").click()
                    assert download.value.suggested_filename == "answers.csv"
                    trainer.screenshot(path=str(ARTIFACTS / "workshop-trainer-tally.png"), full_page=True)
                    b.scroll_into_view_if_needed()
                    learners[1].screenshot(path=str(ARTIFACTS / "workshop-learner-stuck.png"))
                finally:
                    browser.close()
        finally:
            _stop(server)
            _stop(room)


def _answers_csv(tally: str, token: str) -> list[dict[str, str]]:
    import csv
    import io

    text = urllib.request.urlopen(f"{tally}/answers.csv?token={token}", timeout=5).read().decode()
    return list(csv.DictReader(io.StringIO(text)))


def _expect_listed(page, name: str) -> None:
    """The home page lists ``name``. Voila's tree page asks for the directory once when it loads; on a loaded
    machine that answer came back empty once in a CI run (an empty list, no error) while it lists the course when
    loaded again, as a learner would: three loads of up to 30 s each."""
    from playwright.sync_api import expect

    for attempt in range(3):
        try:
            expect(page.get_by_text(name).first).to_be_visible(timeout=30_000)
            return
        except AssertionError:
            if attempt == 2:
                raise
            page.reload()
