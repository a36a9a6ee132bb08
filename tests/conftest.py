"""Shared fixtures: where the real GPU traces live, and a guard that no test leaves a patch behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _shared_dir() -> Path:
    # Sessions and CI lay the project's shared/ folder beside the checkout.
    return Path(os.environ.get("TORCHDOCTOR_SHARED", REPO_ROOT.parent / "shared"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def gpu_traces() -> Path:
    """Folder of real Kineto traces recorded on GPUs (see its README for their sources)."""
    path = _shared_dir() / "fixtures" / "traces"
    if not path.is_dir():
        raise FileNotFoundError(f"shared trace fixtures not found at {path}; set TORCHDOCTOR_SHARED")
    return path
