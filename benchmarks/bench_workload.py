"""Shared by the bench_* studies: a matmul-loop step and a loop of A-vs-B comparisons.

The step is `n` matmuls of 128x128 float32 on one thread, n a multiple of 20 so that an
injected slowdown of 5% or 10% gives B exactly n * (1 + e) matmuls: extra work proportional to
the step, never a sleep.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections import Counter
from collections.abc import Callable

import torch

from torchdoctor.bench import Policy, Variant, compare_statements

SIZE = 128


def matmul_s() -> float:
    """Median time (s) of one 128x128 matmul on one thread, here and now."""
    torch.set_num_threads(1)
    x = torch.randn(SIZE, SIZE)
    times = []
    for _ in range(200):
        start = time.perf_counter()
        x @ x
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def make_step(n_matmuls: int) -> Callable[[], None]:
    x = torch.randn(SIZE, SIZE)

    def step() -> None:
        for _ in range(n_matmuls):
            x @ x

    return step


def matmuls_for(step_s: float) -> int:
    """A multiple of 20 matmuls taking about `step_s`."""
    return 20 * max(1, round(step_s / matmul_s() / 20))


def study(n_a: int, n_b: int, comparisons: int, policy: Policy, round_s: float, clock: str) -> list[dict]:
    """Run `comparisons` independent comparisons (seeds 0..) of an n_a-matmul vs an n_b-matmul step."""
    outcomes = []
    for i in range(comparisons):
        seeded = dataclasses.replace(policy, seed=i)
        start = time.perf_counter()
        result = compare_statements(
            [Variant("A", make_step(n_a)), Variant("B", make_step(n_b))], policy=seeded, round_s=round_s,
            clock=clock,
        )
        verdict = result.verdicts["B"]
        outcomes.append({
            "verdict": verdict.verdict, "ratio": verdict.ratio, "rounds": result.rounds,
            "wall_s": time.perf_counter() - start, "floor": result.noise_floor,
            "step_s": result.median_s("A"),
            "mde": verdict.min_detectable_effect, "stop": result.stop_reason,
        })
        print(f"  {i + 1:3d}/{comparisons} {verdict.verdict:22s} ratio {verdict.ratio:.3f} "
              f"[{verdict.ci_low:.3f}, {verdict.ci_high:.3f}] floor {result.noise_floor:.3f} "
              f"rounds {result.rounds:2d} ({result.stop_reason}) {outcomes[-1]['wall_s']:.1f} s", flush=True)
    return outcomes


def summarise(outcomes: list[dict], header: str) -> None:
    counts = Counter(o["verdict"] for o in outcomes)
    n = len(outcomes)
    print(f"\n{header}")
    print(f"  comparisons: {n}; verdicts: {dict(counts)}")
    print(f"  share 'slower': {counts['slower'] / n:.1%}; share claiming any difference: "
          f"{(counts['slower'] + counts['faster']) / n:.1%}")
    print(f"  median wall time per comparison: {statistics.median(o['wall_s'] for o in outcomes):.2f} s; "
          f"median rounds: {statistics.median(o['rounds'] for o in outcomes)}; "
          f"median noise floor: {statistics.median(o['floor'] for o in outcomes):.3f}; "
          f"median MDE: {statistics.median(o['mde'] for o in outcomes):.3f}; "
          f"median step of A: {statistics.median(o['step_s'] for o in outcomes) * 1e3:.2f} ms")


def base_arguments(parser) -> None:
    parser.add_argument("--comparisons", type=int, default=40)
    parser.add_argument("--step-ms", type=float, default=10.0)
    parser.add_argument("--round-s", type=float, default=0.05)
    parser.add_argument("--budget-s", type=float, default=15.0)
    parser.add_argument("--max-rounds", type=int, default=40)
    parser.add_argument("--no-aa", action="store_true", help="noise floor = min effect only")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
