"""A warning the script's process showed that says a call is slow: torch warns, once per call site,
where it takes a path it knows to be slow ("Creating a tensor from a list of numpy.ndarrays is
extremely slow", an RNN's weights not in one contiguous chunk, ...), and the script's output is
where a user seldom looks again. The observation notes every warning shown (observe/hooks.py,
`env.warnings`); this rule reports those whose message speaks of speed, with the cost of the
script's function that raised it where the profiled steps measured one.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from torchdoctor.environment import ScriptWarning
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, rule, severity_at
from torchdoctor.rules.evidence import Evidence
from torchdoctor.rules.outside import LOOP_FRAME, share_of_step

#: Words a warning uses when it is about speed.
SLOW = re.compile(r"\b(slow|slower|slowly|performance|inefficient|expensive)\b", re.IGNORECASE)
SHARE_WARNING, SHARE_PROBLEM = 0.05, 0.20
_LABEL = re.compile(r"^(?P<file>.*):(?P<line>\d+) \((?P<func>.*)\)$")


def _caller_share(ev: Evidence, warning: ScriptWarning) -> tuple[float, str] | None:
    """(share of the profiled step in the script's function that raised `warning`, its label): the
    function of the warning's file starting nearest above its line; None without the probe's
    calls, without such a function, or when it is the step's own loop (which of its calls warned
    is not known)."""
    try:
        calls, step_s = ev.script_calls()
    except MissingEvidence:
        return None
    starts = {c["caller"]: _start(c["caller"], warning) for c in calls["calls"]}
    above = [c for c in calls["calls"] if starts[c["caller"]] is not None]
    if not above:
        return None
    nearest = max(starts[c["caller"]] or 0 for c in above)
    mine = [c for c in above if starts[c["caller"]] == nearest]
    top = max(mine, key=lambda c: c["wall_s"])
    if calls.get("frames", {}).get(top["caller"], 0.0) >= LOOP_FRAME * step_s:
        return None  # the step's own loop: its longest call need not be the one that warned
    return share_of_step(calls, step_s, top), top["caller"]


def _start(caller: str, warning: ScriptWarning) -> int | None:
    """The line a caller label's function starts at, when it is in the warning's file at or above
    the warning's line."""
    match = _LABEL.match(caller)
    if not match or not warning.file or warning.line is None:
        return None
    same = warning.file == match["file"] or warning.file.endswith("/" + match["file"])
    line = int(match["line"])
    return line if same and line <= warning.line else None


def _slow(ev: Evidence) -> list[ScriptWarning]:
    return [w for w in ev.script_warnings() if w.message and SLOW.search(w.message)]


@rule("TD-COMP-037", "compute")
def slow_path_warning(ev: Evidence) -> Hit | None:
    """The script's process showed a warning whose message speaks of speed (SLOW). Upside: the
    profiled step's share in the script's function that raised it, where the operator-costs probe
    measured it and the function is not the step's own loop; else 0, "not measured"."""
    slow = _slow(ev)
    if not slow:
        return None
    warning = slow[0]
    measured = _caller_share(ev, warning)
    share, caller = measured if measured else (0.0, None)
    where = f"{PurePath(warning.file or '?').name}:{warning.line}"
    cost = (f" In the profiled steps {caller} took {share:.0%} of the step." if caller
            else " Its cost was not measured in this run (upside shown as 0%).")
    return Hit(severity_at(share, SHARE_WARNING, SHARE_PROBLEM) or "info",
               f"torch warned of a slow path at {where}", share,
               {"category": warning.category, "message": warning.message, "file": warning.file,
                "line": warning.line, "times_shown": warning.count, "caller": caller,
                "share_fraction": round(share, 4), "other_slow_warnings": len(slow) - 1},
               f"The run showed this {warning.category}: \"{warning.message}\" Python shows a warning once per "
               "line by default, so it is easy to miss though the slow path runs on every call." + cost,
               _fix(warning, where))


def _fix(warning: ScriptWarning, where: str) -> Fix:
    """The warning's own advice at its line; for torch's list-of-ndarrays warning, the stacked copy."""
    if "numpy.ndarray" in (warning.message or ""):
        return Fix(f"Stack the arrays into one first and wrap the result without a copy ({where}).",
                   "torch.from_numpy(np.stack(arrays))   # not torch.tensor(list_of_arrays)")
    return Fix(f"Follow the warning's advice at {where}: it names the faster call.", f"# {where}")
