"""Accelerator facts the planner needs.

Sources: NVIDIA H100 / H200 SXM datasheets (memory, HBM bandwidth, dense
bf16 rate, NVLink 4 at 900 GB/s bidirectional per GPU). ``usable_gib`` is what
``torch.cuda.mem_get_info`` reports as total on the card (an H200 reads
143,771 MiB in nvidia-smi; the CUDA context takes about 0.5 GiB of it).
"""

from __future__ import annotations

from pydantic import Field

from hyperpod_rl.base import Model
from hyperpod_rl.errors import ConfigError

__all__ = ["GPUS", "GPUSpec", "gpu_spec"]


class GPUSpec(Model):
    """One accelerator model."""

    name: str
    memory_gib: float = Field(gt=0, description="GPU memory a process can allocate, GiB")
    bf16_flops: float = Field(gt=0, description="dense bf16 tensor-core rate, FLOP/s (datasheet)")
    hbm_bytes_per_s: float = Field(gt=0, description="memory bandwidth, bytes/s (datasheet)")
    nvlink_bytes_per_s: float = Field(gt=0, description="NVLink bandwidth per direction per GPU, bytes/s")
    host_bytes_per_s: float = Field(default=25e9, gt=0, description="host<->GPU copy rate (PCIe 5 x16, pinned), bytes/s")


GPUS: dict[str, GPUSpec] = {
    "H200": GPUSpec(name="NVIDIA H200", memory_gib=139.8, bf16_flops=989.4e12, hbm_bytes_per_s=4.8e12, nvlink_bytes_per_s=450e9),
    "H100": GPUSpec(name="NVIDIA H100 80GB HBM3", memory_gib=79.1, bf16_flops=989.4e12, hbm_bytes_per_s=3.35e12, nvlink_bytes_per_s=450e9),
}


def gpu_spec(name: str) -> GPUSpec:
    """Look up ``H200`` or ``H100``.

    Raises:
        ConfigError: unknown name.
    """
    try:
        return GPUS[name]
    except KeyError:
        raise ConfigError(f"gpu {name!r} is not known to the planner; use one of {', '.join(GPUS)}") from None
