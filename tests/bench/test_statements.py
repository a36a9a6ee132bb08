"""compare_statements: real torch.utils.benchmark timing of statements and callables."""

from __future__ import annotations

import time

import pytest
import torch

from torchdoctor.bench import (
    SLOWER,
    BenchInputError,
    MismatchedDevicesError,
    Policy,
    Variant,
    VariantFailedError,
    VariantTimeoutError,
    compare_statements,
)

QUICK = Policy(min_rounds=5, max_rounds=8, budget_s=10)


def test_a_statement_doing_ten_times_the_work_is_called_slower():
    # Ten times, not twice: a loaded host adds milliseconds of wake-up latency to every sleep,
    # which can drown a 2 ms difference but not an 18 ms one.
    start = time.perf_counter()
    result = compare_statements(
        [Variant("short", "time.sleep(0.002)", setup="import time"),
         Variant("long", "time.sleep(0.02)", setup="import time")],
        policy=QUICK, round_s=0.02,
    )
    elapsed_s = time.perf_counter() - start
    assert result.verdicts["long"].verdict == SLOWER
    # A sample is a per-call time: never under the call's sleep (guaranteed however loaded the
    # host; 1e-6: float rounding of the clock), and in seconds, each within its own slice of the
    # call. How close the median comes to 2 ms: benchmarks/timing_targets.py.
    assert min(result.samples_s["short"]) >= 0.002 - 1e-6 and min(result.samples_s["long"]) >= 0.02 - 1e-6
    assert sum(sum(samples) for samples in result.samples_s.values()) <= elapsed_s


def test_callables_and_statements_mix_and_params_reach_setup_and_statement():
    x = torch.randn(64, 64)
    result = compare_statements(
        [Variant("stmt", "y @ y", setup="y = torch.randn(N, N)"),
         Variant("callable", lambda: x @ x)],
        policy=Policy(min_rounds=5, max_rounds=5), params={"N": 64}, round_s=0.01, label="N=64",
    )
    assert result.label == "N=64" and result.rounds == 5
    assert all(len(s) == 5 for s in result.samples_s.values())


def test_a_setup_that_raises_names_the_variant_and_the_error():
    with pytest.raises(VariantFailedError, match=r"variant 'B': setup raised NameError: .*undefined"):
        compare_statements([Variant("A", "pass"), Variant("B", "pass", setup="undefined + 1")], policy=QUICK)


def test_a_statement_that_raises_names_the_variant_and_the_error():
    with pytest.raises(VariantFailedError, match=r"variant 'B': statement raised ZeroDivisionError"):
        compare_statements([Variant("A", "pass"), Variant("B", "1 / 0")], policy=QUICK)


def test_a_hanging_statement_is_stopped_by_the_per_run_timeout():
    start = time.perf_counter()
    with pytest.raises(VariantTimeoutError, match=r"variant 'B': statement ran longer than .* 0.5 s"):
        compare_statements([Variant("A", "pass"), Variant("B", "while True: pass")], policy=QUICK, timeout_s=0.5)
    assert time.perf_counter() - start < 10


def test_variants_on_different_devices_are_refused_unless_allowed():
    cpu, meta = torch.ones(4), torch.ones(4, device="meta")
    variants = [Variant("cpu", "x + 1", globals={"x": cpu}), Variant("meta", lambda: meta + 1)]
    with pytest.raises(MismatchedDevicesError, match=r"cpu: cpu, meta: meta"):
        compare_statements(variants, policy=QUICK)
    result = compare_statements(
        variants, policy=Policy(min_rounds=5, max_rounds=5), round_s=0.005, allow_mixed_devices=True
    )
    assert result.rounds == 5


def test_a_module_used_as_the_callable_counts_for_the_device_check():
    model = torch.nn.Linear(4, 4, device="meta")
    with pytest.raises(MismatchedDevicesError):
        compare_statements(
            [Variant("cpu", "x * 2", globals={"x": torch.ones(4)}), Variant("model", model.forward)],
            policy=QUICK,
        )


def test_the_cpu_clock_ignores_sleeping_and_is_refused_for_tensors_off_the_cpu():
    result = compare_statements(
        [Variant("spin", "sum(range(2000))"), Variant("sleep", "time.sleep(0.002); sum(range(2000))",
                                                      setup="import time")],
        policy=Policy(min_rounds=5, max_rounds=5), round_s=0.01, clock="cpu",
    )
    assert result.median_s("sleep") < 0.001  # 2 ms of sleep cost no CPU time
    with pytest.raises(MismatchedDevicesError, match="CPU clock cannot see work on B: meta"):
        compare_statements([Variant("A", "pass"), Variant("B", "x", globals={"x": torch.ones(1, device="meta")})],
                           policy=QUICK, clock="cpu", allow_mixed_devices=True)
    with pytest.raises(BenchInputError, match="clock must be one of"):
        compare_statements([Variant("A", "pass"), Variant("B", "pass")], clock="gpu")
