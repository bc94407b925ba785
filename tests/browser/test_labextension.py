"""Real browser: the hyperpod-rl JupyterLab extension (the built wheel installed in this
environment) in JupyterLab at Studio's base URL ``/jupyterlab/default``, driven by headless Debian
Chromium (Playwright), against the real local Ray cluster and real training runs.

Checks: the extension activates with no console error; the sidebar lists a run and its status
reaches succeeded; Stop on a second run ends it (Ray says STOPPED, no trainer process is left);
Open metrics puts a live MetricsPanel in a notebook; the launcher card opens the tutorial; the
cluster's dashboard link goes through jupyter-server-proxy. Screenshots are saved under
``.test-results/screenshots/``; ``make screenshots`` copies a passing run's into ``docs/img/`` (the
docs site shows them).

Build and install the extension first (``make labextension``; ``make test`` does it).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from hyperpod_rl.errors import JobError
from hyperpod_rl.jobs import latest_submission, stop_run, submit_run
from hyperpod_rl.paths import run_dir
from hyperpod_rl.quickstart import make_run_config

from ._chromium import BASE, CHROMIUM, FLAGS, SHOTS, jupyterlab, publish_screenshots, settle, wait_restored

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.browser, pytest.mark.job]

REPO = Path(__file__).resolve().parents[2]
DONE, STOP = "lab-ui-done", "lab-ui-stop"


def _config(setup, run_id: str, steps: int):
    cfg = make_run_config(setup["opts"], run_id=run_id, model_path=setup["model_dir"], revision=setup["revision"], data=setup["data"])
    data = cfg.model_dump(mode="json")
    data["trainer"]["steps"] = steps
    data["checkpoint"]["interval"] = 0
    return type(cfg).build(data)


def _submit(client, config) -> str:
    """Submit; a fresh Ray head can answer "no available agent, try again later" for its first seconds."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return submit_run(client, config, run_dir(config.run_id), fresh=True).submission_id
        except JobError as err:
            if "try again" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(1)


@pytest.fixture
def lab(tmp_path, local_cluster):
    """JupyterLab with Studio's base URL and a random token; its server sees the local cluster."""
    pytest.importorskip("hyperpod_rl_jupyterlab", reason="the extension wheel is not installed: run `make labextension`")
    assert Path(CHROMIUM).exists(), "Debian chromium is missing: apt-get install -y chromium"
    root = tmp_path / "lab"
    root.mkdir()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jcfg"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jrt"),
        "PYTHONPATH": str(REPO),
    }
    log_path = tmp_path / "jupyterlab.log"
    with jupyterlab(sys.executable, root=root, env=env, log_path=log_path, timeout_s=90) as server:
        yield {"url": server.url, "token": server.token, "root": root, "log": log_path}


def _row(page, run_id: str):
    return page.locator(f".hprl-run[data-run-id='{run_id}']")


def _trainers(run_id: str) -> list[int]:
    config_path = str(run_dir(run_id) / "config.json")
    return [p.pid for p in psutil.process_iter(["cmdline"]) if config_path in " ".join(p.info["cmdline"] or [])]


def test_sidebar_stop_metrics_and_tutorial_in_a_real_browser(lab, local_cluster, tiny_setup):
    """Slow: JupyterLab, headless Chromium and two real training runs."""
    from playwright.sync_api import sync_playwright

    client = local_cluster.job_client()
    _submit(client, _config(tiny_setup, DONE, steps=3))
    console_errors: list[str] = []
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(lab["root"].parent / "chromium-profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1500, "height": 1000},
        )
        try:
            page = browser.new_page()
            page.on("console", lambda msg: console_errors.append(msg.text) if msg.type == "error" else None)
            page.on("pageerror", lambda err: console_errors.append(str(err)))
            page.goto(f"{lab['url']}/lab?token={lab['token']}", timeout=120_000)
            page.wait_for_function(
                "() => window.jupyterapp && window.jupyterapp.commands.hasCommand('hyperpod-rl:open-sidebar')", timeout=120_000
            )
            wait_restored(page)
            page.locator(".hprl-statusbar", has_text="running").click()  # the status-bar item opens the sidebar
            page.locator("#hyperpod-rl-runs").wait_for(state="visible", timeout=30_000)

            # 1. The run is listed and reaches succeeded (polled by the sidebar, no reload).
            _row(page, DONE).wait_for(timeout=60_000)
            page.locator(f".hprl-run[data-run-id='{DONE}'][data-status='succeeded']").wait_for(timeout=240_000)
            done_text = _row(page, DONE).inner_text()
            assert "step 3/3" in done_text and "on local" in done_text, done_text

            # 2. Stop a second run from the sidebar, through the confirm dialog.
            _submit(client, _config(tiny_setup, STOP, steps=5000))  # still running when the sidebar stops it
            page.locator(f".hprl-run[data-run-id='{STOP}'][data-status='running']").wait_for(timeout=120_000)
            page.locator(".hprl-statusbar", has_text="RL: 1 running").wait_for(timeout=30_000)
            news = page.locator(".jp-toast-button", has_text="No")
            if news.count():  # JupyterLab's "notified about news?" toast would cover the screenshot
                news.first.click()
                news.first.wait_for(state="detached", timeout=10_000)  # gone, not closing, in the screenshot
            page.screenshot(path=str(SHOTS / "labextension-sidebar.png"))
            _row(page, STOP).locator("button.hprl-stop").click()
            page.locator(".jp-Dialog").wait_for(timeout=10_000)
            page.locator(".jp-Dialog button", has_text="Stop").click()
            page.locator(f".hprl-run[data-run-id='{STOP}'][data-status='stopped']").wait_for(timeout=90_000)
            sub = latest_submission(run_dir(STOP))
            assert client.get_job_status(sub).value == "STOPPED"
            deadline = time.monotonic() + 30
            while _trainers(STOP) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert _trainers(STOP) == [], "a trainer outlived the stopped job"
            page.locator(".hprl-statusbar", has_text="RL: 0 running").wait_for(timeout=30_000)

            # 3. Logs open in a read-only panel.
            _row(page, DONE).locator("button.hprl-logs").click()
            # the trainer's metric records read as one short line each, not HPRL_METRIC {json} (issue 31 item 8)
            logs = page.locator(".hprl-logs-text", has_text="[metrics] step 3/3")
            logs.wait_for(timeout=30_000)
            assert "HPRL_METRIC {" not in logs.inner_text()

            # 4. The local cluster's dashboard link goes through jupyter-server-proxy.
            link = page.locator(".hprl-cluster[data-cluster='local'] a.hprl-dashboard-link")
            port = local_cluster.dashboard_url.rsplit(":", 1)[-1]
            assert link.get_attribute("href") == f"{BASE}/proxy/{port}/"
            proxied = page.request.get(f"{lab['url']}/proxy/{port}/")
            assert proxied.status in (200, 401), proxied.status  # Ray's answer, not Jupyter's 404

            # 5. Open metrics: a new notebook whose cell shows a live MetricsPanel with the run's rewards.
            _row(page, DONE).locator("button.hprl-metrics").click()
            page.wait_for_function(
                "() => { const gd = document.querySelector('.jp-NotebookPanel .js-plotly-plot');"
                " return gd && gd.data && gd.data[2] && gd.data[2].x && gd.data[2].x.length >= 3 }",
                timeout=180_000,
            )
            source = page.evaluate("() => window.jupyterapp.shell.currentWidget.content.activeCell.model.sharedModel.getSource()")
            assert "MetricsPanel(" in source and DONE in source
            page.screenshot(path=str(SHOTS / "labextension-metrics.png"))

            # 6. The launcher card copies the tutorial and opens its first notebook.
            settle(page, "window.jupyterapp.commands.execute('launcher:create')")
            page.locator(".jp-LauncherCard:visible", has_text="Hyperpod RL tutorial").first.click()
            page.locator(".lm-TabBar-tab", has_text="01-quickstart-local.ipynb").wait_for(timeout=60_000)
            assert (lab["root"] / "hyperpod-rl-tutorial" / "01-quickstart-local.ipynb").is_file()
            assert (lab["root"] / "hyperpod-rl-tutorial" / "docs" / "labextension.md").is_file()
            page.screenshot(path=str(SHOTS / "labextension-tutorial.png"))
            sidebar_text = page.locator(".hprl-sidebar").inner_text()
        finally:
            browser.close()
            for run_id in (STOP, DONE):
                with contextlib.suppress(JobError):
                    stop_run(client, latest_submission(run_dir(run_id)))
    assert local_cluster.state.token not in sidebar_text
    assert local_cluster.state.token not in lab["log"].read_text()
    assert console_errors == [], json.dumps(console_errors, indent=1)
    assert (SHOTS / "labextension-sidebar.png").stat().st_size > 10_000
    # The docs site shows these (docs/labextension.md); only a passing run's reach it, with make screenshots.
    publish_screenshots({shot: shot for shot in ("labextension-sidebar.png", "labextension-metrics.png", "labextension-tutorial.png")})
