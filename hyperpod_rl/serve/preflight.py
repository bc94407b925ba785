"""Preflight: refuse (or warn about) an adapter before any server loads it.

Pure and fast: it reads ``provenance.json``, ``adapter_config.json`` and the safetensors header
and bytes of the adapter directory, plus the base model's small JSON/tokenizer files. It never
loads a model and never starts a server.

Failure classes (docs/references.md §3, "field failures to design out"), one check id each:

==================  ========  ==========================================================
check               severity  problem
==================  ========  ==========================================================
provenance          error     ``provenance.json`` missing, unreadable or incomplete
adapter_config      error     ``adapter_config.json`` missing, unreadable, not LoRA, or its
                              ``r``/``lora_alpha`` differ from the provenance's LoRA settings
base_model          error     base model id or revision differs from the provenance
lora_rank           error     LoRA rank (``r`` or a ``rank_pattern`` entry) above the server's max
vision_tower        error     LoRA weights on the vision tower, for a server that applies LoRA
                              to the language model only (vLLM on Qwen-VL)
modules_to_save     error     ``modules_to_save`` set (vLLM rejects such adapters)
extra_weights       error     full-weight tensors beside the LoRA A/B matrices
weights             error     ``adapter_model.safetensors`` missing, truncated or corrupt
                    warning   no ``adapter_sha256`` in the provenance (cannot verify)
tokenizer           error     tokenizer saved with the adapter (or hashed in its provenance)
                              differs from the base model's
chat_template       error     chat template of the adapter or the server's override differs
                              from the base model's
generation_config   warning   the base model's ``generation_config.json`` would override the
                              requested sampling settings (vLLM ``--generation-config auto``)
==================  ========  ==========================================================

Example:
    >>> report = preflight(run_dir / "adapter", BaseModelRef.from_dir(model_dir), vllm_server(max_lora_rank=16))  # doctest: +SKIP
    >>> report.raise_for_errors()  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from hyperpod_rl.base import MAX_DATA_BYTES, Model, listed, load_user_data, parse_user_data, read_user_text
from hyperpod_rl.config.validate import VLLM_LORA_RANKS
from hyperpod_rl.errors import ServeError
from hyperpod_rl.model.recovery import adapter_recovery
from hyperpod_rl.model.sampling import generation_config_overrides, read_generation_config
from hyperpod_rl.runs.files import file_sha256, safetensors_header

__all__ = [
    "ADAPTER_NAME",
    "LOCAL_SERVER",
    "BaseModelRef",
    "Finding",
    "PreflightReport",
    "ServerProfile",
    "adapter_name_problem",
    "preflight",
    "tokenizer_fingerprint",
    "vllm_lora_rank_for",
    "vllm_server",
]

ADAPTER_WEIGHTS = "adapter_model.safetensors"
#: A served adapter's name, matched whole (``fullmatch``): a peft adapter name (peft keeps
#: adapters in a ``torch.nn.ModuleDict``, which refuses ``.``) and a vLLM ``--lora-modules``
#: name (vLLM splits ``name=path`` on ``=``); no whitespace, so ``"maze\n"`` is refused.
ADAPTER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
ADAPTER_CONFIG = "adapter_config.json"
PROVENANCE = "provenance.json"
#: Keys every provenance.json must carry (written by ``ReferenceTrainer.export_adapter``).
PROVENANCE_KEYS = ("base_model_id", "base_model_revision", "lora")
#: Module-path fragments of the Qwen-VL vision tower (transformers ``Qwen3VLModel.visual``).
VISION_MARKERS = (".visual.", "visual.")
_LORA_SUFFIX = re.compile(
    r"\.(lora_A|lora_B|lora_embedding_A|lora_embedding_B)(\.[^.]+)?\.weight$|\.(lora_embedding_A|lora_embedding_B)(\.[^.]+)?$"
)
_TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "merges.txt", "added_tokens.json", "special_tokens_map.json")
_TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")

Severity = Literal["error", "warning"]


def adapter_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a served adapter (:data:`ADAPTER_NAME`), or ``None`` when it can."""
    if isinstance(name, str) and ADAPTER_NAME.fullmatch(name):
        return None
    return f"adapter name {name!r} must be 1-64 letters, digits, '_' or '-', starting with a letter or digit"


def vllm_lora_rank_for(rank: int) -> int | None:
    """The smallest ``--max-lora-rank`` vLLM accepts that holds a LoRA rank (the next one up).

    vLLM's ``LoRAConfig.max_lora_rank`` is ``Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]``
    (``MaxLoRARanks`` in ``vllm/config/lora.py``; docs/references.md §3): any other value is
    refused at engine start, so a suggestion must be one of those.

    Example:
        >>> vllm_lora_rank_for(20), vllm_lora_rank_for(32), vllm_lora_rank_for(600)
        (32, 32, None)

    Returns:
        The accepted value, or ``None`` when the rank is above vLLM's largest (512).
    """
    return next((r for r in VLLM_LORA_RANKS if r >= rank), None)


class ServerProfile(Model):
    """What a server can load and how it samples (the target of a preflight).

    Attributes:
        name: shown in messages, e.g. ``"local Ray Serve"`` or ``"vLLM"``.
        max_lora_rank: largest LoRA rank the server accepts (vLLM ``--max-lora-rank``, default
            16); ``None``: no limit (peft on CPU).
        lora_ranks: the only ``max_lora_rank`` values the server starts with (vLLM:
            :data:`~hyperpod_rl.config.validate.VLLM_LORA_RANKS`); ``None``: any positive value.
        lora_language_model_only: the server applies LoRA to the language model only (vLLM on
            Qwen-VL: vision-tower LoRA weights are dropped or rejected).
        generation_config: ``"auto"``: the base model's ``generation_config.json`` supplies
            request defaults (vLLM's default); ``"vllm"``/``"ignore"``: it does not.
        chat_template: the server's chat template override (vLLM ``--chat-template``; text of
            the template), or ``None`` for the base model's own.
        sampling: the sampling settings requests rely on (unset keys are taken as "off"),
            e.g. ``{"temperature": 0.0}`` for greedy decoding.
    """

    error_what = "server profile"

    name: str = "server"
    max_lora_rank: int | None = Field(None, gt=0)
    lora_ranks: tuple[int, ...] | None = None
    lora_language_model_only: bool = False
    generation_config: Literal["auto", "vllm", "ignore"] = "ignore"
    chat_template: str | None = None
    sampling: dict[str, float] = Field(default_factory=lambda: {"temperature": 0.0})

    @model_validator(mode="after")
    def _accepted_rank(self) -> ServerProfile:
        if self.max_lora_rank is not None and self.lora_ranks is not None and self.max_lora_rank not in self.lora_ranks:
            up = next((r for r in self.lora_ranks if r >= self.max_lora_rank), None)
            hint = f"use {up}, the next accepted value up" if up is not None else f"the largest accepted value is {self.lora_ranks[-1]}"
            raise ValueError(
                f"max_lora_rank={self.max_lora_rank} is not a value {self.name} starts with (it accepts only {listed(self.lora_ranks)}): {hint}"
            )
        return self


#: The embedded local server (transformers + peft on CPU): any rank, LoRA anywhere, greedy
#: decoding through :class:`hyperpod_rl.model.policy.MazePolicy`, which passes its sampling
#: settings explicitly (``generation_config.json`` is not consulted for them).
LOCAL_SERVER = ServerProfile(name="local Ray Serve (transformers + peft)")


def vllm_server(
    max_lora_rank: int = 16,
    *,
    generation_config: Literal["auto", "vllm"] = "vllm",
    chat_template: str | None = None,
    sampling: dict[str, float] | None = None,
) -> ServerProfile:
    """The profile of a vLLM OpenAI server (or Ray Serve LLM's vLLM engine) with ``--enable-lora``.

    Facts from vLLM (``vllm/config/lora.py`` ``LoRAConfig.max_lora_rank`` default 16, one of
    1, 8, 16, 32, 64, 128, 256, 320, 512; ``--generation-config`` default ``"auto"`` loads the
    model's generation config) and docs/references.md §3 (LoRA on the Qwen-VL language model only).

    Raises:
        ConfigError: ``max_lora_rank`` is not a value vLLM accepts (the message names the next
            accepted one up).
    """
    return ServerProfile.build(
        name="vLLM",
        max_lora_rank=max_lora_rank,
        lora_ranks=VLLM_LORA_RANKS,
        lora_language_model_only=True,
        generation_config=generation_config,
        chat_template=chat_template,
        sampling=dict(sampling) if sampling is not None else {"temperature": 0.0},
    )


class BaseModelRef(Model):
    """The base model a server will load.

    Attributes:
        model_id: e.g. ``"Qwen/Qwen3-VL-8B-Instruct"`` or ``"hyperpod-rl/tiny-qwen3-vl"``.
        revision: the base model revision (the directory's content hash for local models, a
            Hub commit for Hub models).
        path: local directory with its tokenizer / chat template / generation config files,
            or ``None`` (those checks are then skipped with a warning).
    """

    model_id: str
    revision: str
    path: Path | None = None

    @classmethod
    def from_dir(cls, path: str | Path, *, model_id: str | None = None, revision: str | None = None) -> BaseModelRef:
        """Describe a local base model directory.

        The id is read as :func:`hyperpod_rl.model.loading.load_base_model` reads it
        (``hyperpod_rl_model.json``, else ``config.json`` ``_name_or_path``, else the directory
        name); the revision is the directory's content hash (hashes every byte: pass
        ``revision`` for multi-GB checkpoints).

        Raises:
            ServeError: the directory is not a Qwen3-VL checkpoint
                (:func:`hyperpod_rl.model.revision.check_model_dir`: no or a non-JSON
                ``config.json``, another ``model_type``, no weights), or the marker file is not a
                UTF-8 JSON object.
        """
        from hyperpod_rl.errors import ConfigError
        from hyperpod_rl.model.revision import check_model_dir, directory_revision

        root = Path(path).expanduser()
        try:  # a Qwen3-VL checkpoint whose config.json is a JSON object, before its revision is compared
            check_model_dir(root, "base model")
        except ConfigError as err:
            raise ServeError(str(err)) from None
        if model_id is None:
            marker = root / "hyperpod_rl_model.json"
            if marker.is_file():
                model_id = _json_object(marker, "base model marker").get("model_id")
            model_id = model_id or _json_object(root / "config.json", "base model config").get("_name_or_path") or root.name
        return cls(model_id=model_id, revision=revision or directory_revision(root), path=root)


@dataclass(frozen=True)
class Finding:
    """One preflight result.

    Attributes:
        check: the failure class (see the module table), e.g. ``"lora_rank"``.
        severity: ``"error"`` (refused) or ``"warning"`` (served, but look).
        problem: what is wrong, with the values found.
        fix: what to change.
    """

    check: str
    severity: Severity
    problem: str
    fix: str

    @property
    def message(self) -> str:
        return f"[{self.check}] {self.problem} Fix: {self.fix}"


@dataclass
class PreflightReport:
    """All findings for one adapter against one base model and server.

    Attributes:
        adapter: the adapter directory.
        server: the server profile's name.
        findings: errors and warnings, in check order.
        rank: the adapter's largest LoRA rank (``None`` if unreadable).
    """

    adapter: Path
    server: str
    findings: list[Finding] = field(default_factory=list)
    rank: int | None = None

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        """True when nothing refuses the adapter (warnings allowed)."""
        return not self.errors

    def checks(self, severity: Severity | None = None) -> set[str]:
        """The check ids found (of one severity, or all)."""
        return {f.check for f in self.findings if severity is None or f.severity == severity}

    def summary(self) -> str:
        """One line per finding, or a line saying the adapter passed."""
        if not self.findings:
            return f"{self.adapter}: preflight passed for {self.server}"
        lines = [f"{self.adapter}: preflight for {self.server}: {len(self.errors)} error(s), {len(self.warnings)} warning(s)"]
        lines += [f"  {f.severity}: {f.message}" for f in self.findings]
        return "\n".join(lines)

    def raise_for_errors(self) -> PreflightReport:
        """Return self if no finding is an error.

        Raises:
            ServeError: one or more errors; the message lists every finding.
        """
        if self.errors:
            raise ServeError(self.summary())
        return self


def _json_object(path: Path, what: str) -> dict[str, Any]:
    """A JSON object file of a model directory (UTF-8), or :class:`ServeError` naming the file and the fix."""
    data = load_user_data(path, what, syntax="json", error=ServeError, repair="restore the file from the checkpoint")
    if not isinstance(data, dict):
        raise ServeError(f"{what} {str(path)!r} holds a JSON {type(data).__name__}, not an object: restore the file from the checkpoint")
    return data


def tokenizer_fingerprint(path: str | Path) -> dict[str, str | None]:
    """Hashes of a model or adapter directory's tokenizer and chat template files.

    Returns:
        ``{"tokenizer_sha256": ..., "chat_template_sha256": ...}``; a value is ``None`` when the
        directory holds no such file. The tokenizer hash covers ``tokenizer.json`` (or the
        vocab/merges files) and the added tokens; the chat template is read from
        ``chat_template.jinja``, ``chat_template.json`` or ``tokenizer_config.json``.

    Raises:
        ServeError: one of those files cannot be read, is not UTF-8, or ``tokenizer_config.json``
            is not a JSON object (the message names the file).
    """
    root = Path(path)
    tok = hashlib.sha256()
    seen = False
    for name in _TOKENIZER_FILES:
        if (root / name).is_file():
            tok.update(name.encode() + b"\0" + (root / name).read_bytes())
            seen = True
    config_file = root / "tokenizer_config.json"
    template: str | None = None
    if config_file.is_file():
        config = _json_object(config_file, "tokenizer config")
        decoder = config.get("added_tokens_decoder")
        if decoder:
            tok.update(json.dumps(decoder, sort_keys=True).encode())
            seen = True
        if isinstance(config.get("chat_template"), str):
            template = config["chat_template"]
    if (root / "chat_template.jinja").is_file():
        template = read_user_text(root / "chat_template.jinja", "chat template", error=ServeError)
    elif (root / "chat_template.json").is_file():
        text = read_user_text(root / "chat_template.json", "chat template", error=ServeError)
        try:
            data = parse_user_data(text, "chat template", syntax="json", error=ServeError)
        except ServeError:
            template = text  # a bare template saved under the .json name
        else:
            template = data.get("chat_template", template) if isinstance(data, dict) else text
    return {
        "tokenizer_sha256": tok.hexdigest() if seen else None,
        "chat_template_sha256": hashlib.sha256(template.encode()).hexdigest() if template is not None else None,
    }


def _is_vision(key: str) -> bool:
    return any(m in key for m in VISION_MARKERS)


class _Checker:
    """Runs the checks in order and collects findings."""

    def __init__(self, adapter: Path, base: BaseModelRef, server: ServerProfile) -> None:
        self.adapter, self.base, self.server = adapter, base, server
        self.report = PreflightReport(adapter=adapter, server=server.name)
        self.provenance: dict[str, Any] | None = None
        self.config: dict[str, Any] | None = None
        self.header: dict[str, Any] | None = None

    def add(self, check: str, severity: Severity, problem: str, fix: str) -> None:
        self.report.findings.append(Finding(check, severity, problem, fix))

    # ------------------------------------------------------------------ files
    def _json(self, name: str, check: str, fix_missing: str) -> dict[str, Any] | None:
        path = self.adapter / name
        if not path.is_file():
            self.add(check, "error", f"{name} is missing from {self.adapter}.", fix_missing)
            return None
        try:
            text = read_user_text(path, name, error=ServeError, max_bytes=MAX_DATA_BYTES)
            data = parse_user_data(text, name, syntax="json", error=ServeError, repair="it was damaged")
        except ServeError as err:
            self.add(check, "error", f"{err}.", f"{name} was damaged: {adapter_recovery(self.adapter)}")
            return None
        if not isinstance(data, dict):
            self.add(check, "error", f"{name} is not a JSON object.", f"{name} was damaged: {adapter_recovery(self.adapter)}")
            return None
        return data

    def load(self) -> None:
        self.provenance = self._json(
            PROVENANCE,
            "provenance",
            "export the adapter with hyperpod-rl (ReferenceTrainer.export_adapter writes provenance.json), or write one with base_model_id, base_model_revision, adapter_sha256 and lora",
        )
        if self.provenance is not None:
            missing = [k for k in PROVENANCE_KEYS if k not in self.provenance]
            if missing:
                self.add(
                    "provenance",
                    "error",
                    f"provenance.json lacks {listed(missing)}.",
                    "re-export the adapter with hyperpod-rl so provenance.json records the base model id, revision and LoRA settings",
                )
        self.config = self._json(
            ADAPTER_CONFIG, "adapter_config", "save the adapter with peft's save_pretrained (it writes adapter_config.json)"
        )
        if self.config is not None and self.config.get("peft_type", "LORA") != "LORA":
            self.add(
                "adapter_config",
                "error",
                f"adapter_config.json has peft_type={self.config.get('peft_type')!r}; servers load LoRA adapters only.",
                "train a LoRA adapter (peft LoraConfig)",
            )
        lora = (self.provenance or {}).get("lora")
        if self.config is not None and isinstance(lora, dict):
            # provenance.lora holds RunConfig.lora (rank, alpha); adapter_config.json holds peft's r, lora_alpha
            for ours, peft_key in (("rank", "r"), ("alpha", "lora_alpha")):
                if ours in lora and peft_key in self.config and float(lora[ours]) != float(self.config[peft_key]):
                    self.add(
                        "adapter_config",
                        "error",
                        f"adapter_config.json has {peft_key}={self.config[peft_key]} but provenance.json records lora.{ours}={lora[ours]}: the config does not belong to these weights.",
                        "copy adapter_config.json from the same export as the weights, or re-export the adapter",
                    )

    # ------------------------------------------------------------------ checks
    def base_model(self) -> None:
        prov = self.provenance or {}
        if "base_model_id" in prov and prov["base_model_id"] != self.base.model_id:
            self.add(
                "base_model",
                "error",
                f"the adapter was trained on base model {prov['base_model_id']!r} but the server loads {self.base.model_id!r}.",
                f"serve it on {prov['base_model_id']!r}, or train a new adapter on {self.base.model_id!r}",
            )
        if "base_model_revision" in prov and prov["base_model_revision"] != self.base.revision:
            self.add(
                "base_model",
                "error",
                f"the adapter was trained on base model revision {prov['base_model_revision']!r} but the server loads revision {self.base.revision!r}.",
                f"load revision {prov['base_model_revision']!r} of the base model (pin it), or retrain on {self.base.revision!r}",
            )

    def weights(self) -> None:
        path = self.adapter / ADAPTER_WEIGHTS
        if not path.is_file():
            self.add(
                "weights",
                "error",
                f"{ADAPTER_WEIGHTS} is missing from {self.adapter}.",
                "copy the complete adapter directory (peft save_pretrained writes adapter_model.safetensors); .bin adapters are not served",
            )
            return
        expected = (self.provenance or {}).get("adapter_sha256")
        digest_ok = True
        if expected:
            actual = file_sha256(path)
            if actual != expected:
                digest_ok = False
        try:
            self.header = safetensors_header(path)
        except ValueError as err:
            self.add(
                "weights",
                "error",
                f"{ADAPTER_WEIGHTS} is truncated or corrupt: {err}.",
                f"{ADAPTER_WEIGHTS} was cut short or damaged: {adapter_recovery(self.adapter)}",
            )
            return
        if not digest_ok:
            self.add(
                "weights",
                "error",
                f"{ADAPTER_WEIGHTS} does not match the adapter_sha256 in provenance.json (file {path.stat().st_size} bytes): the file is corrupt or was replaced.",
                f"{ADAPTER_WEIGHTS} was damaged or replaced: {adapter_recovery(self.adapter)}",
            )
        elif not expected and self.provenance is not None:
            self.add(
                "weights",
                "warning",
                "provenance.json has no adapter_sha256, so the weights cannot be verified.",
                "re-export the adapter with hyperpod-rl (it records adapter_sha256)",
            )

    def lora_rank(self) -> None:
        cfg = self.config or {}
        ranks = [int(cfg.get("r", 8))] + [int(v) for v in (cfg.get("rank_pattern") or {}).values()]
        if self.header:
            ranks += [int(t["shape"][0]) for k, t in self.header.items() if ".lora_A" in k and isinstance(t, dict) and t.get("shape")]
        rank = max(ranks)
        self.report.rank = rank
        limit = self.server.max_lora_rank
        if limit is not None and rank > limit:
            if self.server.lora_ranks is None:
                fix = f"start the server with max_lora_rank >= {rank}, or train with lora.rank <= {limit}"
            else:  # only values the server starts with: the next accepted one up
                up = next((r for r in self.server.lora_ranks if r >= rank), None)
                fix = (
                    f"start the server with --max-lora-rank {up}, or train with lora.rank <= {limit}"
                    if up is not None
                    else f"train with lora.rank <= {self.server.lora_ranks[-1]} ({self.server.lora_ranks[-1]} is the largest value of {self.server.name}'s --max-lora-rank)"
                )
            self.add("lora_rank", "error", f"the adapter's LoRA rank is {rank} but {self.server.name} accepts at most {limit}.", fix)

    def vision_tower(self) -> None:
        if not self.server.lora_language_model_only:
            return
        keys = [k for k in (self.header or {}) if _is_vision(k)]
        if keys:
            self.add(
                "vision_tower",
                "error",
                f"{len(keys)} LoRA tensors sit on the vision tower (e.g. {keys[0]}); {self.server.name} applies LoRA to the language model only, so they would be dropped or rejected.",
                "train with lora.exclude_modules='.*visual.*' (the default), or serve on the local server, which applies LoRA everywhere",
            )

    def modules_to_save(self) -> None:
        mts = (self.config or {}).get("modules_to_save")
        if mts:
            self.add(
                "modules_to_save",
                "error",
                f"adapter_config.json sets modules_to_save={mts}: the adapter carries full copies of those modules, which vLLM rejects.",
                "train without modules_to_save (LoRA on those modules instead), then re-export",
            )

    def extra_weights(self) -> None:
        extra = [k for k in (self.header or {}) if not _LORA_SUFFIX.search(k)]
        if extra:
            self.add(
                "extra_weights",
                "error",
                f"{len(extra)} tensors are not LoRA matrices (e.g. {extra[0]}): full weights would replace the base model's.",
                "export only the LoRA A/B matrices (peft get_peft_model_state_dict without modules_to_save or trainable tokens)",
            )

    def tokenizer(self) -> None:
        if self.base.path is None:
            self.add(
                "tokenizer",
                "warning",
                "the base model has no local path, so its tokenizer and chat template were not compared.",
                "pass BaseModelRef(path=...) of a local copy of the base model",
            )
            return
        base_fp = tokenizer_fingerprint(self.base.path)
        own_fp = tokenizer_fingerprint(self.adapter)
        prov = self.provenance or {}
        for key, check, what in (
            ("tokenizer_sha256", "tokenizer", "tokenizer"),
            ("chat_template_sha256", "chat_template", "chat template"),
        ):
            for source, value in (("saved beside the adapter", own_fp[key]), ("recorded in provenance.json", prov.get(key))):
                if value is not None and value != base_fp[key]:
                    self.add(
                        check,
                        "error",
                        f"the {what} {source} differs from the base model's ({str(value)[:12]} vs {str(base_fp[key])[:12]}).",
                        f"serve with the {what} the adapter was trained with: remove the mismatching {what} files, or retrain with the base model's {what}",
                    )
        override = self.server.chat_template
        if override is not None and base_fp["chat_template_sha256"] not in (None, hashlib.sha256(override.encode()).hexdigest()):
            self.add(
                "chat_template",
                "error",
                f"{self.server.name} overrides the chat template with one that differs from the base model's, so prompts would not match training.",
                "drop the chat template override (vLLM --chat-template) so the base model's own template is used",
            )

    def generation_config(self) -> None:
        # One rule for serving, training and evaluation: hyperpod_rl.model.sampling.
        if self.server.generation_config != "auto" or self.base.path is None:
            return
        overrides = generation_config_overrides(read_generation_config(self.base.path), self.server.sampling)
        if overrides:
            self.add(
                "generation_config",
                "warning",
                f"the base model's generation_config.json sets {', '.join(overrides)}; {self.server.name} applies these as defaults to every request that omits them.",
                "start vLLM with --generation-config vllm, or send these sampling fields explicitly in each request",
            )

    def run(self) -> PreflightReport:
        self.load()
        self.base_model()
        self.weights()
        self.lora_rank()
        self.vision_tower()
        self.modules_to_save()
        self.extra_weights()
        self.tokenizer()
        self.generation_config()
        return self.report


def preflight(adapter: str | Path, base: BaseModelRef | str | Path, server: ServerProfile = LOCAL_SERVER) -> PreflightReport:
    """Check an adapter directory against the base model and server that would load it.

    Args:
        adapter: adapter directory (``adapter_model.safetensors``, ``adapter_config.json``,
            ``provenance.json``).
        base: the base model; a directory path is described with :meth:`BaseModelRef.from_dir`.
        server: the server's limits (:data:`LOCAL_SERVER`, :func:`vllm_server`).

    Returns:
        :class:`PreflightReport`; call ``raise_for_errors()`` to refuse on errors.

    Raises:
        ServeError: the adapter path is not a directory, or ``base`` is a path without
            ``config.json``.
    """
    root = Path(adapter).expanduser()
    if not root.is_dir():
        raise ServeError(f"adapter {root} is not a directory: pass the run's adapter/ directory")
    ref = base if isinstance(base, BaseModelRef) else BaseModelRef.from_dir(base)
    return _Checker(root, ref, server).run()
