"""Accelerator facts the planner needs.

Sources, per GPU (:attr:`GPUSpec.source` repeats them):

* **H200, H100**: NVIDIA H100 / H200 SXM datasheets (memory, HBM bandwidth, dense bf16 rate,
  NVLink 4 at 900 GB/s bidirectional per GPU). ``memory_gib`` is what ``torch.cuda.mem_get_info``
  reports as total on the card (an H200 reads 143,771 MiB in nvidia-smi; the CUDA context takes
  about 0.5 GiB of it).
* **A10G** (AWS's A10 variant in ml.g5 / g5 instances): NVIDIA A10 datasheet and AWS's G5
  instance page: 24 GB GDDR6 (about 22 GiB left to a process), 600 GB/s, 70 TFLOP/s dense bf16
  on the tensor cores as AWS quotes it for the A10G; no NVLink, so GPU-to-GPU and host traffic
  both go over PCIe 4.0 x16 (about 16 GB/s per direction).
* **RTXPRO6000** (NVIDIA RTX PRO 6000 Blackwell Server Edition; 2 per ml.g7e.12xlarge, the
  workers of AWS's SkyRL-on-HyperPod walkthrough): NVIDIA's RTX PRO 6000 Blackwell figures as
  announced at GTC 2025 and reported by the press (the Server Edition datasheet itself was not
  available to this project's sources): 96 GB GDDR7 on a 512-bit bus at 28 Gbps, 1,792 GB/s,
  4,000 AI TOPS at FP4 *with sparsity*. The dense bf16 rate is derived, not quoted: 4,000 / 2
  (sparsity) / 4 (FP4 -> bf16, two halvings of the tensor-core rate) = 500 TFLOP/s. About 94 GiB
  are left to a process (not measured here). No NVLink: PCIe 5.0 x16 (about 32 GB/s per
  direction, the A10G's PCIe 4.0 figure doubled). A Server Edition may run lower clocks than
  these figures, so treat the planner's time figures on it as optimistic.

The planner's step-time efficiency factors (:data:`hyperpod_rl.plan.throughput.TRAIN_EFFICIENCY`
and the rest) were fitted on H200 measurements only (:attr:`GPUSpec.fitted`); on any other GPU
they are applied to that GPU's datasheet rates, so its time figures are extrapolated and the plan
says so. The memory model counts bytes and does not depend on the GPU.
"""

from __future__ import annotations

from pydantic import Field

from hyperpod_rl.base import Model
from hyperpod_rl.errors import ConfigError

__all__ = ["CALIBRATION_GPU", "GPUS", "GPUSpec", "gpu_spec"]


class GPUSpec(Model):
    """One accelerator model (rates are datasheet figures)."""

    name: str
    memory_gib: float = Field(gt=0, description="GPU memory a process can allocate, GiB")
    bf16_flops: float = Field(gt=0, description="dense bf16 tensor-core rate, FLOP/s (datasheet)")
    hbm_bytes_per_s: float = Field(gt=0, description="memory bandwidth, bytes/s (datasheet)")
    nvlink_bytes_per_s: float = Field(
        gt=0, description="GPU-to-GPU bandwidth per direction per GPU, bytes/s (NVLink; PCIe where the GPU has no NVLink)"
    )
    host_bytes_per_s: float = Field(default=25e9, gt=0, description="host<->GPU copy rate (PCIe 5 x16, pinned), bytes/s")
    fitted: bool = Field(default=False, description="the planner's step-time factors were fitted on this GPU (only the H200)")
    source: str = Field(default="", description="where the figures come from")


#: The GPU the planner's calibration was measured on (``benchmarks/results/planner_calibration.json``).
CALIBRATION_GPU = "H200"

#: Short name (``--gpu``, ``PlanInput.gpu``) -> the GPU's figures.
GPUS: dict[str, GPUSpec] = {
    "H200": GPUSpec(
        name="NVIDIA H200",
        memory_gib=139.8,
        bf16_flops=989.4e12,
        hbm_bytes_per_s=4.8e12,
        nvlink_bytes_per_s=450e9,
        fitted=True,
        source="NVIDIA H200 SXM datasheet; memory as torch.cuda.mem_get_info reads it on an H200",
    ),
    "H100": GPUSpec(
        name="NVIDIA H100 80GB HBM3",
        memory_gib=79.1,
        bf16_flops=989.4e12,
        hbm_bytes_per_s=3.35e12,
        nvlink_bytes_per_s=450e9,
        source="NVIDIA H100 SXM datasheet",
    ),
    "A10G": GPUSpec(
        name="NVIDIA A10G",
        memory_gib=22.0,
        bf16_flops=70e12,
        hbm_bytes_per_s=600e9,
        nvlink_bytes_per_s=16e9,
        host_bytes_per_s=16e9,
        source="NVIDIA A10 datasheet and AWS EC2 G5 page (24 GB GDDR6, 600 GB/s, 70 TFLOP/s dense bf16); no NVLink: PCIe 4.0 x16",
    ),
    "RTXPRO6000": GPUSpec(
        name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
        memory_gib=94.0,
        bf16_flops=500e12,
        hbm_bytes_per_s=1.792e12,
        nvlink_bytes_per_s=32e9,
        host_bytes_per_s=25e9,
        source="NVIDIA RTX PRO 6000 Blackwell GTC 2025 figures as reported (96 GB GDDR7, 1,792 GB/s, 4,000 FP4 AI TOPS sparse); "
        "dense bf16 500 TFLOP/s derived from them, not quoted; no NVLink: PCIe 5.0 x16; the Server Edition datasheet was not read",
    ),
}


def gpu_spec(name: str) -> GPUSpec:
    """Look up a GPU of :data:`GPUS` by its short name, case-insensitively (``"h200"``, ``"A10G"``).

    Raises:
        ConfigError: unknown name (the message lists the known GPUs).
    """
    for key, spec in GPUS.items():
        if key.casefold() == name.strip().casefold():
            return spec
    known = ", ".join(f"{key} ({spec.name}, {spec.memory_gib:g} GiB)" for key, spec in GPUS.items())
    raise ConfigError(f"gpu {name!r} is not known to the planner; use one of {known}")
