"""The course's make targets: what `make lab` prints and opens, `make notebooks`, and the
JupyterLab settings the course runs under. The recipes are read with ``make -n`` (nothing is
started) and the demo table is computed by running the recipe's own command."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _recipe(target: str) -> list[list[str]]:
    text = subprocess.run(
        ["make", "-n", "-W", "pyproject.toml", target], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.replace("\\\n", " ")
    return [shlex.split(line) for line in text.splitlines() if line.strip()]


def test_make_lab_first_prints_a_demo_where_inner_left_and_outer_differ():
    (command,) = [args for args in _recipe("demo") if args[0].endswith("/kjoin") and args[1] == "table"]
    table = subprocess.run(
        [sys.executable, "-m", "kjoin.cli", *command[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    ).stdout
    rows = [[cell.strip() for cell in line.split("|")] for line in table.splitlines()[2:]]
    header = [cell.strip() for cell in table.splitlines()[0].split("|")]
    assert header == ["ts", "left input", "right input", "inner", "left", "outer"]
    differ = [row[0] for row in rows if row[3] != row[4] or row[3] != row[5]]
    assert differ == ["80", "100", "130"]  # E-null when f@80 moves stream time past 60, F-null at G@100, ...
    assert [row[0] for row in rows if row[4] != row[5]] == ["130"]  # ... and only outer emits null-f at h@130
    assert {row[1] or row[2] for row in rows[-5:]} == {"E", "F", "f", "G", "h"}


def test_make_lab_opens_the_first_notebook_with_the_course_settings():
    (command,) = [args for args in _recipe("lab") if "lab" in args and args[0].endswith("/jupyter")]
    first = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))[0]
    assert f"--LabApp.default_url=/lab/tree/{first}" in command
    assert f"--ServerApp.root_dir={ROOT}/notebooks" in command
    assert f"--LabApp.app_settings_dir={ROOT}/jupyter/settings" in command
    overrides = json.loads((ROOT / "jupyter" / "settings" / "overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"  # no news pop-up
    assert overrides["@jupyter-widgets/jupyterlab-manager:plugin"]["saveState"] is False  # no widget state saved


def test_make_notebooks_reruns_in_place_without_widget_state():
    (command,) = [args for args in _recipe("notebooks") if "nbconvert" in args]
    assert {"--execute", "--inplace", "--ExecutePreprocessor.store_widget_state=False"} <= set(command)
    assert command[-1] == "notebooks/*.ipynb"
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):  # and the stored notebooks hold none
        assert "widgets" not in json.loads(notebook.read_text())["metadata"], notebook.name
