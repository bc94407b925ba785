"""Version guardrails: the notebook's Ray and Python against the cluster's, checked before submitting.

A Ray job is submitted over the dashboard's REST API, so a mismatched client rarely fails at
submit time; it fails later and obscurely (a job API field the other side does not know, code
pickled under one Python minor and loaded under another, a runtime env the older Ray rejects).
A major/minor difference is therefore a ``warn`` with the fix, never silence.

- The cluster's Ray version: ``GET /api/version`` (``ray_version``), which Ray's
  ``JobSubmissionClient`` already reads when it connects (``_server_ray_version``).
- The cluster's Python: the ``py3XX`` part of the Ray image tag (``rayproject/ray:2.56.0-py312-gpu``)
  of the RayCluster's head container, when the access object can read the RayCluster
  (``HyperPodDashboard.cluster_image``); else not checked (``skip``).
"""

from __future__ import annotations

import re
import sys
from typing import Any

from hyperpod_rl.checks import Check

__all__ = ["checked_job_client", "cluster_ray_version", "compare_versions", "python_of_image", "version_checks"]

_PY_TAG = re.compile(r"[-_:]py(\d)(\d{1,2})(?:[-_.]|$)")


def python_of_image(image: str) -> str | None:
    """``"3.12"`` for an image tagged ``...-py312...``; None when the tag does not say."""
    tag = image.rsplit("/", 1)[-1].split("@", 1)[0]
    m = _PY_TAG.search(tag)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def _minor(version: str) -> tuple[int, ...]:
    nums = re.findall(r"\d+", version)
    return tuple(int(n) for n in nums[:2])


def compare_versions(*, local_ray: str, cluster_ray: str | None, local_python: str, cluster_python: str | None) -> list[Check]:
    """Two checks, ``Ray client vs cluster`` and ``Python vs cluster image``.

    Args:
        local_ray / local_python: this process's versions (``"2.56.0"``, ``"3.12.3"``).
        cluster_ray / cluster_python: the cluster's (None when unknown: ``skip``).

    Returns:
        ``ok`` when major.minor match, ``warn`` with the fix when they differ.
    """
    checks: list[Check] = []
    if cluster_ray is None:
        checks.append(Check(name="Ray client vs cluster", status="skip", detail=f"notebook Ray {local_ray}; cluster version unknown"))
    elif _minor(cluster_ray) == _minor(local_ray):
        checks.append(Check(name="Ray client vs cluster", status="ok", detail=f"notebook Ray {local_ray}, cluster Ray {cluster_ray}"))
    else:
        checks.append(
            Check(
                name="Ray client vs cluster",
                status="warn",
                detail=f"notebook Ray {local_ray}, cluster Ray {cluster_ray}: major/minor differ",
                fix=f"install ray[default]=={cluster_ray} in this kernel's environment (the hyperpod-rl kernel of docs/studio.md), "
                f"or run the cluster on an image tagged {local_ray}",
            )
        )
    short = ".".join(local_python.split(".")[:2])
    if cluster_python is None:
        checks.append(Check(name="Python vs cluster image", status="skip", detail=f"notebook Python {short}; image does not say"))
    elif _minor(cluster_python) == _minor(local_python):
        checks.append(Check(name="Python vs cluster image", status="ok", detail=f"Python {short} on both sides"))
    else:
        checks.append(
            Check(
                name="Python vs cluster image",
                status="warn",
                detail=f"notebook Python {short}, cluster image Python {cluster_python}",
                fix=f"run the cluster on a Ray image tagged -py{short.replace('.', '')} (e.g. rayproject/ray:<version>-py{short.replace('.', '')}-gpu), "
                f"or use a kernel with Python {cluster_python}",
            )
        )
    return checks


def cluster_ray_version(job_client: Any) -> str | None:
    """The cluster's Ray version from its dashboard (``/api/version``), None when it cannot be read."""
    version = getattr(job_client, "_server_ray_version", None)
    if version:
        return str(version)
    try:
        resp = job_client._do_request("GET", "/api/version")
        return str(resp.json()["ray_version"]) if resp.status_code == 200 else None
    except Exception:  # noqa: BLE001 - a guardrail must never stop a submit; unknown means "skip"
        return None


def version_checks(job_client: Any, *, image: str | None = None) -> list[Check]:
    """Compare this process's Ray and Python with the cluster's.

    Args:
        job_client: a connected ``JobSubmissionClient``.
        image: the cluster's Ray image (for its Python), if known.
    """
    import ray

    return compare_versions(
        local_ray=ray.__version__,
        cluster_ray=cluster_ray_version(job_client),
        local_python=".".join(map(str, sys.version_info[:3])),
        cluster_python=python_of_image(image) if image else None,
    )


def checked_job_client(client: Any) -> tuple[Any, list[Check]]:
    """Resolve ``client`` (see :func:`hyperpod_rl.cluster.access.job_client_of`) and compare versions.

    Returns:
        ``(job_client, checks)``: the ``JobSubmissionClient`` and :func:`version_checks` (with the
        RayCluster's image when the access object can read it).
    """
    from hyperpod_rl.cluster.access import cluster_access, job_client_of

    if isinstance(client, str):
        client = cluster_access(client)
    image = client.cluster_image() if hasattr(client, "cluster_image") else None
    job_client = job_client_of(client)
    return job_client, version_checks(job_client, image=image)
