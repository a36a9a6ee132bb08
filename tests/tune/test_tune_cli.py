"""`torchdoctor tune` and `torchdoctor run --apply` on real scripts in real subprocesses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from torchdoctor.store import RunStore
from torchdoctor.zoo import demo_script
from tests.observe.helpers import WIDE_ENV

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def _tune(tmp_path: Path, *options: str, env: dict[str, str] = WIDE_ENV,
          timeout: float = 240) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "tune.json"
    command = [sys.executable, "-m", "torchdoctor", "tune", "--json", str(out), "--store",
               str(tmp_path / "runs.db"), *options]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=tmp_path, env=env)
    assert out.exists(), proc.stdout + proc.stderr
    return proc, orjson.loads(out.read_bytes())


@pytest.mark.serial  # one worker beside the demo's training helps only on a free core (x0.79 with a test beside it)
def test_tune_finds_the_demos_data_loading_fix(tmp_path: Path) -> None:
    # One intra-op thread (OMP_NUM_THREADS=1): on a busy 2-core CI machine two threads
    # oversubscribe the cores and `threads=1` is then the dominant fix (tune finds it too), which
    # would hide the data-loading fix this test is about. Smaller batch and many cheap steps keep
    # the test short and the verdict powerful. Two rounds a side: with one, a single disturbed run
    # decided the trial (x0.95 once in CI-like serial runs; x1.33 in a calm one).
    env = {**WIDE_ENV, "OMP_NUM_THREADS": "1"}
    proc, result = _tune(tmp_path, "--knobs", "num_workers", "--int-trials", "1", "--warmup-steps", "5",
                         "--steps", "80", "--no-repeat-baseline", "--rounds", "2", "--confirm-rounds", "2",
                         "--confirm-max-rounds", "3", "--", str(demo_script()), "--batch-size", "8", env=env,
                         timeout=400)
    assert proc.returncode == 0, proc.stderr
    assert result["schema_version"] == 3
    tried = [t for t in result["trials"] if t["knob"] == "num_workers"]
    assert tried, [(t["knob"], t["value"], t["reason"]) for t in result["trials"]]
    if result["search"]["load"]["loaded"]:
        # Another process kept a core busy (a neighbour the test does not control): the worker has no
        # free core and may measure slower. What must hold then is that nothing slower is kept.
        if all(t["verdict"]["verdict"] != "faster" for t in tried):
            assert "num_workers" not in result["kept"], result["summary"]
        return
    # The search finds the worker faster side by side...
    found = [t for t in tried if "faster side by side" in t["reason"]]
    assert len(found) == 1, [(t["knob"], t["value"], t["reason"]) for t in result["trials"]]
    (found,) = found
    assert found["verdict"]["verdict"] == "faster" and found["numerics"]["ok"], proc.stdout
    # The diagnosis's data-loading claim is set against that measurement (tune/claims.py).
    claim = next(c for c in result["findings"] if c["knob"] == "num_workers")
    measured = next(t for t in result["trials"] if t["index"] == claim["trial"])
    assert measured["knob"] == "num_workers" and claim["measured_speedup"] == pytest.approx(1 / measured["ratio"])
    assert claim["assessment"] in ("agrees", "over-claims", "under-claims") and claim["claimed_speedup"] > 1
    assert "the diagnosis's claims, measured" in proc.stdout
    # ...and the confirmation either confirms it, or, where the machine's other jobs leave the
    # worker no core (the gain then falls within the noise), drops it and says why: never a claim
    # it did not measure.
    if result["confirmed"]:
        assert result["kept"]["num_workers"] >= 1 and result["speedup"] > 1.0
        assert result["best_step_s"] < result["baseline_step_s"]
        assert f"num_workers={result['kept']['num_workers']}" in result["diff"]
    else:
        assert result["kept"] == {} and result["confirmation"]["status"] in ("not faster", "too noisy")
        assert result["summary"].startswith("nothing kept: the search's best was not confirmed")
    stored = list(RunStore(tmp_path / "runs.db").trials(result["tune_id"]))
    assert [t["trial"] for t in stored] == [t["index"] for t in result["trials"]]


def test_failed_and_overridden_trials_are_reported_and_the_search_goes_on(tmp_path: Path) -> None:
    proc, result = _tune(tmp_path, "--knobs", "num_workers,threads", "--int-trials", "1", "--warmup-steps", "2",
                         "--steps", "6", "--no-repeat-baseline", "--rounds", "1", "--confirm-rounds", "1",
                         "--confirm-max-rounds", "2", "--", str(SCRIPTS / "fragile.py"))
    assert proc.returncode == 0, proc.stderr
    by_knob = {t["knob"]: t for t in result["trials"]}
    assert by_knob["num_workers"]["status"] == "failed"
    assert "cannot run in a worker process" in by_knob["num_workers"]["reason"]
    # The script's own torch.set_num_threads(1) is held off while threads=2 runs, and recorded.
    assert by_knob["threads"]["value"] == 2 and by_knob["threads"]["overridden"] is None
    (held,) = by_knob["threads"]["intercepted"]
    assert held["call"] == "torch.set_num_threads(1)" and held["line"] == 19 and held["file"].endswith("fragile.py")


def test_run_apply_runs_the_script_with_the_kept_knobs(tmp_path: Path) -> None:
    result_file = tmp_path / "tune.json"
    result_file.write_bytes(orjson.dumps({"schema_version": 1, "kept": {"num_workers": 2, "threads": 1}}))
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "run", "--apply", str(result_file), "--",
                           str(SCRIPTS / "show_loader.py"), "--flag"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "num_workers=2 threads=1 args=['--flag']" in proc.stdout
    assert "Warning" not in proc.stderr, proc.stderr  # e.g. runpy's "found in sys.modules"


def test_run_apply_rejects_a_file_that_is_not_a_tune_result(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "run", "--apply", str(bad), "--",
                           str(SCRIPTS / "show_loader.py")], capture_output=True, text=True, timeout=60,
                          env=WIDE_ENV)
    assert proc.returncode == 2
    assert "not a `torchdoctor tune --json` result" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_tune_runs_every_trial_under_torchrun_and_tries_no_sync_on_ddp_accumulation(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[1] / "knobs" / "scripts" / "ddp_accum.py"
    proc, result = _tune(tmp_path, "--nproc-per-node", "2", "--knobs", "no_sync", "--no-repeat-baseline",
                         "--rounds", "1", "--confirm-rounds", "1", "--confirm-max-rounds", "2", "--warmup-steps", "2",
                         "--steps", "10", "--confirm-window", "0", "--", str(script))  # the launch, not the window
    assert proc.returncode == 0, proc.stderr
    baseline, trial = result["trials"]
    assert trial["knob"] == "no_sync" and trial["value"] == 4  # the measured micro-batches per step
    assert trial["status"] in ("kept", "rejected") and trial["verdict"] is not None, trial["reason"]
    store = RunStore(tmp_path / "runs.db")
    for row in (baseline, trial):
        record = store.load(row["run_id"])
        assert record.config["launch"]["nproc_per_node"] == 2 and len(record.ranks) == 2


def _run_apply(tmp_path: Path, result: dict, *options: str) -> subprocess.CompletedProcess[str]:
    result_file = tmp_path / "tune.json"
    result_file.write_bytes(orjson.dumps({"schema_version": 1, **result}))
    return subprocess.run([sys.executable, "-m", "torchdoctor", "run", "--apply", str(result_file), *options, "--",
                           str(SCRIPTS / "show_loader.py")], capture_output=True, text=True, timeout=60,
                          env=WIDE_ENV)


def test_run_apply_refuses_a_thread_count_that_would_exhaust_memory(tmp_path: Path) -> None:
    proc = _run_apply(tmp_path, {"kept": {"threads": 1_000_000_000}})
    assert proc.returncode == 2 and proc.stdout == ""  # nothing ran
    assert "threads takes an integer in 1.." in proc.stderr and "Traceback" not in proc.stderr


def test_run_apply_refuses_a_result_made_for_another_script_unless_forced(tmp_path: Path) -> None:
    from torchdoctor.tune.result import script_sha256

    made_for = {"kept": {"num_workers": 2}, "script": str(demo_script()), "script_sha256": script_sha256(demo_script())}
    refused = _run_apply(tmp_path, made_for)
    assert refused.returncode == 2 and "was made for" in refused.stderr and "--force" in refused.stderr
    forced = _run_apply(tmp_path, made_for, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "num_workers=2" in forced.stdout and "applied anyway (--force)" in forced.stderr


@pytest.mark.slow
def test_a_time_budget_too_short_for_the_baseline_exits_2_with_what_the_first_run_measured(tmp_path: Path) -> None:
    out = tmp_path / "tune.json"
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "tune", "--time-budget", "1", "--warmup-steps", "2",
                           "--steps", "5", "--json", str(out), "--store", str(tmp_path / "runs.db"), "--",
                           str(SCRIPTS / "own_zero_grad.py")], capture_output=True, text=True, timeout=240,
                          cwd=tmp_path, env=WIDE_ENV)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--time-budget 1 s is too short for even the baseline: its first run took" in proc.stderr
    assert "steps at" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()  # no result: nothing was tuned
    assert len(RunStore(tmp_path / "runs.db").list()) == 1  # the measured run is kept


@pytest.mark.slow
@pytest.mark.timeout(700)  # compiling on a busy 2-core machine: 105-300 s in CI, beside the other worker
def test_compile_is_tried_first_on_tiny_operators_even_when_the_profiled_baseline_was_disturbed(tmp_path) -> None:
    # The script's first run sleeps 50 ms in each of its ~3 ms steps (the counter file makes that
    # deterministic): its diagnosis times the sleep, not the operators. The operator counts still
    # say tiny operators dominate, so compile is required and tried first, and the disturbed
    # profiled run is diagnosed again before the search.
    counter = tmp_path / "runs.txt"
    proc, result = _tune(tmp_path, "--max-trials", "1", "--steps", "5", "--warmup-steps", "2",
                         "--confirm-rounds", "1", "--confirm-span", "0", "--confirm-window", "0",
                         "--", str(SCRIPTS / "tiny_activation.py"), str(counter), "1", timeout=600)
    assert proc.returncode == 0, proc.stderr
    baseline_runs = result["trials"][0]["runs"]
    assert baseline_runs[0]["disturbed"] and baseline_runs[0]["step_s"] > 0.05
    assert result["search"]["rediagnosed"]
    required = {item["knob"]: item["why"] for item in result["search"]["required"]}
    assert "tiny operators dominate" in required["compile"]
    assert result["search"]["structure"]["small_op_share"] > 0.5
    assert [t["knob"] for t in result["trials"][1:]] == ["compile"]
    assert "plan: 1 trial(s)" in proc.stdout and "the default budget of 1200 s" in proc.stdout
    # Every trial run's peak memory was sampled.
    assert result["trials"][1]["memory"]["source"] == "rss" and result["trials"][1]["memory"]["peak_bytes"] >= 0
