"""torch.compile rules, over the compile report in `record.compile`
(docs/compile.md). Each finding is built once, in `torchdoctor.compile.advice` (the `compile`
command reports the same findings, with the same ids); these rules read the Record's compile report
and add what only a Record has: the timed window (the share of TD-COMP-021) and the epoch length
(TD-COMP-024).

Sources: torch.compile troubleshooting docs (graph breaks, recompilations and `dynamic=True`,
compile-time caching), the guides' "measure first" loop.
"""

from __future__ import annotations

import math

from torchdoctor.compile import advice
from torchdoctor.rules.base import Hit, MissingEvidence, hit_of, rule
from torchdoctor.rules.evidence import Evidence


@rule(advice.SHAPE_RECOMPILES, advice.LAYER)
def shape_recompiles(ev: Evidence) -> Hit | None:
    """Dynamo recompiles because input shapes change (guards failing on a size). Upside: the compile
    time of those recompilations against the timed window (recompile_s / (recompile_s + window_s))."""
    report = ev.compile()
    if not report.shape_guards():
        return None
    return hit_of(advice.shape_recompiles(report, window_s=ev.summary("window_s")))


@rule(advice.GRAPH_BREAKS, advice.LAYER)
def graph_breaks(ev: Evidence) -> Hit | None:
    """Graph breaks in the compiled code that runs every step, each with its file:line and the usual
    fix for its reason. Their cost is not measured here (upside 0): `torchdoctor compile` compares
    against eager."""
    return hit_of(advice.graph_breaks(ev.compile()))


@rule(advice.SLOWER, advice.LAYER)
def slower_after_compile(ev: Evidence) -> Hit | None:
    """Compiled steps are measurably slower than eager (benchmark verdict "slower"). Upside: the share
    of the compiled step lost against eager, 1 - 1/ratio."""
    return hit_of(advice.slower(ev.compile_comparison(), ev.compile()))


def _steps_per_epoch(ev: Evidence) -> int:
    loader = ev.dataloader()
    if not loader.dataset_len or not loader.batch_size:
        raise MissingEvidence("the DataLoader's length (steps per epoch)")
    return math.ceil(loader.dataset_len / loader.batch_size)


@rule(advice.NOT_REPAID, advice.LAYER)
def compile_not_repaid(ev: Evidence) -> Hit | None:
    """Compilation takes longer than it saves within one epoch of the script's DataLoader (payoff
    steps from the eager-vs-compiled comparison). Upside: the compile time not repaid, as a share
    of the epoch (compile + compiled steps)."""
    comparison, steps = ev.compile_comparison(), _steps_per_epoch(ev)
    return hit_of(advice.not_repaid(comparison, steps))
