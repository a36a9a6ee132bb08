"""False positives: A-vs-A comparisons (the same step twice); goal: at most 5% claim a difference.

    .venv/bin/python benchmarks/bench_false_positives.py --comparisons 40 --step-ms 10
"""

from __future__ import annotations

import argparse

from bench_workload import base_arguments, matmuls_for, study, summarise

from torchdoctor.bench import Policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    base_arguments(parser)
    args = parser.parse_args()
    n = matmuls_for(args.step_ms / 1000)
    print(f"A-vs-A: {n} matmuls per step (~{args.step_ms:g} ms), {args.comparisons} comparisons")
    policy = Policy(max_rounds=args.max_rounds, budget_s=args.budget_s, aa_control=not args.no_aa)
    outcomes = study(n, n, args.comparisons, policy, args.round_s, args.clock)
    summarise(outcomes, "false positives (goal: share claiming any difference <= 5%)")


if __name__ == "__main__":
    main()
