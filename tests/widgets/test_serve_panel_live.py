"""ServePanel against the real local cluster: deploy an adapter, play a held-out maze, draw the path;
a second panel's app beside it.

One adapter is trained and one panel deploys it (the default app, as ``hyperpod-rl serve up`` names
it) for the module: playing a maze reads the app, and the second panel deploys and deletes only its
own app beside it, so the order of the tests does not matter.
"""

from __future__ import annotations

import pytest

from hyperpod_rl.cluster.local import find_free_port
from hyperpod_rl.quickstart import make_run_config
from hyperpod_rl.train.reference import ReferenceTrainer
from hyperpod_rl.widgets import ServePanel

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.job]


@pytest.fixture(scope="module")
def deployed(local_cluster, tiny_setup, tmp_path_factory):
    """A trained adapter and a ServePanel that deployed it with its Deploy button (the default app);
    the app is deleted after the module, and Serve with it.

    Returns:
        ``{"panel", "adapter"}``.
    """
    from hyperpod_rl.serve.local import shutdown_local

    config = make_run_config(
        tiny_setup["opts"],
        run_id="serve-panel",
        model_path=tiny_setup["model_dir"],
        revision=tiny_setup["revision"],
        data=tiny_setup["data"],
    )
    adapter = ReferenceTrainer(config, tmp_path_factory.mktemp("serve-panel") / "serve-panel").train()
    panel = ServePanel(
        model_path=tiny_setup["model_dir"],
        adapter_path=adapter,
        heldout_path=tiny_setup["data"].heldout,
        client=local_cluster.job_client(),
        port=find_free_port(),
    )
    try:
        panel.deploy_button.click()
        panel.wait_idle(300)
        yield {"panel": panel, "adapter": adapter}
    finally:
        shutdown_local(local_cluster.job_client())


def test_deploy_and_play_a_heldout_maze(deployed):
    """Slow: a real Ray Serve deployment of the tiny model with its adapter (the module's), then a maze played through it."""
    panel = deployed["panel"]
    assert panel.wait_idle(1), "deploy did not finish"
    assert panel.errors == [], panel.errors
    assert panel.endpoint and panel.endpoint in panel.endpoint_html.value
    panel.maze_index.value = 1
    before = panel.image.value
    panel.play_button.click()
    assert panel.wait_idle(120) and panel.errors == [], panel.errors
    last = panel.last
    assert 1 <= len(last["answers"]) == len(last["latencies_s"]) == len(last["cells"]) - 1
    assert all(s > 0 for s in last["latencies_s"])
    assert ("not solved" in panel.answer_html.value) != last["solved"]
    assert "ms" in panel.answer_html.value and panel.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert panel.image.value != before or len(set(last["cells"])) == 1


def test_a_panels_own_app_runs_beside_another_and_undeploy_deletes_only_it(local_cluster, tiny_setup, deployed):
    """Field report: notebook 01's last cell deleted whatever Serve app was running, not only its own.

    Slow: a second Ray Serve app deployed beside the module's (about 45 s on 2 cores)."""
    import requests

    from hyperpod_rl.serve.local import shutdown_local

    other = deployed["panel"]
    assert other.wait_idle(1) and other.errors == [] and other.endpoint, other.errors  # the default app, as serve up deploys it
    client = local_cluster.job_client()
    panel = ServePanel(
        model_path=tiny_setup["model_dir"], adapter_path=deployed["adapter"], client=client, port=other.port, app_name="tutorial-01"
    )
    try:
        mine = panel.deploy()
        assert mine == f"{other.endpoint}/tutorial-01"
        assert requests.get(f"{mine}/healthz", timeout=10).status_code == 200
        assert panel.undeploy() is True
        assert requests.get(f"{other.endpoint}/healthz", timeout=10).status_code == 200  # the other app keeps running
        assert requests.get(f"{mine}/healthz", timeout=10).status_code == 404
    finally:
        shutdown_local(client, app_name="tutorial-01")
