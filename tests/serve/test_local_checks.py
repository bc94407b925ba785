"""What local serving checks before it deploys anything (no Ray needed)."""

from __future__ import annotations

import json
import shutil

import pytest

from hyperpod_rl.errors import ServeError
from hyperpod_rl.serve.local import action_constraint_of, check_adapters


def test_check_adapters_passes_good_and_refuses_bad_adapters(trained_adapter, tmp_path):
    reports = check_adapters(trained_adapter["model_dir"], {"maze": trained_adapter["adapter"]})
    assert [r.ok for r in reports] == [True]
    bad = tmp_path / "bad"
    shutil.copytree(trained_adapter["adapter"], bad)
    (bad / "adapter_model.safetensors").unlink()
    with pytest.raises(ServeError, match=r"(?s)refusing to serve:.*bad: preflight.*\[weights\] adapter_model\.safetensors is missing"):
        check_adapters(trained_adapter["model_dir"], {"maze": trained_adapter["adapter"], "bad": bad})
    with pytest.raises(ServeError, match="'base' is reserved for the base model"):
        check_adapters(trained_adapter["model_dir"], {"base": trained_adapter["adapter"]})


def test_decoding_mode_comes_from_the_provenance(trained_adapter, tmp_path):
    assert action_constraint_of({"maze": trained_adapter["adapter"]}) == "directions"
    free = tmp_path / "free"
    shutil.copytree(trained_adapter["adapter"], free)
    prov = json.loads((free / "provenance.json").read_text())
    prov["action_constraint"] = "none"
    (free / "provenance.json").write_text(json.dumps(prov))
    assert action_constraint_of({"free": free}) == "none"
    with pytest.raises(ServeError, match=r"different action formats \{'maze': 'directions', 'free': 'none'\}"):
        action_constraint_of({"maze": trained_adapter["adapter"], "free": free})


def test_base_model_id_named_by_the_run_config_is_checked(trained_adapter):
    with pytest.raises(
        ServeError, match=r"trained on base model 'hyperpod-rl/tiny-qwen3-vl' but the server loads 'Qwen/Qwen3-VL-8B-Instruct'"
    ):
        check_adapters(trained_adapter["model_dir"], {"maze": trained_adapter["adapter"]}, model_id="Qwen/Qwen3-VL-8B-Instruct")
    assert check_adapters(trained_adapter["model_dir"], {"maze": trained_adapter["adapter"]}, model_id="hyperpod-rl/tiny-qwen3-vl")[0].ok


def test_the_app_builds_and_reaches_its_replicas_with_fastapis_thread_locks():
    """Reported on the Ray 2.56 pin: every local deploy job failed with "Failed to serialize the ASGI app"
    (ray-project/ray#64939: Ray 2.56's serve.ingress pickles the FastAPI app, and FastAPI 0.139.2 and later
    hold thread locks in it). The app must build, and its deployment must round-trip through Ray's
    cloudpickle as Serve ships it to a replica, with fresh, unlocked locks."""
    import threading

    import ray.cloudpickle

    from hyperpod_rl.serve.local import build_app

    app = build_app("/no-model-needed-to-build", {})
    shipped = ray.cloudpickle.loads(ray.cloudpickle.dumps(app))
    assert shipped._bound_deployment.name == "MazeModelServer"
    held = threading.Lock()
    held.acquire()
    fresh = ray.cloudpickle.loads(ray.cloudpickle.dumps(held))
    assert isinstance(fresh, type(held)) and not fresh.locked()
