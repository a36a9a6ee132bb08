"""Run-time facts of real torchrun jobs (gloo, two ranks) reach `record.distributed`: gradient
accumulation without no_sync, a DistributedSampler without set_epoch, unbalanced batches, FSDP2,
a crashing rank, mismatched step counts, and a missing or truncated trace."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

import pytest

from tests.observe.helpers import FAST, run_diagnose
from torchdoctor.analyse import analyse_record

pytestmark = pytest.mark.slow
SCRIPTS = Path(__file__).resolve().parent / "scripts"


def _diagnose(tmp_path, name, *args, profile=False):
    options = [*FAST, "--nproc-per-node", "2"] + ([] if profile else ["--no-profile"])
    return run_diagnose(tmp_path, str(SCRIPTS / name), *args, options=options)


@pytest.mark.parametrize("args, expected_syncs", [([], 4.0), (["--no-sync"], 1.0)])
def test_gradient_accumulation_counts_allreduces_per_optimizer_step(tmp_path, args, expected_syncs):
    proc, record = _diagnose(tmp_path, "ddp_accumulation.py", *args)
    assert proc.returncode == 0, proc.stderr
    sync = record.distributed["runtime"]["grad_sync"]
    assert sync["backward_per_optimizer_step"] == 4.0
    assert sync["allreduce_backwards_per_optimizer_step"] == expected_syncs
    assert sync["accumulation_without_no_sync"] is (not args)
    ddp = record.distributed["runtime"]["ddp"]
    assert ddp["find_unused_parameters"] and ddp["find_unused_parameters_unneeded"]
    assert ddp["buckets_count"] == len(ddp["bucket_sizes_bytes"]) >= 1


def test_sampler_without_set_epoch_and_unbalanced_batches_are_detected(tmp_path):
    proc, record = _diagnose(tmp_path, "ddp_sampler.py")
    assert proc.returncode == 0, proc.stderr
    runtime = record.distributed["runtime"]
    assert runtime["sampler"]["set_epoch_missing"] is True
    assert runtime["sampler"]["ranks_repeating"] == [0, 1]
    cost = runtime["batch_cost"]
    assert cost["unbalanced"] and cost["idle_fraction"] > 0.25  # rank 1's samples are 4x longer: ~0.37
    assert cost["heaviest_rank_by_step"]["1"] == 1.0


def test_the_length_bucketing_sampler_with_set_epoch_balances_the_ranks(tmp_path):
    proc, record = _diagnose(tmp_path, "ddp_sampler.py", "--fixed")
    assert proc.returncode == 0, proc.stderr
    cost = record.distributed["runtime"]["batch_cost"]
    assert not cost["unbalanced"] and cost["idle_fraction"] < 0.10  # measured: 0.03


def test_a_crashing_rank_is_named_with_its_error_and_what_was_measured(tmp_path):
    proc, record = _diagnose(tmp_path, "ddp_rank_crash.py")
    assert proc.returncode == 1
    assert record.exit.reason == "script_error"
    assert record.exit.message.startswith("rank 1 failed first: ")
    first, second = record.distributed["failed_ranks"]
    assert first["rank"] == 1 and first["error"] == "RuntimeError: injected failure on rank 1 at step 5"
    assert first["steps_measured"] == 3 and second["rank"] == 0  # warm-up 2, then 3 timed steps
    assert record.distributed["ranks_count"] == 2 and record.distributed["step_s_median_over_ranks"] > 0


def test_mismatched_step_counts_are_a_warning(tmp_path):
    proc, record = _diagnose(tmp_path, "uneven_steps.py")
    assert proc.returncode == 0, proc.stderr
    assert not record.distributed["step_counts_match"]
    assert [len(r["steps"]) for r in record.ranks] == [6, 3]
    assert "rank 0: 6, rank 1: 3" in record.distributed["warnings"][0]


@pytest.fixture(scope="module")
def fsdp2_record(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("fsdp2")
    proc, record = _diagnose(tmp_path, "fsdp2_train.py", profile=True)
    assert proc.returncode == 0, proc.stderr
    return record


def test_fsdp2_training_is_diagnosed_end_to_end(fsdp2_record):
    record = fsdp2_record
    assert record.exit.reason == "completed" and [len(r["steps"]) for r in record.ranks] == [6, 6]
    assert record.env["models"][0]["class"].startswith("FSDP")
    assert len(record.artifacts["traces"]) == 2 and len(record.trace["ranks"]) == 2
    assert record.distributed["ranks_count"] == 2 and record.distributed["runtime"]["ddp"] is None
    assert record.distributed["runtime"]["batch_cost"]["idle_fraction"] == 0.0


def test_a_missing_or_truncated_rank_trace_leaves_the_analysis_running_with_a_warning(fsdp2_record, tmp_path):
    traces = [tmp_path / Path(t).name for t in fsdp2_record.artifacts["traces"]]
    for source, copy in zip(fsdp2_record.artifacts["traces"], traces):
        copy.write_bytes(Path(source).read_bytes())
    text = gzip.decompress(traces[1].read_bytes())
    traces[1].write_bytes(gzip.compress(text[: len(text) // 2]))
    ranks = [{**r, "traces": [str(t)]} for r, t in zip(fsdp2_record.ranks, traces)]
    base = replace(fsdp2_record, ranks=ranks, artifacts={"traces": [str(t) for t in traces]})
    truncated = analyse_record(base, lint=False)
    assert len(truncated.trace["ranks"]) == 1, truncated.trace.get("excluded")  # the cut rank is left out, named
    assert [e["rank"] for e in truncated.trace["excluded"]] == [1], truncated.trace["excluded"]
    traces[1].unlink()
    missing = analyse_record(base, lint=False)
    assert len(missing.trace["ranks"]) == 1 and missing.distributed["ranks_count"] == 2
    assert any(w.startswith("rank 1: trace file missing") for w in missing.distributed["warnings"])


def test_a_rank_trace_that_is_not_a_trace_is_left_out_and_named_with_why(fsdp2_record, tmp_path):
    traces = [tmp_path / Path(t).name for t in fsdp2_record.artifacts["traces"]]
    traces[0].write_bytes(Path(fsdp2_record.artifacts["traces"][0]).read_bytes())
    traces[1].write_bytes(gzip.compress(b'{"traceEvents": [{"ph": X}]}'))
    assert fsdp2_record.trace  # the Record carries the analysis of its own (readable) files
    analysed = analyse_record(replace(fsdp2_record, artifacts={"traces": [str(t) for t in traces]}), lint=False)
    assert len(analysed.trace["ranks"]) == 1  # the readable rank is analysed
    (excluded,) = analysed.trace["excluded"]
    assert excluded["path"] == str(traces[1]) and "not valid JSON" in excluded["reason"], excluded
