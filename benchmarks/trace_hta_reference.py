"""Reference figures from HolisticTraceAnalysis for the trace engine's parity tests.

Run with an interpreter that has HTA installed (a separate venv, HTA pins its own pandas):

    /work/hta-venv/bin/python benchmarks/trace_hta_reference.py ../shared/fixtures/traces > hta_reference.json

For every single-rank fixture (and the multirank pair as ranks 0 and 1) it prints HTA's temporal
breakdown, kernel-type breakdown, communication/computation overlap, kernel launch statistics and
idle-time breakdown, with HTA's defaults (the last profiler step is dropped).

`--cut-at-host-step` keeps HTA's figures but takes the last step's start from the host's
ProfilerStep only: HTA takes the latest event named `ProfilerStep#N`, which on torch >= 1.13 includes
the `gpu_user_annotation` copy of the step on the device timeline (its stream is -1 in HTA's frame),
so when the device runs behind the host HTA keeps the kernels launched between the two starts.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path


def _figures(trace_dir: str, ranks: list[int]) -> dict:
    from hta.trace_analysis import TraceAnalysis

    analyzer = TraceAnalysis(trace_dir=trace_dir)
    out: dict = {}
    tb = analyzer.get_temporal_breakdown(visualize=False)
    out["temporal"] = tb.to_dict(orient="records")
    try:
        kt, _ = analyzer.get_gpu_kernel_breakdown(visualize=False)
        out["kernel_type"] = kt.to_dict(orient="records")
    except Exception as exc:  # HTA raises on traces it cannot break down
        out["kernel_type_error"] = repr(exc)
    try:
        out["overlap"] = analyzer.get_comm_comp_overlap(visualize=False).to_dict(orient="records")
    except Exception as exc:
        out["overlap_error"] = repr(exc)
    try:
        stats = analyzer.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
        out["launch"] = {
            str(r): {
                "launches": int(len(df)),
                "median_cpu_duration_us": float(df["cpu_duration"].median()),
                "median_gpu_duration_us": float(df["gpu_duration"].median()),
                "median_launch_delay_us": float(df["launch_delay"].median()),
                "gpu_shorter_than_cpu": int((df["gpu_duration"] < df["cpu_duration"]).sum()),
                "runtime_outliers_50us": int((df["cpu_duration"] > 50).sum()),
                "launch_delay_outliers_100us": int((df["launch_delay"] > 100).sum()),
            }
            for r, df in stats.items()
        }
    except Exception as exc:
        out["launch_error"] = repr(exc)
    try:
        idle = analyzer.get_idle_time_breakdown(ranks=ranks, visualize=False)
        out["idle"] = idle[0].to_dict(orient="records")
    except Exception as exc:
        out["idle_error"] = repr(exc)
    return out


def _cut_at_host_step() -> None:
    """Make HTA's last-step filter ignore the device-side `gpu_user_annotation` copies of the steps."""
    import hta.common.trace as hta_trace
    from hta.common.trace_filter import CPUOperatorFilter

    class HostOperators(CPUOperatorFilter):
        def __call__(self, df, symbol_table=None):  # type: ignore[no-untyped-def]
            events = super().__call__(df, symbol_table)
            device_copy = symbol_table.get_sym_id_map().get("gpu_user_annotation", -2) if symbol_table else -2
            return events[events["cat"] != device_copy] if "cat" in events.columns else events

    hta_trace.CPUOperatorFilter = HostOperators


def main(fixtures: Path) -> None:
    warnings.filterwarnings("ignore")
    result = {}
    for path in sorted(fixtures.glob("*.json.gz")):
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(path, Path(tmp) / "rank-0.json.gz")
            try:
                result[path.name] = _figures(tmp, [0])
            except Exception as exc:
                result[path.name] = {"error": repr(exc)}
        print(path.name, file=sys.stderr, flush=True)
    multi = fixtures / "multirank-sampled"
    if multi.is_dir():
        result["multirank-sampled"] = _figures(str(multi), [0, 1])
    print(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    if "--cut-at-host-step" in sys.argv:
        sys.argv.remove("--cut-at-host-step")
        _cut_at_host_step()
    main(Path(sys.argv[1]))
