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

The file is read by memory/snapshot_format.py, which refuses anything but a data-only pickle of
the expected shape; the analysis then reads each event once and each distinct stack once (torch
shares identical stacks between events), so its time and memory grow with the file, never faster.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from torchdoctor.inputs import read_capped
from torchdoctor.memory.snapshot_format import SnapshotFormatError, check_shape, unpickle
from torchdoctor.memory.timeline import MAX_POINTS, MemoryTimeline, thin

__all__ = ["SnapshotFormatError", "SnapshotSummary", "analyse_snapshot", "load_snapshot", "snapshot_timeline"]
_CATEGORIES = ("activations", "temporaries", "optimizer_state")
#: A large model's snapshot is hundreds of megabytes; past this it is not read whole.
MAX_SNAPSHOT_BYTES = 2 * 1024**3


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
    """The snapshot's dict, checked (memory/snapshot_format.py); SnapshotFormatError otherwise."""
    path = Path(path)
    try:
        data = read_capped(path, MAX_SNAPSHOT_BYTES)
    except OSError as exc:
        raise SnapshotFormatError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    return check_shape(unpickle(data, str(path)), str(path))


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


class _Stacks:
    """Category and site of each distinct frame list, computed once (events share their lists)."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[str, str]] = {}

    def of(self, event: dict[str, Any]) -> tuple[str, str]:
        frames = event.get("frames") or []
        found = self._seen.get(id(frames))
        if found is None:
            found = self._seen[id(frames)] = (_category(frames), _site(frames))
        return found


def _replay(trace: list[dict[str, Any]]) -> tuple[int, int, dict[int, dict[str, Any]]]:
    """(net change, highest running total, allocations live at that point) of one device's trace.

    Two passes: the first finds where the running total peaks, the second replays up to there
    (copying the live set at every new peak would be quadratic in a trace that only grows)."""
    total = peak = 0
    peak_at = -1
    live: dict[int, int] = {}
    for index, event in enumerate(trace):
        action = event.get("action")
        if action == "alloc":
            total += event["size"]
            live[event["addr"]] = event["size"]
            if total > peak:
                peak, peak_at = total, index
        elif action == "free_completed" and event.get("addr") in live:
            total -= live.pop(event["addr"])
    at_peak: dict[int, dict[str, Any]] = {}
    for event in trace[: peak_at + 1]:
        if event.get("action") == "alloc":
            at_peak[event["addr"]] = event
        elif event.get("action") == "free_completed":
            at_peak.pop(event.get("addr"), None)
    return total, peak, at_peak


def _baselines(data: dict[str, Any]) -> Counter:
    """Active bytes at the end of recording, per device (from `segments`)."""
    active: Counter = Counter()
    for segment in data["segments"]:
        active[segment.get("device") or 0] += sum(b["size"] for b in segment.get("blocks") or []
                                                   if str(b.get("state", "")).startswith("active"))  # fmt: skip
    return active


def analyse_snapshot(path: str | Path, *, top: int = 10) -> list[SnapshotSummary]:
    """One summary per device that has a trace."""
    data = load_snapshot(path)
    active = _baselines(data)
    stacks = _Stacks()
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
            category, site = stacks.of(event)
            cats[category] += event["size"]
            sites[site] += event["size"]
            counts[site] += 1
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
    stacks = _Stacks()
    live: dict[int, tuple[int, int]] = {}  # addr -> (category index, size)
    totals = [0, 0, 0]
    times, rows = array("d"), [array("q") for _ in _CATEGORIES]  # one point per alloc/free, compact
    for index, event in enumerate(trace):
        action = event.get("action")
        if action == "alloc":
            category = _CATEGORIES.index(stacks.of(event)[0])
            live[event["addr"]] = (category, event["size"])
            totals[category] += event["size"]
        elif action == "free_completed" and event.get("addr") in live:
            category, size = live.pop(event["addr"])
            totals[category] -= size
        else:
            continue
        times.append(float(event.get("time_us", index)))
        for row, total in zip(rows, totals):
            row.append(total)
    points = len(times)
    peak = max(range(points), key=lambda n: rows[0][n] + rows[1][n] + rows[2][n], default=0)
    chosen = thin(list(range(points)), {peak}, max_points)
    series = {"before_recording": [baseline] * len(chosen)}
    series.update({k: [row[n] for n in chosen] for k, row in zip(_CATEGORIES, rows) if any(row[n] for n in chosen)})
    scale = 1e-6 if any("time_us" in e for e in trace) else 1.0
    return MemoryTimeline(source="cuda_snapshot", device=f"cuda:{device}",
                          t_s=[(times[n] - times[0]) * scale for n in chosen],
                          labels=["peak" if n == peak else "" for n in chosen], series=series)  # fmt: skip
