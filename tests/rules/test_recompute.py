"""TD-MEM-007 (rules/recompute.py) on synthetic probe values: activation checkpointing while the
step's peak is far below the memory it lives in."""

from __future__ import annotations

from torchdoctor.record import Record
from tests.rules.test_host_calls import _call, _only, _record

GIB = 2**30


def _checkpointed(calls: list[dict], *, peak_bytes: int, memory_bytes: int | None = 16 * GIB) -> Record:
    data = _record(calls).to_dict()
    data["memory"] = {"schema_version": 1, "breakdown": {"method": "mem_tracker", "device": "cpu",
                                                         "peak_bytes": peak_bytes, "categories_bytes": {}}}
    data["env"] = {**(data.get("env") or {}), "cpu": {"memory_bytes": memory_bytes},
                   "devices": {"cuda_available": False, "gpu_count": 0, "gpus": []}}
    return Record.from_dict(data)


def test_checkpointing_a_model_whose_peak_is_a_sliver_of_memory_costs_the_recomputed_forward():
    blocks = _call("torch.utils.checkpoint.checkpoint", "model.py:30 (forward)", 6, 0.03, in_model=True)
    finding = _only(_checkpointed([blocks], peak_bytes=64 * 2**20), "TD-MEM-007")
    assert finding.upside == 0.3 and finding.evidence["checkpoint_calls_per_step"] == 6
    assert "checkpoint(block, x)" in finding.fix.code


def test_checkpointing_where_the_peak_nears_the_memory_or_without_checkpoint_calls_is_not_reported():
    blocks = _call("torch.utils.checkpoint.checkpoint", "model.py:30 (forward)", 6, 0.03, in_model=True)
    assert _only(_checkpointed([blocks], peak_bytes=8 * GIB), "TD-MEM-007") is None
    plain = _call("nn.Module: Block", "model.py:30 (forward)", 6, 0.03, in_model=True)
    assert _only(_checkpointed([plain], peak_bytes=64 * 2**20), "TD-MEM-007") is None


def test_a_checkpointed_block_of_the_scripts_own_costs_half_its_forward_frame_which_runs_twice():
    blocks = {**_call("torch.utils.checkpoint.checkpoint", "model.py:41 (forward)", 8, 0.001, in_model=True),
              "drives": "model.py:31 (forward)"}
    record = _checkpointed([blocks], peak_bytes=64 * 2**20)
    record.probes["op_costs"]["script_calls"]["frames"] = {"model.py:31 (forward)": 0.05}
    assert _only(record, "TD-MEM-007").upside == 0.25  # 50 ms of block frames: 25 forward, 25 recompute
