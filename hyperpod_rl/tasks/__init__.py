"""The task plug-in API: the protocol a visual RL task implements, its registry and shared helpers.

The lowest task layer: it imports only :mod:`hyperpod_rl.errors` and :mod:`hyperpod_rl.base`
(and no torch, Ray or skyrl-gym at import time; :mod:`hyperpod_rl.tasks.env` and the env
functions of :mod:`~hyperpod_rl.tasks.registry` load skyrl-gym when used). Tasks (the maze,
third-party packages) sit on top of it; everything above them reaches a task through
:func:`get_task`. How to write a task: ``docs/tasks.md``.

Modules:
    protocol: :class:`Task`, :class:`TaskBase`, :class:`TaskOptions`, :class:`AuditCase`,
        :data:`SPLITS`, :data:`REQUIRED_COLUMNS`, ``RowObject``, ``SplitCounts``, ``parse_model``.
    registry: the ``hyperpod_rl.tasks`` entry-point group: :func:`get_task`, :func:`task_names`,
        :func:`register_task`, :func:`make_env`, :func:`register_env`.
    dataset: :func:`content_hash`, :func:`derive_seed`, :func:`quotas`, :func:`check_splits`,
        :func:`write_parquet`, :func:`read_rows`, :func:`clean_messages`, ``StratumMix``.
    vision: :func:`image_token_count` (qwen-vl-utils sizing), :func:`image_part`,
        :func:`decode_image_part`, :func:`encode_png`.
    metrics: :func:`mean_metrics`, :func:`stratum_breakdown`, :func:`metric_spec`, :func:`turn_columns`, :func:`item_names`,
        :func:`never_valid`, :func:`no_valid_answer_note`, ``episode_means``, ``multi_turn_means``.
    answer: the ``<answer>`` envelope (``extract_answer``) and a task's ``AnswerFormat``.
    messages: a user turn's content parts and the first messages (``user_content``, ``first_messages``).
    reward: ``round_reward`` and ``ProgressShaping`` (the progress-shaped multi-turn reward).
    audit: :func:`run_audit`, :class:`AuditReport`.
    env: :class:`~hyperpod_rl.tasks.env.SingleTurnTaskEnv` and the bases of a task's own env,
        ``TaskEnv`` and ``MultiTurnTaskEnv`` (imports skyrl-gym; import it directly).

Example:
    >>> from hyperpod_rl.tasks import get_task
    >>> get_task("maze").env_class
    'hyperpod_rl.maze'
"""

from hyperpod_rl.tasks.audit import AuditReport, Disagreement, load_reward_fn, run_audit
from hyperpod_rl.tasks.dataset import (
    check_splits,
    clean_messages,
    content_hash,
    count_rows,
    derive_seed,
    quotas,
    read_rows,
    write_dataset,
    write_parquet,
)
from hyperpod_rl.tasks.metrics import (
    MetricSpec,
    item_names,
    mean_metrics,
    metric_spec,
    never_valid,
    no_valid_answer_note,
    stratum_breakdown,
    turn_columns,
)
from hyperpod_rl.tasks.protocol import REQUIRED_COLUMNS, SPLITS, AuditCase, Row, Task, TaskBase, TaskOptions
from hyperpod_rl.tasks.registry import (
    BUILTIN_TASKS,
    DEFAULT_TASK,
    ENTRY_POINT_GROUP,
    check_task,
    get_task,
    make_env,
    register_env,
    register_task,
    task_for_env_class,
    task_names,
    task_of_row,
    task_sources,
    unregister_task,
)
from hyperpod_rl.tasks.vision import (
    decode_image,
    decode_image_part,
    encode_png,
    flatten_alpha,
    image_part,
    image_token_count,
    open_image,
    round_up_px,
    smart_resize,
    to_rgb,
)

__all__ = [
    "BUILTIN_TASKS",
    "DEFAULT_TASK",
    "ENTRY_POINT_GROUP",
    "REQUIRED_COLUMNS",
    "SPLITS",
    "AuditCase",
    "AuditReport",
    "Disagreement",
    "MetricSpec",
    "Row",
    "Task",
    "TaskBase",
    "TaskOptions",
    "check_splits",
    "check_task",
    "clean_messages",
    "content_hash",
    "decode_image",
    "decode_image_part",
    "flatten_alpha",
    "open_image",
    "to_rgb",
    "derive_seed",
    "encode_png",
    "get_task",
    "image_part",
    "image_token_count",
    "load_reward_fn",
    "make_env",
    "mean_metrics",
    "never_valid",
    "no_valid_answer_note",
    "item_names",
    "turn_columns",
    "metric_spec",
    "quotas",
    "count_rows",
    "read_rows",
    "register_env",
    "register_task",
    "round_up_px",
    "run_audit",
    "smart_resize",
    "stratum_breakdown",
    "task_for_env_class",
    "task_names",
    "task_of_row",
    "task_sources",
    "unregister_task",
    "write_dataset",
    "write_parquet",
]
