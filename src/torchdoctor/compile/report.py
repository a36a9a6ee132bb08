"""`record.compile`: what torch.compile did in the observed span, as a frozen value.

JSON contract (written by torchdoctor.observe.probes.compile, documented in docs/compile.md,
"JSON", schema_version 1): read back with `CompileReport.from_dict`; `to_dict` writes the same
keys in the same order, and `comparison` only when `torchdoctor compile` attached one. A key a
hand-written Record lacks reads as its default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchdoctor.compile.comparison import Comparison
from torchdoctor.jsonfields import json_of, value_of

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame Dynamo compiled (an entry of `get_compilation_metrics()`)."""

    compile_id: str = ""
    function: str | None = None
    filename: str | None = None
    lineno: int | None = None
    graph_op_count: int | None = None
    compile_time_s: float | None = None
    start_time_s: float | None = None
    recompile_reason: str | None = None
    """The guard that failed and made Dynamo compile the frame again."""
    fail_reason: str | None = None
    """Why Dynamo gave up on the frame."""


@dataclass(frozen=True, slots=True)
class GraphBreak:
    """A graph break at the user's `filename:lineno`, `count` times."""

    filename: str
    lineno: int
    reason: str
    count: int = 1


@dataclass(frozen=True, slots=True)
class Recompile:
    """A recompilation of `function` and the first guard that failed."""

    function: str | None = None
    filename: str | None = None
    lineno: int | None = None
    guard: str = ""


@dataclass(frozen=True, slots=True)
class Failure:
    """A frame Dynamo could not compile, with its reason."""

    function: str | None = None
    filename: str | None = None
    lineno: int | None = None
    fail_reason: str | None = None


@dataclass(frozen=True, slots=True)
class RecompileLimit:
    """Dynamo's recompile limit that was hit (`config` = `limit`): later calls ran eagerly."""

    config: str
    limit: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileReport:
    """Graphs, graph breaks, recompilations, failures and compile time of the captured span, and the
    eager-vs-compiled comparison `torchdoctor compile` keeps in the compiled run's Record."""

    graph_count: int | None = None
    frames: tuple[Frame, ...] = ()
    graph_breaks: tuple[GraphBreak, ...] = ()
    graph_break_reasons: dict[str, int] = field(default_factory=dict)
    """Dynamo's graph-break reasons (first informative line) with their counts."""
    recompiles: tuple[Recompile, ...] = ()
    recompile_limit_hit: RecompileLimit | None = None
    compile_time_s: float | None = None
    failures: tuple[Failure, ...] = ()
    unavailable: tuple[str, ...] = ()
    """"... unavailable on torch X.Y" for each figure whose probe failed."""
    graph_break_count: int = 0
    schema_version: int = SCHEMA_VERSION
    comparison: Comparison | None = None

    @property
    def used(self) -> bool:
        """Whether anything was compiled (or failed to compile) in the captured span."""
        return bool(self.frames or self.graph_count or self.graph_break_reasons or self.failures)

    def shape_guards(self) -> list[Recompile]:
        """The recompilations whose failing guard is a size mismatch (input shapes changed)."""
        return [r for r in self.recompiles if "size mismatch" in r.guard]

    def to_dict(self) -> dict[str, Any]:
        data = json_of(self)
        if self.comparison is None:
            del data["comparison"]
        return data

    @classmethod
    def from_dict(cls, data: Any) -> CompileReport:
        """The report of `to_dict`'s JSON; RecordFormatError naming a field of the wrong type."""
        return value_of(cls, data, "compile")
