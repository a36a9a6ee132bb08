"""System metrics sampled in a background thread while the script runs.

Per sample: process CPU (the script plus its children, e.g. DataLoader workers, in % of one
core), the children's share of it, machine CPU (% of all cores), RSS of the process and of its children, disk bytes read
since the previous sample (machine-wide and by the process tree), and, where NVML is available,
GPU utilisation and memory of the GPUs this process used (NVML samples every GPU of the machine;
the devices the process allocated on are picked at the end). The summary covers the timing window
when it was reached (`window_start_s`/`window_end_s`), else the whole run.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import psutil

from torchdoctor.environment.system import other_cores


def _uuid_key(uuid: object) -> str:
    """NVML says 'GPU-5f1d...', torch may say '5f1d...': compare the bare lowercase hex."""
    text = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
    return text.lower().removeprefix("gpu-")


def devices_in_use() -> set[str] | None:
    """UUID keys of the CUDA devices this process allocated memory on (None: CUDA unused)."""
    import torch

    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return None
    return {
        _uuid_key(torch.cuda.get_device_properties(d).uuid)
        for d in range(torch.cuda.device_count())
        if torch.cuda.memory_reserved(d) > 0
    }


class _Nvml:
    """Per-GPU utilisation and memory through NVML (nvidia-ml-py), when it and a driver exist."""

    def __init__(self) -> None:
        self.handles: list[Any] = []
        self.uuids: list[str] = []
        try:
            import pynvml
        except ImportError:
            return
        try:
            pynvml.nvmlInit()
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            self.uuids = [_uuid_key(pynvml.nvmlDeviceGetUUID(h)) for h in self.handles]
        except pynvml.NVMLError:
            self.handles, self.uuids = [], []
        self._pynvml = pynvml

    def sample(self) -> list[tuple[float, float]]:
        """(utilisation %, memory used bytes) of every GPU on the machine; [] if NVML fails."""
        if not self.handles:
            return []
        nvml = self._pynvml
        try:
            return [
                (float(nvml.nvmlDeviceGetUtilizationRates(h).gpu), float(nvml.nvmlDeviceGetMemoryInfo(h).used))
                for h in self.handles
            ]
        except nvml.NVMLError:
            return []


#: Children (DataLoader workers) are looked up every this many samples (2 s at the default 0.2 s).
CHILDREN_SCAN_EVERY = 10


class SystemSampler:
    COLUMNS = (
        "t_s",
        "process_cpu_percent",
        "machine_cpu_percent",
        "children_cpu_percent",
        "rss_bytes",
        "children_rss_bytes",
        "disk_read_bytes",
        "process_read_bytes",
    )

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.columns: dict[str, list[float]] = {name: [] for name in self.COLUMNS}
        self._gpu_rows: list[list[tuple[float, float]]] = []  # per sample, per machine GPU
        self.window: tuple[float, float] | None = None
        self._window_start: float | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="torchdoctor-system", daemon=True)
        self._proc = psutil.Process()
        self.logical_cores = psutil.cpu_count()  # the cores psutil.cpu_percent's machine figure is of
        self._children: dict[int, psutil.Process] = {}
        self._t0 = time.perf_counter()
        self._nvml = _Nvml()

    def start(self) -> None:
        self._proc.cpu_percent(None)
        psutil.cpu_percent(None)
        self._last_disk = self._disk_read()
        self._last_proc_read = self._tree_read()
        self._thread.start()

    def mark_window_start(self) -> None:
        self._window_start = time.perf_counter() - self._t0

    def mark_window_end(self) -> None:
        """End the timed window; a window shorter than the interval gets a sample of its own, taken
        now, so that what is read of the window during the run (the probes) and from the Record at
        its end are the same samples."""
        if self._window_start is None:
            return
        times = self.columns["t_s"]
        if not times or times[-1] < self._window_start:
            self._sample_once()
        self.window = (self._window_start, time.perf_counter() - self._t0)

    def window_children_cpu_cores(self) -> float | None:
        """The cores the child processes (DataLoader workers) kept busy over the timed window, as the
        Record's `system.summary.children_cpu_percent_mean` / 100 will say (the same samples, by
        `_window_mask`); None before the window ended. Read while the sampler runs, from a snapshot."""
        mean = self._window_mean("children_cpu_percent")
        return mean / 100 if mean is not None else None

    def window_other_cpu_cores(self) -> float | None:
        """The cores other processes kept busy over the timed window, as the diagnosis reads them
        from the Record's summary (`environment.system.other_cores` of the window's means); None
        before the window ended."""
        machine, process = self._window_mean("machine_cpu_percent"), self._window_mean("process_cpu_percent")
        return other_cores(machine, process, self.logical_cores)

    def _window_mean(self, name: str) -> float | None:
        """The mean of column `name` over the timed window's samples (None before the window ended
        or without a finite sample), from a snapshot: the sampler may be between appending columns."""
        if self.window is None:
            return None
        t_s, column = self.columns["t_s"], self.columns[name]
        count = min(len(t_s), len(column))
        t = np.asarray(t_s[:count], dtype=float)
        if t.size == 0:
            return None
        values = np.asarray(column[:count], dtype=float)[_window_mask(t, self.window)]
        finite = values[np.isfinite(values)]
        return float(finite.mean()) if finite.size else None

    def stop(self) -> None:
        """Stop sampling, with one last sample: a run whose timed window ended less than an
        interval before its end still has a sample after the window (its peak memory's stand-in)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2 * self.interval_s + 1)
        if not self._thread.is_alive() and self._thread.ident is not None:
            self._sample_once()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample_once()

    def _sample_once(self) -> None:
        """One sample, from the sampler's thread or another (one at a time)."""
        with self._lock:
            try:
                self._sample()
            except (psutil.Error, OSError):
                pass  # a child that just exited, or a counter we may not read

    @staticmethod
    def _disk_read() -> int:
        counters = psutil.disk_io_counters()
        return counters.read_bytes if counters else 0

    def _tree_read(self) -> int:
        total = 0
        for proc in [self._proc, *self._children.values()]:
            try:
                total += proc.io_counters().read_chars
            except (psutil.Error, AttributeError):
                continue
        return total

    def _refresh_children(self) -> tuple[float, int]:
        """CPU and RSS of the child processes (DataLoader workers). Finding the children scans
        every process of the machine, so it is done every CHILDREN_SCAN_EVERY samples only."""
        if len(self.columns["t_s"]) % CHILDREN_SCAN_EVERY == 0:
            live = {c.pid: c for c in self._proc.children(recursive=True)}
            self._children = {pid: self._children.get(pid, child) for pid, child in live.items()}
        cpu, rss = 0.0, 0
        for child in list(self._children.values()):
            try:
                cpu += child.cpu_percent(None)
                rss += child.memory_info().rss
            except psutil.Error:
                self._children.pop(child.pid, None)
        return cpu, rss

    def _sample(self) -> None:
        child_cpu, child_rss = self._refresh_children()
        disk, tree = self._disk_read(), self._tree_read()
        self._gpu_rows.append(self._nvml.sample())
        row = {
            "t_s": time.perf_counter() - self._t0,
            "process_cpu_percent": self._proc.cpu_percent(None) + child_cpu,
            "machine_cpu_percent": psutil.cpu_percent(None),
            "children_cpu_percent": child_cpu,
            "rss_bytes": self._proc.memory_info().rss,
            "children_rss_bytes": child_rss,
            "disk_read_bytes": max(0, disk - self._last_disk),
            "process_read_bytes": max(0, tree - self._last_proc_read),
        }
        self._last_disk, self._last_proc_read = disk, tree
        for name, value in row.items():
            self.columns[name].append(float(value))

    def _gpu_columns(self) -> list[str]:
        """Fold the per-GPU samples into columns over the GPUs this process used.

        A node has GPUs other jobs or ranks use; averaging over all of them would hide an idle
        device, so only the devices this process allocated on count (all of them when CUDA was
        not initialised in this process, e.g. before the script reached the GPU).
        """
        in_use = devices_in_use()
        chosen = [i for i, u in enumerate(self._nvml.uuids) if in_use is None or u in in_use]
        util, memory = [], []
        for row in self._gpu_rows:
            picked = [row[i] for i in chosen if i < len(row)]
            util.append(float(np.mean([p[0] for p in picked])) if picked else float("nan"))
            memory.append(float(sum(p[1] for p in picked)) if picked else float("nan"))
        self.columns["gpu_util_percent"], self.columns["gpu_memory_bytes"] = util, memory
        return [self._nvml.uuids[i] for i in chosen]

    def to_dict(self) -> dict[str, Any]:
        gpus = self._gpu_columns()
        return {
            "interval_s": self.interval_s,
            "gpu_sampled": bool(self._nvml.handles),
            "gpu_uuids": gpus,
            "window_start_s": self.window[0] if self.window else None,
            "window_end_s": self.window[1] if self.window else None,
            "samples": self.columns,
            "summary": summarise(self.columns, self.window, self.interval_s),
        }


def summarise(
    columns: dict[str, list[float]], window: tuple[float, float] | None, interval_s: float
) -> dict[str, Any]:
    """Means and maxima over the window (or the whole run); disk reads as bytes per second."""
    t = np.asarray(columns["t_s"], dtype=float)
    if t.size == 0:
        return {"num_samples": 0}
    mask = _window_mask(t, window)
    out: dict[str, Any] = {"num_samples": int(mask.sum()), "over": "window" if window else "run"}
    for name in ("process_cpu_percent", "machine_cpu_percent", "children_cpu_percent", "gpu_util_percent"):
        if name not in columns:  # children_cpu_percent: not in Records from before it was sampled
            continue
        values = np.asarray(columns[name], dtype=float)[mask]
        finite = values[np.isfinite(values)]
        out[f"{name}_mean"] = float(finite.mean()) if finite.size else None
        out[f"{name}_max"] = float(finite.max()) if finite.size else None
    for name in ("rss_bytes", "children_rss_bytes", "gpu_memory_bytes"):
        values = np.asarray(columns[name], dtype=float)
        finite = values[np.isfinite(values)]
        out[f"{name}_max"] = float(finite.max()) if finite.size else None
    for name in ("disk_read_bytes", "process_read_bytes"):
        values = np.asarray(columns[name], dtype=float)[mask]
        out[f"{name}_per_s"] = float(values.sum() / (mask.sum() * interval_s))
    return out


def _window_mask(t: np.ndarray, window: tuple[float, float] | None) -> np.ndarray:
    """The samples taken within the window; all of them without a window or with none inside it."""
    mask = (t >= window[0]) & (t <= window[1]) if window else np.ones_like(t, dtype=bool)
    return mask if mask.any() else np.ones_like(t, dtype=bool)
