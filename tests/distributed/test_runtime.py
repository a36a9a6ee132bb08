"""RuntimeProbe in this process: DistributedSampler epochs, forward costs, and the analysis of them."""

from __future__ import annotations

import pytest
from torch.utils.data.distributed import DistributedSampler

from torchdoctor.observe.probes.distributed import RuntimeProbe
from torchdoctor.distributed.runtime_analysis import runtime_analysis


def _two_epochs(call_set_epoch: bool) -> dict:
    probe = RuntimeProbe()
    undo = probe.install()
    try:
        sampler = DistributedSampler(range(100), num_replicas=2, rank=0, shuffle=True, seed=3)
        for epoch in range(2):
            if call_set_epoch:
                sampler.set_epoch(epoch)
            assert len(list(sampler)) == 50  # the wrapped iterator yields the same indices
    finally:
        undo()
    assert DistributedSampler.__iter__.__name__ == "__iter__"  # the patch is undone
    return probe.to_dict()


def test_the_same_order_in_two_epochs_means_set_epoch_is_missing():
    runtime = _two_epochs(call_set_epoch=False)
    analysis = runtime_analysis([{"rank": 0, "runtime": runtime}])
    assert analysis["sampler"]["set_epoch_missing"] is True and analysis["sampler"]["repeated_epochs"] == 1


def test_set_epoch_gives_a_new_order_and_no_finding():
    analysis = runtime_analysis([{"rank": 0, "runtime": _two_epochs(call_set_epoch=True)}])
    assert analysis["sampler"]["set_epoch_missing"] is False


def _runtime(elements: list[int]) -> dict:
    return {"optimizer_steps": 4, "backward_calls": 4, "synced_forwards": 0, "step_elements": elements,
            "sampler_iterations": [], "ddp": None}


def test_batch_cost_idle_fraction_is_the_waiting_share_when_time_follows_cost():
    analysis = runtime_analysis([{"rank": 0, "runtime": _runtime([100, 100, 300])},
                                 {"rank": 1, "runtime": _runtime([100, 300, 100, 7])}])
    cost = analysis["batch_cost"]
    assert cost["steps_compared"] == 3  # the steps both ranks have
    assert cost["idle_fraction"] == pytest.approx((0 + 1 / 3 + 1 / 3) / 3)  # mean 200 of max 300
    assert cost["unbalanced"] and cost["heaviest_rank_by_step"] == {"0": 1 / 3, "1": 1 / 3}


def test_no_runtime_facts_give_no_section():
    assert runtime_analysis([{"rank": 0, "steps": []}]) is None
