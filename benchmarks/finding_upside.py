"""Every finding against the measured effect of its fix.

A finding claims an upside: the fraction of the step its fix wins back at most, so the step should
get up to 1/(1 - upside) times faster. For each script given (field scripts as `field/NAME`, zoo
workloads by name, each with its arguments):
1. `torchdoctor diagnose --json` once, with its default windows;
2. for every finding whose fix is a registered knob, an apply file with that knob alone: at the
   value the finding recommends where its evidence names one (`workers_needed`, `threads_in_fix`), else at the
   value tune would try first on this Record (`Knob.int_range(record).first` or the first of
   `Knob.choices(record)`); a finding whose knob does not apply, or whose value is the script's
   own, is reported as not measured;
3. the plain script and each apply file re-measured interleaved in rounds (benchmarks/
   remeasure.py: fresh processes, step times from the script's own steps, nothing of
   torchdoctor's observation loaded), every fix judged against the same plain runs.

Per finding: the claimed upside, the speed-up it implies, the measured speed-up with its CI and
verdict, and the direction: `agrees` (faster, as claimed), `no effect` (within the noise),
`slower` (the fix measured slower: a defect of the finding). Goal: no `slower` row.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/finding_upside.py [--rounds 5] [--steps 20]
        [--cases field/slow_getitem,data_few_workers] [--out rows.jsonl] [--script-args "--steps 260"]
    python benchmarks/finding_upside.py --table-from rows.jsonl
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
from field import RUNS as FIELD_RUNS
from field import SCRIPTS as FIELD_SCRIPTS
from remeasure import judge, remeasure, write_apply_file
from tune_zoo import GPU_WORKLOADS

from torchdoctor.bench import FASTER, SLOWER
from torchdoctor.finding import Finding
from torchdoctor.knobs import REGISTRY
from torchdoctor.record import Record
from torchdoctor.tune import TuneConfig
from torchdoctor.tune.claims import claimed_speedup
from torchdoctor.zoo import WORKLOADS as ZOO
from torchdoctor.zoo import workload_path

#: case -> (script, arguments): every field script with its original's command line, and every
#: zoo workload with a problem (a healthy one raises no finding to check).
CASES: dict[str, tuple[Path, list[str]]] = {
    **{f"field/{name}": (FIELD_SCRIPTS / f"{name}.py", args) for name, args in FIELD_RUNS.items()},
    **{name: (workload_path(name), []) for name, expected in ZOO.items() if expected is not None},
}
#: Cases that need a CUDA device (tune_zoo's GPU workloads): chosen by name only, never by default.
GPU_CASES: dict[str, tuple[Path, list[str]]] = {
    name: (script, args) for name, (script, args, _) in GPU_WORKLOADS.items()}
#: Evidence keys in which a finding names the value of its knob it recommends.
EVIDENCE_VALUE = {"num_workers": "workers_needed", "threads": "threads_in_fix"}


def diagnose(script: Path, args: list[str], work: Path) -> Record:
    """`torchdoctor diagnose` on the unmodified script, in a subprocess, with its default windows."""
    out = work / "record.json"
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "diagnose", "--json", str(out),
                           "--store", str(work / "runs.db"), "--", str(script), *args],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    if not out.exists():
        raise RuntimeError(f"diagnose wrote no Record (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return Record.load(out)


def fix_value(finding: Finding, record: Record) -> tuple[Any, str]:
    """The knob value that stands for the finding's fix and where it came from, or (None, why not).
    The finding's own value first (what it tells the user; within what `run --apply` accepts),
    else the value tune would try first; none where it is the script's own (the evidence names
    the script's value under the knob's name), as applying it would measure nothing."""
    knob = REGISTRY.get(finding.knob or "")
    if knob is None:
        return None, "no knob"
    evidence, key = finding.evidence, EVIDENCE_VALUE.get(knob.name)
    if key and key in evidence:
        value, source = min(evidence[key], knob.value_range()[1]), f"the finding's {key}"
    elif knob.applies(record):
        value = knob.int_range(record).first if knob.kind == "int" else knob.choices(record)[0]
        source = "tune's first value"
    else:
        return None, f"{knob.name}: does not apply here"
    if evidence.get(knob.name) == value:
        return None, f"{knob.name}={value!r} is the script's own"
    return value, source


def direction(verdict: str, decided: bool) -> str:
    """How the measurement reads against the claim (every finding claims the step gets faster)."""
    if not decided:
        return "undecided"
    return {FASTER: "agrees", SLOWER: "slower"}.get(verdict, "no effect")


def bench_case(case: str, rounds: int, steps: int, warmup: int, work: Path, more_args: list[str]
               ) -> list[dict[str, Any]]:
    """One row per finding of the case's diagnosis (the case's arguments, then `more_args`)."""
    script, args = {**CASES, **GPU_CASES}[case]
    args = [*args, *more_args]
    work.mkdir(parents=True, exist_ok=True)
    record = diagnose(script, args, work)
    for finding in record.findings:  # before the re-measurement, so that a run cut short still shows them
        print(f"{case}: {finding.id} upside {finding.upside:.0%} knob {finding.knob}: {finding.title}", flush=True)
    load_before = os.getloadavg()
    rows, variants = [], {"plain": None}
    for index, finding in enumerate(record.findings):
        row = {"case": case, "args": args, "rule": finding.id, "title": finding.title,
               "upside": finding.upside, "expected_speedup": claimed_speedup(finding.upside),
               "knob": finding.knob, "evidence": finding.evidence, "step_detection": record.step_detection,
               "diagnosed_step_s": record.summary.step_s}
        value, row["value_from"] = fix_value(finding, record)
        if value is not None:
            row["value"] = value
            name = f"{index}-{finding.id}"
            variants[name] = write_apply_file({row["knob"]: row["value"]}, work / f"{name}.json")
            row["variant"] = name
        rows.append(row)
    if len(variants) > 1:
        runs = remeasure(script, args, variants, rounds, steps, warmup, work)
        tolerance = TuneConfig().run_tolerance
        for row in rows:
            if "variant" in row:
                measured = judge(runs["plain"], runs[row["variant"]], tolerance)
                row.update(measured=measured, direction=direction(measured["verdict"]["verdict"],
                                                                  measured["verdict"]["decided"]))
    if not rows:  # a case without findings still has its row: nothing claimed, nothing to measure
        rows.append({"case": case, "args": args, "rule": None, "step_detection": record.step_detection,
                     "diagnosed_step_s": record.summary.step_s})
    for row in rows:
        row["load_average"] = [load_before, os.getloadavg()]
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The rows as the table in docs/field.md."""
    lines = ["| case | finding | claimed upside (speed-up) | fix applied alone | measured speed-up (95% CI), verdict "
             "| measured / claimed | direction | load (1 min) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        load = "-".join(f"{avg[0]:.1f}" for avg in r["load_average"])
        if r["rule"] is None:
            lines.append(f"| {r['case']} | no finding | - | - | - | - | - | {load} |")
            continue
        claim = f"{r['upside']:.0%} (x{r['expected_speedup']:.2f})"
        if "measured" in r:
            m = r["measured"]
            ci = "x%.2f-x%.2f" % tuple(m["speedup_ci"]) if m["speedup_ci"] else "no CI"
            fix, measured = f"{r['knob']}={r['value']!r}", f"x{m['speedup']:.2f} ({ci}), {m['verdict']['verdict']}"
            size = f"{m['speedup'] / r['expected_speedup']:.2f}"
        else:
            fix = r.get("value_from", "no knob")
            measured, size, r["direction"] = "-", "-", "not measured"
        lines.append(f"| {r['case']} | {r['rule']}: {r['title']} | {claim} | {fix} | {measured} | {size} "
                     f"| {r['direction']} | {load} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of: " + ", ".join(CASES))
    parser.add_argument("--rounds", type=int, default=5, help="re-measurement rounds")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per run")
    parser.add_argument("--warmup-steps", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="append each row as a JSON line")
    parser.add_argument("--table-from", type=Path, default=None, help="print the table of an --out file and exit")
    parser.add_argument("--omp-threads", default="1", help="OMP_NUM_THREADS for every run ('' leaves it unset)")
    parser.add_argument("--script-args", default="", help="more arguments for every case's script, e.g. '--steps 260' "
                        "for field scripts whose 60 steps are too few for --warmup-steps + --steps")
    options = parser.parse_args()
    if options.table_from:
        print(markdown_table([orjson.loads(line) for line in options.table_from.read_bytes().splitlines() if line]))
        return
    if options.omp_threads:
        os.environ["OMP_NUM_THREADS"] = options.omp_threads
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in options.cases.split(","):
            case_rows = bench_case(case, options.rounds, options.steps, options.warmup_steps,
                                   Path(tmp) / case.replace("/", "-"), shlex.split(options.script_args))
            rows += case_rows
            for row in case_rows:
                line = orjson.dumps(row)
                print(line.decode(), flush=True)
                if options.out:  # after each case, so a run cut short keeps what it measured
                    with options.out.open("ab") as f:
                        f.write(line + b"\n")
    print(markdown_table(rows))


if __name__ == "__main__":
    main()
