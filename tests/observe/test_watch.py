"""The whole run's writer in the observed process (observe.watch): steps one by one up to a limit,
then blocks that keep the slow steps; stack samples naming the script's own function; memory."""

from __future__ import annotations

import time

import pytest

from torchdoctor.goodput import read_watch
from torchdoctor.observe.watch import RunWatch


def _watch(tmp_path, **options) -> RunWatch:
    defaults = {"sample_interval_s": 0.01, "raw_steps": 50, "max_bytes": 2**20}
    return RunWatch(str(tmp_path), 0, **{**defaults, **options})


def test_steps_past_the_limit_are_written_as_blocks_that_keep_their_slow_steps(tmp_path):
    watch = _watch(tmp_path)
    watch.start()
    for i in range(300):
        time.sleep(0.03 if i == 200 else 0.0005)
        watch.step()
    watch.finish("script_finished")
    run = read_watch(tmp_path / "rank0.watch.jsonl")
    assert sorted(run.ends)[:50] == list(range(50))
    assert sum(b.count for b in run.blocks) + len(run.ends) == 300
    assert 200 in run.slow and run.slow[200][1] >= 0.03
    assert run.mark("script_end")["how"] == "script_finished"


def sleeping_in_the_script(seconds: float) -> None:
    time.sleep(seconds)


def test_a_stack_sample_names_the_function_of_the_script_that_runs(tmp_path):
    watch = _watch(tmp_path)
    watch.start()
    sleeping_in_the_script(0.3)
    watch.finish("script_finished")
    run = read_watch(tmp_path / "rank0.watch.jsonl")
    functions = {run.stacks[s].frames[0].function for _, s in run.samples}
    assert "sleeping_in_the_script" in functions
    assert all(not frame.file.endswith("observe/watch.py") for stack in run.stacks.values() for frame in stack.frames)


def test_memory_is_read_while_the_script_runs_and_at_its_end(tmp_path):
    watch = _watch(tmp_path)
    watch.start()
    time.sleep(0.6)
    watch.finish("script_finished")
    run = read_watch(tmp_path / "rank0.watch.jsonl")
    assert len(run.memory) >= 2 and all(rss and rss > 0 for _, _, rss, _ in run.memory)


@pytest.mark.slow  # importing torch._dynamo and compiling: 15 s on a busy 2-core machine
def test_torch_compile_graphs_are_counted_as_they_are_compiled(tmp_path):
    import torch

    double = torch.compile(lambda x: x * 2, backend="eager")  # Dynamo's graphs, no code generation
    watch = _watch(tmp_path)
    watch.start()
    for shape in [(3,), (3,), (3, 4), (5, 4, 2)]:  # a new number of dimensions compiles again
        double(torch.ones(shape))
        watch.step()
        time.sleep(1.1)  # a reading a second
    watch.finish("script_finished")
    run = read_watch(tmp_path / "rank0.watch.jsonl")
    graphs = [g for _, _, g in run.compiled]
    assert graphs == sorted(graphs) and graphs[-1] - graphs[0] >= 2
    assert [steps for steps, _, _ in run.compiled] == sorted(steps for steps, _, _ in run.compiled)
