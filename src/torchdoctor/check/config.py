"""The check's options (`CheckOptions`): how strict the gate is, how each observation is timed,
and the rounds' `bench.Policy` (docs/check.md)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from torchdoctor.bench import Policy
from torchdoctor.observe import ObserveConfig

#: The rounds' policy when none is given: `torchdoctor check`'s defaults (--budget 300,
#: --max-rounds 400), which differ from `bench.Policy`'s own.
DEFAULT_POLICY = Policy(min_rounds=5, max_rounds=400, budget_s=300.0, min_effect=0.02, confidence=0.95,
                        aa_control=True, seed=0)


@dataclass(frozen=True, kw_only=True)
class CheckOptions:
    """How strict the gate is and how long it may measure (the CLI's options, docs/check.md).
    `policy` bounds the rounds (`budget_s`, `min_rounds`, `max_rounds`), sets the noise floor's
    least value (`min_effect`), the confidence over all looks, the A-vs-A control and the seed."""

    max_slowdown: float = 0.05
    max_memory_growth: float = 0.10
    policy: Policy = field(default_factory=lambda: DEFAULT_POLICY)
    warmup_steps: int = 3
    steps: int = 10
    timed_window_s: float = 0.5
    timeout_s: float = 600.0
    memory: bool = True
    locate: bool = True
    fork_server: bool = True
    same_cwd: bool = False

    def __post_init__(self) -> None:
        for name in ("max_slowdown", "max_memory_growth"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be a fraction in (0, 1), e.g. 0.05 for 5%; got {getattr(self, name)}")
        if not 0.0 <= self.policy.min_effect < self.max_slowdown:
            raise ValueError(f"min_effect must be in [0, max_slowdown), got {self.policy.min_effect}")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.timed_window_s < 0:
            raise ValueError(f"timed_window_s must be >= 0 (0: exactly --steps), got {self.timed_window_s}")
        ObserveConfig(warmup_steps=self.warmup_steps, timing_steps=self.steps)  # raises ValueError when off

    def observe_config(self, *, profile: bool = False) -> ObserveConfig:
        """One observation's window: `steps` timed after `warmup_steps`; with `profile`, a short timing
        window, then the profiler's (wait 1, warm-up 1, 3 steps recorded)."""
        if profile:
            return ObserveConfig(warmup_steps=self.warmup_steps, timing_steps=2, profile=True, memory=False,
                                 threads_probe=False)
        return ObserveConfig(warmup_steps=self.warmup_steps, timing_steps=self.steps, profile=False,
                             memory=self.memory, threads_probe=False)

    def planned(self, budget_left_s: float, round_s: float) -> Policy:
        """The rounds' policy once a pilot has shown what one round costs (`round_s`): as many rounds as
        the budget left holds at that pace, between `min_rounds` and `max_rounds`. Planned before the
        first round, so the looks' correction counts only looks that can happen; a short step thus
        gets the many rounds that the noise between processes (which more steps per observation do
        not reduce) needs, and a long one is not judged over looks it will never reach."""
        budget_left_s = max(budget_left_s, 1e-3)
        fit = int(budget_left_s // max(round_s, 1e-3))
        rounds = max(self.policy.min_rounds, min(self.policy.max_rounds, fit))
        return replace(self.policy, max_rounds=rounds, budget_s=budget_left_s)

    def settings(self) -> dict[str, Any]:
        """Every option by its CLI name, flat, in the order of the result's `settings` (JSON)."""
        policy = self.policy
        return {
            "max_slowdown": self.max_slowdown, "max_memory_growth": self.max_memory_growth,
            "budget_s": policy.budget_s, "warmup_steps": self.warmup_steps, "steps": self.steps,
            "timed_window_s": self.timed_window_s, "min_rounds": policy.min_rounds, "max_rounds": policy.max_rounds,
            "min_effect": policy.min_effect, "confidence": policy.confidence, "aa_control": policy.aa_control,
            "seed": policy.seed, "timeout_s": self.timeout_s, "memory": self.memory, "locate": self.locate,
            "fork_server": self.fork_server, "same_cwd": self.same_cwd,
        }  # fmt: skip
