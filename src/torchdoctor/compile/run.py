"""`torchdoctor compile`'s composition root: the script as written, then with Dynamo disabled."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from torchdoctor.compile.advice import advise
from torchdoctor.compile.compare import EAGER_ENV, compare_eager_compiled
from torchdoctor.observe import LaunchConfig, ObserveConfig, observe
from torchdoctor.record import Record, _new_run_id
from torchdoctor.report.progress import observation_progress
from torchdoctor.store import RunStore

SCHEMA_VERSION = 1


def _observe(script: str, args: Sequence[str], config: ObserveConfig, launch: LaunchConfig,
             store_path: Path) -> Record:
    from torchdoctor.workflow import run_dir_for

    run_id = _new_run_id()
    with observation_progress() as progress:
        return observe(script, args, config, launch, out_dir=run_dir_for(store_path, run_id),
                       progress=progress, run_id=run_id)


def compile_report(script: str, args: Sequence[str], config: ObserveConfig, launch: LaunchConfig, *,
                   store_path: Path, save: bool = True) -> tuple[dict[str, Any], list[Record]]:
    """Observe SCRIPT compiled (as written) and, if it compiled anything, eager; compare them.

    Returns the JSON-ready result (keys in docs/compile.md) and the Records (stored if `save`).
    """
    compiled = _observe(script, args, config, launch, store_path)
    records = [compiled]
    result: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "compiled_run_id": compiled.run_id,
                              "compile": compiled.compile, "comparison": None}  # fmt: skip
    if compiled.compile and compiled.steps:
        eager_launch = LaunchConfig(nproc_per_node=launch.nproc_per_node, torchrun_args=launch.torchrun_args,
                                    timeout_s=launch.timeout_s, extra_env={**launch.extra_env, **EAGER_ENV})
        eager = _observe(script, args, config, eager_launch, store_path)
        records.append(eager)
        if eager.steps:
            result["comparison"] = compare_eager_compiled(eager, compiled)
    result["advice"] = [a.to_dict() for a in advise(result["compile"], result["comparison"])]
    if save:
        with RunStore(store_path) as store:
            for record in records:
                store.save(record)
    return result, records
