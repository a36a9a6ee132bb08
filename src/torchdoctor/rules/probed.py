"""What an in-run probe measured (observe/probes/blocks.py: blocks of the script's own steps with a
fix's setting and without), as the rules that rest on one put it in a finding.

A probe's speed-up comes from six steps a side, so a finding shows it with its 95% interval and the
probe's verdict (the statistic `tune` judges by). A rule whose cause only the measurement shows
(compiling, fewer threads) claims nothing when the verdict is not "faster": its fix measured no
clear gain in this run.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.bench import FASTER


def measured_evidence(probe: dict[str, Any]) -> dict[str, Any]:
    """The evidence keys of a measured claim, the measured figures first (the console's evidence
    column shows the first keys)."""
    interval = probe.get("speedup_ci")
    return {"measured_speedup": round(probe["speedup"], 3),
            "measured_speedup_ci": [round(v, 3) for v in interval] if interval else None,
            "upside_basis": "measured", "probe_verdict": probe.get("verdict"), "probe_samples": probe["samples"]}


def measured_phrase(probe: dict[str, Any], how: str) -> str:
    """"1.52x faster (95% interval x1.40-x1.66, 12 steps of this run, `how`)"."""
    interval = probe.get("speedup_ci")
    within = f"95% interval x{interval[0]:.2f}-x{interval[1]:.2f}, " if interval else ""
    return f"{probe['speedup']:.2f}x faster ({within}{probe['samples']} steps of this run, {how})"


def no_clear_gain(probe: dict[str, Any]) -> bool:
    """The probe judged its fix not faster. Records from before the verdict have none: their
    speed-up stands alone."""
    return probe.get("verdict") is not None and probe["verdict"] != FASTER
