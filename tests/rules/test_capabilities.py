"""Advice that fits the device and the torch version: on every fixture trace, no finding's fix names
a precision the trace's GPU lacks, nor an API the trace's torch lacks without the version it needs.

The device and the torch are read here from each trace's own metadata, not through the code under
test: `deviceProperties` (computeMajor/Minor, name) and the event categories (Kineto's legacy
`Operator`/`Kernel` categories were written by torch 1.9 and earlier, docs/trace.md "Dialects").
No trace states its torch version exactly, so an API is advised with its requirement said, or not at
all, unless the trace is known to be recorded with a torch that has it.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import orjson
import pytest

from torchdoctor.finding import Finding
from torchdoctor.record import Record
from torchdoctor.rules import diagnose
from torchdoctor.workflow import DiagnoseOutputs, diagnose_traces

LOCAL_TRACES = Path(__file__).parents[1] / "trace" / "fixtures"
#: API named in a fix -> (a pattern that finds it, the version it needs)
APIS = {"torch.compile": (re.compile(r"torch\.compile\b"), "2.0"),
        "torch.amp.GradScaler": (re.compile(r"torch\.amp\.GradScaler"), "2.3"),
        "fully_shard": (re.compile(r"fsdp\.fully_shard|\bfully_shard\("), "2.6"),
        "async_save": (re.compile(r"async_save"), "2.4")}
BF16 = re.compile(r"bf16|bfloat16", re.I)
TF32 = re.compile(r"tf32|set_float32_matmul_precision", re.I)


def _metadata(path: Path) -> dict:
    data = orjson.loads(gzip.open(path).read())
    if isinstance(data, list):
        return {"deviceProperties": [], "legacy": True}
    categories = {e.get("cat") for e in data.get("traceEvents", ()) if isinstance(e, dict)}
    return {**data, "traceEvents": None, "legacy": bool(categories & {"Operator", "Kernel", "Runtime"})}


def _hardware(meta: dict) -> tuple[bool, bool]:
    """(bf16, TF32) on the trace's first GPU's matrix units: an NVIDIA GPU of compute capability 8.0
    or later has both; an AMD MI300 (gfx942, capability 9.4, a ROCm trace) bf16; a GPU the trace
    does not describe neither."""
    properties = meta.get("deviceProperties") or [{}]
    name, major = properties[0].get("name"), properties[0].get("computeMajor")
    rocm = "roctracer_version" in meta or "AMD" in (name or "")
    if rocm:
        return (major, properties[0].get("computeMinor")) == (9, 4), False
    nvidia_ampere = bool(name) and major is not None and major >= 8
    return nvidia_ampere, nvidia_ampere


def _traces(gpu_traces: Path) -> list[Path]:
    shared = sorted(gpu_traces.glob("*.json.gz")) + sorted((gpu_traces / "multirank-sampled").glob("*.json.gz"))
    return shared + sorted(LOCAL_TRACES.glob("*.json.gz"))


def _advice(finding: Finding) -> str:
    return f"{finding.fix.text}\n{finding.fix.code}"


def test_the_fixture_traces_are_all_here(gpu_traces: Path) -> None:
    assert len(_traces(gpu_traces)) >= 25


@pytest.mark.parametrize("index", range(30))
def test_no_advice_names_what_the_traces_device_or_torch_lacks(gpu_traces: Path, tmp_path: Path, index: int) -> None:
    traces = _traces(gpu_traces)
    if index >= len(traces):
        pytest.skip("fewer fixture traces")
    path = traces[index]
    meta = _metadata(path)
    record = diagnose_traces([path], DiagnoseOutputs(store_path=tmp_path / "runs.db", save=False))
    for finding in record.findings:
        advice = _advice(finding)
        bf16, tf32 = _hardware(meta)
        assert bf16 or not BF16.search(advice), (path.name, finding.id, advice)
        assert tf32 or not TF32.search(advice), (path.name, finding.id, advice)
        for name, (pattern, version) in APIS.items():
            if pattern.search(advice):
                assert f"needs torch >= {version}" in advice, (path.name, finding.id, name, advice)
                if meta["legacy"]:
                    assert "1.9 or earlier" in advice and "upgrade torch" in advice, (path.name, finding.id)


# -- each rule that advises a precision or an API, on a Record's device and torch ----------------------

RULE_FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _with_env(rule_id: str, torch: str | None = None, gpu: dict | None = None) -> Record:
    record = Record.load(RULE_FIXTURES / rule_id / "fires.json")
    env = dict(record.env or {})
    if torch is not None:
        env["versions"] = {**(env.get("versions") or {}), "torch": torch}
    if gpu is not None:
        env["devices"] = {"cuda_available": True, "gpu_count": 1, "gpus": [gpu]}
    record.env = env
    return record


def _only(record: Record, rule_id: str) -> Finding:
    (finding,) = diagnose(record, select=[rule_id]).findings
    return finding


@pytest.mark.parametrize("capability", ["7.0", "7.5"])
def test_precision_advice_on_volta_and_turing_is_fp16_autocast_with_a_grad_scaler(capability: str) -> None:
    finding = _only(_with_env("TD-COMP-006", "2.4.0", {"name": "Tesla T4", "capability": capability}), "TD-COMP-006")
    assert finding.knob == "autocast_fp16" and not BF16.search(_advice(finding)) and not TF32.search(_advice(finding))
    assert 'torch.amp.GradScaler("cuda")' in finding.fix.code and "torch.float16" in finding.fix.code


def test_precision_advice_from_ampere_on_is_tf32_or_bf16() -> None:
    finding = _only(_with_env("TD-COMP-006", "2.4.0", {"name": "NVIDIA A100", "capability": "8.0"}), "TD-COMP-006")
    assert finding.knob == "tf32" and "set_float32_matmul_precision" in finding.fix.code
    assert "bfloat16" in finding.fix.code


def test_precision_advice_on_an_unknown_gpu_says_so_and_takes_fp16() -> None:
    finding = _only(_with_env("TD-COMP-006", "1.9.0", {"name": "Some GPU"}), "TD-COMP-006")
    assert "not known" in finding.fix.text and finding.knob == "autocast_fp16"
    assert "torch.cuda.amp.GradScaler()" in finding.fix.code  # torch.amp.GradScaler needs 2.3


def test_compile_advice_on_an_old_torch_names_the_version_it_needs() -> None:
    finding = _only(_with_env("TD-COMP-002", "1.13.1"), "TD-COMP-002")
    assert "torch.compile needs torch >= 2.0; this run was recorded with torch 1.13" in finding.fix.text
    assert "upgrade torch" in finding.fix.text and "torch.compile" not in finding.fix.code
    current = _only(_with_env("TD-COMP-002", "2.1.0"), "TD-COMP-002")
    assert current.fix.code.startswith("model = torch.compile(model)") and "needs torch" not in current.fix.text


def test_the_deprecated_amp_hint_is_not_given_where_torch_amp_grad_scaler_does_not_exist() -> None:
    assert diagnose(_with_env("TD-CONF-002", "2.1.0"), select=["TD-CONF-002"]).findings == []
    volta = _only(_with_env("TD-CONF-002", "2.4.0", {"name": "V100", "capability": "7.0"}), "TD-CONF-002")
    assert "torch.float16" in volta.fix.code and not BF16.search(_advice(volta))


@pytest.mark.parametrize(("torch", "code", "needs"), [
    ("2.2.0", "FullyShardedDataParallel(model)", False), ("2.6.0", "fsdp.fully_shard(model)", False),
    (None, "fsdp.fully_shard(model)", True)])
def test_sharding_advice_names_the_fsdp_the_runs_torch_has(torch: str | None, code: str, needs: bool) -> None:
    finding = _only(_with_env("TD-MEM-003", torch), "TD-MEM-003")
    assert code in finding.fix.code and ("needs torch >= 2.6" in finding.fix.text) is needs
