"""Which rank of a multi-rank run failed first, and why.

When one rank fails, the others usually fail because of it (gloo: "Connection closed by peer";
NCCL: a watchdog timeout) or are stopped by torchrun. The rank that failed first is the one whose
results were written earliest (`ended_at_unix_s`, wall clock of one host; ranks on several hosts
compare only as well as their clocks agree).
"""

from __future__ import annotations

from typing import Any

#: How a rank's script ended when it did not fail.
SUCCESSFUL = ("completed", "script_finished")


def error_line(traceback_text: str | None) -> str | None:
    """The last non-empty line of a traceback: the exception and its message."""
    lines = [line for line in (traceback_text or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else None


def failures_in_order(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rank results that did not succeed, earliest-ending first (then by rank)."""
    failed = [r for r in results if r.get("how", "completed") not in SUCCESSFUL]
    return sorted(failed, key=lambda r: (r.get("ended_at_unix_s") or float("inf"), r["rank"]))


def failed_ranks(ranks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`record.distributed["failed_ranks"]`: each failed rank (earliest first) with what it measured."""
    return [{"rank": r["rank"], "how": r["how"], "code": r.get("code"), "error": r.get("error"),
             "steps_measured": len(r.get("steps") or [])} for r in failures_in_order(ranks)]
