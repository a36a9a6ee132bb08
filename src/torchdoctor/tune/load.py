"""The load other processes put on the machine while the runs of a tune ran, from each run's
system sampler (`Record.system`): the whole machine's CPU use less the script's own (its child
processes included), in cores. What a knob whose effect depends on the machine's state (threads,
DataLoader workers) was decided under, and what made a trial too noisy to decide."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from torchdoctor.knobs.base import environment, system_summary
from torchdoctor.tune.trial import KEPT, Run, Trial

#: Other processes keeping more than this many cores busy on average make a run "loaded": a
#: decision taken then may not hold on a quiet machine.
LOADED_CORES = 0.5


@dataclass(frozen=True, slots=True)
class Load:
    """`other_cores`: the median over the runs of the cores other processes kept busy during a
    run's timing window; `cores`: the machine's; `runs`: how many runs were sampled."""

    other_cores: float
    cores: int
    runs: int

    @property
    def loaded(self) -> bool:
        return self.other_cores > LOADED_CORES

    def text(self) -> str:
        return (f"other processes kept {self.other_cores:.1f} of the {self.cores} cores busy "
                f"(median of {self.runs} runs)")

    def to_dict(self) -> dict[str, Any]:
        return {"other_cores": round(self.other_cores, 2), "cores": self.cores, "runs": self.runs,
                "loaded": self.loaded}


def other_cores(run: Run) -> tuple[float, int] | None:
    """(cores other processes kept busy during `run`'s window, the machine's cores), or None
    when its sampler saw nothing."""
    record = run.record
    if record is None:
        return None
    summary = system_summary(record)
    machine, own = summary.machine_cpu_percent_mean, summary.process_cpu_percent_mean
    if machine is None or own is None:
        return None
    cpu = environment(record).cpu
    cores = int(cpu.logical_cores or 1) if cpu is not None else 1
    return max(0.0, machine / 100 * cores - own / 100), cores


def load_seen(runs: Sequence[Run]) -> Load | None:
    """The load during `runs`, or None when no run was sampled."""
    seen = [figures for figures in map(other_cores, runs) if figures is not None]
    if not seen:
        return None
    return Load(statistics.median(busy for busy, _ in seen), seen[0][1], len(seen))


#: Knobs whose effect depends on what else runs on the cores: fewer intra-op threads, or more
#: DataLoader workers, win against another job's processes and may lose on a quiet machine.
LOAD_DEPENDENT = ("threads", "num_workers", "prefetch_factor", "persistent_workers")


def decided_under_load(trials: Sequence[Trial], confirmation: Sequence[Run] = ()) -> dict[str, Load]:
    """Kept knobs of LOAD_DEPENDENT whose trial ran while other processes loaded the machine:
    knob -> the load seen during that trial's runs (both sides). None when the `confirmation`'s
    runs (baseline and kept knobs interleaved, the figure reported) were sampled on a machine
    that was not loaded: that decision did not depend on another job's load."""
    confirmed_under = load_seen(confirmation)
    if confirmed_under is not None and not confirmed_under.loaded:
        return {}
    found: dict[str, Load] = {}
    for trial in trials:
        if trial.status != KEPT or trial.knob not in LOAD_DEPENDENT:
            continue
        load = load_seen(trial.runs + trial.reference)
        if load is not None and load.loaded:
            found[trial.knob] = load
    return found


def load_notes(loads: dict[str, Load], kept: dict[str, Any]) -> list[dict[str, Any]]:
    """The result's `search.load_dependent`: each such knob, its value, the load and what to do."""
    return [{"knob": name, "value": kept.get(name), "load": load.to_dict(),
             "note": (f"{name}={kept.get(name)!r} was decided while {load.text()}: it may hold only under "
                      f"that load, so no permanent edit is offered; re-confirm it on a quieter machine "
                      f"(tune --knobs {name})")}
            for name, load in loads.items()]
