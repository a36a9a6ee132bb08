"""The rank x step heat map of a multi-rank trace analysis, as plain SVG markup (no script).

Each cell is one rank's wall time at one profiled step, coloured by how far it lies above that
step's median over the ranks (white: at or under the median; full red: `FULL_EXCESS` or more
above). Cells shrink with the ranks and steps so that 512 ranks fit in about 1000 pixels, one
pixel or more a rank; every cell's `<title>` (rank, step, time) shows on hover. Drawn through
Jinja2's autoescaping like the rest of the page, so it needs no change to its
Content-Security-Policy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from torchdoctor.report.format import fmt_seconds

FULL_EXCESS = 0.5  # 50 % over the step's median: full colour
_HEIGHT, _WIDTH = 1024, 800  # pixels the map may take at most


def rank_step_heatmap(step_matrix: dict[str, Any] | None) -> dict[str, Any] | None:
    """The map's geometry and cells for the template; None without a matrix of two or more ranks."""
    if not step_matrix or len(step_matrix.get("ranks", ())) < 2 or not step_matrix.get("steps"):
        return None
    ranks, steps = step_matrix["ranks"], step_matrix["steps"]
    walls = np.array([[np.nan if w is None else w for w in row] for row in step_matrix["wall_us"]], float)
    median = np.nanmedian(walls, axis=0) if np.isfinite(walls).any() else np.zeros(len(steps))
    cell_h = max(1, min(14, _HEIGHT // len(ranks)))
    cell_w = max(2, min(28, _WIDTH // len(steps)))
    cells = []
    for i, rank in enumerate(ranks):
        for j, step in enumerate(steps):
            wall = walls[i, j]
            if not np.isfinite(wall):
                continue
            excess = wall / median[j] - 1 if median[j] > 0 else 0.0
            cells.append({"x": j * cell_w, "y": i * cell_h, "shade": _shade(excess),
                          "title": f"rank {rank}, step {step}: {fmt_seconds(wall / 1e6)} ({excess:+.0%} vs median)"})
    every = max(1, 12 // cell_h)  # a rank label every `every` rows, so that labels do not overlap
    labels = [{"y": i * cell_h + cell_h, "text": f"rank {r}"} for i, r in enumerate(ranks) if i % every == 0]
    return {"cell_w": cell_w, "cell_h": cell_h, "width": cell_w * len(steps), "height": cell_h * len(ranks),
            "cells": cells, "labels": labels, "first_step": steps[0], "last_step": steps[-1]}  # fmt: skip


def _shade(excess: float) -> str:
    """White at or under the median, towards red with the excess."""
    level = int(255 * (1 - min(max(excess, 0.0) / FULL_EXCESS, 1.0)))
    return f"rgb(255,{level},{level})"


SLOW_DEVICE_ROWS = 8  # ranks listed under the map: the flagged ones first, then by median excess


def slow_device_rows(slow_devices: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ranks whose kernels ran slowest on the same work (`multi_rank.slow_devices`), for the
    table under the map: None when no kernel group was compared across ranks. Names are left to
    the template's autoescaping."""
    if not slow_devices or not slow_devices.get("groups_compared_count"):
        return None
    flagged = set(slow_devices.get("ranks", []))
    by_rank = sorted(slow_devices.get("by_rank", []),
                     key=lambda r: (r["rank"] not in flagged, -r["median_excess_fraction"]))  # fmt: skip
    rows = [{"rank": r["rank"], "slow": r["rank"] in flagged, "median": f"{r['median_excess_fraction']:+.0%}",
             "slower": f"{r['slower_groups_fraction']:.0%}"} for r in by_rank[:SLOW_DEVICE_ROWS]]  # fmt: skip
    groups = [g["kernel"] + (f" (in {g['operator']})" if g.get("operator") else "") for g in slow_devices.get("groups", [])]
    return {"threshold": f"{slow_devices['excess_threshold_fraction']:.0%}", "rows": rows,
            "groups_count": slow_devices["groups_compared_count"], "groups": groups,
            "left_out": [f"rank {e['rank']}: {e['reason']}" for e in slow_devices.get("left_out", [])]}  # fmt: skip
