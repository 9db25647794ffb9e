"""The picture of the stepper on the home page and in the README (``docs/_static/stepper.png``): a real
screenshot of ``kjoin_viz.Stepper`` in JupyterLab, in headless Chromium, as ``tests/test_browser.py`` drives it.

Run it again when the stepper's look changes: ``.venv/bin/python docs/_ext/stepper_screenshot.py``.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.test_browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    SEED_004,
    SETTINGS,
    _free_port,
    _open,
    _run_all,
    _stop,
    _wait_for,
)

TARGET = ROOT / "docs" / "_static" / "stepper.png"


def main() -> None:
    from playwright.sync_api import expect, sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        root = tmp_path / "root"
        root.mkdir()
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [
            nbformat.v4.new_code_cell(
                "import kjoin, kjoin_viz\n"
                f"trace = kjoin.run(kjoin.Scenario.from_notation('stream-stream', 'left', **{SEED_004!r}))\n"
                "kjoin_viz.Stepper(trace, step=15)"
            )
        ]
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(notebook, root / "stepper.ipynb")
        settings = tmp_path / "settings" / "@jupyterlab" / "docmanager-extension"
        settings.mkdir(parents=True)
        (settings / "plugin.jupyterlab-settings").write_text(json.dumps({"autosave": False}))
        port, token = _free_port(), secrets.token_hex(16)
        command = [sys.executable, "-m", "jupyter", "lab", f"--port={port}", "--ip=127.0.0.1", "--no-browser",
                   f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
                   f"--LabApp.app_settings_dir={SETTINGS}", f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
                   f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}"]  # fmt: skip
        if os.geteuid() == 0:
            command.append("--allow-root")
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "PYTHONPATH": str(ROOT)}
        log_path = tmp_path / "lab.log"
        with open(log_path, "w") as log:
            server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
            try:
                base = f"http://127.0.0.1:{port}"
                _wait_for(f"{base}/api/status?token={token}", server, log_path)
                with sync_playwright() as playwright:
                    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                    try:
                        page = _open(browser, base, token, "stepper.ipynb")
                        page.locator('.jp-SideBar [data-id="filebrowser"]').first.click()  # the notebook alone
                        _run_all(page)
                        stepper = page.locator(".kjoin-stepper").first
                        expect(stepper.locator(".kjoin-pane-header")).to_contain_text("step 15", timeout=60_000)
                        stepper.scroll_into_view_if_needed()
                        page.wait_for_timeout(1000)
                        stepper.screenshot(path=str(TARGET))
                    finally:
                        browser.close()
            finally:
                _stop(server)
    print(TARGET)


if __name__ == "__main__":
    main()
