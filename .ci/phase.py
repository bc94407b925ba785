"""Run one phase of ``make test`` and record how long it took.

Usage: ``python .ci/phase.py RECORD NAME -- COMMAND...`` runs COMMAND, appends one JSON line
``{"phase": NAME, "seconds": S, "rc": RC}`` to RECORD and exits with COMMAND's status.
``python .ci/phase.py RECORD --start`` writes the run's first line instead:
``{"start": EPOCH_S, "load_avg": [1, 5, 15 min]}`` (the load average when the run began).

Standard library only: it times the install of the virtual environment too, with the machine's
Python 3.12. ``.ci/summarize.py`` prints the phases, ``benchmarks/ci_time.py`` records them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def _append(record: Path, line: dict[str, object]) -> None:
    record.parent.mkdir(parents=True, exist_ok=True)
    with record.open("a") as fh:
        fh.write(json.dumps(line) + "\n")


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[1] == "--start":
        _append(Path(argv[0]), {"start": round(time.time(), 1), "load_avg": [round(x, 2) for x in os.getloadavg()]})
        return 0
    if len(argv) < 4 or argv[2] != "--":
        print("usage: phase.py RECORD NAME -- COMMAND... | phase.py RECORD --start", file=sys.stderr)
        return 2
    record, name, command = Path(argv[0]), argv[1], argv[3:]
    t0 = time.monotonic()
    try:
        rc = subprocess.call(command)
    except KeyboardInterrupt:
        rc = 130
    _append(record, {"phase": name, "seconds": round(time.monotonic() - t0, 1), "rc": rc})
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
