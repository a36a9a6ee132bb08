"""Draw benchmark results as a table like `torch.utils.benchmark.Compare`, with the decision.

Rows: one per result (a size of a sweep, or one comparison). Columns: each variant's median
time, then for each non-baseline variant its ratio to the baseline, the ratio's CI and the
verdict, then the noise floor and the rounds measured. Labels and variant names are the user's
statements and are printed through report/safe_text.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from torchdoctor.bench import FASTER, SLOWER, TOO_FEW, UNCLEAR, BenchResult, Verdict
from torchdoctor.report.format import fmt_seconds
from torchdoctor.report.safe_text import cell, markup

_STYLE = {FASTER: "green", SLOWER: "red"}
_SHORT = {UNCLEAR: "no clear diff.", TOO_FEW: "too few samples"}


def bench_table(results: Sequence[BenchResult], *, title: str = "torchdoctor bench") -> Table:
    """A rich Table of `results`; all must compare the same variants."""
    baseline = results[0].baseline
    names = [baseline, *results[0].verdicts]
    caption = (
        "ratio = median(variant) / median(baseline), < 1 is faster; CI: bootstrap, at the per-look "
        "confidence; a win or loss needs the whole CI beyond the noise floor"
    )
    table = Table(title=markup(title), caption=caption)
    table.add_column("", style="bold", overflow="fold")
    for name in names:
        table.add_column(f"{markup(name, one_line=True)}\nmedian", justify="right", overflow="fold")
    for name in names[1:]:
        table.add_column(f"{markup(name, one_line=True)} / {markup(baseline, one_line=True)}\nratio [CI]",
                         justify="right", overflow="fold")
    table.add_column("noise\nfloor", justify="right", overflow="fold")
    table.add_column("rounds", justify="right", overflow="fold")
    for result in results:
        cells = [cell(result.label or "-")]
        cells += [fmt_seconds(result.median_s(name)) for name in names]
        cells += [_verdict_cell(result.verdicts[name]) for name in names[1:]]
        cells += [f"{result.noise_floor:.1%}", f"{result.rounds}\n{markup(result.stop_reason)}"]
        table.add_row(*cells)
    return table


def _verdict_cell(verdict: Verdict) -> str:
    word = _SHORT.get(verdict.verdict, verdict.verdict)
    if verdict.ci_low != verdict.ci_low:  # NaN: too few samples for an interval
        return f"{verdict.ratio:.3f} {word}"
    style = _STYLE.get(verdict.verdict)
    text = f"{verdict.ratio:.3f} [{verdict.ci_low:.3f}, {verdict.ci_high:.3f}]\n{word}"
    return f"[{style}]{text}[/{style}]" if style else text
