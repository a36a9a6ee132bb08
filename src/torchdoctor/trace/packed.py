"""One rank's section held as compressed JSON while a job is combined and written.

A rank's section (trace/rank.py) lists every analysed step's figures: at 120 steps about 0.8 MB
of Python dicts, lists and floats, but about 20 KB as zlib-compressed JSON. The worker that
analyses a rank packs its section (`PackedSection.pack`), so the process that combines many
ranks holds a few kilobytes a rank, not the dicts, and expands one rank at a time where a whole
section is needed (`unpack`: the report's JSON is written one rank after the other,
trace/report_json.py). The few keys that sort and summarise the ranks (`HEAD_KEYS`, and the
device's computation and communication time) stay readable without unpacking.

JSON rather than pickle: the section is JSON by contract (docs/trace.md), and orjson writes and
reads it back exactly (floats round-trip, key order is kept), so the report is the same bytes.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import orjson

from torchdoctor.outputs import dumps_json

#: The section's keys kept unpacked: what trace/job.py and trace/analysis.py read of every rank.
HEAD_KEYS = ("rank", "path", "truncated", "steps_count", "step_us_median", "warnings", "caveats")

# zlib's default level: at 120 steps, 18 KB instead of 28 KB at level 1, for a few milliseconds
# more in the worker (which spends seconds loading the trace).
_LEVEL = 6


@dataclass(frozen=True)
class PackedSection:
    """`head`: the section's `HEAD_KEYS`, plus `compute_us` and `comm_us` of its `device` (None
    without device work); `data`: the whole section as zlib-compressed JSON."""

    head: dict[str, Any]
    data: bytes

    @classmethod
    def pack(cls, section: dict[str, Any]) -> PackedSection:
        device = section.get("device") or {}
        head = {key: section[key] for key in HEAD_KEYS}
        head.update(compute_us=device.get("compute_us"), comm_us=device.get("comm_us"))
        data = dumps_json(section, option=orjson.OPT_SERIALIZE_NUMPY)
        return cls(head, zlib.compress(data, _LEVEL))

    def unpack(self) -> dict[str, Any]:
        """The whole section, as a fresh dict (what `orjson.loads` of its JSON gives)."""
        return orjson.loads(zlib.decompress(self.data))
