"""Reading Dynamo's graph-break and recompile log records (torch._logging artifacts).

A graph-break record reads "Graph break in user code at FILE:LINE\nGraph Break Reason: ...",
followed by the reason's own lines; a recompile record "Recompiling function F in FILE:LINE\n
triggered by the following guard failure(s):\n - 0/0: <guard>"; the recompile limit a warning
"torch._dynamo hit config.recompile_limit (8)". Only these texts are parsed; anything else is
kept as is.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

_BREAK_AT = re.compile(r"Graph break (?:\(.*?\) )?in user code at (?P<file>.+):(?P<line>\d+)")
_LIMIT = re.compile(r"hit config\.(?P<name>recompile_limit|cache_size_limit|accumulated_\w+) \((?P<value>\d+)\)")
_ARTIFACTS = ("__graph_breaks", "__recompiles")


@dataclass(frozen=True, slots=True)
class GraphBreakLine:
    filename: str
    lineno: int
    reason: str


def parse_graph_break(message: str) -> GraphBreakLine | None:
    match = _BREAK_AT.search(message)
    if match is None:
        return None
    return GraphBreakLine(match["file"], int(match["line"]), reason_of(message))


def reason_of(message: str) -> str:
    """The first informative line of a graph-break reason (after the generic header)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("Graph break", "Graph Break Reason", "User code traceback")):
            continue
        return line
    return lines[0] if lines else ""


def parse_limit(message: str) -> tuple[str, int] | None:
    match = _LIMIT.search(message)
    return (match["name"], int(match["value"])) if match else None


class RecordCollector(logging.Handler):
    """Keeps the messages of Dynamo's log records while installed on the `torch._dynamo` logger."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.messages: list[tuple[str, str]] = []  # (logger name, message)

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append((record.name, record.getMessage()))


def is_artifact(record: logging.LogRecord) -> bool:
    return record.name.endswith(_ARTIFACTS)


class QuietArtifacts(logging.Filter):
    """Drops the artifacts torchdoctor switched on from torch's own stderr handlers."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not is_artifact(record)
