"""qwen-vl-utils' own ``smart_resize``, loaded from the installed source without importing torch.

Every task's render tests check their image sizes against it (the one copy of this loader).
"""

from __future__ import annotations

import ast
import importlib.util
import math
from pathlib import Path


def upstream_smart_resize():
    """Load qwen-vl-utils' own smart_resize from its source without importing torch/torchvision."""
    spec = importlib.util.find_spec("qwen_vl_utils")  # a hard dependency (pyproject.toml)
    assert spec is not None and spec.submodule_search_locations, "qwen-vl-utils is a dependency: reinstall the package"
    source = Path(next(iter(spec.submodule_search_locations))) / "vision_process.py"
    tree = ast.parse(source.read_text())
    keep = {"round_by_factor", "ceil_by_factor", "floor_by_factor", "smart_resize"}
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in keep]
    body += [n for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)]
    ns: dict = {"math": math, "Optional": object, "Tuple": object, "os": __import__("os")}
    exec(
        compile(
            ast.Module(body=sorted(body, key=lambda n: isinstance(n, ast.FunctionDef)), type_ignores=[]),
            str(source),
            "exec",
        ),
        ns,
    )
    return ns["smart_resize"]
