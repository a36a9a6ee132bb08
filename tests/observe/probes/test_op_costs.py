"""The operator-costs probe on a real profiler: FLOPs, dtypes and shapes of the profiled steps'
operators, the script's line that runs them, and the peaks cached per machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from torchdoctor.observe.probes import peaks
from torchdoctor.observe.probes.op_costs import ACTIVE, WARMUP, OpCostProbe, ScriptFiles, _flop_owners, unrecordable_file

HERE = Path(__file__).resolve()


def _train_step(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor) -> None:
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()


@pytest.fixture(scope="module")
def probed() -> dict:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, 64)
    probe = OpCostProbe("cpu", None, ScriptFiles(str(HERE.parent)))
    probe.begin()
    done = False
    while not done:
        _train_step(model, opt, x)
        done = probe.step_end()
    value = probe.to_dict()
    assert value is not None
    return value


def test_the_flops_of_a_step_are_the_matrix_products_of_forward_and_backward(probed):
    # forward addmm 2*32*64*128 + 2*32*128*8; backward: weight grads of both layers, input grad of the second
    forward = 2 * 32 * 64 * 128 + 2 * 32 * 128 * 8
    backward = 2 * 32 * 64 * 128 + 2 * 32 * 128 * 8 + 2 * 32 * 8 * 128
    assert probed["complete"] and probed["steps"] == ACTIVE
    assert probed["flops"] == forward + backward
    assert probed["flops_by_dtype"] == {"fp32": forward + backward}


def test_each_operator_group_names_its_dtype_shapes_and_the_scripts_function(probed):
    addmm = [o for o in probed["ops"] if o["name"] == "aten::addmm" and "[32, 64]" in o["shapes"]]
    assert addmm and addmm[0]["dtype"] == "fp32" and addmm[0]["flops"] == 2 * 32 * 64 * 128
    assert addmm[0]["source"].startswith(f"{HERE.name}:") and addmm[0]["source"].endswith("(_train_step)")


def test_the_time_below_an_operator_with_flops_is_its_compute():
    class Op:
        def __init__(self, name: str, flops: int) -> None:
            self._name, self._flops = name, flops

        def name(self) -> str:
            return self._name

        def flops(self) -> int:
            return self._flops

    # conv2d (FLOPs) > convolution > mkldnn_convolution, then an add (the profiler counts its FLOPs
    # too: an elementwise FLOP is memory-bound work, not a matrix product's) on the same thread
    ops = [Op("aten::conv2d", 10), Op("aten::convolution", 0), Op("aten::mkldnn_convolution", 0), Op("aten::add", 4)]
    spans = [(1, 0, 100), (1, 1, 99), (1, 2, 98), (1, 100, 120)]
    assert _flop_owners(ops, spans) == [0, 0, 0, None]


def test_the_operators_time_by_kind_is_all_of_their_self_time(probed):
    assert sum(probed["self_s_by_kind"].values()) == pytest.approx(probed["ops_self_s"])
    assert probed["self_s_by_kind"]["compute"] > 0


def test_the_peaks_are_measured_once_then_read_from_the_machines_cache(probed, tmp_path, monkeypatch):
    assert probed["peaks"]["flops_per_s"]["fp32"] > 0 and probed["peaks"]["bytes_per_s"] > 0
    monkeypatch.setattr(peaks, "_load", lambda: (0.5, 2))  # a quiet machine
    first = peaks.measure_peaks("cpu", ["fp32"], tmp_path / "peaks.json")
    again = peaks.measure_peaks("cpu", ["fp32"], tmp_path / "peaks.json")
    assert first["cached"] == [] and again["cached"] == ["copy", "matmul:fp32"]
    assert again["flops_per_s"] == first["flops_per_s"]


def test_a_peak_measured_on_a_busy_machine_is_not_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(peaks, "_load", lambda: (9.0, 2))  # other processes want 9 cores of 2
    value = peaks.measure_peaks("cpu", ["fp32"], tmp_path / "peaks.json")
    assert value["flops_per_s"]["fp32"] > 0 and value["load_average"] == 9.0
    assert not (tmp_path / "peaks.json").exists()


def test_a_dtype_without_a_benchmark_is_not_measured_and_says_why(tmp_path):
    value = peaks.measure_peaks("cpu", ["int64"], None)
    assert value["not_measured"] == {"int64": "no matrix-product benchmark for this dtype"}
    assert value["flops_per_s"] == {}


def test_a_run_folder_beside_a_store_caches_there_and_a_temporary_one_nowhere(tmp_path):
    assert peaks.peaks_cache_path(str(tmp_path / "runs" / "20261206-1")) == tmp_path / "peaks.json"
    assert peaks.peaks_cache_path(str(tmp_path / "torchdoctor-x")) is None


def test_a_probe_cut_short_says_why():
    probe = OpCostProbe("cpu", None, ScriptFiles(str(HERE.parent)))
    probe.begin()
    probe.close("the script ended during the probe: script_finished")
    assert probe.to_dict() == {"complete": False, "reason": "the script ended during the probe: script_finished"}
    assert WARMUP == 1


def test_a_file_name_that_is_not_utf8_keeps_the_python_tracer_off(monkeypatch):
    assert unrecordable_file() is None
    monkeypatch.setattr("sys.argv", [os.fsdecode(b"run\xff.py")])
    assert unrecordable_file() == "run\udcff.py"


class _Rows(torch.utils.data.Dataset):
    """Each sample computed in `__getitem__`: a `sinh` no model runs."""

    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.sinh(torch.full((64,), float(index % 7)))


def test_the_operators_a_dataset_runs_in_the_main_process_are_loading_not_operator_groups(monkeypatch):
    monkeypatch.setattr("torchdoctor.observe.probes.op_costs.measure_peaks", lambda *args: {})  # not under test
    model = torch.nn.Linear(64, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = iter(torch.utils.data.DataLoader(_Rows(), batch_size=32))
    probe = OpCostProbe("cpu", None, ScriptFiles(str(HERE.parent)))
    probe.begin()
    done = False
    while not done:
        _train_step(model, opt, next(batches))
        done = probe.step_end()
    value = probe.to_dict()
    assert value["self_s_by_kind"]["loading"] > 0
    assert "aten::sinh" not in {op["name"] for op in value["ops"]}
    assert "aten::addmm" in {op["name"] for op in value["ops"]}
