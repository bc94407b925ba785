"""Shared fixtures: an isolated data dir per session, one real local Ray cluster, tiny data; the
suite's order under pytest-xdist (slow tests first, then the browser tests on one worker)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: A test's docstring line saying why it takes over a minute (``.ci/summarize.py`` fails a test over
#: 60 s without one): ``Slow: <why>``.
SLOW_REASON = re.compile(r"^\s*Slow:\s*(\S.*)$", re.M)
#: Set (``make screenshots``) to copy the browser tests' screenshots into docs/img; otherwise they
#: stay in the session's temporary directory and the checkout is left as it was.
SCREENSHOTS_VAR = "HPRL_UPDATE_SCREENSHOTS"


def _leftovers_module():
    """``.ci/leftovers.py``, the check ``make test`` ends with (one implementation for both)."""
    import sys

    name = "hprl_ci_leftovers"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / ".ci" / "leftovers.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


def pytest_configure(config: pytest.Config) -> None:
    """Tag this session: every process a test starts inherits ``HPRL_RUN_TAG`` (``make test``
    exports one; a bare ``pytest`` gets its own), so what is left can be found at the end.

    Give it a temporary directory of its own (``HPRL_RUN_TMPDIR``, also ``TMPDIR``, inherited by
    every process a test starts; ``make test`` makes one for its whole run) and record the
    checkout's and the temp directories' state, so that what a test or benchmark left there is
    found at the end too (``.ci/leftovers.py``: :func:`changes`)."""
    os.environ.setdefault("HPRL_RUN_TAG", f"pytest-{uuid.uuid4().hex[:12]}")
    _share_the_cores(config)
    if _xdist_worker(config):
        return  # the controller set the tag and the directory before starting it, and checks at the end
    leftovers = _leftovers_module()
    if not os.environ.get(leftovers.TMPDIR_VAR):
        run_tmp = leftovers.make_run_tmp()
        os.environ[leftovers.TMPDIR_VAR] = str(run_tmp)
        config.stash[_OWN_TMP] = run_tmp
    os.environ["TMPDIR"] = os.environ[leftovers.TMPDIR_VAR]
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    _refuse_a_long_tmpdir(config)
    config.stash[_SNAPSHOT] = leftovers.snapshot(REPO)


def _share_the_cores(config: pytest.Config) -> None:
    """Under pytest-xdist, give every process the session starts ``cores // workers`` OpenMP threads
    (``OMP_NUM_THREADS``, unless the environment sets it): torch reads it when a worker imports it, and
    :func:`hyperpod_rl.jobs.default_job_threads` passes it to the Ray jobs the tests submit.

    With torch's default (every core) in both workers and in each worker's training job, ``make test`` ran
    four or more spinning OpenMP thread pools on 2 cores. Hand probe, 2 cores, the reduced quickstart and
    three notebooks on two workers, order alternated: 481 and 447 s with the default, 375 and 398 s with
    one thread each."""
    workers = getattr(config.option, "numprocesses", None)
    if _xdist_worker(config) or not isinstance(workers, int) or workers < 2 or "OMP_NUM_THREADS" in os.environ:
        return  # a worker inherits the controller's; one process keeps torch's default
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))


def _refuse_a_long_tmpdir(config: pytest.Config) -> None:
    """End the session before any test when the run's ``TMPDIR`` leaves no room for Ray's socket paths.

    Reported: ``make test`` with ``TMPDIR=/work/tn`` ran for half an hour, then every cluster test failed or
    timed out, because the local cluster's Ray temp dir under it was too long for a Unix socket path.

    Checked once per run: a session a test starts inside this one (tests of the suite's own machinery, with a
    deliberately deep ``HPRL_RUN_TMPDIR`` and no cluster) inherits ``HPRL_TMPDIR_CHECKED`` and is not judged."""
    from hyperpod_rl.cluster.local import check_tmpdir_room
    from hyperpod_rl.errors import ClusterError

    if os.environ.get(_CHECKED):
        return
    os.environ[_CHECKED] = "1"
    run_tmp = Path(os.environ["TMPDIR"])  # the run's own directory, hprl-t-XXXXXXXX inside the user's TMPDIR
    try:
        if run_tmp.name.startswith(_leftovers_module().RUN_TMP_PREFIX):
            check_tmpdir_room(str(run_tmp.parent), below=run_tmp.name)
        else:
            check_tmpdir_room()
    except ClusterError as err:
        own = config.stash.get(_OWN_TMP, None)
        if own is not None:
            shutil.rmtree(own, ignore_errors=True)
        pytest.exit(f"error: {err}", returncode=4)


_CHECKED = "HPRL_TMPDIR_CHECKED"
_OWN_TMP = pytest.StashKey[Path]()
_SNAPSHOT = pytest.StashKey[dict]()


def _xdist_worker(config: pytest.Config) -> bool:
    """Whether this process is a pytest-xdist worker (``-n``), not the session that started them."""
    return hasattr(config, "workerinput")


def pytest_itemcollected(item: pytest.Item) -> None:
    """A test that uses the session's cluster is marked ``ray``. Under pytest-xdist (``make test``:
    ``-n 2 --dist loadgroup``) the ``ray`` tests are dealt out to both workers like the rest, each
    worker starting its own session cluster (:func:`local_cluster`; every local cluster picks its
    own ports, :func:`hyperpod_rl.cluster.local.head_ports`): one cluster shared by a worker's tests
    left the other worker idle for most of the run (``benchmarks/results/ci_time.json``)."""
    if "local_cluster" in getattr(item, "fixturenames", ()) and item.get_closest_marker("ray") is None:
        item.add_marker(pytest.mark.ray)


def _kind(item: pytest.Item) -> int:
    """``0`` slow, ``1`` browser, ``2`` the rest."""
    if item.get_closest_marker("browser") is not None:
        return 1
    return 0 if item.get_closest_marker("slow") is not None else 2


#: The ``xdist_group`` of the browser tests: one worker runs them back to back.
BROWSER_GROUP = "browser"


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a fixture built once for its module (scope ``module`` or ``package``):
    a served app, a trained run. Such a fixture is built again whenever its module's tests are split,
    by the order or between the workers: the serving module's app (two adapters and a Serve
    deployment, 40-80 s) was built for its two slow tests, then again for the other 42."""
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(defs[-1].scope in ("module", "package") for defs in info.name2fixturedefs.values() if defs)


def _order(items: list[pytest.Item]) -> list[pytest.Item]:
    """Where each test runs (``make test``: ``--dist loadgroup --no-loadscope-reorder``, so the workers
    take the work in this order): the ``slow`` tests (a minute or more each) first, so the two workers
    end close together instead of one finishing a long test alone; then the browser tests, as one
    ``xdist_group`` (:data:`BROWSER_GROUP`) that one worker runs back to back (about 250 s) while the
    other works through the rest. They ran last, one at a time under a lock, until
    ``benchmarks/results/ci_time.json`` showed the cost: the second worker waited for the lock
    (a test of 31 s took 256 s) and the run ended with one worker busy. The rest follows, as
    collected. A module whose tests share a module fixture (:func:`_shares_a_module_fixture`) stays
    whole, in the place of its earliest test, and one worker runs it (``xdist_group`` named after
    the module), so the fixture is built once."""

    def module(item: pytest.Item) -> str:
        return item.nodeid.split("::", 1)[0]

    shared = {module(item) for item in items if _shares_a_module_fixture(item)}
    first: dict[str, int] = {}
    for item in items:
        if _kind(item) == 1:
            item.add_marker(pytest.mark.xdist_group(BROWSER_GROUP))
        elif module(item) in shared:
            item.add_marker(pytest.mark.xdist_group(module(item)))
            first[module(item)] = min(first.get(module(item), 2), _kind(item))
    return sorted(items, key=lambda item: 1 if _kind(item) == 1 else first.get(module(item), _kind(item)))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the tests (:func:`_order`; stable, so each kind keeps its collected order). Every
    test's registered marks and ``Slow:`` reason go into the junit file as properties (``marks``,
    ``slow_reason``), from which ``.ci/summarize.py`` sums the seconds per mark and checks that a
    test over 60 s says why."""
    items[:] = _order(items)
    registered = {line.split(":", 1)[0].strip() for line in config.getini("markers")}
    for item in items:
        item.user_properties.append(("marks", " ".join(sorted({m.name for m in item.iter_markers()} & registered))))
        reason = SLOW_REASON.search(getattr(getattr(item, "function", None), "__doc__", None) or "")
        if reason:
            item.user_properties.append(("slow_reason", reason.group(1)))


@pytest.fixture(autouse=True)
def _one_browser_at_a_time(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Under pytest-xdist, a browser test waits until no other worker runs one: two JupyterLab
    servers with Chromium and a training job each are more than the 2-core CI machine serves in
    their timeouts. ``make test``'s ``--dist loadgroup`` keeps the browser tests on one worker
    already (:data:`BROWSER_GROUP`); the lock keeps them apart under any other ``--dist``. The lock
    file lives in the run's pytest temp root, shared by the workers."""
    if request.node.get_closest_marker("browser") is None or not _xdist_worker(request.config):
        yield
        return
    from filelock import FileLock

    with FileLock(str(tmp_path_factory.getbasetemp().parent / "browser.lock")):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """The seconds of the test's own call go into the junit file (``call_s``): the slow-test policy
    judges those, not the setup of a session fixture (the local cluster's start) that the first test
    to need it happens to pay."""
    yield
    if call.when == "call":
        item.user_properties.append(("call_s", f"{call.duration:.2f}"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session when a process it started is still running after every fixture was torn
    down (a Ray cluster, Serve replica, JupyterLab or Chromium left behind), or when it left the
    checkout or the temp directory changed (a rewritten docs image, a benchmark's temp folder),
    listing them; then remove the session's own temporary directory (kept when a test failed).
    Under pytest-xdist the session that started the workers does this, once they all ended."""
    if _xdist_worker(session.config):
        return
    leftovers = _leftovers_module()
    left = leftovers.wait_for_none(os.environ["HPRL_RUN_TAG"], 30.0)
    lines = []
    if left:
        lines += [f"{len(left)} process(es) started by this test session are still running:", *(f"  {p}" for p in left)]
    before = session.config.stash.get(_SNAPSHOT, None)
    expected = ("docs/img/",) if os.environ.get(SCREENSHOTS_VAR) else ()  # make screenshots refreshes them
    changed = leftovers.changes(before, leftovers.snapshot(REPO), expected=expected, system_tmp=False) if before is not None else []
    if changed:
        lines += [f"this test session left {len(changed)} change(s) in the checkout or the temp directory:", *(f"  {c}" for c in changed)]
    own_tmp = session.config.stash.get(_OWN_TMP, None)
    if own_tmp is not None:
        if exitstatus == 0:
            leftovers.remove_run_tmp(own_tmp)
        else:  # the failed tests' tmp_path folders are in it
            lines.append(f"the session's temporary directory is kept for a look (remove it after): {own_tmp}")
    if lines:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("\n".join(lines), red=bool(left or changed))
        if left or changed:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test session gets its own HYPERPOD_RL_HOME (cluster state file, storage)."""
    home = Path(os.environ.get("HYPERPOD_RL_TEST_HOME") or tmp_path_factory.mktemp("hprl-home"))
    os.environ["HYPERPOD_RL_HOME"] = str(home)
    os.environ.pop("HYPERPOD_RL_STORAGE", None)
    return home


@pytest.fixture(scope="session")
def tiny_setup(tmp_path_factory: pytest.TempPathFactory):
    """A small maze dataset and the tiny base model, built once per session."""
    from hyperpod_rl.quickstart import QuickstartOptions, prepare_base_model, prepare_dataset
    from hyperpod_rl.tasks.maze import read_rows

    storage = tmp_path_factory.mktemp("storage")
    opts = QuickstartOptions.build(train_rows=64, heldout_rows=16, max_turns=3, steps=2, group_size=2, prompts_per_step=2)
    data = prepare_dataset(opts, storage)
    model_dir, revision = prepare_base_model(opts, storage, read_rows(data.train))
    return {"opts": opts, "storage": storage, "data": data, "model_dir": model_dir, "revision": revision}


@pytest.fixture(scope="session")
def local_cluster(_isolated_home: Path):
    """One real local Ray cluster (token auth, 127.0.0.1) for the whole session: under pytest-xdist,
    one per worker that runs a ``ray`` test, each with its own data dir (:func:`_isolated_home`)."""
    from hyperpod_rl.cluster.local import start_local_cluster

    cluster = start_local_cluster()
    yield cluster
    cluster.stop()
