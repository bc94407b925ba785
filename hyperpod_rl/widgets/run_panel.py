"""RunPanel: edit a RunConfig, validate it, submit it as a detached Ray Job, follow it, stop it.

Thin over :mod:`hyperpod_rl.jobs`: Plan calls ``run_plan.plan_run`` on the form's values and shows
its tables and verdicts (blockers in red; Submit shows them too), Submit calls ``submit_run``, the status and log tail come from
``follow_run`` iterated on a background thread (never a blocking loop in a cell), Stop calls
``stop_and_record``, the runs list is ``overview`` (the run store and the cluster's jobs), and Attach
needs nothing but a run id (``latest_job``), so a kernel restart loses nothing.
"""

from __future__ import annotations

import threading
from collections import deque
from pathlib import Path
from typing import Any

import ipywidgets as w

from hyperpod_rl.cluster.local import current_local_cluster
from hyperpod_rl.config.presets import preset_gpu
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import JobError
from hyperpod_rl.jobs import RunHandle, follow_run, latest_job, overview, stop_and_record, submit_run
from hyperpod_rl.paths import run_dir as default_run_dir
from hyperpod_rl.plan import GPUS, Plan
from hyperpod_rl.plan.report import plan_html
from hyperpod_rl.run_plan import plan_run
from hyperpod_rl.runs import RunPaths, read_config
from hyperpod_rl.widgets._base import Panel, escape
from hyperpod_rl.widgets._form import ModelForm
from hyperpod_rl.widgets.task_picker import TaskPicker

__all__ = ["RunPanel"]

_STATUS_COLOURS = {
    "PENDING": "#888",
    "RUNNING": "#1f77b4",
    "SUCCEEDED": "#2ca02c",
    "FAILED": "#d62728",
    "STOPPED": "#ff7f0e",
}


def _run_presets() -> list[str]:
    try:
        return list(RunConfig.presets())  # type: ignore[attr-defined]
    except (AttributeError, ImportError):
        return []


class RunPanel(Panel):
    """Form, Validate / Plan / Submit / Stop, live status and log tail, and the list of runs.

    Example:
        >>> panel = RunPanel(config, cluster=cluster, metrics=MetricsPanel())  # doctest: +SKIP

    Args:
        config: initial values of the form (e.g. from ``quickstart.make_run_config``).
        client: an authenticated ``JobSubmissionClient`` (or an access object with
            ``job_client()``); default: the cluster's, else the running local cluster's.
        cluster: a ``LocalCluster``, a HyperPod dashboard access, or a cluster address such as
            ``sagemaker_ray://maze/hyperpod-ns-team-a`` (``cluster.access.job_client_of``).
        metrics: a :class:`~hyperpod_rl.widgets.MetricsPanel` that follows every submitted or
            attached run and receives the job log's metric records.
        run_dir_of: run id -> run directory (default ``<storage root>/runs/<run_id>``).
        python: interpreter of the job (default ``sys.executable``; on a cluster the image's).
        poll_s: seconds between job polls.
        log_lines: lines kept in the log tail.

    Attributes:
        status: the followed job's Ray status (``PENDING`` ... ``STOPPED``), ``""`` before any.
        handle: the :class:`~hyperpod_rl.jobs.RunHandle` followed, or ``None``.
        last_plan: the :class:`~hyperpod_rl.plan.Plan` shown in the Plan section, or ``None``.
        log_tail: the log tail (last ``log_lines`` lines).
    """

    def __init__(
        self,
        config: RunConfig | dict[str, Any] | None = None,
        *,
        client: Any = None,
        cluster: Any = None,
        metrics: Any = None,
        run_dir_of: Any = None,
        python: str | None = None,
        poll_s: float = 1.0,
        log_lines: int = 40,
    ) -> None:
        super().__init__()
        self._client = client
        self._cluster = cluster
        self.metrics = metrics
        self.run_dir_of = run_dir_of or default_run_dir
        self.python = python
        self.poll_s = poll_s
        self.status = ""
        self.handle: RunHandle | None = None
        self.last_plan: Plan | None = None
        self.log_tail: deque[str] = deque(maxlen=log_lines)
        self._follow_gen = 0
        self._follow_lock = threading.Lock()

        presets = _run_presets()
        self.preset = w.Dropdown(
            options=["(form)", *presets],
            value="(form)",
            description="preset",
            disabled=not presets,
        )
        self.preset.observe(self.guard(self._apply_preset), names="value")
        initial = config.model_dump(mode="json") if isinstance(config, RunConfig) else dict(config or {})
        self.tasks = TaskPicker(initial.get("task"))
        self.generate_button = w.Button(
            description="Generate dataset", icon="database", tooltip="write the task's train / held-out parquet files and fill data.*_path"
        )
        self.generate_button.on_click(self.guard(lambda _: self.generate_dataset()))
        self.form = ModelForm(RunConfig, config, exclude=("task",))
        self.fresh = w.Checkbox(value=False, description="fresh (discard checkpoints)", indent=False)
        self.validate_button = w.Button(description="Validate", icon="check")
        self.submit_button = w.Button(description="Submit", icon="play", button_style="primary")
        self.stop_button = w.Button(description="Stop", icon="stop", button_style="danger", disabled=True)
        self.plan_button = w.Button(
            description="Plan", icon="calculator", tooltip="predict per-GPU memory, vLLM KV cache and step time for the form's values"
        )
        self.plan_gpu = w.Dropdown(options=list(GPUS), value="H200", description="GPU", layout=w.Layout(width="160px"))
        self.plan_gpu.style.description_width = "40px"
        self.validate_button.on_click(self.guard(lambda _: self.validate()))
        self.plan_button.on_click(self.guard(lambda _: self.plan()))
        self.submit_button.on_click(self.guard(lambda _: self.submit()))
        self.stop_button.on_click(self.guard(lambda _: self.background(self.stop, name="run-stop")))
        self.validation = w.HTML("")
        self.plan_view = w.HTML("")
        self.status_html = w.HTML("<i>no run submitted</i>")
        self.log_html = w.HTML(
            "",
            layout=w.Layout(max_height="260px", overflow="auto", border="1px solid #eee"),
        )
        self.runs_html = w.HTML("")
        self.attach_id = w.Text(placeholder="run id", description="run id")
        self.attach_button = w.Button(description="Attach", icon="link")
        self.refresh_button = w.Button(description="Refresh runs", icon="refresh")
        self.attach_button.on_click(self.guard(lambda _: self.attach(self.attach_id.value.strip())))
        self.refresh_button.on_click(self.guard(lambda _: self.refresh_runs()))
        form_box = w.Accordion(children=[self.form], titles=("run config",))
        task_box = w.Accordion(children=[w.VBox([self.tasks, self.generate_button])], titles=("task",))
        self.children = (
            self.preset,
            task_box,
            form_box,
            w.HBox([self.validate_button, self.plan_button, self.plan_gpu, self.submit_button, self.stop_button, self.fresh]),
            self.validation,
            self.plan_view,
            self.status_html,
            self.log_html,
            w.HTML("<b>Runs</b>"),
            w.HBox([self.attach_id, self.attach_button, self.refresh_button]),
            self.runs_html,
            self.errors_out,
        )

    def __repr__(self) -> str:
        return f"RunPanel(run_id={self.handle.run_id if self.handle else None!r}, status={self.status!r})"

    # ----- client -----------------------------------------------------------------------------
    def client(self) -> Any:
        """The job client: given, the cluster's, or the running local cluster's.

        Raises:
            JobError: no client, no cluster and no local cluster running.
        """
        from hyperpod_rl.cluster.access import job_client_of

        if self._client is not None:
            return job_client_of(self._client)  # a client, an access object or an address string
        if self._cluster is None:
            self._cluster = current_local_cluster()
        if self._cluster is None:
            raise JobError("no cluster: start one in the Cluster panel (or hyperpod-rl cluster start) first")
        self._client = job_client_of(self._cluster)
        return self._client

    def use_cluster(self, cluster: Any) -> None:
        """Submit to ``cluster`` from now on (an access object, a ``LocalCluster`` or a cluster address)."""
        self._cluster, self._client = cluster, None

    # ----- actions ----------------------------------------------------------------------------
    def _apply_preset(self, change: dict[str, Any]) -> None:
        if change["new"] == "(form)":
            return
        current = self.form.to_dict()
        # Keep what identifies this run and its data; everything else comes from the preset.
        data = current.get("data") or {}
        overrides = {
            "run_id": current.get("run_id"),
            "data.train_path": data.get("train_path"),
            "data.heldout_path": data.get("heldout_path"),
        }
        overrides = {k: v for k, v in overrides.items() if v}
        config = RunConfig.from_preset(change["new"], **overrides)  # type: ignore[attr-defined]
        self.form.set_value(config)
        self.plan_gpu.value = preset_gpu(change["new"])  # plan a preset on its own GPU (the picker can still change it)

    def config_dict(self) -> dict[str, Any]:
        """The form's run config as a dict (the task section from the task picker), unvalidated."""
        return {**self.form.to_dict(), "task": self.tasks.to_dict()}

    def generate_dataset(self, storage: str | Path | None = None) -> dict[str, Path]:
        """Write the picked task's dataset (its options form) and put its paths into ``data``.

        Args:
            storage: storage root (default :func:`hyperpod_rl.paths.storage_root`).

        Raises:
            TaskError (or the task's own error): invalid options, listing every bad field.
        """
        from hyperpod_rl.paths import storage_root

        paths = self.tasks.generate(storage or storage_root())
        self.form.widget("data.train_path").value = str(paths["train"])
        if "heldout" in paths:
            self.form.widget("data.heldout_path").value = str(paths["heldout"])
        self.validation.value = f"dataset written: {escape(', '.join(f'{k} {v}' for k, v in paths.items()))}"
        return paths

    def validate(self) -> RunConfig:
        """Validate the form; every bad field is listed at once in the panel.

        Raises:
            ConfigError: the config is invalid (one line per field, also shown in the panel).
        """
        from hyperpod_rl.errors import ConfigError

        self.clear_errors()
        try:
            config = RunConfig.build(self.config_dict())
        except ConfigError as err:
            self.validation.value = "<pre style='color:#b00'>" + escape(err) + "</pre>"
            raise
        self.validation.value = f"<span style='color:#2ca02c'>valid</span> · config hash <code>{config.config_hash()}</code>"
        return config

    def plan(self) -> Plan:
        """Validate the form and show the planner's prediction for it in the Plan section.

        The section shows the per-GPU memory breakdown, the vLLM KV-cache room, the step-time
        split and the verdicts, blockers in red, for the GPU picked next to the Plan button.

        Returns:
            The :class:`~hyperpod_rl.plan.Plan` (also kept in :attr:`last_plan`).

        Raises:
            ConfigError: invalid form, or values the planner rejects (shown in the panel).
        """
        config = self.validate()
        return self._show_plan(config)

    def _show_plan(self, config: RunConfig) -> Plan:
        result = plan_run(config, gpu=self.plan_gpu.value)
        self.last_plan = result
        note = ""
        if config.backend != "skyrl":
            note = (
                f"<i>the {escape(config.backend)} backend is not what the planner models (SkyRL: FSDP2 policy + vLLM engines); "
                "these are the SkyRL figures at the same sizes</i>"
            )
        self.plan_view.value = note + plan_html(result)
        return result

    def submit(self) -> RunHandle:
        """Validate, show the plan of a SkyRL GRPO run (its blockers in red), and submit the run (detached); then follow it.

        A run predicted not to fit is still submitted (``submit_run`` warns with the same verdicts).

        Raises:
            ConfigError: invalid form. JobError: no cluster, already running, or refused.
        """
        config = self.validate()
        if config.backend == "skyrl" and config.stage == "grpo":  # the planner sizes GRPO runs; an SFT stage is not planned
            self._show_plan(config)
        handle = submit_run(
            self.client(),
            config,
            Path(self.run_dir_of(config.run_id)),
            python=self.python,
            fresh=self.fresh.value,
        )
        self._follow(handle)
        return handle

    def attach(self, run_id: str) -> RunHandle:
        """Follow an earlier run by its id alone (after a kernel restart, from another notebook).

        Raises:
            JobError: empty id, or the run was never submitted from this storage root.
        """
        if not run_id:
            raise JobError("type a run id to attach to (see the runs list)")
        rdir = Path(self.run_dir_of(run_id))
        handle = RunHandle(run_id=run_id, submission_id=latest_job(self.client(), run_id, rdir).submission_id, run_dir=rdir)
        if RunPaths(rdir).config.exists():
            attached = read_config(RunPaths(rdir)).model_dump(mode="json")
            self.form.set_value(attached)
            self.tasks.task.value = attached["task"]["name"]
            self.tasks.options_form.set_value(attached["task"]["options"])
        self._follow(handle)
        return handle

    def stop(self) -> bool:
        """Stop the followed run, wait until Ray reports it ended, and record ``stopped`` in its
        provenance (:func:`hyperpod_rl.jobs.stop_and_record`); True if it was running.

        Raises:
            JobError: no run followed, the cluster does not know the job, or it did not end in time.
        """
        if self.handle is None:
            raise JobError("no run to stop: submit or attach one first")
        job, _ = stop_and_record(self.client(), self.handle.run_id, self.handle.run_dir)
        return job.alive

    def refresh_runs(self) -> list[dict[str, Any]]:
        """Runs from the run store and the cluster (:func:`hyperpod_rl.jobs.overview`), newest first."""
        try:
            rows = overview(self.client())
        except JobError as err:
            self.show_error(err)
            rows = overview(None)
        table = ["<table><tr><th>run id</th><th>submission</th><th>status</th><th>step</th><th>from</th></tr>"]
        for row in rows:
            step = f"{row['step']}/{row['total_steps']}" if row.get("total_steps") else str(row.get("step") or "")
            table.append(
                f"<tr><td><code>{escape(row['run_id'])}</code></td><td>{escape(row['submission_id'] or '-')}</td><td>{escape(row['status'])}</td><td>{escape(step)}</td><td>{escape(row['where'])}</td></tr>"
            )
        self.runs_html.value = "".join(table) + "</table>"
        return rows

    # ----- following --------------------------------------------------------------------------
    def _follow(self, handle: RunHandle) -> None:
        with self._follow_lock:
            self._follow_gen += 1
            gen = self._follow_gen
        self.handle = handle
        self.log_tail.clear()
        self.log_html.value = ""
        self._set_status("PENDING", "")
        self.stop_button.disabled = False
        if self.metrics is not None:
            self.metrics.follow(handle.run_dir)
        client = self.client()

        def loop() -> None:
            for update in follow_run(client, handle.submission_id, poll_s=self.poll_s):
                if gen != self._follow_gen:
                    return  # another run is followed now; this job keeps running
                self.log_tail.extend(update.lines)
                if update.lines:
                    self.log_html.value = "<pre style='margin:0'>" + escape("\n".join(self.log_tail)) + "</pre>"
                if update.records and self.metrics is not None:
                    self.metrics.push(update.records)
                self._set_status(update.status, update.message)
                if update.terminal:
                    self.stop_button.disabled = True

        self.background(loop, name=f"follow-{handle.run_id}")

    def _set_status(self, status: str, message: str) -> None:
        self.status = status
        colour = _STATUS_COLOURS.get(status, "#444")
        handle = self.handle
        where = f" · <code>{escape(handle.submission_id)}</code> · {escape(handle.run_dir)}" if handle else ""
        detail = f"<br><span style='color:#b00'>{escape(message)}</span>" if message and status == "FAILED" else ""
        self.status_html.value = f"<b style='color:{colour}'>{escape(status)}</b>{where}{detail}"
