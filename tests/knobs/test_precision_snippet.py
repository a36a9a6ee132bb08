"""The autocast snippet names the device the run's models were on."""

from __future__ import annotations

from torchdoctor.knobs import REGISTRY
from torchdoctor.record import Record


def _record(device: str) -> Record:
    return Record(env={"models": [{"parameter_dtypes": {"float32": 10}, "parameter_devices": {device: 10}}],
                       "devices": {"gpu_count": 0, "gpus": []}})


def test_a_cpu_run_gets_a_cpu_autocast_snippet_and_a_gpu_run_a_cuda_one():
    knob = REGISTRY["autocast_bf16"]
    knob.applies(_record("cpu"))
    assert 'device_type="cpu"' in knob.code_change(True)
    knob.applies(_record("cuda"))
    assert 'device_type="cuda"' in knob.code_change(True)
