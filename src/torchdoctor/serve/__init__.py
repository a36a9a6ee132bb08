"""`torchdoctor.serve`: a dynamic batcher, its HTTP server, a load generator and a sweep.

Public API: :class:`DynamicBatcher` and :class:`BatcherConfig` (usable without HTTP),
:func:`build_app`/:func:`start_server` (aiohttp), :func:`run_load` with :class:`LoadConfig`,
:func:`run_sweep`, and :func:`write_configs` for Triton and Ray Serve. JSON keys: docs/inference.md.
"""

from __future__ import annotations

from torchdoctor.serve.batcher import BatchRecord, BatcherConfig, DynamicBatcher
from torchdoctor.serve.configs import ray_serve_snippet, triton_config, write_configs
from torchdoctor.serve.load import LoadConfig, LoadResult, run_load
from torchdoctor.serve.model import TensorModel
from torchdoctor.serve.server import LOOPBACK, build_app, start_server
from torchdoctor.serve.sweep import SweepPoint, SweepResult, run_sweep

__all__ = [
    "LOOPBACK", "BatchRecord", "BatcherConfig", "DynamicBatcher", "LoadConfig", "LoadResult",
    "SweepPoint", "SweepResult", "TensorModel", "build_app", "ray_serve_snippet", "run_load",
    "run_sweep", "start_server", "triton_config", "write_configs",
]
