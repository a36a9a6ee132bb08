"""The outcome of a tuning session, as a value and as the public JSON of `tune --json`.

Keys (docs/tune.md): schema_version, tune_id, script, script_sha256, args, baseline_step_s,
best_step_s, speedup, metric, kept, rejected, overridden, trials, stop_reason, exit_status, noise,
changes, diff.

`load_result` is what `run --apply` trusts: a file someone handed over is checked against this
layout, each kept value against its knob's own range on this machine (Knob.check), and the script
against the hash of the one the result was made for, before anything runs with it.
"""

from __future__ import annotations

import hashlib
import math
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
#: A tune result is a few hundred kilobytes; a larger file is not one (and is not read whole).
MAX_RESULT_BYTES = 32 * 1024 * 1024


def script_sha256(path: str | Path) -> str:
    """The hex sha256 of the script's bytes: which script a result was made for."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sha256_if_readable(path: str | Path) -> str | None:
    try:
        return script_sha256(path)
    except OSError:  # the script was removed while it was tuned: nothing to check against
        return None

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
    script_sha256: str | None = None
    """The sha256 of the script tuned: `run --apply` refuses another script unless --force."""
    exit_status: int = 0
    """0, or 128 + the signal that interrupted the search (130 for Ctrl-C): `tune`'s exit status."""
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def build(cls, *, tune_id: str, script: Path, args: list[str], baseline: Trial, best: Trial,
              repeat: Trial | None, loss_noise: float | None, kept: dict[str, Any], trials: Sequence[Trial],
              stop_reason: str, exit_status: int = 0) -> TuneResult:
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
            diff=unified_diff(script, kept), script_sha256=_sha256_if_readable(script), exit_status=exit_status,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_bytes(orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2, default=str))
        return path


def load_result(path: str | Path, script: str | Path, *, force: bool = False) -> tuple[dict[str, Any], list[str]]:
    """The kept knobs of a `tune --json` file to run `script` with, and warnings to print. Raises
    TuneInputError when the file is not a tune result, a kept value is outside its knob's range, or
    (unless `force`) the result was made for another script."""
    data = _read_result(Path(path))
    kept = data["kept"]
    if not isinstance(kept, dict):
        raise TuneInputError(f"{path}: `kept` must be an object (knob name -> value), got {type(kept).__name__}")
    unknown = sorted(str(name) for name in kept if name not in REGISTRY)
    if unknown:
        raise TuneInputError(f"{path} keeps unknown knob(s): {', '.join(unknown)}")
    for name, value in kept.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise TuneInputError(f"{path}: {name} = {value!r} is not a number")
        try:
            REGISTRY[name].check(value)
        except ValueError as exc:
            raise TuneInputError(f"{path}: {exc}") from None
    return dict(kept), _check_script(data, Path(path), Path(script), force)


def _read_result(path: Path) -> dict[str, Any]:
    try:
        size = path.stat().st_size
        if size > MAX_RESULT_BYTES:
            raise TuneInputError(f"{path} is {size} bytes: not a `torchdoctor tune --json` result "
                                 f"(at most {MAX_RESULT_BYTES} bytes)")
        data = loads_bounded(path.read_bytes(), RESULT_LIMITS)
    except OSError as exc:
        raise TuneInputError(f"cannot read tune result {path}: {exc.strerror or exc}") from None
    except (JsonBoundError, orjson.JSONDecodeError) as exc:
        raise TuneInputError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION or "kept" not in data:
        raise TuneInputError(f"{path} is not a `torchdoctor tune --json` result (schema_version {SCHEMA_VERSION})")
    return data


def _check_script(data: dict[str, Any], path: Path, script: Path, force: bool) -> list[str]:
    expected = data.get("script_sha256")
    if expected is None:
        return [f"{path} does not say which script it was made for (written before torchdoctor recorded the "
                "script's sha256): not checked"]
    if not isinstance(expected, str) or len(expected) != 64:
        raise TuneInputError(f"{path}: script_sha256 must be 64 hex digits, got {expected!r}")
    actual = script_sha256(script)
    if actual == expected:
        return []
    tuned = data.get("script") if isinstance(data.get("script"), str) else "another script"
    message = (f"{path} was made for {tuned} (sha256 {expected[:12]}...), not for {script} as it is now "
               f"(sha256 {actual[:12]}...)")
    if not force:
        raise TuneInputError(f"{message}; tune it again, or pass --force to apply its knobs anyway")
    return [f"{message}; applied anyway (--force)"]

