"""What-if estimates: sizes, batch scaling, checkpointing and autocast arithmetic."""

from __future__ import annotations

import pytest

from torchdoctor.memory import BatchScaling, MemoryBreakdown, ModuleMemory, parse_bytes, what_if
from torchdoctor.memory.whatif import MemoryInputError, autocast_peak, checkpointing_peak, repeated_blocks

MiB = 2**20


def breakdown(batch_size: int = 4, activations: int = 40 * MiB) -> MemoryBreakdown:
    cats = {"parameters": 10 * MiB, "optimizer_state": 20 * MiB, "activations": activations, "temporaries": 0}
    blocks = [ModuleMemory(f"M.blocks.{i}", MiB, 1 * MiB, activation_bytes=9 * MiB) for i in range(4)]
    return MemoryBreakdown("mem_tracker", "cpu", sum(cats.values()), cats, "backward",
                           [ModuleMemory("M.embed", MiB, MiB, activation_bytes=MiB), *blocks],
                           batch_size=batch_size)  # fmt: skip


@pytest.mark.parametrize("text, expected", [("16GiB", 16 * 2**30), ("512 MiB", 512 * MiB), ("8GB", 8 * 10**9),
                                            ("1.5kib", 1536), ("100", 100)])
def test_sizes_are_read_with_binary_and_decimal_units(text, expected):
    assert parse_bytes(text) == expected


def test_an_unreadable_size_says_how_to_write_it():
    with pytest.raises(MemoryInputError, match="write it like 16GiB"):
        parse_bytes("lots")


def test_the_largest_batch_follows_the_linear_model():
    scaling = BatchScaling.from_one(breakdown())  # 30 MiB fixed + 10 MiB per sample
    assert scaling.fixed_bytes == 30 * MiB and scaling.per_sample_bytes == 10 * MiB
    assert scaling.largest_batch(100 * MiB) == 7
    assert scaling.largest_batch(20 * MiB) == 0


def test_fitting_needs_two_different_batch_sizes():
    with pytest.raises(MemoryInputError, match="two different"):
        BatchScaling.fit(breakdown(4), breakdown(4))
    fitted = BatchScaling.fit(breakdown(4, 40 * MiB), breakdown(8, 88 * MiB))
    assert fitted.per_sample_bytes == 12 * MiB and fitted.peak_at(4) == 70 * MiB


def test_only_numbered_siblings_count_as_repeated_blocks():
    assert list(repeated_blocks(breakdown().modules)) == ["M.blocks"]


def test_checkpointing_keeps_block_outputs_and_recomputes_one_block():
    # 4 blocks each free 9 - 1 MiB; one block's 9 MiB comes back during backward.
    assert checkpointing_peak(breakdown()) == 70 * MiB - 32 * MiB + 9 * MiB


def test_autocast_halves_activations_and_adds_half_the_weights():
    assert autocast_peak(breakdown()) == 70 * MiB - 20 * MiB + 5 * MiB


def test_what_if_without_a_batch_size_leaves_the_batch_estimates_empty():
    w = what_if(breakdown(batch_size=0), budget_bytes=2**30)
    assert w.largest_batch_in_budget is None and w.checkpointing_peak_bytes is not None
