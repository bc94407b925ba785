"""The browser the browser tests drive: Debian Chromium through Playwright, headless.

Needs Debian ``chromium`` at /usr/bin/chromium (``apt-get install -y chromium``, ``make chromium``)
and the ``playwright`` Python package; Playwright's own browsers are never downloaded
(``PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1``). Flags from docs/references.md §4.
"""

CHROMIUM = "/usr/bin/chromium"
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
