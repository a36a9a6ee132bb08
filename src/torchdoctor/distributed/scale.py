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

from torchdoctor.distributed.analysis import straggler_finding
from torchdoctor.distributed.errors import ScaleError
from torchdoctor.distributed.section import DistributedSection
from torchdoctor.finding import Finding, Fix, new_finding

#: 2: `findings` are Findings (torchdoctor.finding, ids TD-SCALE-NNN) instead of {id, nproc, message} dicts.
SCHEMA_VERSION = 2
#: Efficiency under this at some size is reported as a finding (TD-SCALE-010): the guides call a 4-GPU
#: speed-up "far below 3.5x" a problem to look into (3.5 / 4 = 87.5%); under LOW_EFFICIENCY_PROBLEM
#: the finding is a problem, above it a warning.
LOW_EFFICIENCY, LOW_EFFICIENCY_PROBLEM = 0.875, 0.7
#: A single process waiting on data this share of its step should be fixed before scaling out
#: (the guides' rule of thumb: saturate one device first; TD-SCALE-008).
SINGLE_PROCESS_DATA_WAIT = 0.3
#: The findings of the sweep (docs/rules.md); a straggler at some size is the rule's TD-SCALE-002.
SINGLE_PROCESS_FIRST, RUN_FAILED, LOW_EFFICIENCY_FINDING = "TD-SCALE-008", "TD-SCALE-009", "TD-SCALE-010"


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
            "findings": [f.to_dict() for f in scale_findings(rows)]}


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


def scale_findings(rows: list[dict[str, Any]]) -> list[Finding]:
    """Single-process efficiency first, failed sizes, low efficiency and its layer, stragglers."""
    findings = []
    base = rows[0] if rows else None
    if base and base["exit_reason"] == "completed" and base.get("step_s"):
        share = base.get("data_wait_s", 0.0) / base["step_s"]
        if share >= SINGLE_PROCESS_DATA_WAIT:
            findings.append(_single_process_first(base, share))
    for row in rows:
        if row["exit_reason"] != "completed":
            findings.append(_run_failed(row))
        elif row["efficiency"] is not None and row["nproc"] > 1 and row["efficiency"] < LOW_EFFICIENCY:
            findings.append(_low_efficiency(row))
        section = DistributedSection.from_dict(row["distributed"]) if row["distributed"] else None
        for straggler in section.stragglers if section is not None else ():
            findings.append(straggler_finding([straggler], nproc=row["nproc"]))
    return findings


def _single_process_first(base: dict[str, Any], share: float) -> Finding:
    return new_finding(
        SINGLE_PROCESS_FIRST, "scale", "warning", f"one process already waits on data {share:.0%} of its step",
        share, {"nproc": 1, "data_wait_fraction": share, "data_wait_s": base.get("data_wait_s", 0.0),
                "step_s": base["step_s"]},
        "Every added process waits on its own loader the same way, so scaling out multiplies a data-bound "
        "step instead of speeding it up: saturate one device first.",
        Fix("Make one process fast before adding more: load batches in DataLoader workers (see `torchdoctor "
            "diagnose`).", "DataLoader(dataset, batch_size=batch_size, num_workers=4, persistent_workers=True)"),
        knob="num_workers")


def _run_failed(row: dict[str, Any]) -> Finding:
    nproc = row["nproc"]
    return new_finding(
        RUN_FAILED, "scale", "problem", f"at {nproc} processes: {row['exit_message']}", 0.0,
        {"nproc": nproc, "exit_reason": row["exit_reason"], "run_id": row.get("run_id")},
        "A size that fails has no throughput: the scaling curve stops before it.",
        Fix("Run that size alone and read the first failing rank's error (`record.distributed.failed_ranks`).",
            f"torchdoctor diagnose --nproc-per-node {nproc} -- SCRIPT ARGS"))


#: The fix for a low efficiency, by the layer that lost most (`lost_s_by_layer`), and its knob.
_LOSS_FIXES: dict[str | None, tuple[Fix, str | None]] = {
    "data": (Fix("Each rank waits longer on data than one process did: give every rank more DataLoader "
                 "workers, within its share of the cores.",
                 "DataLoader(dataset, batch_size=batch_size, num_workers=workers_per_rank, pin_memory=True)"),
             "num_workers"),
    "communication": (Fix("Backward grew with the gradient all-reduce: overlap it (DDP bucket sizes), or "
                          "communicate less often (larger per-rank batches, no_sync with accumulation).",
                          "DDP(model, bucket_cap_mb=50, gradient_as_bucket_view=True)"), "bucket_cap_mb"),
    "imbalance": (Fix("The ranks wait for the slowest one: balance the work per rank (see the straggler "
                      "findings).", "torchdoctor diagnose --nproc-per-node N -- SCRIPT ARGS  # per-rank figures"),
                  None),
    None: (Fix("Find where the time goes at that size.",
               "torchdoctor diagnose --nproc-per-node N -- SCRIPT ARGS  # per-rank figures"), None),
}


def _low_efficiency(row: dict[str, Any]) -> Finding:
    layer = row.get("layer")
    fix, knob = _LOSS_FIXES.get(layer, _LOSS_FIXES[None])
    return new_finding(
        LOW_EFFICIENCY_FINDING, "scale", "problem" if row["efficiency"] < LOW_EFFICIENCY_PROBLEM else "warning",
        f"at {row['nproc']} processes the speed-up is {row['speedup']:.2f}x ({row['efficiency']:.0%} efficiency)"
        + _layer_note(row), 1 - row["efficiency"],
        {"nproc": row["nproc"], "speedup": row["speedup"], "efficiency": row["efficiency"], "loss_layer": layer,
         "lost_s_by_layer": row.get("lost_s_by_layer") or {}},
        "With the per-rank batch fixed, n processes should give n times the throughput of one; the rest is lost "
        "to data waits, communication, or waiting for the slowest rank.", fix, knob)


def _layer_note(row: dict[str, Any]) -> str:
    layer = row.get("layer")
    if not layer:
        return ""
    return f"; most of the loss is {layer} (+{row['lost_s_by_layer'][layer] * 1e3:.1f} ms per step)"
