"""Timing accuracy on the real clock: the targets the tests no longer assert, because a loaded
shared machine cannot meet them reliably (the tests check what is deterministic instead).

- bench, processes: `compare_processes` on two sleepers (10 ms, 150 ms); the difference of the
  median run times should be the 140 ms of extra sleep (target: within 70 ms).
- bench, statements: `compare_statements` on a 2 ms sleep; its median per-call time (target:
  within 50 % of 2 ms).
- serve, batcher: a `DynamicBatcher` (max_delay_ms 10, max_batch_size 4) on the real event loop
  and clock, six lonely requests then a burst of ten; its worst batch delay (target: at most
  10 ms + the loop's measured sleep overshoot + 5 ms) and whether the lonely requests waited
  (at least 9 ms).

Prints one JSON object per study with the measured figure, the target and whether it was met;
exits 1 if any target was missed. Run on a quiet machine:

    python benchmarks/timing_targets.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from torchdoctor.bench import Command, Policy, Variant, compare_processes, compare_statements
from torchdoctor.serve import BatcherConfig, BatchRecord, DynamicBatcher


def processes() -> dict:
    sleeper = lambda name, s: Command(name, (sys.executable, "-c", f"import time; time.sleep({s})"))  # noqa: E731
    result = compare_processes([sleeper("A", 0.01), sleeper("B", 0.15)],
                               policy=Policy(min_rounds=5, max_rounds=8, budget_s=20, aa_control=False))
    gap = result.median_s("B") - result.median_s("A")
    return {"study": "processes: median(B) - median(A)", "measured_s": gap, "target_s": "0.14 +- 0.07",
            "ok": abs(gap - 0.14) <= 0.07}


def statements() -> dict:
    result = compare_statements([Variant("short", "time.sleep(0.002)", setup="import time"),
                                 Variant("long", "time.sleep(0.004)", setup="import time")],
                                policy=Policy(min_rounds=5, max_rounds=8, budget_s=10), round_s=0.02)
    median = result.median_s("short")
    return {"study": "statements: median of a 2 ms sleep", "measured_s": median, "target_s": "0.002 +- 50%",
            "ok": abs(median - 0.002) <= 0.001}


async def _batcher() -> tuple[list[BatchRecord], float]:
    worst_overshoot = 0.0
    for _ in range(20):
        start = time.perf_counter()
        await asyncio.sleep(0.002)
        worst_overshoot = max(worst_overshoot, time.perf_counter() - start - 0.002)
    records: list[BatchRecord] = []
    async with DynamicBatcher(lambda items: [2 * i for i in items], BatcherConfig(max_batch_size=4, max_delay_ms=10),
                              records.append) as batcher:
        trickle = []
        for i in range(6):
            trickle.append(asyncio.ensure_future(batcher.submit(i)))
            await asyncio.sleep(0.015)
        await asyncio.gather(*trickle, *(batcher.submit(i) for i in range(6, 16)))
    return records, worst_overshoot


def batcher() -> dict:
    records, overshoot = asyncio.run(_batcher())
    worst = max(r.delay_s for r in records)
    bound = 0.010 + overshoot + 0.005
    lonely_waited = any(r.size == 1 and r.delay_s >= 0.009 for r in records)
    return {"study": "batcher: worst batch delay (real loop)", "measured_s": worst, "target_s": f"<= {bound:.4f}",
            "lonely_requests_waited": lonely_waited, "ok": worst <= bound and lonely_waited}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    missed = 0
    for _ in range(args.repeats):
        for study in (processes, statements, batcher):
            row = study()
            missed += not row["ok"]
            print(json.dumps(row), flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
