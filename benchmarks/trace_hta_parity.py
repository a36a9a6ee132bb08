"""HTA's temporal breakdown beside torchdoctor's on every real trace in the given folders.

    PYTHONPATH=src .venv/bin/python benchmarks/trace_hta_parity.py ../shared/fixtures/traces tests/trace/fixtures \
        --hta-python /work/hta-venv/bin/python

For each folder, HTA's figures come from `benchmarks/trace_hta_reference.py` run under the HTA
interpreter (or from `--reference FILE.json`, that script's saved output, one per folder in the same
order). torchdoctor analyses each file with `TraceConfig(hta_ns_rounding=True)`, HTA's rounding of
float timestamps to whole microseconds, and also as it reads traces by default (exact timestamps).
Prints a Markdown table: idle, compute and non-compute percentages of HTA's window (device span,
last step dropped), HTA's vs ours, and the largest difference in percentage points.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from torchdoctor.trace import TraceConfig, analyse_traces

_REFERENCE = Path(__file__).with_name("trace_hta_reference.py")
_KEYS = ("idle", "compute", "non_compute")


def hta_reference(folder: Path, hta_python: str | None, saved: Path | None) -> dict[str, Any]:
    """trace_hta_reference.py's figures for every `*.json.gz` in `folder` (and its multi-rank pair)."""
    if saved is not None:
        return json.loads(saved.read_text())
    if hta_python is None:
        raise SystemExit("give --hta-python (an interpreter with HolisticTraceAnalysis) or --reference")
    out = subprocess.run([hta_python, str(_REFERENCE), str(folder)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def hta_temporal(figures: dict[str, Any], rank: int | None) -> dict[str, float] | None:
    """HTA's percentages for one rank (None: the file's only rank, whatever its number), or None where
    HTA gave no breakdown."""
    for row in figures.get("temporal", []):
        if rank is None or int(row.get("rank", 0)) == rank:
            return {key: float(row[f"{key}_time_pctg"]) for key in _KEYS}
    return None


def ours(paths: list[Path], config: TraceConfig) -> list[dict[str, float] | None]:
    """torchdoctor's percentages for each rank (in file order), None where a rank has no device work."""
    ranks = analyse_traces(paths, config).to_dict()["ranks"]
    by_path = {rank["path"]: rank for rank in ranks}
    result: list[dict[str, float] | None] = []
    for path in paths:
        temporal = (by_path[str(path)]["device"] or {}).get("temporal") or {}
        result.append({key: 100 * temporal[f"{key}_fraction"] for key in _KEYS} if temporal else None)
    return result


def _cell(figures: dict[str, float] | None) -> str:
    return "-" if figures is None else " / ".join(f"{figures[key]:.2f}" for key in _KEYS)


def _gap(a: dict[str, float] | None, b: dict[str, float] | None) -> str:
    if a is None or b is None:
        return "-"
    return f"{max(abs(a[key] - b[key]) for key in _KEYS):.2f}"


def rows(folder: Path, reference: dict[str, Any]) -> list[str]:
    """One table row per trace (per rank for the multi-rank pair)."""
    out = []
    for name, figures in reference.items():
        paths = sorted((folder / name).glob("rank-*.json.gz")) if (folder / name).is_dir() else [folder / name]
        rounded = ours(paths, TraceConfig(hta_ns_rounding=True))
        exact = ours(paths, TraceConfig())
        for rank, path in enumerate(paths):
            hta = None if "error" in figures else hta_temporal(figures, rank if len(paths) > 1 else None)
            label = path.name if len(paths) == 1 else f"{name}/{path.name}"
            note = figures["error"][:60] if "error" in figures else ""
            out.append(f"| `{label}` | {_cell(hta)} | {_cell(rounded[rank])} | {_gap(hta, rounded[rank])} "
                       f"| {_cell(exact[rank])} | {note} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--hta-python", help="interpreter with HolisticTraceAnalysis installed")
    parser.add_argument("--reference", type=Path, action="append", help="saved trace_hta_reference.py output")
    args = parser.parse_args()
    saved = args.reference or [None] * len(args.folders)
    if len(saved) != len(args.folders):
        raise SystemExit("give one --reference per folder, in the same order")
    print("| trace | HTA idle / compute / non-compute % | ours, HTA rounding | largest difference (points) "
          "| ours, exact timestamps | HTA error |")
    print("|---|---|---|---|---|---|")
    for folder, reference_file in zip(args.folders, saved):
        for row in rows(folder, hta_reference(folder, args.hta_python, reference_file)):
            print(row, flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
