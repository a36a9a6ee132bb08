"""The data rules claim only what their fix can win back: moving loading into workers hides the
wait but costs each batch's hand-off to the training process (rules/data.py, WORKER_HANDOFF_MS)."""

from __future__ import annotations

import pytest

from torchdoctor.record import Record, StepSample
from torchdoctor.rules import diagnose
from torchdoctor.rules.data import WORKER_HANDOFF_MS


def _main_process_loading(step_ms: float, wait_ms: float) -> Record:
    """A loader with num_workers=0 whose main thread computes through its waits (CPU-bound loading,
    not TD-DATA-007's I/O), on 2 cores, every step alike."""
    steps = [StepSample(index=i, wall_s=step_ms / 1e3, data_wait_s=wait_ms / 1e3, data_wait_cpu_s=wait_ms / 1e3,
                        forward_s=(step_ms - wait_ms) / 2e3, batch_size=32) for i in range(20)]
    return Record(steps=steps, env={"cpu": {"physical_cores": 2, "logical_cores": 2, "affinity_cores": 2},
                                    "dataloaders": [{"num_workers": 0, "batch_size": 32}]})


def test_a_wait_shorter_than_a_workers_hand_off_raises_no_workers_finding():
    # Measured on the Lightning field script (docs/field.md): a 0.157 ms wait in a 1.172 ms step
    # (13%) raised TD-DATA-002, and its fix, one worker, measured 2.3x slower (0.89 -> 2.1 ms).
    assert diagnose(_main_process_loading(1.172, 0.157), select=["TD-DATA-002"]).findings == []


def test_a_long_wait_claims_the_wait_less_the_hand_off():
    (finding,) = diagnose(_main_process_loading(10.0, 5.0), select=["TD-DATA-002"]).findings
    assert finding.upside == pytest.approx((5.0 - WORKER_HANDOFF_MS) / 10.0, abs=1e-4)
    assert finding.severity == "problem" and "50% of each step waits" in finding.title
    assert finding.evidence["worker_handoff_ms_assumed"] == WORKER_HANDOFF_MS
