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
