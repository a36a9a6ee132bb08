"""The speed-of-light accounting on real scripts: MFU, the waterfall and how its slices add up to
the measured step, and the machine's matrix-product peak against an independent timing.

For each script (zoo workloads by name, field scripts as `field/NAME`, or a path), `torchdoctor
diagnose --json` with short windows; per run: the measured step (`accounting.step_s`), the sum of
the slices and its deviation (goal: within 2%), MFU, the largest slices and what explains them.
Then the peak the probe measured (torch.utils.benchmark, `observe/probes/peaks.py`) against a
matrix product timed here by hand: a perf_counter loop of the same 1024x1024 fp32 product with the
same thread count, best of 5 rounds.

    PYTHONPATH=src python benchmarks/accounting_mfu.py [--cases healthy_mlp,compute_hot_op,demo,
        field/dcgan_fake,benchmarks/nanogpt_tiny.py] [--store DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = "healthy_mlp,compute_hot_op,demo,field/dcgan_fake,benchmarks/nanogpt_tiny.py"


def script_of(case: str) -> list[str]:
    if case == "demo":
        return ["--demo"]
    if case.startswith("field/"):
        return ["--", str(ROOT / "tests" / "field" / "scripts" / f"{case[6:]}.py")]
    if case.endswith(".py"):
        return ["--", str(ROOT / case)]
    return ["--", str(ROOT / "src" / "torchdoctor" / "zoo" / f"{case}.py")]


def diagnose(case: str, store: Path) -> dict:
    out = store / f"{case.replace('/', '_')}.json"
    command = [sys.executable, "-m", "torchdoctor", "diagnose", "--warmup-steps", "3", "--steps", "10",
               "--no-compile-probe", "--json", str(out), "--store", str(store / "runs.db"), *script_of(case)]
    subprocess.run(command, capture_output=True, text=True, timeout=1200)
    return json.loads(out.read_text())


def row(case: str, record: dict) -> str:
    a = record.get("accounting") or {}
    step, total = a.get("step_s") or 0.0, sum(s["seconds"] for s in a.get("slices", []))
    top = sorted(a.get("slices", []), key=lambda s: -s["share"])[:3]
    slices = "; ".join(f"{s['kind']} {100 * s['share']:.0f}% ({_state(s)})" for s in top)
    mfu = "-" if a.get("mfu") is None else f"{100 * a['mfu']:.2f}%"
    deviation = f"{100 * (total - step) / step:+.3f}%" if step else "-"
    findings = ", ".join(f["id"] for f in record.get("findings", []) if f["severity"] != "info") or "none"
    return (f"| {case} | {1e3 * step:.1f} ms | {1e3 * total:.1f} ms | {deviation} | {mfu} | "
            f"{'yes' if a.get('busy') else 'no'} | {slices} | {findings} |")


def _state(s: dict) -> str:
    if s["kind"] == "ideal":
        return "speed of light"
    return ", ".join(s["explained_by"]) or ("unexplained" if s["ops"] or s["share"] >= 0.1 else "small")


def hand_timed_peak(threads: int, n: int = 1024, rounds: int = 5, calls: int = 10) -> float:
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            torch.mm(a, b)
        best = min(best, (time.perf_counter() - start) / calls)
    return 2 * n**3 / best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default=DEFAULT)
    parser.add_argument("--store", type=Path, default=None)
    options = parser.parse_args()
    store = options.store or Path(tempfile.mkdtemp(prefix="accounting-"))
    store.mkdir(parents=True, exist_ok=True)
    print(f"load before: {os.getloadavg()}")
    print("| script | measured step | slices' sum | deviation | MFU | busy | largest slices | findings |")
    print("|---|---|---|---|---|---|---|---|")
    peaks: dict = {}
    for case in options.cases.split(","):
        record = diagnose(case, store)
        print(row(case, record), flush=True)
        peaks = ((record.get("probes") or {}).get("op_costs") or {}).get("peaks") or peaks
    print(f"load after: {os.getloadavg()}")
    if peaks:
        by_hand = hand_timed_peak(int(peaks["threads"]))
        probe = peaks["flops_per_s"].get("fp32")
        print(f"fp32 peak: probe {probe / 1e9:.1f} GFLOP/s (cached: {peaks['cached']}), by hand "
              f"{by_hand / 1e9:.1f} GFLOP/s ({peaks['threads']} threads), load {os.getloadavg()}")


if __name__ == "__main__":
    main()
