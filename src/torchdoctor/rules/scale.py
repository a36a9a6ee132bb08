"""Scale-layer rules: several ranks, communication and balance.

Sources: the guides' troubleshooting row "multi-GPU speed-up far below the GPU count ->
communication wait, imbalance, small batch" and DDP section (DistributedSampler.set_epoch, no_sync);
HolisticTraceAnalysis communication/computation overlap and straggler definitions.
"""

from __future__ import annotations

import re
import statistics

from torchdoctor.distributed.analysis import (STRAGGLER_EXPLANATION, STRAGGLER_FINDING, STRAGGLER_FIX,
                                              STRAGGLER_PROBLEM, STRAGGLER_WARNING, straggler_finding)
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, hit_of, rule, severity_at
from torchdoctor.rules.evidence import Evidence
from torchdoctor.trace.summary.trace_summary import MultiRank

COMM_WARNING, COMM_PROBLEM = 0.10, 0.30  # exposed (not overlapped) communication share of device time
IMBALANCE_WARNING, IMBALANCE_PROBLEM = 0.10, 0.30  # (max - min) / max of compute over ranks


@rule("TD-SCALE-001", "scale", knob="bucket_cap_mb")
def exposed_communication(ev: Evidence) -> Hit | None:
    """Communication not overlapped with compute takes a share of the trace window: NCCL/RCCL kernels
    and host `nccl:*`/`gloo:*` collectives while no computation kernel or copy runs (HTA comm/comp
    overlap; the TensorBoard plugin's communication rule, "> 10% of the step": warning from 10%, info
    below). Works on CPU-only (gloo) traces too. Guides' DDP section (NCCL bandwidth, bucket sizes)."""
    window = ev.window()
    if not window.communication_fraction or not window.span_us:
        return None
    exposed = window.figure("communication_exposed_fraction")
    severity = severity_at(exposed, COMM_WARNING, COMM_PROBLEM) or "info"
    try:
        overlap_fraction = ev.device().overlap.comm_comp_overlap_fraction
    except MissingEvidence:
        overlap_fraction = None
    return Hit(severity, f"communication not hidden behind compute: {exposed:.0%} of the step window", exposed,
               {"communication_fraction": round(window.communication_fraction, 4),
                "communication_exposed_fraction": round(exposed, 4),
                "comm_comp_overlap_fraction": overlap_fraction,
                "window": window.kind, "window_us": round(window.span_us, 1)},
               *_overlap_advice(_sharded(ev)))


#: FSDP's collectives: parameters all-gathered before use, gradients reduce-scattered (DDP all-reduces).
_FSDP_KERNEL = re.compile(r"all_?gather|reduce_?scatter", re.I)
_ALL_REDUCE = re.compile(r"all_?reduce", re.I)


def _sharded(ev: Evidence) -> bool:
    """The exposed communication is FSDP's: a model wrapped in FullyShardedDataParallel or made an
    FSDP module by `fully_shard` (its class renamed `FSDP<name>`), or, in a trace alone, collective
    kernels that all-gather or reduce-scatter and none that all-reduces."""
    try:
        if any((m.class_name or "").startswith(("FullyShardedDataParallel", "FSDP")) for m in ev.models()):
            return True
    except MissingEvidence:
        pass
    try:
        names = [k.name for k in ev.device().kernels.top]
    except MissingEvidence:
        return False
    return any(_FSDP_KERNEL.search(n) for n in names) and not any(_ALL_REDUCE.search(n) for n in names)


def _overlap_advice(sharded: bool) -> tuple[str, Fix, str | None]:
    """(explanation, fix, knob) for DDP's gradient all-reduce, or FSDP's all-gathers and
    reduce-scatters, whose own settings are its prefetching and when it reshards (FSDP docs:
    `backward_prefetch`, `forward_prefetch`; FSDP2's `reshard_after_forward`); DDP's `bucket_cap_mb`
    does not apply to FSDP, so no knob is named there."""
    if sharded:
        return ("FSDP all-gathers each block's parameters before it runs and reduce-scatters its gradients; "
                "those that are not prefetched wait in line with compute.",
                Fix("Prefetch FSDP's all-gathers: backward_prefetch and forward_prefetch (FSDP1), or keep the "
                    "last blocks unsharded after forward (FSDP2: reshard_after_forward=False); larger per-rank "
                    "batches hide more.",
                    "FSDP(model, backward_prefetch=BackwardPrefetch.BACKWARD_PRE, forward_prefetch=True)"), "")
    return ("Gradient all-reduce that runs after compute, rather than during backward, adds to every step.",
            Fix("Overlap it: tune DDP buckets, larger per-rank batches, or gradient accumulation with no_sync.",
                "DDP(model, bucket_cap_mb=50, gradient_as_bucket_view=True)"), None)


@rule(STRAGGLER_FINDING, "scale")
def straggler_rank(ev: Evidence) -> Hit | None:
    """One rank's steps are slower than the others' and everyone waits for it: the observed ranks'
    `distributed.stragglers` (work outside backward; the finding is built by
    `torchdoctor.distributed.analysis.straggler_finding`, which `torchdoctor scale` reports too), else
    the traces' `multi_rank` (HTA straggler analysis). Guides' distributed troubleshooting: "one rank's
    operators clearly longer"."""
    try:
        stragglers = ev.distributed("stragglers")
    except MissingEvidence:
        return _trace_straggler(ev)
    return hit_of(straggler_finding(stragglers))


def _trace_straggler(ev: Evidence) -> Hit | None:
    multi = ev.multi_rank()
    excess = multi.slowest_rank_excess_fraction or 0.0
    severity = severity_at(excess, STRAGGLER_WARNING, STRAGGLER_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"rank {multi.slowest_rank} is {excess:.0%} slower than the median rank",
               excess / (1 + excess), {"slowest_rank": multi.slowest_rank, "slowest_rank_excess_fraction":
                                       round(excess, 4), "stragglers": list(multi.stragglers)},
               STRAGGLER_EXPLANATION, STRAGGLER_FIX)


@rule("TD-SCALE-003", "scale")
def compute_imbalance(ev: Evidence) -> Hit | None:
    """Ranks do unequal amounts of compute (HTA per-rank compute); balancing brings the slowest rank
    towards the mean. Guides: "a rank with markedly longer operators -> load imbalance". Silent when
    the rank with the most compute is a slow device (TD-SCALE-017): the same work runs slower there,
    and balancing the work would not help."""
    multi = ev.multi_rank()
    imbalance = multi.compute_imbalance_fraction or 0.0
    severity = severity_at(imbalance, IMBALANCE_WARNING, IMBALANCE_PROBLEM)
    if severity is None or _most_compute_on_a_slow_device(multi):
        return None
    return Hit(severity, f"compute differs by {imbalance:.0%} between ranks", imbalance / 2,
               {"compute_imbalance_fraction": round(imbalance, 4), "per_rank": [r.to_dict() for r in multi.per_rank]},
               "Some ranks get more work (longer sequences, bigger shards) and the rest wait at each collective.",
               Fix("Balance the work per rank (length-bucketed sampling, even shards).",
                   "sampler = DistributedSampler(dataset, drop_last=True)  # plus length bucketing"))


def _most_compute_on_a_slow_device(multi: MultiRank) -> bool:
    """The rank with the most compute is one whose kernels run slower on the same work."""
    slow = set((multi.slow_devices or {}).get("ranks", []))
    timed = [r for r in multi.per_rank if r.compute_us is not None]
    return bool(slow and timed) and max(timed, key=lambda r: r.compute_us or 0.0).rank in slow


@rule("TD-SCALE-004", "scale", lint_topic="scale.data_parallel")
def data_parallel(ev: Evidence) -> Hit | None:
    """nn.DataParallel instead of DistributedDataParallel. PyTorch docs: "use DistributedDataParallel
    instead of DataParallel" (single process, GIL-bound, replicates the model every step). From the
    observed models, else from a trace: `DataParallel.forward` spans with device work on several
    GPUs (the TensorBoard plugin's DataParallel rule)."""
    try:
        models = [m for m in ev.models() if m.class_name == "DataParallel"]
        gpus = ev.devices().gpu_count or 0 if models else 0
        forward = ev.summary("forward_fraction") if models else 0.0
    except MissingEvidence:
        facts = ev.trace_facts()
        models = ["DataParallel"] if facts.data_parallel_forward_count else []
        gpus = len(facts.devices_used)
        forward = ev.trace_rank().shares.forward_fraction or 0.0
    if not models:
        return None
    share = forward * (1 - 1 / max(1, gpus)) if gpus > 1 else 0.0
    return Hit("warning" if gpus > 1 else "info", "nn.DataParallel replicates the model every step", share,
               {"model_class": "DataParallel", "gpu_count": gpus, "forward_fraction": round(forward, 4)},
               "DataParallel scatters inputs and copies the model from one Python process each step.",
               Fix("Launch one process per GPU with torchrun and wrap the model in DDP.",
                   "model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])"))


@rule("TD-SCALE-005", "scale", lint_topic="scale.sampler_set_epoch")
def sampler_without_set_epoch(ev: Evidence) -> Hit | None:
    """A shuffling DistributedSampler repeats the same order each epoch: measured
    (`distributed.runtime.sampler.set_epoch_missing`) or proven by lint with the sampler seen.
    Guides' DDP section ("always call sampler.set_epoch(epoch)") and the DistributedSampler docs."""
    hits = ev.lint_hits("scale.sampler_set_epoch")
    try:
        measured = ev.distributed("runtime", "sampler", "set_epoch_missing")
    except MissingEvidence:
        measured = None
    if measured is False or not (measured or (hits and ev.dataloader().sampler_type == "DistributedSampler")):
        return None
    return Hit("warning", "DistributedSampler without set_epoch: the same order every epoch", 0.0,
               {"sampler_type": "DistributedSampler", "set_epoch_missing_measured": measured, "lint": hits},
               "A correctness issue rather than speed: shuffling repeats, which can slow convergence.",
               Fix("Call set_epoch at the start of each epoch.", "for epoch in range(epochs):\n    sampler.set_epoch(epoch)"))


@rule("TD-SCALE-006", "scale", knob="no_sync")
def accumulation_without_no_sync(ev: Evidence) -> Hit | None:
    """Gradient accumulation where every micro-batch's backward all-reduces (no `no_sync()`), measured
    as synchronising backwards per optimizer step. Guides' FSDP/DDP advice on accumulation; PyTorch
    DistributedDataParallel.no_sync docs."""
    sync = ev.distributed("runtime", "grad_sync")
    if not sync.accumulation_without_no_sync:
        return None
    per_step = float(ev.distributed("runtime", "grad_sync", "allreduce_backwards_per_optimizer_step"))
    share = ev.summary("backward_fraction") * (1 - 1 / per_step)
    return Hit(severity_at(share, 0.05, 0.20) or "info",
               f"{per_step:.1f} gradient all-reduces per optimizer step: accumulation without no_sync()", share,
               {"allreduce_backwards_per_optimizer_step": per_step,
                "backward_per_optimizer_step": sync.backward_per_optimizer_step,
                "backward_fraction": round(ev.summary("backward_fraction"), 4)},
               "Only the last micro-batch's gradients need to be averaged; the earlier all-reduces are wasted.",
               Fix("Skip the all-reduce on all but the last micro-batch.",
                   "ctx = model.no_sync() if (i + 1) % accum else contextlib.nullcontext()\n"
                   "with ctx:\n    loss.backward()"))


@rule("TD-SCALE-007", "scale")
def uneven_batches(ev: Evidence) -> Hit | None:
    """Ranks get batches of unequal cost (batch x padded length) in the same step, so light ranks wait
    (`distributed.runtime.batch_cost.idle_fraction`). Guides: load imbalance across ranks."""
    cost = ev.distributed("runtime", "batch_cost")
    idle = float(cost.idle_fraction)
    severity = severity_at(idle, IMBALANCE_WARNING, IMBALANCE_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"uneven work per rank: {idle:.0%} of lockstep time would be spent waiting", idle,
               {"batch_cost_idle_fraction": round(idle, 4), "heaviest_rank_by_step": cost.heaviest_rank_by_step},
               "Variable-length samples give some ranks much longer batches in the same step.",
               Fix("Bucket by length so every rank gets similar work per step.",
                   "from torchdoctor.distributed.sampler import LengthBucketingDistributedSampler\n"
                   "sampler = LengthBucketingDistributedSampler(lengths, batch_size=8)"))


@rule("TD-SCALE-014", "scale")
def ddp_without_nccl(ev: Evidence) -> Hit | None:
    """DistributedDataParallel on GPUs without the NCCL backend: the trace has
    `DistributedDataParallel.forward` spans and device work or CUDA devices of compute capability
    >= 3.5, but no NCCL collective (`nccl:*` spans or NCCL kernels), e.g. gloo. The TensorBoard plugin's
    rule ("NCCL backend is ... highly recommended when using DDP"); PyTorch distributed docs (use NCCL
    for GPU training). Upside: the exposed communication share of the window, an upper bound."""
    facts = ev.trace_facts()
    if not facts.ddp_forward_count or {"nccl", "rccl"} & set(facts.comm_libraries):
        return None
    capable = [p for p in facts.device_properties if (p.compute_capability or (0, 0)) >= (3, 5)]
    if not capable and not facts.devices_used:
        return None  # a CPU job: gloo is the right backend there
    window = ev.window()
    exposed = window.figure("communication_exposed_fraction")
    return Hit("warning", "DDP on GPUs without NCCL: " + (", ".join(facts.comm_libraries) or "no NCCL collective"),
               exposed, {"ddp_forward_count": facts.ddp_forward_count, "comm_libraries": list(facts.comm_libraries),
                         "communication_exposed_fraction": round(exposed, 4), "window": window.kind},
               "gloo moves GPU gradients through host memory and the CPU; NCCL reduces them on the GPUs over NVLink/PCIe.",
               Fix("Initialise the process group with the NCCL backend for GPU training.",
                   "torch.distributed.init_process_group(backend='nccl')"))


@rule("TD-SCALE-015", "scale")
def learning_rate_and_global_batch(ev: Evidence) -> Hit | None:
    """Several data-parallel ranks each take a per-rank batch, so the global batch is world size x
    per-rank batch; a learning rate tuned for one process is then usually too small (the linear
    scaling rule with warm-up, Goyal et al. 2017, "Accurate, Large Minibatch SGD"; the guides' DDP
    section: `batch_size` is per GPU, the global batch is batch_size x world_size). One Record does
    not say which batch the learning rate was tuned for, so this is an info hint with upside 0 that
    states the figures (`env.optimizers[].lr`, `steps[].batch_size`, `env.distributed.world_size`);
    never raised for one process."""
    placement = ev.environment().distributed
    world = placement.world_size if placement else None
    lrs = [o.lr for o in ev.optimizers() if o.lr]
    if not world or world < 2 or not lrs:
        return None
    per_rank = int(statistics.median(ev.batch_sizes()))
    return Hit("info", f"{world} ranks x batch {per_rank} = global batch {world * per_rank}; lr {lrs[0]:g}", 0.0,
               {"world_size": world, "per_rank_batch": per_rank, "global_batch": world * per_rank, "lr": lrs[0]},
               "Each optimizer step averages the gradients of the global batch, so the step is as large as "
               f"one process taking {world * per_rank} samples. A learning rate tuned for a batch of {per_rank} "
               "usually needs scaling (linearly for SGD, with warm-up; by about the square root for Adam) when the "
               "world size grows; if it was tuned for this global batch, nothing is to be done.",
               Fix("Scale the learning rate with the world size where it was tuned on fewer ranks, with a warm-up.",
                   "lr = base_lr * world_size  # tuned at one process; warm it up over the first steps\n"
                   "scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1 / world_size, "
                   "total_iters=500)"))


@rule("TD-SCALE-016", "scale", knob="static_graph")
def find_unused_parameters_unneeded(ev: Evidence) -> Hit | None:
    """DDP was built with `find_unused_parameters=True` and no parameter went unused
    (`distributed.runtime.ddp.find_unused_parameters_unneeded`: DDP's own logging data counted 0
    unused parameter bytes), without `static_graph`. The flag makes DDP traverse the autograd graph
    from the outputs every iteration to find parameters that will get no gradient, and stops it
    rebuilding its buckets in execution order (PyTorch DDP docs; the reducer's own warning; the
    Performance Tuning Guide's DDP section). The traversal's time is
    not measured apart from backward, so this is an info hint with upside 0
    (`upside_estimated: false`); the `static_graph` knob measures the fix that tune can apply."""
    settings = ev.distributed("runtime", "ddp")
    if not settings.find_unused_parameters_unneeded or settings.static_graph:
        return None
    return Hit("info", "DDP find_unused_parameters=True, but no parameter went unused", 0.0,
               {"find_unused_parameters": True, "unused_parameter_bytes": settings.unused_parameter_bytes,
                "has_rebuilt_buckets": settings.has_rebuilt_buckets, "upside_estimated": False},
               "With find_unused_parameters=True, DDP walks the autograd graph from the outputs after every "
               "forward to mark the parameters that will get no gradient; here none was unused, so the walk is "
               "wasted host time each step, and DDP keeps its gradient buckets in constructor order instead of rebuilding "
               "them in the order gradients arrive. Its cost is not measured apart from backward (upside shown as 0%). "
               "Keep the flag if some steps skip part of the model (control flow that varies by step).",
               Fix("Drop the flag (find_unused_parameters=False is the default); or, where the same parameters "
                   "are used every step, pass static_graph=True so DDP searches once.",
                   "# find_unused_parameters=False, the default\n"
                   "model = DistributedDataParallel(model, device_ids=[local_rank])\n"
                   "# or, the same parameters used every step:\n"
                   "model = DistributedDataParallel(model, device_ids=[local_rank], static_graph=True)"))


SLOW_DEVICE_PROBLEM = 0.30  # median kernel excess on the slow rank from which it is a problem


@rule("TD-SCALE-017", "scale")
def slow_device(ev: Evidence) -> Hit | None:
    """A rank's GPU runs the same kernels slower than the other ranks' (`multi_rank.slow_devices`:
    more than half of the kernel groups every rank runs, by kernel name and launching operator,
    took over `excess_threshold_fraction` (15 %) longer there than the other ranks' median): a slow,
    throttled or degraded GPU or node, which every synchronous collective waits for. A straggler
    that waits or whose host is slow runs its kernels as fast as the others and is not one.
    Warning; problem from a 30 % median excess. Upside: the slowest such rank's computation share
    of its window times the share of its kernel time the excess is. HTA's per-rank kernel
    comparison; the guides' distributed troubleshooting ("one rank's operators clearly longer")."""
    slow = ev.multi_rank().slow_devices or {}
    by_rank = {r["rank"]: r for r in slow.get("by_rank", [])}
    flagged = [r for r in slow.get("ranks", []) if r in by_rank]
    if not flagged:
        return None
    worst = max(flagged, key=lambda r: by_rank[r]["median_excess_fraction"])
    excess = max(by_rank[worst]["median_excess_fraction"], 0.0)
    share = _compute_share(ev, worst)
    return Hit(severity_at(excess, 0.0, SLOW_DEVICE_PROBLEM) or "warning",
               f"rank {worst}'s GPU runs the same kernels {excess:.0%} slower than the other ranks'",
               share * excess / (1 + excess),
               {"slow_device_ranks": flagged, "median_excess_fraction": round(excess, 4),
                "slower_groups_fraction": round(by_rank[worst]["slower_groups_fraction"], 4),
                "groups_compared_count": slow.get("groups_compared_count"), "compute_fraction": round(share, 4)},
               "The same kernels, launched by the same operators, take longer on this rank than on the others: "
               "its GPU is slower (clocks throttled by power or heat, a degraded part, another process on it) "
               "or its node is (PCIe link, memory). Every collective waits for it, so the whole job runs at its pace.",
               Fix("Check the slow rank's GPU and node (clocks, throttle reasons, temperature, ECC errors, other "
                   "processes on it) and drain or replace it.",
                   "nvidia-smi -q -d PERFORMANCE,CLOCK,TEMPERATURE,ECC  # on the slow rank's node"))


def _compute_share(ev: Evidence, rank: int) -> float:
    """The computation share of `rank`'s trace window (0 where its section has no device figures)."""
    for section in ev.trace_ranks():
        if section.rank == rank and section.device is not None:
            return section.device.temporal.compute_fraction or 0.0
    return 0.0
