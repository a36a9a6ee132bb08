"""`torchdoctor check --baseline NAME`: this tree (B) against a stored baseline (A), refusing one
recorded in another environment. A baseline cannot be interleaved: rounds of B are judged
unpaired against its observations (`rounds.against_stored`)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from torchdoctor.check.baseline import baseline_source, load_baseline
from torchdoctor.check.comparisons import choose_metric
from torchdoctor.check.config import CheckOptions
from torchdoctor.check.context import CheckContext, Collaborators
from torchdoctor.check.figures import fingerprint, fingerprint_differences, observation_figures
from torchdoctor.check.result import CheckResult
from torchdoctor.check.rounds import against_stored
from torchdoctor.check.runner import Runner
from torchdoctor.check.sides import script_path, this_tree
from torchdoctor.environment import Environment
from torchdoctor.errors import CheckError
from torchdoctor.record import Record


def compare_with_baseline(script: str, args: Sequence[str], name: str, options: CheckOptions,
                          collaborators: Collaborators) -> CheckResult:
    """Compare this tree (B) with the stored baseline NAME (A), with the baseline's windows."""
    context = CheckContext("baseline", script, args, options, collaborators)

    def body(context: CheckContext) -> None:
        document = load_baseline(name, context.open_store)
        _describe_baseline(context, name, document)
        path = script_path(script)
        _take_baseline_windows(context, document, path)
        side = this_tree(path)
        context.result.dirty = side.info["dirty"]
        runner = Runner.started(context, [side], args)
        context.progress.phase("pilot run")
        start = time.monotonic()
        pilot = runner.observe("B", purpose="pilot")
        pilot_s = time.monotonic() - start
        _refuse_another_environment(context, name, document, pilot)
        stored = document["observations"]
        runner.metric = context.result.gate_metric = choose_metric(context.result, stored[0],
                                                                   observation_figures(pilot))
        floor = max(context.options.policy.min_effect, document.get("noise") or 0.0)
        against_stored(context, runner, stored, floor=floor, round_s=pilot_s)

    return context.run(body)


def _describe_baseline(context: CheckContext, name: str, document: dict[str, Any]) -> None:
    """The result's baseline and side A."""
    result = context.result
    result.baseline = {k: document.get(k) for k in ("name", "created_at", "commit", "dirty", "script", "argv",
                                                    "noise", "settings")}
    result.baseline["source"] = baseline_source(name)
    result.a = {"name": "A", "label": f"baseline {name!r} ({document.get('created_at', '?')})",
                "commit": document.get("commit")}


def _take_baseline_windows(context: CheckContext, document: dict[str, Any], path: Path) -> None:
    """The baseline's windows replace the options' when they differ (with a warning, as does a
    baseline of another script than `path`)."""
    result = context.result
    if document.get("script") and document["script"] != path.name:
        result.warnings.append(f"the baseline measured {document['script']}, this check runs {path.name}")
    settings, options = document.get("settings") or {}, context.options
    if settings and (settings.get("warmup_steps"), settings.get("steps")) != (options.warmup_steps, options.steps):
        context.options = replace(options, warmup_steps=settings["warmup_steps"], steps=settings["steps"])
        result.warnings.append(f"the baseline's windows are used: --warmup-steps {settings['warmup_steps']} "
                               f"--steps {settings['steps']}")


def _refuse_another_environment(context: CheckContext, name: str, document: dict[str, Any], pilot: Record) -> None:
    """The environments of the baseline and of the pilot, in the result; CheckError (kind
    "env_mismatch") when they differ, since a comparison across them measures the machine."""
    here = fingerprint(Environment.or_empty(pilot.env))
    differences = fingerprint_differences(document["fingerprint"], here)
    context.result.env = {"a": document["fingerprint"], "b": here, "differences": differences}
    if differences:
        listed = "; ".join(f"{d['key']}: {d['a']!r} (baseline) vs {d['b']!r} (here)" for d in differences)
        raise CheckError(f"baseline {name!r} was recorded in another environment ({listed}); a comparison across "
                         "environments measures the machine, not the code: record a baseline on this kind of "
                         "machine (--save-baseline) or compare against a git ref (--against)",
                         kind="env_mismatch")
