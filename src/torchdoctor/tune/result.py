"""The outcome of a tuning session, as a value and as the public JSON of `tune --json`.

Keys (docs/tune.md): schema_version, tune_id, script, script_sha256, args, baseline_step_s,
best_step_s, speedup, speedup_ci, confirmed, metric, kept, rejected, overridden, intercepted,
numerics_unchecked, trials, stop_reason, exit_status, noise, confirmation, summary, changes, diff,
findings.

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

from torchdoctor.bench import geometric_median
from torchdoctor.inputs import read_capped
from torchdoctor.outputs import dumps_json, write_atomic
from torchdoctor.jsonguard import JsonBoundError, JsonLimits, loads_bounded
from torchdoctor.knobs import REGISTRY
from torchdoctor.knobs.diff import knob_changes
from torchdoctor.tune.errors import TuneInputError
from torchdoctor.tune.runner import TuneSetup
from torchdoctor.tune.state import TuneState
from torchdoctor.tune.trial import FAILED, KEPT, REJECTED, speedup_interval

SCHEMA_VERSION = 3
#: The versions `run --apply` reads: `kept` and `script_sha256` mean the same in all (2 and 3
#: changed what `speedup` measures, docs/tune.md "Schema history"), so results made before still
#: apply.
READABLE_SCHEMAS = (1, 2, 3)
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


@dataclass(frozen=True, slots=True)
class Conclusion:
    """How a tune ended, beside its search: the `confirmation` of what was kept (None when nothing
    was), the script's `noise` (baseline.noise_report), the diagnosis's `findings` with a knob, each
    with its claim against the measurement (tune/claims.py), `exit_status`: 128 + the signal
    that interrupted the search, 0 when none did; `search`: what ordered the search and the load
    seen (the result's `search`); `load_dependent`: kept knobs decided under other processes'
    load, left out of the permanent edits."""

    confirmation: dict[str, Any] | None
    noise: dict[str, Any]
    findings: Sequence[dict[str, Any]] = ()
    exit_status: int = 0
    search: dict[str, Any] = field(default_factory=dict)
    load_dependent: Sequence[str] = ()


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
    findings: list[dict[str, Any]] = field(default_factory=list)
    """Each finding of the diagnosis with a knob, its claim against tune's measurement (tune/claims.py)."""
    script_sha256: str | None = None
    """The sha256 of the script tuned: `run --apply` refuses another script unless --force."""
    exit_status: int = 0
    """0, or 128 + the signal that interrupted the search (130 for Ctrl-C): `tune`'s exit status."""
    diff_check: dict[str, Any] | None = None
    """The diff checked by running the patched script (tune/patched.py): `ok`, `reason`, `run_id`;
    null when there is no diff."""
    search: dict[str, Any] = field(default_factory=dict)
    """What ordered the search: the knobs the script's structure required, its counts, whether the
    baseline was re-diagnosed, the plan (docs/tune.md, "search")."""
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def build(cls, setup: TuneSetup, state: TuneState, conclusion: Conclusion) -> TuneResult:
        """The result of the tune `setup` describes, whose search left `state` (its trials from the
        baseline, the knobs kept and the best trial) and ended as `conclusion` says."""
        kept, trials, best, confirmation = state.kept, state.trials, state.best, conclusion.confirmation
        script = setup.script
        per_sample = any(REGISTRY[name].per_sample for name in kept)
        baseline_s, best_s = state.baseline.step_s, best.step_s if kept else state.baseline.step_s
        speedup: float | None = 1.0
        speedup_ci: list[float] | None = None
        status = (confirmation or {}).get("status")
        verdict = (confirmation or {}).get("verdict") or {}
        if kept and status == "confirmed":
            speedup = 1.0 / verdict["ratio"]
            speedup_ci = speedup_interval(verdict)
            baseline_s = _central(confirmation["baseline_runs"], per_sample) or baseline_s
            best_s = _central(confirmation["best_runs"], per_sample) or best_s
        elif kept and status == "unconfirmed":
            ratio = confirmation.get("estimate_ratio")
            speedup = 1.0 / ratio if ratio else None
        intercepted = kept_intercepted(state)
        # A knob decided under other processes' load (threads, workers) may hold only under it:
        # run --apply applies it, but no permanent edit is offered until it is re-confirmed quiet.
        changes, diff = knob_changes(script, permanent_knobs(state, conclusion.load_dependent), intercepted,
                                     best.record)
        result = cls(
            tune_id=setup.tune_id, script=str(script), args=list(setup.args),
            baseline_step_s=baseline_s, best_step_s=best_s, speedup=speedup, speedup_ci=speedup_ci,
            confirmed=bool(kept) and status == "confirmed",
            metric="time per sample" if per_sample else "time per step",
            kept=dict(kept),
            rejected=[{"knob": t.knob, "value": t.value, "status": t.status, "reason": t.reason}
                      for t in trials if t.status in (REJECTED, FAILED)],
            overridden=[{"knob": t.knob, "value": t.value, "reason": t.overridden} for t in trials if t.overridden],
            intercepted=intercepted, numerics_unchecked=[n for n in state.unchecked_kept if n in kept],
            trials=[t.to_dict() for t in trials], stop_reason=state.stop_reason, noise=conclusion.noise,
            confirmation=confirmation, changes=changes, diff=diff, findings=list(conclusion.findings),
            script_sha256=_sha256_if_readable(script), exit_status=conclusion.exit_status,
            search=dict(conclusion.search),
        )
        result.summary = summary_line(result)
        return result

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, path: str | Path) -> Path:
        return write_atomic(path, dumps_json(self.to_dict(), option=orjson.OPT_INDENT_2, default=str), what="--json")


def kept_intercepted(state: TuneState) -> list[dict[str, Any]]:
    """The guard's records of the kept trials, for the kept knobs: the lines the diff edits."""
    return [item for trial in state.trials if trial.status == KEPT for item in trial.intercepted()
            if item.get("knob") in state.kept]


def permanent_knobs(state: TuneState, load_dependent: Sequence[str]) -> dict[str, Any]:
    """The kept knobs a permanent edit is offered for: all but those decided under load."""
    return {name: value for name, value in state.kept.items() if name not in load_dependent}


def _central(runs: list[dict[str, Any]], per_sample: bool) -> float | None:
    key = "sample_s" if per_sample else "step_s"
    return geometric_median([r[key] for r in runs if not r["failed"]])


def summary_line(result: TuneResult) -> str:
    """One sentence saying what was kept, how fast it is and how that was measured: the same
    words on the console and in the JSON."""
    kept = ", ".join(f"{k}={v!r}" for k, v in result.kept.items())
    status = (result.confirmation or {}).get("status")
    if not result.kept:
        if result.noise.get("too_noisy"):
            return (f"nothing kept: the machine is too noisy to decide anything within the budget: "
                    f"{result.noise['too_noisy']} (only effects beyond that spread could have been decided)"
                    f"{_load_and_rerun(result)}")
        if (result.confirmation or {}).get("reason"):
            return f"nothing kept: the search's best was not confirmed: {result.confirmation['reason']}"
        return _nothing_kept(result)
    if result.confirmed:
        ci = f" (95% CI x{result.speedup_ci[0]:.2f}-x{result.speedup_ci[1]:.2f})" if result.speedup_ci else ""
        rounds = result.confirmation["rounds"]
        return (f"kept {kept}: x{result.speedup:.2f}{ci} {result.metric}, confirmed side by side over "
                f"{rounds} interleaved rounds against the unmodified script")
    estimate = f"x{result.speedup:.2f}" if result.speedup else "unknown"
    return f"kept {kept}: UNCONFIRMED, estimated {estimate} ({(result.confirmation or {}).get('reason', status)})"


def _nothing_kept(result: TuneResult) -> str:
    """Why nothing was kept when the search ran its trials: no knob measurably faster, or, when no
    trial could be decided (runs of one configuration disagreed), that nothing could be decided,
    the load seen and how to rerun."""
    tried = [t for t in result.trials if t["knob"] is not None]
    undecided = [t for t in tried if (t["verdict"] or {}).get("decided") is False]
    if not tried:
        return f"nothing kept: no knob was tried ({result.stop_reason or 'no knob applies'})"
    if len(undecided) < len(tried):
        text = "nothing kept: no knob made the script measurably faster side by side"
        return text + (f" ({len(undecided)} of {len(tried)} trials undecided: too noisy)" if undecided else "")
    which = "the only trial was" if len(tried) == 1 else f"each of the {len(tried)} trials was"
    return (f"nothing could be decided: {which} too noisy (runs of one configuration disagreed)"
            f"{_load_and_rerun(result)}")


def _load_and_rerun(result: TuneResult) -> str:
    """The load the runs saw and how to rerun, for a summary that could decide nothing."""
    load = (result.search.get("load") or {}).get("text")
    return (f"{'; ' + load if load else ''}. Rerun on a quieter machine, or with more rounds per trial "
            f"(--rounds 3) and a longer --time-budget; `torchdoctor bench --clock cpu` times a CPU-bound "
            f"statement by its CPU time, which other processes disturb less")


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
        data = loads_bounded(read_capped(path, MAX_RESULT_BYTES), RESULT_LIMITS)
    except OSError as exc:
        raise TuneInputError(f"cannot read tune result {path}: {exc.strerror or exc}") from None
    except (JsonBoundError, orjson.JSONDecodeError) as exc:
        raise TuneInputError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema_version") not in READABLE_SCHEMAS or "kept" not in data:
        raise TuneInputError(f"{path} is not a `torchdoctor tune --json` result "
                             f"(schema_version {' or '.join(map(str, READABLE_SCHEMAS))})")
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

