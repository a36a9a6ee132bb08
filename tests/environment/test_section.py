"""`record.env` read back as an Environment: the env of a Record observed on an H200 and of one
observed on a CPU give, through `from_dict` and `to_dict`, the very JSON they were read from; the
device facts read as attributes; an older Record's missing parts are None or empty; a part of the
wrong type is an error naming it; keys this version does not know stay in the saved Record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from torchdoctor.environment import Environment
from torchdoctor.errors import RecordFormatError
from torchdoctor.record import Record

TESTS = Path(__file__).resolve().parents[1]
H200 = TESTS / "rules" / "device_records" / "h200-demo-diagnose.json"
CPU = TESTS / "fixtures" / "records" / "cpu-compile-breaks.json"


def _env(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())["env"]


@pytest.mark.parametrize("path", [H200, CPU], ids=["h200", "cpu"])
def test_the_env_of_an_observed_record_round_trips(path: Path) -> None:
    env = _env(path)
    assert json.dumps(Environment.from_dict(env).to_dict()) == json.dumps(env)


def test_the_device_facts_of_an_h200_run_read_as_attributes() -> None:
    env = Environment.from_dict(_env(H200))
    gpu, = env.gpus
    assert (gpu.name, gpu.compute_capability, gpu.total_memory_bytes) == ("NVIDIA H200", (9, 0), 150109880320)
    assert env.cuda_available and env.devices is not None and env.devices.gpu_count == 1
    assert env.versions is not None and (env.versions.torch, env.versions.cuda, env.versions.hip) == (
        "2.11.0+cu130", "13.0", None)
    assert env.cpu is not None and env.cpu.model == "Intel(R) Xeon(R) Processor" and env.cpu.usable_cores == 16
    assert env.model_devices() == {"cuda"}


def test_the_script_facts_of_a_cpu_run_read_as_attributes() -> None:
    env = Environment.from_dict(_env(CPU))
    assert not env.cuda_available and env.gpus == ()
    assert env.models and env.models[0].class_name and env.model_devices() == {"cpu"}
    assert env.torch is not None and env.torch.num_threads and env.torch.num_threads >= 1
    assert env.dataloaders == () or env.dataloaders[0].num_workers is not None


def test_an_older_record_lacks_parts_and_they_read_as_none_or_empty() -> None:
    env = {k: v for k, v in _env(H200).items() if k not in ("script_tools", "knob_guard", "forward_state")}
    env["devices"] = {k: v for k, v in env["devices"].items() if k != "mps_available"}
    value = Environment.from_dict(env)
    assert value.script_tools is None and value.forward_state is None and value.knob_guard == ()
    assert value.devices is not None and value.devices.mps_available is None
    assert "script_tools" not in value.to_dict() and json.dumps(value.to_dict()) == json.dumps(env)
    assert Environment.from_dict({}) == Environment() and not Environment().cuda_available


@pytest.mark.parametrize(
    ("env", "message"),
    [({"devices": "cuda"}, "'env.devices' should be an object or null, not a string"),
     ({"devices": {"gpus": [{"capability": 9.0}]}}, "'env.devices.gpus\\[0\\].capability' should be a string or null"),
     ({"optimizers": [{"class": 3}]}, "'env.optimizers\\[0\\].class' should be a string or null, not an integer"),
     ({"models": [{"layer_shapes": [{"count": "two"}]}]},
      "'env.models\\[0\\].layer_shapes\\[0\\].count' should be an integer"),
     ({"env_vars": {"OMP_NUM_THREADS": 4}}, "'env.env_vars.OMP_NUM_THREADS' should be a string, not an integer")],
)  # fmt: skip
def test_a_part_of_the_wrong_type_is_an_error_naming_it(env: dict[str, Any], message: str) -> None:
    with pytest.raises(RecordFormatError, match=message):
        Environment.from_dict(env)
    assert Environment.or_empty(env) == Environment()


def test_a_key_this_version_does_not_know_stays_in_the_saved_record() -> None:
    env = {**_env(H200), "accelerator_notes": {"a": 1}}
    env["cpu"] = {**env["cpu"], "isa": ["avx512f"]}
    record = Record(env=env)
    again = Record.from_json(record.to_json())
    assert again.to_json() == record.to_json() and again.env["cpu"]["isa"] == ["avx512f"]
    assert "accelerator_notes" not in Environment.from_dict(again.env).to_dict()
