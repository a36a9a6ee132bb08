"""Recall and false alarms of `torchdoctor diagnose` on a blind corpus.

A corpus (`tests/field/blind/`, the default, or the held-out `tests/field/blind_holdout/`,
`tests/field/blind_third/`, `tests/field/blind_fourth/` and `tests/field/blind_fifth/`) holds
one small CPU script per performance problem reported in a public thread (`problems/NAME.py`),
the same script with the problem fixed (`healthy/NAME.py`) and `manifest.json`, whose `expect`
keywords were written from each problem before torchdoctor was run on it. Each script runs
once, one after the other, under

    python -m torchdoctor diagnose --no-save --json RECORD -- SCRIPT

Scored per problem:
- found at rank R: the first finding whose title, explanation, fix text or fix code (lowercased,
  the script's own file name blanked: citing `kv_cache_concatenation.py:34` does not say
  "concatenation") contains one of the problem's `expect` keywords is the R-th finding; the problem counts as
  found when R <= 2 (recall = found / problems run);
- twin alarms: findings on the healthy twin whose `upside` is 0.10 or more (a claim that at least
  10% of the fixed script's step could still be won back);
- no findings: runs whose Record has an empty `findings` list.

    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/blind_corpus.py [-k NAME] [--jobs 1]
        [--timeout 400] [--keep DIR] [--out results.md] [--corpus tests/field/blind_holdout]
        [--only healthy|problems]

`-k` keeps the problems whose name contains any of the given substrings (repeatable); `--only healthy` runs the twins alone (no recall), `--only problems`
the problems alone (no false alarms). Only
sequential runs are supported (`--jobs 1`): the scripts measure step time, and two diagnoses
sharing the cores would disturb each other's findings.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = ROOT / "tests" / "field" / "blind"
ALARM_UPSIDE = 0.10
FOUND_WITHIN = 2


@dataclass(frozen=True)
class Run:
    """One diagnosis: the Record's findings, or why there is none."""

    findings: tuple[dict, ...]
    seconds: float
    error: str | None


def load_manifest(corpus: Path, filters: list[str]) -> list[dict]:
    """The manifest's problems, kept when their name contains any filter (all without filters)."""
    problems = json.loads((corpus / "manifest.json").read_text())["problems"]
    return [p for p in problems if not filters or any(f in p["name"] for f in filters)]


def diagnose(script: Path, record: Path, timeout: float) -> Run:
    """Run `torchdoctor diagnose` on one script and read the findings of its Record."""
    cmd = [sys.executable, "-m", "torchdoctor", "diagnose", "--no-save", "--json", str(record),
           "--", str(script)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=script.parent, capture_output=True, text=True,
                              timeout=timeout, env=os.environ.copy())
    except subprocess.TimeoutExpired:
        return Run((), time.perf_counter() - start, f"timed out after {timeout:.0f} s")
    seconds = time.perf_counter() - start
    if not record.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return Run((), seconds, f"no Record (exit {proc.returncode}): {tail[0][:120]}")
    findings = json.loads(record.read_text()).get("findings") or []
    return Run(tuple(findings), seconds, None)


def finding_text(finding: dict, script: str = "") -> str:
    """The lowercased text a keyword is looked for in: title, explanation, fix text and code, with
    the script's own name (`script`, as in `NAME.py:12`) blanked: a finding that only cites the
    line of `broadcast_pairwise_distance.py` has not said "pairwise distance"."""
    fix = finding.get("fix") or {}
    parts = [finding.get("title"), finding.get("explanation"), fix.get("text"), fix.get("code")]
    text = " ".join(p for p in parts if isinstance(p, str)).lower()
    return text.replace(script.lower(), "SCRIPT") if script else text


def found_rank(findings: tuple[dict, ...], expect: list[str], script: str = "") -> int | None:
    """1-based rank of the first finding naming one of the keywords (the script's own name
    blanked, `finding_text`); None when none does."""
    for rank, finding in enumerate(findings, 1):
        text = finding_text(finding, script)
        if any(k.lower() in text for k in expect):
            return rank
    return None


def alarms(findings: tuple[dict, ...]) -> list[str]:
    """`ID (upside)` of each finding claiming at least ALARM_UPSIDE of the step."""
    return [f"{f.get('id')} ({f.get('upside', 0):.0%})" for f in findings
            if (f.get("upside") or 0) >= ALARM_UPSIDE]


def top_two(run: Run) -> str:
    """The first two findings as `ID: title`, or the run's error."""
    if run.error:
        return f"error: {run.error}"
    if not run.findings:
        return "no findings"
    return "<br>".join(f"{f.get('id')}: {f.get('title')}" for f in run.findings[:2])


def cell(text: str) -> str:
    """Text made safe for one Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def score(problem: dict, sick: Run, twin: Run) -> dict:
    """One table row: rank, top two findings of the problem, alarms on the twin."""
    rank = None if sick.error else found_rank(sick.findings, problem["expect"], problem["name"])
    return {
        "name": problem["name"], "rank": rank,
        "found": rank is not None and rank <= FOUND_WITHIN,
        "sick_top": top_two(sick), "sick_error": sick.error is not None,
        "sick_empty": not sick.error and not sick.findings,
        "twin_alarms": [] if twin.error else alarms(twin.findings),
        "twin_top": top_two(twin), "twin_error": twin.error is not None,
        "twin_empty": not twin.error and not twin.findings,
        "seconds": sick.seconds + twin.seconds,
    }


def table(rows: list[dict]) -> str:
    """The per-script Markdown table."""
    lines = ["| script | found at rank | top two findings (problem) | twin alarms (upside >= 10%) "
             "| top two findings (twin) |", "|---|---|---|---|---|"]
    for r in rows:
        rank = "-" if r["rank"] is None else str(r["rank"])
        mark = "yes" if r["found"] else "no"
        alarm = ", ".join(r["twin_alarms"]) or "none"
        lines.append(f"| {r['name']} | {rank} ({mark}) | {cell(r['sick_top'])} | {cell(alarm)} "
                     f"| {cell(r['twin_top'])} |")
    return "\n".join(lines)


def summary(rows: list[dict]) -> str:
    """Headline figures over the rows run."""
    n = len(rows)
    found = sum(r["found"] for r in rows)
    alarmed = sum(bool(r["twin_alarms"]) for r in rows)
    empty_sick = sum(r["sick_empty"] for r in rows)
    empty_twin = sum(r["twin_empty"] for r in rows)
    errors = sum(r["sick_error"] + r["twin_error"] for r in rows)
    return (f"recall (problem among the first {FOUND_WITHIN} findings): {found} of {n}\n"
            f"healthy twins with a false alarm (a finding with upside >= {ALARM_UPSIDE:.0%}): "
            f"{alarmed} of {n}\n"
            f"no findings: {empty_sick} of {n} problems, {empty_twin} of {n} twins\n"
            f"runs without a Record: {errors}")


NOT_RUN = Run((), 0.0, "not run")


def run_corpus(corpus: Path, problems: list[dict], timeout: float, keep: Path,
               only: str | None = None) -> list[dict]:
    """Diagnose every problem and its twin (or only the ones of `only`: 'problems' or
    'healthy'), one after the other, printing progress."""
    rows = []
    for problem in problems:
        name = problem["name"]
        sick = NOT_RUN if only == "healthy" else \
            diagnose(corpus / "problems" / f"{name}.py", keep / f"{name}.problem.json", timeout)
        twin = NOT_RUN if only == "problems" else \
            diagnose(corpus / "healthy" / f"{name}.py", keep / f"{name}.healthy.json", timeout)
        rows.append(score(problem, sick, twin))
        r = rows[-1]
        print(f"{name}: rank {r['rank']}, twin alarms {r['twin_alarms'] or 'none'} "
              f"({r['seconds']:.0f} s)", file=sys.stderr, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-k", action="append", default=[], help="name substring (repeatable)")
    parser.add_argument("--jobs", type=int, default=1, help="parallel diagnoses (only 1)")
    parser.add_argument("--timeout", type=float, default=400.0, help="seconds per diagnosis")
    parser.add_argument("--keep", type=Path, help="folder for the Records (default: temporary)")
    parser.add_argument("--out", type=Path, help="also write the table and summary here")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS,
                        help="corpus folder (problems/, healthy/, manifest.json)")
    parser.add_argument("--only", choices=("problems", "healthy"),
                        help="run only the problems or only the healthy twins")
    args = parser.parse_args()
    if args.jobs != 1:
        parser.error("only --jobs 1 is supported: parallel diagnoses disturb each other's timings")
    if not (args.corpus / "manifest.json").is_file():
        parser.error(f"{args.corpus} has no manifest.json")
    problems = load_manifest(args.corpus, args.k)
    if not problems:
        parser.error(f"no problem name contains any of {args.k}")
    with tempfile.TemporaryDirectory() as tmp:
        keep = args.keep or Path(tmp)
        keep.mkdir(parents=True, exist_ok=True)
        rows = run_corpus(args.corpus.resolve(), problems, args.timeout, keep, args.only)
    report = f"{table(rows)}\n\n{summary(rows)}\n"
    print(report)
    if args.out:
        args.out.write_text(report)


if __name__ == "__main__":
    main()
