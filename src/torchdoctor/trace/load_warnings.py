"""What the loader dropped or repaired, said in one sentence each (the Trace's `warnings`).

Every one of these changes how the figures read (a cut file misses its last events, a skipped
event misses its time), so the analysis reports them as the rank's `caveats` and the diagnosis
lowers its findings' confidence; docs/trace.md lists them.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from torchdoctor.trace.columns import Columns
from torchdoctor.trace.events import DEVICE_KINDS, RUNTIME, is_kind


def load_warnings(name: str, cols: Columns, junk: int, unknown: Counter[str], cut: str | None,
                  nbytes: int) -> list[str]:
    """The warnings of one load; `name` is the file's name."""
    warnings = []
    if cut is not None:
        warnings.append(_truncated(name, cols, cut, nbytes))
    if cols.bad_time:
        warnings.append(f"{name}: {cols.bad_time} events had a NaN or infinite 'ts'/'dur', or one beyond "
                        "2^53 us (285 years), and were skipped")
    if cols.no_time:
        warnings.append(f"{name}: {cols.no_time} events had no usable 'ts'/'dur' and were skipped")
    if cols.negative_dur:
        warnings.append(f"{name}: {cols.negative_dur} events had a negative duration; counted as 0")
    if junk:
        warnings.append(f"{name}: {junk} items of 'traceEvents' are not event objects and were skipped")
    if unknown:
        top = ", ".join(f"{cat!r} ({n})" for cat, n in unknown.most_common(5))
        warnings.append(f"{name}: {sum(unknown.values())} complete events are in categories this analysis does "
                        f"not read ({top}); their time is in no figure")
    if cols.odd:
        fields = ", ".join(f"{field!r} {n}" for field, n in cols.odd.most_common())
        warnings.append(f"{name}: fields of an unexpected type, read as absent or as a label ({fields} events)")
    return warnings


def _truncated(name: str, cols: Columns, cut: str, nbytes: int) -> str:
    span = (max(cols.ts) - min(cols.ts)) / 1e6 if cols.ts else 0.0
    text = (f"{name}: truncated trace (the file ends mid-write after {nbytes / 1e6:.1f} MB: {cut}); "
            f"analysed the {len(cols.kind)} complete events that parsed ({span:.3f} s of timeline); "
            "everything recorded after the cut is lost")
    kinds = np.frombuffer(cols.kind, np.int8)
    if (kinds == RUNTIME).any() and not is_kind(kinds, DEVICE_KINDS).any():
        text += ("; no GPU event survived the cut (Kineto writes them after the CPU events), so every GPU "
                 "figure reads as idle")
    return text
