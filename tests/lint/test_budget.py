"""A generated file costs lint a bounded size and CPU time: it is skipped with a note that says
which bound it passed, no fix is written into it, and the other files are linted."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import orjson
import pytest

from torchdoctor.lint import lint_paths, plan_fixes
from torchdoctor.lint.budget import MAX_PARSED_BYTES, too_slow
from torchdoctor.lint.engine import lint_source
from torchdoctor.lint.selection import Selection
from tests.lint.files import write

FIXABLE = "import torch\nx = torch.zeros(3).cuda()\n"


def _assignments(count: int) -> str:
    """A generated module: `count` flagged (and fixable) statements, a few CPU seconds to lint
    at 2,000, far more than the budgets below on any machine."""
    return "import torch\n" + "".join(f"x{i} = torch.zeros({i}).cuda()\n" for i in range(count))


def _table(size: int) -> str:
    """A generated dict literal of at least `size` bytes."""
    rows = size // 30 + 1
    return "TABLE = {\n" + "".join(f'    "key{i:08d}": ({i}, "v{i:08d}"),\n' for i in range(rows)) + "}\n"


def test_a_file_larger_than_the_parse_bound_is_skipped_unparsed_and_the_others_are_linted(tmp_path: Path) -> None:
    table = write(tmp_path, "table.py", _table(MAX_PARSED_BYTES + 1))
    write(tmp_path, "train.py", FIXABLE)
    result = lint_paths([tmp_path])
    assert [(Path(v.path).name, v.code) for v in result.violations] == [("train.py", "TDL202")]
    assert result.files_checked == 1
    kib = table.stat().st_size // 1024
    assert [(s.path, s.reason) for s in result.skipped] == [
        (str(table), f"too large to analyse ({kib} KiB, at most 512 KiB are parsed; generated code?); skipped")
    ]


def test_a_file_whose_analysis_runs_past_its_cpu_time_is_abandoned_and_skipped(tmp_path: Path) -> None:
    generated = write(tmp_path, "generated.py", _assignments(2000))
    write(tmp_path, "train.py", FIXABLE)
    result = lint_paths([tmp_path], file_seconds=0.05)
    assert [(Path(v.path).name, v.line) for v in result.violations] == [("train.py", 2)]
    assert [(s.path, s.reason) for s in result.skipped] == [(str(generated), too_slow(0.05))]
    assert too_slow(0.05) == "too slow to analyse within 0.05 s of CPU time (generated code?); skipped"
    assert [f.path.name for f in plan_fixes([tmp_path], file_seconds=0.05)] == ["train.py"]


def test_within_its_time_the_same_file_is_linted_whole() -> None:
    result = lint_source(_assignments(20), "generated.py", Selection(), seconds=60)
    assert result.skipped is None and len(result.violations) == 20


def test_the_cpu_timer_and_its_signal_are_put_back_after_each_file() -> None:
    lint_source(_assignments(2000), "generated.py", Selection(), seconds=0.05)
    lint_source(FIXABLE, "train.py", Selection(), seconds=60)
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGPROF) == signal.SIG_DFL


def test_off_the_main_thread_only_the_size_bound_applies_and_the_file_is_linted() -> None:
    found = []
    worker = threading.Thread(target=lambda: found.append(lint_source(FIXABLE, "train.py", Selection(), seconds=0.001)))
    worker.start()
    worker.join()
    assert [v.code for v in found[0].violations] == ["TDL202"]


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_the_cli_names_the_skipped_file_and_its_bound(tmp_path: Path, fmt: str, capsys, monkeypatch) -> None:
    import sys

    from torchdoctor.cli import main

    write(tmp_path, "generated.py", _assignments(2000))
    write(tmp_path, "train.py", FIXABLE)
    monkeypatch.setattr(sys, "argv", ["torchdoctor", "lint", "--format", fmt, "--file-seconds", "0.05", str(tmp_path)])
    monkeypatch.setenv("COLUMNS", "250")
    with pytest.raises(SystemExit) as end:
        main()
    out = capsys.readouterr()
    assert end.value.code == 1 and "Traceback" not in out.err
    assert f"generated.py: {too_slow(0.05)}" in out.err
    if fmt == "json":
        skipped = orjson.loads(out.out)["skipped"]
        assert skipped == [{"path": str(tmp_path / "generated.py"), "reason": too_slow(0.05)}]
