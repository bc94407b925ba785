"""Identifiers are matched whole (issue 30 item 3): ``re.match`` with a ``$`` anchor accepts a
trailing newline (``"abc\\n"``), so every identifier pattern is applied with ``fullmatch``, and
each kind of identifier refuses ``"<valid>\\n"`` here. Predictable ``/tmp`` paths are gone: the
local cluster's start lock and Ray temp dirs live in this user's private 0700 directory."""

from __future__ import annotations

import os
import stat

import pytest

from hyperpod_rl.aws.observability import parse_addon_configuration
from hyperpod_rl.cluster import local
from hyperpod_rl.cluster.access import parse_address
from hyperpod_rl.cluster.rules import dns1035_problems, dns1123_label_problems, label_key_problems, label_value_problems
from hyperpod_rl.config.validate import is_hub_id
from hyperpod_rl.errors import ClusterError, ConfigError, ServeError, TaskError
from hyperpod_rl.jobs import _number
from hyperpod_rl.runs import check_run_id
from hyperpod_rl.serve.cluster import ClusterServeSpec
from hyperpod_rl.serve.local import check_adapters
from hyperpod_rl.serve.preflight import adapter_name_problem
from hyperpod_rl.tasks import check_task, get_task


def test_run_ids_are_matched_whole() -> None:
    assert check_run_id("abc") == "abc"
    for bad in ("abc\n", "abc\r\n", "\nabc", "abc\nrm"):
        with pytest.raises(ConfigError, match="run id"):
            check_run_id(bad)


def test_a_run_config_refuses_a_run_id_with_a_newline(tiny_setup) -> None:
    from hyperpod_rl.quickstart import make_run_config

    good = make_run_config(tiny_setup["opts"], run_id="abc", model_path=tiny_setup["model_dir"], revision="r", data=tiny_setup["data"])
    data = good.model_dump(mode="json")
    data["run_id"] = "abc\n"
    with pytest.raises(ConfigError, match="run_id"):
        type(good).build(data)


def test_submission_ids_are_matched_whole() -> None:
    assert _number("hprl-abc-3", "abc") == 3
    assert _number("hprl-abc-3\n", "abc") is None
    assert _number("hprl-abc-\u00b2", "abc") is None  # a digit to str.isdigit, not to int()


@pytest.mark.parametrize("check", [dns1035_problems, dns1123_label_problems, label_value_problems, label_key_problems])
def test_kubernetes_names_are_matched_whole(check) -> None:
    assert check("team-a") == []
    assert check("team-a\n") != []


def test_cluster_addresses_refuse_names_with_a_newline() -> None:
    assert parse_address("sagemaker_ray://maze/team-a").namespace == "team-a"
    for bad in ("sagemaker_ray://maze\n/team-a", "sagemaker_ray://maze/team-a\nx"):
        with pytest.raises(ConfigError, match="bad cluster address"):
            parse_address(bad)


def test_adapter_names_are_matched_whole(tmp_path) -> None:
    assert adapter_name_problem("maze-v2") is None
    for bad in ("maze\n", "ma ze", "a.b", "", "a=b"):
        assert adapter_name_problem(bad), bad
    with pytest.raises(ConfigError, match=r"adapter name 'maze\\n'"):
        ClusterServeSpec.build({"base_model": "Qwen/Qwen3-VL-8B-Instruct", "base_model_revision": "r", "adapters": {"maze\n": "/fsx/a"}})
    with pytest.raises(ServeError, match=r"adapter name 'maze\\n'"):
        check_adapters(tmp_path, {"maze\n": tmp_path})


def test_task_names_hub_ids_and_grafana_ids_are_matched_whole() -> None:
    class Renamed:
        def __init__(self, task, name):
            self._task, self.name = task, name

        def __getattr__(self, item):
            return getattr(self._task, item)

    maze = get_task("maze")
    assert check_task(Renamed(maze, "maze2")).name == "maze2"
    with pytest.raises(TaskError, match="name="):
        check_task(Renamed(maze, "maze\n"))
    assert is_hub_id("Qwen/Qwen3-VL-8B-Instruct") and not is_hub_id("Qwen/Qwen3-VL-8B-Instruct\n")
    ok = parse_addon_configuration({"grafana": "g-abc123def"}, region="us-east-1")
    assert ok.grafana_url == "https://g-abc123def.grafana-workspace.us-east-1.amazonaws.com"
    assert not parse_addon_configuration({"grafana": "g-abc123def\n"}, region="us-east-1").grafana_url


def test_the_private_tmp_dir_is_this_users_and_0700(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    root = local.private_tmp_dir()
    info = root.lstat()
    assert root.parent == tmp_path and stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()
    assert local.start_lock_path().parent == root
    root.chmod(0o777)  # widened by someone: narrowed again
    assert stat.S_IMODE(local.private_tmp_dir().lstat().st_mode) == 0o700


def test_a_planted_symlink_at_the_private_tmp_dir_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir()
    (tmp_path / f"hprl-{os.getuid()}").symlink_to(elsewhere)
    with pytest.raises(ClusterError, match="not a directory owned by you"):
        local.private_tmp_dir()
    assert list(elsewhere.iterdir()) == []
