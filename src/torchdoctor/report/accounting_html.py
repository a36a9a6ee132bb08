"""The speed-of-light accounting as the HTML report's section: plain strings for the template
(autoescaped there: operator names and paths come from the Record), the same figures and words as
the terminal (report/accounting.py)."""

from __future__ import annotations

from typing import Any

from torchdoctor.accounting import Accounting
from torchdoctor.accounting.explain import EXPECTED, unexplained
from torchdoctor.jsonfields import readable
from torchdoctor.record import Record
from torchdoctor.report.accounting import centre_line, mfu_line
from torchdoctor.report.format import fmt_seconds, fmt_shares


def accounting_view(record: Record, rules_checked: int) -> dict[str, Any] | None:
    """MFU, the waterfall's rows, the unexplained slices with their operators, the cost centres and
    the notes; None without a readable accounting."""
    accounting = readable(Accounting.from_dict, record.accounting)
    if accounting is None:
        return None
    missing = {s.kind for s in unexplained(accounting)}
    rows = [{"label": s.label, "time": fmt_seconds(s.seconds), "share": share,
             "state": _state(s.kind, s.explained_by, s.kind in missing)}
            for s, share in zip(accounting.slices, fmt_shares([s.share for s in accounting.slices])) if s.seconds > 0]
    return {"mfu": mfu_line(accounting).plain, "step": fmt_seconds(accounting.step_s), "rows": rows,
            "unexplained": [{"label": s.label, "share": f"{100 * s.share:.1f}%",
                             "ops": [centre_line(c).plain for c in s.ops]} for s in unexplained(accounting)],
            "centres": [centre_line(c).plain for c in accounting.cost_centres],
            "notes": list(accounting.notes), "rules_checked": rules_checked}


def _state(kind: str, explained_by: tuple[str, ...], is_unexplained: bool) -> str:
    if kind == "ideal":
        return "speed of light"
    if kind in EXPECTED:
        return "no peak to weigh"
    if is_unexplained:
        return "unexplained" + (f" ({explained_by[0]})" if explained_by else "")
    return ", ".join(explained_by)
