"""What every panel shares: an error Output area, guarded callbacks and background work."""

from __future__ import annotations

import html
import threading
import traceback
from collections.abc import Callable
from typing import Any

import ipywidgets as w

__all__ = ["Panel", "escape"]


def escape(text: object) -> str:
    """HTML-escape ``text`` for an ``HTML`` widget."""
    return html.escape(str(text))


class Panel(w.VBox):
    """A ``VBox`` with an ``errors`` Output area that shows every failure of its callbacks.

    Errors are never swallowed: they are printed into :attr:`errors_out` (visible in the panel)
    and kept in :attr:`errors` (messages, newest last) for tests and scripts. Secrets must not be
    passed to widgets: panels keep clients and tokens as plain Python attributes, which are not
    synchronised to the browser.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.errors_out = w.Output(layout=w.Layout(max_height="240px", overflow="auto"))
        self.errors: list[str] = []
        self._threads: list[threading.Thread] = []

    def show_error(self, err: BaseException) -> None:
        """Print ``err`` (message, and the traceback for unexpected errors) into the panel."""
        from hyperpod_rl.errors import HyperpodRLError

        message = f"{err.__class__.__name__}: {err}"
        self.errors.append(message)
        with self.errors_out:
            if isinstance(err, HyperpodRLError | ValueError):
                print(message)
            else:
                traceback.print_exception(err)

    def clear_errors(self) -> None:
        """Empty the error area (at the start of each user action)."""
        self.errors_out.clear_output()

    def guard(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap a callback so any exception shows in the panel instead of vanishing."""

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as err:  # noqa: BLE001 - shown in the panel and kept in .errors, never swallowed
                self.show_error(err)
                return None

        wrapped.__name__ = getattr(fn, "__name__", "callback")
        return wrapped

    def background(self, fn: Callable[[], Any], *, name: str) -> threading.Thread:
        """Run ``fn`` on a daemon thread (errors go to the panel); never blocks the kernel."""
        thread = threading.Thread(target=self.guard(fn), name=f"hprl-{name}", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return thread

    def wait_idle(self, timeout_s: float = 60.0) -> bool:
        """Join this panel's background threads (tests and scripts); True when all ended."""
        import time

        deadline = time.monotonic() + timeout_s
        for thread in list(self._threads):
            thread.join(max(deadline - time.monotonic(), 0))
        return not any(t.is_alive() for t in self._threads)
