"""The variants still in the running while a ladder is measured, and how a failure is worded."""

from __future__ import annotations

import re

from torchdoctor.infer.result import VariantResult
from torchdoctor.infer.variants import Prepared

#: Variant name -> its result so far and the prepared callable; a variant that fails is dropped.
Live = dict[str, tuple[VariantResult, Prepared]]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def failure_reason(exc: BaseException, max_lines: int = 4) -> str:
    """The exception's type and the first non-blank lines of its message."""
    plain = _ANSI.sub("", str(exc))
    lines = [line.strip() for line in plain.splitlines() if line.strip()][:max_lines]
    return f"{type(exc).__name__}: {' '.join(lines)}"[:600]
