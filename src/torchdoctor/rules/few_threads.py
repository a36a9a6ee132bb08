"""Compute-layer rule about a step held to fewer intra-op threads than the cores it may use.

PyTorch runs its CPU operators on one intra-op thread per physical core by default; a script that
sets fewer (`torch.set_num_threads(1)` left from a multiprocessing experiment) leaves the other
cores idle while large operators could split across them. How much more threads gain depends on
the operators (a large matrix product scales, a chain of small ones does not) and on the machine's
other load, so the rule claims only what the threads probe measured: blocks of the script's own
steps with one thread a core against its count (observe/probes/threads.py).

Sources: PyTorch docs "CPU threading and TorchScript inference" (intra-op parallelism, one thread
per physical core by default) and the Performance Tuning Guide ("Utilize OpenMP").
"""

from __future__ import annotations

from torchdoctor.estimates.threads import busy_worker_cores, more_threads, set_by_environment
from torchdoctor.probe_values import THREADS, ThreadsValue
from torchdoctor.rules.base import Fix, Hit, rule, severity_at
from torchdoctor.rules.compute_settings import loader_workers, material_others, measured_thread_fix
from torchdoctor.rules.evidence import Evidence, known
from torchdoctor.rules.probed import measured_evidence, measured_phrase, no_clear_gain

#: The measured upside from which the rule reports, a warning, a problem.
REPORTED, WARNING, PROBLEM = 0.05, 0.10, 0.25


@rule("TD-COMP-043", "compute", knob="threads")
def threads_below_cores(ev: Evidence) -> Hit | None:
    """The script set fewer intra-op threads than the usable physical cores its busy DataLoader
    workers leave free (estimates/threads.py's `more_threads`), not through OMP_NUM_THREADS or
    MKL_NUM_THREADS (a launcher's choice). Upside: what the threads probe measured with one thread a
    free core against the script's count; silent when that was not judged faster, or reported from
    5%. Without the probe's measurement (it does not run beside other processes that took a
    material share of the machine, where more threads can stall on descheduled team-mates): an
    info finding, no upside claimed, its fix for a quiet machine."""
    threads, cores = known(ev.switches().num_threads, "env.torch.num_threads"), ev.physical_cores()
    workers = loader_workers(ev)
    busy = busy_worker_cores(workers, ev.worker_cpu_cores()) if workers else 0.0
    keep = more_threads(threads, cores, busy)
    if keep is None or set_by_environment(threads, ev.env_vars()):
        return None
    others = material_others(ev)
    evidence = {"num_threads": threads, "physical_cores": cores, "num_workers": workers,
                "worker_cpu_cores": round(busy, 3), "other_processes_cores": round(others, 2), "threads_in_fix": keep}
    measured = None if others else measured_thread_fix(THREADS.of(ev.record), threads, keep)
    if measured is not None and no_clear_gain(measured):
        return None  # more threads measured no clear gain in this run
    share = max(0.0, 1 - 1 / measured["speedup"]) if measured else 0.0
    if measured is not None and share < REPORTED:
        return None
    plural = "s" if threads > 1 else ""
    return Hit(severity_at(share, WARNING, PROBLEM) or "info",
               f"{threads} intra-op thread{plural} on {cores} usable cores", share, evidence,
               f"The script set {threads} intra-op thread{plural} while {keep} of the {cores} physical cores it "
               f"may use are free: its operators run on {threads} core{plural} and the others idle."
               + _claim(measured, threads, keep, others, evidence),
               Fix(("On a quiet machine, use" if others else "Use") + " one intra-op thread per physical core "
                   "(the default): remove the set_num_threads call, or set the count the busy workers leave free.",
                   f"torch.set_num_threads({keep})  # or remove torch.set_num_threads(...)"))


def _claim(measured: ThreadsValue | None, threads: int, keep: int, others: float, evidence: dict[str, object]) -> str:
    """The sentence that says what `keep` threads measured (its evidence added), or why it was not."""
    if measured is not None:
        evidence.update(measured_evidence(measured))
        how = f"alternating blocks of {keep} and {threads} threads"
        return f" With {keep} threads the step measured {measured_phrase(measured, how)}."
    evidence["upside_basis"] = "not measured"
    if others:
        return (f" Other processes kept {others:.1f} cores busy while the steps were timed, so what {keep} threads "
                "would gain was not measured: beside such load more threads can be slower.")
    return f" What {keep} threads would gain was not measured in this run (the threads probe did not run)."
