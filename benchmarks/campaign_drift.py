"""How far one speed-up moves between back-to-back measurements, against the interval each gives.

The same re-measurement as tune_zoo.py's (the plain script against `torchdoctor run --apply KEPT`,
interleaved in rounds, each run timed by the script's own steps over at least `--confirm-window`
seconds: benchmarks/remeasure.py), repeated `--campaigns` times in a row. Each campaign's 95% CI says
how precisely it measured its own minute; the spread between campaigns says how far the next minute
may be. Where the second is wider, a claim measured over a short campaign cannot promise the first,
and tune's confirmation must last longer (`--confirm-span`, docs/tune.md): run it with `--rounds 5`
(about 45 s a campaign on the zoo's loop optimizer) and `--rounds 10` to compare.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/campaign_drift.py --workload compute_loop_optimizer
        --kept '{"optimizer_impl": "fused"}' [--campaigns 4] [--rounds 5] [--steps 20] [--warmup-steps 3]
        [--confirm-window 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import orjson

from remeasure import judge, remeasure, write_apply_file
from tune_zoo import WORKLOADS

from torchdoctor.bench import RUN_TOLERANCE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    parser.add_argument("--kept", required=True, help="the knob values to apply, as JSON (a tune result's `kept`)")
    parser.add_argument("--campaigns", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each campaign")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--confirm-window", type=float, default=1.0, help="seconds of steps a run times at least")
    parser.add_argument("--out", type=Path, default=None)
    options = parser.parse_args()
    script, args, _ = WORKLOADS[options.workload]
    campaigns = []
    with tempfile.TemporaryDirectory() as tmp:
        variants = {"plain": None, "tuned": write_apply_file(orjson.loads(options.kept), Path(tmp) / "kept.json")}
        for index in range(options.campaigns):
            start = time.perf_counter()
            runs = remeasure(script, args, variants, options.rounds, options.steps, options.warmup_steps, Path(tmp),
                             min_window_s=options.confirm_window)
            judged = judge(runs["plain"], runs["tuned"], RUN_TOLERANCE)
            campaigns.append({"speedup": judged["speedup"], "speedup_ci": judged["speedup_ci"],
                              "seconds": time.perf_counter() - start, "load_average": os.getloadavg()[0]})
            ci = judged["speedup_ci"]
            print(f"campaign {index}: x{judged['speedup']:.2f} "
                  f"({'x%.2f-x%.2f' % tuple(ci) if ci else 'no CI'}), {campaigns[-1]['seconds']:.0f} s, "
                  f"load {campaigns[-1]['load_average']:.1f}", flush=True)
    speedups = [c["speedup"] for c in campaigns]
    summary = {"workload": options.workload, "kept": orjson.loads(options.kept), "rounds": options.rounds,
               "campaigns": campaigns, "max_over_min": max(speedups) / min(speedups)}
    print(f"between campaigns: x{min(speedups):.2f} to x{max(speedups):.2f} (max/min {summary['max_over_min']:.2f})")
    if options.out:
        options.out.write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
