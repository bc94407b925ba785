"""Pure metric plumbing: plot data, the file tail and poller, and the hardware query builders."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from botocore.credentials import Credentials

from hyperpod_rl.errors import HyperpodRLError
from hyperpod_rl.metrics.hardware import (
    PROMQL,
    amp_signed_request,
    grafana_query_body,
    parse_grafana_response,
    parse_prometheus_vector,
    parse_ray_metrics,
)
from hyperpod_rl.metrics.plots import (
    PHASES,
    bottleneck_verdict,
    hardware_traces,
    merge_records,
    series,
    step_breakdown,
    training_traces,
)
from hyperpod_rl.metrics.schema import MetricRecord
from hyperpod_rl.metrics.stream import MetricsFileTail, MetricStream

DATA = Path(__file__).parent / "data"


def rec(step: int, **values: float) -> MetricRecord:
    return MetricRecord(run_id="r", step=step, total_steps=10, time_s=1000.0 + step, values=values)


def test_step_breakdown_and_verdict():
    r = rec(1, **{"timing/generate": 7.1, "timing/policy_train": 2.0, "timing/step": 10.0})
    parts = step_breakdown(r)
    assert list(parts) == list(PHASES)
    assert parts == pytest.approx({"generate": 7.1, "train": 2.0, "weight sync": 0.0, "other": 0.9})
    assert bottleneck_verdict([r]) == "generate takes 71% of step time (last 1 step)"
    train_heavy = [
        rec(
            s,
            **{
                "timing/generate": 1.0,
                "timing/policy_train": 3.0,
                "timing/weight_sync": 0.5,
            },
        )
        for s in range(1, 13)
    ]
    assert bottleneck_verdict(train_heavy) == "train takes 67% of step time (last 10 steps)"
    assert step_breakdown(train_heavy[0])["other"] == 0.0  # no timing/step: the phases are the step
    assert bottleneck_verdict([rec(1, **{"reward/avg_raw_reward": 0.5})]) == "no step timings yet"


def test_training_traces_have_a_fixed_shape_and_band():
    empty = training_traces([])
    records = [
        rec(
            2,
            **{
                "reward/avg_raw_reward": 0.5,
                "reward/std_raw_reward": 0.1,
                "timing/step": 1.0,
            },
        ),
        rec(
            1,
            **{
                "reward/avg_raw_reward": 0.2,
                "reward/min_raw_reward": 0.0,
                "reward/max_raw_reward": 1.0,
                "policy/policy_kl": float("nan"),
            },
        ),
    ]
    traces = training_traces(merge_records([], records))
    assert [t["name"] for t in traces] == [t["name"] for t in empty]
    low, high, mean = traces[0], traces[1], traces[2]
    assert mean["x"] == [1, 2] and mean["y"] == [0.2, 0.5]
    assert low["y"] == pytest.approx([0.0, 0.4]) and high["y"] == pytest.approx([1.0, 0.6])
    assert high["fill"] == "tonexty"
    kl = next(t for t in traces if t["name"] == "KL")
    assert kl["x"] == []  # NaN skipped
    assert [t["name"] for t in traces if t["type"] == "bar"] == list(PHASES)
    assert series(records, "missing") == ([], [])


def test_merge_records_newest_copy_wins():
    merged = merge_records([rec(1, a=1.0), rec(2, a=2.0)], [rec(2, a=5.0), rec(3, a=3.0)])
    assert [(r.step, r.values["a"]) for r in merged] == [(1, 1.0), (2, 5.0), (3, 3.0)]


def test_file_tail_reads_complete_lines_and_survives_a_rewrite(tmp_path):
    path = tmp_path / "metrics.jsonl"
    tail = MetricsFileTail(path)
    assert tail() == []  # not written yet
    line1, line2 = (rec(s, a=float(s)).model_dump_json() + "\n" for s in (1, 2))
    path.write_text(line1 + line2[:10])  # second line cut off mid-write
    assert [r.step for r in tail()] == [1]
    assert tail() == []
    with path.open("a") as fh:
        fh.write(line2[10:])
    assert [r.step for r in tail()] == [2]
    tmp = tmp_path / "m.tmp"
    tmp.write_text(line1)  # a resume rewrites the file (shorter, new inode)
    os.replace(tmp, path)
    assert [r.step for r in tail()] == [1] and tail.resets == 1


def test_stream_delivers_from_a_background_thread_and_reports_source_errors(tmp_path):
    path = tmp_path / "metrics.jsonl"
    got: list[int] = []
    errors: list[BaseException] = []
    arrived = threading.Event()

    def on_records(batch):
        got.extend(r.step for r in batch)
        arrived.set()

    def broken():
        raise RuntimeError("source down")

    stream = MetricStream(on_records, interval_s=0.05, on_error=errors.append)
    stream.add_source(MetricsFileTail(path))
    stream.add_source(broken)
    stream.start()
    try:
        path.write_text(rec(1, a=1.0).model_dump_json() + "\n")
        assert arrived.wait(5)
        assert got == [1] and stream.running
        assert errors and "source down" in str(errors[0])
    finally:
        stream.stop()
    assert not stream.running
    with pytest.raises(ValueError, match="interval_s must be > 0"):
        MetricStream(on_records, interval_s=0)


def test_parse_ray_prometheus_text():
    sample = parse_ray_metrics((DATA / "ray_metrics.txt").read_text())
    assert sample["127.0.0.1"] == {
        "cpu_percent": 37.5,
        "mem_used_bytes": 4294967296.0,
        "mem_total_bytes": 1.6e10,
    }
    gpu = sample["10.0.0.7"]
    assert gpu["gpu_percent"] == 60.0  # mean over the node's two GPUs
    assert gpu["gram_used_bytes"] == 3072 * 1024 * 1024  # Ray reports MB


def test_grafana_query_body_and_response():
    body = grafana_query_body("amp-uid", now_s=1764442815.0, window_s=300, step_s=15)
    assert body["from"] == "1764442515000" and body["to"] == "1764442815000"
    assert {q["refId"] for q in body["queries"]} == set(PROMQL)
    assert all(q["datasource"] == {"type": "prometheus", "uid": "amp-uid"} for q in body["queries"])
    sample = parse_grafana_response(json.loads((DATA / "grafana_ds_query.json").read_text()))
    assert sample == {
        "10.1.2.3": {"cpu_percent": 40.25, "gpu_percent": 88.0},
        "10.1.2.4": {"cpu_percent": 5.0},
    }
    with pytest.raises(HyperpodRLError, match="Grafana query 'cpu_percent' failed: bad expr"):
        parse_grafana_response({"results": {"cpu_percent": {"status": 400, "error": "bad expr"}}})


def test_amp_request_is_sigv4_signed_for_aps_and_response_parses():
    creds = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")
    url, headers = amp_signed_request(
        "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-1/",
        PROMQL["cpu_percent"],
        region="us-west-2",
        credentials=creds,
        now_s=1764442815.0,
    )
    assert url.startswith("https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-1/api/v1/query?query=max+by")
    assert "time=1764442815.000" in url
    auth = headers["Authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") and "/us-west-2/aps/aws4_request" in auth
    assert headers["X-Amz-Security-Token"] == "session-token" and "X-Amz-Date" in headers
    out = parse_prometheus_vector(json.loads((DATA / "amp_query_vector.json").read_text()), "gpu_percent")
    assert out == {"10.1.2.3": {"gpu_percent": 71.5}, "10.1.2.4": {"gpu_percent": 0.0}}
    with pytest.raises(HyperpodRLError, match="bad_data"):
        parse_prometheus_vector(
            {"status": "error", "errorType": "bad_data", "error": "parse error"},
            "cpu_percent",
        )


def test_hardware_traces_per_node():
    t0 = time.time()
    traces = hardware_traces(
        {
            "10.0.0.7": [
                (t0, {"cpu_percent": 10.0, "gpu_percent": 50.0}),
                (t0 + 5, {"cpu_percent": 20.0, "gpu_percent": 70.0}),
            ],
            "127.0.0.1": [(t0, {"mem_used_bytes": 2 * 1024**3})],
        }
    )
    by_name = {t["name"]: t for t in traces}
    assert by_name["10.0.0.7 CPU"]["y"] == [10.0, 20.0] and by_name["10.0.0.7 GPU"]["row"] == 3
    assert by_name["127.0.0.1 memory"]["y"] == [2.0]
    assert "127.0.0.1 GPU" not in by_name


def test_hardware_source_from_the_environment():
    from hyperpod_rl.metrics.hardware import AMPSource, GrafanaSource, source_from_env

    grafana = source_from_env(
        {
            "HYPERPOD_RL_GRAFANA_URL": "https://g-1.grafana-workspace.us-west-2.amazonaws.com/",
            "HYPERPOD_RL_GRAFANA_TOKEN": "glsa_secret",
            "HYPERPOD_RL_GRAFANA_DATASOURCE_UID": "amp",
        }
    )
    assert isinstance(grafana, GrafanaSource) and grafana.url.endswith("amazonaws.com")
    assert "glsa_secret" not in repr(grafana)
    amp = source_from_env(
        {
            "HYPERPOD_RL_AMP_WORKSPACE_URL": "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-1",
            "AWS_REGION": "us-west-2",
        }
    )
    assert isinstance(amp, AMPSource) and amp.region == "us-west-2"
    assert source_from_env({}) is None
    with pytest.raises(
        HyperpodRLError,
        match="HYPERPOD_RL_GRAFANA_TOKEN, HYPERPOD_RL_GRAFANA_DATASOURCE_UID is not",
    ):
        source_from_env({"HYPERPOD_RL_GRAFANA_URL": "https://g"})
    with pytest.raises(HyperpodRLError, match="AWS_REGION is not"):
        source_from_env({"HYPERPOD_RL_AMP_WORKSPACE_URL": "https://aps"})


def test_grafana_source_posts_the_query_with_the_token_and_parses_frames():
    from hyperpod_rl.metrics.hardware import GrafanaSource
    from tests.fakes import FakeHTTPServer, Response

    with FakeHTTPServer() as srv:
        srv.route(
            "POST",
            r"/api/ds/query",
            Response(200, json.loads((DATA / "grafana_ds_query.json").read_text())),
        )
        sample = GrafanaSource(srv.url, "glsa_secret", "amp-uid").sample()
        (req,) = srv.requests
        assert req.headers["authorization"] == "Bearer glsa_secret"
        assert {q["refId"] for q in req.json()["queries"]} == set(PROMQL)
    assert sample["10.1.2.3"]["gpu_percent"] == 88.0
