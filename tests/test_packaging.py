"""The project's packaging: pyproject.toml and environment.yml list the same dependencies,
the console script is installed, and the public names are what we mean them to be."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import yaml

import kjoin

ROOT = Path(__file__).resolve().parent.parent
# Present in one file only on purpose: conda's own runtime pieces.
CONDA_ONLY = {"python", "openjdk", "pip"}


def _split(requirement: str) -> tuple[str, str]:
    """``"pandas>=2.2,<3"`` -> ``("pandas", "<3,>=2.2")``: the name, and its bounds in a fixed order."""
    match = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", requirement.strip())
    assert match, requirement
    bounds = sorted(match.group(2).replace(" ", "").split(","))
    return match.group(1).lower().replace("_", "-"), ",".join(bounds)


def _installed_extras() -> list[str]:
    """The extras the Makefile's virtual environment installs (``pip install -e '.[test,docs]'``)."""
    (extras,) = re.findall(r"pip install --quiet -e '\.\[([\w,]+)\]'", (ROOT / "Makefile").read_text())
    return extras.split(",")


def test_make_installs_every_extra():
    """`make test` builds the site and runs the tests, so its environment has every extra pyproject.toml declares."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert sorted(_installed_extras()) == sorted(project["optional-dependencies"]) == ["docs", "test"]


def test_environment_yml_lists_the_same_dependencies_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [r for extra in _installed_extras() for r in project["optional-dependencies"][extra]]
    pip_side = dict(_split(r) for r in project["dependencies"] + extras)
    conda = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda_side = dict(_split(d) for d in conda["dependencies"] if isinstance(d, str))
    assert {k: v for k, v in conda_side.items() if k not in CONDA_ONLY} == pip_side
    assert conda_side["python"] == "=3.11" and conda_side["openjdk"] == "=17"


def test_pandas_is_pinned_below_3_for_pyspark():
    """PySpark 4.3 does not fully support pandas 3 (null strings become NaN in UDFs)."""
    import pandas

    assert int(pandas.__version__.split(".")[0]) == 2


def test_the_console_script_is_installed():
    assert shutil.which("kjoin") or (Path(__import__("sys").executable).parent / "kjoin").exists()


def test_public_names():
    assert sorted(kjoin.__all__) == sorted(
        [
            "Deliver",
            "Delivery",
            "Diff",
            "Difference",
            "Event",
            "Fate",
            "JoinWindows",
            "LATEST",
            "Output",
            "OutputKind",
            "Reason",
            "Record",
            "Scenario",
            "ScenarioError",
            "Semantics",
            "Side",
            "StateSnapshot",
            "Step",
            "TableOptions",
            "Topology",
            "TopologyError",
            "TopologyTrace",
            "Trace",
            "default_joiner",
            "diff",
            "load_scenario",
            "merge_by_timestamp",
            "parse_semantics",
            "run",
        ]
    )
    for name in kjoin.__all__:
        assert getattr(kjoin, name) is not None


def test_make_lab_runs_jupyter_even_as_root():
    """The README's main job starts JupyterLab; Jupyter refuses to run as root without
    --allow-root, and CI machines and containers often are root."""
    import os
    import subprocess

    root = Path(__file__).resolve().parents[1]
    recipe = subprocess.run(
        ["make", "-n", "-W", "pyproject.toml", "lab"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    command = next(line for line in recipe.splitlines() if "jupyter lab" in line)
    assert ("--allow-root" in command) == (os.geteuid() == 0)
