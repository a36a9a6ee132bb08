"""TD-SCALE-001's advice follows whose communication is exposed: DDP's all-reduce (its buckets) or
FSDP's all-gathers and reduce-scatters (its prefetching)."""

from __future__ import annotations

import json
from pathlib import Path

from torchdoctor.record import Record
from torchdoctor.rules import diagnose

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _finding(model_class: str | None):
    record = Record.load(FIXTURES / "TD-SCALE-001" / "fires.json")
    if model_class is not None:
        record.env = {**(record.env or {}), "models": [{"class": model_class, "parameter_devices": {"cuda": 1}}]}
    (finding,) = diagnose(record, select=["TD-SCALE-001"]).findings
    return finding


def test_ddp_communication_gets_ddp_buckets() -> None:
    finding = _finding(None)
    assert finding.knob == "bucket_cap_mb" and "bucket_cap_mb" in finding.fix.code


def test_fsdp_communication_gets_fsdps_own_settings_and_no_ddp_knob() -> None:
    for model_class in ("FullyShardedDataParallel", "FSDPTransformer"):
        finding = _finding(model_class)
        assert finding.knob is None and "bucket_cap_mb" not in f"{finding.fix.text}{finding.fix.code}"
        assert "backward_prefetch" in finding.fix.code and "reshard_after_forward" in finding.fix.text


def test_the_learning_rate_hint_states_the_global_batch_on_several_ranks_only() -> None:
    (finding,) = diagnose(Record.load(FIXTURES / "TD-SCALE-015" / "fires.json"), select=["TD-SCALE-015"]).findings
    assert finding.severity == "info" and finding.upside == 0.0
    assert finding.title == "4 ranks x batch 32 = global batch 128; lr 0.1"
    assert finding.evidence == {"world_size": 4, "per_rank_batch": 32, "global_batch": 128, "lr": 0.1}
    assert diagnose(Record.load(FIXTURES / "TD-SCALE-015" / "silent.json"), select=["TD-SCALE-015"]).findings == []


def _imbalance_findings(slow_ranks: list[int], tmp_path: Path) -> list[str]:
    data = json.loads((FIXTURES / "TD-SCALE-003" / "fires.json").read_text())
    multi = data["trace"]["multi_rank"]
    multi["per_rank"] = [{"rank": 0, "compute_us": 1000.0}, {"rank": 1, "compute_us": 1400.0}]
    multi["slow_devices"] = {"ranks": slow_ranks, "by_rank": []}
    path = tmp_path / "record.json"
    path.write_text(json.dumps(data))
    return [f.id for f in diagnose(Record.load(path), select=["TD-SCALE-003"]).findings]


def test_compute_imbalance_yields_when_the_busiest_rank_is_a_slow_device(tmp_path: Path) -> None:
    assert _imbalance_findings([], tmp_path) == ["TD-SCALE-003"]
    assert _imbalance_findings([0], tmp_path) == ["TD-SCALE-003"]  # the slow device is not the busiest rank
    assert _imbalance_findings([1], tmp_path) == []  # its kernels run slower: balancing would not help
