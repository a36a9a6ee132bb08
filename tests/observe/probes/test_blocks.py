"""The blocks driver's judgement: a probe's speed-up comes with its 95% interval and a verdict from
the statistic tune judges by, so that six steps a side that moved with the machine are not read as
a gain."""

from __future__ import annotations

import pytest

from torchdoctor.observe.probes.blocks import BLOCK, ORDER, BlockProbe


class SteppedProbe(BlockProbe):
    """A probe whose steps take the times it is given, one list per block, the first step of each
    (not counted) 1 ms."""

    def __init__(self, blocks: list[list[float]]) -> None:
        self.now_ns, self.blocks = 0, blocks
        super().__init__(clock_ns=lambda: self.now_ns)

    def _apply(self, side: str) -> None:
        pass

    def run(self) -> dict:
        self.begin()
        for block in self.blocks:
            for step_ms in [1.0, *block]:
                self.now_ns += int(step_ms * 1e6)
                self.step_end()
        return self.measured()


def steady(tried_ms: float, script_ms: float) -> list[list[float]]:
    return [[tried_ms if side == "tried" else script_ms] * (BLOCK - 1) for side in ORDER]


def test_a_steady_gain_is_judged_faster_with_an_interval_around_the_speedup():
    jitter = [0.98, 1.0, 1.02]
    blocks = [[j * (8.0 if side == "tried" else 10.0) for j in jitter] for side in ORDER]
    result = SteppedProbe(blocks).run()
    low, high = result["speedup_ci"]
    assert result["speedup"] == pytest.approx(1.25)
    assert low <= result["speedup"] <= high and high / low < 1.1
    assert result["verdict"] == "faster"


def test_blocks_that_moved_with_the_machine_are_no_clear_difference():
    # The tried side x1.16 on average, which a rule would claim as 14% off the step, but its blocks ran
    # at 5 and 11 ms (the machine got busy): the pooled steps' interval reaches below x1.
    blocks = [[5.0, 5.1, 4.9], [9.2, 9.3, 9.1], [9.1, 9.2, 9.3], [11.0, 11.2, 10.8]]
    result = SteppedProbe(blocks).run()
    assert result["speedup"] == pytest.approx(9.2 / 8.0)
    assert result["speedup_ci"][0] < 1.0 and result["verdict"] == "no clear difference"


def test_a_loss_is_judged_slower():
    result = SteppedProbe(steady(12.0, 10.0)).run()
    assert result["speedup"] == pytest.approx(10 / 12) and result["verdict"] == "slower"


def test_a_probe_cut_short_has_no_speedup_interval_or_verdict():
    probe = SteppedProbe(steady(8.0, 10.0)[:2])
    probe.run()
    probe.close("the script ended")
    result = probe.measured()
    assert not result["complete"]
    assert result["speedup"] is None and result["speedup_ci"] is None and result["verdict"] is None
