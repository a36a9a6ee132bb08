"""What torch.compile did in a run, and whether it paid off (see docs/compile.md)."""

from torchdoctor.compile.capture import CompileCapture, CompileReport

__all__ = ["CompileCapture", "CompileReport"]
