"""GPU-TEST-ONLY SHIM (benchmarks/gpu/skyrl_e2e.py --shim): SkyRL 0.4.0 on vLLM 0.25.0. Not part of the package.

SkyRL 0.4.0 is pinned to vLLM 0.30.0; the H200 test machine can only run vLLM 0.25.0 (its torch).
SkyRL imports ``vllm.entrypoints.launchers.cli_args.FrontendArgs``
(``skyrl/backends/skyrl_train/inference_servers/utils.py:163`` in ``build_vllm_cli_args``, also
``vllm_server_actor.py:754`` and ``render_server.py:79``); vLLM 0.25 has that class in
``vllm/entrypoints/openai/cli_args.py:224`` and no ``vllm.entrypoints.launchers`` package. This
module, put first on ``PYTHONPATH`` of the local Ray cluster (so every Ray worker imports it at
start-up), makes ``vllm.entrypoints.launchers`` an empty package and ``...launchers.cli_args`` a copy
of ``vllm.entrypoints.openai.cli_args``'s names. Nothing is imported until SkyRL asks for it.
It does not touch SkyRL or vLLM files. The production image (vLLM 0.30) needs none of this.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

_PACKAGE = "vllm.entrypoints.launchers"
_ALIASES = {f"{_PACKAGE}.cli_args": "vllm.entrypoints.openai.cli_args"}


class _VllmLaunchersAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name == _PACKAGE or name in _ALIASES:
            if name == _PACKAGE and importlib.machinery.PathFinder.find_spec(name, path) is not None:  # type: ignore[arg-type]
                return None  # a vLLM that has the package (0.26+): leave it alone
            return importlib.machinery.ModuleSpec(name, self, is_package=name == _PACKAGE)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__name__ == _PACKAGE:
            module.__path__ = []  # type: ignore[attr-defined]
            return
        source = importlib.import_module(_ALIASES[module.__name__])
        module.__dict__.update({k: v for k, v in vars(source).items() if not k.startswith("__")})
        print(f"[skyrl-shim] {module.__name__} -> {source.__name__} (benchmarks/gpu/skyrl_shims)", file=sys.stderr, flush=True)


sys.meta_path.append(_VllmLaunchersAlias())
