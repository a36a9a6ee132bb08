"""Strings from files reach the terminal only through the sanitiser, in every printer: `run
--apply`'s warnings (the tune result's `script`), `lint --fix`'s diff and `report -o`'s "wrote
PATH". Escape sequences (screen clear, OSC 52 clipboard write, OSC 8 link) are removed and a
rich markup tag (`[/x]`) is printed as it is, never read as markup."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import orjson
import pytest

from torchdoctor.cli import main
from torchdoctor.report.safe_text import for_stream

HOSTILE = "\x1b[2J\x1b]52;c;aGk=\x07\x1b]8;;file:///etc/passwd\x07link\x1b]8;;\x07 [/x]"
RECORD = Path(__file__).parents[1] / "fixtures" / "records" / "cpu-compile-breaks.json"


def _cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["torchdoctor", *argv])
    monkeypatch.setenv("COLUMNS", "250")
    with pytest.raises(SystemExit) as end:
        main()
    out = capsys.readouterr()
    return int(end.value.code or 0), out.out + out.err


def test_run_apply_prints_a_hostile_script_name_of_the_result_without_its_escapes(tmp_path, monkeypatch, capsys):
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    result = tmp_path / "result.json"
    result.write_bytes(orjson.dumps({"schema_version": 3, "kept": {}, "script": HOSTILE, "script_sha256": "0" * 64}))
    code, output = _cli(monkeypatch, capsys, ["run", "--apply", str(result), "--force", "--", str(script)])
    assert (code, "\x1b" in output, "Traceback" in output) == (0, False, False), output
    assert "[2J]52;c;aGk=]8;;file:///etc/passwdlink]8;; [/x]" in output


def test_lint_fix_shows_its_diff_of_a_hostile_line_and_path_without_escapes(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "a["
    folder.mkdir()
    source = folder / "x]s.py"  # the path reads `a[/x]s.py`
    source.write_text(f"import torch\nx = torch.zeros(3).cuda()  # {HOSTILE}\n")
    code, output = _cli(monkeypatch, capsys, ["lint", "--fix", str(tmp_path)])
    assert (code, "\x1b" in output, "Traceback" in output) == (0, False, False), output
    assert 'x = torch.zeros(3, device="cuda")  # [2J' in output
    assert "\x1b" in source.read_text()  # the file itself keeps its bytes


def test_report_output_says_where_it_wrote_a_path_that_holds_markup(tmp_path, monkeypatch, capsys):
    target = tmp_path / "a[" / "x]report.txt"
    target.parent.mkdir()
    code, output = _cli(monkeypatch, capsys, ["report", str(RECORD), "-o", str(target)])
    assert (code, "Traceback" in output) == (0, False), output
    assert f"wrote {target}" in output.replace("\n", "")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_diff_is_cleaned_for_a_terminal_and_kept_byte_for_byte_for_a_file_or_pipe():
    diff = f"+x = 1  # {HOSTILE}\r\n"
    assert for_stream(diff, _Terminal()) == "+x = 1  # [2J]52;c;aGk=]8;;file:///etc/passwdlink]8;; [/x]\n"
    assert for_stream(diff, io.StringIO()) == diff


def test_run_apply_says_why_a_script_ended_by_a_signal_may_have_died(tmp_path, monkeypatch, capsys):
    script = tmp_path / "s.py"
    script.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    result = tmp_path / "result.json"
    result.write_bytes(orjson.dumps({"schema_version": 3, "kept": {"cudnn_benchmark": True}, "script_sha256": None}))
    code, output = _cli(monkeypatch, capsys, ["run", "--apply", str(result), "--", str(script)])
    assert code == 137, output
    assert ("error: the script was ended by SIGKILL (the out-of-memory killer sends it: a knob such as batch_size "
            "can need more memory) while running with cudnn_benchmark=True") in " ".join(output.split())
