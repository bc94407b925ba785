"""How to recover a damaged adapter file without deleting anything.

An adapter's files (peft's ``adapter_config.json`` and weights, this project's ``provenance.json``)
are written once, by the trainer, when a run ends. When one is damaged, the message of every
loader (loading a policy, serving, exporting, starting another run from it) says the same thing
(:func:`adapter_recovery`): set the damaged adapter aside, never delete it, and let the run export
it again from its newest checkpoint. Paths only: nothing heavy is imported here.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["adapter_recovery"]


def adapter_recovery(adapter_dir: str | Path) -> str:
    """What to do about a damaged file of the adapter at ``adapter_dir``, nothing deleted.

    A run's adapter (``<run dir>/adapter``, its run config beside it) is exported again by
    resubmitting the run once the damaged adapter is moved aside: the trainer resumes from the
    run's newest checkpoint and exports when it reaches the last step. A run with no checkpoint
    would train from step 0, so that is said. Any other adapter (a copy on shared storage) is
    copied again from where it came from.
    """
    adapter = Path(adapter_dir).expanduser()
    run = adapter.parent
    aside = f"move the adapter aside (mv {adapter} {adapter}.damaged; nothing is deleted)"
    if adapter.name != "adapter" or not ((run / "config.json").is_file() or (run / "manifest.json").is_file()):
        return (
            "copy it again from the run directory it came from (that run's adapter/), or restore it from a backup; "
            f"keep the damaged copy aside (mv {adapter} {adapter}.damaged) rather than deleting it"
        )
    if (run / "quickstart-options.json").is_file():
        resubmit = f"run hyperpod-rl quickstart --resume {run.name}"
    else:
        resubmit = f"resubmit the run (hyperpod-rl job submit {run / 'config.json'})"
    if any((run / "checkpoints").glob("step_*")):
        return f"{aside} and {resubmit}: it resumes from its newest checkpoint and exports the adapter again"
    return (
        f"restore it from a backup; run {run.name} kept no checkpoint, so its adapter can only be trained again: "
        f"{aside}, move {run / 'metrics.jsonl'} aside too, and {resubmit}"
    )
