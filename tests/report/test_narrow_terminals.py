"""Every command's output reads in an 80-column pipe as in a 120-column one: no table cell is
squeezed into a narrow column of a word or two a line (long text goes below the table instead).

The renderers get real values: a diagnosed Record from tests/fixtures/records/, a tune result and a
check result built as tests/report/test_tune.py and test_check.py build them, and `runs list` read from
a SQLite store holding a few Records.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Callable

import pytest
from rich.console import Console
from rich.table import Table

from tests.report.test_check import _located, _result
from tests.tune.test_search import FakeRuns, _tuner
from torchdoctor.check import REGRESSION
from torchdoctor.record import Record
from torchdoctor.report.check import render_check
from torchdoctor.report.console import render_record
from torchdoctor.report.runs import runs_table
from torchdoctor.report.tune import render_result
from torchdoctor.store import RunStore

RECORD = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "cpu-compile-breaks.json"
#: A cell this many lines high or more is squeezed when its lines hold this many words or fewer on average.
SQUEEZED_LINES, SQUEEZED_WORDS = 3, 2.5


def squeezed_cells(text: str) -> list[list[str]]:
    """The cells of the tables in `text` wrapped to a word or two a line: each as its lines.

    A table row is the lines from one whose first cell holds text to the next such line; its cells
    are the text between the `│` separators, column by column."""
    squeezed: list[list[str]] = []
    row: list[list[str]] = []

    def close() -> None:
        for column in zip(*row):
            lines = [part for part in column if part]
            if len(lines) >= SQUEEZED_LINES and sum(len(p.split()) for p in lines) / len(lines) <= SQUEEZED_WORDS:
                squeezed.append(lines)
        row.clear()

    for line in [*text.splitlines(), ""]:
        parts = line.split("│")
        if len(parts) < 2:
            close()
            continue
        cells = [part.strip() for part in (parts[1:-1] if line.lstrip().startswith("│") else parts)]
        if row and (len(cells) != len(row[0]) or cells[0]):
            close()
        row.append(cells)
    return squeezed


def _diagnose(console: Console, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    render_record(Record.load(RECORD), console)


def _tune(console: Console, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "train.py").write_text("optimizer.zero_grad()\n")
    render_result(_tuner(tmp_path, monkeypatch, FakeRuns(), confirm_rounds=2).run(), console)


def _check(console: Console, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    render_check(_result(REGRESSION, location=_located()), console)


def _runs_list(console: Console, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = Record.load(RECORD)
    with RunStore(tmp_path / "runs.db") as store:
        argvs = (["--epochs", "100", "--batch-size", "512", "--data", "/datasets/imagenet"], [], ["-c"])
        for n, argv in enumerate(argvs):
            copied = copy.deepcopy(record)
            copied.run_id = f"20261206-12423{n}-53d47c"
            copied.script = "/home/someone/projects/a_model_with_a_long_name/train_with_a_long_name.py"
            copied.argv = argv
            store.save(copied)
        console.print(runs_table(store.list(20)))


OUTPUTS: dict[str, Callable[[Console, Path, pytest.MonkeyPatch], None]] = {
    "diagnose": _diagnose, "tune": _tune, "check": _check, "runs list": _runs_list,
}


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_no_table_cell_is_squeezed_to_a_word_or_two_a_line(name: str, width: int, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    console = Console(width=width, record=True, force_terminal=False)
    OUTPUTS[name](console, tmp_path, monkeypatch)
    text = console.export_text()
    assert text.strip()
    assert squeezed_cells(text) == [], text


def test_the_detector_finds_the_cells_of_a_table_laid_out_with_a_narrow_column() -> None:
    """A long text in one of six columns at 80 columns, as the findings table was laid out."""
    table = Table()
    for column in ("#", "severity", "id", "finding", "upside", "evidence"):
        table.add_column(column, overflow="fold")
    table.add_row("1", "problem", "TD-COMP-023", "compiled steps are slower than eager (ratio 7.14)", "86%",
                  "ratio=7.14, eager_step_s=0.0316, compiled_step_s=0.226, cause=graph_break")
    console = Console(width=80, record=True, force_terminal=False)
    console.print(table)
    # the title, 4 lines of at most 3 words; the evidence, 6 lines of one (folded) word
    assert [cell[0] for cell in squeezed_cells(console.export_text())] == ["compiled steps", "ratio=7.14,"]
