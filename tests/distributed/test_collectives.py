"""nccl-tests' definitions: bus-bandwidth factors, bandwidths, message sizes."""

from __future__ import annotations

import pytest

from torchdoctor.distributed.collectives import COLLECTIVES, bandwidths_gb_per_s, bus_factor, message_sizes


@pytest.mark.parametrize(("op", "n", "factor"), [
    ("all_reduce", 2, 1.0), ("all_reduce", 8, 1.75), ("all_gather", 8, 0.875),
    ("reduce_scatter", 4, 0.75), ("all_to_all", 2, 0.5), ("broadcast", 8, 1.0),
])
def test_bus_factors_are_those_of_nccl_tests(op, n, factor):
    assert bus_factor(op, n) == pytest.approx(factor)


def test_bus_bandwidth_is_algorithm_bandwidth_times_the_factor():
    algbw, busbw = bandwidths_gb_per_s("all_reduce", 10**9, 0.5, 4)
    assert algbw == pytest.approx(2.0) and busbw == pytest.approx(3.0)


def test_unknown_collective_is_refused():
    with pytest.raises(ValueError, match="unknown collective"):
        bus_factor("gossip", 2)
    assert set(COLLECTIVES) == {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"}


def test_sizes_grow_by_the_factor_and_split_evenly_over_ranks():
    assert message_sizes(8, 1024, 4, 2) == [8, 32, 128, 512]
    assert message_sizes(1, 64, 2, 4) == [16, 32, 64]  # 1..8 bytes round up to one float per rank
    assert all(s % (4 * 3) == 0 for s in message_sizes(8, 1 << 20, 2, 3))
    with pytest.raises(ValueError):
        message_sizes(64, 8, 2, 2)
