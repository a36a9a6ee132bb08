"""The rounds of a comparison. Interleaved (a git ref, another interpreter): one pilot per side,
then `bench.run_interleaved` rounds of A, B and A again in a seeded random order, stopped by the
gate (`gate.gate_settled`) at the first look that settles it. Against a stored baseline: rounds of B
alone, judged unpaired against the stored observations at the same looks."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from torchdoctor.bench import RoundInfo, Verdict, compare_samples, run_interleaved
from torchdoctor.bench.adaptive import look_schedule
from torchdoctor.check.comparisons import GATE_MEASURES, choose_metric, metric_from_verdict, secondary_metrics
from torchdoctor.check.conclude import conclude
from torchdoctor.check.context import CheckContext
from torchdoctor.check.decisions import UNDECIDED
from torchdoctor.check.figures import fingerprint, fingerprint_differences, observation_figures
from torchdoctor.check.gate import GateLook, gate_settled, time_gate
from torchdoctor.check.runner import Runner
from torchdoctor.check.window import keep_steps, lengthen_window
from torchdoctor.environment import Environment
from torchdoctor.record import Record


def interleaved(context: CheckContext, runner: Runner) -> None:
    """Pilots, interleaved rounds, the verdict; on a regression, where it lives."""
    result, round_s = context.result, _pilots(context, runner)
    options = context.options
    policy = options.planned(options.policy.budget_s - context.elapsed(), round_s)
    result.planned_rounds = policy.max_rounds
    looks = look_schedule(policy)
    look_conf = 1.0 - (1.0 - options.policy.confidence) / len(looks)  # as run_interleaved's, one comparison

    def on_round(info: RoundInfo) -> None:
        result.rounds = info.rounds_done
        context.progress.round(info, context.elapsed(), options.policy.budget_s)

    bench = run_interleaved(runner.measure, ["A", "B"], policy=policy, on_round=on_round,
                            settled=gate_settled(options.max_slowdown, look_conf, options.policy.confidence),
                            stop_on_interrupt=True)
    result.rounds, result.stop_reason, result.aa_ratio = bench.rounds, bench.stop_reason, bench.aa_ratio
    result.samples_s = bench.samples_s
    result.warnings.extend(bench.warnings)
    look = GateLook(options.max_slowdown, bench.look_confidence, options.policy.confidence)
    time_metric = metric_from_verdict(GATE_MEASURES[runner.metric], bench.verdicts["B"], bench.samples_s["A"],
                                      bench.samples_s["B"], look)
    time_metric.note = (f"95% CI over all {len(looks)} looks (each look at {100 * bench.look_confidence:.2f}%); "
                        f"paired by round; A-vs-A {_ratio_text(bench.aa_ratio)}")
    a_figures, b_figures = runner.figures["A"][:], runner.figures["B"][:]  # A and A (again): both are A
    result.metrics = [time_metric, *secondary_metrics(options, a_figures, b_figures, runner.metric)]
    conclude(context, runner, a_figures, b_figures)


def _pilots(context: CheckContext, runner: Runner) -> float:
    """One unmeasured observation per side (A's sets the window the rounds time, B's tries it); the
    gate's metric chosen from them; returns what one round will cost, in seconds."""
    pilots: dict[str, Record] = {}
    pilot_s: dict[str, float] = {}
    lengthened = False
    for name in ("A", "B"):
        context.progress.phase(f"pilot run of {name} ({runner.sides[name].label})")
        start = time.monotonic()
        pilots[name] = runner.observe(name, purpose="pilot")
        pilot_s[name] = time.monotonic() - start
        if name == "A":
            lengthened = lengthen_window(context, pilots["A"])
    _note_envs(context, pilots["A"], pilots["B"])
    if lengthened and len(pilots["B"].steps) < context.options.steps:
        keep_steps(context, pilots["B"])
    fig_a, fig_b = observation_figures(pilots["A"]), observation_figures(pilots["B"])
    runner.metric = context.result.gate_metric = choose_metric(context.result, fig_a, fig_b)
    extra_a_s = (context.options.steps - len(pilots["A"].steps)) * (fig_a["step_s"] or 0.0)  # A's pilot timed fewer
    return (pilot_s["A"] + extra_a_s) * (2 if context.options.policy.aa_control else 1) + pilot_s["B"]


def _ratio_text(value: float | None) -> str:
    return "not measured (--no-aa)" if value is None else f"ratio {value:.4f}"


def _note_envs(context: CheckContext, a: Record, b: Record) -> None:
    result = context.result
    fa, fb = fingerprint(Environment.or_empty(a.env)), fingerprint(Environment.or_empty(b.env))
    result.env = {"a": fa, "b": fb, "differences": fingerprint_differences(fa, fb)}
    result.a.setdefault("torch", fa.get("torch"))
    result.b.setdefault("torch", fb.get("torch"))


@dataclass(slots=True)
class _Unpaired:
    """Rounds of B judged against stored samples: at each look with the looks' corrected confidence."""

    stored: list[float]
    floor: float
    look_confidence: float
    seed: int
    samples: list[float]

    def verdict(self) -> Verdict:
        return compare_samples(self.stored, self.samples, min_effect=min(self.floor, 0.99),
                               confidence=self.look_confidence, seed=self.seed)


def against_stored(context: CheckContext, runner: Runner, stored: list[dict[str, Any]], *, floor: float,
                   round_s: float) -> None:
    """Rounds of B alone, judged unpaired against the `stored` figures at the bench's looks with the
    noise `floor`; the verdict, metrics and decision (`round_s`: what one observation of B costs)."""
    options, result = context.options, context.result
    policy = options.planned(options.policy.budget_s - context.elapsed(), round_s)
    result.planned_rounds = policy.max_rounds
    looks = look_schedule(policy)
    judge = _Unpaired([f[runner.metric] for f in stored if f.get(runner.metric)], floor,
                      1.0 - (1.0 - options.policy.confidence) / len(looks), options.policy.seed, [])
    result.stop_reason = _rounds_of_b(context, runner, judge, looks, policy.budget_s)
    verdict = judge.verdict()
    result.samples_s = {"baseline": judge.stored, "B": judge.samples}
    look = GateLook(options.max_slowdown, judge.look_confidence, options.policy.confidence)
    time_metric = metric_from_verdict(GATE_MEASURES[runner.metric], verdict, judge.stored, judge.samples, look)
    time_metric.note = (f"95% CI over all {len(looks)} looks; unpaired against the stored observations; noise floor "
                        "= max(--min-effect, the baseline's own half-to-half difference)")
    result.metrics = [time_metric, *secondary_metrics(options, stored, runner.figures["B"], runner.metric)]
    conclude(context, runner, stored, runner.figures["B"])


def _rounds_of_b(context: CheckContext, runner: Runner, judge: _Unpaired, looks: list[int], budget_s: float) -> str:
    """Observe B into `judge.samples` until a look settles the gate, the rounds or `budget_s` run
    out, or a stop; returns the stop reason."""
    options, start = context.options, time.monotonic()
    try:
        for done in range(1, looks[-1] + 1):
            judge.samples.append(runner.measure("B"))
            context.result.rounds = done
            elapsed = time.monotonic() - start
            context.progress.round(RoundInfo(done, looks[-1], elapsed, budget_s), context.elapsed(),
                                   options.policy.budget_s)
            if done in looks and time_gate(judge.verdict(), options.max_slowdown, final=False,
                                           look_confidence=judge.look_confidence,
                                           confidence=options.policy.confidence) != UNDECIDED:
                return "settled"
            if done < looks[-1] and elapsed * (done + 1) / done > budget_s:
                return "budget"
    except KeyboardInterrupt:
        return "interrupted"
    return "max_rounds"

