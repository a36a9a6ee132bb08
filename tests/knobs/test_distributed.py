"""DDP and FSDP2 knobs: when they apply, and what they do to real 2-rank gloo jobs under torchrun."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

from torchdoctor.knobs import REGISTRY
from torchdoctor.knobs.diff import unified_diff
from torchdoctor.launch.apply import KNOBS_ENV, command
from torchdoctor.record import Record
from torchdoctor.tune import TuneConfig
from torchdoctor.tune.trial import CANDIDATE, RunRequest, run_trial

SCRIPTS = Path(__file__).resolve().parent / "scripts"
MB = 1 << 20


def _ddp_record(**ddp: object) -> Record:
    settings = {"gradient_as_bucket_view": False, "static_graph": False, "bucket_bytes_cap": 25 * MB, **ddp}
    return Record(env={"models": [{"class": "DistributedDataParallel", "parameter_bytes": 40 * MB, "ddp": settings}]})


def test_ddp_knobs_apply_only_to_ddp_scripts_and_only_when_not_already_on() -> None:
    plain = Record(env={"models": [{"class": "Sequential", "module_types": {"Linear": 2}}]})
    for name in ("gradient_as_bucket_view", "static_graph", "bucket_cap_mb", "no_sync", "reshard_after_forward"):
        assert not REGISTRY[name].applies(plain), name
    assert REGISTRY["gradient_as_bucket_view"].applies(_ddp_record())
    assert not REGISTRY["gradient_as_bucket_view"].applies(_ddp_record(gradient_as_bucket_view=True))
    assert not REGISTRY["static_graph"].applies(_ddp_record(static_graph=True))
    bucket = REGISTRY["bucket_cap_mb"]
    assert bucket.current(_ddp_record()) == 25
    span = bucket.int_range(_ddp_record())
    assert (span.low, span.high) == (1, 40) and span.first != 25  # 25 is what already ran


def test_no_sync_applies_on_measured_accumulation_and_uses_its_micro_batch_count() -> None:
    grad_sync = {"accumulation_without_no_sync": True, "backward_per_optimizer_step": 4.0}
    record = _ddp_record()
    record.distributed = {"runtime": {"grad_sync": grad_sync}}
    assert REGISTRY["no_sync"].applies(record)
    assert REGISTRY["no_sync"].choices(record) == [4]
    record.distributed = {"runtime": {"grad_sync": {**grad_sync, "accumulation_without_no_sync": False}}}
    assert not REGISTRY["no_sync"].applies(record)


def test_reshard_after_forward_applies_where_fully_shard_made_fsdp_classes() -> None:
    record = Record(env={"models": [{"class": "FSDPSequential", "module_types": {"FSDPSequential": 1, "FSDPLinear": 2}}]})
    assert REGISTRY["reshard_after_forward"].applies(record)


def test_ddp_constructor_knobs_become_a_diff_of_the_call() -> None:
    diff = unified_diff(SCRIPTS / "ddp_accum.py", {"gradient_as_bucket_view": True, "bucket_cap_mb": 4})
    assert diff is not None
    assert "gradient_as_bucket_view=True" in diff and "bucket_cap_mb=4" in diff


def test_ddp_knobs_change_the_ddp_module_and_its_all_reduces_under_torchrun(tmp_path: Path) -> None:
    config = TuneConfig(warmup_steps=2, timing_steps=5, nproc_per_node=2, trial_timeout_s=120)
    static = run_trial(SCRIPTS / "ddp_accum.py", [], config,
                       RunRequest({"static_graph": True}, CANDIDATE, tmp_path / "static"), index=1, knob="static_graph")
    assert static.status == "baseline", static.reason  # measured, not failed
    assert static.record.env["models"][0]["ddp"]["static_graph"]
    assert not REGISTRY["no_sync"].applies(static.record)  # the two do not combine
    knobs = {"gradient_as_bucket_view": True, "bucket_cap_mb": 1, "no_sync": 4}
    trial = run_trial(SCRIPTS / "ddp_accum.py", [], config, RunRequest(knobs, CANDIDATE, tmp_path / "sync"), index=2,
                      knob="no_sync")
    assert trial.status == "baseline", trial.reason
    assert len(trial.record.ranks) == 2
    ddp = trial.record.env["models"][0]["ddp"]
    assert ddp["gradient_as_bucket_view"] and ddp["bucket_bytes_cap"] == MB
    assert not REGISTRY["static_graph"].applies(trial.record)
    grad_sync = trial.record.distributed["runtime"]["grad_sync"]
    assert grad_sync["backward_per_optimizer_step"] == 4.0
    assert grad_sync["allreduce_backwards_per_optimizer_step"] == 1.0  # was 4.0 without the knob
    assert not grad_sync["accumulation_without_no_sync"]


def test_reshard_after_forward_is_forced_on_every_fully_shard_call_under_torchrun(tmp_path: Path) -> None:
    env = {**os.environ, KNOBS_ENV: orjson.dumps({"reshard_after_forward": False}).decode()}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           f"--log-dir={tmp_path}", "--no-python", *command(SCRIPTS / "fsdp2_reshard.py", [])],
                          capture_output=True, text=True, timeout=120, env=env)
    # Not the exit code: gloo sometimes aborts a rank at teardown on torch 2.13 (docs/tune.md).
    for rank in (0, 1):
        assert f"rank {rank} reshards after forward: False" in proc.stdout, proc.stdout + proc.stderr
