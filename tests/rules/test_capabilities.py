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
