"""The speed-of-light accounting in the terminal: MFU, the waterfall from the ideal step to the
measured one (each slice explained by a finding or marked unexplained, with its operators and the
script's line), and, when no rule fired, what was checked and why the largest cost centres are
expected. Operator names and paths come from the Record: printed through report/safe_text.py."""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from torchdoctor.accounting import Accounting, CostCentre
from torchdoctor.accounting.explain import EXPECTED, MATTERS, unexplained
from torchdoctor.report.format import fmt_rate, fmt_seconds, fmt_shares
from torchdoctor.report.safe_text import cell, plain


def mfu_line(accounting: Accounting) -> Text:
    """'MFU 12.3%: 4.1 GFLOP/s achieved, fp32 peak 31.1 GFLOP/s (measured)' or why there is none."""
    peaks = ", ".join(f"{d} peak {fmt_rate(v, 'FLOP/s')}" for d, v in sorted((accounting.peak_flops_per_s or {}).items()))
    if accounting.mfu is not None:
        return plain(f"MFU {100 * accounting.mfu:.1f}%: {fmt_rate(accounting.achieved_flops_per_s, 'FLOP/s')} "
                     f"achieved, {peaks} (measured on this machine)", "bold")
    flops = fmt_rate(accounting.flops_per_step, "FLOP") if accounting.flops_per_step else "no FLOPs counted"
    return plain(f"MFU not computed ({flops} per step; {peaks or 'no peak measured'})", "bold")


def waterfall_table(accounting: Accounting) -> Table:
    """The slices with their time per step and their share; the shares add up to 100%. Empty slices
    (no time at all) are left out."""
    table = Table(title=f"Speed of light: the {fmt_seconds(accounting.step_s)} step, slice by slice",
                  title_justify="left")
    table.add_column("slice", overflow="fold")
    table.add_column("per step", justify="right", overflow="fold")
    table.add_column("share", justify="right", overflow="fold")
    table.add_column("", overflow="fold")
    shares = fmt_shares([s.share for s in accounting.slices])
    for s, share in zip(accounting.slices, shares):
        if s.seconds <= 0:
            continue
        state = _state(s.kind, s.share, s.explained_by, s.kind in {u.kind for u in unexplained(accounting)})
        table.add_row(cell(s.label), fmt_seconds(s.seconds), share, state)
    return table


def _state(kind: str, share: float, explained_by: tuple[str, ...], is_unexplained: bool) -> Text:
    if kind == "ideal":
        return Text("speed of light", style="green")
    if kind in EXPECTED:
        return Text("no peak to weigh", style="dim")
    if is_unexplained:
        return Text("unexplained", style="bold yellow") + cell(f" ({explained_by[0]})" if explained_by else "")
    if explained_by:
        return cell(", ".join(explained_by), "cyan")
    return Text("small" if share < MATTERS else "expected", style="dim")


def centre_line(c: CostCentre) -> Text:
    """'92.0% in aten::mm (fp32 [64, 256]x[256, 512]) at train.py:12 (forward): compute-bound at 71%
    of this machine's fp32 peak: healthy'."""
    where = f" at {c.source}" if c.source else ""
    what = " ".join(part for part in (c.dtype, c.shapes) if part != "-")
    return plain(f"{100 * c.share:.1f}% in {c.name}{f' ({what})' if what else ''}{where}: {c.why}", limit=300)


def unexplained_lines(accounting: Accounting) -> list[RenderableType]:
    """Each unexplained slice that matters, with its largest operators below their speed of light."""
    out: list[RenderableType] = []
    for s in unexplained(accounting):
        out.append(plain(f"unexplained: {s.label}, {100 * s.share:.1f}% of the step", "yellow"))
        out.extend(Text("  ") + centre_line(c) for c in s.ops[:3])
    return out


def accounting_renderables(accounting: Accounting) -> list[RenderableType]:
    """MFU, the waterfall, the unexplained slices and the notes."""
    notes = [plain(f"note: {n}", "dim") for n in accounting.notes]
    return [mfu_line(accounting), waterfall_table(accounting), *unexplained_lines(accounting), *notes]


def earned_healthy(accounting: Accounting | None, rules_checked: int) -> list[RenderableType]:
    """What a report without findings says: what was checked and why the largest cost centres are
    expected; without an accounting, that nothing beyond the rules was checked."""
    head = plain(f"no findings: {rules_checked} rules checked, none found a bottleneck it knows", "green")
    if accounting is None:
        return [head, plain("no speed-of-light accounting: the largest costs were not weighed", "yellow")]
    lines: list[RenderableType] = [head, plain("the largest cost centres, and how near its speed of light each runs:")]
    lines.extend(Text("  ") + centre_line(c) for c in accounting.cost_centres)
    if not accounting.cost_centres:
        lines.append(plain("  no operator was profiled: the slices above are the whole account", "dim"))
    return lines
