"""Memory-layer rules, read from the Record's `memory` section (see docs/rules.md for the keys).

Upside is a fraction of peak device memory. Sources: the guides' key-metrics row "memory peak near
the limit -> activations or optimizer state -> gradient checkpointing" and troubleshooting row
"peak memory over the limit"; PyTorch "CUDA semantics: memory management" (expandable_segments).
"""

from __future__ import annotations

from torchdoctor.rules.base import Fix, Hit, rule, severity_at
from torchdoctor.rules.evidence import Evidence

PEAK_WARNING, PEAK_PROBLEM = 0.85, 0.95  # peak reserved / device total
SHARE_WARNING, SHARE_PROBLEM = 0.40, 0.60  # one kind of memory's share of the peak
FRAGMENTATION_WARNING, FRAGMENTATION_PROBLEM = 0.25, 0.50  # reserved but unallocated at the peak
PEAK_TARGET = 0.80  # a peak below this leaves room for batch-size or sequence growth


@rule("TD-MEM-001", "memory")
def peak_near_limit(ev: Evidence) -> Hit | None:
    """Peak reserved device memory is close to the device's capacity (OOM risk, no room to grow)."""
    peak, total = ev.memory("peak_reserved_bytes"), ev.memory("device_total_bytes")
    ratio = peak / total
    severity = severity_at(ratio, PEAK_WARNING, PEAK_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"peak memory at {ratio:.0%} of the device", ratio - PEAK_TARGET,
               {"peak_reserved_bytes": peak, "device_total_bytes": total},
               "The next larger batch or sequence will run out of memory; the allocator may already be retrying.",
               Fix("See the activation and optimizer-state findings for what to shrink.",
                   "torch.cuda.memory._record_memory_history()  # then inspect a snapshot"))


def _share_of_peak(ev: Evidence, key: str) -> tuple[float, int, int]:
    part, peak = ev.memory(key), ev.memory("peak_allocated_bytes")
    return (part / peak if peak else 0.0), part, peak


@rule("TD-MEM-002", "memory", knob="memory.activation_checkpointing")
def activations_dominate(ev: Evidence) -> Hit | None:
    """Saved activations are most of the peak: activation checkpointing trades recompute for memory."""
    share, part, peak = _share_of_peak(ev, "activations_bytes")
    severity = severity_at(share, SHARE_WARNING, SHARE_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"activations are {share:.0%} of peak memory", share,
               {"activations_bytes": part, "peak_allocated_bytes": peak},
               "Tensors saved for backward dominate; recomputing them in backward frees most of this memory.",
               Fix("Checkpoint the repeated blocks.",
                   "from torch.utils.checkpoint import checkpoint\nx = checkpoint(block, x, use_reentrant=False)"))


@rule("TD-MEM-003", "memory", knob="memory.optimizer_state")
def optimizer_state_dominates(ev: Evidence) -> Hit | None:
    """Optimizer state (e.g. Adam's two moments) is a large share of the peak: shard it (FSDP/ZeRO),
    or use 8-bit or lighter optimizers."""
    share, part, peak = _share_of_peak(ev, "optimizer_state_bytes")
    severity = severity_at(share, SHARE_WARNING, SHARE_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"optimizer state is {share:.0%} of peak memory", share,
               {"optimizer_state_bytes": part, "peak_allocated_bytes": peak},
               "Every parameter carries optimizer state; with several ranks it can be sharded instead of copied.",
               Fix("Shard the optimizer state across ranks (FSDP) or use an 8-bit optimizer.",
                   "model = torch.distributed.fsdp.fully_shard(model)"))


@rule("TD-MEM-004", "memory", knob="memory.expandable_segments")
def fragmentation(ev: Evidence) -> Hit | None:
    """Reserved memory far above allocated memory at the peak: the caching allocator is fragmented.
    PyTorch CUDA semantics docs: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."""
    reserved, allocated = ev.memory("peak_reserved_bytes"), ev.memory("peak_allocated_bytes")
    share = (reserved - allocated) / reserved if reserved else 0.0
    severity = severity_at(share, FRAGMENTATION_WARNING, FRAGMENTATION_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"{share:.0%} of reserved memory is unused (fragmentation)", share,
               {"peak_reserved_bytes": reserved, "peak_allocated_bytes": allocated},
               "Blocks of varying sizes leave gaps the allocator cannot reuse.",
               Fix("Let segments grow instead of splitting fixed ones.",
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python train.py"))


@rule("TD-MEM-005", "memory")
def reallocating_every_step(ev: Evidence) -> Hit | None:
    """The allocator asks the device for new memory (cudaMalloc) in steady-state steps, typically
    because input lengths vary. PyTorch CUDA semantics docs (caching allocator)."""
    mallocs = ev.memory("device_mallocs_per_step")
    if mallocs < 1:
        return None
    share = ev.memory("malloc_us_per_step") / (ev.summary("step_s") * 1e6)
    return Hit(severity_at(share, 0.02, 0.10) or "info", f"{mallocs:.0f} device allocations per step", share,
               {"device_mallocs_per_step": mallocs, "malloc_us_per_step": ev.memory("malloc_us_per_step")},
               "Varying shapes keep requesting new blocks; each cudaMalloc synchronises the device.",
               Fix("Pad inputs to a few fixed lengths (buckets), and try expandable segments.",
                   "length = ((length + 63) // 64) * 64  # pad to a multiple of 64"))
