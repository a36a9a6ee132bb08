"""Reference recommendations from the TensorBoard profiler plugin (torch-tb-profiler) for the
trace engine's tb_plugin floor tests (tests/rules/test_tb_plugin_floor.py, docs/rules.md).

Run with an interpreter that has torch-tb-profiler installed (a separate venv: it pins its own
pandas and tensorboard), one or more trace files:

    /tmp/tbp-venv/bin/python benchmarks/trace_tb_plugin_reference.py TRACE... > tb_reference.json

For each file it prints the plugin's `analyze()` recommendations (the seven rules of
`torch_tb_profiler/profiler/data.py`) and the figures they read: DataLoader and communication
shares of the step, GPU utilisation per device, Tensor Core use, peak memory, DataParallel/DDP use.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile


def _figures(path: str) -> dict:
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.event_parser import ProfileRole

    with tempfile.TemporaryDirectory() as cache:
        profile = RunProfileData.parse("worker0", "1", path, cache)
        profile.process()
        profile.analyze()
    costs = profile.avg_costs.costs
    total = costs[ProfileRole.Total] or 1
    gpu = profile.gpu_metrics_parser
    return {
        "recommendations": [re.sub(r"<[^>]+>", "", r) for r in profile.recommendations],
        "steps_count": len(profile.steps_names),
        "dataloader_fraction": costs[ProfileRole.DataLoader] / total,
        "communication_fraction": costs[ProfileRole.Communication] / total,
        "kernel_fraction": costs[ProfileRole.Kernel] / total,
        "step_us": total,
        "gpu_utilization": {str(g): gpu.gpu_utilization[g] for g in sorted(gpu.gpu_ids)},
        "tc_used_ratio": getattr(profile, "tc_used_ratio", None),
        "tc_eligible_ops_kernel_ratio": profile.tc_eligible_ops_kernel_ratio,
        "use_dp": profile.use_dp,
        "use_ddp": profile.use_ddp,
        "used_devices": [int(d) for d in profile.used_devices],
    }


def main(paths: list[str]) -> None:
    out = {}
    for path in paths:
        try:
            out[path] = _figures(path)
        except Exception as exc:  # the plugin raises on traces it cannot read
            out[path] = {"error": repr(exc)[:300]}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
