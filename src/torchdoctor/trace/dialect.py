"""Trace dialects: which Kineto/PyTorch format wrote a trace, and the few rewrites that make every
dialect read the same (the table of dialects is in docs/trace.md).

What changed across torch versions, and what is done about it here:
- the root: a bare JSON array of events (torch 1.8 nightlies, Dec 2020) or an object with
  `traceEvents` (every release): the loader reads both;
- categories: `Operator`, `Runtime`, `Kernel`, `Memcpy`, `Memset` (torch 1.8 and 1.9) became
  `cpu_op`, `cuda_runtime`, `kernel`, `gpu_memcpy`, `gpu_memset` (torch 1.10, Kineto's "Refactor
  trace activities"), later joined by `user_annotation`, `gpu_user_annotation`, `python_function`,
  `cuda_driver`, `cuda_sync`, `overhead`; both sets map to the same kinds (events.KIND_BY_CATEGORY,
  matched case-insensitively);
- `ProfilerStep#N`: an `Operator` (1.8, 1.9) or `cpu_op` (1.10 to 1.12) event, a `user_annotation`
  from torch 1.13 on (kineto issue #688). The same holds for the other scopes torch itself records
  with `record_function` (`enumerate(DataLoader)#...`, `enumerate(DataPipe)#...`, `Optimizer.step#...`,
  `Optimizer.zero_grad#...`, `DataParallel.forward`, `DistributedDataParallel.forward`): an
  operator-kind event of one of these names is rewritten to an annotation at load, so the step
  finder and the operator tables see one dialect (user `record_function` scopes cannot be told from
  operators by name in the old dialects and stay operators);
- categories that are neither analysed nor deliberately ignored (events.IGNORED_CATEGORIES), such
  as MTIA's `mtia_ccp_events`, are counted per category and named in a warning: the figures then
  cover the rest of the trace, and the report says what it did not understand.

`[memory]` instant events (recorded with `profile_memory=True`) give each device's peak
allocated and reserved bytes (`Trace.memory`), as the TensorBoard plugin's memory view reads them.
"""

from __future__ import annotations

import dataclasses
import re
import zlib
from collections import Counter
from typing import Any

import numpy as np

from torchdoctor.trace.events import (
    ANNOTATION, CPU_OP, IGNORED_CATEGORIES, KIND_BY_CATEGORY, STEP_NAME_RE, Trace,
)  # fmt: skip

#: Scopes torch records with record_function: annotations, whatever category the dialect gave them.
TORCH_SCOPE_RE = re.compile(r"^(ProfilerStep\s*#\s*\d+$|enumerate\((DataLoader|DataPipe)\)#"
                            r"|Optimizer\.(step|zero_grad)#"
                            r"|(Distributed)?DataParallel\.forward$)")
#: The DataLoader's own spans, in every spelling (the iterator's class names the loading mode).
DATALOADER_SPAN_RE = re.compile(r"^enumerate\((DataLoader|DataPipe)\)#")
LEGACY_CATEGORIES = ("Operator", "Runtime", "Kernel", "Memcpy", "Memset")
_CAT_RE = re.compile(rb'"cat"\s*:\s*"([^"\\]{1,64})"')
_MAX_NAMED = 20  # unknown categories named one by one in the warning and the dialect
_MAX_DEVICES = 64  # devices whose memory peaks are kept (a node has at most 16)
#: `Device Type` of [memory] records (c10::DeviceType)
_DEVICE_TYPES = {0: "cpu", 1: "cuda", 6: "hip", 12: "xpu", 19: "mtia"}


class DialectNotes:
    """What the loader saw besides the complete events it keeps: categories it could not map,
    and the peaks of `[memory]` records."""

    def __init__(self) -> None:
        self.unknown: Counter[str] = Counter()  # category -> complete events no analysis reads
        self.memory: dict[str, dict[str, int]] = {}

    def category(self, cat: Any) -> int | None:
        """The kind of a category the exact look-up missed (any letter case), or None after
        counting it: known-and-ignored categories are not counted. A hostile file cannot grow the
        count without bound: past _MAX_NAMED categories the rest are counted together."""
        if type(cat) is not str:
            self._count(repr(cat)[:80])
            return None
        kind = KIND_BY_CATEGORY.get(cat.lower())
        if kind is None and cat.lower() not in IGNORED_CATEGORIES:
            self._count(cat)
        return kind

    def _count(self, name: str, events: int = 1) -> None:
        if name in self.unknown or len(self.unknown) < _MAX_NAMED:
            self.unknown[name] += events
        else:
            self.unknown["(other categories)"] += events

    def extend(self, later: DialectNotes) -> bool:
        """Add what `later` saw in the text that follows (the second half of a large trace,
        trace/halves.py), as if one DialectNotes had seen both. False when `later` reached its bound
        on named categories or devices: what it left out would depend on what came before."""
        if "(other categories)" in later.unknown or len(later.memory) >= _MAX_DEVICES:
            return False
        for name, events in later.unknown.items():
            self._count(name, events)
        for key, peaks in later.memory.items():
            if key in self.memory or len(self.memory) < _MAX_DEVICES:
                mine = self.memory.setdefault(key, {"peak_allocated_bytes": 0, "peak_reserved_bytes": 0})
                for field, value in peaks.items():
                    mine[field] = max(mine[field], value)
        return True

    def instant(self, event: dict[str, Any]) -> None:
        """An instant event: a `[memory]` record updates its device's peaks."""
        if event.get("name") != "[memory]":
            return
        args = event.get("args")
        if not isinstance(args, dict) or ("Total Allocated" not in args and "Total Reserved" not in args):
            return
        try:
            key = f"{_DEVICE_TYPES.get(int(args.get('Device Type', -1)), 'other')}:{int(args.get('Device Id', -1))}"
            allocated, reserved = int(args.get("Total Allocated", 0)), int(args.get("Total Reserved", 0))
        except (TypeError, ValueError, OverflowError):
            return
        if key not in self.memory and len(self.memory) >= _MAX_DEVICES:
            return
        peak = self.memory.setdefault(key, {"peak_allocated_bytes": 0, "peak_reserved_bytes": 0})
        peak["peak_allocated_bytes"] = max(peak["peak_allocated_bytes"], allocated)
        peak["peak_reserved_bytes"] = max(peak["peak_reserved_bytes"], reserved)


def root_prefix(stream: Any) -> tuple[str, str]:
    """('object', 'traceEvents.item') or, for a bare JSON array of events, ('array', 'item')."""
    peek = getattr(stream, "peek", None)
    try:
        head = peek(64) if peek is not None else b""
    except (OSError, EOFError, zlib.error):  # the parser that follows says what is wrong with the file
        head = b""
    return ("array", "item") if head.lstrip()[:1] == b"[" else ("object", "traceEvents.item")


def normalise(trace: Trace, notes: DialectNotes, root: str, head: bytes) -> Trace:
    """The trace with operator-kind ProfilerSteps rewritten as annotations, its dialect described
    (`Trace.dialect`, with the unknown categories that the loader's warning names), and the memory
    peaks attached."""
    step_names = trace.name_mask(STEP_NAME_RE) if len(trace) else np.zeros(0, bool)
    as_operator = (trace.kind == CPU_OP) & step_names
    scopes = (trace.kind == CPU_OP) & trace.name_mask(TORCH_SCOPE_RE) if len(trace) else np.zeros(0, bool)
    kind = trace.kind
    if scopes.any():
        kind = kind.copy()
        kind[scopes] = ANNOTATION
    has_steps = bool(step_names.any())
    seen = Counter(m.decode("utf-8", "replace") for m in _CAT_RE.findall(head))
    spans = sorted(trace.names[i] for i in np.flatnonzero(_names_matching(trace, DATALOADER_SPAN_RE)))[:5]
    legacy = sum(seen[c] for c in LEGACY_CATEGORIES)
    dialect = {
        "root": root,
        "categories": "legacy" if legacy and legacy >= sum(seen.values()) / 2 else ("current" if seen else "unknown"),
        "profiler_step": "operator" if as_operator.any() else ("annotation" if has_steps else "none"),
        "dataloader_spans": spans,
        "dataloader_mode": loader_mode(spans),
        "unknown_categories": dict(notes.unknown.most_common()),
    }
    return dataclasses.replace(trace, kind=kind, dialect=dialect, memory=notes.memory)


def _names_matching(trace: Trace, pattern: re.Pattern[str]) -> np.ndarray:
    """Per distinct name: it matches `pattern` and some event carries it."""
    if not trace.names:
        return np.zeros(0, bool)
    used = np.bincount(trace.name_id, minlength=len(trace.names)) > 0
    return used & np.fromiter((bool(pattern.search(n)) for n in trace.names), bool, len(trace.names))


def loader_mode(spans: list[str]) -> str | None:
    """How batches were loaded, from the DataLoader span names: `main_process` (num_workers=0),
    `workers` (num_workers >= 1), `datapipe`, `other` (a DataLoader span of another iterator
    class), or None when no span was recorded."""
    if not spans:
        return None
    text = " ".join(spans)
    if "SingleProcess" in text:
        return "main_process"
    if "MultiProcessing" in text:
        return "workers"
    return "datapipe" if "DataPipe" in text else "other"
