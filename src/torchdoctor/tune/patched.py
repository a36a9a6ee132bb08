"""The diff, checked by running it: the user's files with the diff applied are copied into the
tune's work folder and the patched script runs for a few steps without knobs, as the user would
run it once the diff is applied. A diff that breaks the script (a keyword given twice, a call
whose signature differs on this path) fails here, not on the user's machine.

The copy keeps the script's folder layout: edited files beside the script (or below its folder)
are copied to the same place under the work folder, which comes first on the import path, and the
script's own folder follows it, so unedited modules still import. An edited file outside the
script's folder cannot be shadowed this way: such a diff is not checked, and the check says so.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from torchdoctor.knobs.diff import patched_files
from torchdoctor.tune.runner import TuneSetup
from torchdoctor.tune.trial import RunRequest, observe_run

#: Steps the patched script runs: enough to pass construction, a forward, a backward and an
#: optimizer step on each path the first steps take. Nothing is timed: the run is observed by the
#: step hooks alone (no profiler, memory step or output samples) and ends after these steps.
CHECK_WARMUP_STEPS, CHECK_STEPS = 2, 2
PATCHED_ROLE = "patched"


def check_patched(setup: TuneSetup, values: dict[str, Any], intercepted: list[dict[str, Any]],
                  record: Any) -> dict[str, Any] | None:
    """Run the script with the diff of the kept knobs `values` applied; the result's
    `diff_check` (`ok`, `reason`, `run_id`), or None when there is no diff."""
    files = patched_files(setup.script, values, intercepted, record)
    if not files:
        return None
    home = setup.script.resolve().parent
    outside = [str(path) for path in files if not path.resolve().is_relative_to(home)]
    if outside:
        return {"ok": None, "run_id": None,
                "reason": f"not checked: the diff edits files outside the script's folder ({', '.join(outside)})"}
    folder = setup.work_dir / setup.tune_id / "patched"
    for path, text in files.items():
        copy = folder / path.resolve().relative_to(home)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(text)
    config = dataclasses.replace(setup.config, warmup_steps=CHECK_WARMUP_STEPS)
    request = RunRequest({}, PATCHED_ROLE, folder / "run", timing_steps=CHECK_STEPS, steps_only=True,
                         python_path=(str(home),))
    run = observe_run(folder / setup.script.resolve().name, setup.args, config, request)
    if run.failure:
        return {"ok": False, "run_id": run.run_id, "reason": f"the patched script failed: {run.failure[1]}"}
    steps = len(run.record.steps) if run.record else 0
    return {"ok": True, "run_id": run.run_id,
            "reason": f"the patched script ran {steps} steps without knobs after {CHECK_WARMUP_STEPS} warm-up step(s)"}
