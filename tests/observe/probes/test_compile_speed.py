"""The compile probe: blocks of the script's own steps with the outermost module's forward compiled
against eager ones, after compiled lead-in steps that hold the compiling; the eager forward and
Dynamo's settings are back however the probe ends."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from torchdoctor.analyse import analyse_record
from torchdoctor.launch import LaunchConfig, ObserveConfig, observe
from torchdoctor.observe.probes.blocks import BLOCK, ORDER
from torchdoctor.observe.probes.compile_speed import LEAD_IN, MIN_OPS_PER_STEP, CompileProbe
from torchdoctor.observe.probes.profiled_ops import ProfiledOps, profiled_ops
from torchdoctor.probe_values import COMPILE_SPEED
from torchdoctor.rules import diagnose

TINY_OPS = Path(__file__).resolve().parents[1] / "scripts" / "tiny_ops.py"


class CompileClock:
    """A clock whose steps last `eager_ms` through the module's own forward, `compiled_ms` through the
    compiled one, and `compiling_ms` more in the first compiled step."""

    def __init__(self, module: nn.Module, eager_ms: float, compiled_ms: float, compiling_ms: float) -> None:
        self.module, self.now_ns, self.compiled = module, 0, []
        self.eager_ms, self.compiled_ms, self.compiling_ms = eager_ms, compiled_ms, compiling_ms

    def __call__(self) -> int:
        return self.now_ns

    def compiler(self, forward, **options):
        assert options == {"mode": "default", "dynamic": False}  # the compile knob's first choice

        def compiled(*args):
            first = not self.compiled
            self.compiled.append(args)
            self.now_ns += int((self.compiling_ms if first else 0.0) * 1e6)
            return forward(*args)

        compiled.is_compiled = True
        return compiled

    def run_step(self) -> None:
        self.module(torch.ones(2, 4))
        if not getattr(self.module.forward, "is_compiled", False):
            self.now_ns += int(self.eager_ms * 1e6)
        else:
            self.now_ns += int(self.compiled_ms * 1e6)


def _probe(eager_ms: float = 30.0, compiled_ms: float = 20.0) -> tuple[nn.Module, CompileClock, CompileProbe]:
    module = nn.Linear(4, 4)
    clock = CompileClock(module, eager_ms, compiled_ms, compiling_ms=5000.0)
    ops = ProfiledOps(ops_per_step=400.0, large_self_us=1000.0, step_us=10000.0)
    return module, clock, CompileProbe(module, ops, 0.9, compiler=clock.compiler, clock_ns=clock)


def test_the_probe_compiles_once_leaves_the_compiling_out_and_measures_both_paces() -> None:
    import torch._dynamo

    module, clock, probe = _probe()
    assert probe.to_dict() is None  # never began
    probe.begin()
    assert torch._dynamo.config.suppress_errors  # a compile error falls back to eager, the script lives on
    steps = LEAD_IN + BLOCK * len(ORDER)
    done = []
    for _ in range(steps):
        clock.run_step()
        done.append(probe.step_end())
    assert done == [False] * (steps - 1) + [True]
    assert "forward" not in module.__dict__  # the module's own forward is back
    assert not torch._dynamo.config.suppress_errors
    result = probe.to_dict()
    assert result["complete"] and result["samples"] == len(ORDER) * (BLOCK - 1)
    assert result["lead_in_s"] == pytest.approx(5.0 + LEAD_IN * 0.020)  # the compiling is the lead-in's
    assert result["step_s_eager"] == pytest.approx(0.030) and result["step_s_compiled"] == pytest.approx(0.020)
    assert result["speedup"] == pytest.approx(1.5) and result["ops_per_step"] == 400.0
    assert result["overhead_bound"] == pytest.approx(0.8)  # 90% of the step in the model, 10% in large operators
    assert len(clock.compiled) == LEAD_IN + 2 * BLOCK  # the compiled steps, all through one compiled forward


def test_a_probe_cut_short_in_its_lead_in_gives_the_forward_back_and_claims_nothing() -> None:
    import torch._dynamo

    module, clock, probe = _probe()
    probe.begin()
    clock.run_step()
    probe.step_end()
    probe.close("the script ended during the probe: script_finished")
    assert "forward" not in module.__dict__ and not torch._dynamo.config.suppress_errors
    result = probe.to_dict()
    assert not result["complete"] and result["speedup"] is None and result["samples"] == 0


def test_the_profilers_operators_are_counted_per_step_with_the_self_time_of_the_large_ones() -> None:
    chain = nn.Sequential(*[nn.Linear(8, 8) for _ in range(50)])
    big = torch.randn(400, 400)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=torch.profiler.schedule(wait=0, warmup=1, active=2, repeat=1)) as profiler:
        for _ in range(3):
            chain(torch.randn(4, 8)).sum().backward()
            big @ big  # one large operator a step: 400^3 multiply-adds, milliseconds
            profiler.step()
    ops = profiled_ops(profiler, 2)
    assert ops.ops_per_step > MIN_OPS_PER_STEP  # 50 linear layers, forward and backward: about 2,100
    # aten::matmul's own time is small, its child aten::mm's large: self time is counted once
    assert 0 < ops.large_self_us < ops.step_us
    assert ops.overhead_bound(1.0) < 1.0
    assert profiled_ops(object(), 2) is None  # nothing recorded: no count, no probe


# -- in a real observation ------------------------------------------------------------------------

FAST = ObserveConfig(warmup_steps=2, timing_steps=6, profile_wait=0, profile_warmup=1, profile_active=1)


def test_a_cpu_loop_of_tiny_operators_is_probed_compiled_and_td_comp_003_reads_what_was_measured(tmp_path) -> None:
    phases = []
    record = observe(str(TINY_OPS), ["80"], FAST, LaunchConfig(timeout_s=600), out_dir=tmp_path,
                     progress=lambda phase, done, total: phases.append(phase))
    assert record.exit.reason == "completed", record.exit
    assert CompileProbe.label in phases  # the progress bar says what the seconds of compiling are
    probe = COMPILE_SPEED.of(record)
    assert probe["complete"] and probe["samples"] == len(ORDER) * (BLOCK - 1), probe
    assert probe["ops_per_step"] >= MIN_OPS_PER_STEP and probe["lead_in_s"] > 0
    assert probe["speedup"] == pytest.approx(probe["step_s_eager"] / probe["step_s_compiled"])
    assert record.compile is None  # the probe's compiling is not the script's: the compile knob still applies
    assert record.env["compile_calls"] == [] and not record.env["compile_used"]
    measured = max(0.0, 1 - 1 / probe["speedup"])  # x3.1-x4.3 here: 68-77% of the step
    findings = diagnose(analyse_record(record), select=["TD-COMP-003"]).findings  # the rule reads the trace
    low, high = probe["speedup_ci"]
    assert low <= probe["speedup"] <= high and probe["verdict"] in ("faster", "slower", "no clear difference")
    # the rule's warning threshold, and a gain the probe's own statistic judged
    assert len(findings) == (measured >= 0.15 and probe["verdict"] == "faster"), (probe, findings)
    for finding in findings:
        assert finding.evidence["upside_basis"] == "measured" and finding.upside == pytest.approx(measured, abs=1e-4)
        assert finding.evidence["measured_speedup_ci"] == [round(low, 3), round(high, 3)]


def test_with_few_operators_a_step_or_the_probe_switched_off_nothing_is_compiled(tmp_path) -> None:
    few = observe(str(TINY_OPS.parent / "train_tensors.py"), [], FAST, LaunchConfig(timeout_s=300),
                  out_dir=tmp_path / "a")
    assert few.exit.reason == "completed" and COMPILE_SPEED.of(few) is None
    off = ObserveConfig(**{**FAST.to_dict(), "compile_probe": False})
    record = observe(str(TINY_OPS), ["80"], off, LaunchConfig(timeout_s=300), out_dir=tmp_path / "b")
    assert record.exit.reason == "completed" and COMPILE_SPEED.of(record) is None


def test_a_script_that_takes_gradients_of_gradients_is_not_compiled(tmp_path) -> None:
    # torch.compile's AOT autograd raises on a double backward, inside the script's own step
    record = observe(str(TINY_OPS), ["80", "double"], FAST, LaunchConfig(timeout_s=300), out_dir=tmp_path)
    assert record.exit.reason == "completed", record.exit
    assert COMPILE_SPEED.of(record) is None
