"""What one tuning session may do and how it judges a trial."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


#: The most timed steps a confirmation run is given for its window (`confirm_window_s`), which
#: bounds the Records tune stores (a step is ~200 bytes of JSON: 1 MB a run). It was 20x
#: `timing_steps`, and that cut the 1 s window of a 0.3 ms step to 0.12 s: on the zoo's
#: grad-inference loop the rounds' speed-ups then scattered twice as much (sd of their logs 0.086
#: against 0.037 with 3000-step windows, eight interleaved rounds each, medians x1.54 and x1.53).
CONFIRM_MAX_STEPS = 5000


@dataclass(kw_only=True, slots=True)
class TuneConfig:
    warmup_steps: int = 5
    """Steps each trial runs before its timing window (compilation and worker start-up)."""
    timing_steps: int = 30
    """Timed steps per trial: the samples each speed verdict is made of."""
    max_trials: int = 20
    """Trials after the baseline, at most."""
    time_budget_s: float | None = None
    """Stop starting trials once the next one would end after this many seconds (None: the
    default budget, `default_budget_s`). An explicit budget is also used: diminishing returns do
    not end the search while more than half of it is left."""
    default_budget_s: float = 1200.0
    """The budget when no `time_budget_s` is given: the search stops once another trial and the
    confirmation would end after it, and the output names it."""
    trial_timeout_s: float = 300.0
    """A trial running longer is stopped and marked failed ("timed out")."""
    min_effect: float = 0.02
    """Noise floor of the speed comparison: smaller relative differences never count as faster."""
    rounds: int = 2
    """Rounds per knob value: runs of the best configuration so far and of the candidate,
    interleaved A B B A (a run of the best configuration that just ran is reused as the first A)."""
    max_rounds: int = 4
    """Rounds at most when runs of one configuration disagree (one was disturbed): more rounds are
    run until two agree, up to this many."""
    confirm_rounds: int = 3
    """Rounds of the final confirmation (baseline and best configuration interleaved), whose
    ratio is the reported speed-up, at least. Reserved in the budget."""
    confirm_max_rounds: int = 12
    """Rounds of the confirmation at most: beyond `confirm_rounds`, rounds are added while runs
    of one side disagree, the speed-up is less precise than `confirm_precision` or its runs span
    less than `confirm_span_s`, budget permitting."""
    confirm_precision: float = 0.05
    """The confirmation goes on until the speed-up's 95% uncertainty (RunsVerdict.half_width:
    bootstrap CI and run-to-run scatter) is within this relative half-width."""
    confirm_window_s: float = 1.0
    """Each confirmation run times at least this long a window: a configuration whose steps are
    short gets more than `timing_steps` of them (`confirm_steps`). A short window gives a one-off
    event its full weight: on the zoo's worker_restart (2 ms steps) a DataLoader worker's ~10 ms
    garbage collection fell inside tune's 20-step window in every run and outside the bare script's,
    and the claim came out 0.84-0.87 of the re-measurement; over 250 steps the two measured alike
    (observed 2.34 ms, bare 2.45 ms a step, five interleaved rounds). The trials time the window
    of the baseline's pace too (its repeats are their numerics' reference): with 20 steps of the
    zoo's 0.45 ms grad-inference step, `inference_mode` measured x0.86 (x0.81-x0.91) in a trial and
    x1.16 re-measured over whole runs. 0: `timing_steps` only."""
    confirm_span_s: float = 60.0
    """The confirmation's runs last at least this long in all (rounds are added until they do): a
    speed-up measured within half a minute holds for that half minute. On a shared 2-core machine
    the ratio wanders from one minute to the next far beyond the interval its rounds give:
    consecutive 5-round re-measurements of the zoo's loop optimizer (about 45 s each) gave x2.00 to
    x2.71, each within +-3%; 10-round ones (about 80 s) x2.38 to x2.47. 0: no span asked."""
    run_tolerance: float = 0.15
    """Two runs of one configuration agree when their median step times are within this; a
    slower run outside it is disturbed (another process took the cores): the median over runs
    outweighs it, and no decision rests on it alone."""
    script_seed: int | None = 0
    """Seed of Python's random, NumPy and torch in every run, set before the script starts (a
    script that seeds itself wins); None: not seeded."""
    accept_unchecked_numerics: bool = False
    """Keep a precision- or compile-changing knob even when its numerics cannot be checked (no
    loss and no model output seen); the result marks such knobs."""
    max_memory_growth: float = 0.10
    """A faster knob raising the step's peak memory (GPU memory in use, else resident memory) by
    more than this share is not kept; its trial says by how much."""
    min_gain: float = 0.02
    """Diminishing returns: a knob that improves the best step time by less counts as no gain."""
    patience: int = 4
    """Stop after this many knobs in a row gave no gain."""
    int_trials: int = 3
    """Optuna trials per integer knob (workers, prefetch, threads, batch size)."""
    repeat_baseline: bool = True
    """Run the baseline twice: the difference is the script's own run-to-run noise (reported, and
    it widens the numerics tolerance)."""
    allow_batch_size: bool = False
    """Also try the batch size (it changes the training dynamics)."""
    only: list[str] = field(default_factory=list)
    """Try only these knobs (empty: every knob that applies)."""
    nproc_per_node: int | None = None
    """Run every trial through torchrun with this many ranks (None: one plain process)."""
    torchrun_args: list[str] = field(default_factory=list)
    """Extra torchrun options passed through (e.g. --nnodes, --rdzv-endpoint)."""
    seed: int = 0
    """Seed of Optuna's sampler and of the bootstrap."""

    def __post_init__(self) -> None:
        if self.torchrun_args and self.nproc_per_node is None:
            raise ValueError("--torchrun-arg needs --nproc-per-node (the options are passed to torchrun)")
        if self.max_trials < 1:
            raise ValueError(f"max_trials must be >= 1, got {self.max_trials}")
        if self.timing_steps < 5:
            raise ValueError(f"timing_steps must be >= 5 for a speed verdict, got {self.timing_steps}")
        if self.warmup_steps < 2:  # step detection settles during the first two (ObserveConfig)
            raise ValueError(f"warmup_steps must be >= 2, got {self.warmup_steps}")
        if not 1 <= self.rounds <= self.max_rounds:
            raise ValueError(f"need 1 <= rounds <= max_rounds, got {self.rounds} and {self.max_rounds}")
        if not 1 <= self.confirm_rounds <= self.confirm_max_rounds:
            raise ValueError(f"need 1 <= confirm_rounds <= confirm_max_rounds, got {self.confirm_rounds} and "
                             f"{self.confirm_max_rounds}")
        if not 0 < self.confirm_precision < 1:
            raise ValueError(f"confirm_precision must be in (0, 1), got {self.confirm_precision}")
        if not (math.isfinite(self.confirm_window_s) and self.confirm_window_s >= 0):
            raise ValueError(f"confirm_window_s must be a number of seconds >= 0, got {self.confirm_window_s}")
        if not (math.isfinite(self.confirm_span_s) and self.confirm_span_s >= 0):
            raise ValueError(f"confirm_span_s must be a number of seconds >= 0, got {self.confirm_span_s}")
        if not 0 < self.run_tolerance < 1:
            raise ValueError(f"run_tolerance must be in (0, 1), got {self.run_tolerance}")
        if not (math.isfinite(self.max_memory_growth) and self.max_memory_growth >= 0):
            raise ValueError(f"max_memory_growth must be a share >= 0, got {self.max_memory_growth}")
        if self.int_trials < 1:
            raise ValueError(f"int_trials must be >= 1, got {self.int_trials}")
        if self.nproc_per_node is not None and self.nproc_per_node < 1:
            raise ValueError(f"nproc_per_node must be >= 1, got {self.nproc_per_node}")
        if self.time_budget_s is not None and not (math.isfinite(self.time_budget_s) and self.time_budget_s > 0):
            raise ValueError(f"time_budget_s must be a number of seconds > 0, got {self.time_budget_s}")
        if not (math.isfinite(self.default_budget_s) and self.default_budget_s > 0):
            raise ValueError(f"default_budget_s must be a number of seconds > 0, got {self.default_budget_s}")
        if not (math.isfinite(self.trial_timeout_s) and self.trial_timeout_s > 0):
            raise ValueError(f"trial_timeout_s must be a number of seconds > 0, got {self.trial_timeout_s}")

    @property
    def budget_s(self) -> float:
        """The time budget in force: the user's, else the default."""
        return self.time_budget_s if self.time_budget_s is not None else self.default_budget_s

    def confirm_steps(self, step_s: float | None) -> int:
        """Timed steps of a confirmation run of a configuration whose steps take `step_s` (its
        trials' pace): enough for `confirm_window_s`, never fewer than `timing_steps`, nor more
        than CONFIRM_MAX_STEPS for the window's sake. A script that ends sooner is timed to its end."""
        if not step_s or step_s <= 0 or not self.confirm_window_s:
            return self.timing_steps
        wanted = math.ceil(self.confirm_window_s / step_s)
        return max(self.timing_steps, min(wanted, CONFIRM_MAX_STEPS))
