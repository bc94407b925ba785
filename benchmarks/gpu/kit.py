"""The GPU kit: the folders to send to the GPU machine, one per device call (run on the developer's machine).

    python -m benchmarks.gpu.kit [--vllm-trim DIR] [--out .gpu-kit] [--call-mib 55] [--trl]

The stack is the production image's (container/requirements.lock): SkyRL 0.3.0 with its own pins,
vLLM 0.23.0, Ray 2.56.0, transformers 5.8.0, peft 0.18.1, on the GPU image's own torch 2.11.0+cu130
(the torch that vLLM 0.23.0 and SkyRL 0.3.0 pin). Everything comes from PyPI: nothing is read from
outside the repository. What travels:

================================  ==============  ==========================================================
payload                           installs into   what
================================  ==============  ==========================================================
``vllm-0.23.0-trim.tar.xz``       site            vLLM 0.23.0's PyPI wheel without :data:`VLLM_DROP` (built
                                                  here by :func:`trim_vllm_wheel`, or ``--vllm-trim DIR``: an
                                                  already trimmed build, ``*.tar.xz.partNN`` + ``SHA256SUMS``)
``vllm-stubs.tar.gz``             site            :data:`VLLM_STUBS` (``llguidance`` / ``xgrammar`` stand-ins)
Ray 2.56.0 wheel, trimmed         site            without Java jars, RLlib, LLM and the dashboard's source maps
                                                  (Ray Serve kept: vLLM 0.23.0's Ray metrics import it);
                                                  raylet, GCS server, ``_raylet.so`` stripped; RECORD redone
:data:`VLLM_NEEDS` ... wheels     site            offline vLLM and its OpenAI server, Ray's dashboard / job
                                                  agent, SkyRL's dataset loader, ours (:data:`RAY_NEEDS`,
                                                  :data:`VLLM_SERVER_NEEDS`, :data:`OWN_NEEDS`; ``--trl``
                                                  adds :data:`TRL_NEEDS`)
:data:`SKYRL_NEEDS` wheels        site-skyrl      SkyRL 0.3.0 + its pins (transformers 5.8.0, tokenizers
                                                  0.22.2, peft 0.18.1, vllm-router 0.1.14) and what its
                                                  trainer, FSDP worker, vLLM servers and router import
``flash-attn-standin.tar.gz``     site-skyrl      :data:`FLASH_ATTN_STANDIN`
================================  ==============  ==========================================================

Payload files are laid end to end and cut into ``callK/`` folders of at most ``--call-mib``
(default: 55 MiB, less if the checkout is large: one call carries 64 MiB with the checkout);
``MANIFEST.tsv`` (in every folder) names each payload, its sha256, size, target and parts.
``benchmarks/gpu/stage.sh K`` on the GPU machine stages call K, joins and checks every payload whose
parts have all arrived, unpacks the tars, pip-installs a target's wheels in one run once all are
there; the last call writes ``$HOME/stage/env.sh``. ``benchmarks/gpu/run_skyrl.sh`` is the run call
(docs/gpu.md, "SkyRL 0.3.0 on one GPU").

Image packages (``/work/.library/device/KINDS.md``, "Python packages already there") are not
carried. Downloads, the trimmed vLLM and the trimmed Ray wheel are cached under ``<out>/cache``
(a second run takes seconds).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MIB = 1 << 20
CALL_LIMIT = 64 * MIB  # one device call: checkout + carried paths (device README, Limits)
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
    "manylinux_2_5_x86_64",
)

#: Ray's dashboard / job agent / runtime-env agent imports that the image lacks (traced on Ray 2.57: each of these,
#: made unimportable, breaks ray.dashboard.* modules), plus what they import; with Ray 2.56 they were enough for the
#: embedded cluster's dashboard and job API on the GPU machine (2026-12-06, benchmarks/results/h100_skyrl030_stop_2b.json).
RAY_NEEDS = (
    "aiohttp_cors==0.8.1",
    "colorful==0.5.8",
    "opencensus==0.11.4",
    "opencensus-context==0.1.3",
    "googleapis-common-protos==1.76.0",
    "opentelemetry-api==1.45.2",
    "opentelemetry-sdk==1.45.2",
    "opentelemetry-exporter-prometheus==0.66b2",
    "opentelemetry-proto==1.45.2",
    "opentelemetry-semantic-conventions==0.66b2",
    "smart_open==9.0.2",
    "jsonschema==4.26.0",
    "jsonschema-specifications==2025.9.1",
    "referencing==0.37.0",
    "rpds-py==2026.9.1",
)
#: TRL's GRPOTrainer baseline (REFERENCE §8: everything else it needs is on the image); ``--trl`` only.
TRL_NEEDS = ("trl==1.16.0",)
#: What offline ``vllm.LLM`` 0.23.0 imports that the image lacks (traced on the GPU image, 2026-12-01).
VLLM_NEEDS = (
    "pydantic==2.14.4",
    "pydantic_core==2.50.5",
    "annotated_types==0.8.0",
    "typing_inspection==0.4.5",
    "typing_extensions==4.16.0",
    "msgspec==0.23.0",
    "pyzmq==27.3.0",
    "cbor2==6.3.0",
    "blake3==1.0.11",
    "pybase64==1.5.1",
    "cachetools==8.0.2",
    "openai==2.54.0",  # 3.x needs httpx2, which the image lacks
    "distro==1.9.0",
    "jiter==0.19.0",
    "openai_harmony==0.0.8",
    "fastapi==0.136.3",
    "starlette==1.10.0",
    "partial_json_parser==0.2.1.1.post7",
    "sniffio==1.3.1",
    "gguf==0.19.0",  # vLLM 0.23.0 imports it at module level (transformers_utils/gguf_utils.py)
)
#: vLLM's OpenAI API server (SkyRL's ``VLLMServerActor`` runs it): module-level imports of
#: ``vllm/entrypoints/openai/api_server.py`` and what they import, beyond :data:`VLLM_NEEDS`. The
#: Mistral tool parser is imported at module level (api_server -> serve/render/serving -> parser).
VLLM_SERVER_NEEDS = (
    "uvicorn==0.54.0",
    "watchfiles==1.3.0",
    "model-hosting-container-standards==0.1.16",
    "jmespath==1.1.0",
    "prometheus-fastapi-instrumentator==8.1.0",
    "ijson==3.5.0",
    "mistral_common==1.13.1",
    "pydantic_extra_types==2.11.1",
    "pycountry==24.6.1",  # pydantic_extra_types.language_code needs it at import
)
#: The project's own needs that the image lacks (pyproject dependencies) and SkyRL's dataset loader
#: (``datasets`` + ``dill`` + ``multiprocess``; SkyRL 0.3.0 requires datasets>=4.0.0; TRL needs them too).
OWN_NEEDS = (
    "tenacity==9.2.1",
    "platformdirs==4.14.9",
    "skyrl-gym==0.4.0",
    "omegaconf==2.4.0",
    "datasets==5.2.0",
    "dill==0.4.1",
    "multiprocess==0.70.19",
)
#: SkyRL 0.3.0 and its pins (container/requirements.lock), installed in front of ``site`` only for SkyRL runs.
SKYRL_NEEDS = (
    "skyrl==0.3.0",
    "transformers==5.8.0",
    # transformers 5.8.0 checks tokenizers>=0.22.0,<=0.23.0 at import; the image has 0.23.2, PyPI has no 0.23.0
    "tokenizers==0.22.2",
    "peft==0.18.1",
    "loguru==0.7.3",
    "torchdata==0.11.0",
    "orjson==3.13.0",
    "cloudpathlib==0.26.0",
    # SkyRL 0.3.0's VLLMRouter.start reads RouterArgs.pd_disaggregation, which 0.1.15 and later dropped
    # (AttributeError on the GPU machine, 2026-12-06).
    "vllm-router==0.1.14",
    "setproctitle==1.3.7",
)

VLLM_VERSION = "0.23.0"
#: Parts of vLLM 0.23.0's wheel left out: the FlashAttention 2 kernels (Hopper uses FA3), the MoE kernels
#: (imported under ``contextlib.suppress(ImportError)``; dense models never call them), the FlashMLA
#: kernels (imported under try/except), the vendored DeepGEMM sources and the vllm-rs binary.
VLLM_DROP = (
    "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so",
    "vllm/_moe_C.abi3.so",
    "vllm/_flashmla_C.abi3.so",
    "vllm/_flashmla_extension_C.abi3.so",
    "vllm/third_party/deep_gemm",
    "vllm/vllm-rs",
)
#: Import stand-ins: vLLM evaluates ``llguidance.*`` / ``xgrammar.*`` names in class annotations at import;
#: structured outputs are not used. vLLM 0.23.0's API server also imports ``xgrammar.structural_tag``
#: (``tool_parsers/structural_tag_registry.py``).
_STUB = (
    "# Stub (benchmarks/gpu/kit.py): vLLM evaluates these names in class annotations at import;"
    " structured outputs are not used here.\n"
    'def __getattr__(name):\n    if name.startswith("__"):\n        raise AttributeError(name)\n    return type(name, (), {})\n'
)
VLLM_STUBS = {
    f"{m}.py": _STUB for m in ("llguidance/__init__", "llguidance/hf", "llguidance/torch", "xgrammar/__init__", "xgrammar/structural_tag")
}

#: Ray parts left out (none is imported by Ray core, the dashboard, job submission, Ray Serve or SkyRL).
#: ``ray/serve`` stays: vLLM 0.23.0's ``v1/metrics/ray_wrappers.py`` imports ``ray.serve`` with
#: ``ray.util.metrics`` in one try block, and without it SkyRL's default Ray Prometheus stat logger
#: fails the engine start ("RayPrometheusMetric requires Ray to be installed", GPU machine 2026-12-06).
RAY_DROP = ("ray/jars", "ray/rllib", "ray/llm")
RAY_VERSION = "2.56.0"

#: A stand-in ``flash_attn`` (GPU machine only): SkyRL 0.3.0's ``workers/model_wrapper.py`` imports
#: ``flash_attn.bert_padding.{pad_input, unpad_input}`` at module level; flash-attn 2.8.3 (SkyRL's pin) is a
#: compiled package and is not carried. The run sets ``trainer.flash_attn=false`` and
#: ``trainer.remove_microbatch_padding=false`` (sdpa, padded micro batches), so these are not called.
#: A dist-info of another name owns the top-level ``flash_attn``: transformers 5.8.0's
#: ``is_flash_attn_2_available`` looks ``flash_attn`` up in ``packages_distributions()`` and raises
#: KeyError for a module no distribution owns; with it, it finds no "flash-attn" distribution and says False.
#: ``flash_attn/ops/triton/rotary.py``: vLLM 0.23.0's ``ApplyRotaryEmb`` imports ``apply_rotary`` from it
#: whenever ``find_spec("flash_attn")`` finds a package (it calls it only on ROCm); without it the engine
#: fails building Qwen3-VL's vision tower.
FLASH_ATTN_STANDIN = {
    "flash_attn/__init__.py": '"""Stand-in for flash-attn on the GPU test machine (benchmarks/gpu/kit.py): bert_padding only."""\n',
    "flash_attn_standin-0.0.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: flash-attn-standin\nVersion: 0.0.0\n",
    "flash_attn_standin-0.0.0.dist-info/top_level.txt": "flash_attn\n",
    "flash_attn_standin-0.0.0.dist-info/RECORD": "".join(
        f"{f},,\n"
        for f in (
            "flash_attn/__init__.py",
            "flash_attn/bert_padding.py",
            "flash_attn/ops/__init__.py",
            "flash_attn/ops/triton/__init__.py",
            "flash_attn/ops/triton/rotary.py",
        )
    ),
    "flash_attn/ops/__init__.py": "",
    "flash_attn/ops/triton/__init__.py": "",
    "flash_attn/ops/triton/rotary.py": 'def apply_rotary(*args, **kwargs):\n    raise NotImplementedError("flash-attn stand-in: vLLM calls apply_rotary only on ROCm")\n',
    "flash_attn/bert_padding.py": '''"""Plain-torch pad/unpad with flash-attn 2.8's signatures (benchmarks/gpu/kit.py stand-in)."""

import torch
import torch.nn.functional as F


def unpad_input(hidden_states, attention_mask, unused_mask=None):
    """(B, S, ...) + (B, S) mask -> ((nnz, ...), indices (nnz,), cu_seqlens (B+1,), max_seqlen, seqlens (B,))."""
    mask = attention_mask.bool() if unused_mask is None else (attention_mask.bool() | unused_mask.bool())
    seqlens = mask.sum(dim=-1, dtype=torch.int32)
    used = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(mask.flatten(), as_tuple=False).flatten()
    cu = F.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
    flat = hidden_states.reshape(-1, *hidden_states.shape[2:])
    return flat[indices], indices, cu, int(seqlens.max().item()), used


def pad_input(hidden_states, indices, batch, seqlen):
    """(nnz, ...) values at flat ``indices`` -> (batch, seqlen, ...), zeros elsewhere."""
    out = torch.zeros(batch * seqlen, *hidden_states.shape[1:], device=hidden_states.device, dtype=hidden_states.dtype)
    out[indices] = hidden_states
    return out.reshape(batch, seqlen, *hidden_states.shape[1:])
''',
}


@dataclass
class Payload:
    """One file for the GPU machine: a ``.tar*`` unpacked into ``target``, or a wheel pip-installed there.

    Wheels of one target are installed in one ``pip install --target`` run once all have arrived
    (one run, so namespace packages such as ``google.*`` from several wheels merge).
    """

    name: str
    target: str
    path: Path
    sha256: str = ""
    size: int = 0
    parts: list[tuple[int, str, int]] = field(default_factory=list)  # (call, file, bytes)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def checkout_bytes(repo: Path = REPO) -> int:
    """Bytes of what a device call sends besides carried paths: tracked + untracked-not-ignored files."""
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    )
    total = 0
    for name in out.stdout.decode().split("\0"):
        p = repo / name
        if name and p.is_file() and not p.is_symlink():
            total += p.stat().st_size
    return total


def download(specs: tuple[str, ...], dest: Path) -> list[Path]:
    """``pip download --no-deps --only-binary=:all:`` for CPython 3.12 manylinux x86_64 into ``dest`` (cached)."""
    dest.mkdir(parents=True, exist_ok=True)

    def found(spec: str) -> list[Path]:
        name, _, version = spec.partition("==")
        stem = name.lower().replace("-", "_").replace(".", "_")
        return [w for w in dest.glob("*.whl") if w.name.lower().startswith(f"{stem}-{version}-")]

    todo = [s for s in specs if len(found(s)) != 1]
    if todo:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", "3.12"]
        cmd += ["--implementation", "cp", *[a for p in PLATFORMS for a in ("--platform", p)], "-d", str(dest), *todo]
        subprocess.run(cmd, check=True)
    wheels = []
    for spec in specs:
        hits = found(spec)
        if len(hits) != 1:
            raise SystemExit(f"error: expected one wheel of {spec} in {dest}, found {[w.name for w in hits]}")
        wheels.append(hits[0])
    return wheels


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def trim_ray_wheel(wheel: Path, out: Path) -> Path:
    """Ray's wheel without :data:`RAY_DROP`, its three big binaries stripped of symbol tables, RECORD rewritten."""
    binaries = ("ray/core/src/ray/gcs/gcs_server", "ray/core/src/ray/raylet/raylet", "ray/_raylet.so")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with (
        tempfile.TemporaryDirectory() as scratch,
        zipfile.ZipFile(wheel) as src,
        zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as dst,
    ):
        record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        rows = []
        for info in src.infolist():
            name = info.filename
            if name == record_name or any(name == d or name.startswith(d + "/") for d in RAY_DROP):
                continue
            if name.startswith("ray/dashboard/client/build/") and name.endswith(".js.map"):
                continue
            data = src.read(info)
            if name in binaries and shutil.which("strip"):
                p = Path(scratch) / Path(name).name
                p.write_bytes(data)
                subprocess.run(["strip", "--strip-unneeded", str(p)], check=True)
                data = p.read_bytes()
            dst.writestr(info, data)
            rows.append(f"{name},{_record_hash(data)},{len(data)}")
        rows.append(f"{record_name},,")
        dst.writestr(record_name, "\n".join(rows) + "\n")
    os.replace(tmp, out)
    return out


def small_tar(files: dict[str, bytes], out: Path) -> Path:
    """A ``tar.gz`` of ``{relative path: bytes}`` (sorted, fixed mtime and owner)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with (
        tmp.open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w") as tar,
    ):
        for rel in sorted(files):  # same bytes every build: a rebuilt kit keeps its MANIFEST.tsv
            info = tarfile.TarInfo(rel)
            info.size, info.mtime, info.mode = len(files[rel]), 0, 0o644
            tar.addfile(info, io.BytesIO(files[rel]))
    os.replace(tmp, out)
    return out


def vllm_trim_payload(src: Path, cache: Path) -> Payload:
    """An already trimmed vLLM build (``--vllm-trim DIR``): its parts joined here and checked against its SHA256SUMS."""
    parts = sorted(src.glob("*.tar.xz.part*"))
    lines = (
        [line.split() for line in (src / "SHA256SUMS").read_text().splitlines() if line.strip()] if (src / "SHA256SUMS").exists() else []
    )
    if not parts or len(lines) != 1:
        raise SystemExit(f"error: {src} has no *.tar.xz.partNN or no one-line SHA256SUMS: is --vllm-trim a trimmed vLLM build?")
    want, joined_name = lines[0][0], lines[0][-1].lstrip("*")
    if joined_name != f"vllm-{VLLM_VERSION}-trim.tar.xz":
        raise SystemExit(
            f"error: {src} holds {joined_name}; this kit carries vllm-{VLLM_VERSION}-trim.tar.xz (vLLM {VLLM_VERSION}, SkyRL 0.3.0's pin)"
        )
    out = cache / "payloads" / joined_name
    if not out.exists() or sha256(out) != want:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("wb") as dst:
            for p in parts:
                with p.open("rb") as fh:
                    shutil.copyfileobj(fh, dst)
        if sha256(out) != want:
            out.unlink()
            raise SystemExit(f"error: joined {', '.join(p.name for p in parts)} do not match {joined_name} in SHA256SUMS")
    return Payload(joined_name, "site", out)


def trim_vllm_wheel(wheel: Path, out: Path) -> Path:
    """``vllm/`` and its dist-info from ``wheel`` without :data:`VLLM_DROP`, as a reproducible ``tar.xz`` (xz -6, all cores)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with zipfile.ZipFile(wheel) as src, tmp.open("wb") as raw:
        xz = subprocess.Popen(["xz", "-T0", "-6"], stdin=subprocess.PIPE, stdout=raw)
        assert xz.stdin is not None
        with tarfile.open(fileobj=xz.stdin, mode="w|") as tar:
            for info in sorted(src.infolist(), key=lambda i: i.filename):
                name = info.filename
                if info.is_dir() or any(name == d or name.startswith(d + "/") for d in VLLM_DROP):
                    continue
                data = src.read(info)
                member = tarfile.TarInfo(name)
                member.size, member.mtime = len(data), 1781481600  # 2026-06-15: same bytes every build
                member.mode = 0o755 if (info.external_attr >> 16) & 0o111 else 0o644
                tar.addfile(member, io.BytesIO(data))
        xz.stdin.close()
        if xz.wait() != 0:
            raise SystemExit(f"error: xz failed compressing {wheel.name}")
    os.replace(tmp, out)
    return out


def vllm_payload(trimmed: Path | None, cache: Path) -> Payload:
    """vLLM 0.23.0, trimmed: from ``--vllm-trim DIR`` when given, else built from PyPI's wheel (cached)."""
    if trimmed is not None:
        return vllm_trim_payload(trimmed, cache)
    out = cache / "payloads" / f"vllm-{VLLM_VERSION}-trim.tar.xz"
    (wheel,) = download((f"vllm=={VLLM_VERSION}",), cache / "wheels")
    stamp = out.with_name(out.name + ".from")
    key = f"{wheel.name} {wheel.stat().st_size} {VLLM_DROP}"
    if not (out.exists() and stamp.exists() and stamp.read_text() == key):
        print(f"trimming {wheel.name} (a few minutes: xz on every core)", flush=True)
        trim_vllm_wheel(wheel, out)
        stamp.write_text(key)
    return Payload(out.name, "site", out)


def payloads_of(cache: Path, *, vllm_trim: Path | None = None, trl: bool = False) -> list[Payload]:
    """Every payload, in the order they travel (vLLM first: the biggest, unpacked as soon as it is complete)."""
    wheels = cache / "wheels"
    out = [vllm_payload(vllm_trim, cache)]
    stubs = {rel: text.encode() for rel, text in VLLM_STUBS.items()}
    out.append(Payload("vllm-stubs.tar.gz", "site", small_tar(stubs, cache / "payloads" / "vllm-stubs.tar.gz")))
    trim = cache / "payloads" / f"ray-{RAY_VERSION}-cp312-cp312-manylinux2014_x86_64.whl"
    (ray_src,) = download((f"ray=={RAY_VERSION}",), wheels)
    stamp = trim.with_name(trim.name + ".from")
    key = f"{ray_src.name} {ray_src.stat().st_size} {RAY_DROP}"
    if not (trim.exists() and stamp.exists() and stamp.read_text() == key):
        print("trimming Ray's wheel (a minute or two on a busy machine)", flush=True)
        trim_ray_wheel(ray_src, trim)
        stamp.write_text(key)
    out.append(Payload(trim.name, "site", trim))
    site = VLLM_NEEDS + RAY_NEEDS + VLLM_SERVER_NEEDS + OWN_NEEDS + (TRL_NEEDS if trl else ())
    for w in download(site, wheels):
        out.append(Payload(w.name, "site", w))
    for w in download(SKYRL_NEEDS, wheels):
        out.append(Payload(w.name, "site-skyrl", w))
    standin = {k: v.encode() for k, v in FLASH_ATTN_STANDIN.items()}
    out.append(Payload("flash-attn-standin.tar.gz", "site-skyrl", small_tar(standin, cache / "payloads" / "flash-attn-standin.tar.gz")))
    names = [p.name for p in out]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise SystemExit(f"error: payload names collide: {sorted(dupes)}")
    return out


def lay_out(payloads: list[Payload], capacity: int) -> int:
    """Assign byte ranges of the payloads, end to end, to calls of ``capacity`` bytes; returns the call count."""
    call, room = 1, capacity
    for p in payloads:
        p.size = p.path.stat().st_size
        offset, n = 0, 0
        while offset < p.size:
            if room == 0:
                call, room = call + 1, capacity
            take = min(room, p.size - offset)
            p.parts.append((call, f"{p.name}.part{n:02d}", take))
            offset, room, n = offset + take, room - take, n + 1
    return call


def write_calls(payloads: list[Payload], calls: int, out: Path) -> list[Path]:
    folders = [out / f"call{k}" for k in range(1, calls + 1)]
    for f in folders:
        shutil.rmtree(f, ignore_errors=True)
        f.mkdir(parents=True)
    for p in payloads:
        with p.path.open("rb") as src:
            for call, fname, nbytes in p.parts:
                with (out / f"call{call}" / fname).open("wb") as dst:
                    remaining = nbytes
                    while remaining:
                        block = src.read(min(remaining, 1 << 22))
                        dst.write(block)
                        remaining -= len(block)
    lines = [f"# calls\t{calls}", "# name\ttarget\tsha256\tbytes\tparts (comma-separated, in order)"]
    lines += [f"{p.name}\t{p.target}\t{p.sha256}\t{p.size}\t{','.join(f for _, f, _ in p.parts)}" for p in payloads]
    for f in folders:
        (f / "MANIFEST.tsv").write_text("\n".join(lines) + "\n")
    return folders


def ignore(out: Path) -> None:
    """Make sure ``out`` is git-ignored (it must never travel unless carried)."""
    rel = out.resolve().relative_to(REPO) if out.resolve().is_relative_to(REPO) else None
    if rel is None:
        return
    check = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", str(rel)], check=False)
    if check.returncode != 0:
        raise SystemExit(f"error: {rel}/ is not git-ignored: add '/{rel}/' to .gitignore (it would travel with every call)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--vllm-trim",
        type=Path,
        help=f"an already trimmed vLLM {VLLM_VERSION} build (*.tar.xz.partNN + SHA256SUMS); default: built here from PyPI",
    )
    ap.add_argument("--out", type=Path, default=REPO / ".gpu-kit", help="git-ignored output folder (default .gpu-kit)")
    ap.add_argument("--call-mib", type=float, default=55.0, help="most MiB of payload per call folder (default 55)")
    ap.add_argument("--trl", action="store_true", help="also carry TRL (the GRPOTrainer baseline of benchmarks.gpu.sides)")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    trimmed = args.vllm_trim.expanduser().resolve() if args.vllm_trim else None
    if trimmed is not None and not trimmed.is_dir():
        ap.error(f"--vllm-trim {trimmed}: not a folder")
    out.mkdir(parents=True, exist_ok=True)
    ignore(out)
    cache = out / "cache"
    cache.mkdir(exist_ok=True)
    checkout = checkout_bytes()
    capacity = int(min(args.call_mib * MIB, CALL_LIMIT - checkout - 2 * MIB))
    payloads = payloads_of(cache, vllm_trim=trimmed, trl=args.trl)
    for p in payloads:
        p.sha256 = sha256(p.path)
    calls = lay_out(payloads, capacity)
    folders = write_calls(payloads, calls, out)
    print(f"\ncheckout (tracked + untracked, not ignored): {checkout:,} bytes; payload per call at most {capacity:,} bytes")
    for p in payloads:
        calls_of = sorted({c for c, _, _ in p.parts})
        print(f"  {p.name:70s} -> {p.target:10s} {p.size:>11,} B  call {','.join(map(str, calls_of))}  sha256 {p.sha256}")
    total = 0
    for f in folders:
        files = sorted(f.iterdir())
        nbytes = sum(x.stat().st_size for x in files)
        total += nbytes
        print(
            f"{f.relative_to(out.parent) if out.parent in f.parents else f}: {nbytes:,} bytes ({nbytes / MIB:.1f} MiB; with the checkout {(nbytes + checkout) / MIB:.1f} of 64 MiB)"
        )
        for x in files:
            print(f"    {x.name:76s} {x.stat().st_size:>11,}  {sha256(x)}")
    print(
        f"total {total:,} bytes ({total / MIB:.1f} MiB) in {calls} staging calls: bash benchmarks/gpu/stage.sh 1 .. {calls}, carry .gpu-kit/callK"
    )


if __name__ == "__main__":
    main()
