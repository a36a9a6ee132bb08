"""Speed-up found by `torchdoctor tune` against a hand-written expert fix, per zoo workload.

For each problem workload: tune it (wall time recorded), then measure side by side, interleaved
(baseline, expert, tuned, baseline, ...), `--rounds` fresh observed runs of each, and report the
median step time of each, both speed-ups and their ratio (goal: tuned / expert >= 0.95).

The expert fix is written here by hand, as the knob values an engineer reading the tuning guides
would set for that workload's known problem on this machine (the same values a code edit would
give; `torchdoctor.knobs.diff` shows the edit).

    python benchmarks/tune_zoo.py [--rounds 3] [--steps 30] [--time-budget 600] [--max-trials 12]
                                  [--workloads a,b] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from torchdoctor.store import RunStore
from torchdoctor.tune import TuneConfig, Tuner
from torchdoctor.tune.trial import run_trial
from torchdoctor.zoo import demo_script, workload_path

CORES = len(os.sched_getaffinity(0))

#: workload -> (script, args, the expert's fix as knob values)
WORKLOADS: dict[str, tuple[Path, list[str], dict[str, Any]]] = {
    # Data-bound text pipeline: move tokenisation into worker processes, one core left to the step.
    "demo": (demo_script(), ["--batch-size", "16"], {"num_workers": max(1, CORES - 1), "persistent_workers": True}),
    # One worker cannot keep up with ~1 ms of Python per sample: one worker per core.
    "data_few_workers": (workload_path("data_few_workers"), [], {"num_workers": CORES}),
    # Workers re-created every 4-batch epoch, each with a 1 s set-up: keep them alive.
    "data_worker_restart": (workload_path("data_worker_restart"), [], {"persistent_workers": True}),
    # Anomaly detection left on: turn it off.
    "compute_anomaly": (workload_path("compute_anomaly"), [], {"no_anomaly_detection": True}),
    # Inference with autograd recording: run it under inference_mode.
    "compute_grad_inference": (workload_path("compute_grad_inference"), [], {"inference_mode": True}),
    # Per-tensor Adam loop over hundreds of small tensors: the multi-tensor implementation.
    "compute_loop_optimizer": (workload_path("compute_loop_optimizer"), [], {"optimizer_impl": "foreach"}),
    # Dozens of tiny element-wise ops per step: fuse them with torch.compile.
    "compute_tiny_ops": (workload_path("compute_tiny_ops"), [], {"compile": "default"}),
}


def measure(script: Path, args: list[str], knobs: dict[str, Any], config: TuneConfig, out: Path) -> list[float]:
    trial = run_trial(script, args, knobs, config, index=0, knob=None, out_dir=out)
    if trial.status != "baseline":
        raise RuntimeError(f"{knobs} failed: {trial.reason}")
    return trial.times(per_sample=False)


def bench_workload(name: str, rounds: int, config: TuneConfig, work: Path) -> dict[str, Any]:
    script, args, expert = WORKLOADS[name]
    start = time.perf_counter()
    with RunStore(work / "runs.db") as store:
        result = Tuner(script, args, config, store=store, work_dir=work).run()
    tune_wall_s = time.perf_counter() - start
    variants = {"baseline": {}, "expert": expert, "tuned": result.kept}
    times: dict[str, list[float]] = {v: [] for v in variants}
    for round_index in range(rounds):
        for variant, knobs in variants.items():
            times[variant] += measure(script, args, knobs, config, work / f"{variant}{round_index}")
    median = {v: statistics.median(t) for v, t in times.items()}
    expert_speedup = median["baseline"] / median["expert"]
    tuned_speedup = median["baseline"] / median["tuned"]
    return {"workload": name, "kept": result.kept, "expert": expert, "tune_wall_s": tune_wall_s,
            "tune_trials": len(result.trials), "median_step_s": median, "expert_speedup": expert_speedup,
            "tuned_speedup": tuned_speedup, "tuned_over_expert": tuned_speedup / expert_speedup}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--time-budget", type=float, default=600.0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--max-trials", type=int, default=12)
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated subset to run")
    options = parser.parse_args()
    config = TuneConfig(timing_steps=options.steps, time_budget_s=options.time_budget,
                         max_trials=options.max_trials, trial_timeout_s=120.0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in options.workloads.split(","):
            row = bench_workload(name, options.rounds, config, Path(tmp) / name)
            rows.append(row)
            if options.out:  # after each workload, so a run cut short keeps what it measured
                options.out.write_bytes(orjson.dumps({"schema_version": 1, "cores": CORES, "rows": rows},
                                                     option=orjson.OPT_INDENT_2))
            print(f"{name}: tuned x{row['tuned_speedup']:.2f} ({row['kept']}), expert x{row['expert_speedup']:.2f} "
                  f"({row['expert']}), ratio {row['tuned_over_expert']:.2f}, tuning {row['tune_wall_s']:.0f} s "
                  f"over {row['tune_trials']} trials", flush=True)


if __name__ == "__main__":
    main()
