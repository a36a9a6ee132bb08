"""The shortest step a DataLoader workers fix allows on the usable cores: TD-DATA-002/003's upside.

Moving CPU-bound loading into workers hides the step's wait only as far as free cores let the
workers run; the whole wait disappears only with a free core for every worker it needs. A wait on
storage or a sleep needs no core (TD-DATA-007's case), and then only the workers bound it.
docs/rules-measured.md, "Workers and free cores".
"""

from __future__ import annotations

from torchdoctor.rules.base import MissingEvidence
from torchdoctor.rules.evidence import Evidence, known


def busy_cores(ev: Evidence, cores: int, threads: int | None) -> int:
    """Cores the training process keeps busy while it computes: its intra-op threads (`threads`, or
    the Record's when None), at least the main thread's one, at most the usable cores. A Record
    without the thread count counts one, the least the step can use, so the bound stays a bound."""
    if threads is None:
        try:
            threads = known(ev.switches().num_threads, "env.torch.num_threads")
        except MissingEvidence:
            threads = 1
    return max(1, min(threads, cores))


def fastest_step_ms(main_ms: float, load_ms: float, load_cpu_ms: float, workers: int, busy: int, cores: int) -> float:
    """The shortest step that loading a batch in `workers` processes allows, on `cores` usable cores
    (the upside is 1 - this / the measured step). The longest of:
    - `main_ms`: the training process's own work per step (compute, and each batch's hand-off);
    - `load_ms / workers`: each worker delivers one batch per `load_ms`, its wall time per batch;
    - `(load_cpu_ms + busy x main_ms) / cores`: in one step the cores give `cores` x step of CPU time,
      of which the step's threads take `busy` cores for `main_ms`, and loading needs `load_cpu_ms`.
    The last is where the cores bind: workers beyond the cores the step leaves free add no speed to
    CPU-bound loading (the demo on 2 cores: x0.97 measured for a claimed x4.6, docs/field.md), while
    a wait on storage or sleep (small `load_cpu_ms`, TD-DATA-007) is bounded by the workers alone."""
    return max(main_ms, load_ms / workers, (load_cpu_ms + busy * main_ms) / cores)


def best_case(main_ms: float, load_ms: float, load_cpu_ms: float, workers: int, busy: int, cores: int) -> dict:
    """Evidence for a workers fix's upside: the usable cores, the cores the step keeps busy, the
    loading's CPU time per batch, and the shortest step the fix allows (`fastest_step_ms`)."""
    best_ms = fastest_step_ms(main_ms, load_ms, load_cpu_ms, workers, busy, cores)
    return {"physical_cores": cores, "busy_cores_while_computing": busy, "main_ms_per_step": round(main_ms, 3),
            "load_ms_per_batch": round(load_ms, 3), "load_cpu_ms_per_batch": round(load_cpu_ms, 3),
            "workers_in_fix": workers, "step_ms_best_case": round(best_ms, 3)}


def speedup_with_workers(evidence: dict, workers: int) -> float | None:
    """The speed-up the same bound allows with `workers` instead of the fix's own count: what the
    finding claims for another value (tune's trial of 6 workers where the fix names 27). None when
    the evidence does not carry the bound's inputs (another kind of finding, an older Record)."""
    keys = ("main_ms_per_step", "load_ms_per_batch", "load_cpu_ms_per_batch", "busy_cores_while_computing",
            "physical_cores", "step_ms_median")
    if workers < 1 or any(not isinstance(evidence.get(k), (int, float)) for k in keys):
        return None
    best_ms = fastest_step_ms(evidence["main_ms_per_step"], evidence["load_ms_per_batch"],
                              evidence["load_cpu_ms_per_batch"], workers, evidence["busy_cores_while_computing"],
                              evidence["physical_cores"])
    if evidence.get("workers_simulated") == workers and evidence.get("step_ms_simulated"):
        best_ms = max(best_ms, evidence["step_ms_simulated"])  # TD-DATA-007's fix simulated at that count
    return max(1.0, evidence["step_ms_median"] / best_ms)


def best_case_text(evidence: dict) -> str:
    """The bound in words, with the figures of `best_case` the upside comes from."""
    return (f"on {evidence['physical_cores']} cores, {evidence['busy_cores_while_computing']} of them busy with the "
            f"step's threads while it computes, and {evidence['load_cpu_ms_per_batch']:.0f} ms of CPU to load each "
            f"batch, {evidence['workers_in_fix']} worker(s) bring the {evidence['step_ms_median']:.0f} ms step to "
            f"{evidence['step_ms_best_case']:.0f} ms at best")


def best_case_upside(evidence: dict) -> float:
    """The share of the measured step that the best case wins back."""
    return max(0.0, 1.0 - evidence["step_ms_best_case"] / evidence["step_ms_median"])
