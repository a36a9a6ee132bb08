"""Small runnable workloads, each with one known performance problem, and healthy ones."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def demo_script() -> Path:
    """Path of the built-in demo workload (`torchdoctor diagnose --demo`)."""
    return _HERE / "demo.py"
