"""`torchdoctor scale`'s analysis: throughput, speed-up and efficiency of one script at 1, 2, 4 ... processes.

The sweep itself (one observation per size) is `torchdoctor.workflow.scale`.

Definitions, for a size of n processes (all launched through torch.distributed.run):
- `throughput_per_s`: sum over ranks of samples per second when the batch size is known
  (`unit` "samples/s"), else sum over ranks of steps per second ("rank-steps/s").
- `speedup` = throughput(n) / throughput(1); `efficiency` = speedup / n (1.0 is linear scaling).
A size whose run did not complete has null figures and its exit reason.
- `lost_s_by_layer` (sizes above one process): where the per-rank step grew against the one-process
  step, by layer: `data` (more time blocked on the DataLoader), `communication` (more time in
  backward, where DDP all-reduces and waits for the other ranks), `imbalance` (the slowest rank's
  gap over the median rank); `layer` names the largest. With the per-rank batch fixed, the ideal
  n-process step equals the one-process step, so any growth is scaling loss.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from torchdoctor.distributed.errors import ScaleError

SCHEMA_VERSION = 1
#: Efficiency under this at some size is reported as a finding.
LOW_EFFICIENCY = 0.7
#: A single process waiting on data this share of its step should be fixed before scaling out
#: (the guides' rule of thumb: saturate one device first).
SINGLE_PROCESS_DATA_WAIT = 0.3


def process_counts(max_nproc: int) -> list[int]:
    """1, 2, 4 ... up to `max_nproc`, which is always included."""
    if max_nproc < 1:
        raise ScaleError(f"--max-nproc must be >= 1, got {max_nproc}")
    counts = [1]
    while counts[-1] * 2 <= max_nproc:
        counts.append(counts[-1] * 2)
    return counts if counts[-1] == max_nproc else [*counts, max_nproc]


def _throughput(record: Any) -> tuple[float | None, str]:
    summaries = [r["summary"] for r in record.ranks] or [record.summary]
    summaries = [dataclasses.asdict(s) if dataclasses.is_dataclass(s) else s for s in summaries]
    if all(s.get("samples_per_s") for s in summaries):
        return sum(s["samples_per_s"] for s in summaries), "samples/s"
    if all(s.get("step_s") for s in summaries):
        return sum(1.0 / s["step_s"] for s in summaries), "rank-steps/s"
    return None, "samples/s"


def size_row(nproc: int, record: Any) -> dict[str, Any]:
    """One size of the sweep, from the Record observed at `nproc` processes."""
    throughput, unit = _throughput(record) if record.exit.reason == "completed" else (None, "samples/s")
    summary = record.summary
    step_s = summary.step_s or 0.0
    return {"nproc": nproc, "run_id": record.run_id, "exit_reason": record.exit.reason,
            "exit_message": record.exit.message, "step_s": summary.step_s,
            "data_wait_s": (summary.data_wait_fraction or 0.0) * step_s,
            "backward_s": (summary.backward_fraction or 0.0) * step_s,
            "throughput_per_s": throughput, "unit": unit, "distributed": record.distributed}


def scaling_document(script: str, args: list[str], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Speed-up and efficiency of each size against the one-process size, plus findings."""
    base = rows[0]["throughput_per_s"] if rows else None
    for row in rows:
        ok = base and row["throughput_per_s"] and row["unit"] == rows[0]["unit"]
        row["speedup"] = row["throughput_per_s"] / base if ok else None
        row["efficiency"] = row["speedup"] / row["nproc"] if ok else None
        row["lost_s_by_layer"], row["layer"] = _lost_by_layer(rows[0], row) if ok and row["nproc"] > 1 else ({}, None)
    return {"schema_version": SCHEMA_VERSION, "script": script, "args": args, "sizes": rows,
            "findings": scale_findings(rows)}


def _lost_by_layer(base: dict[str, Any], row: dict[str, Any]) -> tuple[dict[str, float], str | None]:
    """Growth of the per-rank step against one process, split by layer (see the module docstring)."""
    if base.get("step_s") is None or row.get("step_s") is None:
        return {}, None
    lost = {
        "data": row.get("data_wait_s", 0.0) - base.get("data_wait_s", 0.0),
        "communication": row.get("backward_s", 0.0) - base.get("backward_s", 0.0),
        "imbalance": (row["distributed"] or {}).get("gap_s") or 0.0,
    }
    lost = {layer: max(0.0, value) for layer, value in lost.items()}
    grown = row["step_s"] > base["step_s"] and max(lost.values()) > 0
    return lost, max(lost, key=lambda k: lost[k]) if grown else None


def scale_findings(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Single-process efficiency first, failed sizes, low efficiency and its layer, stragglers."""
    findings = []
    base = rows[0] if rows else None
    if base and base["exit_reason"] == "completed" and base.get("step_s"):
        share = base.get("data_wait_s", 0.0) / base["step_s"]
        if share >= SINGLE_PROCESS_DATA_WAIT:
            findings.append({"id": "scale.single_process_first", "nproc": 1, "data_wait_fraction": share,
                             "message": f"one process already waits on data {share:.0%} of its step: make one "
                             "process fast (DataLoader workers, see `torchdoctor diagnose`) before adding more"})
    for row in rows:
        if row["exit_reason"] != "completed":
            findings.append({"id": "scale.run_failed", "nproc": row["nproc"],
                             "message": f"at {row['nproc']} processes: {row['exit_message']}"})
        elif row["efficiency"] is not None and row["nproc"] > 1 and row["efficiency"] < LOW_EFFICIENCY:
            findings.append({"id": "scale.low_efficiency", "nproc": row["nproc"], "efficiency": row["efficiency"],
                             "layer": row.get("layer"),
                             "message": f"at {row['nproc']} processes the speed-up is {row['speedup']:.2f}x "
                             f"({row['efficiency']:.0%} efficiency)" + _layer_note(row)})
        for straggler in (row["distributed"] or {}).get("stragglers", []):
            findings.append({"id": "scale.straggler", "nproc": row["nproc"], "rank": straggler["rank"],
                             "message": f"at {row['nproc']} processes rank {straggler['rank']} is a straggler "
                             f"(+{straggler['excess_s'] * 1e3:.1f} ms per step, {straggler['cause']})"})
    return findings


def _layer_note(row: dict[str, Any]) -> str:
    layer = row.get("layer")
    if not layer:
        return ""
    return f"; most of the loss is {layer} (+{row['lost_s_by_layer'][layer] * 1e3:.1f} ms per step)"
