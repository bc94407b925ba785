"""The local cluster's job path imports without the AWS/Kubernetes client libraries.

A GPU machine (or any plain Ray node) runs the embedded local cluster and submits, waits for and
reads jobs through ``hyperpod_rl.jobs`` -> ``hyperpod_rl.cluster.versions`` ->
``hyperpod_rl.cluster.access.job_client_of``. On the H200 machine that path stopped at a missing
``botocore`` (docs/gpu.md): ``access`` imported botocore and kubernetes at module level although only
the HyperPod routes use them. The subprocess makes both unimportable and runs the local-only calls.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent(
    """
    import sys
    for name in ("boto3", "botocore", "kubernetes"):
        sys.modules[name] = None  # import -> ImportError, as on a machine without them
    from hyperpod_rl.cluster import access
    from hyperpod_rl.cluster.versions import checked_job_client  # noqa: F401
    from hyperpod_rl.jobs import follow_run, submit_run, wait_terminal  # noqa: F401

    class Client:  # anything with a job API passes through job_client_of untouched
        pass

    c = Client()
    assert access.job_client_of(c) is c
    assert str(access.parse_address("sagemaker_ray://maze/team-a")) == "sagemaker_ray://maze/team-a"
    try:
        access.eks_token("maze")
    except ImportError as err:  # the HyperPod routes still need the libraries, and say which
        print("needs", err.name)
    else:
        raise AssertionError("eks_token ran without boto3")
    """
)


def test_local_job_path_imports_without_botocore_and_kubernetes() -> None:
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "needs boto3"
