"""Memory-layer rules, read from the Record's `memory.breakdown` (torchdoctor.memory's step breakdown:
`peak_bytes`, `categories_bytes`, and `allocator` figures on CUDA).

Upside is a fraction of peak device memory. Sources: the guides' key-metrics row "memory peak near
the limit -> activations or optimizer state -> gradient checkpointing" and troubleshooting row
"peak memory over the limit"; PyTorch "CUDA semantics: memory management" (expandable_segments).
"""

from __future__ import annotations

from torchdoctor.capability import TorchVersion, requirement, supports
from torchdoctor.rules.capabilities import run_torch
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, measured, rule, severity_at
from torchdoctor.rules.evidence import Evidence

PEAK_WARNING, PEAK_PROBLEM = 0.85, 0.95  # peak reserved / device total
SHARE_WARNING, SHARE_PROBLEM = 0.40, 0.60  # one kind of memory's share of the peak
FRAGMENTATION_WARNING, FRAGMENTATION_PROBLEM = 0.25, 0.50  # allocator fragmentation: inactive split bytes / reserved
PEAK_TARGET = 0.80  # a peak below this leaves room for batch-size or sequence growth
PRESSURE = 0.70  # peak / device memory above which what fills the peak is worth shrinking


@rule("TD-MEM-001", "memory")
def peak_near_limit(ev: Evidence) -> Hit | None:
    """Peak reserved device memory is close to the device's capacity (OOM risk, no room to grow).
    From the allocator figures of a measured run, else from a trace's `[memory]` records against its
    `deviceProperties` (the TensorBoard plugin's memory rule, peak > 90% of the device: our 85%
    warning is below it, and reserved >= the allocated bytes the plugin reads)."""
    try:
        peak = float(measured(ev.allocator().peak_reserved_bytes, "memory.breakdown.allocator.peak_reserved_bytes"))
        total = ev.device_memory_bytes()
    except MissingEvidence:
        peak, total = _trace_memory_peak(ev)
    ratio = peak / total
    severity = severity_at(ratio, PEAK_WARNING, PEAK_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"peak memory at {ratio:.0%} of the device", ratio - PEAK_TARGET,
               {"peak_reserved_bytes": peak, "device_total_bytes": total},
               "The next larger batch or sequence will run out of memory; the allocator may already be retrying.",
               Fix("See the activation and optimizer-state findings for what to shrink.",
                   "torch.cuda.memory._record_memory_history()  # then inspect a snapshot"))


def _trace_memory_peak(ev: Evidence) -> tuple[float, int]:
    """(peak bytes, device bytes) of the fullest device in the trace's `[memory]` records."""
    devices = [(max(m.peak_reserved_bytes, m.peak_allocated_bytes), m.total_bytes)
               for m in ev.trace_facts().memory.values() if m.total_bytes]
    if not devices:
        raise MissingEvidence("device memory peak (allocator figures or the trace's [memory] records)")
    return max(devices, key=lambda d: d[0] / d[1])


def _share_of_peak(ev: Evidence, category: str) -> tuple[float, int, int]:
    """`category`'s share of the step's peak; (0, ...) unless the device is under memory pressure."""
    part, peak = ev.memory_category(category), measured(ev.memory().peak_bytes, "memory.breakdown.peak_bytes")
    reserved = float(measured(ev.allocator().peak_reserved_bytes, "memory.breakdown.allocator.peak_reserved_bytes"))
    if reserved / ev.device_memory_bytes() < PRESSURE:
        return 0.0, part, peak
    return (part / peak if peak else 0.0), part, peak


@rule("TD-MEM-002", "memory", knob="activation_checkpointing")
def activations_dominate(ev: Evidence) -> Hit | None:
    """Under memory pressure, saved activations are most of the peak: activation checkpointing trades
    recompute for memory. Guides' key-metrics row "memory peak near the limit"."""
    share, part, peak = _share_of_peak(ev, "activations")
    severity = severity_at(share, SHARE_WARNING, SHARE_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"activations are {share:.0%} of peak memory", share,
               {"activations_bytes": part, "peak_bytes": peak},
               "Tensors saved for backward dominate; recomputing them in backward frees most of this memory.",
               Fix("Checkpoint the repeated blocks.",
                   "from torch.utils.checkpoint import checkpoint\nx = checkpoint(block, x, use_reentrant=False)"))


@rule("TD-MEM-003", "memory")
def optimizer_state_dominates(ev: Evidence) -> Hit | None:
    """Under memory pressure, optimizer state (Adam's two moments) is a large share of the peak: shard
    it (FSDP/ZeRO) or use 8-bit or lighter optimizers. Guides' troubleshooting row "peak over the limit"."""
    share, part, peak = _share_of_peak(ev, "optimizer_state")
    severity = severity_at(share, SHARE_WARNING, SHARE_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"optimizer state is {share:.0%} of peak memory", share,
               {"optimizer_state_bytes": part, "peak_bytes": peak},
               "Every parameter carries optimizer state; with several ranks it can be sharded instead of copied.",
               _sharding_fix(run_torch(ev)))


def _sharding_fix(torch: TorchVersion) -> Fix:
    """FSDP2's `fully_shard` where the run's torch has it at its public path (2.6), FSDP1 where the
    torch is known older, and FSDP2 with its requirement said where the version is not known."""
    summary = "Shard the optimizer state across ranks (FSDP) or use an 8-bit optimizer."
    if supports("fully_shard", torch) is False and supports("fsdp", torch):
        return Fix(summary, "from torch.distributed.fsdp import FullyShardedDataParallel\n"
                            "model = FullyShardedDataParallel(model)")
    needs = requirement("fully_shard", torch)
    return Fix(summary + (f" ({needs}; FullyShardedDataParallel from 1.11.)" if needs else ""),
               "model = torch.distributed.fsdp.fully_shard(model)")


@rule("TD-MEM-004", "memory")
def fragmentation(ev: Evidence) -> Hit | None:
    """A large share of reserved memory sits in split, free blocks (allocator `fragmentation` =
    inactive split bytes / reserved). PyTorch CUDA semantics docs: expandable_segments:True."""
    share = float(measured(ev.allocator().fragmentation, "memory.breakdown.allocator.fragmentation"))
    severity = severity_at(share, FRAGMENTATION_WARNING, FRAGMENTATION_PROBLEM)
    if severity is None:
        return None
    reserved = float(measured(ev.allocator().peak_reserved_bytes, "memory.breakdown.allocator.peak_reserved_bytes"))
    return Hit(severity, f"{share:.0%} of reserved memory is fragmented", share,
               {"fragmentation_fraction": round(share, 4), "peak_reserved_bytes": reserved},
               "Blocks of varying sizes leave gaps the allocator cannot reuse for larger requests.",
               Fix("Let segments grow instead of splitting fixed ones.",
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python train.py"))


@rule("TD-MEM-005", "memory")
def allocator_retries(ev: Evidence) -> Hit | None:
    """The caching allocator had to free its cache and retry (num_alloc_retries > 0), typically because
    input shapes vary step to step. PyTorch CUDA semantics docs (memory management, cudaMalloc retries)."""
    retries = float(measured(ev.allocator().num_alloc_retries, "memory.breakdown.allocator.num_alloc_retries"))
    if retries < 1:
        return None
    share = float(measured(ev.allocator().fragmentation, "memory.breakdown.allocator.fragmentation"))
    return Hit("warning", f"{retries:.0f} allocator retries: memory is re-allocated as shapes change", share,
               {"num_alloc_retries": retries, "fragmentation_fraction": round(share, 4)},
               "Each retry frees cached blocks and calls cudaMalloc again, which synchronises the device.",
               Fix("Pad inputs to a few fixed lengths (buckets) and enable expandable segments.",
                   "length = ((length + 63) // 64) * 64  # pad to a multiple of 64\n"
                   "# PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"))
