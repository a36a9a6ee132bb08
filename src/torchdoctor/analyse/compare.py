"""Two Records side by side: the change in step time and what differs in env and configuration."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchdoctor.record import Record

#: Parts of the env that change from run to run without meaning anything.
_VOLATILE = ("cpu.hostname", "executable")


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': 1}} -> {'a.b': 1}; lists stay values."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


@dataclass(frozen=True, slots=True)
class RunComparison:
    a_id: str
    b_id: str
    a_step_s: float | None
    b_step_s: float | None
    verdict: dict[str, Any] | None  # torchdoctor.bench Verdict of B against A, over per-step times
    summary_rows: list[tuple[str, Any, Any]] = field(default_factory=list)
    env_diff: list[tuple[str, Any, Any]] = field(default_factory=list)
    config_diff: list[tuple[str, Any, Any]] = field(default_factory=list)

    @property
    def step_change(self) -> float | None:
        """Relative change of the median step time, B against A (-0.2 = 20% faster)."""
        if not self.a_step_s or self.b_step_s is None:
            return None
        return self.b_step_s / self.a_step_s - 1.0

    def to_dict(self) -> dict[str, Any]:
        def rows(items: list[tuple[str, Any, Any]]) -> list[dict[str, Any]]:
            return [{"key": k, "a": a, "b": b} for k, a, b in items]

        return {
            "schema_version": 1,
            "a": self.a_id,
            "b": self.b_id,
            "a_step_s": self.a_step_s,
            "b_step_s": self.b_step_s,
            "step_change": self.step_change,
            "verdict": self.verdict,
            "summary": rows(self.summary_rows),
            "env_diff": rows(self.env_diff),
            "config_diff": rows(self.config_diff),
        }


def _diff(a: dict[str, Any], b: dict[str, Any], skip: tuple[str, ...] = ()) -> list[tuple[str, Any, Any]]:
    fa, fb = flatten(a), flatten(b)
    keys = sorted(set(fa) | set(fb))
    return [(k, fa.get(k), fb.get(k)) for k in keys if fa.get(k) != fb.get(k) and not k.startswith(skip)]


def compare_records(a: Record, b: Record) -> RunComparison:
    from torchdoctor.bench import compare_samples

    a_steps = [s.wall_s for s in a.steps]
    b_steps = [s.wall_s for s in b.steps]
    verdict = compare_samples(a_steps, b_steps).to_dict() if a_steps and b_steps else None
    summary_keys = ("step_s", "samples_per_s", "data_wait_fraction", "forward_fraction",
                    "backward_fraction", "optimizer_fraction", "other_fraction")
    summary_rows = [(k, getattr(a.summary, k), getattr(b.summary, k)) for k in summary_keys]
    env_a = {k: v for k, v in a.env.items() if k != "system"}
    env_b = {k: v for k, v in b.env.items() if k != "system"}
    return RunComparison(
        a_id=a.run_id, b_id=b.run_id, a_step_s=a.summary.step_s, b_step_s=b.summary.step_s,
        verdict=verdict, summary_rows=summary_rows,
        env_diff=_diff(env_a, env_b, _VOLATILE),
        config_diff=_diff({"argv": a.argv, "script": a.script, **a.config},
                          {"argv": b.argv, "script": b.script, **b.config}),
    )
