"""Figures for docs/memory.md: one GPT-style training step on CPU, with and without activation
checkpointing of its blocks, measured by torchdoctor.memory (MemTracker), and the estimates.

Run: `PYTHONPATH=. python benchmarks/memory_gpt_checkpointing.py` from the repository root (about a minute).
"""

from __future__ import annotations

from torchdoctor.report.format import fmt_bytes
from torchdoctor.memory.whatif import BatchScaling, autocast_peak, checkpointing_peak
from tests.memory.test_gpt_validation import CONFIG, measure


def main() -> None:
    print(f"GPT: {CONFIG}")
    runs = {(b, c): measure(b, c) for b, c in ((4, False), (4, True), (8, False))}
    for (batch, ckpt), r in runs.items():
        cats = r.categories_bytes
        print(f"batch {batch} checkpointing={ckpt}: peak {fmt_bytes(r.peak_bytes)} ({r.phase}), dynamic "
              f"{fmt_bytes(r.dynamic_bytes)}, activations {fmt_bytes(cats['activations'])} "
              f"({r.share('activations'):.1%} of peak), temporaries {fmt_bytes(cats['temporaries'])}")
    plain = runs[4, False]
    print(f"estimate with checkpointing: {fmt_bytes(checkpointing_peak(plain))} "
          f"(measured {fmt_bytes(runs[4, True].peak_bytes)})")
    print(f"estimate with bf16 autocast: {fmt_bytes(autocast_peak(plain))} "
          f"(measured {fmt_bytes(measure(4, False, autocast=True).peak_bytes)})")
    one, two = BatchScaling.from_one(plain), BatchScaling.fit(plain, runs[8, False])
    print(f"per sample: {fmt_bytes(one.per_sample_bytes)} from one batch size, "
          f"{fmt_bytes(two.per_sample_bytes)} fitted on two; largest batch in 16GiB: "
          f"{one.largest_batch(16 * 2**30)} / {two.largest_batch(16 * 2**30)}")


if __name__ == "__main__":
    main()
