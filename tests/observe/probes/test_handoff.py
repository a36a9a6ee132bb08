"""The hand-off probe: one real DataLoader worker serves batches laid out as the script's, and the
median wait of `next()` is what the data rules then count per batch instead of an assumed 1 ms."""

from __future__ import annotations

from collections import UserDict, namedtuple

import pytest
import torch

from torchdoctor.launch import LaunchConfig, ObserveConfig, observe
from torchdoctor.estimates.workers import io_workers_cap, io_workers_needed
from torchdoctor.knobs.base import machine_cores
from torchdoctor.observe.batch_layout import batch_layout, layout_bytes
from torchdoctor.observe.probes.handoff import FETCHES, MAX_BATCH_BYTES, MIN_FETCHES, MIN_SIMULATED_STEPS, \
    LoadingPlan, measure_handoff, simulate_workers
from torchdoctor.probe_values import HANDOFF
from torchdoctor.rules import diagnose
from torchdoctor.zoo import workload_path

Pair = namedtuple("Pair", "x y")


def test_the_layout_lists_every_tensor_of_a_nested_batch_with_its_shape_and_dtype():
    batch = (torch.zeros(8, 3, 4), {"mask": torch.ones(8, 4, dtype=torch.bool), "ids": [1, 2]}, "names")
    assert batch_layout(batch) == [((8, 3, 4), torch.float32), ((8, 4), torch.bool)]
    assert batch_layout(Pair(torch.zeros(2), torch.zeros(2, 1, dtype=torch.int64))) == [
        ((2,), torch.float32), ((2, 1), torch.int64)]
    # a Mapping that is not a dict (Hugging Face's BatchEncoding is a UserDict)
    assert batch_layout(UserDict(input_ids=torch.zeros(4, 16, dtype=torch.int64))) == [((4, 16), torch.int64)]
    assert batch_layout(["text only"]) == []
    assert layout_bytes([((8, 3, 4), torch.float32), ((8, 4), torch.bool)]) == 8 * 3 * 4 * 4 + 8 * 4


def test_one_worker_serves_batches_of_the_layout_and_the_median_wait_is_measured():
    result = measure_handoff([((32, 3, 32, 32), torch.float32), ((32,), torch.int64)])
    assert result["complete"] and result["reason"] is None and result["workers"] == 1
    assert MIN_FETCHES <= result["fetches"] <= FETCHES
    assert result["batch_bytes"] == 32 * 3 * 32 * 32 * 4 + 32 * 8 and result["batch_tensors"] == 2
    assert 0 < result["handoff_ms"] <= result["handoff_ms_p90"]


def test_a_batch_without_tensors_or_too_large_to_rebuild_is_not_probed():
    empty = measure_handoff([])
    assert not empty["complete"] and empty["handoff_ms"] is None and "no tensors" in empty["reason"]
    huge = measure_handoff([((MAX_BATCH_BYTES // 4 + 1,), torch.float32)])
    assert not huge["complete"] and "MiB" in huge["reason"]


def test_a_workers_fix_is_simulated_in_its_steady_state_and_no_faster_than_its_workers_deliver():
    plan = LoadingPlan(workers=4, batch_size=8, compute_ms=1.0, load_ms=20.0, load_cpu_ms=1.0)
    result = simulate_workers([((8, 16), torch.float32)], plan)
    assert result["complete"] and result["reason"] is None and result["steps"] >= MIN_SIMULATED_STEPS
    assert result["warmup_steps"] == 20 and result["workers"] == 4 and result["load_ms"] == 20.0
    # four workers, each a batch per 20 ms of sleeping and computing: one batch per 5 ms at most
    assert result["step_ms"] >= 0.9 * 20.0 / 4


def test_a_simulation_that_could_not_fit_the_budget_is_not_run():
    plan = LoadingPlan(workers=2, batch_size=4, compute_ms=1.0, load_ms=5000.0, load_cpu_ms=0.0)
    result = simulate_workers([((4,), torch.float32)], plan)
    assert not result["complete"] and result["step_ms"] is None and "would take" in result["reason"]


FAST = ObserveConfig(warmup_steps=2, timing_steps=6, profile_wait=0, profile_warmup=1, profile_active=1)


@pytest.mark.slow
def test_a_run_that_waits_on_its_loader_measures_the_hand_off_and_the_data_rule_counts_it(tmp_path):
    # One intra-op thread, as tests/field: beside two busy processes the default two spinning threads
    # stretched this step's 1.7 ms of compute to 94-101 ms, and the fix to simulate was another one.
    launch = LaunchConfig(timeout_s=300, extra_env={"OMP_NUM_THREADS": "1"})
    record = observe(workload_path("data_slow_storage"), [], FAST, launch, out_dir=tmp_path)
    assert record.exit.reason == "completed", record.exit
    probe = HANDOFF.of(record)
    assert probe["complete"] and probe["handoff_ms"] > 0, probe
    assert probe["batch_tensors"] == 2  # the zoo's (x, y) batches
    assert 0 < probe["duration_s"] < 30
    assert len(record.env["dataloaders"]) == 1  # the probe's own loader is not one of the script's
    simulation = probe["simulation"]  # the zoo's reads wait in the main process: TD-DATA-007's fix simulated
    assert simulation["complete"] and simulation["batch_size"] == 32, simulation
    # as many workers as keep a batch ready by the timed steps (one when a loaded host slowed the compute
    # to the wait's length), as many as `run --apply` takes here at most
    walls, waits = [s.wall_s for s in record.steps], [s.data_wait_s for s in record.steps]
    assert simulation["workers"] == min(io_workers_needed(walls, waits, 0), io_workers_cap(machine_cores()))
    (finding,) = diagnose(record, select=["TD-DATA-007"]).findings
    assert finding.evidence["worker_handoff_basis"] == "measured"
    assert finding.evidence["worker_handoff_ms"] == pytest.approx(probe["handoff_ms"], abs=1e-3)
    assert finding.evidence["workers_simulated"] == simulation["workers"] == finding.evidence["workers_in_fix"]
    assert finding.evidence["step_ms_best_case"] >= finding.evidence["step_ms_simulated"] - 1e-3
    assert f"num_workers={simulation['workers']}" in finding.fix.code


@pytest.mark.slow
def test_a_run_whose_loader_keeps_up_is_not_probed(tmp_path):
    # healthy_cnn: in-memory tensors through a DataLoader, next to no wait against a CNN's step
    record = observe(workload_path("healthy_cnn"), [], FAST, LaunchConfig(timeout_s=300), out_dir=tmp_path)
    assert record.exit.reason == "completed" and record.env["dataloaders"]
    assert record.summary.data_wait_fraction < 0.05 and HANDOFF.of(record) is None
