"""Import-linter contracts (.importlinter): layers point down, tasks are equals, the trainer stays lean; no import cycles."""

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Strongly connected components of the module import graph (every import, including those under
# TYPE_CHECKING and inside functions), ignoring a module's edges to and from its own packages
# (a package's __init__ re-exports its modules). Run in a fresh interpreter on this checkout.
_CYCLES = """
import grimp
g = grimp.build_graph("hyperpod_rl", include_external_packages=False, cache_dir=None)
mods = sorted(g.modules)
def related(a, b):
    return a.startswith(b + ".") or b.startswith(a + ".")
adj = {m: [i for i in sorted(g.find_modules_directly_imported_by(m)) if i in g.modules and not related(m, i)] for m in mods}
index, low, stack, on, cycles = {}, {}, [], set(), []
def visit(v):
    index[v] = low[v] = len(index); stack.append(v); on.add(v)
    for w in adj[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            cycles.append(sorted(comp))
import sys
sys.setrecursionlimit(10000)
for m in mods:
    if m not in index:
        visit(m)
print(len(mods), cycles)
"""


def test_import_contracts_hold():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "import-linter is a dev dependency: pip install -e '.[dev]'"
    proc = subprocess.run([exe, "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Contracts: 6 kept, 0 broken" in proc.stdout


def test_no_import_cycles():
    proc = subprocess.run(
        [sys.executable, "-c", _CYCLES], cwd=REPO, capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(REPO), "PATH": ""}
    )
    assert proc.returncode == 0, proc.stderr
    count, _, cycles = proc.stdout.strip().partition(" ")
    assert int(count) > 150  # the whole package was read (167 modules when this was written)
    assert cycles == "[]", f"import cycles (module groups that import each other): {cycles}"
