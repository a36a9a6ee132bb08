"""Rules over a whole run (`torchdoctor watch`): what changed as the run went on, read from the
Record's `whole_run.trends` (torchdoctor.goodput.trends measures each, its numbers in `figures`).

Upside is the run time the fix saves over the run's wall time (the trend's `upside_s` / `wall_s`);
for memory growth, the grown memory over the last reading (a fraction of memory, as in the memory
layer). Sources: the guides' "measure real speed with a time.time() around the whole training loop"
and "saving a checkpoint to a shared file system can take longer than the training itself"; PyTorch
docs for torch.distributed.checkpoint.async_save, torch.inference_mode and DataLoader's
persistent_workers.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.goodput.section import Trend
from torchdoctor.rules.base import Fix, Hit, rule, severity_at
from torchdoctor.rules.evidence import Evidence

SHARE_WARNING, SHARE_PROBLEM = 0.05, 0.20  # run time the fix saves over the run's wall time
GROWTH_PROBLEM = 0.5  # memory grown over the run / the last reading: half the memory is the leak


def _run_time_hit(ev: Evidence, kind: str, explanation: str, fix: Fix) -> Hit | None:
    """The Hit of the whole run's largest `kind` trend: its title, its figures and the run time at
    stake. Severity by the share of the run it takes (a periodic stall's whole time, else what the
    fix saves): info below SHARE_WARNING."""
    found = ev.trend(kind)
    if found is None:
        return None
    trend, wall = found
    saved = trend.upside_s or 0.0
    share = min(1.0, saved / wall)
    cost = trend.figures.get("run_share_fraction", share)  # what it takes of the run, not what a fix saves
    severity = severity_at(cost, SHARE_WARNING, SHARE_PROBLEM) or "info"
    evidence: dict[str, Any] = {"cause": trend.evidence, "saved_s": saved, "run_wall_s": wall,
                                **trend.figures}
    return Hit(severity, trend.title, share, evidence, f"{explanation} {trend.advice}.", fix)


def _period(trend: Trend) -> int:
    return int(trend.figures.get("period_steps", 0)) or 100


@rule("TD-MEM-006", "memory")
def memory_grows_with_steps(ev: Evidence) -> Hit | None:
    """Over a whole run, memory (CUDA allocated, else RSS) rises with the step count along a line
    (r² >= 0.8, at least 32 MiB over the run; `whole_run.trends` kind `memory_growth`). Warning;
    problem when the growth is half of the last reading or more. Upside: the grown memory over the
    last reading. Guides' troubleshooting row "memory grows every step -> tensors kept alive"."""
    found = ev.trend("memory_growth")
    if found is None:
        return None
    trend, _ = found
    grown = trend.figures.get("last_bytes", 0.0) - trend.figures.get("first_bytes", 0.0)
    share = min(1.0, max(0.0, grown / trend.figures["last_bytes"])) if trend.figures.get("last_bytes") else 0.0
    severity = "problem" if share >= GROWTH_PROBLEM else "warning"
    return Hit(severity, trend.title, share, {"cause": trend.evidence, "grown_bytes": grown, **trend.figures},
               f"Memory rose with every step of the run: {trend.advice}.",
               Fix("Keep Python numbers, not tensors, in whatever outlives the step.",
                   "losses.append(loss.item())  # not loss: the tensor keeps its graph alive\n"
                   "outputs.append(out.detach().cpu())  # if the outputs themselves are needed"))


@rule("TD-COMP-030", "compute")
def checkpoint_stalls(ev: Evidence) -> Hit | None:
    """Over a whole run, periodic slow steps spent in a function named like a checkpoint save
    (`save`, `checkpoint`, `ckpt`, `serializ`; `whole_run.trends` kind `checkpoint`): the period, the
    time each save takes and its share of the run. Upside: half the saves' time (saving half as
    often), over the run's wall time; warning when the saves take 5% of the run, problem from 20%. Guides: "saving a
    checkpoint to a shared file system can take longer than the training itself"; PyTorch docs for
    torch.distributed.checkpoint.async_save."""
    found = ev.trend("checkpoint")
    every = 2 * _period(found[0]) if found else 0
    return _run_time_hit(ev, "checkpoint", "The training waits while each checkpoint is written:",
                         Fix(f"Save every {every} steps, from rank 0 only, and asynchronously.",
                             "import torch.distributed.checkpoint as dcp\n"
                             f"if step % {every} == 0:\n"
                             "    if pending is not None:\n"
                             "        pending.result()  # the previous save has finished\n"
                             "    pending = dcp.async_save({\"model\": model.state_dict()},\n"
                             "                             checkpoint_id=f\"ckpt/{step}\")"))


@rule("TD-COMP-027", "compute")
def evaluation_stalls(ev: Evidence) -> Hit | None:
    """Over a whole run, periodic slow steps spent in a function named like an evaluation (`eval`,
    `valid`, `test`, `infer`; `whole_run.trends` kind `evaluation`): the period, each pass's time and
    its share of the run. Upside: half the passes' time (evaluating half as often), over the run's
    wall time; warning when the passes take 5% of the run, problem from 20%. PyTorch docs for torch.inference_mode and
    Module.eval; guides' advice to time the whole loop."""
    found = ev.trend("evaluation")
    every = 2 * _period(found[0]) if found else 0
    return _run_time_hit(ev, "evaluation", "The training stops for each evaluation pass:",
                         Fix(f"Evaluate every {every} steps (or on a subset), without autograd.",
                             f"if step % {every} == 0:\n"
                             "    model.eval()\n"
                             "    with torch.inference_mode():\n"
                             "        evaluate(model, val_loader)\n"
                             "    model.train()"))


@rule("TD-COMP-028", "compute")
def periodic_stalls(ev: Evidence) -> Hit | None:
    """Over a whole run, slow steps recur at a fixed period in a function of the script that is
    neither a checkpoint nor an evaluation (`whole_run.trends` kind `periodic`: logging, metrics,
    a sync): the function and line, the period and the share of the run. Upside: the stalls' whole
    time over the run's wall time; warning from 5%, problem from 20%."""
    found = ev.trend("periodic")
    every = _period(found[0]) if found else 0
    return _run_time_hit(ev, "periodic", "Every few steps the script runs something slow:",
                         Fix("Run it less often, or move it off the training loop's thread.",
                             f"if step % {4 * every} == 0:  # was every {every}\n"
                             "    log_metrics(loss.item())"))


@rule("TD-COMP-029", "compute")
def step_time_drifts(ev: Evidence) -> Hit | None:
    """Over a whole run, steady steps (under twice the median) get slower: the last tenth's median
    step is 1.15x the first tenth's or more (`whole_run.trends` kind `step_drift`, at least 100
    steady steps). Upside: every steady step's time beyond the first tenth's median, over the run's
    wall time; warning from 5%, problem from 20%."""
    return _run_time_hit(ev, "step_drift", "The same step costs more late in the run than early:",
                         Fix("Profile an early and a late step and compare what grew.",
                             "with torch.profiler.profile() as prof:\n"
                             "    train_step(batch)  # once near the start, once near the end\n"
                             "print(prof.key_averages().table(sort_by=\"self_cpu_time_total\", row_limit=10))"))


@rule("TD-DATA-010", "data")
def slow_epoch(ev: Evidence) -> Hit | None:
    """Over a whole run, one epoch's steps are slower than the others' by more than 1% of the run
    (`whole_run.trends` kind `slow_epoch`): a first epoch reading cold storage or filling a cache.
    Upside: the slow epoch's extra time over the run's wall time; warning from 5%, problem from 20%.
    PyTorch DataLoader docs (persistent_workers, prefetch_factor)."""
    return _run_time_hit(ev, "slow_epoch", "One epoch ran slower than the others:",
                         Fix("Keep the workers and what they cached across epochs, or cache the dataset.",
                             "loader = DataLoader(dataset, batch_size=64, num_workers=4,\n"
                             "                    persistent_workers=True, prefetch_factor=4)"))


@rule("TD-COMP-033", "compute")
def operators_change_late(ev: Evidence) -> Hit | None:
    """Over a whole run, the periodic profiler windows (`watch --profile-every`) show other
    operators late in the run than early: an operator's share of the last window's self time is 10
    points or more away from the first window's (`whole_run.trends` kind `profile_change`). Info:
    what the change costs is not known from the windows alone (upside 0); the step time drift
    (TD-COMP-029), if any, says it."""
    found = ev.trend("profile_change")
    if found is None:
        return None
    trend, wall = found
    return Hit("info", trend.title, 0.0, {"cause": trend.evidence, "run_wall_s": wall, **trend.figures},
               f"The steps do different work late in the run than early: {trend.advice}.",
               Fix("Diagnose the late part of the run: let the early steps pass before measuring.",
                   "torchdoctor diagnose --warmup-steps 20000 -- train.py  # steps late in the run"))


@rule("TD-COMP-032", "compute")
def recompiles_mid_run(ev: Evidence) -> Hit | None:
    """Over a whole run, torch.compile compiles again after warm-up: torch._dynamo's graph count
    (`counters["stats"]["unique_graphs"]`, read once a second) rose after the first lean step
    (`whole_run.trends` kind `recompile`), each rise placed at the slowest step since the reading
    before it. Upside: those steps' time beyond the median over the run's wall time; warning from
    5%, problem from 20%. PyTorch docs: torch.compile troubleshooting (TORCH_LOGS=recompiles,
    torch._dynamo.mark_dynamic)."""
    return _run_time_hit(ev, "recompile", "Compiled code was thrown away and compiled again mid-run:",
                         Fix("Find the guard that failed, then mark the varying dimension dynamic.",
                             "# TORCH_LOGS=recompiles python train.py  names the guard that failed\n"
                             "torch._dynamo.mark_dynamic(x, 0)  # before the call: dim 0 varies\n"
                             "out = compiled_model(x)"))
