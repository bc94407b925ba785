"""Grafana and Amazon Managed Prometheus endpoints from the HyperPod observability add-on.

The EKS add-on ``amazon-sagemaker-hyperpod-observability`` keeps its settings in the add-on's
``configurationValues`` (a JSON document, EKS ``DescribeAddon``). Its schema is not published in
the API reference, so this module does not depend on key names: it looks through every string
in the document for the two well-known endpoint shapes,

- an Amazon Managed Grafana workspace: ``https://g-<id>.grafana-workspace.<region>.amazonaws.com``
  (or a bare workspace id ``g-<id>``);
- an Amazon Managed Service for Prometheus workspace:
  ``https://aps-workspaces.<region>.amazonaws.com/workspaces/ws-<id>/`` (or the workspace ARN
  ``arn:aws:aps:<region>:<acct>:workspace/ws-<id>``).

Absent add-on -> ``None``. The endpoints feed :class:`hyperpod_rl.metrics.hardware.AMPSource` /
``GrafanaSource`` and the Grafana link the panels show.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hyperpod_rl.aws._clients import aws_client, error_code
from hyperpod_rl.errors import ClusterError

__all__ = ["ADDON_NAME", "Observability", "observability_endpoints", "parse_addon_configuration"]

ADDON_NAME = "amazon-sagemaker-hyperpod-observability"
_GRAFANA_URL = re.compile(r"https://g-[a-z0-9]+\.grafana-workspace\.[a-z0-9-]+\.amazonaws\.com[^\s\"']*")
_GRAFANA_ID = re.compile(r"^g-[a-z0-9]{6,}$")
_AMP_URL = re.compile(r"https://aps-workspaces\.([a-z0-9-]+)\.amazonaws\.com/workspaces/(ws-[a-z0-9-]+)")
_AMP_ARN = re.compile(r"arn:aws[a-z-]*:aps:([a-z0-9-]+):\d{12}:workspace/(ws-[a-z0-9-]+)")


@dataclass(frozen=True)
class Observability:
    """What the observability add-on exposes.

    Attributes:
        status: the add-on's ``status`` (``ACTIVE``, ``CREATING``, ``DEGRADED``...).
        grafana_url: ``https://g-<id>.grafana-workspace.<region>.amazonaws.com`` or ``""``.
        amp_workspace_url: ``https://aps-workspaces.<region>.amazonaws.com/workspaces/ws-<id>`` or ``""``
            (the Prometheus query API is under ``/api/v1/``, signed with SigV4 for ``aps``).
        amp_region: region of the AMP workspace (``""`` when unknown).
    """

    status: str
    grafana_url: str = ""
    amp_workspace_url: str = ""
    amp_region: str = ""


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
        try:
            inner = json.loads(value)
        except ValueError:
            return
        if not isinstance(inner, str):
            yield from _strings(inner)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def parse_addon_configuration(configuration: str | dict[str, Any], *, region: str, status: str = "ACTIVE") -> Observability:
    """Endpoints found in the add-on's ``configurationValues`` (JSON text or parsed).

    Args:
        configuration: ``addon.configurationValues``.
        region: the cluster's region, used for a bare Grafana workspace id.
    """
    grafana = amp = amp_region = ""
    for text in _strings(configuration):
        if not grafana:
            if m := _GRAFANA_URL.search(text):
                grafana = m.group(0).rstrip("/")
            elif _GRAFANA_ID.fullmatch(text):
                grafana = f"https://{text}.grafana-workspace.{region}.amazonaws.com"
        if not amp:
            if m := _AMP_URL.search(text) or _AMP_ARN.search(text):
                amp_region, ws = m.group(1), m.group(2)
                amp = f"https://aps-workspaces.{amp_region}.amazonaws.com/workspaces/{ws}"
    return Observability(status=status, grafana_url=grafana, amp_workspace_url=amp, amp_region=amp_region)


def observability_endpoints(eks_cluster: str, *, eks: Any = None, session: Any = None, region: str | None = None) -> Observability | None:
    """The observability add-on's endpoints on an EKS cluster, or None when it is not installed.

    Raises:
        ClusterError: EKS refused ``DescribeAddon`` (the message names the permission).
    """
    from botocore.exceptions import BotoCoreError, ClientError

    eks = eks or aws_client("eks", session=session, region=region)
    try:
        addon = eks.describe_addon(clusterName=eks_cluster, addonName=ADDON_NAME)["addon"]
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFoundException":
            return None
        raise ClusterError(
            f"cannot read the observability add-on of {eks_cluster}: {error_code(exc)}; the role needs eks:DescribeAddon"
        ) from None
    except BotoCoreError as exc:
        raise ClusterError(f"cannot reach EKS: {type(exc).__name__}") from None
    return parse_addon_configuration(
        addon.get("configurationValues") or "{}", region=eks.meta.region_name, status=str(addon.get("status", ""))
    )
