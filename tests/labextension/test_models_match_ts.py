"""The wire models in Python (``models.py``) and TypeScript (``src/models.ts``) name the same fields."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hyperpod_rl_jupyterlab import models

from .conftest import REPO

TS = (REPO / "labextension" / "src" / "models.ts").read_text()
WIRE = [
    models.RunSummary,
    models.AdapterInfo,
    models.ClusterInfo,
    models.RunsResponse,
    models.LogsResponse,
    models.StopResponse,
    models.TutorialResponse,
    models.ServerStatus,
    models.KernelInfo,
    models.KernelsResponse,
]


def ts_fields(interface: str) -> list[str]:
    match = re.search(rf"export interface {interface} \{{(?P<body>.*?)\n\}}", TS, re.S)
    assert match, f"src/models.ts has no interface {interface}"
    body = re.sub(r"/\*\*.*?\*/", "", match["body"], flags=re.S)
    return re.findall(r"^\s+(\w+)\??:", body, re.M)


@pytest.mark.parametrize("cls", WIRE, ids=lambda c: c.__name__)
def test_typescript_interface_has_the_dataclass_fields(cls):
    assert ts_fields(f"I{cls.__name__}") == [f.name for f in dataclasses.fields(cls)]


def test_every_wire_dataclass_is_checked_and_statuses_agree():
    exported = {name for name in models.__all__ if dataclasses.is_dataclass(getattr(models, name))}
    assert exported == {c.__name__ for c in WIRE}
    ts_statuses = re.search(r"export type RunStatus =(?P<body>[^;]*);", TS)["body"]
    assert re.findall(r"'(\w+)'", ts_statuses) == list(models.RUN_STATUSES)
