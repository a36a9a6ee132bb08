"""Derived dialects: rewrite a real trace (a parsed JSON document) the way another torch version, or
another setup, would have written it. Each function says what it changes; everything else is the
real trace. Each rewrites the document it is given in place and returns it (pass a fresh parse).
Used by tests/trace/test_dialects.py and tests/rules/test_tb_plugin_floor.py, and listed in the
dialect table of docs/trace.md."""

from __future__ import annotations

import re
from typing import Any

#: Kineto's category names before (torch 1.8, 1.9) and after (torch 1.10) "Refactor trace activities".
CURRENT_CATEGORY = {"Operator": "cpu_op", "Runtime": "cuda_runtime", "Kernel": "kernel", "Memcpy": "gpu_memcpy",
                    "Memset": "gpu_memset"}
#: Scopes torch itself records with record_function: `user_annotation` from torch 1.13 on (kineto #688).
TORCH_SCOPE = re.compile(r"^(ProfilerStep#|enumerate\((DataLoader|DataPipe)\)#|Optimizer\.(step|zero_grad)#"
                         r"|(Distributed)?DataParallel\.forward$)")


def _events(doc: Any) -> list[dict[str, Any]]:
    return doc if isinstance(doc, list) else doc["traceEvents"]


def _with_events(doc: Any, events: list[dict[str, Any]]) -> Any:
    """`doc` with its events replaced, whichever root (a bare array or an object) it has."""
    if isinstance(doc, list):
        return events
    doc["traceEvents"] = events
    return doc


def as_torch_1_10(doc: Any) -> Any:
    """torch 1.10 to 1.12: the current category names, every record_function scope (ProfilerStep
    included) still an operator (`cpu_op`)."""
    out = doc
    for e in _events(out):
        if e.get("cat") in CURRENT_CATEGORY:
            e["cat"] = CURRENT_CATEGORY[e["cat"]]
    return out


def as_torch_1_13(doc: Any) -> Any:
    """torch 1.13 and later: as 1.10, with torch's record_function scopes as `user_annotation` and a
    `gpu_user_annotation` copy of each ProfilerStep on the device's timeline."""
    out = as_torch_1_10(doc)
    events = _events(out)
    device_pid = next((e["pid"] for e in events if e.get("cat") == "kernel"), 0)
    copies = []
    for e in events:
        if e.get("cat") == "cpu_op" and TORCH_SCOPE.match(str(e.get("name", ""))):
            e["cat"] = "user_annotation"
            if e["name"].startswith("ProfilerStep#"):
                copies.append({**e, "cat": "gpu_user_annotation", "pid": device_pid, "tid": 7})
    events.extend(copies)
    return out


def scopes_as_operators(doc: Any) -> Any:
    """torch 1.10 to 1.12 from a current trace: torch's record_function scopes (ProfilerStep,
    DataLoader, Optimizer, (Distributed)DataParallel.forward) as `cpu_op` instead of `user_annotation`,
    and no `gpu_user_annotation` copies."""
    out = doc
    kept = []
    for e in _events(out):
        if e.get("cat") == "gpu_user_annotation":
            continue
        if e.get("cat") == "user_annotation" and TORCH_SCOPE.match(str(e.get("name", ""))):
            e["cat"] = "cpu_op"
        kept.append(e)
    return _with_events(out, kept)


def with_datapipe(doc: Any) -> Any:
    """A DataPipe pipeline instead of a DataLoader: its span is `enumerate(DataPipe)#<class>` (torchdata)."""
    out = doc
    for e in _events(out):
        if str(e.get("name", "")).startswith("enumerate(DataLoader)#"):
            e["name"] = "enumerate(DataPipe)#MapperIterDataPipe"
    return out


def with_unknown_device(doc: Any) -> Any:
    """A back end this version does not know: its device events under categories of its own."""
    out = doc
    renamed = {"kernel": "npu_kernel", "Kernel": "npu_kernel", "gpu_memcpy": "npu_memcpy", "Memcpy": "npu_memcpy"}
    for e in _events(out):
        if e.get("cat") in renamed:
            e["cat"] = renamed[e["cat"]]
    return out


def data_parallel_on_two_gpus(doc: Any) -> Any:
    """nn.DataParallel over two GPUs: a `DataParallel.forward` span after each batch is loaded (as the
    wrapper records it), and every other device event on device 1 (the replica's work)."""
    out = doc
    events = _events(out)
    for e in list(events):
        if str(e.get("name", "")).startswith("enumerate(DataLoader)#"):
            end = e["ts"] + e["dur"]
            events.append({**e, "name": "DataParallel.forward", "ts": end + 1, "dur": 1000})
    device = [e for e in events if e.get("cat") in ("Kernel", "kernel", "Memset", "gpu_memset")]
    for i, e in enumerate(device):
        if i % 2:
            e["pid"] = 1
            if isinstance(e.get("args"), dict) and "device" in e["args"]:
                e["args"]["device"] = 1
    return out


def ddp_over_gloo(doc: Any) -> Any:
    """DistributedDataParallel on GPUs with the gloo backend: host collectives named `gloo:*` instead
    of `nccl:*`, and no NCCL kernels (gloo reduces through host memory). (Apply scopes_as_operators too
    for the TensorBoard plugin's reference: its 0.4.3 release reads `DistributedDataParallel.forward`
    only as an operator.)"""
    out = doc
    kept = []
    for e in _events(out):
        name = str(e.get("name", ""))
        if e.get("cat") == "kernel" and name.startswith("ncclKernel"):
            continue
        if name.startswith("nccl:"):
            e["name"] = "gloo:" + name[len("nccl:"):]
        kept.append(e)
    return _with_events(out, kept)


def graph_kernels_hidden(doc: Any) -> Any:
    """Graph replays whose kernels the profiler did not record (older CUPTI/roctracer): the device
    events launched by `cudaGraphLaunch`/`hipGraphLaunch` removed."""
    out = doc
    events = _events(out)
    graph = {(e.get("args") or {}).get("correlation") for e in events
             if re.match(r"^(cuda|hip|cu)GraphLaunch", str(e.get("name", "")))}
    kept = [e for e in events if not (e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                                      and (e.get("args") or {}).get("correlation") in graph)]
    return _with_events(out, kept)
