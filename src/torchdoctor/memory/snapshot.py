"""Analysis of a CUDA memory-history snapshot (`torch.cuda.memory._dump_snapshot`'s pickle).

The file is read with an unpickler that refuses every class: a snapshot holds only dicts,
lists, strings and numbers, so nothing in the file can run code. Definitions:
- the trace of each device (`device_traces[d]`) is replayed: `alloc` adds the block's size,
  `free_completed` removes it; memory allocated before recording began (baseline) is the
  active bytes at the end (from `segments`) minus the trace's net change;
- the peak is the baseline plus the largest running total; the allocations live at that moment
  are grouped by their first frame outside torch (the allocation site in the user's code);
- categories are guessed from each live allocation's stack (as Mosaic does): a frame of an
  optimizer's `step` -> optimizer_state, an autograd/backward frame -> temporaries, otherwise
  activations; the baseline is reported as `before_recording` (parameters and state, mostly);
- the timeline (`snapshot_timeline`) is the same replay kept after every alloc/free, per category,
  at the event's `time_us` (the event's index when the torch version records no time).
"""

from __future__ import annotations

import io
import pickle
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from torchdoctor.errors import TorchDoctorError
from torchdoctor.memory.timeline import MAX_POINTS, MemoryTimeline, thin


class SnapshotFormatError(TorchDoctorError):
    """A file is not a readable torch memory snapshot (truncated, another format, no history)."""


class _DataOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


@dataclass(slots=True)
class SnapshotSummary:
    device: int
    peak_bytes: int
    baseline_bytes: int
    categories_bytes: dict[str, int] = field(default_factory=dict)
    sites: list[dict[str, Any]] = field(default_factory=list)
    """Top allocation sites live at the peak: {site, bytes, count}, largest first."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_snapshot(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        data = _DataOnly(io.BytesIO(path.read_bytes())).load()
    except FileNotFoundError:
        raise SnapshotFormatError(f"{path}: no such file") from None
    except (pickle.UnpicklingError, EOFError, ValueError, IndexError) as exc:
        raise SnapshotFormatError(f"{path}: not a readable memory snapshot (truncated or another format: "
                                  f"{exc}); write it again with `torchdoctor memory --snapshot`") from None
    if not isinstance(data, dict) or "segments" not in data:
        raise SnapshotFormatError(f"{path}: not a torch memory snapshot (no 'segments')")
    if not data.get("device_traces") or not any(data["device_traces"]):
        raise SnapshotFormatError(f"{path}: the snapshot has no allocation history; record it with "
                                  "`torchdoctor memory --snapshot` (memory history on)")  # fmt: skip
    return data


def _site(frames: list[dict[str, Any]]) -> str:
    for frame in frames:
        name = str(frame.get("filename", ""))
        if name.endswith(".py") and "/torch/" not in name and "site-packages" not in name:
            return f"{name}:{frame.get('line')} in {frame.get('name')}"
    return "(inside torch)" if frames else "(no stack)"


def _category(frames: list[dict[str, Any]]) -> str:
    names = [f"{f.get('filename', '')} {f.get('name', '')}" for f in frames]
    if any("optim" in n and "step" in n for n in names):
        return "optimizer_state"
    if any("backward" in n.lower() or "autograd::engine" in n.lower() for n in names):
        return "temporaries"
    return "activations"


def _replay(trace: list[dict[str, Any]]) -> tuple[int, int, dict[int, dict[str, Any]]]:
    """(net change, highest running total, allocations live at that point) of one device's trace."""
    live: dict[int, dict[str, Any]] = {}
    total = peak = 0
    at_peak: dict[int, dict[str, Any]] = {}
    for event in trace:
        action = event.get("action")
        if action == "alloc":
            live[event["addr"]] = event
            total += event["size"]
            if total > peak:
                peak, at_peak = total, dict(live)
        elif action == "free_completed" and event.get("addr") in live:
            total -= live.pop(event["addr"])["size"]
    return total, peak, at_peak


def _baselines(data: dict[str, Any]) -> Counter:
    """Active bytes at the end of recording, per device (from `segments`)."""
    active: Counter = Counter()
    for segment in data["segments"]:
        active[segment.get("device", 0)] += sum(b["size"] for b in segment.get("blocks", [])
                                                 if str(b.get("state", "")).startswith("active"))  # fmt: skip
    return active


def analyse_snapshot(path: str | Path, *, top: int = 10) -> list[SnapshotSummary]:
    """One summary per device that has a trace."""
    data = load_snapshot(path)
    active = _baselines(data)
    summaries = []
    for device, trace in enumerate(data["device_traces"]):
        if not trace:
            continue
        net, peak, at_peak = _replay(trace)
        baseline = max(0, active[device] - net)
        cats: Counter = Counter({"before_recording": baseline})
        sites: Counter = Counter()
        counts: Counter = Counter()
        for event in at_peak.values():
            frames = event.get("frames", [])
            cats[_category(frames)] += event["size"]
            sites[_site(frames)] += event["size"]
            counts[_site(frames)] += 1
        summaries.append(SnapshotSummary(
            device, baseline + peak, baseline, dict(cats),
            [{"site": s, "bytes": b, "count": counts[s]} for s, b in sites.most_common(top)],
        ))  # fmt: skip
    return summaries


def snapshot_timeline(path: str | Path, *, max_points: int = MAX_POINTS) -> MemoryTimeline:
    """The first traced device's memory over the recording, by (guessed) category."""
    data = load_snapshot(path)
    device = next(d for d, trace in enumerate(data["device_traces"]) if trace)
    trace = data["device_traces"][device]
    baseline = max(0, _baselines(data)[device] - _replay(trace)[0])
    live: dict[int, tuple[str, int]] = {}
    totals: Counter = Counter()
    times, rows = [], []
    for index, event in enumerate(trace):
        if event.get("action") == "alloc":
            live[event["addr"]] = (_category(event.get("frames", [])), event["size"])
            totals[live[event["addr"]][0]] += event["size"]
        elif event.get("action") == "free_completed" and event.get("addr") in live:
            category, size = live.pop(event["addr"])
            totals[category] -= size
        else:
            continue
        times.append(event.get("time_us", index))
        rows.append(dict(totals))
    peak = max(range(len(rows)), key=lambda n: sum(rows[n].values()), default=0)
    chosen = thin(list(range(len(rows))), {peak}, max_points)
    names = ["activations", "temporaries", "optimizer_state"]
    series = {"before_recording": [baseline] * len(chosen)}
    series.update({k: [rows[n].get(k, 0) for n in chosen] for k in names if any(rows[n].get(k) for n in chosen)})
    scale = 1e-6 if any("time_us" in e for e in trace) else 1.0
    return MemoryTimeline(source="cuda_snapshot", device=f"cuda:{device}",
                          t_s=[(times[n] - times[0]) * scale for n in chosen],
                          labels=["peak" if n == peak else "" for n in chosen], series=series)  # fmt: skip
