"""The whole run's breakdown, from synthetic streams: the parts add up to the wall time, slow
steps are grouped by the script's function that ran in them, epochs, data stalls, a killed run,
a run without steps, and the trends over time."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from torchdoctor.goodput import WholeRun, breakdown, read_watch

SCRIPT = "/work/train.py"
LOOP = [SCRIPT, "train"]
STACKS = {
    0: ["torch.optim.sgd:step", [[SCRIPT, "train", 80]]],
    1: ["torch.serialization:save", [[SCRIPT, "save_checkpoint", 212], [SCRIPT, "train", 85]]],
    2: ["time:sleep", [[SCRIPT, "build_dataset", 31], [SCRIPT, "<module>", 95]]],
    3: ["torch.nn.modules.linear:forward", [[SCRIPT, "evaluate", 60], [SCRIPT, "train", 86]]],
}


class Stream:
    """Writes the lines observe.watch writes, for a run whose steps take `durations` seconds."""

    def __init__(self, durations: list[float], *, start_s: float = 2.0, lean_step: int = 10) -> None:
        self.lines: list[dict] = [{"start": {"unix_ns": 0, "t_us": 0, "pid": 1, "sample_interval_s": 0.05}},
                                  {"mark": {"name": "script_start", "t_us": int(start_s * 1e6), "step": 0}}]
        self.ends, self.t = [], start_s + 0.5  # the top level and the first step take 0.5 s
        for d in [0.0, *durations]:
            self.t += d
            self.ends.append(self.t)
        self.lines.append({"steps": {"first": 0, "end_us": [int(t * 1e6) for t in self.ends],
                                     "data_us": [0] * len(self.ends)}})
        if lean_step < len(self.ends):
            self.lines.append({"mark": {"name": "lean_start", "t_us": int(self.ends[lean_step] * 1e6),
                                        "step": lean_step + 1, "loop": LOOP}})
        self.lines += [{"stack": [i, *stack]} for i, stack in STACKS.items()]

    def sample(self, step: int, stack: int, times: int = 1) -> None:
        self.lines.append({"samples": [[step, stack]] * times})

    def end(self, tail_s: float = 0.1) -> None:
        self.lines.append({"mark": {"name": "script_end", "t_us": int((self.t + tail_s) * 1e6),
                                    "step": len(self.ends), "how": "script_finished"}})

    def write(self, path: Path, exit_s: float | None = None) -> WholeRun:
        path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in self.lines))
        run = read_watch(path)
        assert run is not None
        return breakdown(run, 0.0, exit_s)


def _by_cause(whole: WholeRun, cause: str):
    return next(p for p in whole.parts if p.cause == cause)


def test_the_parts_add_up_to_the_wall_time_from_the_process_start_to_its_exit(tmp_path):
    stream = Stream([0.001] * 500)
    stream.end()
    whole = stream.write(tmp_path / "w.jsonl", exit_s=stream.t + 0.4)
    assert sum(p.seconds for p in whole.parts) == pytest.approx(whole.wall_s, abs=1e-4)
    assert whole.wall_s == pytest.approx(stream.t + 0.4, abs=1e-4)
    kinds = [p.kind for p in whole.parts]
    assert kinds[:2] == ["startup", "top_level"] and kinds[-2:] == ["tail", "exit"]
    assert whole.steps == 501 and whole.step_s == pytest.approx(0.001, rel=1e-3)
    assert whole.goodput_s == pytest.approx(0.5, rel=1e-3)


def test_periodic_slow_steps_are_named_by_the_function_that_ran_in_them_with_their_period(tmp_path):
    durations = [0.101 if (i + 1) % 50 == 0 else 0.001 for i in range(600)]
    stream = Stream(durations)
    for i, d in enumerate(durations):
        stream.sample(i + 1, 1 if d > 0.01 else 0, times=2 if d > 0.01 else 1)
    stream.end()
    whole = stream.write(tmp_path / "w.jsonl")
    part = _by_cause(whole, "save_checkpoint (train.py:212)")
    assert part.period_steps == 50 and part.steps == 12
    assert part.seconds == pytest.approx(12 * 0.100, rel=1e-3)
    checkpoint = next(t for t in whole.trends if t.kind == "checkpoint")
    assert "every 50 steps" in checkpoint.evidence and "async_save" in checkpoint.advice
    assert checkpoint.upside_s == pytest.approx(0.6, rel=1e-3)


def test_a_slow_step_no_sample_fell_in_joins_the_periodic_group_it_falls_on(tmp_path):
    durations = [0.021 if (i + 1) % 100 == 0 else 0.001 for i in range(800)]
    stream = Stream(durations)
    for step in (100, 300, 500, 700):  # the other four checkpoints were too short to be sampled
        stream.sample(step, 1)
    stream.end()
    part = _by_cause(stream.write(tmp_path / "w.jsonl"), "save_checkpoint (train.py:212)")
    assert part.steps == 8 and part.period_steps == 100


def test_steps_waiting_on_data_are_data_stalls_and_epoch_starts_are_their_own_group(tmp_path):
    durations = [0.001] * 300
    for i in (40, 90, 170):
        durations[i] = 0.030
    durations[199] = 0.050
    stream = Stream(durations)
    data = [0] * 301
    for i in (41, 91, 171):
        data[i] = 28_000
    stream.lines[2]["steps"]["data_us"] = data
    stream.lines.append({"mark": {"name": "epoch", "t_us": 0, "step": 200}})
    stream.end()
    whole = stream.write(tmp_path / "w.jsonl")
    labels = {p.label: p for p in whole.parts}
    assert labels["data stalls (waiting in DataLoader.__next__)"].steps == 3
    assert labels["epoch starts (the DataLoader starting again)"].seconds == pytest.approx(0.049, rel=1e-3)


def test_a_slow_epoch_is_badput_of_its_own(tmp_path):
    durations = [0.0015] * 200 + [0.001] * 400
    stream = Stream(durations, lean_step=300)
    stream.lines.append({"mark": {"name": "epoch", "t_us": 0, "step": 201}})
    stream.lines.append({"mark": {"name": "epoch", "t_us": 0, "step": 401}})
    stream.end()
    whole = stream.write(tmp_path / "w.jsonl")
    epoch = next(p for p in whole.parts if p.kind == "slow_epoch")
    assert epoch.seconds == pytest.approx(200 * 0.0005, rel=0.02)
    assert any(t.kind == "slow_epoch" for t in whole.trends)


def test_memory_growing_with_the_step_count_is_a_trend(tmp_path):
    stream = Stream([0.001] * 400)
    stream.lines += [{"mem": [step, step * 1000, 2**30 + step * 2**20, None]} for step in range(20, 400, 20)]
    stream.end()
    trend = next(t for t in stream.write(tmp_path / "w.jsonl").trends if t.kind == "memory_growth")
    assert trend.title == "memory grows by 1.00 MiB a step"


def test_flat_memory_is_no_trend(tmp_path):
    stream = Stream([0.001] * 400)
    stream.lines += [{"mem": [step, step * 1000, 2**30 + (step % 3) * 2**20, None]} for step in range(20, 400, 20)]
    stream.end()
    assert not stream.write(tmp_path / "w.jsonl").trends


def test_a_run_killed_mid_way_keeps_its_steps_and_says_so(tmp_path):
    stream = Stream([0.001] * 200)
    path = tmp_path / "w.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in stream.lines) + b'{"samples": [[3, ')
    whole = breakdown(read_watch(path), 0.0, stream.t + 1.0)
    assert whole.ended == "killed" and whole.steps == 201
    assert sum(p.seconds for p in whole.parts) == pytest.approx(whole.wall_s, abs=1e-4)


def test_a_script_without_steps_still_gets_its_start_up_run_and_exit(tmp_path):
    stream = Stream([])
    stream.lines[2]["steps"] = {"first": 0, "end_us": [], "data_us": []}
    stream.sample(0, 2, times=5)
    stream.t = 2.0
    stream.end(tail_s=3.0)
    whole = stream.write(tmp_path / "w.jsonl", exit_s=5.5)
    assert [p.kind for p in whole.parts] == ["startup", "no_steps", "exit"]
    assert whole.parts[1].cause == "build_dataset (train.py:31)"
    assert whole.parts[1].seconds == pytest.approx(3.0, abs=1e-3)


def test_steps_written_as_blocks_count_their_steady_time_and_their_slow_steps(tmp_path):
    stream = Stream([0.001] * 100)
    stream.lines.append({"block": {"first": 101, "count": 1000, "end_us": int((stream.t + 1.2) * 1e6),
                                   "sum_us": 1_200_000, "median_us": 1000, "max_us": 201_000, "data_us": 0},
                         "slow": [[600, int((stream.t + 0.7) * 1e6), 201_000, 0]]})
    stream.sample(600, 3, times=3)
    whole = stream.write(tmp_path / "w.jsonl")
    assert whole.steps == 1101
    assert _by_cause(whole, "evaluate (train.py:60)").seconds == pytest.approx(0.200, rel=1e-3)


def test_the_section_reads_back_from_its_json(tmp_path):
    stream = Stream([0.001] * 100)
    stream.end()
    whole = stream.write(tmp_path / "w.jsonl")
    assert WholeRun.from_dict(orjson.loads(orjson.dumps(whole.to_dict()))) == whole


def test_a_step_in_which_two_functions_ran_shares_its_excess_by_their_samples(tmp_path):
    durations = [0.001] * 300
    durations[149] = 0.301  # step 150: an evaluation and a checkpoint
    stream = Stream(durations)
    stream.sample(150, 3, times=2)
    stream.sample(150, 1, times=1)
    stream.end()
    whole = stream.write(tmp_path / "w.jsonl")
    assert _by_cause(whole, "evaluate (train.py:60)").seconds == pytest.approx(0.200, rel=1e-3)
    assert _by_cause(whole, "save_checkpoint (train.py:212)").seconds == pytest.approx(0.100, rel=1e-3)


def _profile(stream: Stream, first: int, t_s: float, ops: list[list], last: int | None = None) -> None:
    stream.lines.append({"profile": {"first": first, "last": first + 5 if last is None else last,
                                     "t_us": int(t_s * 1e6), "steps": 5, "clock": "cpu",
                                     "total_us": sum(us for _, us in ops), "ops": ops}})


def test_the_steps_of_a_periodic_profiler_window_are_its_badput_and_not_in_the_steady_statistics(tmp_path):
    durations = [0.020 if 200 <= i + 1 <= 205 else 0.001 for i in range(500)]
    stream = Stream(durations)
    _profile(stream, 200, 2.7, [["aten::mm", 600.0], ["aten::add", 400.0]])
    stream.end()
    whole = stream.write(tmp_path / "w.jsonl")
    (window,) = [p for p in whole.parts if p.label == "torchdoctor's periodic profiler windows"]
    assert window.kind == "windows" and window.steps == 6 and window.first_steps[0] == 200
    assert window.seconds == pytest.approx(6 * 0.019, rel=1e-3)  # the excess over the 1 ms median
    assert not [p for p in whole.parts if p.kind == "slow"]  # none of them is another slow step
    assert whole.step_s == pytest.approx(0.001, rel=1e-3)
    assert sum(p.seconds for p in whole.parts) == pytest.approx(whole.wall_s, abs=1e-4)
    assert [op.name for op in whole.profiles[0].ops] == ["aten::mm", "aten::add"]
    assert whole.profiles[0].ops[0].share == pytest.approx(0.6)
    assert WholeRun.from_dict(orjson.loads(orjson.dumps(whole.to_dict()))) == whole


def test_a_checkpoint_that_falls_in_a_profiler_window_stays_the_checkpoints(tmp_path):
    durations = [0.101 if (i + 1) % 50 == 0 else 0.020 if 198 <= i + 1 <= 203 else 0.001 for i in range(600)]
    stream = Stream(durations)
    for i, d in enumerate(durations):
        stream.sample(i + 1, 1 if d > 0.05 else 0)
    _profile(stream, 198, 2.7, [["aten::mm", 600.0]])  # steps 198-203, the save at step 200 among them
    stream.end()
    whole = stream.write(tmp_path / "w.jsonl")
    save = _by_cause(whole, "save_checkpoint (train.py:212)")
    assert save.steps == 12 and save.period_steps == 50
    (window,) = [p for p in whole.parts if p.kind == "windows"]
    assert window.steps == 5 and window.seconds == pytest.approx(5 * 0.019, rel=1e-3)
    assert sum(p.seconds for p in whole.parts) == pytest.approx(whole.wall_s, abs=1e-4)


def test_the_first_and_the_last_profiler_windows_are_kept_and_every_one_counted(tmp_path):
    stream = Stream([0.001] * 1000)
    for k in range(8):
        _profile(stream, 100 + 100 * k, 3.0 + k, [["aten::mm", 100.0 + k]])
    stream.end()
    whole = stream.write(tmp_path / "w.jsonl")
    assert whole.profiles_seen == 8
    assert [w.first_step for w in whole.profiles] == [100, 500, 600, 700, 800]


def test_operators_that_changed_between_the_first_and_the_last_window_are_a_trend(tmp_path):
    stream = Stream([0.001] * 1000)
    _profile(stream, 100, 3.0, [["aten::mm", 600.0], ["aten::add", 400.0]])
    _profile(stream, 500, 3.4, [["aten::mm", 590.0], ["aten::add", 410.0]])
    _profile(stream, 900, 3.8, [["aten::cat", 1500.0], ["aten::mm", 600.0], ["aten::add", 400.0]])
    stream.end()
    (trend,) = [t for t in stream.write(tmp_path / "w.jsonl").trends if t.kind == "profile_change"]
    assert trend.title == "the operators changed late in the run: aten::cat 0% -> 60%"
    assert "aten::mm 60% -> 24%" in trend.evidence and "0.20 ms -> 0.50 ms" in trend.evidence
    assert trend.figures["share_change_fraction"] == pytest.approx(0.6)


def test_windows_that_show_the_same_operators_are_no_trend(tmp_path):
    stream = Stream([0.001] * 1000)
    _profile(stream, 100, 3.0, [["aten::mm", 600.0], ["aten::add", 400.0]])
    _profile(stream, 900, 3.8, [["aten::mm", 560.0], ["aten::add", 440.0]])
    stream.end()
    assert not [t for t in stream.write(tmp_path / "w.jsonl").trends if t.kind == "profile_change"]


def test_a_recompile_after_warm_up_is_placed_at_the_step_it_slowed(tmp_path):
    durations = [1.5 if i + 1 == 300 else 0.001 for i in range(600)]
    stream = Stream(durations)  # the lean observation starts at step 11
    stream.lines += [{"compiled": [5, 1_000_000, 1]}, {"compiled": [12, 2_600_000, 2]},  # the switch: not counted
                     {"compiled": [290, 2_900_000, 2]}, {"compiled": [305, 4_400_000, 3]}]
    stream.end()
    (trend,) = [t for t in stream.write(tmp_path / "w.jsonl").trends if t.kind == "recompile"]
    assert trend.title == "torch.compile compiled again after warm-up (1x), first at step 300"
    assert trend.figures["first_step"] == 300 and trend.figures["first_s"] == pytest.approx(1.5)
    assert trend.upside_s == pytest.approx(1.499, rel=1e-3)
    assert "step 300 (1.50 s)" in trend.evidence


def test_no_rise_of_the_graph_count_is_no_recompile(tmp_path):
    stream = Stream([0.001] * 600)
    stream.lines += [{"compiled": [5, 1_000_000, 2]}, {"compiled": [400, 3_000_000, 2]}]
    stream.end()
    assert not [t for t in stream.write(tmp_path / "w.jsonl").trends if t.kind == "recompile"]
