"""Compute-layer rules about how the step is set up: debug switches, grad mode, threads, cuDNN,
zero_grad, the optimizer's implementation, work outside the step's phases, Conv bias before BN.

Sources: the guides' key-metrics and troubleshooting tables; the PyTorch Performance Tuning Guide
and the docs of each switch named in the rules. (Device-utilisation and operator rules are in
compute.py.)
"""

from __future__ import annotations

import re

from torchdoctor.environment.system import others_material
from torchdoctor.estimates.threads import busy_worker_cores, competing, threads_in_fix
from torchdoctor.probe_values import ANOMALY, THREADS, ThreadsValue
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, rule, severity_at
from torchdoctor.rules.compute import PHASE_PROBLEM, PHASE_WARNING, _median_step_us, gpu_utilisation
from torchdoctor.rules.evidence import Evidence, known
from torchdoctor.rules.outside import calls_outside, computation_share, outside_fix, outside_text
from torchdoctor.rules.probed import measured_evidence, measured_phrase, no_clear_gain

# Slow-downs measured on the zoo's models (docs/rules-measured.md, "Measured constants"); best of 30 runs, CPU.
ANOMALY_SLOWDOWN = 2.5  # forward+backward under anomaly mode (compute_anomaly's MLP)
GRAD_MODE_SLOWDOWN = 1.07  # forward with autograd recording vs inference_mode (compute_grad_inference's MLP)
MANY_TENSORS = 50  # parameter tensors before the per-tensor loop's overhead matters
FOREACH_SPEEDUP = 1.67  # Adam foreach vs for-loop over 400 small tensors (compute_loop_optimizer's)


@rule("TD-COMP-007", "compute", knob="no_anomaly_detection", lint_topic="compute.debug_tools")
def anomaly_detection_on(ev: Evidence) -> Hit | None:
    """Autograd anomaly detection is on during the measured steps. PyTorch docs for
    torch.autograd.detect_anomaly ("should be enabled only for debugging"). Upside: what the
    observation's anomaly probe measured with it off (`probes.anomaly.speedup`: 1 - 1/speed-up);
    without a complete probe, the forward and backward share x (1 - 1/ANOMALY_SLOWDOWN), the
    slowdown measured on the zoo's MLP, marked "not measured" (it claimed x1.96 on the zoo's
    compute_anomaly where the fix measured x1.50: the cost is per autograd node, so it depends on
    the script's graph)."""
    if not ev.anomaly_detection():
        return None
    phases = ev.summary("forward_fraction") + ev.summary("backward_fraction")
    evidence = {"anomaly_detection": True, "forward_backward_fraction": round(phases, 4)}
    probe = ANOMALY.of(ev.record) or {}
    if probe.get("complete") and probe.get("speedup"):
        share = max(0.0, 1 - 1 / probe["speedup"])
        evidence.update(measured_evidence(probe))
        claim = f" With it off the step measured {measured_phrase(probe, 'alternating blocks with it off and on')}."
    else:
        share = phases * (1 - 1 / ANOMALY_SLOWDOWN)
        evidence.update(assumed_slowdown=ANOMALY_SLOWDOWN, upside_basis="assumed")
        claim = (f" Its cost is assumed: {ANOMALY_SLOWDOWN}x on forward and backward, as measured on a small MLP "
                 "(not measured on this run).")
    return Hit(severity_at(share, 0.0, 0.15) or "warning", "autograd anomaly detection is on", share, evidence,
               "Anomaly mode records a Python stack for every autograd node and checks every gradient for NaN."
               + claim,
               Fix("Turn it off outside debugging.",
                   "torch.autograd.set_detect_anomaly(False)  # or remove the detect_anomaly() context"))


@rule("TD-COMP-008", "compute", knob="inference_mode", lint_topic="compute.grad_without_backward")
def grad_without_backward(ev: Evidence) -> Hit | None:
    """Steps never call backward, yet autograd records every forward. PyTorch docs "Autograd
    mechanics: locally disabling gradient computation" (no_grad / inference_mode)."""
    state = ev.forward_state()
    if ev.step_detection() != "forward" or not state.grad_enabled or state.inference_mode:
        return None
    forward = ev.summary("forward_fraction")
    share = forward * (1 - 1 / GRAD_MODE_SLOWDOWN)
    return Hit(severity_at(share, 0.05, 0.5) or "info", "forward passes build autograd graphs that no backward uses",
               share, {"step_detection": "forward", "grad_enabled": True, "forward_fraction": round(forward, 4)},
               "Outside training the autograd graph and the tensors it keeps are pure overhead.",
               Fix("Run inference without autograd.", "with torch.inference_mode():\n    out = model(x)"))


def _thread_fix_speedup(threads: int, keep: int, worker_cores: float, cores: int) -> float:
    """The most the compute can speed up when `threads` intra-op threads (beside busy workers using
    `worker_cores`) on `cores` cores become `keep`: the smaller of two ceilings.
    - Contention: the threads and busy workers queued per core, (threads + worker cores) / cores,
      times the cores the kept threads get over the cores the threads get now (time-shared with
      the workers, `cores x threads / (threads + worker cores)`). Alone, this is the old estimate,
      in which the whole excess disappears: time-sharing itself loses no cycles, only the
      switching between the queued threads does, so it is the worst case, not the typical one.
    - Parallelism: the kept threads do at most the work of the cores they get, and the threads now
      at least one core's worth (or all the cores they get, if less). Intra-op threads speed a
      step up at most by the cores they run on; contention can at most lose that parallelism.
    Measured on the zoo's compute_threads (8 threads, 2 cores, docs/field.md): the contention
    ceiling alone claimed x3.6 for the fix's 2 threads; the parallelism ceiling claims x1.93, and
    the fix measured x1.31 (benchmarks/finding_upside.py, the runs' pace): still an over-claim, as
    the oversubscribed threads got more than one core's work done. Where busy workers leave the
    kept threads fewer cores than the threads have now, the ceiling is below 1 and the rule stays
    silent (halving a step's threads beside DataLoader workers measured x0.58-x0.60 on
    pytorch/examples imagenet and dcgan)."""
    wanted = threads + worker_cores
    now = min(threads, cores * threads / wanted)
    kept = min(keep, cores * keep / (keep + worker_cores))
    return min(wanted / cores * kept / now, kept / min(1.0, now))


@rule("TD-COMP-009", "compute", knob="threads")
def threads_oversubscribed(ev: Evidence) -> Hit | None:
    """Intra-op threads (plus busy DataLoader workers) exceed the physical cores, so threads fight for
    them. PyTorch docs "CPU threading and TorchScript inference" (set_num_threads, oversubscription).

    Workers count only when they are busy (on CPU at least WORKER_BUSY of their wall time) and only
    with the cores they measurably use: idle workers (cheap or I/O-bound batches) take no core
    from the step, and cutting its threads for them measured x0.58-x0.60 (pytorch/examples
    imagenet --workers 2, dcgan; docs/rules.md). Upside: what the observation's threads probe
    measured, steps of this run with the fix's thread count against the script's
    (observe.probes.threads; silent when that is under 5% or not judged faster, rules/probed.py); without
    a probe of the fix's count (a trace, an older Record), the compute phases' share x (1 - 1 / the
    fix's speed-up ceiling, `_thread_fix_speedup`), an upper bound (x1.93 claimed where the fix
    measured x1.31 on compute_threads); below 5% the rule is silent.

    Beside other processes that took a material share of the machine over the timed window, their
    cores count as busy workers' do (estimates/threads.py): 32 threads on 2 cores beside 1.4 busy
    cores measured a 24 ms step, the fix's 2 threads 135-148 ms (a spinning OpenMP thread waits on
    a descheduled team-mate), 1 thread 6-7 ms."""
    threads, cores = known(ev.switches().num_threads, "env.torch.num_threads"), ev.physical_cores()
    workers = loader_workers(ev)
    worker_cores = 0.0
    if workers:
        try:
            worker_cores = ev.worker_cpu_cores()
        except MissingEvidence:
            if threads <= cores:
                raise  # with workers, only their measured CPU time says whether they compete
        worker_cores = busy_worker_cores(workers, worker_cores)
    if threads <= cores and not competing(threads, cores, worker_cores):
        return None
    others = material_others(ev) if threads > cores else 0.0  # threads within the cores: TD-COMP-031's
    keep = threads_in_fix(threads, cores, worker_cores + others)
    compute = ev.summary("forward_fraction") + ev.summary("backward_fraction") + ev.summary("optimizer_fraction")
    evidence = {"num_threads": threads, "num_workers": workers, "worker_cpu_cores": round(worker_cores, 3),
                "other_processes_cores": round(others, 2), "physical_cores": cores,
                "compute_fraction": round(compute, 4), "threads_in_fix": keep}
    measured = measured_thread_fix(THREADS.of(ev.record), threads, keep)
    if measured is not None and no_clear_gain(measured):
        return None  # fewer threads measured no clear gain in this run: the fix could make it slower
    share, claim = _thread_fix_claim(measured, threads, keep, worker_cores + others, cores, compute, evidence)
    severity = severity_at(share, 0.05, 0.25) or ("info" if others and measured is None else None)
    if severity is None:
        return None
    busy = f" + {workers} busy workers ({worker_cores:.1f} cores)" if worker_cores else ""
    beside = f" beside other processes using {others:.1f}" if others else ""
    return Hit(severity, f"{threads} intra-op threads{busy} on {cores} cores{beside}", share, evidence,
               "More busy threads than cores make them preempt each other and thrash caches; matmuls slow down. "
               + claim,
               Fix("Use at most one intra-op thread per physical core the busy workers (and other processes) "
                   "leave free.",
                   f"torch.set_num_threads({keep})  # or OMP_NUM_THREADS"))


def _thread_fix_claim(measured: ThreadsValue | None, threads: int, keep: int, busy_cores: float, cores: int,
                      compute: float, evidence: dict[str, object]) -> tuple[float, str]:
    """(TD-COMP-009's upside, the sentence that says where it comes from), its evidence added: the
    probe's measurement of the fix; without one, beside busy cores of other processes, none (no
    ceiling bounds what fewer threads win where a spinning thread waits on a descheduled one);
    else the ceiling of `_thread_fix_speedup`."""
    if measured is not None:
        evidence.update(measured_evidence(measured))
        how = f"alternating blocks of {keep} and {threads} threads"
        return max(0.0, 1 - 1 / measured["speedup"]), f"With {keep} thread(s) the step measured {measured_phrase(measured, how)}."
    if evidence.get("other_processes_cores"):
        evidence["upside_basis"] = "not measured"
        return 0.0, f"What {keep} thread(s) would gain beside the other processes was not measured in this run."
    speedup = _thread_fix_speedup(threads, keep, busy_cores, cores)
    evidence.update(compute_speedup_ceiling=round(speedup, 3), upside_basis="ceiling")
    return compute * max(0.0, 1 - 1 / speedup), (
        f"With {keep} thread(s) the compute ({compute:.0%} of the step) can run at most {speedup:.2f}x "
        "faster: the cores stay the same, only the contention between threads goes (not measured).")


def material_others(ev: Evidence) -> float:
    """The cores other processes kept busy over the timed window when that is material
    (environment.system's OTHERS_MATERIAL of the machine), else 0 (also when not sampled)."""
    try:
        others, logical = ev.other_processes_cores()
    except MissingEvidence:
        return 0.0
    return others if others_material(others, logical) else 0.0


def loader_workers(ev: Evidence) -> int:
    """The first DataLoader's workers (0 without a DataLoader)."""
    loaders = ev.environment().dataloaders
    return (loaders[0].num_workers if loaders else 0) or 0


def measured_thread_fix(probe: ThreadsValue | None, threads: int, keep: int) -> ThreadsValue | None:
    """The threads probe's result when it measured exactly the fix (the script's count against
    `keep`) to the end; None otherwise."""
    complete = bool(probe) and probe.get("complete") and probe.get("speedup")
    if not complete or probe.get("threads") != threads or probe.get("tried_threads") != keep:
        return None
    return probe


@rule("TD-COMP-010", "compute", knob="cudnn_benchmark")
def cudnn_benchmark_off(ev: Evidence) -> Hit | None:
    """Convolutions on a GPU with cudnn.benchmark off (fixed shapes let cuDNN pick the fastest
    algorithm). Guides' troubleshooting row and config reference (cudnn.benchmark=True)."""
    if not ev.uses_gpu() or known(ev.switches().cudnn_benchmark, "env.torch.cudnn_benchmark"):
        return None
    types = {t for m in ev.models() for t in m.module_types}
    if not any(t.startswith("Conv") for t in types):
        return None
    kernels = ev.device().kernels.top
    share = sum(k.share_fraction for k in kernels if re.search(r"conv|cudnn|implicit", k.name, re.I))
    return Hit("warning" if share >= 0.2 else "info", "cudnn.benchmark is off for a convolutional model",
               share * gpu_utilisation(ev) / 4, {"cudnn_benchmark": False, "conv_kernel_share_fraction": round(share, 4)},
               "Without benchmarking cuDNN uses a heuristic algorithm choice, often not the fastest.",
               Fix("Enable it when input shapes are fixed.", "torch.backends.cudnn.benchmark = True"))


@rule("TD-COMP-011", "compute", knob="zero_grad_set_to_none", lint_topic="compute.zero_grad")
def zero_grad_fills(ev: Evidence) -> Hit | None:
    """zero_grad(set_to_none=False) writes zeros into every gradient each step (lint proves the call,
    the trace measures aten::zero_). PyTorch Optimizer.zero_grad docs (set_to_none default True)."""
    hits = ev.lint_hits("compute.zero_grad")
    if not hits:
        return None
    rank = ev.profiled_rank()
    window_us = _median_step_us(rank) * max(1, rank.steps_count)
    zero_us = sum(o.self_us for o in rank.host.top_by_self_time if o.name in ("aten::zero_", "aten::fill_"))
    share = zero_us / window_us
    return Hit(severity_at(share, 0.05, 0.2) or "info", "gradients are zero-filled instead of freed", share,
               {"zero_fill_share_fraction": round(share, 4), "lint": hits},
               "Writing zeros costs a pass over every gradient; setting them to None costs nothing.",
               Fix("Use the default.", "optimizer.zero_grad()  # set_to_none=True"))


@rule("TD-COMP-012", "compute", knob="optimizer_impl")
def for_loop_optimizer(ev: Evidence) -> Hit | None:
    """The optimizer updates parameters one tensor at a time (foreach/fused off) and the optimizer step
    takes a large share. PyTorch torch.optim docs ("Algorithms: for-loop, foreach, fused")."""
    optimizers = ev.optimizers()
    looped = [o for o in optimizers if not o.fused and (o.num_params or 0) >= MANY_TENSORS
              and (o.foreach is False or (o.foreach is None and not ev.uses_gpu()))]
    share = ev.summary("optimizer_fraction")
    severity = severity_at(share, PHASE_WARNING, PHASE_PROBLEM)
    if not looped or severity is None:
        return None
    return Hit(severity, f"optimizer step takes {share:.0%} of the step, one parameter at a time",
               share * (1 - 1 / FOREACH_SPEEDUP),
               {"optimizer_fraction": round(share, 4), "optimizer": looped[0].class_name,
                "num_params": looped[0].num_params, "foreach": looped[0].foreach},
               "The per-tensor loop pays Python and dispatch overhead for each parameter tensor.",
               Fix("Use the multi-tensor (foreach) or fused implementation.",
                   f"torch.optim.{looped[0].class_name}(model.parameters(), foreach=True)  # or fused=True"))


@rule("TD-COMP-013", "compute")
def work_outside_phases(ev: Evidence) -> Hit | None:
    """A large share of the step is in none of data, forward, backward or optimizer: per-step host work
    (metrics, logging, checkpoints). The time measured inside the script's gradcheck and torch.save
    calls is left out: TD-COMP-017 and TD-COMP-026 name it, with its own fix. Where the operator-costs
    probe recorded the script's calls, the finding names the longest ones made outside the model
    (rules/outside.py) and its fix follows from the longest; the computation the script runs there
    (torch operators wherever they are called, and loss functions of `torch.nn.functional`: the
    step's own work, not work to move) is left out too. Guides' "measure first" loop: find where
    the step time goes."""
    share = ev.summary("other_fraction")
    try:
        share = max(0.0, share - ev.gradcheck_fraction() - ev.save_fraction())
    except MissingEvidence:
        pass
    share = max(0.0, share - computation_share(ev))
    severity = severity_at(share, PHASE_WARNING, PHASE_PROBLEM)
    if severity is None:
        return None
    ran = calls_outside(ev)
    named = f", most in {ran[0].label}" if ran else ""
    return Hit(severity, f"{share:.0%} of each step is spent outside the model and the optimizer{named}", share,
               {"other_fraction": round(share, 4), "step_s": ev.summary("step_s"),
                "calls_outside": [r.evidence() for r in ran]},
               "Work between steps (evaluation, logging, saving, Python bookkeeping) stalls training every step."
               + outside_text(ran), outside_fix(ran))


@rule("TD-COMP-014", "compute", lint_topic="compute.conv_bias_before_bn")
def conv_bias_before_bn(ev: Evidence) -> Hit | None:
    """A convolution's bias feeds a BatchNorm that subtracts it again (lint proves the pattern; the
    model facts confirm BatchNorm is in the measured model). PyTorch performance tuning guide."""
    hits = ev.lint_hits("compute.conv_bias_before_bn")
    types = {t for m in ev.models() for t in m.module_types}
    if not hits or not any(t.startswith("BatchNorm") for t in types):
        return None
    return Hit("info", "convolution bias before BatchNorm is wasted work", 0.0, {"lint": hits},
               "BatchNorm removes the mean, so the bias has no effect; it costs an add and a gradient.",
               Fix("Drop the bias.", "nn.Conv2d(c_in, c_out, 3, bias=False)"))
