"""How much slower than alone a healthy script's step runs its operators: the calibration of the
accounting's HEALTHY_ALONE (accounting/build.py).

    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/alone_calibration.py KEEP_DIR [KEEP_DIR ...]

KEEP_DIR: the `--keep` folder of a benchmarks/blind_corpus.py run. Reads the healthy twins'
Records (`NAME.healthy.json`) only: scripts with no known problem, so how far below its speed alone
an operator of theirs runs is what a healthy step does, not a cost a fix wins back. Recomputes the
accounting of each with this checkout's code and prints, per bound (compute, memory), how many
replayed operator groups there are and the deciles of their `alone_fraction` (the operator's time
alone on the same inputs, over its time in the step).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from torchdoctor.accounting import account_record
from torchdoctor.accounting.build import cost_centre
from torchdoctor.probe_values import OP_COSTS
from torchdoctor.record import Record


def alone_fractions(keep_dirs: list[Path]) -> dict[str, list[float]]:
    """{bound: [alone_fraction, ...]} over every replayed operator group of every healthy twin's
    Record (the operator-costs probe's groups, judged by this checkout's accounting)."""
    out: dict[str, list[float]] = {}
    for folder in keep_dirs:
        for path in sorted(folder.glob("*.healthy.json")):
            record = Record.from_dict(json.loads(path.read_text()))
            costs = OP_COSTS.of(record) or {}
            accounting = account_record(record)
            if not costs.get("complete") or accounting is None or accounting.busy:
                continue
            peaks = costs.get("peaks") or {}
            for op in costs.get("ops") or []:
                centre = cost_centre(op, peaks.get("flops_per_s") or {}, peaks.get("bytes_per_s"), accounting.step_s)
                if centre.alone_fraction is not None:
                    out.setdefault(centre.bound, []).append(centre.alone_fraction)
    return out


def main() -> None:
    fractions = alone_fractions([Path(p) for p in sys.argv[1:]])
    print("| bound | operator groups | deciles of the time alone over the time in the step |")
    print("|---|---|---|")
    for bound, values in sorted(fractions.items()):
        deciles = statistics.quantiles(values, n=10) if len(values) > 9 else []
        print(f"| {bound} | {len(values)} | {', '.join(f'{d:.3f}' for d in deciles)} |")


if __name__ == "__main__":
    main()
