"""Which of SkyRL's vLLM imports an installed vLLM provides (issue 27; kept for the next SkyRL or vLLM move).

    python -m benchmarks.gpu.skyrl_vllm_imports --site PATH_WITH_VLLM [--skyrl PATH_WITH_SKYRL] [--out FILE]

It was written when SkyRL 0.4.0 (which pins ``vllm==0.30.0``) had to run on vLLM 0.25.0, the newest
vLLM for the GPU image's torch 2.11: ``benchmarks/results/skyrl_vllm_imports.json`` is that check, and
its missing weight-transfer names are why the project pins SkyRL 0.3.0 (vLLM 0.23.0) instead.
This script reads every
``from vllm... import ...`` statement of the SkyRL package (``ast``, module level and inside
functions alike) and, in one subprocess whose ``sys.path`` starts with ``--site``, imports each
module and looks each name up, so the answer comes from the vLLM that would run, not from its
version number. It needs no GPU: vLLM's modules import on a CPU machine (those that need CUDA at
import time are reported as failing modules, with their error).

Recorded per import: the SkyRL file and line, the vLLM module, the names, and for each name
``ok`` / ``missing`` (the module imports but lacks it) / the module's import error. Summary: how
many imports, how many missing names, and whether any of them lies on SkyRL's trainer path
(``--trainer-path`` modules, default the weight senders the FSDP workers import at start).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks._record import Recording

#: SkyRL modules the FSDP2 policy worker imports when the trainer starts (skyrl 0.4.0:
#: ``skyrl/backends/skyrl_train/workers/worker.py`` imports the weight-sync senders at line 510).
TRAINER_PATH = ("skyrl/backends/skyrl_train/weight_sync/weight_senders.py", "skyrl/backends/skyrl_train/workers/worker.py")

_PROBE = r"""
import importlib, json, sys
out = {}
for module, names in json.loads(sys.stdin.read()):
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as err:
        # a vllm module this vLLM lacks is an API it does not have; another package missing is this machine's
        gone = (err.name or "").split(".")[0] == "vllm"
        out[module] = {"error": "missing" if gone else f"ModuleNotFoundError: {err}"[:300]}
        continue
    except BaseException as err:  # a module needing CUDA at import time
        out[module] = {"error": f"{type(err).__name__}: {err}"[:300]}
        continue
    found = {}
    for name in names:
        try:
            getattr(mod, name)  # a package's lazy __getattr__ may import (and fail) here
            found[name] = "ok"
            continue
        except AttributeError:
            pass
        except BaseException as err:
            found[name] = f"{type(err).__name__}: {err}"[:300]
            continue
        try:
            importlib.import_module(f"{module}.{name}")
            found[name] = "ok"
        except ModuleNotFoundError as err:
            found[name] = "missing" if err.name == f"{module}.{name}" else f"ModuleNotFoundError: {err}"[:300]
        except BaseException as err:
            found[name] = f"{type(err).__name__}: {err}"[:300]
    out[module] = {"names": found}
print(json.dumps(out))
"""


def vllm_imports(skyrl_root: Path) -> list[dict[str, Any]]:
    """Every ``from vllm... import a, b`` under ``skyrl_root`` (the folder holding ``skyrl/``), in file order.

    Returns:
        Dicts ``{"file": path relative to skyrl_root, "line": int, "module": str, "names": [str]}``.
    """
    found = []
    for path in sorted((skyrl_root / "skyrl").rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.split(".")[0] == "vllm":
                names = [a.name for a in node.names if a.name != "*"]
                found.append({"file": str(path.relative_to(skyrl_root)), "line": node.lineno, "module": node.module, "names": names})
    return sorted(found, key=lambda r: (r["file"], r["line"]))


def probe(site: list[Path], imports: list[dict[str, Any]], timeout_s: float = 900.0) -> dict[str, Any]:
    """Import each module of ``imports`` with the ``site`` folders first on ``sys.path``; per module its names' state or its error."""
    modules: dict[str, set[str]] = {}
    for imp in imports:
        modules.setdefault(imp["module"], set()).update(imp["names"])
    payload = json.dumps([[m, sorted(n)] for m, n in sorted(modules.items())])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, site), os.environ.get("PYTHONPATH", "")]), "VLLM_NO_USAGE_STATS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], input=payload, capture_output=True, text=True, env=env, timeout=timeout_s, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the probe failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def vllm_version(site: Path) -> str | None:
    """The version of the vLLM distribution under ``site`` (its ``vllm-*.dist-info``), or None."""
    for dist in sorted(site.glob("vllm-*.dist-info")):
        return dist.name.removeprefix("vllm-").removesuffix(".dist-info")
    return None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--site",
        type=Path,
        nargs="+",
        required=True,
        help="folders put first on sys.path: the vllm to check against, then its dependencies",
    )
    p.add_argument("--skyrl", type=Path, default=None, help="a folder holding the skyrl package (default: the installed one's parent)")
    p.add_argument("--trainer-path", nargs="*", default=list(TRAINER_PATH), help="SkyRL files on the trainer's start path")
    p.add_argument("--out", type=Path, default=None, help="result file (default benchmarks/results/skyrl_vllm_imports.json)")
    args = p.parse_args(argv)
    if args.skyrl is None:
        import skyrl

        args.skyrl = Path(skyrl.__file__).resolve().parents[1]
    with Recording(
        args.out.stem if args.out else "skyrl_vllm_imports", params={k: str(v) for k, v in vars(args).items()}, path=args.out
    ) as rec:
        imports = vllm_imports(args.skyrl)
        states = probe(args.site, imports)
        rows, missing = [], []
        for imp in imports:
            state = states.get(imp["module"], {})
            names = {n: (state["names"].get(n, "missing") if "names" in state else state.get("error", "?")) for n in imp["names"]}
            rows.append({**imp, "state": names})
            missing += [
                {"file": imp["file"], "line": imp["line"], "module": imp["module"], "name": n, "state": s}
                for n, s in names.items()
                if s != "ok"
            ]
        on_path = [m for m in missing if m["file"] in set(args.trainer_path)]
        rec.results = {
            "vllm": next((v for v in map(vllm_version, args.site) if v), None),
            "skyrl_root": str(args.skyrl),
            "imports": len(imports),
            "modules": len(states),
            "not_ok": len(missing),
            "not_ok_on_trainer_path": on_path,
            "not_ok_all": missing,
            "rows": rows,
        }
        for m in on_path:
            print(f"trainer path: {m['file']}:{m['line']} from {m['module']} import {m['name']}: {m['state']}")
        print(
            f"{len(imports)} vllm imports in skyrl, {len(missing)} names not provided by vLLM {rec.results['vllm']} ({len(on_path)} on the trainer path)"
        )
    return rec.results


if __name__ == "__main__":
    main()
