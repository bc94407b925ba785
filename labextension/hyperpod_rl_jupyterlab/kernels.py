"""Which registered Jupyter kernels can import ``hyperpod_rl``, and which one the extension uses.

In SageMaker Studio the Jupyter server runs from ``/opt/conda`` and its default kernel
("Python 3 (ipykernel)") has no ``hyperpod_rl``; the library lives in its own environment,
registered by ``container/studio/on-start.sh`` as the kernel ``hyperpod-rl``. The launcher card,
Open metrics and the snippet dialogs run code only in a kernel this module found able to import
the library: each Python kernelspec's interpreter is asked, in a subprocess, whether
``importlib.util.find_spec("hyperpod_rl")`` finds it (no import, so no torch or Ray is loaded).

The answer per kernelspec is cached while its ``kernel.json`` and interpreter are unchanged; a
"no" is asked again after :data:`NEGATIVE_TTL_S` seconds (the library may have been installed
since, e.g. by the lifecycle script's background step).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .models import KernelInfo, KernelsResponse

__all__ = ["DEFAULT_KERNEL", "KernelProbe", "choose_kernel"]

#: The kernel name ``container/studio/on-start.sh`` registers (``HPRL_KERNEL_NAME``).
DEFAULT_KERNEL = "hyperpod-rl"
#: Seconds a "cannot import hyperpod_rl" answer is trusted before asking again.
NEGATIVE_TTL_S = 30.0
#: Seconds one interpreter may take to answer (a cold, loaded machine can be slow).
PROBE_TIMEOUT_S = 30.0
_PROBE = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('hyperpod_rl') else 3)"


@dataclass
class _Cached:
    key: tuple[Any, ...]
    ok: bool
    detail: str
    at: float


def _interpreter(name: str, spec: dict[str, Any]) -> str | None:
    """The kernel's Python executable (absolute), or ``None`` when it is not a Python kernel."""
    argv = list(spec.get("argv") or [])
    if (spec.get("language") or "").lower() != "python" or not argv:
        return None
    exe = argv[0]
    if exe in ("python", "python3") and name == "python3":
        return sys.executable  # jupyter_client runs the native kernel with the server's own Python
    if not os.path.isabs(exe):
        exe = shutil.which(exe) or exe
    return exe


def _mtime(path: str | None) -> float:
    try:
        return os.stat(path).st_mtime if path else 0.0
    except OSError:
        return 0.0


class KernelProbe:
    """Asks each Python kernelspec's interpreter whether it can import ``hyperpod_rl`` (cached)."""

    def __init__(self, *, timeout_s: float = PROBE_TIMEOUT_S, negative_ttl_s: float = NEGATIVE_TTL_S) -> None:
        self.timeout_s = timeout_s
        self.negative_ttl_s = negative_ttl_s
        self._cache: dict[str, _Cached] = {}

    async def _ask(self, exe: str, env: dict[str, str]) -> tuple[bool, str]:
        try:
            proc = await asyncio.create_subprocess_exec(
                exe,
                "-c",
                _PROBE,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, **env},
                cwd="/",  # not the server's folder: a hyperpod_rl/ directory there is no installed library
            )
        except OSError as err:
            return False, f"its interpreter {exe} cannot be started ({err.strerror or err})"
        try:
            _, err_out = await asyncio.wait_for(proc.communicate(), self.timeout_s)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return False, f"its interpreter {exe} did not answer within {self.timeout_s:.0f} s"
        if proc.returncode == 0:
            return True, f"{exe} imports hyperpod_rl"
        if proc.returncode == 3:
            return False, f"{exe} has no hyperpod_rl"
        tail = err_out.decode(errors="replace").strip().splitlines()[-1:] or [""]
        return False, f"{exe} failed ({proc.returncode}): {tail[0][:200]}"

    async def kernel(self, name: str, resource_dir: str, spec: dict[str, Any]) -> KernelInfo:
        """One kernelspec with whether it can import ``hyperpod_rl``."""
        exe = _interpreter(name, spec)
        display = str(spec.get("display_name") or name)
        if exe is None:
            return KernelInfo(name=name, display_name=display, python=None, has_hyperpod_rl=False, detail="not a Python kernel")
        env = {str(k): str(v) for k, v in (spec.get("env") or {}).items()}
        key = (exe, tuple(sorted(env.items())), _mtime(exe), _mtime(str(Path(resource_dir) / "kernel.json")))
        hit = self._cache.get(name)
        fresh = hit is not None and hit.key == key and (hit.ok or time.monotonic() - hit.at < self.negative_ttl_s)
        if not fresh:
            ok, detail = await self._ask(exe, env)
            hit = _Cached(key, ok, detail, time.monotonic())
            self._cache[name] = hit
        assert hit is not None
        return KernelInfo(name=name, display_name=display, python=exe, has_hyperpod_rl=hit.ok, detail=hit.detail)

    async def kernels(self, specs: dict[str, Any], preferred: str = "") -> KernelsResponse:
        """Every kernelspec (``KernelSpecManager.get_all_specs()``'s shape:
        ``{name: {"resource_dir": str, "spec": {...}}}``) and the one to use (see :func:`choose_kernel`)."""
        names = sorted(specs)
        infos = await asyncio.gather(
            *(self.kernel(n, str(specs[n].get("resource_dir") or ""), dict(specs[n].get("spec") or {})) for n in names)
        )
        chosen, message = choose_kernel(list(infos), preferred)
        return KernelsResponse(kernels=list(infos), chosen=chosen, message=message)


def choose_kernel(kernels: list[KernelInfo], preferred: str = "") -> tuple[str | None, str]:
    """The kernel to run hyperpod-rl code in, and one sentence saying why (or what to fix).

    Rule: ``preferred`` (the "Kernel" setting, which the lifecycle script sets) when it can
    import ``hyperpod_rl``; else :data:`DEFAULT_KERNEL` when it can; else the first kernel (by
    name) that can. ``None`` when none can: the sentence says how to register one.
    """
    able = [k for k in kernels if k.has_hyperpod_rl]
    by_name = {k.name: k for k in kernels}
    fix = (
        "run the lifecycle script container/studio/on-start.sh (it registers the kernel 'hyperpod-rl'), "
        "or register an environment that has hyperpod-rl: <venv>/bin/python -m ipykernel install --user --name hyperpod-rl"
    )
    if preferred:
        pick = by_name.get(preferred)
        if pick is not None and pick.has_hyperpod_rl:
            return pick.name, f"kernel {pick.name!r} (the Kernel setting) imports hyperpod_rl"
        why = f"the kernel {preferred!r} named in Settings > Hyperpod RL > Kernel " + (
            f"cannot import hyperpod_rl ({pick.detail})" if pick is not None else "is not registered"
        )
        if not able:
            return None, f"{why}, and no other kernel can: {fix}"
        other = by_name.get(DEFAULT_KERNEL) if DEFAULT_KERNEL in by_name and by_name[DEFAULT_KERNEL].has_hyperpod_rl else able[0]
        return other.name, f"{why}; using {other.name!r}, which can"
    if DEFAULT_KERNEL in by_name and by_name[DEFAULT_KERNEL].has_hyperpod_rl:
        return DEFAULT_KERNEL, f"kernel {DEFAULT_KERNEL!r} imports hyperpod_rl"
    if able:
        return able[0].name, f"kernel {able[0].name!r} imports hyperpod_rl"
    return None, f"no registered Jupyter kernel can import hyperpod_rl: {fix}"
