"""A Studio-layout JupyterLab in headless Debian Chromium: server and kernel environments apart.

Layout, as in a SageMaker Studio space (docs/studio.md):

- the **server environment** is its own virtual environment (``sys.prefix`` = a temporary
  directory). Its Python packages come from the project's venv through a ``.pth`` file (no
  network), but its ``share/jupyter/labextensions`` holds only what the test links in:
  ipywidgets' manager, plotly's renderer and jupyter-server-proxy, **not anywidget**, exactly the
  stock Studio case;
- the **kernel environment** is the project's venv, registered as the kernel ``hyperpod-rl``
  (what ``container/studio/on-start.sh`` registers);
- ``--ServerApp.base_url=/jupyterlab/default``, jupyter-server-proxy on, and a
  ``resource-metadata.json`` for the Studio space (``HYPERPOD_RL_STUDIO_METADATA``).

In the browser: ``studio()`` renders its tabs; the Cluster tab's Ray dashboard link is a proxy
path that reaches the real local Ray dashboard; MetricsPanel shows static charts of a run's
``metrics.jsonl`` (appended while the page is open) and says how to turn live charts on;
``doctor`` flags anywidget's missing frontend. No training runs: the metrics are written here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest

from hyperpod_rl.metrics.schema import MetricRecord

from ._chromium import BASE, CHROMIUM, FLAGS, SHOTS, jupyterlab

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.browser]

REPO = Path(__file__).resolve().parents[2]
LABEXTENSIONS = ("@jupyter-widgets", "jupyterlab-plotly", "@jupyterhub")  # anywidget left out on purpose
PLOT_POINTS_JS = "() => { const gd = document.querySelector('.hprl-metrics .js-plotly-plot'); return gd && gd.data && gd.data[2] ? gd.data[2].x.length : 0 }"


def record(step: int) -> str:
    values = {
        "reward/avg_raw_reward": 0.1 * step,
        "reward/min_raw_reward": 0.0,
        "reward/max_raw_reward": 1.0,
        "policy/policy_loss": 0.5 / step,
        "policy/policy_kl": 0.01 * step,
        "policy/policy_entropy": 1.2,
        "timing/generate": 0.7,
        "timing/policy_train": 0.2,
        "timing/step": 1.0,
    }
    return (
        MetricRecord(run_id="studio-layout", step=step, total_steps=20, time_s=1_764_400_000.0 + step, values=values).model_dump_json()
        + "\n"
    )


def server_env(root: Path) -> Path:
    """A venv for the Jupyter server that sees the project's packages but only the chosen frontends."""
    base = getattr(sys, "_base_executable", sys.executable)
    srv = root / "server-env"
    subprocess.run([base, "-m", "venv", "--without-pip", str(srv)], check=True)
    site = Path(
        subprocess.run(
            [str(srv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "_kernel_env_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    share = srv / "share" / "jupyter"
    (share / "labextensions").mkdir(parents=True)
    venv_share = Path(sys.prefix) / "share" / "jupyter"
    (share / "lab").symlink_to(venv_share / "lab")
    for name in LABEXTENSIONS:
        (share / "labextensions" / name).symlink_to(venv_share / "labextensions" / name)
    shutil.copytree(Path(sys.prefix) / "etc" / "jupyter", srv / "etc" / "jupyter")
    return srv


@pytest.fixture
def studio_lab(tmp_path: Path, local_cluster):
    srv = server_env(tmp_path)
    data = tmp_path / "jupyter-data"
    kernel = data / "kernels" / "hyperpod-rl"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3.12 (hyperpod-rl)",
                "language": "python",
            }
        )
    )
    metadata = tmp_path / "resource-metadata.json"
    metadata.write_text(
        json.dumps({"AppType": "JupyterLab", "DomainId": "d-test123", "SpaceName": "test-space", "ResourceName": "default"})
    )
    run_dir = tmp_path / "runs" / "studio-layout"
    run_dir.mkdir(parents=True)
    (run_dir / "metrics.jsonl").write_text("".join(record(s) for s in (1, 2)))
    root = tmp_path / "lab"
    root.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "hyperpod-rl", "display_name": "Python 3.12 (hyperpod-rl)", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import hyperpod_rl as hp\nfrom hyperpod_rl.widgets import studio\n"
            f"ui = studio(hardware=None)\nui.metrics.follow({str(run_dir)!r})\nui.add_class('hprl-studio'); ui.metrics.add_class('hprl-metrics')\nui"
        ),
        nbformat.v4.new_code_cell("hp.doctor(aws=False)"),
    ]
    nbformat.write(nb, root / "studio.ipynb")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "VIRTUAL_ENV", "PYTHONPATH"))},
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
        "JUPYTER_DATA_DIR": str(data),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
        "HYPERPOD_RL_STUDIO_METADATA": str(metadata),
        "AWS_EC2_METADATA_DISABLED": "true",
        "PATH": f"{srv / 'bin'}:{os.environ['PATH']}",
    }
    with jupyterlab(srv / "bin" / "python", root=root, env=env, log_path=tmp_path / "jupyterlab.log", timeout_s=90) as server:
        yield {"url": server.url, "origin": server.origin, "token": server.token, "run_dir": run_dir, "server_env": srv}


def test_studio_layout_panels_proxy_link_static_charts_and_doctor(studio_lab, local_cluster, tmp_path: Path) -> None:
    """Slow: JupyterLab behind Studio's proxy layout and headless Chromium."""
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian chromium is missing: apt-get install -y chromium"
    lab = studio_lab
    listed = subprocess.run(
        [str(lab["server_env"] / "bin" / "python"), "-m", "jupyterlab.labextensions", "list"],
        capture_output=True,
        text=True,
        env={**os.environ, "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data")},
    )
    shown = listed.stdout + listed.stderr
    assert listed.returncode == 0 and "jupyterlab-plotly" in shown, shown
    assert "anywidget" not in shown  # the server environment lacks anywidget's frontend
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS, viewport={"width": 1600, "height": 1400}
        )
        try:
            page = browser.new_page()
            page.on("pageerror", lambda err: errors.append(str(err)))
            page.goto(f"{lab['url']}/lab/tree/studio.ipynb?token={lab['token']}", timeout=120_000)
            page.wait_for_function(
                "() => window.jupyterapp && window.jupyterapp.shell.currentWidget && window.jupyterapp.shell.currentWidget.sessionContext"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.connectionStatus === 'connected'",
                timeout=120_000,
            )
            page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); return true; }")
            # studio() renders: tabs, and the Cluster tab's local dashboard link through the proxy
            page.locator(".hprl-studio .lm-TabBar-tab", has_text="Metrics").wait_for(timeout=120_000)
            link = page.locator(".hprl-studio a", has_text="Ray dashboard")
            link.wait_for(timeout=60_000)
            href = link.get_attribute("href") or ""
            port = local_cluster.dashboard_url.rsplit(":", 1)[1]
            assert href == f"{BASE}/proxy/{port}/", href
            # doctor (second cell) flags the missing frontend
            doctor = page.locator(".hprl-doctor")
            doctor.wait_for(timeout=120_000)
            doctor_text = doctor.inner_text()
            assert "Widget frontends" in doctor_text and "anywidget missing" in doctor_text and "restart-jupyter-server" in doctor_text
            assert "domain d-test123, space test-space" in doctor_text
            # the Metrics tab: static charts, filled in place as metrics.jsonl grows, with the one-time note
            page.locator(".hprl-studio .lm-TabBar-tab", has_text="Metrics").click()
            page.wait_for_function(f"() => ({PLOT_POINTS_JS})() >= 2", timeout=60_000)
            with (lab["run_dir"] / "metrics.jsonl").open("a") as fh:
                fh.write(record(3) + record(4))
            page.wait_for_function(f"() => ({PLOT_POINTS_JS})() >= 4", timeout=60_000)
            metrics_text = page.locator(".hprl-metrics").inner_text()
            assert "Live charts are off" in metrics_text and "generate takes 70% of step time" in metrics_text
            assert page.locator(".hprl-metrics .js-plotly-plot").count() == 1  # redrawn in place, not appended
            widths = page.evaluate(
                "() => { const gd = document.querySelector('.hprl-metrics .js-plotly-plot');"
                " return [gd.getBoundingClientRect().width, document.querySelector('.hprl-metrics').getBoundingClientRect().width] }"
            )
            assert widths[0] >= 0.9 * widths[1] > 800, widths  # the figure fills the panel's width
            legend = page.evaluate(
                "() => [...document.querySelectorAll('.hprl-metrics text')].filter(e => /^legend[0-9]*text$/.test(e.getAttribute('class'))).map(e => e.textContent)"
            )
            assert {"mean reward", "policy loss", "KL", "entropy", "generate", "train"} <= set(legend), legend
            page.screenshot(path=str(tmp_path / "studio-layout.png"), full_page=True)
            # the dashboard link opens through jupyter-server-proxy and reaches Ray's dashboard, in a
            # page of its own: the dashboard's own requests (401 without Ray's token) are Ray's, not
            # errors of JupyterLab's page, which the listener above watches
            response = browser.new_page().goto(f"{lab['origin']}{href}", timeout=60_000)
            assert response is not None and response.status in (200, 401), response.status if response else None
            body = response.text()
            assert "Ray" in body or response.status == 401, body[:300]
            assert "Jupyter Server" not in body  # not a Jupyter 404 page
        finally:
            browser.close()
    SHOTS.mkdir(parents=True, exist_ok=True)  # the run's results (.test-results), not the system temp directory
    shutil.copy(tmp_path / "studio-layout.png", SHOTS / "studio-layout.png")
    assert errors == [], errors
    assert local_cluster.state.token not in doctor_text + metrics_text
