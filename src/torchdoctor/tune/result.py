"""The outcome of a tuning session, as a value and as the public JSON of `tune --json`.

Keys (docs/tune.md): schema_version, tune_id, script, args, baseline_step_s, best_step_s,
speedup, metric, kept, rejected, overridden, trials, stop_reason, noise, changes, diff.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import orjson

from torchdoctor.jsonguard import JsonBoundError, JsonLimits, loads_bounded
from torchdoctor.knobs import REGISTRY
from torchdoctor.knobs.diff import unified_diff
from torchdoctor.tune.errors import TuneInputError
from torchdoctor.tune.trial import FAILED, REJECTED, Trial

SCHEMA_VERSION = 1
#: A result file nests 4 deep (trials -> trial -> knobs -> value); it is read within these bounds,
#: as it may come from someone else (`run --apply RESULT.json`).
RESULT_LIMITS = JsonLimits(max_depth=32)


def baseline_noise(baseline: Trial, repeat: Trial | None, loss_difference: float | None) -> dict[str, Any]:
    """The baseline's noise. Within the run: `spread` = (p90 - p10) / median of its step times.
    Run to run (the baseline run twice): `repeat_step_ratio` = median step of the repeat / of the
    first run, and `loss_difference` = relative difference of their mean losses (None: not measured)."""
    times = sorted(baseline.times(per_sample=False))
    noise: dict[str, Any] = {"spread": None, "step_s_p10": None, "step_s_p90": None,
                             "repeat_step_ratio": None, "loss_difference": loss_difference}
    if times:
        p10, p50, p90 = (times[int(q * (len(times) - 1))] for q in (0.1, 0.5, 0.9))
        noise.update(spread=(p90 - p10) / p50 if p50 else None, step_s_p10=p10, step_s_p90=p90)
    if repeat is not None and repeat.step_s and baseline.step_s:
        noise["repeat_step_ratio"] = repeat.step_s / baseline.step_s
    return noise


@dataclass(slots=True)
class TuneResult:
    tune_id: str
    script: str
    args: list[str]
    baseline_step_s: float | None
    best_step_s: float | None
    speedup: float | None
    metric: str
    kept: dict[str, Any]
    rejected: list[dict[str, Any]]
    overridden: list[dict[str, Any]]
    trials: list[dict[str, Any]]
    stop_reason: str
    noise: dict[str, Any]
    changes: list[dict[str, Any]] = field(default_factory=list)
    diff: str | None = None
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def build(cls, *, tune_id: str, script: Path, args: list[str], baseline: Trial, best: Trial,
              repeat: Trial | None, loss_noise: float | None, kept: dict[str, Any], trials: Sequence[Trial],
              stop_reason: str) -> TuneResult:
        """The result of a search that ran `trials` from `baseline` and ended at `best` with `kept`."""
        per_sample = any(REGISTRY[name].per_sample for name in kept)
        before = baseline.sample_s if per_sample else baseline.step_s
        after = best.sample_s if per_sample else best.step_s
        return cls(
            tune_id=tune_id, script=str(script), args=list(args),
            baseline_step_s=baseline.step_s, best_step_s=best.step_s,
            speedup=before / after if before and after else None,
            metric="time per sample" if per_sample else "time per step",
            kept=dict(kept),
            rejected=[{"knob": t.knob, "value": t.value, "status": t.status, "reason": t.reason}
                      for t in trials if t.status in (REJECTED, FAILED)],
            overridden=[{"knob": t.knob, "value": t.value, "reason": t.overridden} for t in trials if t.overridden],
            trials=[t.to_dict() for t in trials], stop_reason=stop_reason,
            noise=baseline_noise(baseline, repeat, loss_noise),
            changes=[{"knob": n, "value": v, "snippet": REGISTRY[n].code_change(v)} for n, v in kept.items()],
            diff=unified_diff(script, kept),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_bytes(orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2, default=str))
        return path


def load_kept(path: str | Path) -> dict[str, Any]:
    """The kept knobs of a `tune --json` file, checked against the registry."""
    try:
        data = loads_bounded(Path(path).read_bytes(), RESULT_LIMITS)
    except (OSError, JsonBoundError, orjson.JSONDecodeError) as exc:
        raise TuneInputError(f"cannot read tune result {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION or "kept" not in data:
        raise TuneInputError(f"{path} is not a `torchdoctor tune --json` result (schema_version {SCHEMA_VERSION})")
    unknown = sorted(set(data["kept"]) - set(REGISTRY))
    if unknown:
        raise TuneInputError(f"{path} keeps unknown knob(s): {', '.join(unknown)}")
    return dict(data["kept"])
