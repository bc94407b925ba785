"""One redactor, by kind (issue 30 item 5b): every kind of secret a log or an error may hold is
masked, in its encodings, and ordinary log text is left alone. The JupyterLab server extension
carries an identical copy (it imports no hyperpod_rl)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from hyperpod_rl.redact import MASK, redact, redact_json

REPO = Path(__file__).resolve().parents[1]
TOKEN = "f00d" * 16  # shaped like a Ray token (64 hex characters)
# AWS's documented example credentials (IAM user guide) and an STS session token's shape
ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQDexample+session/token=="


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"creds {ACCESS_KEY} in the log", ACCESS_KEY),
        ("temporary ASIAY34FZKBOKMUTVV7A here", "ASIAY34FZKBOKMUTVV7A"),
        (f"aws_secret_access_key = {SECRET_KEY}", SECRET_KEY),
        (f'{{"SecretAccessKey": "{SECRET_KEY}"}}', SECRET_KEY),
        (f"AWS_SECRET_ACCESS_KEY={SECRET_KEY}", SECRET_KEY),
        (f"a bare key {SECRET_KEY} printed alone", SECRET_KEY),
        (f"aws_session_token={SESSION_TOKEN}", SESSION_TOKEN),
        (f'"SessionToken": "{SESSION_TOKEN}"', SESSION_TOKEN),
        ("https://b.s3.amazonaws.com/k?X-Amz-Signature=fe5f80f77d5fa3beca038a248ff027d0&X-Amz-Date=1", "fe5f80f77d5fa3beca038a248ff027d0"),
        ("https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIAX%2F20261201%2Fus-east-1%2Fs3&X-Amz-Date=1", "AKIAX%2F20261201"),
        ("https://b.s3.amazonaws.com/k?X-Amz-Security-Token=FQoGZXIvYXdzEJr%2F%2Fabc&x=1", "FQoGZXIvYXdzEJr"),
        (
            "Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, Signature=fe5f80f7",
            "20130524/us-east-1",
        ),
        ("botocore.auth DEBUG Signature:\n" + "ab" * 32, "ab" * 32),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "eyJhbGciOiJIUzI1NiJ9"),
        ("dashboard http://127.0.0.1:8265/?token=s3cr3t-value&x=1", "s3cr3t-value"),
        (f"RAY_AUTH_TOKEN is {TOKEN}", TOKEN),
        ("as base64 " + base64.b64encode(TOKEN.encode()).decode(), base64.b64encode(TOKEN.encode()).decode()[:80]),
        ("url-safe " + base64.urlsafe_b64encode(b"\xfb" + TOKEN.encode()).decode(), TOKEN[:4]),  # checked below
        ("wrapped at 40 columns: " + TOKEN[:40] + "\n" + TOKEN[40:], TOKEN[:40]),
        ("wrapped with indentation " + TOKEN[:17] + "\n    " + TOKEN[17:], TOKEN[17:]),
    ],
)
def test_each_kind_is_masked(text: str, secret: str) -> None:
    out = redact(text, [TOKEN])
    assert MASK in out, out
    assert secret not in out or secret == TOKEN[:4], out


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_the_token_inside_a_longer_base64_text_is_masked_at_any_offset(offset: int) -> None:
    blob = base64.b64encode(b"Authorization: Basic " + b"u" * offset + b":" + TOKEN.encode() + b" and more").decode()
    out = redact(f"header {blob}", [TOKEN])
    assert MASK in out
    assert base64.b64decode(blob).decode().count(TOKEN) == 1  # the input really holds it
    decoded_parts = [p for p in out.split(MASK)]
    assert all(TOKEN[8:-8] not in _b64_text(part) for part in decoded_parts)


def _b64_text(part: str) -> str:
    try:
        return base64.b64decode(part + "=" * (-len(part) % 4), validate=False).decode(errors="ignore")
    except ValueError:
        return ""


@pytest.mark.parametrize(
    "text",
    [
        'HPRL_METRIC {"run_id": "abc", "step": 3, "values": {"reward/avg_raw_reward": 0.5, "trainer/tokens_per_second": 812.0}}',
        "commit 3c222b214a0f9e1c3c222b214a0f9e1c3c222b21 at step_000040, sha256 " + "ab" * 32,
        "submitted hprl-recovery-3 with max_tokens=32, rollout.max_prompt_tokens=2048",
        "s3://bucket/runs/abc/adapter_model.safetensors  TOKENIZERS_PARALLELISM=false",
    ],
)
def test_ordinary_log_text_is_left_alone(text: str) -> None:
    assert redact(text, [TOKEN]) == text


def test_json_is_redacted_string_by_string() -> None:
    data = {"lines": [f"key {ACCESS_KEY}", "ok"], "detail": {"url": "http://h:1/?token=abcdefgh"}, "n": 3}
    assert redact_json(data) == {"lines": ["key ***", "ok"], "detail": {"url": "http://h:1/?token=***"}, "n": 3}


def test_the_extension_carries_an_identical_copy() -> None:
    """The JupyterLab server extension runs in Jupyter's environment and imports no hyperpod_rl,
    so it ships this module as ``_redact.py``; one source, kept identical here."""
    ours = (REPO / "hyperpod_rl" / "redact.py").read_bytes()
    theirs = (REPO / "labextension" / "hyperpod_rl_jupyterlab" / "_redact.py").read_bytes()
    assert theirs == ours, "copy hyperpod_rl/redact.py to labextension/hyperpod_rl_jupyterlab/_redact.py"


def test_cli_and_cluster_errors_use_it() -> None:
    """The CLI's job logs (jobs.job_logs / follow_run), the cluster access errors and the local
    cluster's start errors all mask through hyperpod_rl.cluster.access.redact, which is this
    redactor plus the secrets the process holds."""
    from hyperpod_rl.cluster.access import _remember
    from hyperpod_rl.cluster.access import redact as access_redact

    _remember("cafe" * 16)
    text = f"log {ACCESS_KEY} " + base64.b64encode(("cafe" * 16).encode()).decode()
    assert access_redact(text) == redact(text, ["cafe" * 16]) and ACCESS_KEY not in access_redact(text)
