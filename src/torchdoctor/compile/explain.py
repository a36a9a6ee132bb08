"""`torch._dynamo.explain` on a callable and example inputs: the graphs and breaks of one call.

For library users who hold the model and an input (the observation reads a whole run instead, see
torchdoctor.observe.probes.compile). Dynamo traces without compiling; nothing is cached afterwards.
"""

from __future__ import annotations

from typing import Any, Callable

from torchdoctor.compile.logs import reason_of
from torchdoctor.compile.probe import explain_support
from torchdoctor.errors import TorchDoctorError


class CompileUnavailableError(TorchDoctorError):
    """A torch.compile diagnostic needs a private API this torch does not have."""


def explain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """{graph_count, graph_break_count, op_count, breaks [{reason, filename, lineno}]} of fn(*args)."""
    missing = explain_support()
    if missing is not None:
        raise CompileUnavailableError(missing)
    import torch._dynamo

    out = torch._dynamo.explain(fn)(*args, **kwargs)
    breaks = []
    for brk in out.break_reasons:
        frame = brk.user_stack[-1] if brk.user_stack else None
        breaks.append({"reason": reason_of(brk.reason), "filename": frame.filename if frame else None,
                       "lineno": frame.lineno if frame else None})  # fmt: skip
    return {"graph_count": out.graph_count, "graph_break_count": out.graph_break_count,
            "op_count": out.op_count, "breaks": breaks}  # fmt: skip
