"""Real browser: JupyterLab + headless Debian Chromium (Playwright) run notebooks/01-quickstart-local.ipynb
up to its panels cell (tag ``panels``), click Submit in the rendered RunPanel and wait for the reward
chart to gain points. The screenshot becomes docs/img/studio-panels.png (the docs site shows it).

Needs Debian ``chromium`` at /usr/bin/chromium (``apt-get install -y chromium``) and the
``playwright`` Python package; Playwright's own browsers are never downloaded
(``PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1``). Flags from docs/references.md §4.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import requests

from hyperpod_rl.cluster.local import find_free_port
from hyperpod_rl.errors import JobError
from hyperpod_rl.jobs import latest_submission, stop_run
from hyperpod_rl.paths import run_dir

pytestmark = [pytest.mark.ray, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RUN_ID = "browser-studio"
NOTEBOOK = "01-quickstart-local.ipynb"
#: The docs site shows this screenshot (docs/widgets.md); it is written here, never by hand.
DOCS_SHOT = REPO / "docs" / "img" / "studio-panels.png"
# A plotly figure's reward trace is data[2] (band low, band high, mean); the training figure is the first plot.
REWARD_POINTS_JS = "() => { const gd = document.querySelector('.js-plotly-plot'); return gd && gd.data && gd.data[2] && gd.data[2].x ? gd.data[2].x.length : 0 }"


@pytest.fixture
def jupyterlab(tmp_path, local_cluster):
    """JupyterLab on 127.0.0.1 with a random token, serving a copy of the studio notebook."""
    nb = nbformat.read(REPO / "notebooks" / NOTEBOOK, as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    params = next(i for i, t in enumerate(tags) if "parameters" in t)
    panels = next(i for i, t in enumerate(tags) if "panels" in t)
    # papermill's convention: the overrides go in a cell after the parameters cell; the browser
    # drives the panels, so the cells after the panels cell (which submit from code) are left out.
    injected = nbformat.v4.new_code_cell(
        f'STEPS = 300\nTRAIN_MAZES = 64\nHELDOUT_MAZES = 8\nGROUP_SIZE = 2\nMAZES_PER_STEP = 2\nMAX_TURNS = 3\nRUN_ID = "{RUN_ID}"',
        metadata={"tags": ["injected-parameters"]},
    )
    nb.cells = [*nb.cells[: params + 1], injected, *nb.cells[params + 1 : panels + 1]]
    root = tmp_path / "lab"
    root.mkdir()
    nbformat.write(nb, root / NOTEBOOK)
    token = secrets.token_hex(16)
    port = find_free_port()
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        "--LabApp.expose_app_in_browser=True",
        "--ServerApp.open_browser=False",
        "--allow-root",
    ]
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jcfg"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jrt"),
        "PYTHONPATH": str(REPO),
    }
    log = (tmp_path / "jupyterlab.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            if (
                requests.get(
                    f"{url}/api/status",
                    headers={"Authorization": f"token {token}"},
                    timeout=2,
                ).status_code
                == 200
            ):
                break
        except requests.RequestException:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"JupyterLab did not start: {(tmp_path / 'jupyterlab.log').read_text()[-2000:]}")
        time.sleep(0.5)
    yield url, token
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    log.close()


def test_studio_notebook_submit_and_live_reward_chart(jupyterlab, local_cluster, tmp_path):
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian chromium is missing: apt-get install -y chromium"

    url, token = jupyterlab
    console_errors: list[str] = []
    shot = tmp_path / "studio.png"
    with sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1400, "height": 1800},
        )
        try:
            page = browser.new_page()
            page.on(
                "console",
                lambda msg: console_errors.append(msg.text) if msg.type == "error" else None,
            )
            page.on("pageerror", lambda err: console_errors.append(str(err)))
            page.goto(f"{url}/lab/tree/{NOTEBOOK}?token={token}", timeout=120_000)
            page.wait_for_function(
                "() => window.jupyterapp && window.jupyterapp.shell.currentWidget && window.jupyterapp.shell.currentWidget.sessionContext && window.jupyterapp.shell.currentWidget.sessionContext.session",
                timeout=120_000,
            )
            page.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.connectionStatus === 'connected'",
                timeout=120_000,
            )
            page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); return true; }")
            run_tab = page.locator(".widget-tab .lm-TabBar-tab", has_text="Run")
            run_tab.wait_for(timeout=150_000)
            run_tab.click()
            submit = page.locator(".widget-tab button", has_text="Submit")
            submit.wait_for(state="visible", timeout=30_000)
            for _ in range(20):  # a fresh Ray head can answer "no available agent, try again later"
                submit.click()
                page.locator(".widget-tab .widget-html", has_text="hprl-" + RUN_ID).or_(
                    page.locator(".widget-tab", has_text="JobError")
                ).first.wait_for(timeout=60_000)
                if page.locator(".widget-tab", has_text="hprl-" + RUN_ID).count():
                    break
                time.sleep(2)
            page.locator(".widget-tab .lm-TabBar-tab", has_text="Metrics").click()
            page.wait_for_function(
                f"() => ({REWARD_POINTS_JS})() >= 2", timeout=360_000
            )  # a hang guard: training is slow on a loaded machine
            first = page.evaluate(REWARD_POINTS_JS)
            page.wait_for_function(f"() => ({REWARD_POINTS_JS})() > {first}", timeout=180_000)
            page.screenshot(path=str(shot), full_page=True)
            text = page.locator(".widget-tab").first.inner_text()
        finally:
            browser.close()
            with contextlib.suppress(JobError):  # cleanup only: the run may never have been submitted
                stop_run(local_cluster.job_client(), latest_submission(run_dir(RUN_ID)))
    assert shot.stat().st_size > 10_000
    assert "bottleneck" in text and "% of step time" in text
    assert console_errors == [], console_errors
    assert local_cluster.state.token not in text
    shutil.copy(shot, DOCS_SHOT)  # only a screenshot of a passing run reaches the docs
