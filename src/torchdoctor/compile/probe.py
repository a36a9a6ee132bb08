"""Capability probes for the private torch.compile APIs torchdoctor reads.

Each probe returns None when the API is usable, else a sentence "... unavailable on torch X.Y"
that the report shows in place of the figure.
"""

from __future__ import annotations

import inspect
from importlib import import_module
from typing import Any, Callable

import torch


def torch_version() -> str:
    """The running torch's version as "X.Y", as the messages name it."""
    return ".".join(torch.__version__.split("+")[0].split(".")[:2])


def _unavailable(what: str) -> str:
    return f"{what} unavailable on torch {torch_version()}"


def _probe(what: str, get: Callable[[], Any]) -> str | None:
    try:
        get()
    except (ImportError, AttributeError):
        return _unavailable(what)
    return None


def compilation_metrics_support() -> str | None:
    return _probe("compilation metrics",
                  lambda: import_module("torch._dynamo.utils").get_compilation_metrics)


def counters_support() -> str | None:
    return _probe("dynamo counters", lambda: import_module("torch._dynamo.utils").counters)


def explain_support() -> str | None:
    return _probe("torch._dynamo.explain", lambda: import_module("torch._dynamo").explain)


def logging_support() -> str | None:
    """The graph_breaks and recompiles log artifacts, switched on with torch._logging.set_logs."""
    def get() -> None:
        set_logs = import_module("torch._logging").set_logs
        params = inspect.signature(set_logs).parameters
        if "graph_breaks" not in params or "recompiles" not in params:
            raise AttributeError("set_logs lacks graph_breaks/recompiles")

    return _probe("graph-break and recompile logs", get)
