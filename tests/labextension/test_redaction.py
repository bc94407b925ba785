"""Every route answers through one redactor (issue 30 item 5b): a job log holding AWS
credentials, a presigned URL and the cluster token (verbatim, base64, split across lines) comes
back masked; the /clusters error detail never echoes an ``api_url``'s ``?token=`` query; a JSON
list posted to /tutorial is a 400. The Ray job API is a small HTTP server speaking Ray's two
job routes (``GET /api/jobs/``, ``GET /api/jobs/<id>/logs``), so no cluster is needed."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import tornado

from .conftest import FAKE_TOKEN, write_cluster_state
from .test_routes import store  # noqa: F401 - the fixture

SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
LOG = "\n".join(
    [
        "step 1 reward 0.5",
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        f"AWS_SECRET_ACCESS_KEY={SECRET_KEY}",
        "aws_session_token = IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD",
        "fetched https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIAX%2F20261201&X-Amz-Signature=fe5f80f77d5f&X-Amz-Security-Token=FQoGZXIv",
        f"token {FAKE_TOKEN}",
        "b64 " + base64.b64encode(FAKE_TOKEN.encode()).decode(),
        "split " + FAKE_TOKEN[:32],
        FAKE_TOKEN[32:] + " end",
    ]
)


@pytest.fixture
def ray_api():
    """A job API that knows one job of the run 'mid-failed' and serves LOG as its log."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            if self.path.startswith("/api/jobs/hprl-mid-failed-1/logs"):
                body = {"logs": LOG}
            elif self.path.startswith("/api/jobs/"):
                body = [{"submission_id": "hprl-mid-failed-1", "status": "FAILED", "metadata": {"hyperpod_rl_run_id": "mid-failed"}}]
            else:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


async def test_job_logs_come_back_with_every_secret_kind_masked(jp_fetch, hprl_home, store, ray_api):  # noqa: F811
    write_cluster_state(hprl_home, ray_api)  # the local cluster's token is FAKE_TOKEN
    resp = await jp_fetch("hyperpod-rl", "runs", "mid-failed", "logs")
    data = json.loads(resp.body)
    assert data["source"] == "ray:local" and data["lines"][0] == "step 1 reward 0.5"
    text = resp.body.decode()
    for secret in (
        "AKIAIOSFODNN7EXAMPLE",
        SECRET_KEY.replace("/", "\\/"),
        SECRET_KEY,
        "IQoJb3JpZ2luX2VjEJr",
        "fe5f80f77d5f",
        "AKIAX",
        "FQoGZXIv",
        FAKE_TOKEN,
        FAKE_TOKEN[:32],
        FAKE_TOKEN[32:],
        base64.b64encode(FAKE_TOKEN.encode()).decode()[:40],
    ):
        assert secret not in text, secret
    assert text.count("***") >= 8


async def test_cluster_errors_never_echo_a_token_query(jp_fetch, hprl_home, store, jp_serverapp):  # noqa: F811
    from hyperpod_rl_jupyterlab.service import ClusterEntry

    from hyperpod_rl.cluster.local import find_free_port

    service = jp_serverapp.web_app.settings["hyperpod_rl_service"]
    service.clusters = [ClusterEntry(name="hp", api_url=f"http://user:pw@127.0.0.1:{find_free_port()}/?token=s3cr3t-in-url")]
    resp = await jp_fetch("hyperpod-rl", "clusters")
    text = resp.body.decode()
    entry = next(c for c in json.loads(text)["clusters"] if c["name"] == "hp")
    assert "not answering at http://127.0.0.1:" in json.dumps(entry), entry
    assert "s3cr3t-in-url" not in text and "pw@" not in text


async def test_a_json_list_posted_to_tutorial_is_a_400(jp_fetch, store):  # noqa: F811
    for body in ("[]", '["folder"]', "3"):
        with pytest.raises(tornado.httpclient.HTTPClientError) as err:
            await jp_fetch("hyperpod-rl", "tutorial", method="POST", body=body)
        assert err.value.code == 400, body
        assert "must be a JSON object" in json.loads(err.value.response.body)["message"]
