"""The performance gate's values and decisions (`torchdoctor check`): values in, values out.

Two sides are compared: A, the reference (a git ref, another interpreter, a stored baseline), and
B, the code as it is now. Each observation of a side is one Record; `observation_figures` reduces
it to the figures the gate compares (its pace: mean step time, time per sample, samples/s, peak
memory, compile time, time per phase). The step-time decision itself comes from `torchdoctor.bench`
(interleaved rounds, paired bootstrap CI of the ratio B/A, noise floor); `time_gate` turns its
Verdict into the gate's answer:

- regression: the Verdict says "slower" (the whole CI above 1 + noise floor) and the ratio is at
  least 1 + max_slowdown;
- pass, at any look: the upper end of the look's own 95% CI (`pass_bound`) is at most
  1 + max_slowdown (a slowdown beyond the threshold is ruled out), whatever else the Verdict says;
  before the last look only when the noise floor is below max_slowdown (a session whose A against
  A differs as much as the threshold settles nothing early);
- pass, at the last look only (rounds or budget spent): the ratio is below 1 + max_slowdown; the
  CI may still reach beyond it (the reason then says how far), since no significant slowdown
  beyond the threshold was found;
- undecided: the ratio is at or beyond the threshold without being significant (the noise hides
  whether it is real), or fewer than 5 samples a side; before the last look, anything else.

So a regression is claimed only when it is significant at the confidence corrected for the looks
(false alarms are bounded by it), while a pass, whose error is a missed regression, needs only each
look's own 95% CI: a clear "no slowdown" ends at the first look as a clear slowdown does. A check
that ran out of rounds passes unless its estimate itself is beyond the threshold.

Peak memory gates the same way with `max_memory_growth` as both its threshold and floor. The
check's decision is "regression" when any gated metric regressed, else "undecided" when any is
undecided, else "pass"; "error" when a side failed or an input was refused; "saved" when a
baseline was recorded. Exit codes: 0 pass or saved, 1 regression, 2 undecided or error. JSON keys:
docs/check.md (`SCHEMA_VERSION`).
"""

from __future__ import annotations

import math
import re
from statistics import NormalDist
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from torchdoctor.bench import SLOWER, TOO_FEW, UNCLEAR, Verdict, compare_samples
from torchdoctor.finding import Finding
from torchdoctor.jsonguard import JsonLimits
from torchdoctor.record import Record

#: 2: an observation's step time is its mean step (its pace), no longer its median step.
SCHEMA_VERSION = 2
BASELINE_SCHEMA_VERSION = 2
KIND = "torchdoctor.check"
BASELINE_KIND = "torchdoctor.check.baseline"
#: Bounds on a baseline's JSON (a file from elsewhere, or the store) before it is parsed: one nests 4
#: deep (observations[].phases.PHASE); 32 keeps every reader far from Python's recursion limit.
BASELINE_LIMITS = JsonLimits(max_depth=32)

PASS, REGRESSION, UNDECIDED, ERROR, SAVED = "pass", "regression", "undecided", "error", "saved"
EXIT_CODES = {PASS: 0, REGRESSION: 1, UNDECIDED: 2, ERROR: 2, SAVED: 0}

#: Parts of a step, as the Record's per-step samples time them; "other" is the rest of the step.
PHASES = ("data_wait", "forward", "backward", "optimizer", "other")
#: A phase "grew" when it carries at least this share of the step's growth.
GREW_SHARE = 0.10
#: Rows of the trace diff kept in the location.
TOP_ROWS = 8
#: An operator or kernel is named when it grew by at least this share of the step's growth.
OP_SHARE = 0.10
#: The environment that must match for a stored baseline to mean anything.
FINGERPRINT_KEYS = ("cpu_model", "logical_cores", "gpus", "torch", "cuda", "hip")

_PROFILER_STEP = re.compile(r"^ProfilerStep#\d+$")


# -- per observation --------------------------------------------------------------------------------
def uses_accelerator(record: Record) -> bool:
    """Whether the script's model lives on an accelerator (CUDA, ROCm, XPU, MPS)."""
    for model in record.env.get("models") or []:
        if any(not str(d).startswith("cpu") for d in model.get("parameter_devices") or []):
            return True
    return False


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
    memory = (record.memory or {}).get("breakdown") or {}
    compile_s = (record.compile or {}).get("compile_time_s")
    return {
        "step_s": step_s,
        "sample_s": sample_s,
        "batch_size": int(batch) if batch else None,
        "samples_per_s": 1.0 / sample_s if sample_s else None,  # the pace too, not the Record's median step
        "clock": "window" if device else "mean step",
        "peak_bytes": memory.get("peak_bytes"),
        "memory_method": memory.get("method"),
        "memory_categories": memory.get("categories_bytes") or {},
        "compile_s": compile_s if compile_s else None,
        "phases": phases,
    }


def fingerprint(env: dict[str, Any]) -> dict[str, Any]:
    """The parts of a Record's env that decide what a step costs: CPU and GPU models, core count,
    torch and its CUDA/HIP build."""
    versions, cpu, devices = env.get("versions") or {}, env.get("cpu") or {}, env.get("devices") or {}
    return {
        "cpu_model": cpu.get("model"),
        "logical_cores": cpu.get("logical_cores"),
        "gpus": [g.get("name") for g in devices.get("gpus") or []],
        "torch": versions.get("torch"),
        "cuda": versions.get("cuda"),
        "hip": versions.get("hip"),
        "python": versions.get("python"),
    }


def fingerprint_differences(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """Keys of FINGERPRINT_KEYS whose values differ (python is shown, never compared)."""
    return [{"key": k, "a": a.get(k), "b": b.get(k)} for k in FINGERPRINT_KEYS if a.get(k) != b.get(k)]


# -- metrics ----------------------------------------------------------------------------------------
@dataclass(slots=True)
class Metric:
    """One figure of A and B with the ratio B/A, its CI, and (when gated) the gate's answer."""

    name: str
    label: str
    unit: str  # "s" | "samples/s" | "bytes"
    better: str  # "lower" | "higher"
    a: float | None = None
    b: float | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float | None = None
    pass_bound: float | None = None  # upper end of the last look's own 95% CI (what a pass needs)
    noise_floor: float | None = None
    min_detectable_effect: float | None = None
    verdict: str = "not measured"  # "worse" | "better" | "no clear difference" | "too few samples" | "not measured"
    gate: str | None = None  # PASS | REGRESSION | UNDECIDED; None: reported, not gated
    threshold: float | None = None
    n_a: int = 0
    n_b: int = 0
    note: str = ""

    @property
    def change(self) -> float | None:
        return None if self.ratio is None else self.ratio - 1.0

    def to_dict(self) -> dict[str, Any]:
        data = {k: _finite(v) for k, v in asdict(self).items()}
        data["change"] = _finite(self.change)
        return data


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _worse_or_better(verdict: Verdict, better: str) -> str:
    if verdict.verdict == TOO_FEW:
        return "too few samples"
    if verdict.verdict == UNCLEAR:
        return UNCLEAR
    higher = verdict.verdict == SLOWER  # B's values are larger
    return "worse" if higher == (better == "lower") else "better"


def pass_bound(verdict: Verdict, look_confidence: float | None, confidence: float = 0.95) -> float:
    """Upper end of the `confidence` CI of the ratio at this look alone, read off the Verdict's CI
    (at `look_confidence`, wider) as a normal interval on the log scale around the ratio."""
    if look_confidence is None or look_confidence <= confidence or not math.isfinite(verdict.ci_low):
        return verdict.ci_high
    z_look = NormalDist().inv_cdf(1.0 - (1.0 - look_confidence) / 2)
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2)
    se_log = (math.log(verdict.ci_high) - math.log(verdict.ci_low)) / (2.0 * z_look)
    return min(verdict.ci_high, verdict.ratio * math.exp(z * se_log))


def time_gate(verdict: Verdict, max_slowdown: float, *, final: bool = True, look_confidence: float | None = None,
              confidence: float = 0.95) -> str:
    """The gate's answer on a step-time Verdict (see the module docstring); `final`: the last look;
    `look_confidence`: the confidence of the Verdict's CI (None: use that CI for a pass too)."""
    if verdict.verdict == TOO_FEW or not math.isfinite(verdict.ci_high):
        return UNDECIDED
    if verdict.verdict == SLOWER and verdict.ratio >= 1.0 + max_slowdown:
        return REGRESSION
    # Before the last look, a pass also needs the session's own noise (the A-vs-A floor) under the
    # threshold: where A against A differs as much as the allowed slowdown, a few rounds in which A
    # happened to run slow can put a real slowdown's CI below it (seen: "+5%" changes passed at 5
    # rounds measuring -32% and -9%, floors 27% and 5.4%). More rounds then settle it.
    quiet = final or verdict.noise_floor < max_slowdown
    if quiet and pass_bound(verdict, look_confidence, confidence) <= 1.0 + max_slowdown:
        return PASS
    if final and verdict.ratio < 1.0 + max_slowdown:
        return PASS
    return UNDECIDED


def gate_settled(max_slowdown: float, look_confidence: float | None = None, confidence: float = 0.95):
    """The settle test for `bench.run_interleaved` at each look: the gate has its answer already."""
    return lambda verdict: time_gate(verdict, max_slowdown, final=False, look_confidence=look_confidence,
                                     confidence=confidence) != UNDECIDED


def metric_from_verdict(name: str, label: str, verdict: Verdict, a: Sequence[float], b: Sequence[float], *,
                        unit: str = "s", better: str = "lower", threshold: float | None = None,
                        confidence: float | None = None, pass_confidence: float = 0.95, gated: bool = True) -> Metric:
    """A metric from a bench Verdict over samples `a` and `b` (its CI at `confidence`, the last
    look's); gated by `time_gate` at `threshold`, as at the last look."""
    metric = Metric(name, label, unit, better, a=_median(a), b=_median(b), ratio=_finite(verdict.ratio),
                    ci_low=_finite(verdict.ci_low), ci_high=_finite(verdict.ci_high), confidence=confidence,
                    pass_bound=_finite(pass_bound(verdict, confidence, pass_confidence)),
                    noise_floor=verdict.noise_floor,
                    min_detectable_effect=_finite(verdict.min_detectable_effect),
                    verdict=_worse_or_better(verdict, better), threshold=threshold, n_a=verdict.n_a, n_b=verdict.n_b)
    if gated and threshold is not None:
        metric.gate = time_gate(verdict, threshold, look_confidence=confidence, confidence=pass_confidence)
    return metric


def compare_figures(name: str, label: str, a: Sequence[float | None], b: Sequence[float | None], *,
                    unit: str, better: str, min_effect: float, confidence: float = 0.95, seed: int = 0,
                    threshold: float | None = None) -> Metric | None:
    """A metric from per-observation figures (unpaired); None when neither side measured it.
    With `threshold` it is gated: "regression" when worse with the whole CI beyond the threshold
    (the threshold is then the noise floor too), "pass" when not, "undecided" with too few samples."""
    va = [float(v) for v in a if v is not None and v > 0]
    vb = [float(v) for v in b if v is not None and v > 0]
    if not va and not vb:
        return None
    metric = Metric(name, label, unit, better, a=_median(va), b=_median(vb), n_a=len(va), n_b=len(vb),
                    threshold=threshold)
    if not va or not vb:
        metric.note = f"measured on side {'B' if vb else 'A'} only"
        return metric
    floor = threshold if threshold is not None else min_effect
    verdict = compare_samples(va, vb, min_effect=min(floor, 0.99), confidence=confidence, seed=seed)
    metric.ratio, metric.ci_low = _finite(verdict.ratio), _finite(verdict.ci_low)
    metric.ci_high = _finite(verdict.ci_high)
    metric.confidence, metric.noise_floor = confidence, verdict.noise_floor
    metric.min_detectable_effect = _finite(verdict.min_detectable_effect)
    metric.verdict = _worse_or_better(verdict, better)
    if threshold is not None:
        metric.gate = (UNDECIDED if verdict.verdict == TOO_FEW
                       else REGRESSION if metric.verdict == "worse" else PASS)
    return metric


def _median(values: Sequence[float]) -> float | None:
    return float(np.median(values)) if len(values) else None


# -- where the slowdown lives ------------------------------------------------------------------------
@dataclass(slots=True)
class Location:
    """Where B's extra time (or memory) went: phases of the step from the timed rounds, operators and
    kernels from one profiled step window per side (`trace diff`), findings that appeared or vanished."""

    phases: list[dict[str, Any]] = field(default_factory=list)
    ops: list[dict[str, Any]] = field(default_factory=list)
    kernels: list[dict[str, Any]] = field(default_factory=list)
    findings_appeared: list[dict[str, Any]] = field(default_factory=list)
    findings_vanished: list[dict[str, Any]] = field(default_factory=list)
    memory_categories: list[dict[str, Any]] = field(default_factory=list)
    traces: dict[str, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def grew(self) -> list[str]:
        """Phase and operator names that grew, largest first (for one-line summaries)."""
        names = [f"{p['phase']} phase" for p in self.phases if p["grew"]]
        return names + [o["name"] for o in self.ops[:3]]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def phase_changes(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per phase: median over observations of the mean time per step, A and B, and the change.
    `share` is the phase's part of the whole step's change; `grew` marks the phases behind it."""
    pa = [f["phases"] for f in a if f.get("phases")]
    pb = [f["phases"] for f in b if f.get("phases")]
    if not pa or not pb:
        return []
    rows = []
    for phase in PHASES:
        a_s, b_s = float(np.median([p[phase] for p in pa])), float(np.median([p[phase] for p in pb]))
        rows.append({"phase": phase, "a_s": a_s, "b_s": b_s, "delta_s": b_s - a_s})
    total = sum(r["delta_s"] for r in rows)
    for row in rows:
        row["share"] = row["delta_s"] / total if total > 0 else None
        row["grew"] = total > 0 and row["delta_s"] > 0 and row["delta_s"] >= GREW_SHARE * total
    return sorted(rows, key=lambda r: -r["delta_s"])


def grown_rows(rows: Sequence[dict[str, Any]], *, min_delta_us: float = 0.0,
               top: int = TOP_ROWS) -> list[dict[str, Any]]:
    """The rows of a `trace diff` table that cost B at least `min_delta_us` more per step, largest
    first. Self time of `ProfilerStep#N` ranges, where present, is summed as one row."""
    merged: dict[str, dict[str, Any]] = {}
    for row in rows:
        name = "ProfilerStep (Python between operators)" if _PROFILER_STEP.match(row["name"]) else row["name"]
        into = merged.setdefault(name, {"name": name, "us_per_step_a": 0.0, "us_per_step_b": 0.0,
                                        "count_per_step_a": 0.0, "count_per_step_b": 0.0, "status": row["status"]})
        for key in ("us_per_step_a", "us_per_step_b", "count_per_step_a", "count_per_step_b"):
            into[key] += row[key]
    for row in merged.values():
        row["delta_us_per_step"] = row["us_per_step_b"] - row["us_per_step_a"]
        if row["name"].startswith("ProfilerStep ("):
            row["status"] = "slower" if row["delta_us_per_step"] > 0 else "same"
    grown = [r for r in merged.values() if r["delta_us_per_step"] > max(min_delta_us, 0.0)
             and r["status"] in ("slower", "added")]
    return sorted(grown, key=lambda r: -r["delta_us_per_step"])[:top]


def operator_coverage(rows: Sequence[dict[str, Any]], step_delta_s: float) -> str | None:
    """A note when the profiled operators' self time explains less than half of the step's growth:
    the extra time is then spent outside torch operators."""
    if step_delta_s <= 0:
        return None
    ops_delta_s = sum(r["delta_us_per_step"] for r in rows) / 1e6
    if ops_delta_s >= 0.5 * step_delta_s:
        return None
    return (f"torch operators account for {ops_delta_s * 1e3:+.3f} ms of the step's {step_delta_s * 1e3:+.3f} ms: "
            "the extra time is spent outside them (the script's own Python, sleeps, I/O, waiting on a lock, a "
            "process or the data pipeline)")


def findings_changes(a: Sequence[Finding],
                     b: Sequence[Finding]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(appeared, vanished): findings of B not in A and of A not in B, by rule id."""
    def brief(f: Finding) -> dict[str, Any]:
        return {"id": f.id, "severity": f.severity, "title": f.title}

    ids_a, ids_b = {f.id for f in a}, {f.id for f in b}
    return [brief(f) for f in b if f.id not in ids_a], [brief(f) for f in a if f.id not in ids_b]


def memory_changes(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bytes per category at the step's memory peak (first observation that has them, per side)."""
    ca = next((f["memory_categories"] for f in a if f.get("memory_categories")), {})
    cb = next((f["memory_categories"] for f in b if f.get("memory_categories")), {})
    rows = [{"category": k, "a_bytes": ca.get(k, 0), "b_bytes": cb.get(k, 0),
             "delta_bytes": cb.get(k, 0) - ca.get(k, 0)} for k in sorted(set(ca) | set(cb))]
    return sorted([r for r in rows if r["delta_bytes"]], key=lambda r: -r["delta_bytes"])


# -- the result ---------------------------------------------------------------------------------------
@dataclass(slots=True)
class CheckResult:
    """Everything `torchdoctor check` decided and measured (JSON: `to_dict`, docs/check.md)."""

    decision: str
    reason: str
    mode: str  # "ref" | "python" | "baseline" | "save-baseline" | "demo"
    script: str | None = None
    argv: list[str] = field(default_factory=list)
    a: dict[str, Any] = field(default_factory=dict)
    b: dict[str, Any] = field(default_factory=dict)
    dirty: bool = False
    dirty_files: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    metrics: list[Metric] = field(default_factory=list)
    gate_metric: str | None = None
    rounds: int = 0
    planned_rounds: int | None = None
    observations: int = 0
    wall_s: float = 0.0
    stop_reason: str | None = None
    aa_ratio: float | None = None
    samples_s: dict[str, list[float]] = field(default_factory=dict)
    location: Location | None = None
    env: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    baseline: dict[str, Any] | None = None
    work_dir: str | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]

    def metric(self, name: str) -> Metric | None:
        return next((m for m in self.metrics if m.name == name), None)

    @property
    def gated(self) -> list[Metric]:
        return [m for m in self.metrics if m.gate is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": KIND,
            "decision": self.decision,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "mode": self.mode,
            "script": self.script,
            "argv": self.argv,
            "a": self.a,
            "b": self.b,
            "dirty": self.dirty,
            "dirty_files": self.dirty_files,
            "settings": self.settings,
            "gate_metric": self.gate_metric,
            "metrics": {m.name: m.to_dict() for m in self.metrics},
            "rounds": self.rounds,
            "planned_rounds": self.planned_rounds,
            "observations": self.observations,
            "wall_s": self.wall_s,
            "stop_reason": self.stop_reason,
            "aa_ratio": _finite(self.aa_ratio),
            "samples_s": self.samples_s,
            "location": self.location.to_dict() if self.location else None,
            "env": self.env,
            "error": self.error,
            "warnings": self.warnings,
            "baseline": self.baseline,
            "work_dir": self.work_dir,
        }


def decide(metrics: Sequence[Metric]) -> str:
    """REGRESSION if any gated metric regressed, else UNDECIDED if any is undecided, else PASS."""
    gates = [m.gate for m in metrics if m.gate is not None]
    if REGRESSION in gates:
        return REGRESSION
    if UNDECIDED in gates or not gates:
        return UNDECIDED
    return PASS


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:+.1f}%"


def describe(metric: Metric) -> str:
    """'step time +12.3% (95% CI +9.8% .. +14.1%)' (CI left out when there is none)."""
    text = f"{metric.label} {_pct(metric.change)}"
    if metric.ci_low is not None and metric.ci_high is not None:
        text += f" (95% CI {_pct(metric.ci_low - 1)} .. {_pct(metric.ci_high - 1)})"
    return text


def reason_for(decision: str, metrics: Sequence[Metric], *, stop_reason: str | None, rounds: int,
               budget_s: float | None, stopped_by: str = "Ctrl-C") -> str:
    """One sentence saying why the check decided what it did (`stopped_by`: the stop signal that
    interrupted it, as the user would name it)."""
    gated = [m for m in metrics if m.gate is not None]
    if decision == REGRESSION:
        bad = [m for m in gated if m.gate == REGRESSION]
        return "; ".join(f"{describe(m)} is beyond the allowed {_pct(m.threshold)}" for m in bad)
    if decision == PASS:
        time_metric = next((m for m in gated if m.unit == "s"), gated[0])
        threshold = _pct(time_metric.threshold)
        bound = time_metric.pass_bound if time_metric.pass_bound is not None else time_metric.ci_high
        if bound is not None and bound - 1.0 <= (time_metric.threshold or 0.0):
            text = (f"{describe(time_metric)} rules out a slowdown beyond {threshold} (the last look's own 95% CI "
                    f"ends at {_pct(bound - 1.0)})")
        else:
            text = (f"{describe(time_metric)} is within the allowed {threshold}: no significant slowdown beyond it "
                    f"(the CI still reaches {_pct((time_metric.ci_high or 1.0) - 1.0)}; smallest detectable slowdown "
                    f"{_pct(time_metric.min_detectable_effect)})")
        if time_metric.verdict == "worse":
            text += "; slower, but within the allowed slowdown"
        return text
    if stop_reason == "interrupted":
        measured = "; ".join(describe(m) for m in gated if m.ratio is not None)
        return (f"interrupted ({stopped_by}) after {rounds} complete round(s): "
                + (f"measured so far {measured}" if measured else "too little measured for a verdict"))
    if stop_reason == "budget":
        why = f"cannot decide within the budget of {budget_s:g} s ({rounds} rounds)"
    else:
        why = f"cannot decide after {rounds} rounds"
    parts = []
    for m in (m for m in gated if m.gate == UNDECIDED):
        if m.n_a < 5 or m.n_b < 5:
            parts.append(f"{m.label}: only {min(m.n_a, m.n_b)} sample(s) a side, 5 needed for a verdict")
            continue
        part = f"{describe(m)} is at or beyond the {_pct(m.threshold)} threshold but not significantly slower"
        if m.noise_floor is not None:
            part += f" (noise floor {100 * m.noise_floor:.1f}%"
            if m.min_detectable_effect is not None:
                part += f", smallest detectable slowdown {100 * m.min_detectable_effect:.1f}%"
            part += ")"
        parts.append(part)
    if not parts:
        return why
    return f"{why}: " + "; ".join(parts) + "; raise --budget or --steps, or run on a quieter machine"


# -- stored baselines -------------------------------------------------------------------------------
def baseline_document(*, name: str, script: str, argv: Sequence[str], created_at: str, commit: str | None,
                      dirty: bool, env: dict[str, Any], settings: dict[str, Any],
                      observations: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A stored baseline: the per-observation figures of one side and its environment fingerprint.
    `noise` is the difference of the medians of its two halves (interleaved), a floor for later checks."""
    steps = [o["step_s"] for o in observations if o.get("step_s")]
    noise = None
    if len(steps) >= 4:
        first, second = float(np.median(steps[0::2])), float(np.median(steps[1::2]))
        noise = abs(second / first - 1.0)
    return {
        "schema_version": BASELINE_SCHEMA_VERSION, "kind": BASELINE_KIND, "name": name, "created_at": created_at,
        "script": script, "argv": list(argv), "commit": commit, "dirty": dirty,
        "fingerprint": fingerprint(env), "settings": dict(settings), "noise": noise,
        "observations": list(observations),
    }  # fmt: skip


def read_baseline(data: Any, where: str) -> dict[str, Any]:
    """Check a loaded baseline document; raises ValueError with what is wrong."""
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise ValueError(f"{where} is not a torchdoctor check baseline (no kind {BASELINE_KIND!r})")
    version = data.get("schema_version")
    if version == 1:
        raise ValueError(f"{where} was recorded by an older torchdoctor, with each observation's median step; "
                         "the gate now compares mean steps (the pace), so record the baseline again "
                         "(--save-baseline)")
    if version != BASELINE_SCHEMA_VERSION:
        raise ValueError(f"{where} has baseline schema_version {version!r}; this torchdoctor reads "
                         f"{BASELINE_SCHEMA_VERSION}")
    if not [o for o in data.get("observations") or [] if o.get("step_s")]:
        raise ValueError(f"{where} holds no measured observation")
    return data


__all__ = [
    "BASELINE_KIND", "BASELINE_LIMITS", "ERROR", "EXIT_CODES", "KIND", "PASS", "REGRESSION", "SAVED", "SCHEMA_VERSION",
    "UNDECIDED",
    "CheckResult", "Location", "Metric", "baseline_document", "compare_figures", "decide", "describe",
    "findings_changes", "fingerprint", "fingerprint_differences", "gate_settled", "grown_rows", "memory_changes",
    "metric_from_verdict", "observation_figures", "operator_coverage", "pass_bound", "phase_changes", "read_baseline",
    "reason_for", "time_gate", "uses_accelerator",
]
