"""Generate a large, realistic Kineto trace by replicating the steps of a real fixture.

    .venv/bin/python benchmarks/trace_generate.py ../shared/fixtures/traces/v100-cnn-gpu-bound.json.gz /tmp/big.json --gb 1

Each copy of the source's events is shifted in time by the source's span and gets fresh
correlation, External id, flow ids and ProfilerStep numbers, so the result reads as one long run
(GPU-bound CNN training by default). Written as uncompressed JSON, one event per line, as Kineto
does; copies are appended until the file reaches the requested size.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path
from typing import Any

_STEP = re.compile(r"^ProfilerStep#(\d+)$")


def _shifted(event: dict[str, Any], copy: int, span_us: float, id_stride: int, steps: int) -> dict[str, Any]:
    out = dict(event)
    if isinstance(out.get("ts"), (int, float)):
        out["ts"] = out["ts"] + copy * span_us
    if "id" in out and isinstance(out["id"], int):
        out["id"] += copy * id_stride
    args = out.get("args")
    if isinstance(args, dict):
        args = dict(args)
        for key in ("correlation", "External id", "external id"):
            if isinstance(args.get(key), int) and args[key] >= 0:
                args[key] += copy * id_stride
        out["args"] = args
    match = _STEP.match(str(out.get("name", "")))
    if match:
        out["name"] = f"ProfilerStep#{int(match.group(1)) + copy * steps}"
    return out


def generate(source: Path, target: Path, size_bytes: int) -> int:
    """Write `target` of at least `size_bytes`; returns the number of copies of the source."""
    with gzip.open(source, "rt") if source.suffix == ".gz" else source.open() as f:
        doc = json.load(f)
    events = [e for e in doc["traceEvents"] if e.get("ph") != "M"]
    meta = [e for e in doc["traceEvents"] if e.get("ph") == "M"]
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - min(e["ts"] for e in timed)
    stride = 1 + max(int(e.get("args", {}).get("correlation", 0) or 0) for e in events) + 10**6
    steps = sum(1 for e in events if _STEP.match(str(e.get("name", ""))) and e.get("cat") == "user_annotation")
    header = {k: v for k, v in doc.items() if k != "traceEvents"}
    copies = 0
    with target.open("w") as out:
        out.write('{\n  "schemaVersion": 1,\n  "traceEvents": [\n')
        out.write(",\n".join(json.dumps(e) for e in meta))
        while out.tell() < size_bytes:
            out.write(",\n" + ",\n".join(json.dumps(_shifted(e, copies, span, stride, steps)) for e in events))
            copies += 1
        out.write("\n  ],\n" + json.dumps(header)[1:-1] + "\n}\n")
    return copies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--gb", type=float, default=1.0, help="target size in GB (10**9 bytes)")
    args = parser.parse_args()
    copies = generate(args.source, args.target, int(args.gb * 1e9))
    print(f"{args.target}: {args.target.stat().st_size / 1e9:.2f} GB, {copies} copies of {args.source.name}")


if __name__ == "__main__":
    main()
