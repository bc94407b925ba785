"""``doctor()``: one line per check with the fix, against a JupyterLab page config, AWS (Stubber) and Kubernetes fakes."""

from __future__ import annotations

import datetime as dt
import html
import json
import os
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

from tests.fakes import FakeHTTPServer, Request, Response

ACCT = "111122223333"
ROLE = f"arn:aws:iam::{ACCT}:role/service-role/AmazonSageMaker-ExecutionRole-2026"


def lab_page(extensions: dict[str, bool], version: str = "4.5.11") -> Response:
    """``GET <base_url>lab`` as JupyterLab renders it: the page config JSON in a script tag."""
    config = {
        "appVersion": version,
        "baseUrl": "/jupyterlab/default/",
        "federated_extensions": [
            {"name": n, "load": f"static/remoteEntry.{i}.js", "extension": "./extension"} for i, n in enumerate(extensions)
        ],
        "disabledExtensions": [n for n, on in extensions.items() if not on],
    }
    body = f'<html><head><script id="jupyter-config-data" type="application/json">{html.escape(json.dumps(config), quote=False)}</script></head></html>'
    return Response(200, body.encode(), {"Content-Type": "text/html"})


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("HYPERPOD_RL_STUDIO_METADATA", str(tmp_path / "no-metadata.json"))


@pytest.fixture
def jupyter(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """A server runtime file pointing at a fake server (this process plays the server's pid)."""
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    with FakeHTTPServer() as srv:
        info = {"url": f"{srv.url}/jupyterlab/default/", "base_url": "/jupyterlab/default/", "token": "", "pid": os.getpid(), "port": 0}
        (runtime / f"jpserver-{os.getpid()}.json").write_text(json.dumps(info))
        monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
        monkeypatch.setenv("JPY_PARENT_PID", str(os.getpid()))
        yield srv


def test_doctor_without_jupyter_or_aws_is_clean(no_aws: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import hyperpod_rl as hp

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "empty-runtime"))
    report = hp.doctor()
    statuses = {c.name: c.status for c in report.checks}
    assert statuses["Python"] == "ok" and statuses["JupyterLab"] == "skip" and statuses["SageMaker Studio"] == "skip"
    assert statuses["AWS identity"] == "skip" and statuses["Run storage"] == "ok"
    assert report.ok and report.status in ("ok", "warn")
    import hyperpod_rl.readiness  # the checks live in a module of another name: hp.doctor stays the function

    assert hp.doctor is hyperpod_rl.readiness.doctor
    assert isinstance(hp.doctor(aws=False), type(report))
    data = json.loads(report.to_json())
    assert data["status"] == report.status and {c["name"] for c in data["checks"]} >= {"Python", "Run storage", "Local cluster"}
    page = report._repr_html_()
    assert "<table>" in page and "hyperpod-rl doctor" in page and page.count("<tr>") == len(report.checks) + 1


def test_every_warning_and_failure_names_its_fix(no_aws: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from pydantic import ValidationError

    from hyperpod_rl.checks import Check
    from hyperpod_rl.readiness import doctor

    for status in ("warn", "fail"):
        with pytest.raises(ValidationError, match=f"check 'X' is {status} without a fix: every warn/fail says what to do"):
            Check(name="X", status=status, detail="something")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "empty-runtime"))
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "no-local-cluster"))  # the session's cluster would make the Ray check ok
    report = doctor()
    # the skipped checks a person can act on say how
    assert "run hp.doctor() in a notebook" in report["JupyterLab"].fix
    assert "--address sagemaker_ray://<raycluster>/<namespace>" in report["Ray client vs cluster"].fix
    assert "AWS_REGION" in report["AWS identity"].fix


def test_doctor_flags_the_missing_anywidget_frontend(no_aws: None, jupyter: FakeHTTPServer) -> None:
    from hyperpod_rl.readiness import doctor

    jupyter.route("GET", "/jupyterlab/default/lab", lab_page({"@jupyter-widgets/jupyterlab-manager": True, "jupyterlab-plotly": True}))
    report = doctor(aws=False)
    assert report["JupyterLab"].status == "ok" and "4.5.11 at /jupyterlab/default/" in report["JupyterLab"].detail
    widgets = report["Widget frontends"]
    assert widgets.status == "warn" and "anywidget missing: live charts are off" in widgets.detail
    assert "restart-jupyter-server" in widgets.fix and "/opt/conda/bin/pip install anywidget" in widgets.fix
    # disabled counts as missing; the ipywidgets manager missing is a failure
    jupyter.route(
        "GET",
        "/jupyterlab/default/lab",
        lab_page({"@jupyter-widgets/jupyterlab-manager": False, "anywidget": True, "jupyterlab-plotly": True}),
    )
    again = doctor(aws=False)
    assert again["Widget frontends"].status == "fail" and not again.ok
    jupyter.route(
        "GET",
        "/jupyterlab/default/lab",
        lab_page(dict.fromkeys(("@jupyter-widgets/jupyterlab-manager", "anywidget", "jupyterlab-plotly", "hyperpod-rl-jupyterlab"), True)),
    )
    good = doctor(aws=False)
    assert good["Widget frontends"].status == "ok" and good["hyperpod-rl JupyterLab extension"].status == "ok"


class StubSession:
    """A boto3 session handing out stubbed clients (region us-west-2); STS for EKS tokens stays real (presigning only)."""

    region_name = "us-west-2"

    def __init__(self, clients: dict[str, Any]) -> None:
        self.clients = clients
        self.real = boto3.Session(aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name="us-west-2")

    def client(self, name: str, **kw: Any) -> Any:
        if name == "sts" and "endpoint_url" in kw:
            return self.real.client(name, **kw)
        return self.clients[name]


def test_doctor_on_studio_with_one_hyperpod_cluster(no_aws: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperpod_rl.readiness import doctor

    metadata = tmp_path / "resource-metadata.json"
    metadata.write_text(
        json.dumps({"DomainId": "d-abc123", "SpaceName": "alice-space", "ResourceName": "default", "ExecutionRoleArn": ROLE})
    )
    monkeypatch.setenv("HYPERPOD_RL_STUDIO_METADATA", str(metadata))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "empty-runtime"))
    real = boto3.Session(aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name="us-west-2")
    sts, sm, eks = (real.client(n) for n in ("sts", "sagemaker", "eks"))
    t0 = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
    with FakeHTTPServer() as kube, Stubber(sts) as s_sts, Stubber(sm) as s_sm, Stubber(eks) as s_eks:

        def review(req: Request, _m: Any) -> Response:
            body = req.json()
            return Response(201, {**body, "status": {"allowed": body["spec"]["resourceAttributes"]["group"] == "ray.io"}})

        kube.route("POST", r"/apis/authorization\.k8s\.io/v1/selfsubjectaccessreviews", review)
        s_sts.add_response(
            "get_caller_identity",
            {
                "UserId": "AROA:SageMaker",
                "Account": ACCT,
                "Arn": f"arn:aws:sts::{ACCT}:assumed-role/AmazonSageMaker-ExecutionRole-2026/SageMaker",
            },
        )
        s_sm.add_response(
            "list_clusters",
            {
                "ClusterSummaries": [
                    {
                        "ClusterArn": f"arn:aws:sagemaker:us-west-2:{ACCT}:cluster/a1",
                        "ClusterName": "ml",
                        "CreationTime": t0,
                        "ClusterStatus": "InService",
                    }
                ]
            },
        )
        s_sm.add_response(
            "describe_cluster",
            {
                "ClusterArn": f"arn:aws:sagemaker:us-west-2:{ACCT}:cluster/a1",
                "ClusterName": "ml",
                "ClusterStatus": "InService",
                "InstanceGroups": [],
                "Orchestrator": {"Eks": {"ClusterArn": f"arn:aws:eks:us-west-2:{ACCT}:cluster/ml-eks"}},
            },
            {"ClusterName": "ml"},
        )
        s_eks.add_client_error(
            "describe_access_entry",
            "ResourceNotFoundException",
            "no entry",
            404,
            expected_params={"clusterName": "ml-eks", "principalArn": ROLE},
        )
        s_eks.add_response(
            "describe_addon",
            {
                "addon": {
                    "addonName": "amazon-sagemaker-hyperpod-observability",
                    "clusterName": "ml-eks",
                    "status": "ACTIVE",
                    "configurationValues": json.dumps(
                        {
                            "ampWorkspace": {"arn": f"arn:aws:aps:us-west-2:{ACCT}:workspace/ws-1a2b3c4d"},
                            "grafana": {"url": "https://g-abc123def4.grafana-workspace.us-west-2.amazonaws.com/"},
                        }
                    ),
                }
            },
            {"clusterName": "ml-eks", "addonName": "amazon-sagemaker-hyperpod-observability"},
        )
        report = doctor(namespace="hyperpod-ns-team-a", session=StubSession({"sts": sts, "sagemaker": sm, "eks": eks}))
    assert report["SageMaker Studio"].detail == "domain d-abc123, space alice-space, app default"
    assert report["AWS identity"].status == "ok" and "in us-west-2" in report["AWS identity"].detail
    assert report["HyperPod clusters"].status == "ok" and "1 usable (ml)" in report["HyperPod clusters"].detail
    entry = report["EKS access entry"]
    assert entry.status == "fail" and ROLE in entry.fix and "AmazonSagemakerHyperpodTrainingPolicy" in entry.fix
    assert report["Ray RBAC (ray.io)"].status == "skip"
    obs = report["Observability add-on"]
    assert "https://g-abc123def4.grafana-workspace.us-west-2.amazonaws.com" in obs.detail
    assert "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-1a2b3c4d" in obs.detail
    assert report["Run storage"].status == "warn" and "FSx" in report["Run storage"].fix  # a local disk for HyperPod runs
    assert not report.ok


def test_cli_doctor_json(no_aws: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from hyperpod_rl.cli import app

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "empty-runtime"))
    result = CliRunner().invoke(app, ["doctor", "--json", "--no-aws"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["checks"][0]["name"] == "Python" and all(set(c) == {"name", "status", "detail", "fix"} for c in data["checks"])


def test_an_unreachable_sagemaker_ray_address_says_how_once(no_aws: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from hyperpod_rl.readiness import doctor

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "empty-runtime"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("HYPERPOD_RL_HYPERPOD_CLUSTER", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    ray = doctor(address="sagemaker_ray://maze/hyperpod-ns-a", aws=False)["Ray client vs cluster"]
    assert ray.status == "fail" and ray.detail.count("sagemaker_ray://maze/hyperpod-ns-a") == 1, ray.detail
    assert "no HyperPod cluster named and no kubeconfig" in ray.detail and ray.fix.startswith("pass --cluster <HyperPod cluster>")
