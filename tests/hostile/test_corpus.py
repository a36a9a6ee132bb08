"""The hostile corpus (tests/hostile/), through the commands a user runs: each input gets its documented
answer (docs/reliability.md), never a traceback, with a clean terminal, in bounded memory."""

from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path

import pytest

from tests.hostile import corpus, peak_rss
from torchdoctor.cli import main
from torchdoctor.memory.snapshot import SnapshotFormatError, analyse_snapshot
from torchdoctor.tune.errors import TuneInputError
from torchdoctor.tune.result import load_result

#: file -> (command before the file, exit code, text the output must hold)
COMMANDS = {
    "trace_hostile_names.json": (["trace", "analyze"], 0, "[link=file:///etc/passwd]link[/link]"),
    "trace_invalid_json.json": (["diagnose", "--no-save", "--trace"], 2, "is not valid JSON (lexical error: invalid char in json text. near byte 787)"),
    "trace_junk_events.json": (["diagnose", "--no-save", "--trace"], 0, "caveat: trace_junk_events.json: 6 items of 'traceEvents' are not event objects"),
    "trace_nan_durations.json": (["diagnose", "--no-save", "--trace"], 0, "caveat: trace_nan_durations.json: 2 events had a NaN or infinite"),
    "trace_not_a_list.json": (["diagnose", "--no-save", "--trace"], 2, "('traceEvents' is an object, not a list of events)"),
    "trace_odd_fields.json": (["diagnose", "--no-save", "--trace"], 0, "fields of an unexpected type, read as absent or as a label ('args' 2, 'correlation' 2"),
    "trace_truncated.json": (["diagnose", "--no-save", "--trace"], 0, "caveat: trace_truncated.json: truncated trace (the file ends mid-write"),
    "trace_unknown_categories.json": (["diagnose", "--no-save", "--trace"], 0, "categories this analysis does not read ('npu_runtime' (1), 'hpu_op' (1))"),
    "record_deep.json": (["report"], 2, "not a torchdoctor Record (refused: nesting deeper than 64 levels at byte 407)"),
    "record_hostile_strings.json": (["report"], 0, "[2Jtrain.py --x=[link=file:///etc/passwd]y[/link]"),
    "record_not_json.json": (["report"], 2, "not a torchdoctor Record (invalid JSON"),
    "record_wrong_step.json": (["report"], 2, "Record field 'steps[0]' should be an object, not an integer"),
    "record_wrong_type.json": (["report"], 2, "Record field 'summary.num_steps' should be an integer, not a string"),
}  # fmt: skip
#: file -> (library reader, error it raises, text of the error)
READERS = {
    "snapshot_memo_bomb.pickle": (analyse_snapshot, SnapshotFormatError, "LONG_BINPUT at byte 3 stores into memo slot 268,435,455"),
    "snapshot_runs_code.pickle": (analyse_snapshot, SnapshotFormatError, "refusing to load a pickle that runs code (STACK_GLOBAL at byte 25)"),
    "tune_result_deep.json": (lambda path: load_result(path, path, force=True), TuneInputError, "nesting deeper than 32 levels at byte 75"),
}  # fmt: skip
_STYLES = re.compile("\x1b\\[[0-9;]*m")
_ACTIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]")


def _cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["torchdoctor", *argv])
    monkeypatch.setenv("COLUMNS", "250")  # no wrapping: messages are matched whole
    with pytest.raises(SystemExit) as end:
        main()
    out = capsys.readouterr()
    return int(end.value.code or 0), out.out + out.err


def test_every_file_of_the_corpus_has_an_expected_answer():
    assert sorted(p.name for p in corpus.FILES.iterdir()) == sorted([*COMMANDS, *READERS])


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_hostile_file_gets_its_answer_on_a_clean_terminal(name, monkeypatch, capsys):
    command, code, expected = COMMANDS[name]
    exit_code, output = _cli(monkeypatch, capsys, [*command, str(corpus.FILES / name)])
    assert (exit_code, "Traceback" in output) == (code, False), output
    assert expected in output
    assert not _ACTIVE.search(output.replace("\n", ""))


@pytest.mark.parametrize("name", sorted(READERS))
def test_each_hostile_file_read_by_a_library_gets_its_own_error(name):
    read, error, expected = READERS[name]
    with pytest.raises(error) as raised:
        read(corpus.FILES / name)
    assert expected in str(raised.value)


def test_a_gpu_trace_cut_in_half_says_so_on_the_console_and_its_findings_are_low_confidence(
        gpu_traces: Path, tmp_path: Path, monkeypatch, capsys):  # fmt: skip
    whole = gzip.decompress((gpu_traces / "v100-cnn-gpu-bound.json.gz").read_bytes())
    half = tmp_path / "v100-half.json"
    half.write_bytes(whole[: len(whole) // 2])
    exit_code, output = _cli(monkeypatch, capsys, ["diagnose", "--no-save", "--json", str(tmp_path / "r.json"),
                                                   "--trace", str(half)])  # fmt: skip
    assert exit_code == 0
    assert "caveat: v100-half.json: truncated trace" in output
    assert "GPU runs kernels only" in output and "(low confidence: see the caveats above)" in output
    record = (tmp_path / "r.json").read_text()
    assert '"confidence": "low"' in record and "truncated trace" in record


#: The large inputs whose peak memory docs/reliability.md reports, and the command each goes through.
LARGE = {
    "trace_deep_list.json": (["diagnose", "--no-save", "--trace"], 2),  # 40 KB, took 1 GB
    "trace_deep_args.json": (["diagnose", "--no-save", "--trace"], 2),  # 600 KB, took 10.9 GB
    "trace_gzip_bomb.json.gz": (["diagnose", "--no-save", "--trace"], 2),  # 0.7 MB, took 0.44 GB
    "record_many_findings.json": (["report"], 2),  # 1 MB, took 1.26 GB and 288 s; refused: no finding's fields
    "record_many_typed_findings.json": (["report"], 0),
}


@pytest.mark.parametrize("name", sorted(LARGE))
def test_a_large_hostile_input_under_one_mb_stays_under_200_mb(name, tmp_path):
    path = corpus.write_large(tmp_path, [name])[name]
    command, code = LARGE[name]
    run = peak_rss.run(["-m", *command, str(path)], timeout_s=120)
    assert run.exit == code and "Traceback" not in run.output, run.output[-2000:]
    assert path.stat().st_size < 1_000_000 and run.peak_mb < 200
