"""Why a tune claim and its re-measurement differ: tune's observation against the bare script, side
by side in one campaign.

tune_zoo.py compares tune's claim, measured during the tuning, with a re-measurement made minutes
later. Two things separate them: what tune's observation adds to a step (its hooks), and how the
machine moved between the two campaigns. This benchmark measures the first alone. For each row of
a tune_zoo output file (its workload and kept knobs), four configurations run interleaved in
rounds (order rotated): the plain script and `run --apply KEPT`, timed by the script's own steps
(benchmarks/remeasure.py, nothing of torchdoctor loaded), and tune's own runs of the baseline and of
the kept knobs (`torchdoctor.tune.trial.observe_run`, over the same steps), with every hook (tune's
trials) and with the step hooks alone (`steps_only`: tune's confirmation, where the steps are an
optimizer's). Reported per row: the bare speed-up, the observed ones (what tune would claim now),
and per side the observed over the bare pace. Observed and bare speed-ups that agree, where the claim
and the re-measurement did not, put the difference on the machine's move between campaigns. Each
side times at least `--confirm-window` seconds of steps (the confirmation's rule, sized from an
uncounted bare run: remeasure.window_steps), bare and observed the same steps.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/observation_gap.py --from zoo.json
        [--workloads a,b] [--rounds 6] [--steps 20] [--warmup-steps 3] [--confirm-window 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

import orjson

from remeasure import argv_for, run_once, window_steps, write_apply_file
from tune_zoo import WORKLOADS

from torchdoctor.bench import compare_runs
from torchdoctor.tune import TuneConfig
from torchdoctor.tune.trial import RunRequest, observe_run

SIDES = ("plain", "tuned", "observed plain", "observed tuned", "steps-only plain", "steps-only tuned")


def campaign(name: str, kept: dict[str, Any], rounds: int, config: TuneConfig, work: Path) -> dict[str, Any]:
    """The six configurations of one workload, interleaved; their runs' mean step times."""
    script, args, _ = WORKLOADS[name]
    work.mkdir(parents=True, exist_ok=True)
    apply = write_apply_file(kept, work / "kept.json")
    windows = {side: window_steps(argv_for(script, args, None if side == "plain" else apply), work / "steps",
                                  config.timing_steps, config.warmup_steps, config.confirm_window_s)
               for side in ("plain", "tuned")}
    means: dict[str, list[float]] = {side: [] for side in SIDES}
    for index in range(rounds):
        for side in SIDES[index % len(SIDES):] + SIDES[:index % len(SIDES)]:
            if side not in ("plain", "tuned"):
                how, bare_side = side.split(" ")
                knobs = kept if bare_side == "tuned" else {}
                out_dir = work / f"run{index}-{side.replace(' ', '-')}"
                request = RunRequest(knobs, side, out_dir, timing_steps=windows[bare_side],
                                     steps_only=how == "steps-only")
                run = observe_run(script, args, config, request)
                if run.step_s is None:
                    raise RuntimeError(f"{name}: {side} measured no steps ({run.failure})")
                means[side].append(run.step_s)
            else:
                argv = argv_for(script, args, None if side == "plain" else apply)
                times = run_once(argv, work / "steps", windows[side], config.warmup_steps)
                means[side].append(statistics.fmean(times))
    bare = compare_runs([[m] for m in means["plain"]], [[m] for m in means["tuned"]],
                        tolerance=config.run_tolerance, paired=True)  # every side runs once a round
    speedups = {how: 1 / compare_runs([[m] for m in means[f"{how} plain"]], [[m] for m in means[f"{how} tuned"]],
                                      tolerance=config.run_tolerance, paired=True).verdict.ratio
                for how in ("observed", "steps-only")}
    pace = {side: statistics.median(values) for side, values in means.items()}
    return {"workload": name, "kept": kept, "rounds": rounds, "timed_steps": windows, "run_means_s": means,
            "pace_s": pace,
            "bare_speedup": 1 / bare.verdict.ratio, "observed_speedup": speedups["observed"],
            "steps_only_speedup": speedups["steps-only"],
            "observed_over_bare": {f"{how} {side}": pace[f"{how} {side}"] / pace[side]
                                   for how in ("observed", "steps-only") for side in ("plain", "tuned")},
            "load_average": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, required=True, help="a tune_zoo.py --out file")
    parser.add_argument("--workloads", default="", help="comma-separated subset of its rows (default: all kept)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--confirm-window", type=float, default=1.0, help="seconds of steps a run times at least")
    parser.add_argument("--out", type=Path, default=None)
    options = parser.parse_args()
    rows = [r for r in orjson.loads(options.source.read_bytes())["rows"] if r["kept"]]
    if options.workloads:
        rows = [r for r in rows if r["workload"] in options.workloads.split(",")]
    config = TuneConfig(warmup_steps=options.warmup_steps, timing_steps=options.steps,
                        confirm_window_s=options.confirm_window)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows:
            result = campaign(row["workload"], row["kept"], options.rounds, config, Path(tmp) / row["workload"])
            result.update(claimed_speedup=row["claimed_speedup"], remeasured_speedup=row["remeasured_speedup"])
            results.append(result)
            if options.out:
                options.out.write_bytes(orjson.dumps({"rows": results}, option=orjson.OPT_INDENT_2))
            over = result["observed_over_bare"]
            bare = result["bare_speedup"]
            print(f"{row['workload']}: bare x{bare:.2f}, observed x{result['observed_speedup']:.2f} "
                  f"({result['observed_speedup'] / bare:.2f}), steps only x{result['steps_only_speedup']:.2f} "
                  f"({result['steps_only_speedup'] / bare:.2f}); pace over bare: "
                  + ", ".join(f"{k} {v:.3f}" for k, v in over.items()) + "; tune_zoo claimed "
                  f"x{row['claimed_speedup']:.2f}, re-measured x{row['remeasured_speedup']:.2f}; "
                  f"load {result['load_average'][0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
