"""Records measured on a real GPU (benchmarks/gpu_truth.sh, docs/gpu.md), diagnosed again on the CPU.

device_records/h200-demo-diagnose.json is `torchdoctor diagnose --demo` on an NVIDIA H200 (torch
2.11, CUDA 13.0), trimmed of its HTML timeline and system samples: the demo trains on the GPU and
waits 95% of each step for its DataLoader, so the GPU idles 99% of the step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.knobs import REGISTRY
from torchdoctor.record import Record
from torchdoctor.rules import diagnose
from torchdoctor.tune.candidates import ordered_candidates

H200_DEMO = Path(__file__).resolve().parent / "device_records" / "h200-demo-diagnose.json"


@pytest.fixture(scope="module")
def record() -> Record:
    return Record.load(H200_DEMO)


def test_a_gpu_idle_behind_the_dataloader_is_a_data_finding_not_a_host_overhead_one(record: Record) -> None:
    findings = diagnose(record).findings
    ids = [f.id for f in findings]
    # Measured on the H200 before the fix: TD-COMP-002 "GPU idle 98% waiting on the host" and TD-COMP-003
    # "about 74% of the step is per-operator overhead", both proposing torch.compile, ranked above the
    # DataLoader finding; the step waited 95% for data.
    assert "TD-COMP-002" not in ids and "TD-COMP-003" not in ids, ids
    with_knob = [f for f in findings if f.knob]
    assert with_knob[0].id == "TD-DATA-002" and with_knob[0].knob == "num_workers"
    assert "TD-COMP-001" in ids  # the symptom stays reported: the GPU is busy 1% of the step


def test_the_tuner_tries_dataloader_workers_first_on_the_h200_demo(record: Record) -> None:
    order = ordered_candidates(record, allow_batch_size=False,
                               only=["num_workers", "pin_memory", "autocast_bf16", "tf32", "compile"])
    assert order[0] == "num_workers", order


def test_the_gpu_knobs_that_apply_to_the_h200_demo(record: Record) -> None:
    applies = {name for name, knob in REGISTRY.items() if knob.applies(record)}
    assert {"autocast_bf16", "tf32", "pin_memory", "compile", "num_workers"} <= applies
    assert not {"autocast_fp16", "cudnn_benchmark", "channels_last"} & applies  # bf16-capable, no convolutions
    modes = [choice["mode"] for choice in REGISTRY["compile"].choices(record)]
    assert modes == ["default", "reduce-overhead", "max-autotune"]
