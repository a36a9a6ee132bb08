"""torchdoctor's trace figures next to HolisticTraceAnalysis' on the same GPU traces.

    python benchmarks/gpu_truth_hta.py TRACE.json.gz [...] [--json OUT.json]

For each trace: the temporal breakdown (idle / compute / non-compute % of the device span and the
span), kernel launch statistics and the idle-time split, from `torchdoctor.trace` (loaded with
HTA's nanosecond rounding, as in tests/trace/test_hta_parity.py) and from HTA 0.5.0 with its
defaults (benchmarks/trace_hta_reference.py). Where HTA cannot be imported or raises, its column
says so; torchdoctor's figures are printed regardless. Used by benchmarks/gpu_truth.sh.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def torchdoctor_figures(path: Path) -> dict[str, Any]:
    from torchdoctor.trace import TraceConfig, analyse_traces

    device = analyse_traces([path], TraceConfig(hta_ns_rounding=True)).to_dict()["ranks"][0].get("device") or {}
    temporal, launches, idle = device.get("temporal") or {}, device.get("launches") or {}, device.get("idle") or {}
    return {
        "idle_pct": _pct(temporal.get("idle_fraction")),
        "compute_pct": _pct(temporal.get("compute_fraction")),
        "non_compute_pct": _pct(temporal.get("non_compute_fraction")),
        "span_us": temporal.get("span_us"),
        "launches": launches.get("launches_count"),
        "median_cpu_us": launches.get("median_cpu_us"),
        "median_launch_delay_us": launches.get("median_launch_delay_us"),
        "gpu_shorter_than_launch": launches.get("gpu_shorter_than_launch_count"),
        "launch_delay_outliers_100us": launches.get("launch_delay_outliers_count"),
        "idle_host_wait_pct": _pct(idle.get("host_wait_fraction")),
        "idle_kernel_wait_pct": _pct(idle.get("kernel_wait_fraction")),
        "idle_sync_pct": _pct(idle.get("sync_fraction")),
    }


def hta_figures(path: Path) -> dict[str, Any]:
    try:
        from trace_hta_reference import _figures
    except ImportError as exc:
        return {"error": f"HolisticTraceAnalysis not importable: {exc!r}"}
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(path, Path(tmp) / "rank-0.json.gz")
        try:
            raw = _figures(tmp, [0])
        except Exception as exc:  # HTA raises on traces it cannot parse
            return {"error": f"HTA failed: {exc!r}"}
    temporal = (raw.get("temporal") or [{}])[0]
    launch = (raw.get("launch") or {}).get("0", {})
    idle = {row.get("idle_category"): row.get("idle_time_ratio") for row in raw.get("idle") or []}
    return {
        "idle_pct": temporal.get("idle_time_pctg"),
        "compute_pct": temporal.get("compute_time_pctg"),
        "non_compute_pct": temporal.get("non_compute_time_pctg"),
        "span_us": temporal.get("kernel_time(us)"),
        "launches": launch.get("launches"),
        "median_cpu_us": launch.get("median_cpu_duration_us"),
        "median_launch_delay_us": launch.get("median_launch_delay_us"),
        "gpu_shorter_than_launch": launch.get("gpu_shorter_than_cpu"),
        "launch_delay_outliers_100us": launch.get("launch_delay_outliers_100us"),
        "idle_host_wait_pct": _pct(idle.get("host_wait")),
        "idle_kernel_wait_pct": _pct(idle.get("kernel_wait")),
        "errors": {k: v for k, v in raw.items() if k.endswith("error")},
    }


def _pct(fraction: Any) -> float | None:
    return None if fraction is None else round(float(fraction) * 100, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    result = {}
    for path in args.traces:
        ours, theirs = torchdoctor_figures(path), hta_figures(path)
        result[path.name] = {"torchdoctor": ours, "hta": theirs}
        print(f"\n{path.name}")
        if "error" in theirs:
            print(f"  HTA: {theirs['error']}")
        print(f"  {'figure':30} {'torchdoctor':>14} {'HTA 0.5.0':>14}")
        for key, value in ours.items():
            print(f"  {key:30} {_cell(value):>14} {_cell(theirs.get(key)):>14}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=str))
    return 0


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    sys.exit(main())
