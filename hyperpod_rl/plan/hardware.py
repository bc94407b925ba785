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
