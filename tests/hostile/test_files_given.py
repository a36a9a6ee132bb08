"""Files a user names (inputs to read, outputs to write, a store) through the commands a user runs:
a non-regular input is refused before it can block, an input is read within its bound, an output is
written whole or said to have failed after the report was printed, and nothing is written outside
where the user asked."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.hostile import corpus
from torchdoctor.cli import main
from torchdoctor.outputs import OUTPUT_EXIT_CODE, OutputError

TRACE = corpus.FILES / "trace_unknown_categories.json"


def _cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["torchdoctor", *argv])
    monkeypatch.setenv("COLUMNS", "250")
    with pytest.raises(SystemExit) as end:
        main()
    out = capsys.readouterr()
    return int(end.value.code or 0), out.out, out.err


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "input.json"
    os.mkfifo(path)  # nobody writes it: opening it for reading would block forever
    return path


@pytest.mark.parametrize("command, expected", [
    (["diagnose", "--no-save", "--trace"], "cannot read trace {path}: a FIFO, not a regular file"),
    (["trace", "analyze"], "cannot read trace {path}: a FIFO, not a regular file"),
    (["report"], "cannot read Record {path}: a FIFO, not a regular file"),
    (["run", "--apply", "{path}", "--", "{script}"], "cannot read tune result {path}: a FIFO, not a regular file"),
])  # fmt: skip
def test_a_fifo_given_as_any_input_is_refused_without_blocking(command, expected, fifo, tmp_path, monkeypatch, capsys):
    script = tmp_path / "s.py"
    script.write_text("pass\n")
    argv = [a.format(path=fifo, script=script) for a in command]
    code, _, err = _cli(monkeypatch, capsys, argv if "{path}" in " ".join(command) else [*argv, str(fifo)])
    assert code == 2 and expected.format(path=fifo) in " ".join(err.split()), err


def test_dev_zero_as_a_tune_result_is_refused_at_once(tmp_path, monkeypatch, capsys):
    (tmp_path / "s.py").write_text("pass\n")
    code, _, err = _cli(monkeypatch, capsys, ["run", "--apply", "/dev/zero", "--", str(tmp_path / "s.py")])
    assert code == 2 and "/dev/zero: a character device, not a regular file" in " ".join(err.split())


def test_a_record_past_its_bound_is_refused_whatever_size_the_file_system_reports(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("torchdoctor.record.MAX_RECORD_BYTES", 100)
    (tmp_path / "r.json").write_bytes(b'{"schema_version": 1, "warnings": ["' + b"w" * 200 + b'"]}')
    code, _, err = _cli(monkeypatch, capsys, ["report", str(tmp_path / "r.json")])
    assert code == 2 and "larger than 100 bytes" in err


def test_a_python_file_past_its_bound_is_reported_unreadable_and_the_others_linted(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("torchdoctor.lint.run.MAX_SOURCE_BYTES", 100)
    monkeypatch.setattr("torchdoctor.lint.program.MAX_SOURCE_BYTES", 100)
    (tmp_path / "big.py").write_text("x = 1\n" * 100)
    (tmp_path / "small.py").write_text("x = 1\n")
    code, out, err = _cli(monkeypatch, capsys, ["lint", str(tmp_path)])
    assert "larger than 100 bytes" in out + err and "1 unreadable file(s), in 1 file(s) checked" in out + err


def test_the_console_report_comes_first_and_the_failed_output_is_named(tmp_path, monkeypatch, capsys):
    html = tmp_path / "r.html"
    code, out, err = _cli(monkeypatch, capsys, ["diagnose", "--no-save", "--trace", str(TRACE),
                                                "--json", "/dev/full", "--html", str(html)])
    assert code == OUTPUT_EXIT_CODE and "Traceback" not in out + err
    assert TRACE.name in out and "cannot write --json /dev/full: No space left on device" in " ".join(err.split())
    assert html.read_text().startswith("<!")  # the other output is still written


def test_a_folder_as_an_output_is_an_error_naming_it(tmp_path, monkeypatch, capsys):
    code, _, err = _cli(monkeypatch, capsys, ["trace", "analyze", str(TRACE), "--json", str(tmp_path)])
    assert code == OUTPUT_EXIT_CODE and f"cannot write --json {tmp_path}: it is a directory" in " ".join(err.split())


def test_a_device_as_the_store_is_refused_and_nothing_made_beside_it(tmp_path, monkeypatch, capsys):
    os.mkfifo(tmp_path / "runs.db")
    code, _, err = _cli(monkeypatch, capsys, ["diagnose", "--store", str(tmp_path / "runs.db"), "--trace", str(TRACE)])
    assert code == 2 and "is a FIFO, not a regular file" in " ".join(err.split())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.db"]


@pytest.mark.slow
def test_no_save_leaves_no_folder_in_the_temporary_directory(tmp_path):
    import subprocess

    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    script = tmp_path / "s.py"
    script.write_text("import time\nimport torchdoctor\nfor _ in range(20):\n    time.sleep(0.001)\n"
                      "    torchdoctor.step()\n")
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "diagnose", "--no-save", "--warmup-steps", "2",
                           "--steps", "2", "--no-profile", "--no-memory", "--", str(script)],
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("torchdoctor-")] == []


@pytest.mark.parametrize("argv, message", [
    (["trace", "analyze", str(TRACE), "--top", "-1"], "--top"),
    (["trace", "analyze", str(TRACE), "--steps", "5-1"], "FIRST <= LAST"),
    (["runs", "list", "--limit", "1e20"], "--limit"),
    (["runs", "list", "--limit", "99999999999999999999"], "--limit"),
    (["diagnose", "--steps", "99999999999999999999", "--", "s.py"], "--steps"),
    (["load", "http://127.0.0.1:99999/"], "port in 0..65535"),
])  # fmt: skip
def test_a_cli_value_out_of_range_is_a_usage_error(argv, message, monkeypatch, capsys):
    code, out, err = _cli(monkeypatch, capsys, argv)
    assert code == 2 and "Traceback" not in out + err and message in out + err


def test_lint_fix_never_follows_a_link_out_of_the_folder_given(tmp_path, monkeypatch, capsys):
    outside = tmp_path / "outside.py"
    outside.write_text("import torch\nx = torch.tensor([1]).cuda()\n")
    before = outside.read_text()
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "link.py").symlink_to(outside)
    (tmp_path / "repo" / "sub").symlink_to(tmp_path, target_is_directory=True)
    _cli(monkeypatch, capsys, ["lint", "--fix", str(tmp_path / "repo")])
    assert outside.read_text() == before


def test_lint_fix_on_a_read_only_file_is_an_error_naming_it(tmp_path, monkeypatch, capsys):
    from torchdoctor.lint.run import FileFix

    path = tmp_path / "ro.py"
    path.write_text("x = 1\n")
    path.chmod(0o444)
    if os.access(path, os.W_OK):
        pytest.skip("running as a user that writes anywhere")
    with pytest.raises(OutputError, match=f"cannot write the fixed file {path}: the file is read-only"):
        FileFix(path, "x = 1\n", "x = 2\n").write()
    assert path.read_text() == "x = 1\n"


def test_lint_fix_reports_a_file_it_cannot_write_and_fixes_the_others(tmp_path, monkeypatch, capsys):
    source = "import torch\nx = torch.tensor([1]).cuda()\n"
    stuck = tmp_path / ("a" * 247 + ".py")  # its temporary file's name would pass NAME_MAX: unwritable
    stuck.write_text(source)
    (tmp_path / "b.py").write_text(source)
    code, _, err = _cli(monkeypatch, capsys, ["lint", "--fix", str(tmp_path)])
    assert code == OUTPUT_EXIT_CODE
    assert f"cannot write the fixed file {stuck}" in err.replace("\n", "")
    assert (tmp_path / "b.py").read_text() != source and stuck.read_text() == source
    assert "fixed 1 file(s), 1 could not be written" in err and "violation(s)" in err
