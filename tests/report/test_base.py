"""Choosing a renderer by format or file extension, and writing a report file."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.finding import Finding, Fix
from torchdoctor.record import Record
from torchdoctor.report.base import UnknownFormatError, renderer_for, write_report


@pytest.mark.parametrize(("path", "fmt", "extension"), [
    ("r.html", None, "html"), ("R.HTM", None, "html"), ("r.json", None, "json"), ("r.txt", None, "txt"),
    ("r.out", "json", "json"), ("r.html", "text", "txt"),
])  # fmt: skip
def test_the_renderer_follows_the_format_else_the_extension(path: str, fmt: str | None, extension: str) -> None:
    assert renderer_for(path, fmt).extension == extension


def test_an_unknown_format_names_the_choices() -> None:
    with pytest.raises(UnknownFormatError, match=r"no report renderer for file name 'r\.pdf'; choose one of: html, json, txt"):
        renderer_for("r.pdf")


def test_the_json_report_is_the_record_with_its_findings(tmp_path: Path) -> None:
    finding = Finding("TD-DATA-001", "data", "problem", "t", 0.4, {"data_wait_fraction": 0.4}, "", Fix("x", "y"),
                      confidence="low", caveats=("cut",))
    path = write_report(Record(findings=[finding]), tmp_path / "sub" / "r.json")
    assert Record.load(path).findings == [finding]
