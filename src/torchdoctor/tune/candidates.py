"""Which knobs to try, in which order.

Knobs named by the diagnosis's findings (`Finding.knob`, a `REGISTRY` name) come first, by
decreasing upside; then every other knob of DEFAULT_ORDER. DEFAULT_ORDER puts cheap, safe fixes of the commonest
bottlenecks first (data loading, debug switches), then precision, then memory layout and
optimizer kernels, and torch.compile last, as its trials are the slowest to run.
`activation_checkpointing` (a memory knob, rarely faster) is tried only when a finding names it,
and `batch_size` only with `allow_batch_size`.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from torchdoctor.finding import Finding
from torchdoctor.knobs import REGISTRY
from torchdoctor.record import Record

DEFAULT_ORDER: tuple[str, ...] = (
    "num_workers", "pin_memory", "prefetch_factor", "persistent_workers",
    "no_anomaly_detection", "inference_mode", "threads",
    "autocast_bf16", "autocast_fp16", "tf32", "cudnn_benchmark", "channels_last",
    "optimizer_impl", "zero_grad_set_to_none", "compile",
    "no_sync", "gradient_as_bucket_view", "static_graph", "bucket_cap_mb", "reshard_after_forward",
    "batch_size",
)


def findings_of(record: Record) -> list[Finding]:
    """The Record's findings; the diagnosis's when the Record has none yet, or when its findings name a
    knob that is not registered (Records stored before findings named knobs by their registered
    name, e.g. `compute.threads`): re-diagnosing the Record names them as the rules do now."""
    stored = list(record.findings)
    if stored and all(f.knob is None or f.knob in REGISTRY for f in stored):
        return stored
    from torchdoctor.rules import diagnose_record

    return diagnose_record(record)


def named_knobs(record: Record) -> list[str]:
    """The knobs the diagnosis's findings name, the largest upside first. The search tries them
    first, and no stop rule but the user's limits (--max-trials, --time-budget) ends it before
    each was considered."""
    upside: dict[str, float] = {}
    for finding in findings_of(record):
        name = finding.knob
        if name in REGISTRY:
            upside[name] = max(upside.get(name, 0.0), float(finding.upside))
    return sorted(upside, key=lambda n: -upside[n])


#: A setting a finding's fix names beside its own knob, and the knob that applies it: the
#: workers fix of a small machine (TD-DATA-002) also gives the step one intra-op thread, and the
#: two are one fix (workers alone contend with the step's threads for the cores).
_FIX_SETTINGS = (("threads", re.compile(r"torch\.set_num_threads\((\d+)\)")),)


def fix_companions(record: Record) -> dict[str, dict[str, Any]]:
    """Knob -> the other knobs its finding's fix sets with it (name -> value), so that the fix is
    tried as a whole: TD-DATA-002's `num_workers` with `threads=1`."""
    found: dict[str, dict[str, Any]] = {}
    for finding in findings_of(record):
        if finding.knob not in REGISTRY:
            continue
        for name, pattern in _FIX_SETTINGS:
            match = pattern.search(finding.fix.code or "")
            if match and name != finding.knob:
                found.setdefault(finding.knob, {})[name] = int(match.group(1))
    return found


def ordered_candidates(record: Record, *, allow_batch_size: bool, only: list[str],
                       first: Sequence[str] = ()) -> list[str]:
    """Knob names to try, best first (each still checked with `applies` when its turn comes):
    `first` (the knobs the script's structure requires), then those the findings name, then the
    rest of DEFAULT_ORDER."""
    named = list(dict.fromkeys([*first, *named_knobs(record)]))
    order = named + [n for n in DEFAULT_ORDER if n not in named]
    if only:
        unknown = sorted(set(only) - set(REGISTRY))
        if unknown:
            from torchdoctor.tune.errors import TuneInputError

            raise TuneInputError(f"unknown knob(s) {', '.join(unknown)}; known: {', '.join(sorted(REGISTRY))}")
        order = [n for n in order if n in only] + [n for n in only if n not in order]
    return [n for n in order if allow_batch_size or n != "batch_size"]
