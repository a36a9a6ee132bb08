"""Cost: wall time to reach a verdict (warm-up included), default policy, A-vs-A and +10%.

    .venv/bin/python benchmarks/bench_cost.py --step-ms 10 --comparisons 10 --round-s 0.1 --budget-s 60
    .venv/bin/python benchmarks/bench_cost.py --step-ms 1000 --comparisons 3 --round-s 0.1 --budget-s 120
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
    policy = Policy(max_rounds=args.max_rounds, budget_s=args.budget_s, aa_control=not args.no_aa)
    for label, n_b in (("A-vs-A", n), ("+10% work", round(n * 1.1))):
        print(f"cost, {label}: A {n} matmuls (~{args.step_ms:g} ms), B {n_b}")
        outcomes = study(n, n_b, args.comparisons, policy, args.round_s, args.clock)
        summarise(outcomes, f"cost for a ~{args.step_ms:g} ms step, {label}")


if __name__ == "__main__":
    main()
