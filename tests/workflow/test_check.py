"""`torchdoctor check` end to end: real git repositories made in tmp_path, real observations of a
small script (forked from the fork server this process keeps), a known slowdown injected with a
sleep inside forward (+50% of a ~8 ms step, so that a shared, noisy machine cannot hide it), and a
20% threshold so that A against A cannot cross it by chance."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from torchdoctor.check import DEFAULT_POLICY, ERROR, PASS, REGRESSION, SAVED, UNDECIDED
from torchdoctor.check import servers as servers_module
from torchdoctor.cli import app
from torchdoctor.launch.forkserver import ForkServerError
from torchdoctor.store import RunStore
from torchdoctor.workflow.check import (
    CheckOptions, CheckOutputs, check_against_baseline, check_against_python, check_against_ref, save_baseline,
)

pytestmark = pytest.mark.slow

TRAIN = """\
import os, time, torch
from torch import nn
torch.set_num_threads(1)
EXTRA = {extra}  # seconds added to every forward: the deliberate slowdown
{fail}
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(8, 8)

    def forward(self, x):
        time.sleep((0.008 + EXTRA) * float(os.environ.get("TD_CHECK_SPEED", "1")))
        return self.layer(x)

model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(4, 8)
for _ in range(100000):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
"""
FAST = TRAIN.format(extra=0.0, fail="")
SLOW = TRAIN.format(extra=0.004, fail="")  # +4 ms on a ~8 ms step: +50%
BROKEN = TRAIN.format(extra=0.0, fail='raise RuntimeError("broken at this commit")')
#: Exactly 6 timed steps (no longer window for the short step): the tests here are about the gate.
OPTIONS = CheckOptions(warmup_steps=2, steps=6, timed_window_s=0, max_slowdown=0.2,
                       policy=replace(DEFAULT_POLICY, budget_s=60, max_rounds=12))
GATE = ["--warmup-steps", "2", "--steps", "6", "--timed-window", "0", "--max-slowdown", "20%", "--budget", "60",
        "--max-rounds", "12"]


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                          capture_output=True, text=True, check=True)
    return proc.stdout


def make_repo(tmp_path: Path, *versions: str, name: str = "train.py") -> Path:
    """A repository with one commit per version of the script (the last one is HEAD)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet")
    for i, text in enumerate(versions):
        (repo / name).write_text(text)
        git(repo, "add", name)
        git(repo, "commit", "--quiet", "-m", f"version {i}")
    return repo


@pytest.fixture
def in_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TD_CHECK_SPEED", raising=False)

    def enter(*versions: str) -> Path:
        repo = make_repo(tmp_path, *versions)
        monkeypatch.chdir(repo)
        return repo

    return enter


def test_a_slowdown_at_head_is_caught_located_and_reported_in_every_format(in_repo, tmp_path) -> None:
    in_repo(FAST, SLOW)
    out = {k: tmp_path / f"out.{k}" for k in ("json", "md", "xml")}
    result = CliRunner().invoke(app, ["check", "--against", "HEAD~1", *GATE, "--json", str(out["json"]),
                                      "--markdown", str(out["md"]), "--junit", str(out["xml"]), "--annotations",
                                      "--", "train.py"])
    assert result.exit_code == 1, result.output
    data = orjson.loads(out["json"].read_bytes())
    assert data["schema_version"] == 2 and data["kind"] == "torchdoctor.check" and data["mode"] == "ref"
    assert data["decision"] == REGRESSION and data["exit_code"] == 1 and data["dirty"] is False
    step = data["metrics"]["step_time"]
    assert step["gate"] == REGRESSION and step["ratio"] > 1.2 and step["ci_low"] > 1 + step["noise_floor"]
    assert data["a"]["ref"] == "HEAD~1" and data["b"]["commit"] == git(Path.cwd(), "rev-parse", "HEAD").strip()
    assert len(data["samples_s"]["A"]) == len(data["samples_s"]["B"]) == data["rounds"] >= 5
    location = data["location"]
    assert location["phases"][0]["phase"] == "forward" and location["phases"][0]["grew"]
    assert any("outside them" in note for note in location["notes"])  # a sleep is no torch operator
    assert location["traces"]["A"] and location["traces"]["B"]
    junit = ET.parse(out["xml"]).getroot()
    assert junit.get("failures") == "1" and junit.find("./testsuite/testcase/failure") is not None
    assert out["md"].read_text().startswith("## ❌ torchdoctor check: REGRESSION")
    annotations = [line for line in result.stdout.splitlines() if line.startswith("::")]
    assert annotations[0].startswith("::error title=torchdoctor check%3A REGRESSION::step time +")
    assert "forward phase" in annotations[1]


def test_a_against_a_is_no_regression(in_repo, tmp_path) -> None:
    in_repo(FAST)
    result = check_against_ref("train.py", [], "HEAD", OPTIONS, CheckOutputs(json_out=str(tmp_path / "r.json")))
    assert result.decision == PASS and result.exit_code == 0, result.reason
    assert result.metric("step_time").gate == PASS and result.aa_ratio is not None
    assert result.metric("peak_memory").gate == PASS and not result.dirty
    assert result.location is None


def test_short_steps_are_timed_over_a_longer_window_and_the_rounds_fill_the_budget(in_repo) -> None:
    in_repo(FAST)  # a ~8.5 ms step: 0.2 s of timed steps is about 24 of them, not 6
    options = CheckOptions(warmup_steps=2, steps=6, timed_window_s=0.2, max_slowdown=0.2,
                           policy=replace(DEFAULT_POLICY, budget_s=60, max_rounds=12))
    result = check_against_ref("train.py", [], "HEAD", options)
    assert result.decision == PASS, result.reason
    assert 15 <= result.settings["steps"] <= 30 and result.settings["timed_window_s"] == 0.2
    assert result.planned_rounds == 12  # the budget holds far more: capped at --max-rounds
    assert not result.warnings


def test_a_script_that_ends_before_the_longer_window_keeps_its_steps(in_repo) -> None:
    in_repo(FAST.replace("range(100000)", "range(20)"))  # 20 steps: 2 warm-up + 18, never the 60 asked
    # A 2 s window asks for 60 steps (10 x --steps) unless a step takes 111 ms or more, loaded or not.
    options = CheckOptions(warmup_steps=2, steps=6, timed_window_s=2.0, max_slowdown=0.2,
                           policy=replace(DEFAULT_POLICY, budget_s=60, max_rounds=6))
    result = check_against_ref("train.py", [], "HEAD", options)
    assert result.decision == PASS, result.reason
    assert result.settings["steps"] == 6
    assert any("ended after 18 timed steps" in w for w in result.warnings), result.warnings


def test_a_dirty_tree_is_measured_as_it_is_and_marked(in_repo) -> None:
    repo = in_repo(FAST)
    (repo / "train.py").write_text(SLOW)  # not committed
    result = check_against_ref("train.py", [], "HEAD", OPTIONS)
    assert result.decision == REGRESSION and result.exit_code == 1, result.reason
    assert result.dirty and result.dirty_files == ["train.py"]
    assert any("uncommitted changes" in w for w in result.warnings)
    assert result.b["label"] == "working tree (uncommitted changes)"


def test_bad_refs_and_a_script_outside_a_repository_are_refused(in_repo, tmp_path) -> None:
    repo = in_repo(FAST)
    junit = tmp_path / "junit.xml"
    result = check_against_ref("train.py", [], "no-such-branch", OPTIONS, CheckOutputs(junit_out=junit))
    assert result.decision == ERROR and result.exit_code == 2 and result.error["kind"] == "bad_ref"
    assert "no-such-branch" in result.reason and result.observations == 0
    assert ET.parse(junit).getroot().get("errors") == "1"
    (repo / "other.py").write_text(FAST)
    git(repo, "add", "other.py")
    git(repo, "commit", "--quiet", "-m", "other")
    missing = check_against_ref("other.py", [], "HEAD~1", OPTIONS)
    assert missing.error["kind"] == "bad_ref" and "does not exist at HEAD~1" in missing.reason
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "train.py").write_text(FAST)
    elsewhere = check_against_ref(str(outside / "train.py"), [], "HEAD", OPTIONS)
    assert elsewhere.error["kind"] == "not_a_repo"


def test_a_script_that_fails_on_one_side_only_names_the_side_and_its_error(in_repo) -> None:
    in_repo(BROKEN, FAST)
    result = check_against_ref("train.py", [], "HEAD~1", OPTIONS)
    assert result.decision == ERROR and result.exit_code == 2
    assert result.error["kind"] == "side_failed" and result.error["side"] == "A"
    assert "side A (HEAD~1" in result.reason and "RuntimeError: broken at this commit" in result.reason
    assert "raise RuntimeError" in result.error["detail"]


def test_a_ref_side_without_the_untracked_data_says_to_run_it_here(in_repo) -> None:
    reads_data = FAST.replace("model = Net()", "SCALE = float(open('data.txt').read())\nmodel = Net()")
    repo = in_repo(reads_data)
    (repo / "data.txt").write_text("1.0")  # data the script reads, never committed
    result = check_against_ref("train.py", [], "HEAD", OPTIONS)
    assert result.decision == ERROR and result.error["side"] == "A"
    assert "FileNotFoundError" in result.reason and "data.txt" in result.reason and "--same-cwd" in result.reason
    assert check_against_ref("train.py", [], "HEAD", replace(OPTIONS, same_cwd=True)).decision == PASS


def test_another_interpreter_is_compared_on_the_same_code(in_repo, python_wrapper) -> None:
    in_repo(FAST)
    result = check_against_python("train.py", [], str(python_wrapper), OPTIONS)  # A's steps are a third shorter
    assert result.decision == REGRESSION and result.exit_code == 1, result.reason
    assert result.mode == "python" and result.a["python"] == str(python_wrapper)
    assert result.a["torch"] == result.b["torch"]


def test_bad_interpreter_is_refused(in_repo, tmp_path) -> None:
    in_repo(FAST)
    fake = tmp_path / "not-python"
    fake.write_text("#!/bin/sh\necho 'No module named torch' >&2\nexit 1\n")
    fake.chmod(0o755)
    result = check_against_python("train.py", [], str(fake), OPTIONS)
    assert result.error["kind"] == "bad_python" and "No module named torch" in result.reason
    assert check_against_python("train.py", [], str(tmp_path / "nope"), OPTIONS).error["kind"] == "bad_python"


def test_a_stored_baseline_catches_a_slowdown_and_refuses_another_machine(in_repo, tmp_path) -> None:
    repo = in_repo(FAST)
    outputs = CheckOutputs(store_path=tmp_path / "store" / "runs.db")
    saved = save_baseline("train.py", [], "main", OPTIONS, outputs)
    assert saved.decision == SAVED and saved.exit_code == 0, saved.reason
    with RunStore(outputs.store_path) as store:
        document = store.load_baseline("main")
    assert document["kind"] == "torchdoctor.check.baseline" and len(document["observations"]) == 10
    # Later, the code is slower. Unpaired against observations made earlier, with the baseline's own
    # noise as the floor, a stored baseline is less sensitive than an interleaved check: +100% here.
    (repo / "train.py").write_text(TRAIN.format(extra=0.008, fail=""))
    slow = check_against_baseline("train.py", [], "main", OPTIONS, outputs)
    assert slow.decision == REGRESSION and slow.exit_code == 1, slow.reason
    assert slow.mode == "baseline" and slow.location is not None and slow.location.phases[0]["phase"] == "forward"
    # The same baseline, committed next to the code as JSON, from another machine: refused.
    document["fingerprint"]["cpu_model"] = "Some Other CPU"
    (tmp_path / "baseline.json").write_bytes(orjson.dumps(document))
    other = check_against_baseline("train.py", [], str(tmp_path / "baseline.json"), OPTIONS, outputs)
    assert other.decision == ERROR and other.exit_code == 2 and other.error["kind"] == "env_mismatch"
    assert "cpu_model: 'Some Other CPU' (baseline)" in other.reason
    missing = check_against_baseline("train.py", [], "nightly", OPTIONS, outputs)
    assert missing.error["kind"] == "bad_baseline" and "stored: main" in missing.reason


def test_a_budget_too_small_is_undecided_and_says_why(in_repo) -> None:
    in_repo(FAST)
    options = CheckOptions(warmup_steps=2, steps=6, policy=replace(DEFAULT_POLICY, budget_s=0.5))
    result = check_against_ref("train.py", [], "HEAD", options)
    assert result.decision == UNDECIDED and result.exit_code == 2
    assert result.stop_reason == "budget" and result.rounds < 5
    assert "cannot decide within the budget of 0.5 s" in result.reason and "5 needed" in result.reason


class StuckServer:
    """A fork server that never gets ready (`error`: how it fails); it records whether it was closed."""

    made: list[StuckServer] = []

    def __init__(self, python: str, error: BaseException) -> None:
        self.python, self.error, self.closed = python, error, False
        StuckServer.made.append(self)

    def start(self) -> StuckServer:
        return self

    alive = True

    def wait_ready(self) -> None:
        raise self.error

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("error", [ForkServerError("could not start: no torch"), RuntimeError("unexpected")])
def test_the_checks_fork_servers_are_closed_when_it_ends_on_an_error_or_an_exception(
        in_repo, tmp_path, monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    in_repo(FAST)
    StuckServer.made = []
    monkeypatch.setattr(servers_module, "ForkServer", lambda python: StuckServer(python, error))
    outputs = CheckOutputs(store_path=tmp_path / "runs.db", progress=False)
    if isinstance(error, ForkServerError):
        result = check_against_ref("train.py", [], "HEAD", OPTIONS, outputs)
        assert result.decision == ERROR and result.error["kind"] == "side_failed" and "no torch" in result.reason
    else:
        with pytest.raises(RuntimeError, match="unexpected"):
            check_against_ref("train.py", [], "HEAD", OPTIONS, outputs)
    assert StuckServer.made and all(server.closed for server in StuckServer.made)


def test_a_check_stopped_before_any_round_is_undecided_and_every_output_is_written(in_repo, tmp_path,
                                                                                   monkeypatch) -> None:
    in_repo(FAST)
    monkeypatch.setattr(servers_module, "ForkServer", lambda python: StuckServer(python, KeyboardInterrupt()))
    out = {k: tmp_path / f"out.{k}" for k in ("json", "md", "xml")}
    outputs = CheckOutputs(json_out=str(out["json"]), markdown_out=out["md"], junit_out=out["xml"],
                           store_path=tmp_path / "runs.db", progress=False)
    result = check_against_ref("train.py", [], "HEAD", OPTIONS, outputs)
    assert result.decision == UNDECIDED and result.stop_reason == "interrupted"
    assert result.reason == "interrupted (Ctrl-C) after 0 complete round(s): nothing was measured"
    assert orjson.loads(out["json"].read_bytes())["reason"] == result.reason
    assert out["md"].exists() and ET.parse(out["xml"]).getroot() is not None
