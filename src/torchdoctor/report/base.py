"""The renderer contract, and choosing a renderer by format name or output file extension.

A renderer draws a whole Record as one string (`render(record) -> str`); it never measures,
analyses or reaches back into a run, so every renderer works on an old Record from the store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from torchdoctor.errors import TorchDoctorError
from torchdoctor.outputs import write_atomic
from torchdoctor.record import Record


class UnknownFormatError(TorchDoctorError):
    """A report format (or output file extension) no renderer draws."""


class Renderer(Protocol):
    """Draws a Record. `extension` is the output file extension, without the dot."""

    extension: str

    def render(self, record: Record) -> str: ...


def renderers() -> dict[str, Renderer]:
    """Every renderer, by format name (which is also its file extension)."""
    from torchdoctor.report.console import TextRenderer
    from torchdoctor.report.html import HtmlRenderer
    from torchdoctor.report.json import JsonRenderer

    return {r.extension: r for r in (TextRenderer(), JsonRenderer(), HtmlRenderer())}


def renderer_for(path: str | Path | None = None, fmt: str | None = None) -> Renderer:
    """The renderer named by `fmt`, else the one for `path`'s extension (`.htm` counts as html)."""
    known = renderers()
    name = fmt or Path(path or "").suffix.lstrip(".").lower()
    name = {"htm": "html", "text": "txt"}.get(name, name)
    if name not in known:
        given = f"format {fmt!r}" if fmt else f"file name {str(path)!r}"
        raise UnknownFormatError(f"no report renderer for {given}; choose one of: {', '.join(sorted(known))}")
    return known[name]


def write_report(record: Record, path: str | Path, fmt: str | None = None, *, what: str = "the report") -> Path:
    """Render `record` with the renderer for `path` (or `fmt`) and write it there (UTF-8), whole
    or not at all; OutputError naming `what` when it cannot be written."""
    path = Path(path)
    text = renderer_for(path, fmt).render(record)
    return write_atomic(path, text.encode("utf-8", "surrogateescape"), what=what)
