"""The TensorBoard profiler plugin's recommendations are a floor: on every trace where the plugin
(torch-tb-profiler 0.4.3, `RunProfileData.analyze`, its seven rules) recommends something,
`diagnose --trace` raises the matching finding (docs/rules-measured.md, "tb_plugin's rules as a floor").

The plugin's output on each trace is recorded in tb_plugin_reference.json
(benchmarks/trace_tb_plugin_reference.py); the traces are the real ones of tests/trace/fixtures and
shared/fixtures/traces, and three derived from them (tests/trace/derive.py) where no real trace of
the case exists (DataParallel over two GPUs, DDP over gloo, graph kernels not recorded).
"""

from __future__ import annotations

import gzip
import json
from functools import reduce
from pathlib import Path
from typing import Any

import pytest

from torchdoctor.finding import SEVERITIES
from torchdoctor.record import Record
from torchdoctor.rules import diagnose_record
from torchdoctor.trace import analyse_traces
from tests.trace import derive

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "trace" / "fixtures"
REFERENCE = {k: v for k, v in json.loads((HERE / "tb_plugin_reference.json").read_text()).items() if not k.startswith("_")}

#: A phrase of each plugin recommendation -> (our findings that answer it, lowest severity allowed).
MATCH = {
    "input data loading": ({"TD-DATA-009"}, "info"),  # > 5% in the DataLoader: info from 5%, warning from 10%
    "Tensor Cores eligible": ({"TD-COMP-006"}, "info"),
    "Device memory usage": ({"TD-MEM-001"}, "warning"),  # > 90%: our warning starts at 85%
    "instead of DataParallel": ({"TD-SCALE-004"}, "warning"),
    "Nccl backend": ({"TD-SCALE-014"}, "warning"),
    "cost on communication": ({"TD-SCALE-001"}, "warning"),  # > 10%: our warning starts at 10%
    # < 50%: TD-COMP-001 is a problem below 50%; a capture or a window without visible device work is
    # named by TD-CONF-003 instead (the plugin's utilisation there measures recording, not running)
    "low utilization": ({"TD-COMP-001", "TD-CONF-003"}, "info"),
}
_CACHE: dict[str, tuple[dict[str, Any], dict[str, str]]] = {}


def _trace_path(key: str, gpu_traces: Path, tmp_path: Path) -> Path:
    kind, _, rest = key.partition("/")
    if kind == "fixtures":
        return FIXTURES / rest
    if kind == "shared":
        return gpu_traces / rest
    derivations, _, source = rest.partition("/")
    with gzip.open(_trace_path(source, gpu_traces, tmp_path), "rt") as f:
        doc = json.load(f)
    doc = reduce(lambda d, name: getattr(derive, name)(d), derivations.split("+"), doc)
    out = tmp_path / "derived.json.gz"
    with gzip.open(out, "wt") as f:
        json.dump(doc, f)
    return out


def _diagnose(key: str, gpu_traces: Path, tmp_path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    if key not in _CACHE:
        record = Record(kind="traces")
        record.trace = analyse_traces([_trace_path(key, gpu_traces, tmp_path)]).to_dict()
        _CACHE[key] = record.trace["ranks"][0], {f.id: f.severity for f in diagnose_record(record)}
    return _CACHE[key]


CASES = sorted((key, rec) for key, ref in REFERENCE.items() for rec in ref.get("recommendations", []))


@pytest.mark.parametrize(("key", "recommendation"), CASES, ids=[f"{k.split('/')[-1]}:{r[:30]}" for k, r in CASES])
def test_every_recommendation_of_the_plugin_has_a_matching_finding(key: str, recommendation: str, gpu_traces: Path,
                                                                    tmp_path: Path) -> None:
    rank, found = _diagnose(key, gpu_traces, tmp_path)
    (ids, lowest), = [m for phrase, m in MATCH.items() if phrase in recommendation]
    hits = {i: found[i] for i in ids if i in found}
    assert hits, f"plugin: {recommendation!r}; ours: {sorted(found)}"
    assert max(SEVERITIES.index(s) for s in hits.values()) >= SEVERITIES.index(lowest), hits
    if "low utilization" in recommendation and "TD-COMP-001" not in hits:
        assert rank["window"]["state"] != "ok", "TD-CONF-003 stands in for the utilisation finding only when named"


def test_the_reference_covers_all_seven_rules_on_real_or_derived_traces() -> None:
    texts = [r for ref in REFERENCE.values() for r in ref.get("recommendations", [])]
    assert {phrase for phrase in MATCH if any(phrase in t for t in texts)} == set(MATCH)


def test_the_torch_1_9_resnet_trace_puts_the_data_finding_on_top(gpu_traces: Path, tmp_path: Path) -> None:
    """A torch 1.9 ResNet-50 trace with DataLoader a third of the step, num_workers=0. The
    plugin says "33.4% of the step time is in DataLoader"; the data-layer finding leads, and the GPU's
    idle time is no longer blamed on the host (no "waiting on the host", no "tiny operators")."""
    record = Record(kind="traces")
    record.trace = analyse_traces([FIXTURES / "torch1.9-cuda-resnet50-workers0.json.gz"]).to_dict()
    findings = diagnose_record(record)
    top = findings[0]
    assert top.id == "TD-DATA-009" and top.evidence["dataloader_mode"] == "main_process"
    assert top.evidence["idle_data_fraction"] == pytest.approx(REFERENCE["fixtures/torch1.9-cuda-resnet50-workers0.json.gz"]
                                                                ["dataloader_fraction"], abs=0.01)
    assert "num_workers" in top.fix.code and top.knob == "num_workers"
    assert not {"TD-COMP-002", "TD-COMP-003"} & {f.id for f in findings}
    assert record.trace["ranks"][0]["steps_count"] == 6 and not record.trace["warnings"]


@pytest.mark.parametrize("name", ["rocm-mi300x-sglang-graph-capture.json.gz", "rocm-mi300x-vllm-graph-capture-memory.json.gz",
                                  "cuda-2.11.0-graph-capture.json.gz"])
def test_a_capture_is_named_instead_of_ranked(name: str, gpu_traces: Path, tmp_path: Path) -> None:
    """A ROCm serving trace recorded during a graph capture (401 hipLaunchKernel recorded, 2
    kernels run) is named as a capture (TD-CONF-003), not read as "GPU busy 0%" with a hot-operator
    finding for a fill kernel."""
    rank, found = _diagnose(f"fixtures/{name}", gpu_traces, tmp_path)
    assert rank["window"]["state"] == "capture" and "TD-CONF-003" in found
    assert not {f"TD-COMP-00{i}" for i in range(1, 7)} & set(found)


def test_todays_dialect_gets_the_data_finding_the_plugin_no_longer_gives(gpu_traces: Path, tmp_path: Path) -> None:
    """torch 2.11 on an H200, num_workers=0 with 2 ms per sample: the DataLoader is 85% of the window.
    torch-tb-profiler 0.4.3 drops `user_annotation` DataLoader spans and reports 0%; we do not."""
    key = "fixtures/cuda-2.11.0-resnet18-dataloader0.json.gz"
    rank, found = _diagnose(key, gpu_traces, tmp_path)
    assert REFERENCE[key]["dataloader_fraction"] == 0.0
    assert found.get("TD-DATA-009") == "problem" and rank["window"]["idle_data_fraction"] > 0.8
    assert "TD-COMP-002" not in found and "TD-COMP-003" not in found
