"""The browser the browser tests drive: Debian Chromium through Playwright, headless.

Needs Debian ``chromium`` at /usr/bin/chromium (``apt-get install -y chromium``, ``make chromium``)
and the ``playwright`` Python package; Playwright's own browsers are never downloaded
(``PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1``). Flags from docs/references.md §4. Also the JupyterLab
server the browser tests open (:func:`jupyterlab`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

from hyperpod_rl.cluster.local import find_free_port

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
#: Where the browser tests save their screenshots (the run's results, ignored by git).
SHOTS = REPO / ".test-results" / "screenshots"
DOCS_IMG = REPO / "docs" / "img"


def publish_screenshots(names: dict[str, str]) -> list[Path]:
    """Copy a passing browser test's screenshots into docs/img (the docs show them), only when
    ``HPRL_UPDATE_SCREENSHOTS`` is set (``make screenshots``): a plain test run leaves the
    committed images as they are (issue 44).

    Args:
        names: screenshot file in :data:`SHOTS` -> its file name in docs/img.

    Returns:
        The docs/img paths written (none without ``HPRL_UPDATE_SCREENSHOTS``).
    """
    if not os.environ.get("HPRL_UPDATE_SCREENSHOTS"):
        return []
    written = []
    for shot, doc_name in names.items():
        shutil.copy(SHOTS / shot, DOCS_IMG / doc_name)
        written.append(DOCS_IMG / doc_name)
    return written


FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

#: True once JupyterLab's ``app.restored`` has resolved, polled by ``page.wait_for_function``: the
#: promise is never handed to Playwright (``page.evaluate`` of it, even awaited inside an async
#: function, failed as "Resulting promise was garbage collected" on JupyterLab 4.6), and a page
#: that reloads registers again.
RESTORED_JS = (
    "() => { const app = window.jupyterapp; if (!app) { return false; }"
    " if (!window.__hprlRestored) { window.__hprlRestored = 'waiting'; app.restored.then(() => { window.__hprlRestored = 'yes'; }); }"
    " return window.__hprlRestored === 'yes'; }"
)


def wait_restored(page, timeout_ms: float = 180_000) -> None:
    """Wait until JupyterLab in ``page`` has restored its layout (``app.restored``)."""
    page.wait_for_function(RESTORED_JS, timeout=timeout_ms)


#: Studio serves JupyterLab under this base URL (docs/studio.md); the browser tests do too.
BASE = "/jupyterlab/default"


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab server: ``url`` (with :data:`BASE`), its ``origin`` and its ``token``."""

    url: str
    origin: str
    token: str


class _NotReady(Exception):
    pass


@contextlib.contextmanager
def jupyterlab(
    python: str | Path, *, root: Path, env: dict[str, str], log_path: Path, cwd: Path | None = None, timeout_s: float = 120
) -> Iterator[Lab]:
    """Start JupyterLab with ``python`` as Studio runs it (127.0.0.1, base URL :data:`BASE`, token auth,
    the app exposed to the page for the tests), wait until ``/api/status`` answers (at most
    ``timeout_s`` seconds), yield it, and stop its whole process group afterwards, whatever happened.

    Fails the test (``pytest.fail``, with the end of ``log_path``) when the server exits or is not
    up in time.
    """
    token, port = secrets.token_hex(16), find_free_port()
    cmd = [
        str(python), "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}", f"--ServerApp.base_url={BASE}",
        f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}", "--LabApp.expose_app_in_browser=True", "--allow-root",
    ]  # fmt: skip
    origin = f"http://127.0.0.1:{port}"
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=cwd)
        try:

            @retry(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.5), retry=retry_if_exception_type(_NotReady), reraise=True)
            def ready() -> None:
                if proc.poll() is not None:
                    pytest.fail(f"JupyterLab exited with {proc.returncode}: {log_path.read_text()[-3000:]}")
                try:
                    ok = requests.get(f"{origin}{BASE}/api/status", headers={"Authorization": f"token {token}"}, timeout=2).ok
                except requests.RequestException:
                    ok = False
                if not ok:
                    raise _NotReady

            try:
                ready()
            except _NotReady:
                pytest.fail(f"JupyterLab did not start in {timeout_s:g} s: {log_path.read_text()[-3000:]}")
            yield Lab(url=f"{origin}{BASE}", origin=origin, token=token)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


#: Starts a promise-valued expression in the page and records how it settled under ``window[key]``
#: (its value only when it is a string, number or boolean): nothing but ``true`` goes back to Playwright.
_SETTLE_JS = (
    "([key, code]) => { window[key] = {state: 'waiting'};"
    " Promise.resolve().then(() => new Function('return (' + code + ');')()).then("
    "(v) => { window[key] = {state: 'done', value: ['string', 'number', 'boolean'].includes(typeof v) ? v : null}; },"
    " (e) => { window[key] = {state: 'error', error: String(e)}; }); return true; }"
)


def settle(page, expression: str, timeout_ms: float = 120_000):
    """Run the JavaScript ``expression`` (a promise, e.g. a JupyterLab command) in ``page`` and wait
    until it settles; its value if a string, number or boolean, else None.

    The promise is never handed to Playwright: ``page.evaluate`` of one, even awaited inside an async
    function, failed on JupyterLab 4.5 and 4.6 as "Resulting promise was garbage collected".

    Raises:
        AssertionError: the promise was rejected (its error in the message).
    """
    key = f"__hprl_settle_{secrets.token_hex(8)}"
    page.evaluate(_SETTLE_JS, [key, expression])
    page.wait_for_function(f"() => window[{key!r}].state !== 'waiting'", timeout=timeout_ms)
    result = page.evaluate(f"() => window[{key!r}]")
    assert result["state"] == "done", f"{expression} failed in the page: {result.get('error')}"
    return result.get("value")
