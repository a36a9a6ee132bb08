"""Data-layer rules: is the step waiting for its batches, and which loader setting explains it.

Source for the layer: the guides' key-metrics table (/work/shared/guides/002_*, "CPU total time far
above CUDA total time -> data loading is the bottleneck -> raise num_workers, pin_memory") and
the troubleshooting table ("GPU utilisation below 50% -> data loading -> num_workers,
pin_memory"); PyTorch's torch.utils.data docs for the loader arguments.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Callable

from torchdoctor.environment import DataLoaderFacts, SystemSummary
from torchdoctor.estimates.workers import IDLE_CPU_PERCENT, IDLE_WAIT_CPU, io_workers_needed
from torchdoctor.probe_values import HANDOFF
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, rule, severity_at
from torchdoctor.rules.evidence import Evidence, known
from torchdoctor.trace.summary.rank import Dialect
from torchdoctor.rules.workers_bound import best_case, best_case_text, best_case_upside, busy_cores, fastest_step_ms

WAIT_WARNING = 0.10  # share of a typical step spent waiting for the next batch
WAIT_PROBLEM = 0.25
SPIKE_WARNING = 0.05  # share of the window lost to epoch-start waits
SPIKE_PROBLEM = 0.20
BURSTY_RATIO = 0.5  # steady wait below this share of the mean wait: the wait comes in bursts
HEAVY_SAMPLE_MS = 2.0  # per-sample load time that batch transforms can usually cut
#: What the training process pays to receive one batch from a worker (the queue, unpickling, mapping
#: the shared-memory tensors) in place of the wait the workers hide. Measured on the 2-core development
#: machine (benchmarks/worker_handoff.py): 0.9-1.9 ms a batch from one worker against 0.16-0.5 ms to
#: load the same batch in the main process; on the Lightning field script (a 0.16 ms wait in a 1.2 ms
#: step, TD-DATA-002 claiming 13%) one worker made the step 2.3x slower (docs/field.md). Faster hosts
#: pay less, so this errs towards silence on steps of a few milliseconds. Used when the observation did
#: not measure it (`worker_handoff`).
WORKER_HANDOFF_MS = 1.0
#: The TensorBoard profiler plugin's DataLoader rule ("x% of the step time is in DataLoader", more
#: than 5%): from a trace alone a DataLoader share above it is always reported (info below the
#: wait thresholds above, which measured runs use too).
TRACE_DATALOADER_SHARE = 0.05

_WORKERS_FIX = Fix("Load batches in worker processes so loading overlaps with the step.",
                   "loader = DataLoader(dataset, batch_size=..., num_workers=4,\n"
                   "                    persistent_workers=True, prefetch_factor=4)")
SMALL_MACHINE_CORES = 4  # up to this many usable cores the workers fix also sizes the intra-op threads


def _workers_plan(cores: int, step_ms_with: Callable[[int, int], float]) -> tuple[int, int | None]:
    """Workers and intra-op threads the workers fix gives a machine with `cores` usable cores (None:
    the script's own threads). On a larger machine, 4 workers. On a small one workers and the step's
    threads share the cores (two intra-op threads contending with a busy worker can cancel the gain,
    docs/tune.md), so the step keeps the cores the workers leave, at least one, and the count is the
    one whose bound, `step_ms_with(workers, threads)`, is shortest (the fewest on a tie): where
    the step computes a small part of the time the main process needs little of its core, and every
    core can load. Measured on the demo, 2 cores, one intra-op thread: one worker x1.09, two x1.95
    (batch 32), x1.04 and x1.58 (batch 8); cores - 1 named one."""
    if cores > SMALL_MACHINE_CORES:
        return 4, None
    plans = [(workers, max(1, cores - workers)) for workers in range(1, cores + 1)]
    return min(plans, key=lambda plan: (round(step_ms_with(*plan), 6), plan[0]))


def _workers_fix(workers: int, threads: int | None, cores: int) -> Fix:
    """The workers fix of `_workers_plan`, in words and code."""
    if threads is None:
        return _WORKERS_FIX
    return Fix(f"Load batches in {workers} worker process(es) so loading overlaps with the step; this machine has "
               f"{cores} cores, so give the step {threads} intra-op thread(s) and the workers the cores.",
               f"torch.set_num_threads({threads})\n"
               f"loader = DataLoader(dataset, batch_size=..., num_workers={workers}, persistent_workers=True)")


def _io_bound(ev: Evidence) -> bool:
    """True when loading waits on storage (TD-DATA-007's case). With num_workers=0 the main thread
    loads, so its CPU time inside the waits says it directly; with workers (or in a Record from
    before that was measured) the process and its workers must be mostly idle over the window."""
    try:
        if (ev.dataloader().num_workers or 0) == 0:
            return ev.data_wait_cpu_fraction() < IDLE_WAIT_CPU  # torchdoctor.estimates.workers: I/O-bound
    except MissingEvidence:
        pass
    try:
        return _process_cpu_percent(ev) < IDLE_CPU_PERCENT
    except MissingEvidence:
        return False


def _process_cpu_percent(ev: Evidence) -> float:
    """The training process's CPU use over the window, in % of one core (its workers' included)."""
    return known(ev.system_summary().process_cpu_percent_mean, "system.summary.process_cpu_percent_mean")


def _io_load_cpu_ms(ev: Evidence, load_ms: float) -> float:
    """CPU time to load a batch that waits on reads: the main thread's share of its own loading
    (num_workers=0), else the script's and workers' CPU use over a step, which `_io_bound` found low
    (a batch arrives per step); all of the load time where neither was measured, so the bound stays
    a bound."""
    try:
        if (ev.dataloader().num_workers or 0) == 0:
            return load_ms * min(1.0, ev.data_wait_cpu_fraction())
    except MissingEvidence:
        pass
    try:
        return _process_cpu_percent(ev) / 100.0 * statistics.median(ev.step_walls_s()) * 1e3
    except MissingEvidence:
        return load_ms


def _load_cpu_fraction(ev: Evidence) -> float:
    """Share of the main process's loading (num_workers=0) spent on the CPU; 1 (all of it) in a Record
    from before it was measured, the most the cores can be asked for, so the bound stays a bound."""
    try:
        return min(1.0, ev.data_wait_cpu_fraction())
    except MissingEvidence:
        return 1.0


def worker_handoff(ev: Evidence) -> dict[str, Any]:
    """`worker_handoff_ms`, what receiving a batch from a worker costs the step, and its basis:
    "measured" by the observation's hand-off probe (one worker, batches laid out as the script's,
    observe/probes/handoff.py), else "assumed" (WORKER_HANDOFF_MS)."""
    probe = HANDOFF.of(ev.record) or {}
    if probe.get("complete") and probe.get("handoff_ms") is not None:
        return {"worker_handoff_ms": round(float(probe["handoff_ms"]), 3), "worker_handoff_basis": "measured"}
    return {"worker_handoff_ms": WORKER_HANDOFF_MS, "worker_handoff_basis": "assumed"}


def _wait_evidence(ev: Evidence, loader: DataLoaderFacts) -> dict[str, float | int | None]:
    walls, waits = ev.step_walls_s(), ev.data_waits_s()
    return {"data_wait_fraction_steady": round(ev.steady_data_wait_fraction(), 4),
            "data_wait_ms_median": round(statistics.median(waits) * 1e3, 3),
            "step_ms_median": round(statistics.median(walls) * 1e3, 3),
            "num_workers": loader.num_workers, "batch_size": loader.batch_size}


@rule("TD-DATA-001", "data", knob="num_workers")
def data_wait_high(ev: Evidence) -> Hit | None:
    """The step waits for data, and no DataLoader setting explains it (a custom iterator, or
    no DataLoader seen). Guides, key-metrics table, row "CPU total far above CUDA total"."""
    try:
        ev.dataloader()
        return None  # the loader-specific rules below explain the wait
    except MissingEvidence:
        pass
    share = ev.summary("data_wait_fraction")
    severity = severity_at(share, WAIT_WARNING, WAIT_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"{share:.0%} of step time waits for the next batch", share,
               {"data_wait_fraction": round(share, 4)},
               "The training loop spends this share of its time fetching batches; the model is idle meanwhile.",
               Fix("Produce batches ahead of the step: a DataLoader with workers, or a background prefetch thread.",
                   _WORKERS_FIX.code))


@rule("TD-DATA-002", "data", knob="num_workers", lint_topic="data.num_workers")
def no_workers(ev: Evidence) -> Hit | None:
    """num_workers=0 while a typical step waits for data. Guides' BERT case study (37% of CPU time
    in the DataLoader, num_workers left at 0) and both tables' num_workers rows. Upside: 1 - the
    shortest step the fix's workers and threads allow (`fastest_step_ms`) / the step, where the
    step's own work is its compute plus a worker's hand-off of each batch (`worker_handoff`), a
    worker loads a batch in the wait's time, and the loading's CPU time is the main thread's inside
    the wait (`data_wait_cpu_s`). A wait shorter than the hand-off raises nothing (measured: one
    worker made the Lightning field script's 1 ms step 2.3x slower); CPU-bound loading gains only
    what the free cores allow (the demo on 2 cores: one worker measured x0.97 where the whole wait,
    x4.6, was claimed; docs/field.md)."""
    loader = ev.dataloader()
    share = ev.steady_data_wait_fraction()
    if loader.num_workers != 0 or share < WAIT_WARNING or _io_bound(ev):
        return None  # the upside is below the wait's share; an I/O-bound wait is TD-DATA-007's
    evidence = {**_wait_evidence(ev, loader), **worker_handoff(ev)}
    step_ms, wait_ms = evidence["step_ms_median"], evidence["data_wait_ms_median"]
    handoff_ms = evidence["worker_handoff_ms"]
    cores = ev.physical_cores()
    main_ms, load_cpu_ms = step_ms - wait_ms + handoff_ms, wait_ms * _load_cpu_fraction(ev)
    workers, threads = _workers_plan(cores, lambda workers, threads: fastest_step_ms(
        main_ms, wait_ms, load_cpu_ms, workers, busy_cores(ev, cores, threads), cores))
    evidence.update(best_case(main_ms, wait_ms, load_cpu_ms, workers, busy_cores(ev, cores, threads), cores))
    upside = best_case_upside(evidence)
    severity = severity_at(upside, WAIT_WARNING, WAIT_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"DataLoader loads in the main process: {share:.0%} of each step waits for data",
               upside, evidence,
               "With num_workers=0 every batch is loaded and collated in the training process, between steps, "
               f"so the step waits {evidence['data_wait_ms_median']:.1f} ms for each batch. Workers hide that wait "
               f"as far as the cores allow, and each batch then costs about {handoff_ms:.1f} ms to receive "
               f"({evidence['worker_handoff_basis']}): "
               f"{best_case_text(evidence)}.",
               _workers_fix(workers, threads, cores))


@rule("TD-DATA-003", "data", knob="num_workers")
def too_few_workers(ev: Evidence) -> Hit | None:
    """Workers exist but a typical step still waits: fewer workers than the measured load time per
    batch needs. PyTorch torch.utils.data docs (multi-process loading); guides' num_workers rows.
    Upside: 1 - the shortest step `workers_needed` workers allow (`fastest_step_ms`) / the step.
    Each worker now delivers a batch per `num_workers` steps (its time per batch); loading is
    CPU-bound (an idle CPU is TD-DATA-007's), so workers that cannot keep up use every core they
    can: all of theirs, or the cores the step's threads leave free over the step (the free cores
    now), if fewer; that is the loading's CPU time per step, and per batch. The step's own work is
    its compute plus the hand-off (`worker_handoff`), which no worker count hides. So when the
    workers already use every free core, more workers win nothing: pytorch/examples imagenet and
    dcgan (2 workers, 2 cores) measured no effect from 3 where 10-18% was claimed; the zoo's
    data_few_workers (1 worker, 2 cores) claimed x78 and is now bounded at x1.97, what the second
    core can add; its fix measured x2.17 (docs/field.md)."""
    loader = ev.dataloader()
    workers = loader.num_workers or 0
    share = ev.steady_data_wait_fraction()
    if workers < 1 or share < WAIT_WARNING or _io_bound(ev):
        return None  # the upside is below the wait's share; an I/O-bound wait is TD-DATA-007's
    evidence = {**_wait_evidence(ev, loader), **worker_handoff(ev)}
    step_ms = evidence["step_ms_median"]
    compute_ms = max(step_ms - evidence["data_wait_ms_median"], 1e-3)
    load_ms = workers * step_ms  # each worker delivers one batch per `workers` steps
    needed = math.ceil(load_ms / compute_ms)
    cores = ev.physical_cores()
    busy = busy_cores(ev, cores, None)
    free_now = cores - busy * compute_ms / step_ms
    evidence.update(workers_needed=needed,  # the batch's load time is `best_case`'s load_ms_per_batch
                    free_cores_now=round(free_now, 3))
    own_ms = compute_ms + evidence["worker_handoff_ms"]
    evidence.update(best_case(own_ms, load_ms, min(workers, free_now) * step_ms, needed, busy, cores))
    upside = best_case_upside(evidence)
    severity = severity_at(upside, WAIT_WARNING, WAIT_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"{workers} DataLoader worker(s) cannot keep up: {share:.0%} of each step waits",
               upside, evidence,
               f"A batch takes about {load_ms:.0f} ms to load and the step computes for {compute_ms:.0f} ms, "
               f"so about {needed} workers keep a batch ready; {best_case_text(evidence)}. Beyond the cores the "
               "step leaves free, make loading cheaper (cache decoded samples, batch transforms).",
               Fix("Raise num_workers towards the estimate (within the free cores).",
                   f"DataLoader(dataset, num_workers={needed}, persistent_workers=True)"))


@rule("TD-DATA-004", "data", knob="persistent_workers", lint_topic="data.persistent_workers")
def workers_restart_each_epoch(ev: Evidence) -> Hit | None:
    """Workers are re-created at every epoch start (persistent_workers=False) and the waits at
    epoch starts cost step time. PyTorch DataLoader docs (persistent_workers); guides' loader config."""
    loader = ev.dataloader()
    if not loader.num_workers or loader.persistent_workers:
        return None
    if not loader.dataset_len or not loader.batch_size:
        raise MissingEvidence("dataset length and batch size")
    epoch_batches = max(1, math.ceil(loader.dataset_len / loader.batch_size))
    walls, waits = ev.step_walls_s(), ev.data_waits_s()
    epochs = len(walls) // epoch_batches
    if epochs < 1:
        return None  # no epoch start inside the measured window
    excess = sum(sorted(waits)[-epochs:]) - epochs * statistics.median(waits)
    share = max(0.0, excess) / sum(walls)
    severity = severity_at(share, SPIKE_WARNING, SPIKE_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"DataLoader workers restart every epoch: {share:.0%} of step time lost at epoch starts",
               share, {"batches_per_epoch": epoch_batches, "epoch_starts_in_window": epochs,
                       "epoch_start_wait_ms_excess": round(excess * 1e3 / epochs, 3),
                       "num_workers": loader.num_workers, "persistent_workers": False},
               "Each epoch starts new worker processes, which re-run their set-up before the first batch.",
               Fix("Keep the workers alive across epochs.",
                   "DataLoader(dataset, num_workers=..., persistent_workers=True)"))


@rule("TD-DATA-005", "data", knob="prefetch_factor")
def bursty_waits(ev: Evidence) -> Hit | None:
    """Waits come in bursts: most steps find a batch ready, a few wait long, and the prefetch queue
    is short. PyTorch DataLoader docs (prefetch_factor); guides' loader config (prefetch_factor=4)."""
    loader = ev.dataloader()
    if not loader.num_workers or (loader.prefetch_factor or 2) > 2:
        return None
    mean_share, steady = ev.summary("data_wait_fraction"), ev.steady_data_wait_fraction()
    severity = severity_at(mean_share - steady, WAIT_WARNING, WAIT_PROBLEM)
    if severity is None or steady > BURSTY_RATIO * mean_share:
        return None
    if workers_restart_each_epoch(ev) is not None:
        return None  # the bursts are epoch starts: TD-DATA-004 explains them
    return Hit(severity, f"bursty batch loading: {mean_share:.0%} of step time waits, mostly in a few steps",
               mean_share - steady, {"data_wait_fraction": round(mean_share, 4),
                                     "data_wait_fraction_steady": round(steady, 4),
                                     "prefetch_factor": loader.prefetch_factor,
                                     "num_workers": loader.num_workers},
               "Some batches take much longer than others; with a short queue a slow batch stalls the step.",
               Fix("Queue more batches per worker so slow ones are absorbed.",
                   "DataLoader(dataset, num_workers=..., prefetch_factor=8)"))


@rule("TD-DATA-006", "data", knob="pin_memory", lint_topic="data.pin_memory")
def pageable_copies(ev: Evidence) -> Hit | None:
    """Host-to-device copies from pageable (unpinned) memory. PyTorch "pin_memory" docs and the
    guides' rows recommending pin_memory; measured as pageable Memcpy events in the trace."""
    pageable = ev.device().pageable_memcpy
    rank = ev.trace_rank()
    window_us = (rank.step_us_median or 0.0) * rank.steps_count
    if not pageable.htod_count or window_us <= 0:
        return None
    share = min(1.0, pageable.dur_us / window_us)
    severity = severity_at(share, 0.02, 0.15) or "info"
    return Hit(severity, f"{pageable.htod_count} host-to-device copies from pageable memory",
               share, {"pageable_memcpy_count": pageable.count, "pageable_memcpy_bytes": pageable.bytes,
                       "pageable_memcpy_us": round(pageable.dur_us, 1), "window_us": round(window_us, 1)},
               "Copies from pageable memory are staged through a pinned buffer and cannot overlap with compute.",
               Fix("Pin the batches and copy them asynchronously.",
                   "DataLoader(dataset, pin_memory=True)\nx = x.to('cuda', non_blocking=True)"))


@rule("TD-DATA-007", "data", knob="num_workers")
def io_bound_loading(ev: Evidence) -> Hit | None:
    """The step waits for data while the CPU idles: loading waits on storage or network, not on CPU.
    Measured as the main thread's CPU time inside its waits (num_workers=0) or the script's and
    workers' CPU use (with workers); disk reads over the window are shown beside. Guides' survey
    (004_*) on data loading and storage.
    Upside: 1 - the shortest step the fix's `workers_needed` workers allow (`fastest_step_ms`) /
    the step, as TD-DATA-002/003 bound theirs: sleeping workers need no core, but every batch still
    costs its hand-off (`worker_handoff`) on top of the compute. The whole wait, claimed before,
    came to x28 on the slow `__getitem__` field script (a 1 ms step behind 35 ms of reads), where
    its 6 workers measured x5.9-x7.1 and the bound for 6 is x6.2 (docs/field.md)."""
    share = ev.steady_data_wait_fraction()
    if severity_at(share, WAIT_WARNING, WAIT_PROBLEM) is None or not _io_bound(ev):
        return None
    try:
        if workers_restart_each_epoch(ev) is not None:
            return None  # the idle waits are worker start-ups: TD-DATA-004 explains them
    except MissingEvidence:
        pass
    try:
        loader = ev.dataloader()
    except MissingEvidence:
        loader = DataLoaderFacts()
    workers = loader.num_workers or 0
    try:
        summary = ev.system_summary()
    except MissingEvidence:
        summary = SystemSummary()
    evidence = {**_wait_evidence(ev, loader), "process_cpu_percent_mean": summary.process_cpu_percent_mean,
                "disk_read_bytes_per_s": summary.disk_read_bytes_per_s, **worker_handoff(ev)}
    try:
        evidence["data_wait_cpu_fraction"] = round(ev.data_wait_cpu_fraction(), 4)
    except MissingEvidence:
        pass
    needed = evidence["workers_needed"] = io_workers_needed(ev.step_walls_s(), ev.data_waits_s(), workers)
    simulation = _simulation(ev) if not workers else None
    if simulation:
        needed = evidence["workers_needed"] = simulation["workers"]  # as many as `run --apply` takes here
    step_ms, wait_ms = evidence["step_ms_median"], evidence["data_wait_ms_median"]
    load_ms = workers * step_ms if workers else wait_ms  # a batch's load time, as `io_workers_needed` reads it
    cores = ev.physical_cores()
    own_ms = max(step_ms - wait_ms, 1e-3) + evidence["worker_handoff_ms"]
    evidence.update(best_case(own_ms, load_ms, _io_load_cpu_ms(ev, load_ms), needed, busy_cores(ev, cores, None),
                              cores))
    if simulation:
        evidence.update(step_ms_bound=evidence["step_ms_best_case"], step_ms_simulated=round(simulation["step_ms"], 3),
                        workers_simulated=simulation["workers"],
                        step_ms_best_case=round(max(evidence["step_ms_best_case"], simulation["step_ms"]), 3))
    upside = best_case_upside(evidence)
    severity = severity_at(upside, WAIT_WARNING, WAIT_PROBLEM)
    if severity is None:
        return None  # the hand-offs would cost about what the workers hide
    return Hit(severity, f"loading waits on storage or network: {share:.0%} of each step waits with the CPU idle",
               upside, evidence,
               "The loader is blocked on reads: more CPU will not help, more reads in flight or faster storage will. "
               f"About {needed} workers keep a batch ready (a batch's load time over the step's compute time); "
               f"each batch then costs about {evidence['worker_handoff_ms']:.1f} ms to receive "
               f"({evidence['worker_handoff_basis']}): {best_case_text(evidence)}{_simulated_text(evidence)}.",
               Fix("Keep more reads in flight and move the data closer (local SSD, cached or packed shards).",
                   f"DataLoader(dataset, num_workers={evidence['workers_needed']}, prefetch_factor=4)"
                   "  # I/O-bound: workers may exceed cores"))


def _simulation(ev: Evidence) -> dict | None:
    """The observation's simulation of this fix (`probes.handoff.simulation`, observe/probes/handoff.py),
    when complete: its workers slept and computed per sample as the measured loading did, on this
    machine, while a step computed; the bound alone over-claimed x15.8 for x11.2 measured."""
    simulation = (HANDOFF.of(ev.record) or {}).get("simulation") or {}
    return simulation if simulation.get("complete") and simulation.get("step_ms") else None


def _simulated_text(evidence: dict) -> str:
    if "step_ms_simulated" not in evidence:
        return ""
    return (f"; simulated here, {evidence['workers_simulated']} workers sleeping and computing per sample as "
            f"this loading did took {evidence['step_ms_simulated']:.1f} ms a step")


@rule("TD-DATA-008", "data")
def heavy_getitem(ev: Evidence) -> Hit | None:
    """Per-sample loading is slow (measured with num_workers=0: wait per step / batch size). Guides'
    BERT case (a heavy per-sample tokenizer).

    Its upside is 0, "not estimated": what a cheaper sample wins depends on the change (caching
    the processed samples removes the wait after the first epoch; batching pure-Python per-sample
    work removes nothing, as the same work runs once per sample either way: the demo's tokeniser),
    and nothing in the run measures it. A guessed half of the wait, the earlier upside, made this
    unmeasured finding outrank the workers fix that measures x1.30 on the demo (docs/field.md)."""
    loader = ev.dataloader()
    if loader.num_workers != 0 or not loader.batch_size:
        return None
    per_sample_ms = statistics.median(ev.data_waits_s()) * 1e3 / loader.batch_size
    if per_sample_ms < HEAVY_SAMPLE_MS:
        return None
    wait = ev.steady_data_wait_fraction()
    return Hit("info", f"each sample takes {per_sample_ms:.1f} ms to load ({wait:.0%} of the step waits on it)", 0.0,
               {"load_ms_per_sample": round(per_sample_ms, 3), "batch_size": loader.batch_size,
                "dataset_type": loader.dataset_type, "data_wait_fraction_steady": round(wait, 4),
                "upside_estimated": False},
               "Each sample's Python work runs batch_size times per step, in the training process. How much a "
               "cheaper sample wins back is not estimated (upside shown as 0%): caching the processed samples "
               "removes the wait after the first epoch; a tokenizer or transform called once per batch helps only "
               "where its batched form is faster than the loop over samples.",
               Fix("Make each sample cheaper: cache or pre-compute the processed samples, or call a batched "
                   "(fast) tokenizer or transform once per batch in collate_fn.",
                   "def collate(samples):\n    batch = default_collate(samples)\n    return transform_batch(batch)\n"
                   "DataLoader(dataset, collate_fn=collate)"))


_MODE_FIX = {
    "main_process": _WORKERS_FIX,
    "workers": Fix("The workers cannot keep up: add workers (within the free cores), queue more batches, keep the "
                   "workers alive, and make each sample cheaper to load (cache decoded data, batch transforms).",
                   "DataLoader(dataset, num_workers=8, prefetch_factor=4, persistent_workers=True, pin_memory=True)"),
}


@rule("TD-DATA-009", "data", knob="num_workers")
def trace_dataloader_share(ev: Evidence) -> Hit | None:
    """From a trace alone (no measured steps: `diagnose --trace`), the step window spends more than 5%
    in DataLoader spans (`enumerate(DataLoader)#...`, any dialect): the TensorBoard plugin's DataLoader
    rule (`torch_tb_profiler/profiler/data.py`), with its 5% threshold. The iterator's class names the
    loading mode (`_SingleProcessDataLoaderIter`: num_workers=0). Upside: the GPU's idle time while the
    host is inside the DataLoader (trace window `idle_data_fraction`), or the DataLoader share on a CPU
    trace. Measured runs use TD-DATA-001..008, which read the wait itself."""
    try:
        ev.step_walls_s()
        return None  # measured steps: the data-wait rules above read the wait directly
    except MissingEvidence:
        pass
    window, rank = ev.window(), ev.trace_rank()
    share = window.figure("dataloader_fraction")
    if share <= TRACE_DATALOADER_SHARE:
        return None
    dialect = rank.dialect or Dialect()
    mode = dialect.dataloader_mode
    on_gpu = rank.has_device and window.state == "ok"
    cost = window.figure("idle_data_fraction") if on_gpu else share
    severity = severity_at(cost, WAIT_WARNING, WAIT_PROBLEM) or "info"
    waits = f"; the GPU idles waiting for data {cost:.0%} of the window" if on_gpu else ""
    mode_text = {"main_process": " (num_workers=0)", "workers": " (worker processes)"}.get(mode or "", "")
    return Hit(severity, f"{share:.0%} of the step window is in the DataLoader{mode_text}{waits}", cost,
               {"dataloader_fraction": round(share, 4), "idle_data_fraction": round(window.figure("idle_data_fraction"), 4),
                "dataloader_mode": mode, "dataloader_spans": list(dialect.dataloader_spans) if "dataloader_spans" in dialect.keys else None,
                "window": window.kind, "window_us": round(window.figure("span_us"), 1)},
               "The host fetches the next batch inside the step; while it does, the model's work waits "
               "(on a GPU, only what was queued before keeps it busy).",
               _MODE_FIX.get(mode or "", _WORKERS_FIX))
