"""The GPU kit: the folders to send to the H200 machine, one per device call (run on the developer's machine).

    python -m benchmarks.gpu.kit --vllm-kit DIR [--out .gpu-kit] [--call-mib 55]

``DIR`` is the trimmed vLLM 0.25.0 kit (``vllm/*.part00``, ``*.part01``, ``SHA256SUMS``,
``wheels/``, ``stubs/``; see docs/gpu.md). This script copies what it needs from there into
``--out`` (git-ignored); nothing in the package ever reads DIR. What travels:

================================  ==============  ==========================================================
payload                           installs into   what
================================  ==============  ==========================================================
``vllm-0.25.0-trim.tar.xz``       site            vLLM 0.25.0 (DIR's trimmed build; its parts re-joined and
                                                  checked against DIR's SHA256SUMS here, then cut again)
``vllm-stubs.tar.gz``             site            DIR's ``llguidance`` / ``xgrammar`` import stubs
Ray 2.57.0 wheel, trimmed         site            without Java jars, RLlib, Serve, LLM, the dashboard's source
                                                  map; raylet, GCS server, ``_raylet.so`` stripped; RECORD redone
DIR's wheels                      site            pydantic, msgspec, pyzmq, openai, fastapi, ... (offline vLLM)
:data:`TRL_NEEDS` ... wheels      site            TRL's GRPOTrainer, Ray's dashboard/job agent, vLLM's OpenAI
                                                  server, ours (:data:`RAY_NEEDS`, :data:`VLLM_SERVER_NEEDS`,
                                                  :data:`OWN_NEEDS`)
:data:`SKYRL_NEEDS` wheels        site-skyrl      SkyRL 0.4.0 + its pins (transformers 5.16.1, peft 0.18.1) and
                                                  what its trainer, FSDP worker, vLLM servers and router import
``flash-attn-standin.tar.gz``     site-skyrl      :data:`FLASH_ATTN_STANDIN`
================================  ==============  ==========================================================

Payload files are laid end to end and cut into ``callK/`` folders of at most ``--call-mib``
(default: 55 MiB, less if the checkout is large: one call carries 64 MiB with the checkout);
``MANIFEST.tsv`` (in every folder) names each payload, its sha256, size, target and parts.
``benchmarks/gpu/stage.sh K`` on the GPU machine stages call K, joins and checks every payload whose
parts have all arrived, unpacks the tars, pip-installs a target's wheels in one run once all are
there; the last call writes ``$HOME/stage/env.sh``.

Image packages (``/work/.library/device/KINDS.md``, "Python packages already there") are not
carried. Downloads and the trimmed Ray wheel are cached under ``<out>/cache`` (a second run takes
seconds; copying another checkout's ``.gpu-kit/cache`` reuses its downloads).
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

#: Ray's dashboard / job agent / runtime-env agent imports that the image lacks (traced on Ray 2.57:
#: each of these, made unimportable, breaks ray.dashboard.* modules), plus what they import.
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
#: TRL's GRPOTrainer baseline (REFERENCE §8: everything else it needs is on the image).
TRL_NEEDS = ("trl==1.16.0", "datasets==5.2.0", "dill==0.4.1", "multiprocess==0.70.19")
#: vLLM's OpenAI API server (SkyRL's vLLM server actor runs it): module-level imports of
#: vllm/entrypoints/openai/api_server.py and what they import, beyond DIR's wheels.
VLLM_SERVER_NEEDS = (
    "uvicorn==0.54.0",
    "watchfiles==1.3.0",
    "model-hosting-container-standards==0.1.16",
    "jmespath==1.1.0",
)
#: The project's own needs that the image lacks (pyproject dependencies; pydantic is in DIR's wheels).
OWN_NEEDS = ("tenacity==9.2.1", "platformdirs==4.14.9", "skyrl-gym==0.4.0", "omegaconf==2.4.0")
#: SkyRL 0.4.0 and its pins, installed in front of ``site`` only for SkyRL runs.
SKYRL_NEEDS = (
    "skyrl==0.4.0",
    "transformers==5.16.1",
    "peft==0.18.1",
    "loguru==0.7.3",
    "torchdata==0.11.0",
    "orjson==3.13.0",
    "cloudpathlib==0.26.0",
    "vllm-router==0.1.17",
    "setproctitle==1.3.7",
)

#: Ray parts left out (none is imported by Ray core, the dashboard, job submission, Ray Train or SkyRL).
RAY_DROP = (
    "ray/jars",
    "ray/rllib",
    "ray/serve",
    "ray/llm",
    "ray/dashboard/client/build/static/js/main.7d37dd55.js.map",
)

#: A stand-in ``flash_attn`` (GPU machine only): SkyRL 0.4's ``workers/model_wrapper.py:13`` imports
#: ``flash_attn.bert_padding.{pad_input, unpad_input}`` at module level; flash-attn 2.8.3 (SkyRL's
#: pin) is a compiled package built for torch 2.13 and is not carried. The run sets
#: ``trainer.flash_attn=false`` and ``trainer.remove_microbatch_padding=false``, so these are
#: not called; they are written here (plain torch), not copied, and have no dist-info, so
#: transformers reports flash-attn as unavailable.
FLASH_ATTN_STANDIN = {
    "flash_attn/__init__.py": '"""Stand-in for flash-attn on the GPU test machine (benchmarks/gpu/kit.py): bert_padding only."""\n',
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


def vllm_payload(kit: Path, cache: Path) -> Payload:
    """DIR's two parts joined here and checked against its SHA256SUMS (then cut again to fit the calls)."""
    parts = sorted((kit / "vllm").glob("*.tar.xz.part*"))
    lines = [line.split() for line in (kit / "vllm" / "SHA256SUMS").read_text().splitlines() if line.strip()]
    if not parts or len(lines) != 1:
        raise SystemExit(f"error: {kit}/vllm has no *.tar.xz.partNN or no one-line SHA256SUMS: is --vllm-kit the vLLM kit folder?")
    want, joined_name = lines[0][0], lines[0][-1].lstrip("*")
    out = cache / "payloads" / joined_name
    if not out.exists() or sha256(out) != want:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("wb") as dst:
            for p in parts:
                with p.open("rb") as src:
                    shutil.copyfileobj(src, dst)
        if sha256(out) != want:
            out.unlink()
            raise SystemExit(f"error: joined {', '.join(p.name for p in parts)} do not match {joined_name} in SHA256SUMS")
    return Payload(joined_name, "site", out)


def payloads_of(kit: Path, cache: Path) -> list[Payload]:
    """Every payload, in the order they travel (vLLM first: the biggest, unpacked as soon as it is complete)."""
    wheels = cache / "wheels"
    out = [vllm_payload(kit, cache)]
    stubs = {str(p.relative_to(kit / "stubs")): p.read_bytes() for p in sorted((kit / "stubs").rglob("*")) if p.is_file()}
    out.append(Payload("vllm-stubs.tar.gz", "site", small_tar(stubs, cache / "payloads" / "vllm-stubs.tar.gz")))
    ray = trim = cache / "payloads" / "ray-2.57.0-cp312-cp312-manylinux2014_x86_64.whl"
    (ray_src,) = download(("ray==2.57.0",), wheels)
    stamp = trim.with_name(trim.name + ".from")
    key = f"{ray_src.name} {ray_src.stat().st_size} {RAY_DROP}"
    if not (trim.exists() and stamp.exists() and stamp.read_text() == key):
        print("trimming Ray's wheel (a minute or two on a busy machine)", flush=True)
        trim_ray_wheel(ray_src, trim)
        stamp.write_text(key)
    out.append(Payload(ray.name, "site", ray))
    for w in sorted((kit / "wheels").glob("*.whl")):
        out.append(Payload(w.name, "site", w))
    for w in download(TRL_NEEDS + RAY_NEEDS + VLLM_SERVER_NEEDS + OWN_NEEDS, wheels):
        out.append(Payload(w.name, "site", w))
    for w in download(SKYRL_NEEDS, wheels):
        out.append(Payload(w.name, "site-skyrl", w))
    standin = {k: v.encode() for k, v in FLASH_ATTN_STANDIN.items()}
    out.append(Payload("flash-attn-standin.tar.gz", "site-skyrl", small_tar(standin, cache / "payloads" / "flash-attn-standin.tar.gz")))
    names = [p.name for p in out]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise SystemExit(f"error: payload names collide: {sorted(dupes)} (a wheel in the kit and a download?)")
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
    ap.add_argument("--vllm-kit", type=Path, required=True, help="the vLLM 0.25.0 kit folder (vllm/, wheels/, stubs/)")
    ap.add_argument("--out", type=Path, default=REPO / ".gpu-kit", help="git-ignored output folder (default .gpu-kit)")
    ap.add_argument("--call-mib", type=float, default=55.0, help="most MiB of payload per call folder (default 55)")
    args = ap.parse_args(argv)
    kit, out = args.vllm_kit.expanduser().resolve(), args.out.resolve()
    if not (kit / "vllm").is_dir() or not (kit / "wheels").is_dir() or not (kit / "stubs").is_dir():
        ap.error(f"--vllm-kit {kit}: expected vllm/, wheels/ and stubs/ in it (the trimmed vLLM 0.25.0 kit)")
    out.mkdir(parents=True, exist_ok=True)
    ignore(out)
    cache = out / "cache"
    cache.mkdir(exist_ok=True)
    checkout = checkout_bytes()
    capacity = int(min(args.call_mib * MIB, CALL_LIMIT - checkout - 2 * MIB))
    payloads = payloads_of(kit, cache)
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
