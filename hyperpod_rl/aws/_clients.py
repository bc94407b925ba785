"""boto3 sessions and clients with short timeouts, and AWS error text that never leaks secrets."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["aws_client", "error_code", "session_of"]

# Short connect/read timeouts and two attempts: a notebook cell or `doctor` must answer in
# seconds when the network or an endpoint is missing, never hang on botocore's defaults.
_CONFIG: dict[str, Any] = {"connect_timeout": 5, "read_timeout": 20, "retries": {"max_attempts": 2, "mode": "standard"}}


def session_of(session: Any = None, region: str | None = None) -> Any:
    """``session``, or a new ``boto3.Session`` (default credential chain) in ``region``.

    ``region`` defaults to ``AWS_REGION`` as well as botocore's own ``AWS_DEFAULT_REGION`` and
    profile setting: botocore reads only the latter two, while SageMaker sets ``AWS_REGION``.
    """
    import boto3

    return session or boto3.Session(region_name=region or os.environ.get("AWS_REGION") or None)


def aws_client(service: str, *, session: Any = None, region: str | None = None) -> Any:
    """A boto3 client for ``service`` with short timeouts, in ``region`` (default: the session's).

    Raises:
        ConfigError: no region is configured (set ``AWS_REGION`` or pass ``region=``).
    """
    from botocore.config import Config

    from hyperpod_rl.errors import ConfigError

    session = session_of(session, region)
    region = region or session.region_name
    if not region:
        raise ConfigError("no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), or pass --region (region= in Python)")
    return session.client(service, region_name=region, config=Config(**_CONFIG))


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore ``ClientError`` (``""`` for anything else)."""
    response = getattr(exc, "response", None) or {}
    return str((response.get("Error") or {}).get("Code", ""))
