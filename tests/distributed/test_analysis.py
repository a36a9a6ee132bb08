"""Per-rank analysis of `record.ranks`: who is slow, by how much, and why."""

from __future__ import annotations

import pytest

from torchdoctor.distributed.analysis import rank_analysis
from torchdoctor.record import Summary


def _rank(rank: int, walls: list[float], backward_fraction: float = 0.3, data_wait: float = 0.0) -> dict:
    return {"rank": rank, "steps": walls, "data_wait_s": [data_wait] * len(walls),
            "summary": Summary(num_steps=len(walls), backward_fraction=backward_fraction)}


def test_in_lockstep_the_rank_that_waits_least_in_backward_is_the_straggler():
    # Both walls 100 ms; rank 0 spends 90 ms in backward (waiting), rank 1 only 10 ms.
    result = rank_analysis([_rank(0, [0.1] * 8, 0.9), _rank(1, [0.1] * 8, 0.1)])
    assert result["lockstep"] and result["load"] == "work_s"
    assert result["slowest_rank"] == 1 and result["fastest_rank"] == 0
    assert result["gap_s"] == pytest.approx(0.08)
    assert [s["rank"] for s in result["stragglers"]] == [1]
    assert result["stragglers"][0]["excess_s"] == pytest.approx(0.08)
    assert result["stragglers"][0]["cause"] == "compute or host work"


def test_unsynchronised_ranks_are_compared_by_step_time_and_step_share():
    result = rank_analysis([_rank(0, [0.1] * 6), _rank(1, [0.1] * 6), _rank(2, [0.2] * 6)])
    assert not result["lockstep"]
    assert result["slowest_rank"] == 2 and result["gap_s"] == pytest.approx(0.1)
    assert result["slowest_by_step"]["2"] == 1.0
    assert [s["rank"] for s in result["stragglers"]] == [2]


def test_a_rank_slow_because_it_waits_for_data_is_blamed_on_data_loading():
    result = rank_analysis([_rank(0, [0.1] * 4, 0.9), _rank(1, [0.1] * 4, 0.1, data_wait=0.07)])
    assert result["stragglers"][0]["cause"] == "data loading"


def test_differences_within_host_jitter_are_not_stragglers():
    # 1 ms of 2 ms steps is 50 %, but below the 5 ms floor of scheduling noise.
    result = rank_analysis([_rank(0, [0.002] * 6), _rank(1, [0.003] * 6)])
    assert result["slowest_rank"] == 1 and result["stragglers"] == []


def test_balanced_ranks_have_no_straggler_and_report_mismatched_step_counts():
    result = rank_analysis([_rank(0, [0.1] * 5, 0.3), _rank(1, [0.1] * 4, 0.31)])
    assert result["stragglers"] == []
    assert result["imbalance_fraction"] < 0.05
    assert result["step_counts_match"] is False


def test_fewer_than_two_ranks_gives_no_section():
    assert rank_analysis([_rank(0, [0.1] * 3)]) is None
    assert rank_analysis([]) is None


def test_with_one_rank_measured_only_the_failure_and_warning_keys_are_there():
    failed = {"rank": 1, "how": "script_error", "code": 1, "error": "RuntimeError: boom", "steps": [],
              "data_wait_s": [], "summary": {}}
    section = rank_analysis([_rank(0, [0.1] * 3), failed])
    assert section["ranks_count"] == 1 and "slowest_rank" not in section
    assert section["failed_ranks"] == [{"rank": 1, "how": "script_error", "code": 1,
                                        "error": "RuntimeError: boom", "steps_measured": 0}]
    assert "rank 0: 3, rank 1: 0" in section["warnings"][0]


def test_summaries_loaded_from_json_are_plain_dicts():
    ranks = [_rank(0, [0.1] * 3, 0.9), _rank(1, [0.1] * 3, 0.1)]
    for r in ranks:
        r["summary"] = {"backward_fraction": r["summary"].backward_fraction}
    assert rank_analysis(ranks)["slowest_rank"] == 1
