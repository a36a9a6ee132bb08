"""How many steps one observation times: more than `--steps` when steps are short, so that each
observation times about `--timed-window` seconds; back to `--steps` when the script ends sooner."""

from __future__ import annotations

import math
from dataclasses import replace

from torchdoctor.check.context import CheckContext
from torchdoctor.check.figures import observation_figures
from torchdoctor.record import Record

#: However short the step, an observation times at most this many times `--steps` steps.
MAX_STEPS_FACTOR = 10


def lengthen_window(context: CheckContext, pilot: Record) -> bool:
    """Time more than `--steps` steps per observation when the pilot's steps are short, so that each
    observation times about `--timed-window` seconds (at most MAX_STEPS_FACTOR x `--steps` steps);
    True when it did (the context's options and the result's settings then say how many).

    Measured on healthy_mlp (a 9 ms step, 2-core VM shared with other jobs, 30 observations each,
    fork server): the spread of one observation's median step (the sample then; sd of the log
    ratio of consecutive observations) was 0.49 with 10 timed steps and 0.28 with 40, for 2.2x the
    wall time of an observation (0.37 s and 0.80 s): the same precision in about 1.5x less time.
    Short steps are noisy one by one; the fixed cost of an observation (start, warm-up, memory
    step) is what longer windows spread. A long step keeps `--steps`."""
    options = context.options
    step_s = observation_figures(pilot)["step_s"]
    if not options.timed_window_s or not step_s:
        return False
    steps = min(options.steps * MAX_STEPS_FACTOR, max(options.steps, math.ceil(options.timed_window_s / step_s)))
    if steps == options.steps:
        return False
    _time_steps(context, steps)
    context.progress.phase(f"{steps} timed steps per observation ({1e3 * step_s:.1f} ms per step)")
    return True


def keep_steps(context: CheckContext, probe: Record) -> None:
    """The script ended before the lengthened window was full (`probe`): back to `--steps`, with a warning."""
    context.result.warnings.append(f"the script ended after {len(probe.steps)} timed steps, before the "
                                   f"{context.options.steps} planned for its short steps: each observation "
                                   f"times --steps {context.original_steps}")
    _time_steps(context, context.original_steps)


def _time_steps(context: CheckContext, steps: int) -> None:
    context.options = replace(context.options, steps=steps)
    context.result.settings = context.options.settings()
