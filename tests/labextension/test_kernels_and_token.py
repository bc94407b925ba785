"""Issue 31 items 1, 2, 5, 7, 8 on the server side, through a real Jupyter server (``jp_fetch``).

- ``GET kernels`` asks each registered kernel's interpreter whether it can import hyperpod_rl
  (a real subprocess per kernel) and picks the one hyperpod-rl code runs in, as in Studio: the
  server's "Python 3" kernel cannot, the lifecycle script's ``hyperpod-rl`` kernel can;
- the tutorial copies take that kernel as their kernelspec, and the docs' images come along;
- ``POST clusters/<name>/token`` hands the authenticated user the token the dashboard asks for;
- an adapter whose comparison said "do not promote" is not shown as never gated;
- a run that was never submitted is "created" (nothing to stop).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tornado

from .conftest import FAKE_TOKEN, write_cluster_state
from .test_routes import make_run


def kernelspec(kernels: Path, name: str, python: str, display: str, language: str = "python") -> None:
    (kernels / name).mkdir(parents=True)
    argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (kernels / name / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": display, "language": language}))


@pytest.fixture
def studio_kernels(jp_kernel_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``hyperpod-rl`` (this environment, which has hyperpod_rl), ``server-py`` (a bare venv, like
    Studio's /opt/conda for this purpose) and a non-Python kernel."""
    monkeypatch.delenv("PYTHONPATH", raising=False)  # the kernels see what the server sees
    bare = tmp_path / "bare-env"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(bare)], check=True)
    kernelspec(jp_kernel_dir, "hyperpod-rl", sys.executable, "Python 3.12 (hyperpod-rl)")
    kernelspec(jp_kernel_dir, "server-py", str(bare / "bin" / "python"), "Python 3 (server)")
    kernelspec(jp_kernel_dir, "bash", "/bin/bash", "Bash", language="bash")
    return jp_kernel_dir


async def kernels(jp_fetch, **params) -> dict:
    return json.loads((await jp_fetch("hyperpod-rl", "kernels", params=params or None)).body)


async def test_kernels_route_finds_the_one_that_imports_hyperpod_rl(jp_fetch, studio_kernels, tmp_path):
    data = await kernels(jp_fetch)
    by_name = {k["name"]: k for k in data["kernels"]}
    assert by_name["hyperpod-rl"]["has_hyperpod_rl"] is True
    assert by_name["server-py"]["has_hyperpod_rl"] is False and "has no hyperpod_rl" in by_name["server-py"]["detail"]
    assert by_name["bash"]["has_hyperpod_rl"] is False and by_name["bash"]["python"] is None
    assert data["chosen"] == "hyperpod-rl"
    # a Kernel setting that names a kernel without the library is not obeyed, and says so
    data = await kernels(jp_fetch, preferred="server-py")
    assert data["chosen"] == "hyperpod-rl" and "'server-py'" in data["message"] and "cannot import hyperpod_rl" in data["message"]
    data = await kernels(jp_fetch, preferred="nope")
    assert data["chosen"] == "hyperpod-rl" and "is not registered" in data["message"]


async def test_no_kernel_with_the_library_says_how_to_register_one(jp_fetch, jp_kernel_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    bare = tmp_path / "bare-env"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(bare)], check=True)
    kernelspec(jp_kernel_dir, "python3", str(bare / "bin" / "python"), "Python 3 (ipykernel)")
    data = await kernels(jp_fetch)
    assert data["chosen"] is None
    assert "no registered Jupyter kernel can import hyperpod_rl" in data["message"] and "on-start.sh" in data["message"]


async def test_tutorial_copies_take_the_chosen_kernel_and_the_docs_images(jp_fetch, jp_root_dir, hprl_home):
    kernel = {"name": "hyperpod-rl", "display_name": "Python 3.12 (hyperpod-rl)"}
    body = json.dumps({"folder": "tut", "kernel": kernel})
    data = json.loads((await jp_fetch("hyperpod-rl", "tutorial", method="POST", body=body)).body)
    notebooks = [p for p in data["copied"] if p.endswith(".ipynb")]
    assert notebooks
    for path in notebooks:
        spec = json.loads((jp_root_dir / path).read_text())["metadata"]["kernelspec"]
        assert spec == {**kernel, "language": "python"}, path
    # docs/labextension.md shows img/labextension-sidebar.png: it is copied beside the page
    assert (jp_root_dir / "tut" / "docs" / "img" / "labextension-sidebar.png").stat().st_size > 10_000
    assert "tut/docs/img/labextension-sidebar.png" in data["copied"]


async def test_copy_token_route_gives_the_token_to_an_authenticated_post_only(jp_fetch, hprl_home):
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch("hyperpod-rl", "clusters", "local", "token", method="POST", body="")
    assert err.value.code == 404 and "hyperpod-rl local start" in json.loads(err.value.response.body)["message"]
    write_cluster_state(hprl_home, 1)
    resp = await jp_fetch("hyperpod-rl", "clusters", "local", "token", method="POST", body="")
    assert json.loads(resp.body) == {"name": "local", "token": FAKE_TOKEN}
    assert resp.headers["Cache-Control"] == "no-store"
    for kwargs in ({"method": "GET"}, {"method": "POST", "body": "", "headers": {"Authorization": ""}}):
        with pytest.raises(tornado.httpclient.HTTPClientError) as err:
            await jp_fetch("hyperpod-rl", "clusters", "local", "token", **kwargs)
        assert err.value.code in (403, 405), kwargs
    # the clusters route says where the token is, never what it is
    (hprl_home / "storage").mkdir()
    clusters = json.loads((await jp_fetch("hyperpod-rl", "clusters")).body)["clusters"]
    [local] = clusters
    assert local["token_copyable"] is True and str(hprl_home / "local-cluster.json") in local["token_hint"]
    assert FAKE_TOKEN not in json.dumps(clusters)


async def test_a_do_not_promote_comparison_is_not_shown_as_never_gated(jp_fetch, hprl_home):
    root = hprl_home / "storage"
    rdir = make_run(root, "compared-run", status="succeeded", rewards=(0.1,), adapter=True)
    reason = "do not promote: the 95% interval of the solve_rate difference, +0.010 [-0.050, +0.070], does not exclude 0 on the better side"
    (rdir / "eval" / "comparison.json").write_text(
        json.dumps({"base_label": "base", "candidate_label": "adapter", "promote": False, "reason": reason})
    )
    make_run(root, "fresh-run", status=None)
    [adapter] = json.loads((await jp_fetch("hyperpod-rl", "adapters")).body)["adapters"]
    assert adapter["promoted"] is None and adapter["compared"] is False and adapter["comparison_reason"] == reason
    assert adapter["evals"] == {"adapter": {"solve_rate": 0.25}}  # the comparison is not an evaluation
    runs = {r["run_id"]: r for r in json.loads((await jp_fetch("hyperpod-rl", "runs")).body)["runs"]}
    assert runs["fresh-run"]["status"] == "created" and "never submitted" in runs["fresh-run"]["status_detail"]
