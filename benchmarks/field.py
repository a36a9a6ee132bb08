"""The figures of docs/field.md: each field script (tests/field/scripts) run natively and under
`torchdoctor diagnose`, its own printed per-step timing set against torchdoctor's median step.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/field.py [NAME ...] > field.jsonl

Per script: the step detection, torchdoctor's median step (its timing window, default windows),
the script's own median step over the same steps of the observed run and over a native run
(its first 5 steps left out, as torchdoctor's warm-up leaves them), and the top finding.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "field" / "scripts"
OWN_TIMING = re.compile(r"^\[timing\] step (\d+): ([\d.]+) ms$", re.MULTILINE)
WARMUP, TIMING = 5, 20
#: Each script with the arguments of its original's quoted command line.
RUNS = {
    "imagenet_dummy": ["--dummy", "--workers", "2"],
    "dcgan_fake": ["--dataset", "fake", "--workers", "2"],
    "time_sequence_prediction": [],
    "regression": [],
    "hf_trainer_gpt2": [],
    "lightning_module": [],
    "slow_getitem": [],
    "tabular_autoencoder": [],
}


def own_times_ms(stdout: str, first: int, count: int | None = None) -> list[float]:
    """The script's own times of its steps `first`.. (all after it when `count` is None); a field
    script's step N (from 0) is the step torchdoctor's clock ends as its (N+1)-th."""
    times = {int(step): float(ms) for step, ms in OWN_TIMING.findall(stdout)}
    return [ms for step, ms in sorted(times.items()) if step >= first and (count is None or step < first + count)]


def measure(name: str) -> dict[str, object]:
    script, args = SCRIPTS / f"{name}.py", RUNS[name]
    native = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "record.json"
        observed = subprocess.run(
            [sys.executable, "-m", "torchdoctor", "diagnose", "--json", str(out), "--store", f"{tmp}/runs.db",
             "--", str(script), *args], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
        record = json.loads(out.read_text())
    findings = record.get("findings") or []
    top = findings[0] if findings else None
    return {
        "script": name,
        "exit": record["exit"]["reason"],
        "step_detection": record["step_detection"],
        "torchdoctor_median_ms": record["summary"]["step_s"] * 1e3,
        "own_median_observed_ms": statistics.median(own_times_ms(observed.stdout, WARMUP, TIMING)),
        "own_median_native_ms": statistics.median(own_times_ms(native.stdout, WARMUP)),
        "top_finding": f"{top['id']}: {top['title']}" if top else None,
        "findings": [f["id"] for f in findings],
    }


if __name__ == "__main__":
    for name in sys.argv[1:] or list(RUNS):
        print(json.dumps(measure(name)), flush=True)
