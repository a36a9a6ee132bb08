"""The speed-of-light accounting of a Record: MFU from the profiled FLOPs and the measured peak,
and a waterfall whose slices add up to the measured step, built from the timed steps and the
operator-costs probe's value (and, for a trace-only Record, from the trace's breakdown)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.accounting import Accounting, account_record
from torchdoctor.accounting.explain import explained, unexplained
from torchdoctor.finding import Finding, Fix
from torchdoctor.record import Record, StepSample

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "traces"
PEAK = 50e9


def _steps(wall: float, data: float, model: float, n: int = 4) -> list[StepSample]:
    return [StepSample(index=i, wall_s=wall, data_wait_s=data, forward_s=model * 0.4, backward_s=model * 0.5,
                       optimizer_s=model * 0.1) for i in range(n)]


def _op(name: str, self_s: float, flops: float = 0.0, moved: float = 0.0, count: float = 1.0,
        alone_s: float | None = None) -> dict:
    return {"name": name, "dtype": "fp32", "shapes": "[256, 256]x[256, 256]", "count": count, "self_s": self_s,
            "flops": flops, "bytes": moved, "source": "train.py:12 (forward)", "alone_s": alone_s}


def _costs(ops: list[dict], by_kind: dict[str, float], peak: float | None = PEAK) -> dict:
    flops = sum(o["flops"] for o in ops)
    return {"complete": True, "reason": None, "steps": 2, "step_s": 0.1, "ops_self_s": sum(by_kind.values()),
            "ops_count": 10, "small_ops_count": 0, "self_s_by_kind": by_kind, "flops": flops,
            "flops_by_dtype": {"fp32": flops} if flops else {}, "ops": ops,
            "peaks": {"device": "cpu", "threads": 2, "flops_per_s": {"fp32": peak} if peak else {},
                      "bytes_per_s": 10e9, "cached": [], "not_measured": {} if peak else {"fp32": "could not run: busy"}}}


def _record(costs: dict | None, wall: float = 0.1, data: float = 0.01, model: float = 0.08) -> Record:
    return Record(steps=_steps(wall, data, model), probes={"op_costs": costs} if costs else {})


def _seconds(accounting: Accounting) -> dict[str, float]:
    return {s.kind: s.seconds for s in accounting.slices}


def test_mfu_is_the_time_the_flops_take_at_the_peak_over_the_measured_step():
    # 40 ms of matmuls doing 1 GFLOP: 20 ms at a 50 GFLOP/s peak
    accounting = account_record(_record(_costs([_op("aten::mm", 0.04, flops=1e9)], {"compute": 0.04})))
    assert accounting.mfu == pytest.approx(0.02 / 0.1)
    assert accounting.achieved_flops_per_s == pytest.approx(1e9 / 0.1)
    assert _seconds(accounting)["ideal"] == pytest.approx(0.02)
    assert _seconds(accounting)["compute_below_peak"] == pytest.approx(0.02)


def test_the_slices_add_up_to_the_measured_step_within_two_percent():
    ops = [_op("aten::mm", 0.03, flops=1e9), _op("aten::add", 0.02, moved=1e8), _op("aten::view", 0.004, count=800)]
    accounting = account_record(_record(_costs(ops, {"compute": 0.03, "memory": 0.02, "small": 0.004, "sync": 0.001})))
    assert accounting.slices_sum_s == pytest.approx(accounting.step_s, rel=0.02)
    seconds = _seconds(accounting)
    assert seconds["data_wait"] == pytest.approx(0.01) and seconds["outside_model"] == pytest.approx(0.01)
    assert seconds["between_ops"] == pytest.approx(0.1 - 0.01 - 0.01 - 0.055)


def test_operators_longer_than_the_step_are_capped_and_the_slices_still_add_up():
    accounting = account_record(_record(_costs([_op("aten::mm", 0.3, flops=1e9)], {"compute": 0.3})))
    assert accounting.slices_sum_s == pytest.approx(accounting.step_s, rel=0.02)
    assert _seconds(accounting)["compute_below_peak"] + _seconds(accounting)["ideal"] == pytest.approx(0.09)


def test_a_matmul_near_its_peak_is_a_healthy_cost_centre_and_a_slow_copy_is_not():
    ops = [_op("aten::mm", 0.03, flops=0.03 * PEAK * 0.8), _op("aten::copy_", 0.03, moved=0.03 * 10e9 * 0.1)]
    accounting = account_record(_record(_costs(ops, {"compute": 0.03, "memory": 0.03})))
    mm, copy = accounting.cost_centres
    assert (mm.bound, mm.verdict, mm.peak_fraction) == ("compute", "healthy", pytest.approx(0.8))
    assert mm.why == "compute-bound at 80% of this machine's fp32 peak: healthy"
    assert (copy.bound, copy.verdict) == ("memory", "below speed of light")
    assert copy.source == "train.py:12 (forward)"


def test_a_memory_bound_operator_near_the_bandwidth_has_no_gap_and_one_five_times_off_has_four_fifths():
    # 10 GB/s: 0.2 GB moved take 20 ms at the speed of light
    near = account_record(_record(_costs([_op("aten::add", 0.02, moved=0.2e9)], {"memory": 0.02})))
    assert _seconds(near)["memory_at_speed"] == pytest.approx(0.02) and _seconds(near)["memory_bound"] == 0
    assert not {"memory_at_speed", "memory_bound"} & {s.kind for s in unexplained(explained(near, []))}
    off = account_record(_record(_costs([_op("aten::add", 0.05, moved=0.1e9)], {"memory": 0.05})))
    assert _seconds(off)["memory_at_speed"] == pytest.approx(0.01)
    assert _seconds(off)["memory_bound"] == pytest.approx(0.04)
    assert off.slices_sum_s == pytest.approx(off.step_s, rel=0.02)


def test_an_operator_as_fast_as_alone_on_its_inputs_is_healthy_however_far_below_the_peak():
    # a convolution at 5% of the fp32 peak, its call as fast as the same call alone: nothing to win back
    conv = _op("aten::conv2d", 0.04, flops=0.04 * PEAK * 0.05, alone_s=0.036)
    (centre,) = account_record(_record(_costs([conv], {"compute": 0.04}))).cost_centres
    assert centre.verdict == "healthy" and centre.alone_fraction == pytest.approx(0.9)
    assert centre.why == ("compute-bound at 5% of this machine's fp32 peak and 90% of its own speed alone "
                          "on these inputs: healthy")
    gelu = _op("aten::gelu", 0.05, moved=0.05e9, alone_s=0.01)  # 10% of the bandwidth, 5x its time alone
    accounting = account_record(_record(_costs([gelu], {"memory": 0.05})))
    assert _seconds(accounting)["memory_bound"] == pytest.approx(0.05 - 0.01)


def test_a_memory_bound_operator_is_healthy_as_far_from_its_speed_alone_as_healthy_steps_run():
    # 5x its time alone: healthy steps run memory-bound operators 3x to 15x slower than alone
    gelu = _op("aten::gelu", 0.05, moved=0.05e9, alone_s=0.01)
    assert account_record(_record(_costs([gelu], {"memory": 0.05}))).cost_centres[0].verdict == "healthy"
    slow = _op("aten::gelu", 0.05, moved=0.05e9, alone_s=0.0005)  # 100x its time alone
    assert account_record(_record(_costs([slow], {"memory": 0.05}))).cost_centres[0].verdict == "below speed of light"


def test_only_an_operator_that_moves_data_is_held_to_the_copy_bandwidth():
    # both at 10% of the 10 GB/s bandwidth, neither replayed alone
    copy, pool = _op("aten::copy_", 0.05, moved=0.05e9), _op("aten::max_pool2d_with_indices", 0.04, moved=0.04e9)
    by_name = {c.name: c for c in account_record(_record(_costs([copy, pool], {"memory": 0.09}))).cost_centres}
    assert by_name["aten::copy_"].verdict == "below speed of light"
    assert by_name["aten::max_pool2d_with_indices"].verdict == "unknown"
    assert by_name["aten::max_pool2d_with_indices"].why == ("memory-bound at 10% of its copy bandwidth; "
                                                            "its speed alone not measured")


def test_a_concatenation_whose_bytes_the_profiler_does_not_record_has_no_bandwidth_figure():
    (cat,) = account_record(_record(_costs([_op("aten::cat", 0.05)], {"memory": 0.05}))).cost_centres
    assert cat.peak_fraction is None and cat.verdict == "unknown"


def test_the_batchs_loading_is_the_data_waits_time_not_an_operator_slice():
    ops = [_op("aten::mm", 0.03, flops=1e9)]
    with_loading = account_record(_record(_costs(ops, {"compute": 0.03, "loading": 0.2})))
    without = account_record(_record(_costs(ops, {"compute": 0.03})))
    assert _seconds(with_loading) == _seconds(without)


def test_the_computation_the_script_runs_outside_the_model_is_not_time_outside_it():
    costs = _costs([_op("aten::cdist", 0.004, moved=1e6)], {"memory": 0.004})
    costs["script_calls"] = {"forwards": 1, "backward_passes": 1, "frames": {}, "calls": [
        {"callee": "torch.functional.cdist", "caller": "train.py:40 (main)", "count": 1, "wall_s": 0.005,
         "ops_s": 0.004, "in_model": False},
        {"callee": "print", "caller": "train.py:41 (main)", "count": 1, "wall_s": 0.003, "ops_s": 0.0,
         "in_model": False}]}
    seconds = _seconds(account_record(_record(costs)))  # 10 ms outside the phases, 4 ms of it cdist
    assert seconds["outside_model"] == pytest.approx(0.006)


def test_a_peak_that_could_not_be_measured_leaves_no_mfu_and_says_why():
    accounting = account_record(_record(_costs([_op("aten::mm", 0.04, flops=1e9)], {"compute": 0.04}, peak=None)))
    assert accounting.mfu is None
    assert "peak not measured for fp32: could not run: busy" in accounting.notes
    assert accounting.slices_sum_s == pytest.approx(accounting.step_s, rel=0.02)


def test_without_the_probe_the_step_clock_alone_is_accounted_and_the_reason_noted():
    accounting = account_record(_record(None))
    assert [s.kind for s in accounting.slices] == ["data_wait", "outside_model", "between_ops"]
    assert accounting.slices_sum_s == pytest.approx(accounting.step_s)
    assert accounting.notes[0].startswith("operators not accounted:")


def test_a_large_slice_no_finding_explains_is_unexplained_and_a_finding_explains_it():
    ops = [_op("aten::add", 0.075, moved=1e6)]
    accounting = account_record(_record(_costs(ops, {"memory": 0.075})))
    assert [s.kind for s in unexplained(explained(accounting, []))] == ["memory_bound"]
    hot = Finding("TD-COMP-004", "compute", "warning", "hot", 0.5, {}, "", Fix(""))
    assert unexplained(explained(accounting, [hot])) == ()


def test_the_section_reads_back_from_its_json():
    accounting = account_record(_record(_costs([_op("aten::mm", 0.04, flops=1e9)], {"compute": 0.04})))
    assert Accounting.from_dict(accounting.to_dict()) == accounting


def test_a_trace_only_record_accounts_for_its_breakdown_without_a_peak():
    from torchdoctor.trace import analyse_traces

    trace = FIXTURES / "a100-alexnet-cudasync.json.gz"
    if not trace.exists():
        pytest.skip("the shared fixture traces are not beside this checkout")
    accounting = account_record(Record(kind="traces", trace=analyse_traces([str(trace)]).to_dict()))
    assert accounting.source == "trace" and accounting.mfu is None
    assert accounting.slices_sum_s == pytest.approx(accounting.step_s, rel=1e-6)
    assert accounting.notes[0].startswith("peak not measured")
    assert accounting.cost_centres[0].name == "aten::empty_strided"
