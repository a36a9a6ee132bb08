"""The whole run's breakdown against the truth timed by the script itself.

Runs `torchdoctor watch` on benchmarks/whole_run_workload.py with known costs (an evaluation every
N steps, a checkpoint every M steps, a leak of 1 MiB a step, a slow first epoch), and compares each
part of the Record's `whole_run` with what the script measured itself: the total time of its
checkpoints, of its evaluations and of its first epoch's extra work, the sum of its own step
times, the leak; and checks that each cause is named by its source line.

    python benchmarks/whole_run.py [--case NAME ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

WORKLOAD = Path(__file__).with_name("whole_run_workload.py")
CASES = {
    "checkpoint": ["--ckpt-every", "100"],
    "evaluation": ["--eval-every", "150"],
    "leak": ["--leak-mb", "1", "--epochs", "2", "--batches", "250"],
    "slow-first-epoch": ["--slow-first-epoch-ms", "2"],
    "all": ["--ckpt-every", "100", "--eval-every", "150", "--slow-first-epoch-ms", "2"],
}


def _line(marker: str) -> int:
    return next(n for n, text in enumerate(WORKLOAD.read_text().splitlines(), 1) if marker in text)


def _parts(whole: dict, function: str) -> list[dict]:
    """The parts named by `function`: its group of slow steps, and the tail when it ran there."""
    return [p for p in whole["parts"] if (p["cause"] or "").startswith(function + " (")]


def _compare(name: str, measured: float, truth: float, cause: str | None = None) -> dict:
    error = (measured - truth) / truth if truth else None
    return {"what": name, "torchdoctor_s": round(measured, 4), "script_s": round(truth, 4),
            "error": None if error is None else round(error, 4), "cause": cause}


def run_case(name: str, args: list[str], work: Path) -> list[dict]:
    truth_path, record_path = work / f"{name}.truth.json", work / f"{name}.record.json"
    subprocess.run([sys.executable, "-m", "torchdoctor", "watch", "--no-save", "--json", str(record_path),
                    "--", str(WORKLOAD), str(truth_path), *args], check=True, stdout=subprocess.DEVNULL)
    truth = json.loads(truth_path.read_text())
    whole = json.loads(record_path.read_text())["whole_run"]
    rows = []
    total = len(truth["step_s"])  # what runs after the last step is in the tail, reported apart
    for function, key in (("save_checkpoint", "ckpt_s"), ("evaluate", "eval_s")):
        if truth[key]:
            within = [t for step, t in truth[key] if step < total]
            slow = [p for p in _parts(whole, function) if p["kind"] == "slow"]
            rows.append(_compare(f"{function} ({len(within)} between steps)", sum(p["seconds"] for p in slow),
                                 sum(within), " + ".join(p["cause"] for p in slow)))
    epoch_excess = 0.0
    part = next((p for p in whole["parts"] if p["kind"] == "slow_epoch"), None)
    if truth["slow_epoch_s"] or part:
        # What the first epoch cost by the script's own step clock: its steps' sum less as many
        # steps at the later epochs' median (the waits themselves, `slow_epoch_s`, leave out that a
        # step after a wait runs slower too: its caches went cold).
        epoch = len(truth["step_s"]) // truth["epochs"]
        later = sorted(truth["step_s"][epoch:])
        epoch_excess = sum(truth["step_s"][1:epoch]) - (epoch - 1) * later[len(later) // 2]
        row = _compare("slow first epoch", part["seconds"] if part else 0.0, epoch_excess,
                       part["label"] if part else None)
        rows.append({**row, "script_waits_s": round(truth["slow_epoch_s"], 4)})
    steps = sum(p["seconds"] for p in whole["parts"]
                if p["kind"] in ("steady", "warmup", "windows")
                or (p["kind"] == "slow" and not (p["cause"] or "").startswith(("save_checkpoint", "evaluate"))))
    own = sum(truth["step_s"][1:]) - epoch_excess
    rows.append(_compare("steps (less checkpoints, evaluation, slow epoch)", steps, own))
    after = sum(t for key in ("ckpt_s", "eval_s") for step, t in truth[key] if step == total)
    tail = next(p for p in whole["parts"] if p["kind"] == "tail")
    rows.append(_compare("after the last step", tail["seconds"], after, tail["cause"]))
    if truth["leak_mb"]:
        trend = next((t for t in whole["trends"] if t["kind"] == "memory_growth"), None)
        rows.append({"what": "leak MiB/step", "torchdoctor": trend["title"] if trend else None,
                     "script": truth["leak_mb"]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    names = parser.parse_args().case or list(CASES)
    print(f"checkpoint line {_line('# checkpoint line')}, evaluation line {_line('# evaluation line')}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            for row in run_case(name, CASES[name], Path(tmp)):
                print(name, json.dumps(row))


if __name__ == "__main__":
    main()
