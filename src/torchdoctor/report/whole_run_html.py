"""The whole run's timeline for the HTML report (`torchdoctor watch`): the step time and memory
series of `whole_run.timeline` with the badput bands placed on the run's clock, for
`static/report.js` to draw. Start-up and the end are bands of their own; each slow step of the
timeline is a band named by the part (checkpoint, evaluation, ...) it belongs to; each straggler
of a torchrun job is a band of its own, and each rank's goodput a row of a table."""

from __future__ import annotations

from typing import Any

from torchdoctor.goodput.section import Part, WholeRun
from torchdoctor.jsonfields import readable
from torchdoctor.record import Record
from torchdoctor.report.format import fmt_percent, fmt_seconds
from torchdoctor.report.watch import RANK_COLUMNS, rank_rows, straggler_words

SLOW = 2.0  # a point of the timeline this many times the median step is drawn as a band


def _claims(part: Part, step: int) -> bool:
    """Whether `step` is one of `part`'s steps: listed, or on its period from its first step."""
    if step in part.first_steps:
        return True
    return bool(part.period_steps and part.first_steps and step > part.first_steps[0]
                and (step - part.first_steps[0]) % part.period_steps == 0)


def _slow_label(run: WholeRun, step: int) -> tuple[str, str]:
    """(kind, words) of the part that holds slow step `step`, else a slow step of no named cause."""
    for part in run.parts:
        if part.kind in ("slow", "warmup", "windows") and _claims(part, step):
            return part.kind, part.cause or part.label
    return "slow", "a slow step"


def _seconds_of(run: WholeRun, *kinds: str) -> float:
    return sum(p.seconds for p in run.parts if p.kind in kinds)


def _bands(run: WholeRun) -> list[dict[str, Any]]:
    """Where on the run's clock the badput lies: start-up, each slow step, and the end."""
    start = _seconds_of(run, "startup", "top_level", "no_steps")
    bands = [{"start_s": 0.0, "end_s": start, "kind": "startup", "label": "start-up and the script's top level"}]
    timeline = run.timeline
    ends, durations, steps = timeline.get("t_s", []), timeline.get("step_s", []), timeline.get("step", [])
    for end, duration, step in zip(ends, durations, steps):
        if None in (end, duration, step, run.step_s) or duration < SLOW * run.step_s:
            continue
        kind, label = _slow_label(run, int(step))
        bands.append({"start_s": end - duration, "end_s": end, "kind": kind,
                      "label": f"step {int(step)}: {label}, {fmt_seconds(duration)}"})
    bands += [{"start_s": s.start_s, "end_s": s.end_s, "kind": "straggler", "label": straggler_words(s, run.wall_s)}
              for s in run.stragglers]
    tail = _seconds_of(run, "tail", "exit")
    bands.append({"start_s": run.wall_s - tail, "end_s": run.wall_s, "kind": "end",
                  "label": "after the last step, and the exit"})
    return [b for b in bands if b["end_s"] > b["start_s"]]


def whole_run_view(record: Record) -> dict[str, Any] | None:
    """What the page's whole-run chart draws, or None without a readable `whole_run` section."""
    run = readable(WholeRun.from_dict, record.whole_run)
    if run is None:
        return None
    summary = (f"{fmt_seconds(run.wall_s)} from the process's start to its exit, {run.steps} steps; "
               f"goodput (steady steps) {fmt_seconds(run.goodput_s)}, {fmt_percent(run.goodput_share)}")
    return {"summary": summary, "wall_s": run.wall_s, "median_s": run.step_s, "bands": _bands(run),
            "rank_columns": list(RANK_COLUMNS), "ranks": rank_rows(run),
            "stragglers": [straggler_words(s, run.wall_s) for s in run.stragglers],
            **{k: run.timeline.get(k, []) for k in ("t_s", "step_s", "memory_t_s", "memory_bytes")}}
