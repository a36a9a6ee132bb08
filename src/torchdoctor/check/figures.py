"""What the gate keeps of one observation (`observation_figures`: its pace, time per sample,
samples/s, peak memory, compile time, time per phase) and of its machine (`fingerprint`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from torchdoctor.compile.report import CompileReport
from torchdoctor.environment import Cpu, Environment, Versions
from torchdoctor.jsonfields import readable
from torchdoctor.memory.report import MemoryReport
from torchdoctor.record import Record

#: Parts of a step, as the Record's per-step samples time them; "other" is the rest of the step.
PHASES = ("data_wait", "forward", "backward", "optimizer", "other")
#: The environment that must match for a stored baseline to mean anything.
FINGERPRINT_KEYS = ("cpu_model", "logical_cores", "gpus", "torch", "cuda", "hip")


def uses_accelerator(record: Record) -> bool:
    """Whether the script's model lives on an accelerator (CUDA, ROCm, XPU, MPS)."""
    return any(not device.startswith("cpu") for device in Environment.or_empty(record.env).model_devices())


def observation_figures(record: Record) -> dict[str, Any]:
    """What the gate keeps of one observation: the step time and its one-off figures.

    The step time is the observation's pace: on CPU the mean of its timed steps (their wall time
    per step), with the model on an accelerator the timing window's wall time over its steps, since
    the device is synchronised only at the window's two edges (a step's host time does not include
    the device work it queued). Not the median step: a cost paid every few steps (a checkpoint or
    a log every 10 steps, DataLoader workers restarted or delivering in bursts) slows training as
    much as one spread over every step, and a median step does not see it (the same choice as
    `bench.compare_runs`; measured there: x92 by medians beside x24 by pace)."""
    steps = record.steps
    wall = [s.wall_s for s in steps]
    sizes = [s.batch_size for s in steps if s.batch_size]
    window_step_s = record.summary.window_s / len(steps) if steps and record.summary.window_s else None
    device = uses_accelerator(record) and window_step_s is not None
    step_s = window_step_s if device else (float(np.mean(wall)) if wall else None)
    batch = float(np.median(sizes)) if sizes else None
    if device:
        sample_s = step_s / batch if batch else None
    else:
        sized = [s for s in steps if s.batch_size]
        sample_s = sum(s.wall_s for s in sized) / sum(s.batch_size for s in sized) if sized else None
    phases: dict[str, float] | None = None
    if steps:
        means = {p: float(np.mean([getattr(s, f"{p}_s") for s in steps])) for p in PHASES[:-1]}
        means["other"] = max(0.0, float(np.mean(wall)) - sum(means.values()))
        phases = means
    report = readable(MemoryReport.from_dict, record.memory)
    memory = report.breakdown if report else None
    compiled = readable(CompileReport.from_dict, record.compile)
    compile_s = compiled.compile_time_s if compiled else None
    return {
        "step_s": step_s,
        "sample_s": sample_s,
        "batch_size": int(batch) if batch else None,
        "samples_per_s": 1.0 / sample_s if sample_s else None,  # the pace too, not the Record's median step
        "clock": "window" if device else "mean step",
        "peak_bytes": memory.peak_bytes if memory else None,
        "memory_method": memory.method if memory else None,
        "memory_categories": dict(memory.categories_bytes) if memory else {},
        "compile_s": compile_s if compile_s else None,
        "phases": phases,
    }


def fingerprint(env: Environment) -> dict[str, Any]:
    """The parts of a Record's env that decide what a step costs: CPU and GPU models, core count,
    torch and its CUDA/HIP build."""
    versions, cpu = env.versions or Versions(), env.cpu or Cpu()
    return {
        "cpu_model": cpu.model,
        "logical_cores": cpu.logical_cores,
        "gpus": [gpu.name for gpu in env.gpus],
        "torch": versions.torch,
        "cuda": versions.cuda,
        "hip": versions.hip,
        "python": versions.python,
    }


def fingerprint_differences(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """Keys of FINGERPRINT_KEYS whose values differ (python is shown, never compared)."""
    return [{"key": k, "a": a.get(k), "b": b.get(k)} for k in FINGERPRINT_KEYS if a.get(k) != b.get(k)]
