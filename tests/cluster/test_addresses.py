"""Cluster addresses: ``sagemaker_ray://<raycluster>/<namespace>`` resolves to the same connection as an
explicit RayCluster and namespace, wherever an address is accepted; version guardrails before submitting.

The Kubernetes API and the endpoint operator's dashboard proxy are the local HTTP fakes of
``tests/cluster/test_access.py``; Ray's real ``JobSubmissionClient`` talks to them.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hyperpod_rl.cluster.access import ClusterAddress, HyperPodDashboard, cluster_access, job_client_of, parse_address
from hyperpod_rl.cluster.versions import checked_job_client, compare_versions, python_of_image
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.jobs import list_runs
from tests.cluster.test_access import VERSION, Dashboard, issue_urls
from tests.fakes import FakeHTTPServer, Response, kube_api_client, load_fixture

pytestmark = pytest.mark.kube


@pytest.fixture
def servers() -> Iterator[tuple[FakeHTTPServer, FakeHTTPServer, Dashboard]]:
    with FakeHTTPServer() as kube, FakeHTTPServer() as dash:
        yield kube, dash, Dashboard(dash)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sagemaker_ray://maze/hyperpod-ns-team-a", ClusterAddress("sagemaker_ray", raycluster="maze", namespace="hyperpod-ns-team-a")),
        ("sagemaker_ray://maze", ClusterAddress("sagemaker_ray", raycluster="maze", namespace="default")),
        ("local", ClusterAddress("local")),
        ("http://127.0.0.1:8265/", ClusterAddress("http", url="http://127.0.0.1:8265")),
    ],
)
def test_parse(text: str, expected: ClusterAddress) -> None:
    assert parse_address(text) == expected
    if expected.kind == "sagemaker_ray":
        assert str(parse_address(str(expected))) == str(expected)  # canonical form round-trips


@pytest.mark.parametrize(
    "bad", ["sagemaker_ray://Maze_RL/default", "sagemaker_ray:///default", "sagemaker_ray://maze/a/b", "ray://x:10001", "maze"]
)
def test_bad_addresses_say_what_is_expected(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"bad cluster address .* sagemaker_ray://<raycluster>/<namespace>"):
        parse_address(bad)


def test_sagemaker_ray_address_is_the_same_connection_as_explicit_names(servers: Any) -> None:
    kube, dash_srv, dash = servers
    posts = issue_urls(kube, dash)
    api = kube_api_client(kube.url)
    by_address = cluster_access("sagemaker_ray://maze/hyperpod-ns-team-a", api_client=api)
    explicit = HyperPodDashboard("maze", "hyperpod-ns-team-a", api_client=api)
    assert isinstance(by_address, HyperPodDashboard)
    assert (by_address.cluster_name, by_address.namespace) == (explicit.cluster_name, explicit.namespace)
    assert by_address.call(lambda c: c.list_jobs()) == explicit.call(lambda c: c.list_jobs()) == []
    assert [p.path for p in posts] == [
        "/apis/connection.access.sagemaker.amazonaws.com/v1alpha1/namespaces/hyperpod-ns-team-a/raydashboardconnections"
    ] * 2
    assert posts[0].json() == posts[1].json()
    assert by_address.address == explicit.address == dash_srv.url


def test_jobs_api_takes_the_address_with_an_existing_kubeconfig(servers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No client object at all: the address plus the user's kubeconfig (as `aws eks update-kubeconfig` writes it)."""
    kube, _dash_srv, dash = servers
    posts = issue_urls(kube, dash)
    dash.jobs.append(
        {
            "type": "SUBMISSION",
            "submission_id": "hprl-maze-run-1",
            "status": "RUNNING",
            "entrypoint": "python -m hyperpod_rl.train",
            "metadata": {"hyperpod_rl_run_id": "maze-run"},
            "start_time": 1764400000000,
            "end_time": None,
            "message": "",
        }
    )
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "hp", "cluster": {"server": kube.url}}],
        "users": [{"name": "me", "user": {"token": "kubeconfig-token"}}],
        "contexts": [{"name": "hp", "context": {"cluster": "hp", "user": "me"}}],
        "current-context": "hp",
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(kubeconfig))
    monkeypatch.setenv("KUBECONFIG", str(path))
    runs = list_runs("sagemaker_ray://maze/team-b")
    assert [(r["run_id"], r["status"]) for r in runs] == [("maze-run", "RUNNING")]
    assert posts[0].path.endswith("/namespaces/team-b/raydashboardconnections")
    assert posts[0].headers["authorization"] == "Bearer kubeconfig-token"


def test_job_client_of_passes_clients_through() -> None:
    sentinel = object()
    assert job_client_of(sentinel) is sentinel

    class Access:
        def job_client(self) -> object:
            return sentinel

    assert job_client_of(Access()) is sentinel


# ----- version guardrails ---------------------------------------------------------------------------
def test_python_of_image() -> None:
    assert python_of_image("rayproject/ray:2.56.0-py312-gpu") == "3.12"
    assert python_of_image("123.dkr.ecr.us-west-2.amazonaws.com/ray:2.56.0-py311") == "3.11"
    assert python_of_image("my/trainer:1.0.0") is None


def test_compare_versions_warns_with_the_fix_on_minor_mismatch() -> None:
    same = compare_versions(local_ray="2.56.0", cluster_ray="2.56.1", local_python="3.12.3", cluster_python="3.12")
    assert [c.status for c in same] == ["ok", "ok"]
    ray_check, py_check = compare_versions(local_ray="2.56.0", cluster_ray="2.55.1", local_python="3.12.3", cluster_python="3.11")
    assert ray_check.status == "warn" and "notebook Ray 2.56.0, cluster Ray 2.55.1" in ray_check.detail
    assert "ray[default]==2.55.1" in ray_check.fix
    assert py_check.status == "warn" and "-py312" in py_check.fix and "Python 3.11" in py_check.fix
    unknown = compare_versions(local_ray="2.56.0", cluster_ray=None, local_python="3.12.3", cluster_python=None)
    assert [c.status for c in unknown] == ["skip", "skip"]


def test_checked_job_client_reads_the_cluster_ray_and_its_image(servers: Any) -> None:
    import ray

    kube, dash_srv, dash = servers
    issue_urls(kube, dash)
    raycluster = copy.deepcopy(load_fixture("ready.json"))
    raycluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] = "rayproject/ray:2.55.1-py311-cpu"
    kube.route("GET", r"/apis/ray\.io/v1/namespaces/default/rayclusters/maze", Response(200, raycluster))
    dash_srv.route("GET", "/api/version", dash.guard(lambda _r: Response(200, {**VERSION, "ray_version": "2.55.1"})))
    client, checks = checked_job_client(cluster_access("sagemaker_ray://maze/default", api_client=kube_api_client(kube.url)))
    assert client.get_address() == dash_srv.url
    by_name = {c.name: c for c in checks}
    assert by_name["Ray client vs cluster"].status == ("ok" if ray.__version__.startswith("2.55.") else "warn")
    assert by_name["Python vs cluster image"].status == "warn" and "3.11" in by_name["Python vs cluster image"].detail
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing here may warn by itself: warnings come from submit_run
        checked_job_client(client)
