"""The outcome of a tuning session, as a value and as the public JSON of `tune --json`.

Keys (docs/tune.md): schema_version, tune_id, script, args, baseline_step_s, best_step_s,
speedup, speedup_ci, confirmed, metric, kept, rejected, overridden, intercepted,
numerics_unchecked, trials, stop_reason, noise, confirmation, summary, changes, diff.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import orjson

from torchdoctor.knobs import REGISTRY
from torchdoctor.knobs.diff import knob_changes
from torchdoctor.tune.errors import TuneInputError
from torchdoctor.tune.trial import FAILED, KEPT, REJECTED, Trial, central

SCHEMA_VERSION = 1


@dataclass(slots=True)
class TuneResult:
    tune_id: str
    script: str
    args: list[str]
    baseline_step_s: float | None
    best_step_s: float | None
    speedup: float | None
    speedup_ci: list[float] | None
    confirmed: bool
    metric: str
    kept: dict[str, Any]
    rejected: list[dict[str, Any]]
    overridden: list[dict[str, Any]]
    intercepted: list[dict[str, Any]]
    numerics_unchecked: list[str]
    trials: list[dict[str, Any]]
    stop_reason: str
    noise: dict[str, Any]
    confirmation: dict[str, Any] | None
    summary: str = ""
    changes: list[dict[str, Any]] = field(default_factory=list)
    diff: str | None = None
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def build(cls, *, tune_id: str, script: Path, args: list[str], baseline: Trial, best: Trial,
              kept: dict[str, Any], trials: Sequence[Trial], stop_reason: str, confirmation: dict[str, Any] | None,
              noise: dict[str, Any], unchecked: Sequence[str] = (), timing_steps: int = 0) -> TuneResult:
        """The result of a search that ran `trials` from `baseline`, kept `kept` (the best trial
        `best`) and confirmed it (`confirmation`, None when nothing was kept)."""
        per_sample = any(REGISTRY[name].per_sample for name in kept)
        baseline_s, best_s = baseline.step_s, best.step_s if kept else baseline.step_s
        speedup: float | None = 1.0
        speedup_ci: list[float] | None = None
        status = (confirmation or {}).get("status")
        verdict = (confirmation or {}).get("verdict") or {}
        if kept and status == "confirmed":
            speedup = 1.0 / verdict["ratio"]
            if verdict.get("ci_low") and verdict.get("ci_high"):
                speedup_ci = [1.0 / verdict["ci_high"], 1.0 / verdict["ci_low"]]
            baseline_s = _central(confirmation["baseline_runs"], per_sample) or baseline_s
            best_s = _central(confirmation["best_runs"], per_sample) or best_s
        elif kept and status == "unconfirmed":
            ratio = confirmation.get("estimate_ratio")
            speedup = 1.0 / ratio if ratio else None
        intercepted = [item for trial in trials if trial.status == KEPT for item in trial.intercepted()
                       if item.get("knob") in kept]
        changes, diff = knob_changes(script, kept, intercepted, best.record)
        result = cls(
            tune_id=tune_id, script=str(script), args=list(args),
            baseline_step_s=baseline_s, best_step_s=best_s, speedup=speedup, speedup_ci=speedup_ci,
            confirmed=bool(kept) and status == "confirmed",
            metric="time per sample" if per_sample else "time per step",
            kept=dict(kept),
            rejected=[{"knob": t.knob, "value": t.value, "status": t.status, "reason": t.reason}
                      for t in trials if t.status in (REJECTED, FAILED)],
            overridden=[{"knob": t.knob, "value": t.value, "reason": t.overridden} for t in trials if t.overridden],
            intercepted=intercepted, numerics_unchecked=[n for n in unchecked if n in kept],
            trials=[t.to_dict() for t in trials], stop_reason=stop_reason, noise=noise,
            confirmation=confirmation, changes=changes, diff=diff,
        )
        result.summary = summary_line(result)
        return result

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_bytes(orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2, default=str))
        return path


def _central(runs: list[dict[str, Any]], per_sample: bool) -> float | None:
    key = "sample_s" if per_sample else "step_s"
    return central([r[key] for r in runs if not r["failed"]])


def summary_line(result: TuneResult) -> str:
    """One sentence saying what was kept, how fast it is and how that was measured: the same
    words on the console and in the JSON."""
    kept = ", ".join(f"{k}={v!r}" for k, v in result.kept.items())
    status = (result.confirmation or {}).get("status")
    if not result.kept:
        if result.noise.get("too_noisy"):
            return (f"nothing kept: the machine is too noisy to decide anything within the budget: "
                    f"{result.noise['too_noisy']} (only effects beyond that spread could have been decided)")
        if (result.confirmation or {}).get("reason"):
            return f"nothing kept: the search's best was not confirmed: {result.confirmation['reason']}"
        return "nothing kept: no knob made the script measurably faster side by side"
    if result.confirmed:
        ci = f" (95% CI x{result.speedup_ci[0]:.2f}-x{result.speedup_ci[1]:.2f})" if result.speedup_ci else ""
        rounds = result.confirmation["rounds"]
        return (f"kept {kept}: x{result.speedup:.2f}{ci} {result.metric}, confirmed side by side over "
                f"{rounds} interleaved rounds against the unmodified script")
    estimate = f"x{result.speedup:.2f}" if result.speedup else "unknown"
    return f"kept {kept}: UNCONFIRMED, estimated {estimate} ({(result.confirmation or {}).get('reason', status)})"


def load_kept(path: str | Path) -> dict[str, Any]:
    """The kept knobs of a `tune --json` file, checked against the registry."""
    try:
        data = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise TuneInputError(f"cannot read tune result {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION or "kept" not in data:
        raise TuneInputError(f"{path} is not a `torchdoctor tune --json` result (schema_version {SCHEMA_VERSION})")
    unknown = sorted(set(data["kept"]) - set(REGISTRY))
    if unknown:
        raise TuneInputError(f"{path} keeps unknown knob(s): {', '.join(unknown)}")
    return dict(data["kept"])
