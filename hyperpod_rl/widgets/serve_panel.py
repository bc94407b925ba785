"""ServePanel: deploy an adapter, play a held-out maze with it, and draw the model's path.

Deploy uses the quickstart's local serving (:func:`hyperpod_rl.serve.local.deploy_local`, a
Ray Serve app with an OpenAI-style chat route) on a background thread. Play runs one episode
of the maze env (``hyperpod_rl.maze``) against the endpoint with
:func:`hyperpod_rl.serve.client.chat`, one request per turn, and shows the maze image with the
moves drawn as a path, the answers and the per-turn latency.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ipywidgets as w

from hyperpod_rl.cluster.local import current_local_cluster
from hyperpod_rl.widgets._base import Panel, escape

__all__ = ["ServePanel", "draw_path"]


def draw_path(row: dict[str, Any], cells: list[tuple[int, int]]) -> bytes:
    """PNG bytes of a dataset row's maze with the agent's path (:func:`hyperpod_rl.tasks.maze.render_path`)."""
    from hyperpod_rl.tasks.maze import Maze, RenderStyle, encode_png, render_path

    style = RenderStyle.model_validate_json(row["render_style"]) if row.get("render_style") else None
    return encode_png(render_path(Maze.from_json(row["maze"]), cells, style))


def _task_of_adapter(adapter_path: str | Path | None) -> str:
    """The task an adapter was trained on (its provenance), the default name it is served as."""
    from hyperpod_rl.errors import HyperpodRLError
    from hyperpod_rl.model.adapter import task_of_adapters

    if adapter_path is None or not Path(adapter_path).is_dir():
        return "maze"
    try:
        return task_of_adapters({"adapter": adapter_path})
    except HyperpodRLError:
        return "maze"


class ServePanel(Panel):
    """Deploy an adapter and try it on held-out mazes.

    Args:
        model_path: base model directory.
        adapter_path: adapter directory (``<run dir>/adapter``).
        heldout_path: held-out parquet (the run config's ``data.heldout_path``).
        client: authenticated ``JobSubmissionClient`` (default: the running local cluster's).
        endpoint: an already deployed endpoint (skips Deploy).
        adapter_name: the served model name of the adapter (default: the task it was trained on,
            from its provenance, e.g. ``doc_read``).
        port: HTTP port of the local serving app on 127.0.0.1.
        app_name: the Serve application this panel deploys, replaces and deletes (no other):
            default ``hyperpod-rl`` (what ``hyperpod-rl serve up`` deploys, at ``/``); another
            name is served beside it at ``/<app_name>`` (:func:`hyperpod_rl.serve.local.route_prefix`).

    Attributes:
        endpoint: the serving URL once deployed.
        last: the last episode: ``answers``, ``latencies_s``, ``cells``, ``solved``.
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        adapter_path: str | Path | None = None,
        heldout_path: str | Path | None = None,
        client: Any = None,
        endpoint: str | None = None,
        adapter_name: str | None = None,
        port: int = 8000,
        app_name: str | None = None,
    ) -> None:
        from hyperpod_rl.serve.local import SERVE_APP_NAME, route_prefix

        super().__init__()
        self.app_name = app_name or SERVE_APP_NAME
        route_prefix(self.app_name)  # a bad name fails here, not at Deploy
        if adapter_name is None:
            adapter_name = _task_of_adapter(adapter_path)
        self._client = client
        self.endpoint = endpoint
        self.port = port
        self.last: dict[str, Any] = {}
        self._rows: list[dict[str, Any]] | None = None
        self.model_path = w.Text(
            value=str(model_path or ""),
            description="base model",
            layout=w.Layout(width="520px"),
        )
        self.adapter_path = w.Text(
            value=str(adapter_path or ""),
            description="adapter",
            layout=w.Layout(width="520px"),
        )
        self.adapter_name = w.Text(value=adapter_name, description="served as")
        self.heldout_path = w.Text(
            value=str(heldout_path or ""),
            description="held-out",
            layout=w.Layout(width="520px"),
        )
        self.deploy_button = w.Button(description="Deploy", icon="rocket", button_style="primary")
        self.endpoint_html = w.HTML(self._endpoint_html(endpoint) if endpoint else "<i>not deployed</i>")
        self.maze_index = w.BoundedIntText(value=0, min=0, max=10**6, description="maze #")
        self.model_choice = w.Dropdown(options=[adapter_name, "base"], value=adapter_name, description="model")
        self.play_button = w.Button(description="Play maze", icon="play")
        self.image = w.Image(format="png", layout=w.Layout(width="256px"))
        self.answer_html = w.HTML("")
        self.deploy_button.on_click(self.guard(lambda _: self.background(self.deploy, name="serve-deploy")))
        self.play_button.on_click(self.guard(lambda _: self.background(self.play, name="serve-play")))
        self.maze_index.observe(self.guard(lambda _: self.show_maze()), names="value")
        self.children = (
            self.model_path,
            self.adapter_path,
            w.HBox([self.adapter_name, self.deploy_button]),
            self.endpoint_html,
            self.heldout_path,
            w.HBox([self.maze_index, self.model_choice, self.play_button]),
            w.HBox([self.image, self.answer_html]),
            self.errors_out,
        )

    def client(self) -> Any:
        """The job client (given, or the running local cluster's).

        Raises:
            ServeError: no cluster is running.
        """
        if self._client is None:
            from hyperpod_rl.errors import ServeError

            cluster = current_local_cluster()
            if cluster is None:
                raise ServeError("no cluster: start one in the Cluster panel first")
            self._client = cluster.job_client()
        return self._client

    def deploy(self) -> str:
        """Deploy the adapter (blocking; the Deploy button runs it on a background thread).

        Raises:
            ServeError: missing paths, the deploy job failed, or the app never became healthy.
        """
        from hyperpod_rl.errors import ServeError
        from hyperpod_rl.serve.local import deploy_local

        for label, field in (
            ("base model", self.model_path),
            ("adapter", self.adapter_path),
        ):
            if not field.value or not Path(field.value).is_dir():
                raise ServeError(f"{label} directory {field.value!r} does not exist: fill in the {label} path")
        self.endpoint_html.value = "<i>deploying ...</i>"
        self.endpoint = deploy_local(
            self.client(),
            self.model_path.value,
            {self.adapter_name.value: self.adapter_path.value},
            port=self.port,
            app_name=self.app_name,
        )
        self.endpoint_html.value = self._endpoint_html(self.endpoint)
        return self.endpoint

    def undeploy(self) -> bool:
        """Delete this panel's serving app (:attr:`app_name`) and no other; Serve stops when no app is left.

        Returns:
            True when the app was deployed and is now deleted.

        Raises:
            ServeError: the delete job failed or did not end.
        """
        from hyperpod_rl.serve.local import shutdown_local

        deleted = shutdown_local(self.client(), app_name=self.app_name)
        self.endpoint = None
        self.endpoint_html.value = "<i>not deployed</i>"
        return deleted

    @staticmethod
    def _endpoint_html(endpoint: str) -> str:
        from hyperpod_rl.jupyter import browser_link

        link = browser_link(f"{endpoint.rstrip('/')}/v1/models", "models", note="opens from this JupyterLab's browser tab")
        return f"endpoint: <code>{escape(endpoint)}</code> · {link.html()}"

    def rows(self) -> list[dict[str, Any]]:
        """The held-out rows (read once).

        Raises:
            ServeError: no held-out parquet path.
        """
        if self._rows is None:
            from hyperpod_rl.errors import ServeError
            from hyperpod_rl.tasks import read_rows

            if not self.heldout_path.value:
                raise ServeError("fill in the held-out parquet path (the run config's data.heldout_path)")
            self._rows = read_rows(self.heldout_path.value)
            self.maze_index.max = max(len(self._rows) - 1, 0)
        return self._rows

    def show_maze(self) -> None:
        """Show the selected maze before playing it."""
        row = self.rows()[self.maze_index.value]
        if "maze" not in row:  # another task: its own rendering of the item
            from hyperpod_rl.tasks import encode_png, task_of_row

            task = task_of_row(row)
            self.image.value = encode_png(task.render(row))
            self.answer_html.value = f"{escape(task.name)} item, stratum {escape(row.get('stratum'))}"
            return
        from hyperpod_rl.tasks.maze import Maze

        self.image.value = draw_path(row, [Maze.from_json(row["maze"]).start])
        self.answer_html.value = f"{row['rows']}x{row['cols']} maze, shortest path {row['shortest_path_length']} moves"

    def play(self) -> dict[str, Any]:
        """Play the selected maze with the served model, one chat request per turn.

        Returns:
            ``{"answers", "latencies_s", "cells", "solved"}``.

        Raises:
            ServeError: not deployed, or the server answered with an error.
        """
        from hyperpod_rl.errors import ServeError
        from hyperpod_rl.serve.client import solve

        if not self.endpoint:
            raise ServeError("not deployed: press Deploy first (or pass endpoint=...)")
        row = self.rows()[self.maze_index.value]
        # solve() sends each turn the same context the policy was trained on.
        result = solve(row, self.endpoint, self.model_choice.value)
        answers, latencies, solved = result.answers, result.latencies_s, result.solved
        cells = [tuple(c) for c in result.path]
        if "maze" in row:
            self.image.value = draw_path(row, cells)  # type: ignore[arg-type]
        self.last = {
            "answers": answers,
            "latencies_s": latencies,
            "cells": cells,
            "solved": solved,
        }
        verdict = "<b style='color:#2ca02c'>solved</b>" if solved else "<b style='color:#d62728'>not solved</b>"
        mean_ms = 1000 * sum(latencies) / len(latencies)
        self.answer_html.value = f"{verdict} in {len(answers)} turn(s) · mean latency {mean_ms:.0f} ms<br>" + "<br>".join(
            f"{i + 1}. <code>{escape(a)}</code> ({1000 * s:.0f} ms)" for i, (a, s) in enumerate(zip(answers, latencies, strict=True))
        )
        return self.last
