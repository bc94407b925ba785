"""The local Ray Serve app on the real local cluster: answers, malformed requests, solve, load, and
every listener of the cluster with serving on (docs/local-cluster.md, "What listens where")."""

from __future__ import annotations

import base64
import copy
import importlib
import io
import json
import pkgutil
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import psutil
import pytest
import requests

from hyperpod_rl.cluster.local import find_free_port
from hyperpod_rl.errors import ServeError
from hyperpod_rl.serve.client import chat, maze_request, solve
from hyperpod_rl.tasks.maze import clean_messages, read_rows

pytestmark = [pytest.mark.ray, pytest.mark.job]  # one Ray Serve app for the module

PORT = find_free_port()  # not a fixed port: another engineer's serving test may hold it
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def served(local_cluster, trained_adapter, second_adapter):
    """The app with two adapters side by side ('maze', 'maze2') and the base model ('base');
    torn down after the module."""
    from hyperpod_rl.serve.local import deploy_local, shutdown_local

    client = local_cluster.job_client()
    url = deploy_local(client, trained_adapter["model_dir"], {"maze": trained_adapter["adapter"], "maze2": second_adapter}, port=PORT)
    yield {"url": url, "client": client, "rows": read_rows(trained_adapter["heldout"]), "second": second_adapter, **trained_adapter}
    shutdown_local(client)


def _post(url: str, body) -> requests.Response:
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return requests.post(f"{url}/v1/chat/completions", data=data, headers={"content-type": "application/json"}, timeout=60)


def _with_image(row: dict, url_value: str) -> dict:
    messages = clean_messages(row["prompt"])
    for msg in messages:
        if isinstance(msg["content"], list):
            for part in msg["content"]:
                if part.get("type") == "image_url":
                    part["image_url"] = {"url": url_value}
    return {"model": "maze", "messages": messages}


def _png(size: int) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (size, size), "white").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _bomb_png(side: int) -> bytes:
    """A PNG of a few hundred bytes whose header declares ``side`` x ``side`` pixels (a
    decompression bomb: decoding it would take side**2 * 3 bytes)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + b"\x00" * (side * 3)
    compressor = zlib.compressobj(9)
    idat = compressor.compress(row * 4) + compressor.flush()  # the first rows only: the file stays tiny
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def _many_images(row: dict, count: int) -> dict:
    body = copy.deepcopy(maze_request(row, model="maze"))
    user = next(m for m in body["messages"] if isinstance(m["content"], list))
    image = next(p for p in user["content"] if p.get("type") == "image_url")
    user["content"] = [*user["content"], *[image] * (count - 1)]
    return body


def _with_text(row: dict, text: str) -> dict:
    body = copy.deepcopy(maze_request(row, model="maze"))
    user = next(m for m in body["messages"] if isinstance(m["content"], list))
    user["content"] = [*user["content"], {"type": "text", "text": text}]
    return body


def test_models_lists_base_and_adapter(served):
    resp = requests.get(f"{served['url']}/v1/models", timeout=30)
    assert resp.status_code == 200
    assert [m["id"] for m in resp.json()["data"]] == ["base", "maze", "maze2"]


def test_served_greedy_answers_equal_in_process_answers(served):
    """Same mazes, greedy: the served answers equal MazePolicy.act(greedy=True) in this process."""
    from hyperpod_rl.model.adapter import load_policy

    rows = served["rows"]
    prompts = [clean_messages(r["prompt"]) for r in rows]
    answers = {}
    for name, adapter in (("maze", served["adapter"]), ("maze2", served["second"]), ("base", None)):
        policy = load_policy(served["model_dir"], adapter)
        expected = [a.text for a in policy.act(prompts, greedy=True)]
        answers[name] = [chat(served["url"], maze_request(r, model=name))[0] for r in rows]
        assert answers[name] == expected, name
    # each adapter changes the answers: 'model' really selects one of the side-by-side adapters
    assert answers["maze"] != answers["base"] and answers["maze2"] != answers["base"] and answers["maze"] != answers["maze2"]


def test_served_seeded_samples_equal_in_process_samples(served):
    """Sampling (temperature 1) with a fixed seed: the same move as in-process with that seed."""
    import torch

    from hyperpod_rl.model.adapter import load_policy

    policy = load_policy(served["model_dir"], served["adapter"])
    rows = served["rows"][:8]
    for seed, row in enumerate(rows):
        expected = policy.act([clean_messages(row["prompt"])], temperature=1.0, generator=torch.Generator().manual_seed(seed))[0].text
        got, _ = chat(served["url"], {**maze_request(row, model="maze", temperature=1.0), "seed": seed})
        assert got == expected


def test_solve_plays_the_maze_like_in_process_evaluation(served):
    from hyperpod_rl.model.adapter import load_policy
    from hyperpod_rl.model.rollout import play_episodes

    rows = served["rows"][:4]
    policy = load_policy(served["model_dir"], served["adapter"])
    episodes = play_episodes(policy, rows, greedy=True)
    with requests.Session() as session:
        for row, episode in zip(rows, episodes, strict=True):
            result = solve(row, served["url"], "maze", session=session)
            assert result.answers == [t.action.text for t in episode.turns]
            assert result.reward == pytest.approx(episode.total_return)
            assert result.metrics == pytest.approx(episode.metrics)
            assert result.turns == len(result.moves) == len(result.latencies_s) == len(result.path) - 1
            assert result.path[0] == tuple(json.loads(row["maze"])["start"])
            assert all(lat > 0 for lat in result.latencies_s)
            assert result.solved == bool(episode.metrics["solved"])


def test_solve_a_bare_maze(served):
    from hyperpod_rl.tasks.maze import generate_maze

    maze = generate_maze(3, 3, seed=1)
    result = solve(maze, served["url"], "maze", max_turns=2, env_config={"prompt_style": "terse"})
    assert result.turns <= 2
    assert all(m in (None, "up", "down", "left", "right") for m in result.moves)
    assert result.path[0] == maze.start


def test_an_adapter_no_longer_served_says_how_to_serve_it(served):
    """Field report: a 404 for an adapter no longer served, and a server that is down, named
    ``hyperpod-rl serve up`` without the run id it requires."""
    row = served["rows"][0]
    with pytest.raises(ServeError) as gone:
        chat(served["url"], maze_request(row, model="gone"), run_id="my-run")
    assert re.fullmatch(r"404 from \S+: unknown model 'gone': use one of .*; serve it: hyperpod-rl serve up my-run", str(gone.value))
    with pytest.raises(ServeError, match=r"unknown model 'gone'.*; serve it: hyperpod-rl serve up my-run"):
        solve(row, served["url"], "gone", run_id="my-run")
    down = f"http://127.0.0.1:{find_free_port()}"
    with pytest.raises(ServeError, match=r"cannot reach .*; is the server up\? Serve the run: hyperpod-rl serve up my-run$"):
        chat(down, maze_request(row, model="maze"), run_id="my-run")
    with pytest.raises(ServeError, match=r"400 from .*n=2 is not served") as other:
        chat(served["url"], {**maze_request(row, model="maze"), "n": 2}, run_id="my-run")
    assert "serve up" not in str(other.value)  # other errors name their own fix only


@pytest.mark.parametrize(
    ("case", "status", "code", "detail"),
    [
        ("bad-base64", 400, "invalid_image", r"not valid base64"),
        ("no-image", 400, "invalid_image", r"has no image: add an image_url part"),
        ("huge-image", 413, "image_too_large", r"4096x4096 px; the limit is 2048 px per side"),
        ("unknown-adapter", 404, "model_not_found", r"unknown model 'nope': use one of base, maze, maze2"),
        ("not-json", 400, "invalid_json", r"the body is not valid JSON at line 1, column 2: send an OpenAI chat-completions request"),
        ("http-url", 400, "invalid_image", r"must be a data URL"),
        ("not-an-image", 400, "invalid_image", r"not a readable image"),
        ("no-messages", 400, "invalid_request", r"invalid chat-completions request: messages: has 0 item\(s\); give at least 1"),
        ("huge-body", 413, "request_too_large", r"the request body is \d+ bytes; the limit is"),
        ("two-choices", 400, "unsupported_n", r"n=2 is not served"),
        ("decompression-bomb", 413, "image_too_large", r"image (is 20000x20000 px|declares more than \d+ pixels); the limit is"),
        ("too-many-images", 400, "too_many_images", r"more than 8 images; the limit is 8 per request"),
        ("long-prompt", 400, "context_length_exceeded", r"the prompt is \d+ tokens \(text and image tokens\); the limit is \d+"),
        ("max-tokens-beyond-room", 400, "max_tokens_too_large", r"max_tokens=1000000 exceeds the model's room .* send max_tokens <= \d+"),
        ("max-tokens-below-an-answer", 400, "max_tokens_too_small", r"max_tokens=1 is below the \d+ tokens of one answer"),
        # issue 42 item 1: numeric extremes and deep nesting, refused before the model runs
        (
            "temperature-underflows",
            400,
            "invalid_request",
            r"temperature: too small to sample with .* send 0 for greedy decoding, or a temperature from 0.01 to 2.0 \(got 1e-320\)",
        ),
        ("temperature-infinite", 400, "invalid_request", r"temperature: give a finite number, not inf or nan"),
        ("seed-beyond-64-bit", 400, "invalid_request", r"seed: must be <= 9223372036854775807"),
        ("nested-past-recursion", 400, "invalid_json", r"nests JSON deeper than 32 levels"),
        ("nested-past-the-limit", 400, "invalid_json", r"nests JSON deeper than 32 levels"),
        ("megabyte-model-name", 400, "invalid_request", r"model: must be 0\.\.256 characters long"),
        # valid JSON that Python's json refuses (a number past its 4300-digit limit): said as such
        ("number-past-the-digit-limit", 400, "invalid_json", r"the body holds a number of more than 4300 digits"),
    ],
)
def test_malformed_requests_get_4xx_and_the_replica_survives(served, case, status, code, detail):
    url, row = served["url"], served["rows"][0]
    before = requests.get(f"{url}/healthz", timeout=30).json()
    body = {
        "bad-base64": _with_image(row, "data:image/png;base64,@@not base64@@"),
        "no-image": {"model": "maze", "messages": [{"role": "user", "content": "which way?"}]},
        "huge-image": _with_image(row, _png(4096)),
        "unknown-adapter": maze_request(row, model="nope"),
        "not-json": b"{not json",
        "http-url": _with_image(row, "https://example.com/maze.png"),
        "not-an-image": _with_image(row, "data:image/png;base64," + base64.b64encode(b"plain text").decode()),
        "no-messages": {"model": "maze", "messages": []},
        "huge-body": _with_image(row, "data:image/png;base64," + "A" * (17 * 1024 * 1024)),
        "two-choices": {**maze_request(row, model="maze"), "n": 2},
        "decompression-bomb": _with_image(row, "data:image/png;base64," + base64.b64encode(_bomb_png(20_000)).decode()),
        "too-many-images": _many_images(row, 9),
        "long-prompt": _with_text(row, "left right " * 20_000),
        "max-tokens-beyond-room": {**maze_request(row, model="maze"), "max_tokens": 1_000_000},
        "max-tokens-below-an-answer": {**maze_request(row, model="maze"), "max_completion_tokens": 1},
        "temperature-underflows": {**maze_request(row, model="maze"), "temperature": 1e-320},
        "temperature-infinite": json.dumps(maze_request(row, model="maze"))[:-1].encode() + b', "temperature": Infinity}',
        "seed-beyond-64-bit": {**maze_request(row, model="maze"), "seed": 2**70},
        "nested-past-recursion": json.dumps(maze_request(row, model="maze"))[:-1].encode()
        + b', "user": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}",
        "nested-past-the-limit": {**maze_request(row, model="maze"), "user": json.loads("[" * 40 + "]" * 40)},
        "megabyte-model-name": maze_request(row, model="m" * 1_000_000),
        "number-past-the-digit-limit": json.dumps(maze_request(row, model="maze"))[:-1].encode()
        + b', "max_tokens": '
        + b"9" * 100_000
        + b"}",
    }[case]
    resp = _post(url, body)
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]  # OpenAI's error shape
    assert error["type"] == "invalid_request_error" and error["code"] == code and set(error) == {"message", "type", "code", "param"}
    assert re.search(detail, error["message"]), error
    if isinstance(body, dict):
        with pytest.raises(ServeError, match=f"{status} from {url}"):
            chat(url, body)
    # the same replica still answers
    after = requests.get(f"{url}/healthz", timeout=30).json()
    assert after == before
    answer, _ = chat(url, maze_request(row, model="maze"))
    assert re.fullmatch(r"<answer>(up|down|left|right)</answer>", answer)


def test_a_body_over_the_limit_is_refused_from_its_header_before_it_is_sent(served):
    """The server answers 413 from ``Content-Length`` alone: the client sends the headers, waits
    for the answer, and never sends a byte of the declared 1 GB body."""
    import http.client
    from urllib.parse import urlsplit

    url = urlsplit(served["url"])
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    try:
        conn.putrequest("POST", "/v1/chat/completions")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(1 << 30))
        conn.endheaders()  # no body follows
        resp = conn.getresponse()
        error = json.loads(resp.read())["error"]
    finally:
        conn.close()
    assert resp.status == 413 and error["code"] == "request_too_large", error
    assert re.search(r"the request body is 1073741824 bytes; the limit is 16777216 bytes", error["message"]), error


def test_a_chunked_body_over_the_limit_is_refused_while_it_streams(served):
    """Without ``Content-Length`` (chunked transfer) the cap applies while the body streams in."""

    def chunks():
        for _ in range(18):
            yield b"A" * (1024 * 1024)

    resp = requests.post(f"{served['url']}/v1/chat/completions", data=chunks(), headers={"content-type": "application/json"}, timeout=120)
    assert resp.status_code == 413, resp.text
    assert re.search(r"the request body is over 16777216 bytes; the limit is 16777216 bytes", resp.json()["error"]["message"])


def test_a_server_failure_returns_a_request_id_and_no_exception_text(served, local_cluster):
    """An image the vision processor cannot take (aspect ratio over its limit of 200) fails inside
    the model code: the client gets a 500 with a request id only (Serve's own, in one x-request-id
    header), and the replica's log has the traceback under that id."""
    row = served["rows"][0]
    resp = _post(served["url"], _with_image(row, _png_of(2000, 8)))
    assert resp.status_code == 500, resp.text
    error = resp.json()["error"]
    request_id = resp.headers["x-request-id"]
    assert error["type"] == "server_error" and error["code"] == "server_error"
    assert error["message"] == f"the server failed on this request (request id {request_id}); its log has the details under that id"
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", request_id), request_id  # one id, not a list
    assert "Traceback" not in resp.text and "Error" not in error["message"]
    # logged before the response was built (the replica's file handler flushes every record)
    logs = {p.name: p.read_text(errors="replace") for p in Path(local_cluster.state.temp_dir).glob("session_*/logs/serve/replica_*.log")}
    named = [name for name, text in logs.items() if f"request {request_id} failed" in text]
    assert named and all("Traceback" in logs[name] for name in named), f"no replica log names request {request_id}: {sorted(logs)}"
    answer, _ = chat(served["url"], maze_request(row, model="maze"))  # the replica still answers
    assert re.fullmatch(r"<answer>(up|down|left|right)</answer>", answer)


def _png_of(width: int, height: int) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _transparent_url(row: dict) -> str:
    """The row's maze image as an RGBA PNG whose white floor is transparent and stores
    (0, 0, 0, 0) (issue 14 item 5's field input)."""
    import numpy as np
    from PIL import Image

    from hyperpod_rl.tasks.maze import decode_image_part

    part = next(
        p for m in clean_messages(row["prompt"]) if isinstance(m["content"], list) for p in m["content"] if p["type"] == "image_url"
    )
    rgb = np.asarray(decode_image_part(part))
    floor = (rgb == 255).all(axis=-1)
    rgba = np.dstack([rgb, np.where(floor, 0, 255).astype(np.uint8)])
    rgba[floor] = 0
    buf = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def test_transparent_image_gets_the_same_answer_as_the_opaque_one(served):
    """Issue 14 item 5: the served answer for the RGBA image equals the one for the RGB image."""
    for row in served["rows"][:8]:
        for model in ("maze", "maze2"):
            opaque, _ = chat(served["url"], maze_request(row, model=model))
            transparent, _ = chat(served["url"], {**_with_image(row, _transparent_url(row)), "model": model, "temperature": 0.0})
            assert transparent == opaque


def _openai_client(url: str):
    import openai

    return openai.OpenAI(base_url=f"{url}/v1", api_key="not-used", max_retries=0, timeout=120)


def test_openai_sdk_answers_with_complete_usage(served):
    """Issue 14 item 12: through the official SDK, the answers equal the project's client and the
    in-process policy, and usage counts the prompt (text + vision tokens) and the completion."""
    from hyperpod_rl.model.adapter import load_policy

    policy = load_policy(served["model_dir"], served["adapter"])
    sdk = _openai_client(served["url"])
    for row in served["rows"][:6]:
        messages = clean_messages(row["prompt"])
        action = policy.act([messages], greedy=True)[0]
        got = sdk.chat.completions.create(model="maze", messages=messages, temperature=0)
        assert got.object == "chat.completion" and got.model == "maze"
        assert got.choices[0].message.content == action.text == chat(served["url"], maze_request(row, model="maze"))[0]
        assert got.choices[0].finish_reason == "stop"
        assert got.usage.prompt_tokens == policy.prompt_tokens(messages) > int(row["image_tokens"])
        assert got.usage.completion_tokens == len(action.response_ids)
        assert got.usage.total_tokens == got.usage.prompt_tokens + got.usage.completion_tokens


@pytest.mark.parametrize("include_usage", [True, False])
def test_openai_sdk_streams_chunks(served, include_usage):
    """stream=True: server-sent chat.completion.chunk events the SDK's Stream reads: the same
    text as without streaming, a finish reason, and the usage chunk when asked for."""
    sdk = _openai_client(served["url"])
    for row in served["rows"][:4]:
        messages = clean_messages(row["prompt"])
        whole = sdk.chat.completions.create(model="maze2", messages=messages, temperature=0)
        options = {"stream_options": {"include_usage": True}} if include_usage else {}
        chunks = list(sdk.chat.completions.create(model="maze2", messages=messages, temperature=0, stream=True, **options))
        assert chunks and all(c.object == "chat.completion.chunk" for c in chunks)
        assert len({c.id for c in chunks}) == 1
        with_choices = [c for c in chunks if c.choices]
        assert with_choices[0].choices[0].delta.role == "assistant"
        assert "".join(c.choices[0].delta.content or "" for c in with_choices) == whole.choices[0].message.content
        assert with_choices[-1].choices[0].finish_reason == "stop"
        usage = [c.usage for c in chunks if c.usage is not None]
        assert usage == ([whole.usage] if include_usage else [])


def test_openai_sdk_sees_openai_errors(served):
    import openai

    sdk = _openai_client(served["url"])
    row = served["rows"][0]
    for stream in (False, True):
        with pytest.raises(openai.NotFoundError, match=r"unknown model 'nope'") as info:
            sdk.chat.completions.create(model="nope", messages=clean_messages(row["prompt"]), stream=stream)
        assert (info.value.status_code, info.value.type, info.value.code) == (404, "invalid_request_error", "model_not_found")
    with pytest.raises(openai.BadRequestError, match=r"has no image") as info:
        sdk.chat.completions.create(model="maze", messages=[{"role": "user", "content": "which way?"}])
    assert info.value.code == "invalid_image"
    with pytest.raises(openai.NotFoundError, match=r"/v1/embeddings is not a route of this server") as info:
        sdk.embeddings.create(model="maze", input="x")
    assert info.value.code == "not_found"


def test_deploy_refuses_a_bad_adapter_before_submitting_a_job(served, tmp_path):
    from hyperpod_rl.serve.local import deploy_local

    bad = tmp_path / "adapter"
    shutil.copytree(served["adapter"], bad)
    prov = json.loads((bad / "provenance.json").read_text())
    prov["base_model_revision"] = "0000000000000000"
    (bad / "provenance.json").write_text(json.dumps(prov))
    jobs_before = len(served["client"].list_jobs())
    with pytest.raises(ServeError, match=r"(?s)refusing to serve:.*\[base_model\].*revision '0000000000000000'"):
        deploy_local(served["client"], served["model_dir"], {"maze": bad}, port=PORT)
    with pytest.raises(ServeError, match="'base' is reserved"):
        deploy_local(served["client"], served["model_dir"], {"base": served["adapter"]}, port=PORT)
    assert len(served["client"].list_jobs()) == jobs_before
    assert requests.get(f"{served['url']}/healthz", timeout=30).status_code == 200


def test_vllm_job_is_accepted_by_ray_and_waits_for_a_gpu(served):
    """The generated vLLM job goes through the real Jobs API; this cluster has no GPU, so the
    job waits (PENDING) for one instead of starting vLLM, and is stopped."""
    import time

    from ray.job_submission import JobStatus

    from hyperpod_rl.serve.cluster import submit_vllm_job

    spec = {
        "base_model": "Qwen/Qwen3-VL-8B-Instruct",
        "base_model_id": "hyperpod-rl/tiny-qwen3-vl",
        "base_model_revision": served["revision"],
        "adapters": {"maze": str(served["adapter"])},
    }
    client = served["client"]
    submission_id = submit_vllm_job(client, spec)
    try:
        assert submission_id.startswith("hprl-serve-vllm-qwen3-vl-")
        time.sleep(3)
        assert client.get_job_status(submission_id) == JobStatus.PENDING
        info = client.get_job_info(submission_id)
        assert info.entrypoint.startswith("vllm serve Qwen/Qwen3-VL-8B-Instruct --served-model-name qwen3-vl")
    finally:
        client.stop_job(submission_id)


def test_load_benchmark_runs_against_the_endpoint(served):
    """benchmarks/serve_load.py, scaled down (the 16 x 50 bar is in test_load_bar)."""
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "serve_load.py"),
            "--endpoint",
            served["url"],
            "--heldout",
            str(served["heldout"]),
            "--clients",
            "4",
            "--requests",
            "5",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last["requests"] == 20 and last["failed"] == 0
    assert 0 < last["p50_ms"] <= last["p95_ms"] <= last["p99_ms"]
    assert last["requests_per_s"] > 0


@pytest.mark.slow
def test_load_bar_16_clients_x_50_requests_without_failures(served):
    """The issue's bar: 16 concurrent clients x 50 requests with maze images, zero failed.

    Slow: 800 requests with maze images through one CPU replica."""
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "serve_load.py"),
            "--endpoint",
            served["url"],
            "--heldout",
            str(served["heldout"]),
            "--clients",
            "16",
            "--requests",
            "50",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        check=False,
    )
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last["requests"] == 800 and last["failed"] == 0
    assert {"p50_ms", "p95_ms", "p99_ms", "requests_per_s"} <= set(last)
    assert last["p50_ms"] <= last["p95_ms"] <= last["p99_ms"]


def _doc_read_run(served, tmp_path: Path) -> str:
    """A doc_read run directory (config and held-out parquet) on the served tiny base model."""
    from hyperpod_rl.quickstart import DatasetPaths, QuickstartOptions, make_run_config
    from hyperpod_rl.runs import run_paths, write_config
    from hyperpod_rl.tasks import get_task, write_parquet

    task = get_task("doc_read")
    options = task.options_model.build({"seed": 5, "counts": {"train": 2, "heldout": 2}, "prompt_style": "terse"})
    splits = task.build_dataset(options)
    train, heldout = tmp_path / "train.parquet", tmp_path / "heldout.parquet"
    write_parquet(splits["train"], train)
    write_parquet(splits["heldout"], heldout)
    data = DatasetPaths(train=train, heldout=heldout, hashes={}, spec={"options": options.model_dump(mode="json")})
    opts = QuickstartOptions.build({"task": "doc_read", "steps": 1})
    config = make_run_config(opts, run_id="serve-doc-read", model_path=served["model_dir"], revision=served["revision"], data=data)
    write_config(run_paths(config.run_id), config)
    return config.run_id


def test_solve_shows_the_tasks_columns_for_doc_read(served, tmp_path, monkeypatch):
    """``serve solve`` of a doc_read run names the task's columns (answer, expected, correct), not
    the maze's (move, cell), and its default model name is the run's task."""
    from typer.testing import CliRunner

    from hyperpod_rl.cli import app
    from hyperpod_rl.cli._common import console

    run_id = _doc_read_run(served, tmp_path)
    runner = CliRunner()
    monkeypatch.setattr(console, "width", 300)  # one table row per turn (the console is created once per process)
    result = runner.invoke(app, ["serve", "solve", run_id, "--model", "base", "--endpoint", served["url"]], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if "turn" in line and "answer" in line)
    for column in ("expected", "correct", "violation", "reward"):
        assert column in header, header
    assert "move" not in header and "cell" not in header, header
    assert "doc_read held-out item 0 · model base" in " ".join(result.output.split())
    # without --model the run's task names the adapter: this app serves 'maze' and 'maze2', not 'doc_read'
    unnamed = runner.invoke(app, ["serve", "ask", run_id, "--endpoint", served["url"]], env={"COLUMNS": "250"})
    assert unnamed.exit_code == 2 and "unknown model 'doc_read'" in unnamed.stderr, unnamed.output


DOC = REPO / "docs" / "local-cluster.md"
LOOPBACK = ("127.0.0.1", "::1")
#: Roles the doc lists as read-only Prometheus endpoints that answer without the token.
METRICS_ROLES = ("dashboard metrics", "metrics export", "autoscaler metrics")


def _grpc_methods() -> dict[str, str]:
    """One real method per gRPC service Ray defines (generated stubs), plus the C++-only object manager."""
    import ray.core.generated as generated
    import ray.serve.generated as serve_generated

    methods: dict[str, str] = {"ray.rpc.ObjectManagerService": "/ray.rpc.ObjectManagerService/Push"}
    for package in (generated, serve_generated):
        for info in pkgutil.iter_modules(package.__path__):
            if info.name.endswith("_pb2_grpc"):
                source = Path(importlib.import_module(f"{package.__name__}.{info.name}").__file__).read_text()
                for path in re.findall(r"'(/ray\.[\w.]+/\w+)'", source):
                    methods.setdefault(path.split("/")[1], path)
    return methods


def _cluster_processes(cluster) -> dict[int, str]:
    """pid -> command line of every process of this cluster (found by its --temp-dir) and their children."""
    out: dict[int, str] = {}
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if cluster.state.temp_dir in " ".join(proc.info["cmdline"] or []):
                for p in (proc, *proc.children(recursive=True)):
                    out[p.pid] = " ".join(p.cmdline())[:80]
        except psutil.Error:
            continue
    return out


def _machine_address() -> str:
    """The machine's own non-loopback IPv4 address (what a neighbour on the network would reach)."""
    for addrs in psutil.net_if_addrs().values():
        for addr in addrs:
            if addr.family == socket.AF_INET and not addr.address.startswith("127."):
                return addr.address
    pytest.fail("the machine has no non-loopback IPv4 address to probe from")


def _probe(host: str, port: int, methods: dict[str, str]) -> tuple[str, str]:
    """``(verdict, detail)``: ``token`` (refused without it), ``metrics`` (Prometheus text), ``open`` or ``closed``."""
    try:
        resp = requests.get(f"http://{host}:{port}/metrics", timeout=3)
        if resp.status_code in (401, 403):
            return "token", f"HTTP {resp.status_code}"
        if resp.status_code == 200 and resp.text.startswith("# HELP"):
            return "metrics", "Prometheus text"
        return "open", f"HTTP {resp.status_code} {resp.text[:60]!r}"
    except requests.ConnectionError:
        pass  # not HTTP/1: try gRPC
    except requests.RequestException as err:
        return "open", f"HTTP {type(err).__name__}"
    implemented: dict[str, str] = {}
    with grpc.insecure_channel(f"{host}:{port}") as channel:
        for service, method in methods.items():
            call = channel.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
            try:
                call(b"", timeout=3)
                implemented[service] = "OK"
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.UNIMPLEMENTED:
                    implemented[service] = f"{err.code().name}: {str(err.details())[:60]}"
    if not implemented:
        return "closed", "no Ray gRPC service and no HTTP"
    if all(v.startswith("UNAUTHENTICATED") for v in implemented.values()):
        return "token", ", ".join(sorted(implemented))
    return "open", "; ".join(f"{k} -> {v}" for k, v in sorted(implemented.items()) if not v.startswith("UNAUTHENTICATED"))


@pytest.mark.slow
def test_no_listener_serves_without_the_token_off_loopback(served, local_cluster):
    """Every socket the local cluster listens on, with serving on (this module's app): loopback,
    token-protected, or a documented read-only metrics endpoint (docs/local-cluster.md, "What listens
    where").

    Field report (issue 14, item 10): a Ray Serve replica's gRPC server listened on all interfaces with
    no token and unpickled request bytes. Each listener is probed from the machine's own non-loopback
    address without the token: HTTP ``GET /metrics`` and one real method of every Ray gRPC service."""
    url, port = served["url"], PORT
    assert requests.get(f"{url}/healthz", timeout=10).status_code == 200
    procs = _cluster_processes(local_cluster)
    replicas = [pid for pid, cmd in procs.items() if "ServeReplica" in cmd]
    assert replicas, "the serving replica is not among the cluster's processes"
    machine = _machine_address()
    methods = _grpc_methods()
    verdicts: list[tuple[str, int, str, str, str]] = []
    for conn in psutil.net_connections(kind="inet"):
        if conn.status != psutil.CONN_LISTEN or conn.pid not in procs:
            continue
        ip, lport = conn.laddr.ip, conn.laddr.port
        if ip in LOOPBACK or ip.startswith("::ffff:127."):  # IPv4 loopback on a dual-stack socket
            verdicts.append((ip, lport, procs[conn.pid], "loopback", ""))
            continue
        verdict, detail = _probe(machine if ip in ("0.0.0.0", "::") else ip, lport, methods)
        verdicts.append((ip, lport, procs[conn.pid], verdict, detail))
    table = "\n".join(f"{ip}:{p} {cmd[:50]} -> {v} {d}" for ip, p, cmd, v, d in verdicts)
    assert len(verdicts) >= 8, table
    assert not [v for v in verdicts if v[3] == "open"], f"a listener answers without the token off loopback:\n{table}"
    assert "loopback" in {v[3] for v in verdicts if "ServeReplica" in v[2]}, table
    assert all(v[3] != "open" for v in verdicts if "ServeReplica" in v[2]), table
    metrics = [v for v in verdicts if v[3] == "metrics"]
    assert 1 <= len(metrics) <= len(METRICS_ROLES), table  # only the documented read-only endpoints
    assert local_cluster.state.metrics_export_port in {v[1] for v in metrics}, table
    # The HTTP route and the dashboard stay on loopback.
    assert any(v[1] == port and v[3] == "loopback" for v in verdicts), table
    assert any(v[1] == int(local_cluster.dashboard_url.rsplit(":", 1)[1]) and v[3] == "loopback" for v in verdicts), table


def test_the_doc_lists_what_the_test_allows():
    text = DOC.read_text()
    section = text.split("## What listens where", 1)[1].split("\n## ", 1)[0]
    for role in METRICS_ROLES:
        assert role in section, role
    for phrase in ("Serve replica gRPC", "127.0.0.1", "UNAUTHENTICATED", "401", "tests/serve/test_local_serving.py"):
        assert phrase in section, phrase


def test_down_stops_serve_and_frees_the_port(served, local_cluster):
    """Last in the module: `serve down` deletes the app and stops Serve (the port is free again)."""
    import time

    from hyperpod_rl.serve.local import shutdown_local

    assert shutdown_local(served["client"]) is True
    assert shutdown_local(served["client"]) is False  # a second down finds nothing deployed
    from typer.testing import CliRunner

    from hyperpod_rl.cli import app

    again = CliRunner().invoke(app, ["serve", "down"])  # the CLI says so, and it is not an error
    assert again.exit_code == 0, again.output
    assert f"nothing deployed on {local_cluster.dashboard_url}" in " ".join(again.output.split())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            requests.get(f"{served['url']}/healthz", timeout=5)
        except requests.ConnectionError:
            break
        time.sleep(1)
    else:
        pytest.fail(f"{served['url']} still answers after serve down")
