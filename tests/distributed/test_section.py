"""`record.distributed` read back as a DistributedSection: the section `rank_analysis` writes for the
ranks of the shared multi-rank traces (their profiled step times and shares, with run-time facts a
RuntimeProbe measured in this process, as tests/distributed/test_runtime.py measures them) gives, through `from_dict` and `to_dict`, the very JSON it
was read from, with or without its timing keys; a part of the wrong shape is an error naming it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from torchdoctor.distributed.analysis import rank_analysis
from torchdoctor.distributed.section import DistributedSection
from torchdoctor.errors import RecordFormatError
from torchdoctor.record import Summary
from torchdoctor.trace import analyse_traces
from tests.distributed.test_runtime import _two_epochs

REPO_ROOT = Path(__file__).resolve().parents[2]
TRACES = Path(os.environ.get("TORCHDOCTOR_SHARED", REPO_ROOT.parent / "shared")) / "fixtures" / "traces"
DDP = {"find_unused_parameters": True, "gradient_as_bucket_view": False, "static_graph": False,
       "bucket_cap_bytes": 26214400, "bucket_sizes_bytes": [1048576, 524288], "unused_parameter_bytes": 0,
       "has_rebuilt_buckets": True}


def _ranks() -> list[dict[str, Any]]:
    traces = sorted(str(p) for p in (TRACES / "multirank-sampled").glob("*.json.gz"))
    assert traces, f"no multi-rank traces under {TRACES}"
    sections = analyse_traces(traces).to_dict()["ranks"]
    ranks = []
    for i, section in enumerate(sections):
        walls = [step["wall_us"] / 1e6 for step in section["steps"]]
        runtime = {**_two_epochs(call_set_epoch=i == 0), "ddp": DDP if i == 0 else None,
                   "step_elements": [4096 * (i + 1)] * len(walls)}
        ranks.append({"rank": section["rank"], "steps": walls, "data_wait_s": [0.0] * len(walls), "runtime": runtime,
                      "summary": Summary(num_steps=len(walls), backward_fraction=section["shares"]["backward_fraction"])})
    return ranks


def _round_trips(section: dict[str, Any]) -> DistributedSection:
    value = DistributedSection.from_dict(section)
    assert json.dumps(value.to_dict()) == json.dumps(section)
    return value


def test_the_section_of_the_multi_rank_traces_round_trips() -> None:
    section = json.loads(json.dumps(rank_analysis(_ranks())))
    value = _round_trips(section)
    assert value.ranks_count == len(value.per_rank) >= 2 and value.runtime is not None
    assert value.runtime.ddp is not None and value.runtime.ddp.buckets_count == 2
    assert value.runtime.sampler is not None and value.runtime.sampler.set_epoch_missing is not None


def test_without_two_measured_ranks_the_timing_keys_stay_out() -> None:
    measured, *_ = _ranks()
    failed = {"rank": 1, "how": "script_error", "code": 1, "error": "RuntimeError: boom", "steps": [],
              "data_wait_s": [], "summary": {}}
    section = json.loads(json.dumps(rank_analysis([measured, failed])))
    value = _round_trips(section)
    assert "per_rank" not in value.to_dict() and value.failed_ranks[0].error == "RuntimeError: boom"


@pytest.mark.parametrize(("data", "field"), [
    ({"stragglers": [{"rank": 1, "excess_s": "long"}]}, "distributed.stragglers[0].excess_s"),
    ({"per_rank": [{"step_s": 0.1}]}, "distributed.per_rank[0].rank"),
    ({"runtime": {"grad_sync": {"accumulation_without_no_sync": "yes"}}},
     "distributed.runtime.grad_sync.accumulation_without_no_sync"),
    ({"runtime": {"ddp": {"bucket_sizes_bytes": ["1MB"]}}}, "distributed.runtime.ddp.bucket_sizes_bytes[0]"),
    ({"runtime": {"batch_cost": {"heaviest_rank_by_step": {"0": "most"}}}},
     "distributed.runtime.batch_cost.heaviest_rank_by_step.0"),
])
def test_wrong_shapes_name_the_field(data: dict[str, Any], field: str) -> None:
    with pytest.raises(RecordFormatError, match=field.replace(".", r"\.").replace("[", r"\[")):
        DistributedSection.from_dict(data)
