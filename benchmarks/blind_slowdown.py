"""How much each blind-corpus problem slows its script: problem against healthy twin, plainly.

Each pair runs in rounds of problem, twin, twin, problem (fresh processes, no torchdoctor), and
each run's figure is read from the script's own output: its median step time, except where the
problem's cost is not in the typical step (`mean step time` for workers started at every epoch,
whose cost lands on each epoch's first step) or the step itself changes size (`time per row` for
one-row inference against batched inference). The slowdown is the median of the problem's runs
over the median of the twin's.

    .venv/bin/python benchmarks/blind_slowdown.py [-k NAME] [--rounds 1] [--steps 40] [--write]
        [--conditions TEXT] [--corpus tests/field/blind_holdout]

`--corpus` picks the corpus folder (default `tests/field/blind/`). `--write` stores each slowdown
in the corpus's `manifest.json` as `measured_slowdown` (with the unit of the figure compared, and
`--conditions`, a note on how it was measured, when given), leaving every other field as it is.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = ROOT / "tests" / "field" / "blind"
# The figure compared, where it is not the median step time, and the argument that sizes a run.
FIGURE = {"workers_recreated_each_epoch": "mean step time", "inference_one_at_a_time": "time per row"}
ARGUMENT = {"inference_one_at_a_time": lambda steps: 256 * steps}


def figure(name: str, output: str) -> float:
    """The run's figure in seconds, read from the script's own output."""
    label = FIGURE.get(name, "median step time")
    match = re.search(rf"{label}: ([0-9.]+) (ms|us)", output)
    if match is None:
        raise RuntimeError(f"{name}: no '{label}' in the output: {output[-300:]}")
    return float(match.group(1)) * (1e-3 if match.group(2) == "ms" else 1e-6)


def run(corpus: Path, name: str, kind: str, steps: int) -> float:
    """One plain run of problems/NAME.py or healthy/NAME.py."""
    arg = ARGUMENT.get(name, lambda s: s)(steps)
    proc = subprocess.run([sys.executable, str(corpus / kind / f"{name}.py"), str(arg)],
                          capture_output=True, text=True, timeout=900, check=True)
    return figure(name, proc.stdout)


def slowdown(corpus: Path, name: str, rounds: int, steps: int) -> dict:
    """Problem and twin interleaved (problem, twin, twin, problem per round)."""
    sick: list[float] = []
    twin: list[float] = []
    for _ in range(rounds):
        sick.append(run(corpus, name, "problems", steps))
        twin.append(run(corpus, name, "healthy", steps))
        twin.append(run(corpus, name, "healthy", steps))
        sick.append(run(corpus, name, "problems", steps))
    ratio = statistics.median(sick) / statistics.median(twin)
    return {"name": name, "problem_s": sick, "healthy_s": twin, "slowdown": round(ratio, 2),
            "figure": FIGURE.get(name, "median step time")}


def ms(values: list[float]) -> str:
    """Seconds as a comma-separated list of milliseconds."""
    return ", ".join(f"{v * 1e3:.2f}" for v in values)


def write(corpus: Path, results: list[dict], conditions: str | None) -> None:
    """Store the slowdowns in the manifest, other fields untouched."""
    path = corpus / "manifest.json"
    manifest = json.loads(path.read_text())
    by_name = {r["name"]: r for r in results}
    for entry in manifest["problems"]:
        if entry["name"] in by_name:
            r = by_name[entry["name"]]
            entry["measured_slowdown"] = {"ratio": r["slowdown"], "figure": r["figure"]}
            if conditions:
                entry["measured_slowdown"]["conditions"] = conditions
    path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-k", action="append", default=[], help="name substring (repeatable)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--write", action="store_true", help="store the ratios in the manifest")
    parser.add_argument("--conditions", help="how the ratios were measured, stored with --write")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS,
                        help="corpus folder (problems/, healthy/, manifest.json)")
    args = parser.parse_args()
    if not (args.corpus / "manifest.json").is_file():
        parser.error(f"{args.corpus} has no manifest.json")
    names = [p["name"] for p in json.loads((args.corpus / "manifest.json").read_text())["problems"]]
    names = [n for n in names if not args.k or any(k in n for k in args.k)]
    results = []
    for name in names:
        results.append(slowdown(args.corpus, name, args.rounds, args.steps))
        r = results[-1]
        print(f"| {name} | {r['figure']} | {ms(r['problem_s'])} | {ms(r['healthy_s'])} "
              f"| x{r['slowdown']:.2f} |", flush=True)
    if args.write:
        write(args.corpus, results, args.conditions)


if __name__ == "__main__":
    main()
