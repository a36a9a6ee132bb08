"""Compute-layer rule about the machine the script shared: other processes' threads beside its own.

On a machine where other processes keep cores busy, a step's intra-op threads get fewer cores than
they are; an OpenMP thread that a neighbour deschedules stalls the others at every operator's
barrier, so the step slows far beyond the cores lost (two threads on two cores beside two busy
processes measured 5-16x slower a step than one, on a small transformer language model).
TD-COMP-009 covers threads beyond the cores on their own; this rule covers threads that fit the
cores but not beside the machine's other load.
"""

from __future__ import annotations

from torchdoctor.environment.system import others_material
from torchdoctor.estimates.threads import busy_worker_cores, competing, threads_in_fix
from torchdoctor.probe_values import THREADS
from torchdoctor.rules.base import Fix, Hit, rule, severity_at
from torchdoctor.rules.compute_settings import loader_workers, measured_thread_fix
from torchdoctor.rules.evidence import Evidence, known
from torchdoctor.rules.probed import measured_evidence, measured_phrase, no_clear_gain


@rule("TD-COMP-031", "compute", knob="threads")
def threads_beside_busy_machine(ev: Evidence) -> Hit | None:
    """Other processes used a material share of the machine's cores (environment.system's
    OTHERS_MATERIAL, a quarter) over the timed window, and the script's intra-op threads + its busy
    DataLoader workers' cores + theirs exceed OVERSUBSCRIBED x the usable cores, while the threads
    alone fit them (else TD-COMP-009). PyTorch docs "CPU threading and TorchScript inference".
    The fix keeps one thread per core the others leave free (estimates/threads.py). Upside: what
    the threads probe measured with that count against the script's (silent when not judged
    faster); without that measurement, an info finding with no upside claimed. Either way every
    timing figure of the run is disturbed, which the finding says with the step-time spread."""
    threads, cores = known(ev.switches().num_threads, "env.torch.num_threads"), ev.physical_cores()
    others, logical = ev.other_processes_cores()
    if threads > cores or not others_material(others, logical):
        return None
    workers = loader_workers(ev)
    worker_cores = busy_worker_cores(workers, ev.worker_cpu_cores()) if workers else 0.0
    keep = threads_in_fix(threads, cores, worker_cores + others)
    if keep >= threads or not competing(threads, cores, worker_cores + others):
        return None
    p10, p90 = ev.summary("step_s_p10"), ev.summary("step_s_p90")
    evidence = {"other_processes_cores": round(others, 2), "logical_cores": logical, "num_threads": threads,
                "physical_cores": cores, "num_workers": workers, "worker_cpu_cores": round(worker_cores, 3),
                "threads_in_fix": keep, "step_s_p10": round(p10, 6), "step_s_p90": round(p90, 6)}
    measured = measured_thread_fix(THREADS.of(ev.record), threads, keep)
    if measured is not None and no_clear_gain(measured):
        return None  # fewer threads measured no clear gain beside this load
    if measured is not None:
        share = max(0.0, 1 - 1 / measured["speedup"])
        evidence.update(measured_evidence(measured))
        how = f"alternating blocks of {keep} and {threads} threads"
        claim = f" With {keep} thread(s) the step measured {measured_phrase(measured, how)}."
    else:
        share = 0.0
        evidence["upside_basis"] = "not measured"
        claim = f" What {keep} thread(s) would gain was not measured in this run (the threads probe did not run)."
    workers_text = f" + {workers} busy workers ({worker_cores:.1f} cores)" if worker_cores else ""
    return Hit(severity_at(share, 0.05, 0.25) or "info",
               f"{threads} intra-op threads{workers_text} beside other processes using {others:.1f} of "
               f"{logical} cores", share, evidence,
               f"Other processes kept {others:.1f} of the machine's {logical} cores busy while the steps were "
               "timed, so the script's threads got fewer cores than they are; a thread that a neighbour "
               "deschedules stalls the others at every operator's barrier. The step time ranged "
               f"{p10:.3g} s-{p90:.3g} s (p10-p90): every timing figure of this run is disturbed."
               + claim,
               Fix("Use at most one intra-op thread per core the other processes and busy workers leave free "
                   "(or measure on a quiet machine).",
                   f"torch.set_num_threads({keep})  # or OMP_NUM_THREADS={keep}"))
