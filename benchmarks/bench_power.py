"""Power: B does `--effect` more work per step (e.g. 0.10 = 10% more matmuls); share detected.

    .venv/bin/python benchmarks/bench_power.py --effect 0.10 --comparisons 40 --step-ms 10
    .venv/bin/python benchmarks/bench_power.py --effect 0.05 --comparisons 40 --step-ms 10
"""

from __future__ import annotations

import argparse

from bench_workload import base_arguments, matmuls_for, study, summarise

from torchdoctor.bench import Policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    base_arguments(parser)
    parser.add_argument("--effect", type=float, default=0.10)
    args = parser.parse_args()
    n_a = matmuls_for(args.step_ms / 1000)
    n_b = round(n_a * (1 + args.effect))
    print(f"power: A {n_a} matmuls, B {n_b} (+{n_b / n_a - 1:.1%} work), {args.comparisons} comparisons")
    policy = Policy(max_rounds=args.max_rounds, budget_s=args.budget_s, aa_control=not args.no_aa)
    outcomes = study(n_a, n_b, args.comparisons, policy, args.round_s, args.clock)
    summarise(outcomes, f"power at +{args.effect:.0%} (goal at 10%: share 'slower' >= 90%)")


if __name__ == "__main__":
    main()
