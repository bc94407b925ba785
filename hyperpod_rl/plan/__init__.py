"""GPU memory and throughput planner for Qwen3-VL GRPO + LoRA runs (pure Python: no torch).

>>> from hyperpod_rl.plan import PlanInput, plan
>>> p = plan(PlanInput(model="8B", micro_train_batch_size_per_gpu=8, gpus_per_node=8))  # doctest: +SKIP
>>> p.fits, p.verdicts[0]  # doctest: +SKIP
"""

from hyperpod_rl.plan.hardware import GPUS, GPUSpec, gpu_spec
from hyperpod_rl.plan.images import image_patches, image_tokens, smart_resize
from hyperpod_rl.plan.inputs import ALL_LINEAR, PlanInput
from hyperpod_rl.plan.memory import CALIBRATION, MemoryBreakdown, lora_params, policy_update_memory
from hyperpod_rl.plan.planner import KVCache, Plan, ScalingPoint, plan, predict_scaling
from hyperpod_rl.plan.shapes import QWEN3_VL_SHAPES, ModelShape, VisionShape, model_shape, shape_from_hf_config
from hyperpod_rl.plan.throughput import COMM, TRAIN_EFFICIENCY, StepTime, comm_seconds, step_time, train_flops_per_sample

__all__ = [
    "ALL_LINEAR",
    "CALIBRATION",
    "COMM",
    "GPUS",
    "QWEN3_VL_SHAPES",
    "TRAIN_EFFICIENCY",
    "GPUSpec",
    "KVCache",
    "MemoryBreakdown",
    "ModelShape",
    "Plan",
    "PlanInput",
    "ScalingPoint",
    "StepTime",
    "VisionShape",
    "comm_seconds",
    "gpu_spec",
    "image_patches",
    "image_tokens",
    "lora_params",
    "model_shape",
    "plan",
    "policy_update_memory",
    "predict_scaling",
    "shape_from_hf_config",
    "smart_resize",
    "step_time",
    "train_flops_per_sample",
]
