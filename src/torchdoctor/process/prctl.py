"""Linux's prctl(2) through ctypes, for the process attributes ownership needs (the lifeline's
PR_SET_PDEATHSIG, the subreaper's PR_SET_CHILD_SUBREAPER): the standard library has no binding."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys


def prctl(option: int, value: int) -> bool:
    """prctl(option, value); True when the kernel accepted it (False off Linux, or without libc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False
