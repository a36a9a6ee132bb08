"""The collectives `torchdoctor comm` sweeps, their message sizes and nccl-tests' bandwidth definitions.

Definitions (nccl-tests, doc/PERFORMANCE.md), for a collective over n ranks on S bytes taking t seconds:
  algorithm bandwidth  algbw = S / t
  bus bandwidth        busbw = algbw * factor(op, n), the per-link rate an optimal ring would need,
                       so figures of different collectives and rank counts compare with the hardware's.
S is the size of the whole buffer, as in nccl-tests: the tensor of all_reduce and broadcast, the
gathered output of all_gather, the input of reduce_scatter, one rank's send buffer of all_to_all.
Bandwidths are in GB/s with 1 GB = 1e9 bytes, as nccl-tests prints them.
"""

from __future__ import annotations

COLLECTIVES: tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")

#: Bytes per element of the float32 buffers the sweep moves.
ELEMENT_BYTES = 4


def bus_factor(op: str, world_size: int) -> float:
    """nccl-tests' bus-bandwidth factor of `op` over `world_size` ranks."""
    n = world_size
    factors = {
        "all_reduce": 2 * (n - 1) / n,
        "all_gather": (n - 1) / n,
        "reduce_scatter": (n - 1) / n,
        "all_to_all": (n - 1) / n,
        "broadcast": 1.0,
    }
    if op not in factors:
        raise ValueError(f"unknown collective {op!r}; known: {', '.join(COLLECTIVES)}")
    return factors[op]


def bandwidths_gb_per_s(op: str, size_bytes: int, time_s: float, world_size: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s of one collective of `size_bytes` that took `time_s`."""
    algbw = size_bytes / time_s / 1e9
    return algbw, algbw * bus_factor(op, world_size)


def message_sizes(min_bytes: int, max_bytes: int, factor: int, world_size: int) -> list[int]:
    """Sizes from `min_bytes` to `max_bytes`, each `factor` times the last, rounded up to a whole
    number of float32 elements per rank (every collective splits its buffer into n equal chunks)."""
    if min_bytes < 1 or max_bytes < min_bytes:
        raise ValueError(f"need 1 <= min_bytes <= max_bytes, got {min_bytes} and {max_bytes}")
    if factor < 2:
        raise ValueError(f"step factor must be >= 2, got {factor}")
    quantum = ELEMENT_BYTES * world_size
    sizes: list[int] = []
    size = min_bytes
    while size <= max_bytes:
        rounded = -(-size // quantum) * quantum
        if not sizes or rounded != sizes[-1]:
            sizes.append(rounded)
        size *= factor
    return sizes
