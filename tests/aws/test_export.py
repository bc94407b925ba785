"""``export_adapter``: upload with checksums (moto's S3 checks ChecksumSHA256), provenance record, no silent bucket."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from hyperpod_rl.aws.s3 import upload_directory
from hyperpod_rl.errors import ConfigError, HyperpodRLError
from hyperpod_rl.serve.export import export_adapter

ACCT = "123456789012"  # moto's account


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    adapter = tmp_path / "runs" / "maze-run" / "adapter"
    adapter.mkdir(parents=True)
    (adapter / "adapter_model.safetensors").write_bytes(bytes(range(256)) * 4096)  # 1 MiB
    (adapter / "adapter_config.json").write_text(json.dumps({"r": 8, "peft_type": "LORA"}))
    (adapter / "provenance.json").write_text(json.dumps({"run_id": "maze-run", "base_model_id": "tiny"}))
    return adapter.parent


@pytest.fixture
def aws() -> Any:
    with mock_aws():
        yield boto3.client("s3", region_name="us-west-2"), boto3.client("sts", region_name="us-west-2")


def test_export_uploads_with_checksums_and_records_the_uri(run_dir: Path, aws: Any) -> None:
    s3, sts = aws
    s3.create_bucket(Bucket="team-bucket", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    result = export_adapter(run_dir, "s3://team-bucket/adapters/maze-run", s3=s3, sts=sts)
    assert result.uri == "s3://team-bucket/adapters/maze-run" and result.lora_root == "s3://team-bucket/adapters"
    weights = (run_dir / "adapter" / "adapter_model.safetensors").read_bytes()
    assert result.files["adapter_model.safetensors"] == hashlib.sha256(weights).hexdigest()
    assert set(result.files) == {"adapter_model.safetensors", "adapter_config.json", "provenance.json"}
    got = s3.get_object(Bucket="team-bucket", Key="adapters/maze-run/adapter_model.safetensors", ChecksumMode="ENABLED")
    assert got["Body"].read() == weights and got["ChecksumSHA256"]
    record = json.loads((run_dir / "adapter" / "provenance.json").read_text())
    assert record["base_model_id"] == "tiny"  # the rest of the provenance is kept
    (entry,) = record["exports"]
    assert entry["uri"] == result.uri and entry["files"] == result.files and entry["bytes"] == result.bytes


def test_no_destination_and_no_permission_to_use_the_default_bucket(run_dir: Path, aws: Any) -> None:
    s3, sts = aws
    with pytest.raises(ConfigError, match="no s3_uri: pass s3_uri=.*allow_default_bucket=True"):
        export_adapter(run_dir, s3=s3, sts=sts)
    with pytest.raises(
        ConfigError, match=f"default bucket sagemaker-us-west-2-{ACCT} does not exist and hyperpod-rl does not create buckets"
    ):
        export_adapter(run_dir, allow_default_bucket=True, s3=s3, sts=sts)
    assert s3.list_buckets()["Buckets"] == []  # nothing created
    assert "exports" not in json.loads((run_dir / "adapter" / "provenance.json").read_text())


def test_default_bucket_when_allowed_and_present(run_dir: Path, aws: Any) -> None:
    s3, sts = aws
    s3.create_bucket(Bucket=f"sagemaker-us-west-2-{ACCT}", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    result = export_adapter(run_dir, allow_default_bucket=True, s3=s3, sts=sts)
    assert result.uri == f"s3://sagemaker-us-west-2-{ACCT}/hyperpod-rl/adapters/maze-run"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=f"sagemaker-us-west-2-{ACCT}")["Contents"]]
    assert sorted(keys) == sorted(f"hyperpod-rl/adapters/maze-run/{n}" for n in result.files)


def test_bad_inputs(run_dir: Path, tmp_path: Path, aws: Any) -> None:
    s3, sts = aws
    with pytest.raises(ConfigError, match="names no prefix"):
        export_adapter(run_dir, "s3://team-bucket", s3=s3, sts=sts)
    with pytest.raises(ConfigError, match="bad S3 URI"):
        export_adapter(run_dir, "team-bucket/x", s3=s3, sts=sts)
    with pytest.raises(ConfigError, match="no finished adapter"):
        export_adapter(tmp_path / "runs" / "other", "s3://team-bucket/a", s3=s3, sts=sts)


def test_access_denied_and_checksum_mismatch_are_errors(run_dir: Path) -> None:
    s3 = boto3.client("s3", region_name="us-west-2", aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="x")
    with Stubber(s3) as stub:
        stub.add_client_error("put_object", "AccessDenied", "Access Denied", 403)
        with pytest.raises(HyperpodRLError, match="uploading .* failed: AccessDenied"):
            upload_directory(run_dir / "adapter", "s3://b/p", s3=s3)
    with Stubber(s3) as stub:
        stub.add_response("put_object", {"ETag": '"x"'})
        stub.add_response("head_object", {"ChecksumSHA256": "AAAA"})
        with pytest.raises(HyperpodRLError, match="S3 reports SHA-256 AAAA"):
            upload_directory(run_dir / "adapter", "s3://b/p", s3=s3)


def test_cli_serve_export(run_dir: Path, aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from hyperpod_rl.cli import app

    s3, _sts = aws
    s3.create_bucket(Bucket="team-bucket", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    monkeypatch.setenv("HYPERPOD_RL_STORAGE", str(run_dir.parents[1]))
    refused = CliRunner().invoke(app, ["serve", "export", "maze-run"])
    assert refused.exit_code == 2 and "allow_default_bucket" in refused.output
    done = CliRunner().invoke(app, ["serve", "export", "maze-run", "--s3-uri", "s3://team-bucket/adapters/maze-run"])
    assert done.exit_code == 0, done.output
    assert "to s3://team-bucket/adapters/maze-run" in done.output and "dynamic_lora_loading_path: s3://team-bucket/adapters" in done.output
